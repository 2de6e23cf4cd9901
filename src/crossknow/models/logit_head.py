"""The output projection of a causal LM, as the model's own forward computes it, with float32 results.

Some models transform their logits after the projection (scales, soft caps: docs/scoring.md lists them); the scorer
projects only the positions it needs, so it applies the same transform, and `check_against_forward` refuses a model
whose logits this head does not reproduce (`check_head_once`, once per model class). `target_logprobs` streams the
projection over vocabulary tiles; in bfloat16 the logits that decide the numbers are recomputed in float32.
"""

from __future__ import annotations

from typing import Any

import torch

from crossknow.errors import CrossknowError
from crossknow.models.decoder import Decoder
from crossknow.models.placement import weights_present

REFINED = 16
"""Largest logits per row recomputed in float32 when the compute dtype is half precision."""
HEAD_CHUNK = 256
"""Rows of hidden states projected to the whole vocabulary at once in half precision (256 x 262k floats = 268 MB)."""
SLICE = 2048
"""Vocabulary words of one slice of the streamed float32 projection (crossknow's choice: float32 matrix products of
640-wide rows ran at 117 to 125 GFLOP/s against slices of 2,048 words on a 2-core AVX2 machine, 80 to 95 against the
wider slices of a fixed 16 MB tile)."""
ROWS = 1024
"""Most hidden rows projected together by the streamed projection; more go in chunks, each reading the weights
again."""


