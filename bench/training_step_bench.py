"""One training step of `crossknow train` as the demo runs it, with the loss on the labelled positions only
(crossknow.training.labelled_loss) against transformers' own Trainer loss, which projects every position.

The embedded model in float32 on the CPU, the last 4 blocks trained, one batch of 8 of the demo's English abstracts
(right-padded, as `--packing none` batches them); forward and backward of each loss, alternating, best of
`--repeats`, so that load from other processes touches both alike. Prints the positions, the labelled ones, the
seconds of each and their ratio, and checks that crossknow's loss agrees with the same loss projected in float64.

    .venv/bin/python bench/training_step_bench.py [--rows 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8, help="Abstracts in the batch.")
    parser.add_argument("--repeats", type=int, default=3, help="Steps of each loss; the best counts.")
    args = parser.parse_args()

    import torch
    from transformers import Trainer, TrainingArguments

    from crossknow.cli.demo_cmd import demo_file
    from crossknow.models.checkpoint_cache import embedded_checkpoint
    from crossknow.models.hf_loading import load_causal_lm
    from crossknow.training.collate import IGNORED_LABEL, SequenceCollator, pad_token_id
    from crossknow.training.labelled_loss import LabelledLossTrainer
    from crossknow.training.layers import select_trainable

    tokenizer, model = load_causal_lm(str(embedded_checkpoint()), None, "default", "cpu", "float32")
    select_trainable(model, "last:4")
    model.train()
    documents = [json.loads(line) for line in demo_file("corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = [d["text"] for d in documents if d["lang"] == "en"][: args.rows]
    rows = [{"input_ids": ids, "position_ids": list(range(len(ids)))}
            for ids in (tokenizer(text)["input_ids"][:128] for text in texts)]
    batch = SequenceCollator(pad_token_id(tokenizer))(rows)
    labelled = int((batch["labels"][:, 1:] != IGNORED_LABEL).sum())
    with tempfile.TemporaryDirectory() as out:
        trainer = LabelledLossTrainer(model=model, args=TrainingArguments(output_dir=out, use_cpu=True,
                                                                          report_to="none"))
        losses = {"labelled": trainer.compute_loss, "trainer": lambda *a, **k: Trainer.compute_loss(trainer, *a, **k)}
        best = {name: float("inf") for name in losses}
        values = {}
        for _ in range(args.repeats):
            for name, compute in losses.items():
                model.zero_grad()
                started = time.perf_counter()
                loss = compute(model, dict(batch), num_items_in_batch=torch.tensor(labelled))
                loss.backward()
                best[name] = min(best[name], time.perf_counter() - started)
                values[name] = loss.item()
    exact = float64_loss(model, batch, labelled)
    print(f"positions {batch['input_ids'].numel()}, labelled {labelled}; torch threads {torch.get_num_threads()}")
    for name in losses:
        print(f"{name:9} {best[name]:.2f} s a step (loss {values[name]:.6f}, float64 {exact:.6f})")
    print(f"labelled / trainer: {best['labelled'] / best['trainer']:.3f}")
    assert abs(values["labelled"] - exact) <= 1e-5 * exact, (values, exact)


def float64_loss(model, batch, labelled: int) -> float:
    """The batch's loss with the output projection and log-softmax in float64 (the body in float32, as trained)."""
    import torch

    from crossknow.training.collate import IGNORED_LABEL

    with torch.no_grad():
        features = {key: value for key, value in batch.items() if key != "labels"}
        hidden = model.get_decoder()(**features)[0][:, :-1]
        targets = batch["labels"][:, 1:]
        kept = targets != IGNORED_LABEL
        logits = hidden[kept].double() @ model.get_output_embeddings().weight.double().T
        return torch.nn.functional.cross_entropy(logits, targets[kept], reduction="sum").item() / labelled


if __name__ == "__main__":
    main()
