"""Scorers for the checkpoints of a sweep, one after another, doing the shared work once.

When the checkpoints are local directories of one architecture and tokenizer (a `crossknow train` run), the model
is loaded once and each later checkpoint's weights are copied in, and the blocks that no checkpoint changed (found by
comparing weights, never assumed) run once per input for the whole sweep. Any other sweep loads each checkpoint, as
does a sweep of a quantised model (`checkpoint_switch` refuses to copy weights into one).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossknow.models.protocol import Scorer
from crossknow.models.registry import ModelOptions, load_scorer


class SweepScorers:
    """Hands out the scorer of each checkpoint spec in turn (`scorer_for`), reusing what it can."""

    def __init__(self, specs: Sequence[str], options: ModelOptions, reuse: bool = True):
        self.specs = list(specs)
        self.options = options
        self.reuse = reuse
        self.scorer: Any = None
        self.prefix: Any = None
        self.loads = 0
        """Models loaded from disk so far (the rest were weight switches)."""
        self.tokenizer: str | None = None
        """Identity of the loaded checkpoint's tokenizer files; weights switch in only under the same."""
        self._tokenizers: dict[Path, str] = {}

    def _tokenizer_of(self, directory: Path) -> str:
        """`tokenizer_identity(directory)`, hashed once per directory."""
        from crossknow.models.checkpoint_switch import tokenizer_identity

        if directory not in self._tokenizers:
            self._tokenizers[directory] = tokenizer_identity(directory)
        return self._tokenizers[directory]

    def scorer_for(self, spec: str) -> Scorer:
        """The scorer for `spec`: the loaded model with `spec`'s weights switched in, or a fresh load."""
        from crossknow.models.checkpoint_switch import local_weights_dir, unchanged_blocks

        directory = local_weights_dir(spec) if self.reuse else None
        tokenizer = self._tokenizer_of(directory) if directory is not None else None
        if (self.scorer is not None and directory is not None and hasattr(self.scorer, "decoder")
                and tokenizer == self.tokenizer):
            unchanged = unchanged_blocks(self.scorer.decoder, directory, load=True)
            if unchanged is not None:
                if self.prefix is not None and unchanged < self.prefix.n_frozen:
                    self.drop_reuse()
                self.scorer.model_id = str(directory)
                return self.scorer
        self.close()
        self.scorer = load_scorer(spec, self.options)
        self.tokenizer = tokenizer
        self.loads += 1
        if directory is not None and hasattr(self.scorer, "decoder"):
            self._install_prefix(spec)
        return self.scorer

    def _install_prefix(self, first: str) -> None:
        """Reuse the blocks that every later checkpoint of the sweep leaves as they are in `first`."""
        from crossknow.models.checkpoint_switch import local_weights_dir, unchanged_blocks
        from crossknow.models.frozen_prefix import FrozenPrefix

        later = self.specs[self.specs.index(first) + 1 :] if first in self.specs else []
        counts = []
        for spec in later:
            directory = local_weights_dir(spec)
            fits = directory is not None and self._tokenizer_of(directory) == self.tokenizer
            counts.append(unchanged_blocks(self.scorer.decoder, directory) if fits else None)
        if not counts or any(count is None for count in counts):
            return
        frozen = min(min(counts), len(self.scorer.decoder.blocks) - 1)
        if frozen >= 1:
            self.prefix = FrozenPrefix(self.scorer.decoder, frozen)

    def drop_reuse(self) -> None:
        """Stop reusing frozen blocks (after a `PrefixCacheMiss`, or when a checkpoint changes one);
        weights still switch in place."""
        if self.prefix is not None:
            self.prefix.remove()
            self.prefix = None

    def close(self) -> None:
        """Free the loaded model."""
        self.drop_reuse()
        self.scorer = None
        gc.collect()