def logit_scaling(config: Any) -> tuple[float, float | None]:
    """(factor, soft cap) that the model's forward applies to its raw logits: cap * tanh(raw * factor / cap)."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    factor = 1.0
    if getattr(config, "logit_scale", None) is not None:
        factor *= float(config.logit_scale)
    if getattr(config, "output_multiplier", None) is not None:
        factor *= float(config.output_multiplier)
    if getattr(config, "logits_scaling", None) is not None:
        multiplies = str(getattr(config, "model_type", "")).startswith("hyperclovax")
        factor = factor * config.logits_scaling if multiplies else factor / config.logits_scaling
    if getattr(config, "logits_mup_width_multiplier", None) is not None:
        factor /= float(config.logits_mup_width_multiplier)
    softcap = getattr(config, "final_logit_softcapping", None)
    return factor, (float(softcap) if softcap else None)


class LogitHead:
    """log p(target | hidden row) and the greedy flag, in float32, from a model's output layer."""

    def __init__(self, decoder: Decoder):
        self.module: torch.nn.Module = decoder.head
        self.factor, self.softcap = logit_scaling(decoder.config)
        self.refine = self.weight.dtype in (torch.bfloat16, torch.float16)

    @property
    def weight(self) -> torch.Tensor:
        """The output layer's weight (on the meta device while a device map keeps it offloaded)."""
        return self.module.weight

    @property
    def bias(self) -> torch.Tensor | None:
        return getattr(self.module, "bias", None)

    def _transform(self, raw: torch.Tensor) -> torch.Tensor:
        if self.factor != 1.0:
            raw = raw * self.factor
        if self.softcap:
            raw = torch.tanh(raw / self.softcap) * self.softcap
        return raw

    def _exact_raw(self, rows: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
        """Raw logits of `token_ids[i, j]` for `rows[i]`, computed in float32: shape of token_ids."""
        weights = self.weight[token_ids].float()  # (n, k, hidden)
        raw = torch.bmm(weights, rows.float().unsqueeze(-1)).squeeze(-1)
        if self.bias is not None:
            raw = raw + self.bias[token_ids].float()
        return raw

    def logits(self, rows: torch.Tensor) -> torch.Tensor:
        """The transformed float32 logits of every vocabulary word for each row of `rows`, on the output layer's
        device.

        In half precision, the `REFINED` largest logits of each row are recomputed in float32
        (docs/scoring.md, "The output projection").
        """
        with weights_present(self.module):
            return self._logits(rows.to(self.weight.device))

    def _logits(self, rows: torch.Tensor) -> torch.Tensor:
        raw = torch.nn.functional.linear(rows, self.weight, self.bias).float()
        if self.refine:
            top = raw.topk(min(REFINED, raw.shape[-1]), dim=-1).indices
            raw.scatter_(1, top, self._exact_raw(rows, top))
        return self._transform(raw)

    def target_logprobs(
        self, hidden: torch.Tensor, source_rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """log p(targets[k] | hidden[source_rows[k]]) in float32, and whether targets[k] is the argmax, on the
        output layer's device.

        A row shared by several targets (a context's last position) is projected once. In float32
        the projection is streamed over vocabulary slices (docs/scoring.md, "The output projection"); in half
        precision rows are projected whole, in chunks of HEAD_CHUNK, and refined.
        """
        with weights_present(self.module):
            device = self.weight.device
            return self._target_logprobs(hidden.to(device), source_rows.to(device), targets.to(device))

    def _target_logprobs(
        self, hidden: torch.Tensor, source_rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.refine:
            return self._streamed_target_logprobs(hidden, source_rows, targets)
        logprob = torch.empty(len(targets), dtype=torch.float32, device=hidden.device)
        is_top = torch.empty(len(targets), dtype=torch.bool, device=hidden.device)
        for start in range(0, len(hidden), HEAD_CHUNK):
            stop = min(start + HEAD_CHUNK, len(hidden))
            which = ((source_rows >= start) & (source_rows < stop)).nonzero(as_tuple=True)[0]
            local = source_rows[which] - start
            logits = self._logits(hidden[start:stop])
            if self.refine:  # the exact target logits, written where the rows' projection put rounded ones
                exact = self._transform(self._exact_raw(hidden[start:stop][local], targets[which][:, None]))
                logits[local, targets[which]] = exact[:, 0]
            picked = logits[local, targets[which]]
            logprob[which] = picked - torch.logsumexp(logits, dim=-1)[local]
            is_top[which] = picked >= logits.max(dim=-1).values[local]
        return logprob, is_top

    def _streamed_target_logprobs(
        self, hidden: torch.Tensor, source_rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`target_logprobs` for full-precision weights: the vocabulary in slices, one pass over each tile."""
        if len(hidden) > ROWS:
            logprob = torch.empty(len(targets), dtype=torch.float32, device=hidden.device)
            is_top = torch.empty(len(targets), dtype=torch.bool, device=hidden.device)
            for start in range(0, len(hidden), ROWS):
                which = ((source_rows >= start) & (source_rows < start + ROWS)).nonzero(as_tuple=True)[0]
                chunk = hidden[start : start + ROWS]
                logprob[which], is_top[which] = self._streamed_target_logprobs(
                    chunk, source_rows[which] - start, targets[which]
                )
            return logprob, is_top
        vocab, width = self.weight.shape[0], SLICE
        hidden = hidden.to(self.weight.dtype)
        maxima, sums = [], []
        picked = torch.zeros(len(targets), dtype=torch.float32, device=hidden.device)
        for start in range(0, vocab, width):
            stop = min(start + width, vocab)
            bias = None if self.bias is None else self.bias[start:stop]
            tile = self._transform_(torch.nn.functional.linear(hidden, self.weight[start:stop], bias).float())
            inside = (targets >= start) & (targets < stop)
            here = tile[source_rows, (targets - start).clamp(0, stop - start - 1)]
            picked = torch.where(inside, here, picked)
            maximum = tile.amax(dim=-1)
            maxima.append(maximum)
            sums.append(tile.sub_(maximum[:, None]).exp_().sum(dim=-1))
        maximum = torch.stack(maxima, dim=1)
        top = maximum.amax(dim=1)
        total = (torch.stack(sums, dim=1) * (maximum - top[:, None]).exp()).sum(dim=1)
        log_normaliser = top + total.log()
        return picked - log_normaliser[source_rows], picked >= top[source_rows]

    def _transform_(self, raw: torch.Tensor) -> torch.Tensor:
        """`_transform` in place (the same operations, so the same float32 values)."""
        if self.factor != 1.0:
            raw.mul_(self.factor)
        if self.softcap:
            raw.div_(self.softcap).tanh_().mul_(self.softcap)
        return raw


def check_against_forward(decoder: Decoder, head: LogitHead, device: str, model_id: str) -> None:
    """Raise CrossknowError when `head` does not reproduce the model's own forward on a few tokens.

    Catches a logit transform that crossknow does not know (a model whose forward scales or caps
    its logits otherwise). Tolerance: 1e-3 nats in float32, 0.5 in half precision (the forward
    rounds its logits to the compute dtype; a wrong transform is off by whole nats).
    """
    vocab = head.weight.shape[0]
    ids = torch.tensor([[i * vocab // 7 for i in range(1, 6)]], device=device)
    seen: list[torch.Tensor] = []  # the decoder's output inside the model's own forward: one forward, not two
    hook = decoder.body.register_forward_hook(
        lambda _module, _args, out: seen.append(out if isinstance(out, torch.Tensor) else out[0]))
    try:
        with torch.inference_mode():
            theirs = torch.log_softmax(decoder.model(input_ids=ids).logits[0].float(), dim=-1)
            ours = torch.log_softmax(head.logits(seen[-1][0]), dim=-1).to(theirs.device)
    finally:
        hook.remove()
    finite = torch.isfinite(theirs)
    if not finite.any():  # the forward overflows: nothing to compare; scoring reports each request
        return
    tolerance = 0.5 if head.refine else 1e-3
    difference = (ours - theirs)[finite].abs().max().item()
    if not difference <= tolerance:
        raise CrossknowError(
            f"model {model_id!r}: its forward transforms logits in a way crossknow does not reproduce "
            f"(log-probabilities differ by {difference:.3g} nats); scaling known: logit_scale, "
            "logits_scaling, logits_mup_width_multiplier, output_multiplier, final_logit_softcapping"
        )


HEAD_CHECK_DIR = "head-checks"
"""Folder under crossknow's cache holding one empty file per passed head check (`check_head_once`)."""


def check_head_once(decoder: Decoder, head: LogitHead, device: str, model_id: str) -> None:
    """`check_against_forward`, run once per model class, configuration, head transform, dtype, device
    kind and installed torch and transformers: a pass is recorded under crossknow's cache and later
    loads skip the forward (a few tenths of a second at start-up). The check tests how the model's
    forward transforms its logits, which its class and configuration decide and its weights do not,
    so a fine-tuned checkpoint of a checked model needs no new check. A failure is never recorded."""
    from hashlib import sha256
    from importlib.metadata import version

    from crossknow.store.cache_dir import cache_dir

    facts = [
        decoder.identity(),
        repr((head.factor, head.softcap, head.refine, str(head.weight.dtype), torch.device(device).type)),
        torch.__version__, version("transformers"),
    ]
    passed = cache_dir() / HEAD_CHECK_DIR / sha256("\n".join(facts).encode("utf-8")).hexdigest()
    if passed.exists():
        return
    check_against_forward(decoder, head, device, model_id)
    try:
        passed.parent.mkdir(parents=True, exist_ok=True)
        passed.touch()
    except OSError:  # a read-only cache: the check runs again next time, nothing else changes
        pass
