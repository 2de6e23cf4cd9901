"""crossknow's Gemma 3 text model against transformers' Gemma3ForCausalLM, and where the scorer uses it.

The reference is transformers' own module, loaded separately from the same checkpoint: hidden states
and logits must agree on left-padded batches, on a continuation through a reordered KV cache, past the
sliding window, in float32 and in bfloat16.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from crossknow.models import gemma3_text
from crossknow.models.decoder import TransformersDecoder, decoder_of
from crossknow.models.fast_tokenizer import VERDICT_FILE, ScoringTokenizer, load_fast_tokenizer
from crossknow.models.hf_loading import LoadSettings, load_scoring_model, scoring_view
from crossknow.models.scoring_check import tiny_sliding_model

TOLERANCE = 1e-4
"""Largest difference allowed between the two modules' float32 outputs, relative to the largest value."""


def _batch(seed: int, vocabulary: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three contexts of 20 tokens, two of them left-padded (by 7 and 3): ids, mask, positions."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocabulary, (3, 20), generator=generator)
    mask = torch.ones(3, 20, dtype=torch.long)
    mask[1, :7] = 0
    mask[2, :3] = 0
    return ids, mask, (mask.cumsum(1) - 1).clamp(min=0)


def _cached_pass_differences(ours, theirs, vocabulary: int) -> tuple[float, float]:
    """Largest relative differences of the contexts' hidden states, then of four options continuing their
    reordered caches (rows 1 and 2 share context 1; the last option is right-padded)."""
    ids, mask, positions = _batch(0, vocabulary)
    mine, other = decoder_of(ours), decoder_of(theirs)
    assert isinstance(mine, gemma3_text.Gemma3Decoder) and isinstance(other, TransformersDecoder)
    with torch.inference_mode():
        a, our_cache = mine.run(ids, mask, positions)
        b, their_cache = other.run(ids, mask, positions)
        real = mask.bool()
        contexts = ((a - b)[real].abs().max() / b[real].abs().max()).item()
        rows = torch.tensor([0, 1, 1, 2])
        option_ids = torch.randint(5, vocabulary, (4, 6), generator=torch.Generator().manual_seed(1))
        option_mask = torch.ones(4, 6, dtype=torch.long)
        option_mask[3, 4:] = 0
        full_mask = torch.cat([mask[rows], option_mask], dim=1)
        option_positions = mask.sum(1)[rows][:, None] + torch.arange(6)[None]
        their_cache = other.copy(their_cache)
        mine.select(our_cache, rows)
        other.select(their_cache, rows)
        x, _ = mine.run(option_ids, full_mask, option_positions, our_cache)
        y, _ = other.run(option_ids, full_mask, option_positions, their_cache)
        real = option_mask.bool()
        options = ((x - y)[real].abs().max() / y[real].abs().max()).item()
    return contexts, options


@pytest.fixture(scope="module")
def transformers_embedded(embedded_checkpoint_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(embedded_checkpoint_dir, dtype=torch.float32).eval()


@pytest.mark.slow
def test_embedded_model_equals_transformers_on_padded_batches_and_cached_options(
    embedded_checkpoint_dir, transformers_embedded
):
    ours = gemma3_text.load(embedded_checkpoint_dir, torch.float32, "cpu")
    contexts, options = _cached_pass_differences(ours, transformers_embedded, ours.config.vocab_size)
    assert contexts <= TOLERANCE and options <= TOLERANCE, (contexts, options)


@pytest.mark.slow
def test_embedded_model_logits_equal_transformers_past_the_sliding_window(
    embedded_checkpoint_dir, transformers_embedded
):
    ours = gemma3_text.load(embedded_checkpoint_dir, torch.float32, "cpu")
    assert ours.config.sliding_window == 512
    ids = torch.randint(5, ours.config.vocab_size, (1, 700), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        theirs = transformers_embedded(input_ids=ids).logits
        difference = (ours(input_ids=ids).logits - theirs).abs().max() / theirs.abs().max()
    assert difference <= TOLERANCE


@pytest.mark.slow
def test_bfloat16_model_equals_transformers_bfloat16(embedded_checkpoint_dir):
    from transformers import AutoModelForCausalLM

    theirs = AutoModelForCausalLM.from_pretrained(embedded_checkpoint_dir, dtype=torch.bfloat16).eval()
    ours = gemma3_text.load(embedded_checkpoint_dir, torch.bfloat16, "cpu")
    assert ours.model.embed_tokens.weight.dtype == torch.bfloat16
    contexts, options = _cached_pass_differences(ours, theirs, ours.config.vocab_size)
    assert contexts <= 1e-2 and options <= 1e-2, (contexts, options)  # bfloat16 keeps 8 bits: 4e-3 per rounding


def test_tiny_model_equals_transformers_far_past_its_window_of_four():
    theirs = tiny_sliding_model(seed=3)
    ours = gemma3_text.from_transformers(theirs)
    assert ours.model.embed_tokens.weight.data_ptr() == theirs.get_input_embeddings().weight.data_ptr()
    ids = torch.randint(3, 64, (2, 40), generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        expected = theirs(input_ids=ids).logits
        assert (ours(input_ids=ids).logits - expected).abs().max() <= TOLERANCE * expected.abs().max()
    contexts, options = _cached_pass_differences(ours, theirs, 64)
    assert contexts <= TOLERANCE and options <= TOLERANCE, (contexts, options)


def test_weights_stay_mapped_from_the_file_and_a_write_does_not_reach_it(embedded_checkpoint_dir, tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    for name in ("config.json", "model.safetensors"):
        (checkpoint / name).symlink_to(embedded_checkpoint_dir / name)
    before = (checkpoint / "model.safetensors").stat().st_mtime_ns
    model = gemma3_text.load(checkpoint, torch.float32, "cpu")
    norm = model.model.norm.weight
    with torch.no_grad():
        norm.add_(1.0)  # copy-on-write: the process's copy changes, the file does not
    again = gemma3_text.load(checkpoint, torch.float32, "cpu")
    assert torch.equal(again.model.norm.weight + 1.0, norm)
    assert (checkpoint / "model.safetensors").stat().st_mtime_ns == before


def _checkpoint_with(embedded_checkpoint_dir, tmp_path, **changes):
    checkpoint = tmp_path / "variant"
    checkpoint.mkdir()
    config = json.loads((embedded_checkpoint_dir / "config.json").read_text())
    (checkpoint / "config.json").write_text(json.dumps({**config, **changes}))
    (checkpoint / "model.safetensors").symlink_to(embedded_checkpoint_dir / "model.safetensors")
    return checkpoint


@pytest.mark.parametrize(("changes", "reason"), [
    ({}, None),
    ({"model_type": "llama"}, "not a Gemma 3 text model"),
    ({"architectures": ["Gemma3ForConditionalGeneration"]}, "not a Gemma 3 text model"),
    ({"quantization_config": {"quant_method": "gguf"}}, "quantised"),
    ({"attn_logit_softcapping": 50.0}, "attention logits soft-capped"),
    ({"use_bidirectional_attention": True}, "bidirectional attention"),
    ({"hidden_activation": "gelu"}, "an activation other than gelu_pytorch_tanh"),
    ({"layer_types": None}, "no layer_types or rope_parameters (an older config format)"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
     "a rotary position type other than default and linear"),
])
def test_unsupported_names_what_sends_a_checkpoint_to_transformers(embedded_checkpoint_dir, tmp_path, changes, reason):
    assert gemma3_text.unsupported(_checkpoint_with(embedded_checkpoint_dir, tmp_path, **changes)) == reason


def test_a_checkpoint_without_safetensors_is_not_used(embedded_checkpoint_dir, tmp_path):
    checkpoint = tmp_path / "bin"
    checkpoint.mkdir()
    shutil.copy(embedded_checkpoint_dir / "config.json", checkpoint / "config.json")
    (checkpoint / "pytorch_model.bin").write_bytes(b"")
    assert gemma3_text.unsupported(checkpoint) == "no weights in safetensors files"


@pytest.mark.slow
def test_the_scorer_loads_gemma_3_through_crossknow_and_other_models_through_transformers(
    embedded_checkpoint_dir, tmp_path
):
    tokenizer, model = load_scoring_model(str(embedded_checkpoint_dir), None, "default", "cpu", "float32")
    assert isinstance(model, gemma3_text.Gemma3TextModel)
    assert isinstance(tokenizer, ScoringTokenizer)
    capped = _checkpoint_with(embedded_checkpoint_dir, tmp_path, final_logit_softcapping=30.0, layer_types=None)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_checkpoint_dir / name, capped / name)
    _, model = load_scoring_model(str(capped), None, "variant", "cpu", "float32")
    assert type(model).__module__.startswith("transformers.")


@pytest.mark.slow
def test_scoring_tokenizer_gives_the_fast_loads_ids_and_special_tokens(embedded_checkpoint_dir):
    ours, fast = ScoringTokenizer(embedded_checkpoint_dir), load_fast_tokenizer(embedded_checkpoint_dir)
    for name in ("bos", "eos", "unk", "pad", "mask"):
        assert getattr(ours, f"{name}_token_id") == getattr(fast, f"{name}_token_id")
    texts = ["", " ", "The capital of France is", "日本の首都は東京です。", "a  b\n\n c", "<bos>x<eos>", "🙂 ½ café"]
    for text in texts:
        assert ours(text).input_ids == fast(text).input_ids
    assert ours._full is None  # plain encodings never built the transformers tokenizer
    encoded = ours("Paris", return_offsets_mapping=True)  # anything else goes to the fast load
    assert encoded.offset_mapping == fast("Paris", return_offsets_mapping=True).offset_mapping
    assert len(ours) == len(fast)


def test_a_verdict_of_the_old_format_is_not_current(embedded_checkpoint_dir, tmp_path):
    from crossknow.models.fast_tokenizer import has_current_verdict

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    verdict = json.loads((embedded_checkpoint_dir / VERDICT_FILE).read_text())
    assert verdict["scoring_tokenizer_equal"] is True
    (checkpoint / VERDICT_FILE).write_text(json.dumps({**verdict, "format": 1}))
    assert not has_current_verdict(checkpoint)
    (checkpoint / VERDICT_FILE).write_text(json.dumps(verdict))
    assert has_current_verdict(checkpoint)


@pytest.mark.slow
def test_a_one_item_evaluate_of_the_embedded_model_never_imports_transformers(embedded_checkpoint_dir, tmp_path):
    """What keeps the start-up short (docs/speed.md): neither transformers' model code nor its tokenizer
    classes are imported on the scoring path of a Gemma 3 checkpoint with a current verdict."""
    import subprocess
    import sys

    assert json.loads((embedded_checkpoint_dir / VERDICT_FILE).read_text())["scoring_tokenizer_equal"]
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('imported transformers:', 'transformers' in sys.modules))\n"
        f"sys.argv = ['crossknow', 'evaluate', '--data', 'sample', '--limit', '1', '--out', {str(tmp_path / 'run')!r},"
        " '--device', 'cpu']\n"
        "from crossknow.cli.app import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 items in" in done.stdout
    assert "imported transformers: False" in done.stdout


def test_linear_rope_scaling_equals_transformers():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, sliding_window=4, layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=128, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
    )
    torch.manual_seed(5)
    theirs = Gemma3ForCausalLM(config).eval()
    assert theirs.config.rope_parameters["full_attention"]["rope_type"] == "linear"
    ours = gemma3_text.from_transformers(theirs)
    ids = torch.randint(3, 64, (1, 30), generator=torch.Generator().manual_seed(6))
    with torch.inference_mode():
        expected = theirs(input_ids=ids).logits
        assert (ours(input_ids=ids).logits - expected).abs().max() <= TOLERANCE * expected.abs().max()
    # the global blocks' second frequency: 1e6 ** (-2 / 16), divided by the factor 8
    assert ours.model.full_attention_inv_freq[1].item() == pytest.approx(1e6 ** (-2 / 16) / 8, rel=1e-6)


def test_weights_that_do_not_fit_the_config_are_a_clear_error(embedded_checkpoint_dir, tmp_path):
    from crossknow.errors import CrossknowError

    layer_types = json.loads((embedded_checkpoint_dir / "config.json").read_text())["layer_types"]
    checkpoint = _checkpoint_with(embedded_checkpoint_dir, tmp_path, num_hidden_layers=19,
                                  layer_types=[*layer_types, "sliding_attention"])
    for name in ("tokenizer.json", "tokenizer_config.json", VERDICT_FILE):
        shutil.copy(embedded_checkpoint_dir / name, checkpoint / name)
    with pytest.raises(CrossknowError, match=r"cannot load model 'variant'.*missing.*model\.layers\.18\."):
        load_scoring_model(str(checkpoint), None, "variant", "cpu", "float32")
    (checkpoint / "config.json").write_text(json.dumps(
        {**json.loads((checkpoint / "config.json").read_text()), "layer_types": layer_types}))
    with pytest.raises(CrossknowError, match="18 layer_types for 19 layers"):
        load_scoring_model(str(checkpoint), None, "variant", "cpu", "float32")


def test_a_model_transformers_loaded_is_scored_by_crossknows_gemma_3_where_a_scorer_would_load_it():
    from transformers import LlamaConfig, LlamaForCausalLM

    theirs = tiny_sliding_model()
    ours = scoring_view(theirs, "float32")
    assert isinstance(ours, gemma3_text.Gemma3TextModel) and isinstance(decoder_of(ours), gemma3_text.Gemma3Decoder)
    assert ours.model.embed_tokens.weight.data_ptr() == theirs.get_input_embeddings().weight.data_ptr()  # shared
    assert scoring_view(theirs, "auto") is theirs  # what load_scoring_model sends to transformers stays there
    assert scoring_view(theirs, "float32", LoadSettings(attn_implementation="eager")) is theirs
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=1))
    assert scoring_view(llama, "float32") is llama and isinstance(decoder_of(llama), TransformersDecoder)
