"""The fast scoring paths against a plain forward of each whole sequence, one option at a time.

Pins what broke with transformers 5.24.0 (decoder layers take the KV cache as `cache`, and the
frozen-block replay stopped filling it: a size mismatch in attention, or wrong numbers): the
shared-prefix path (a context's KV cache reused by every option, left-padded batches) and the
frozen-block path of a checkpoint sweep must equal the plain computation within 1e-4 nats, on the
embedded model and on a tiny Gemma 3 model whose sliding-window blocks are narrower than the contexts.
"""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError
from crossknow.models import decoder
from crossknow.models.scoring_check import (
    CHECK_REQUESTS,
    TOLERANCE,
    ByteTokenizer,
    check_scoring_path,
    path_differences,
    tiny_sliding_model,
)


def test_tiny_sliding_window_model_paths_equal_plain_forward():
    model = tiny_sliding_model()
    tokenizer = ByteTokenizer()
    assert model.config.layer_types.count("sliding_attention") == 2
    longest = max(len(tokenizer(request.context).input_ids) for request in CHECK_REQUESTS)
    assert longest > 4 * model.config.sliding_window  # the contexts reach past the window
    differences = path_differences(tokenizer, model)
    assert set(differences) == {"shared-prefix", "frozen-blocks"}
    assert all(value <= TOLERANCE for value in differences.values()), differences


@pytest.mark.slow
def test_embedded_model_paths_equal_plain_forward(embedded_scorer):
    differences = path_differences(embedded_scorer.tokenizer, embedded_scorer.model)
    assert all(value <= TOLERANCE for value in differences.values()), differences
    assert not any(block._forward_hooks for block in embedded_scorer.decoder.blocks)  # the replay's hook is gone
    assert embedded_scorer.decoder.watcher is None


def test_the_start_check_passes_here_and_names_versions_when_the_replay_breaks(monkeypatch):
    check_scoring_path()  # this environment's scoring path is sound

    def old_stand_in(self, hidden_states, *args, past_key_values=None, **kwargs):
        """A stand-in as it was before 5.24: it looks for the cache under its old name and so never fills it."""
        if past_key_values is not None:
            raise AssertionError("unreachable on transformers >= 5.24")
        return self.output(hidden_states)

    monkeypatch.setattr(decoder._TransformersStandIn, "forward", old_stand_in)
    expected = r"scoring path does not work with transformers 5\.\d+.* torch .*make install"
    with pytest.raises(CrossknowError, match=expected):
        check_scoring_path()
