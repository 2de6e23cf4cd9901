"""A tiny Gemma 3 model directory that loads as `hf:DIR`, built from nothing on any machine.

The GPU machines lent to this project cannot receive the embedded model (its GGUF is larger than what
travels there), so the CUDA tests run crossknow's commands on this model instead: a byte-level BPE
tokenizer trained on the packaged demo corpus (BOS prepended, as Gemma's is), and a random 4-block
Gemma 3 text model whose three sliding-window blocks are narrower than the demo items. Its weights
are drawn with a fixed seed and a wide initialisation, so that options' log-probabilities differ by
more than float32 noise.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.training.tiny_run import DEMO_DIR

SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>")
"""Ids 0-3, in this order (Gemma's own order)."""


def demo_texts() -> list[str]:
    """Every document of the demo corpus and every prompt and option of the demo items (English and Japanese)."""
    texts = [json.loads(line)["text"] for line in (DEMO_DIR / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    for line in (DEMO_DIR / "items.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        texts += [item["prompt"], *item["options"]]
    return texts


def write_tiny_model(path: Path, seed: int = 0, *, positions: int = 512, hidden_size: int = 64,
                     vocab_rows: int | None = None) -> Path:
    """Save the tokenizer and the random model into `path` (created) and return it.

    `positions` bounds the sequences it scores (512: longer requests are unscorable); `hidden_size` and
    `vocab_rows` (embedding rows beyond the tokenizer's, never looked up) make a larger model where a test needs
    one that takes time to save."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(demo_texts(), trainer=trainer)
    bpe.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A $B",
                                                       special_tokens=[("<bos>", SPECIAL_TOKENS.index("<bos>"))])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>",
                                        bos_token="<bos>", unk_token="<unk>")
    config = Gemma3TextConfig(
        vocab_size=vocab_rows or len(tokenizer), hidden_size=hidden_size, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, sliding_window=8,
        layer_types=["sliding_attention"] * 3 + ["full_attention"], max_position_embeddings=positions,
        initializer_range=0.2, pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def checkpoint_pair(model_dir: Path, root: Path) -> tuple[Path, Path]:
    """Two checkpoints of one run under `root`: `model_dir` as it is, and a copy whose last block's MLP output weights
    have noise added (not a scaling: Gemma 3 normalises a block's output, so a scaled weight would score the same)."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    first, second = root / "checkpoint-1", root / "checkpoint-2"
    shutil.copytree(model_dir, first)
    shutil.copytree(model_dir, second)
    model = AutoModelForCausalLM.from_pretrained(second)
    weight = model.model.layers[-1].mlp.down_proj.weight
    torch.manual_seed(0)
    with torch.no_grad():
        weight.add_(torch.randn_like(weight))
    model.save_pretrained(second)
    return first, second
