"""Packing texts into training sequences, and the attention mask that keeps packed texts apart."""

from __future__ import annotations

from typing import Any

import pytest

from crossknow.errors import CrossknowError
from crossknow.training.collate import IGNORED_LABEL, SequenceCollator, pad_token_id
from crossknow.training.packing import MASK_TOLERANCE, check_document_masking, sequences

torch = pytest.importorskip("torch")

A, B, C = [10, 11, 12, 13, 14], [20, 21, 22], [30, 31, 32, 33, 34, 35]
"""Three texts of 5, 3 and 6 token ids (as the tokenizer would give them, BOS to EOS)."""

DOC_1 = "Lumora valley hospitals record every treatment of marsh fever in the Helvane ledger."
DOC_2 = "The ledger was begun in 1894 by the physician Ostrid Kael, who also founded the first clinic."
"""Two unrelated texts packed into one sequence on the real model."""


def test_masked_packing_fills_each_sequence_and_restarts_positions_per_text() -> None:
    rows = sequences([A, B, C], 4, "masked")
    # Worked by hand: 14 tokens in rows of 4; A continues into row 2, where B starts; C fills row 3 and
    # continues into row 4. Every start (of a text or of its continuation) is position 0.
    assert rows == [
        {"input_ids": [10, 11, 12, 13], "position_ids": [0, 1, 2, 3]},
        {"input_ids": [14, 20, 21, 22], "position_ids": [0, 0, 1, 2]},
        {"input_ids": [30, 31, 32, 33], "position_ids": [0, 1, 2, 3]},
        {"input_ids": [34, 35], "position_ids": [0, 1]},
    ]


def test_unmasked_packing_numbers_each_sequence_straight_through() -> None:
    rows = sequences([A, B, C], 4, "unmasked")
    assert [row["input_ids"] for row in rows] == [[10, 11, 12, 13], [14, 20, 21, 22], [30, 31, 32, 33], [34, 35]]
    assert [row["position_ids"] for row in rows] == [[0, 1, 2, 3]] * 3 + [[0, 1]]


def test_no_packing_is_one_cut_text_per_sequence() -> None:
    rows = sequences([A, B, C], 4, "none")
    assert rows == [
        {"input_ids": [10, 11, 12, 13], "position_ids": [0, 1, 2, 3]},
        {"input_ids": [20, 21, 22], "position_ids": [0, 1, 2]},
        {"input_ids": [30, 31, 32, 33], "position_ids": [0, 1, 2, 3]},
    ]


def test_the_collator_pads_on_the_right_as_a_block_of_its_own_out_of_the_loss() -> None:
    batch = SequenceCollator(pad_token_id=0)(sequences([A, B, C], 4, "masked")[1:4:2])  # rows 2 and 4
    assert batch["input_ids"].tolist() == [[14, 20, 21, 22], [34, 35, 0, 0]]
    assert batch["position_ids"].tolist() == [[0, 0, 1, 2], [0, 1, 0, 1]]
    # Out of the loss: every block's first token (it would be predicted across a boundary) and the padding.
    ignored = IGNORED_LABEL
    assert batch["labels"].tolist() == [[ignored, ignored, 21, 22], [ignored, 35, ignored, ignored]]
    assert "attention_mask" not in batch  # a mask would stop transformers from reading the blocks
    assert batch["use_cache"] is False


def test_a_row_with_mismatched_position_ids_is_refused() -> None:
    with pytest.raises(ValueError, match="row 0: 3 input ids but 2 position ids"):
        SequenceCollator(pad_token_id=0)([{"input_ids": [1, 2, 3], "position_ids": [0, 1]}])


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text)["input_ids"] + [tokenizer.eos_token_id]


def _log_probs(model: Any, batch: dict[str, Any]) -> Any:
    """Next-token log-probabilities of every position, in train mode (as the Trainer runs the model)."""
    model.train()
    try:
        with torch.no_grad():
            return model(**batch).logits[0].float().log_softmax(-1)
    finally:
        model.eval()


