"""The token ids a scorer that computes on ids (transformers, vLLM in process) scores for a ScoreRequest: one
encoder, so that every such backend follows the same boundary rules and refuses the same requests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crossknow.errors import UnscorableRequest
from crossknow.models.boundary import encode_pair
from crossknow.models.protocol import ScoreRequest


@dataclass(frozen=True)
class RequestIds:
    """Encodes requests with `tokenizer` for a model of `vocabulary` words and `max_positions` positions (None: no
    bound)."""

    tokenizer: Any
    vocabulary: int
    max_positions: int | None

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text).input_ids

    def encode_request(self, request: ScoreRequest) -> tuple[list[int], list[int]]:
        """Token ids (context, continuation) under the request's boundary rule (`moved` by default,
        `literal` for the AdaXEval authors' tokenisation; see crossknow.models.boundary).

        An empty context encodes to just BOS with tokenizers that add one; with those that add
        none, the BOS (else EOS) token stands in, as there must be a position to predict from.
        A request with `continuation_ids` scores those ids as they are, after the context's tokens.
        Raises UnscorableRequest (index None) for a merge across the boundary, an id outside the
        model's vocabulary, or a sequence longer than the model's positions.
        """
        if request.continuation_ids is not None:
            ctx, cont = self.encode(request.context), list(request.continuation_ids)
            outside = [token for token in cont if not 0 <= token < self.vocabulary]
            if not cont or outside:
                raise UnscorableRequest(
                    f"continuation ids {outside[:5] if outside else '(none)'} are not tokens of the model's "
                    f"{self.vocabulary}-word vocabulary"
                )
        else:
            ctx, cont = encode_pair(self.encode, request.context, request.continuation, request.boundary)
        if not ctx:
            bos = self.tokenizer.bos_token_id
            ctx = [bos if bos is not None else self.tokenizer.eos_token_id]
        if self.max_positions and len(ctx) + len(cont) > self.max_positions:
            raise UnscorableRequest(
                f"context + continuation is {len(ctx) + len(cont)} tokens, over the model's "
                f"{self.max_positions} positions"
            )
        return ctx, cont
