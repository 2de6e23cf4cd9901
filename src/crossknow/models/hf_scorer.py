"""Scorer for local causal LMs (the `default`, `hf:` and `gguf:` specs): Gemma 3 text checkpoints through
`crossknow.models.gemma3_text`, every other model through transformers (`hf_loading.load_scoring_model` decides).

Speed comes from doing less, never from approximating (docs/speed.md): a context runs once for all its options,
only positions that predict a continuation token are projected (`crossknow.models.logit_head`), and options run in
passes of similar length (`option_chunks`). A request that cannot be scored raises `UnscorableRequest`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError, UnscorableRequest
from crossknow.models.protocol import ScoreRequest, ScoreResult
from crossknow.models.request_ids import RequestIds

try:
    import torch

    from crossknow.models.decoder import decoder_of
    from crossknow.models.device import resolve_device
    from crossknow.models.hf_loading import CHECKPOINT_DTYPE, LoadSettings, dtype_name, load_scoring_model
    from crossknow.models.logit_head import LogitHead, check_head_once
except ImportError as _error:  # pragma: no cover - exercised only without the hf extra
    raise MissingDependencyError("torch and transformers", "hf", "Local models (default, hf:, gguf:)") from _error


CHUNK_OVERHEAD_TOKENS = 32
"""What one more option pass costs beyond its tokens, counted in padded tokens (crossknow's choice: on
the CPU a pass of the 270M model costs about a millisecond per token and a few for the call itself)."""


def option_chunks(lengths: Sequence[int], overhead: int = CHUNK_OVERHEAD_TOKENS) -> list[list[int]]:
    """Indices of `lengths` (tokens each option row feeds) split into passes, each padded to its longest
    row, that minimise the padded tokens plus `overhead` per pass. Rows of length 0 need no pass and are
    left out. The passes hold rows in order of decreasing length (ties by index), the longest first."""
    order = sorted((i for i, n in enumerate(lengths) if n > 0), key=lambda i: (-lengths[i], i))
    best, cut = [0] * (len(order) + 1), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):  # best[end]: cheapest split of the `end` longest rows
        best[end], cut[end] = min(
            (best[start] + (end - start) * lengths[order[start]] + overhead, start) for start in range(end)
        )
    chunks, end = [], len(order)
    while end:
        chunks.append(order[cut[end] : end])
        end = cut[end]
    return chunks[::-1]


@dataclass
class _Group:
    """Requests that share one context: the context runs once for all of them."""

    ctx: list[int]
    members: list[tuple[int, list[int]]] = field(default_factory=list)  # (request index, continuation ids)

    @property
    def length(self) -> int:
        return len(self.ctx) + max(len(cont) for _, cont in self.members)


class HFScorer:
    """Scores continuations with a transformers causal LM, exactly and fast."""

    def __init__(
        self,
        path: str,
        *,
        name: str = "hf",
        model_id: str | None = None,
        revision: str | None = None,
        device: str = "auto",
        dtype: str = "float32",
        batch_size: int = 8,
        loaded: tuple[Any, Any] | None = None,
        load: LoadSettings = LoadSettings(),
    ):
        """`loaded` is a (tokenizer, model) pair already loaded from `path` on `device` in `dtype` (a
        generator's), shared instead of loading the weights again; `load`, how transformers loads it. Inputs go where
        the model's input embeddings compute (`device`, or the first device of a device map)."""
        self.name = name
        self.model_id = load.model_id(model_id or (f"{path}@{revision}" if revision else path))
        self.batch_size = batch_size
        self.tokenizer, self.model = loaded or load_scoring_model(path, revision, self.model_id,
                                                                  resolve_device(device), dtype, load)
        self.dtype = dtype_name(self.model.dtype) if dtype == CHECKPOINT_DTYPE else dtype
        self.decoder = decoder_of(self.model)
        self.device = self.decoder.input_device()
        self._head = LogitHead(self.decoder)
        check_head_once(self.decoder, self._head, self.device, self.model_id)
        self._ids = RequestIds(self.tokenizer, self.decoder.vocab_size, self.decoder.max_positions)
        self._pad_id = self.tokenizer.pad_token_id or 0

    def encode_request(self, request: ScoreRequest) -> tuple[list[int], list[int]]:
        """Token ids (context, continuation) of `request` (crossknow.models.request_ids)."""
        return self._ids.encode_request(request)

    def score(self, requests: Sequence[ScoreRequest], keep_token_logprobs: bool = False) -> list[ScoreResult]:
        """Score every request; results are in request order."""
        groups: dict[tuple[int, ...], _Group] = {}
        for index, request in enumerate(requests):
            try:
                ctx, cont = self.encode_request(request)
            except UnscorableRequest as error:
                raise UnscorableRequest(str(error), index) from error
            groups.setdefault(tuple(ctx), _Group(ctx)).members.append((index, cont))
        ordered = sorted(groups.values(), key=lambda group: group.length, reverse=True)
        token_logprobs: list[list[float]] = [[] for _ in requests]
        greedy = [True] * len(requests)
        start, size = 0, self.batch_size
        with torch.inference_mode():
            while start < len(ordered):
                batch = ordered[start : start + size]
                try:
                    self._score_groups(batch, token_logprobs, greedy)
                except torch.OutOfMemoryError as error:
                    if size == 1:
                        raise CrossknowError("out of memory with a batch of one item; use a smaller model") from error
                    size = max(1, size // 2)
                    self._free_memory()
                    continue
                start += len(batch)
        for index, lps in enumerate(token_logprobs):
            if not all(math.isfinite(value) for value in lps):
                request = requests[index]
                raise UnscorableRequest(
                    f"a log-probability of continuation {request.continuation[:40]!r} after context "
                    f"{request.context[-40:]!r} is {next(v for v in lps if not math.isfinite(v))} "
                    f"(per token: {[round(v, 3) for v in lps]}); the {self.dtype} computation overflowed?",
                    index,
                )
        return [
            ScoreResult(
                logprob_sum=float(sum(lps)),
                n_tokens=len(lps),
                greedy=greedy[i],
                token_logprobs=tuple(lps) if keep_token_logprobs else None,
            )
            for i, lps in enumerate(token_logprobs)
        ]

    def _free_memory(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def _score_groups(self, groups: list[_Group], token_logprobs: list[list[float]], greedy: list[bool]) -> None:
        """Run one batch of groups and write each member's per-token log-probs and greedy flag."""
        device = self.device
        n_groups, ctx_width = len(groups), max(len(group.ctx) for group in groups)
        ctx_ids = torch.full((n_groups, ctx_width), self._pad_id, dtype=torch.long)
        ctx_mask = torch.zeros((n_groups, ctx_width), dtype=torch.long)
        for g, group in enumerate(groups):  # left padding: every context ends at the last column
            ctx_ids[g, ctx_width - len(group.ctx) :] = torch.tensor(group.ctx)
            ctx_mask[g, ctx_width - len(group.ctx) :] = 1
        ctx_ids, ctx_mask = ctx_ids.to(device), ctx_mask.to(device)
        ctx_states, ctx_cache = self.decoder.run(ctx_ids, ctx_mask, (ctx_mask.cumsum(1) - 1).clamp(min=0))
        rows = [(g, index, cont) for g, group in enumerate(groups) for index, cont in group.members]
        row_group = torch.tensor([g for g, _, _ in rows], device=device)

        # First continuation token: predicted from the context's last position, once per group.
        hidden = [ctx_states[:, -1]]
        sources = [row_group]
        targets = [torch.tensor([cont[0] for _, _, cont in rows], device=device)]
        owners = [index for _, index, _ in rows]
        chunks = option_chunks([len(cont) - 1 for _, _, cont in rows])
        ctx_len = ctx_mask.sum(1)
        for number, chunk in enumerate(chunks):  # each pass continues its own copy of the contexts' KV cache
            cache = ctx_cache if number == len(chunks) - 1 else self.decoder.copy(ctx_cache)
            width = len(rows[chunk[0]][2]) - 1
            opt_ids = torch.full((len(chunk), width), self._pad_id, dtype=torch.long)
            opt_mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for r, row in enumerate(chunk):  # right padding: causal attention never sees it
                cont = rows[row][2]
                opt_ids[r, : len(cont) - 1] = torch.tensor(cont[:-1])
                opt_mask[r, : len(cont) - 1] = 1
            opt_ids, opt_mask = opt_ids.to(device), opt_mask.to(device)
            chunk_group = row_group[torch.tensor(chunk, device=device)]
            self.decoder.select(cache, chunk_group)
            option_states, _ = self.decoder.run(
                opt_ids, torch.cat([ctx_mask[chunk_group], opt_mask], dim=1),
                ctx_len[chunk_group][:, None] + torch.arange(width, device=device)[None, :], cache,
            )
            row_idx, pos_idx = opt_mask.nonzero(as_tuple=True)  # row-major, matching the order of cont[1:] below
            offset = sum(len(states) for states in hidden)  # where this pass's rows start in torch.cat(hidden)
            hidden.append(option_states[row_idx, pos_idx])
            sources.append(offset + torch.arange(len(row_idx), device=device))
            targets.append(torch.tensor([tok for row in chunk for tok in rows[row][2][1:]], device=device))
            owners += [rows[chunk[r]][1] for r in row_idx.tolist()]

        # Every scored position of the batch through the output projection at once: its weights are read once.
        logprobs, tops = self._target_logprobs(torch.cat(hidden), torch.cat(sources), torch.cat(targets))
        for _, index, _ in rows:  # a retry after an out-of-memory error writes these members afresh
            token_logprobs[index], greedy[index] = [], True
        for index, logprob, top in zip(owners, logprobs, tops, strict=True):  # first tokens come first
            token_logprobs[index].append(logprob)
            greedy[index] = greedy[index] and top

    def _target_logprobs(
        self, hidden: torch.Tensor, source_rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[list[float], list[bool]]:
        """log p(targets[k] | hidden[source_rows[k]]) in float32, and whether targets[k] is the argmax."""
        logprob, is_top = self._head.target_logprobs(hidden, source_rows, targets)
        return logprob.tolist(), is_top.tolist()