def test_a_packed_text_sees_only_itself(embedded_generator: Any) -> None:
    """Two real texts packed into one sequence, through the collator as training runs them: each position's
    next-token log-probabilities equal those of its text run alone, so no token of the second text attends to
    the first. Packed straight through (unmasked), the second text's differ by tens of nats."""
    tokenizer, model = embedded_generator.tokenizer, embedded_generator.model
    first, second = _ids(tokenizer, DOC_1), _ids(tokenizer, DOC_2)
    collate = SequenceCollator(pad_token_id(tokenizer))
    width = len(first) + len(second)
    packed = _log_probs(model, collate(sequences([first, second], width, "masked")))
    alone_first = _log_probs(model, collate(sequences([first], width, "masked")))
    alone_second = _log_probs(model, collate(sequences([second], width, "masked")))
    # float32 on the CPU, measured: at most 1.0e-3 nats apart on the first text and 5e-5 on the second (the
    # block mask takes another attention kernel than a plain causal sequence: reduction order only).
    assert (packed[: len(first)] - alone_first).abs().max() < MASK_TOLERANCE
    assert (packed[len(first):] - alone_second).abs().max() < MASK_TOLERANCE

    crossing = _log_probs(model, collate(sequences([first, second], width, "unmasked")))
    assert (crossing[: len(first)] - alone_first).abs().max() < MASK_TOLERANCE  # causal: the first is unchanged
    assert (crossing[len(first):] - alone_second).abs().max() > 1.0  # measured: 17 nats


def test_the_packed_loss_is_the_sum_of_the_texts_losses_alone(embedded_generator: Any) -> None:
    """What training minimises: the summed next-token loss of a packed sequence equals that of its texts alone
    (the boundary prediction, first text's EOS -> second text's BOS, is out of the loss)."""
    tokenizer, model = embedded_generator.tokenizer, embedded_generator.model
    first, second = _ids(tokenizer, DOC_1), _ids(tokenizer, DOC_2)
    collate = SequenceCollator(pad_token_id(tokenizer))
    targets = len(first) - 1 + len(second) - 1

    def summed_loss(rows: list[dict[str, list[int]]]) -> float:
        with torch.no_grad():
            return float(model(**collate(rows), num_items_in_batch=targets).loss) * targets

    packed = summed_loss(sequences([first, second], len(first) + len(second), "masked"))
    alone = sum(summed_loss(sequences([text], len(text), "masked")) for text in (first, second))
    assert packed == pytest.approx(alone, rel=1e-5)


def test_packing_holds_in_gemmas_sliding_window_layers(embedded_generator: Any) -> None:
    """Gemma 3's sliding-window layers (5 of every 6) build their own mask. With the window shrunk to 4 tokens,
    so that it matters inside these short texts, the packed second text still equals itself alone."""
    tokenizer, model = embedded_generator.tokenizer, embedded_generator.model
    first, second = _ids(tokenizer, DOC_1), _ids(tokenizer, DOC_2)
    collate = SequenceCollator(pad_token_id(tokenizer))
    full_window = _log_probs(model, collate(sequences([second], len(second), "masked")))
    window = model.config.sliding_window
    model.config.sliding_window = 4
    try:
        packed = _log_probs(model, collate(sequences([first, second], len(first) + len(second), "masked")))
        alone = _log_probs(model, collate(sequences([second], len(second), "masked")))
    finally:
        model.config.sliding_window = window
    assert (alone - full_window).abs().max() > 1.0  # the 4-token window is in force
    assert (packed[len(first):] - alone).abs().max() < 1e-2


def test_the_run_time_check_passes_gemma_and_stops_a_model_that_crosses(embedded_generator: Any) -> None:
    tokenizer, model = embedded_generator.tokenizer, embedded_generator.model
    collate = SequenceCollator(pad_token_id(tokenizer))
    assert check_document_masking(model, tokenizer, collate) < MASK_TOLERANCE
    assert not model.training  # left in the mode it was in

    def without_positions(rows: list[dict[str, Any]]) -> dict[str, Any]:
        """A collator whose batches lose the position ids: the model then sees one sequence."""
        return {key: value for key, value in collate(rows).items() if key != "position_ids"}

    with pytest.raises(CrossknowError, match="lets packed texts attend to each other.*--packing unmasked"):
        check_document_masking(model, tokenizer, without_positions)
