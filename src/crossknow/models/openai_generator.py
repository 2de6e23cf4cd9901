"""Generator backend for OpenAI-compatible servers (spec `openai:MODEL`): `/v1/chat/completions` for chat requests,
`/v1/completions` for completion requests.

`prompt_format` "auto" is 'chat' (crossknow's choice: a server cannot be asked whether it has a template). Transport
and retries are `crossknow.models.openai_http`'s. JSON output (`json_mode`), system messages (`fold_system`, and
crossknow's choice of when to fold them) and top log-probabilities: docs/distributed.md, "Generation on a server".
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any, Literal

from crossknow.errors import CrossknowError
from crossknow.models.generator import (
    PROMPT_FORMATS,
    GenerateRequest,
    GenerateResult,
    GenerationFailed,
    PromptFormat,
    TokenAlternatives,
    Usage,
)
from crossknow.models.openai_http import (
    OpenAIEndpoint,
    RequestGaveUp,
    RequestRefused,
    gather_or_cancel,
    run_sync,
    short,
)

log = logging.getLogger(__name__)

FoldSystem = bool | Literal["auto"]
"""True, False or "auto" (docs/distributed.md, "Generation on a server")."""
LLAMA_CPP_PYTHON_OWNER = "me"
"""`owned_by` of the models llama-cpp-python's server lists at /v1/models: how "auto" knows that server."""
JsonMode = Literal["auto", "json_schema", "json_object", "none"]
JSON_MODES: tuple[str, ...] = ("auto", "json_schema", "json_object", "none")
"""Accepted values of `json_mode` (docs/distributed.md, "Generation on a server")."""
PER_REQUEST_REFUSALS = frozenset({400, 413, 422})
"""Statuses that concern one request (too long, malformed): recorded as that request's failure."""


class OpenAIGenerator:
    """Completes chat prompts through an OpenAI-compatible `/v1/chat/completions` endpoint, and completion
    prompts through `/v1/completions`.

    `model` is the server's model name; `base_url` ends before `/chat/completions` (for example
    `http://127.0.0.1:8000/v1`). The API key is read from the environment variable `api_key_env`
    (optional for local servers) and never shown. `json_mode`, `strict_schema` and `fold_system`:
    docs/distributed.md, "Generation on a server".
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout_s: float = 120,
        max_retries: int = 5,
        *,
        json_mode: JsonMode = "auto",
        strict_schema: bool = False,
        fold_system: FoldSystem = False,
        backoff_base_s: float = 0.5,
        prompt_format: str = "auto",
    ):
        if json_mode not in JSON_MODES:
            raise CrossknowError(f"openai: json_mode must be one of {', '.join(JSON_MODES)}; got {json_mode!r}")
        if fold_system not in (True, False, "auto"):
            raise CrossknowError(f"openai: fold_system must be True, False or 'auto'; got {fold_system!r}")
        if prompt_format not in PROMPT_FORMATS:
            raise CrossknowError(
                f"openai: prompt format must be one of {', '.join(PROMPT_FORMATS)}; got {prompt_format!r}"
            )
        settings = dict(api_key_env=api_key_env, concurrency=concurrency, timeout_s=timeout_s,
                        max_retries=max_retries, backoff_base_s=backoff_base_s, logger=log)
        self._endpoint = OpenAIEndpoint(model, base_url, "chat/completions", **settings)  # type: ignore[arg-type]
        self._completions = OpenAIEndpoint(model, base_url, "completions", **settings)  # type: ignore[arg-type]
        self.prompt_format: PromptFormat = "chat" if prompt_format == "auto" else prompt_format  # type: ignore[assignment]
        """'chat' or 'completion' (see the module docstring)."""
        self.model_id = model
        self.base_url = self._endpoint.base_url
        self.json_mode: str = json_mode
        """The mode in use; "auto" turns into "json_schema" or "json_object" once decided."""
        self.strict_schema = strict_schema
        self._settings = {"json_mode": json_mode, "fold_system": fold_system}
        self.fold_system: bool | None = None if fold_system == "auto" else bool(fold_system)
        """Whether system messages are folded; None until "auto" has asked the server."""

    def __repr__(self) -> str:
        return (f"OpenAIGenerator({self._endpoint.describe()}, json_mode={self.json_mode!r}, "
                f"fold_system={self._settings['fold_system']!r})")

    def server_identity(self) -> dict[str, Any]:
        """The server (base URL) and the settings, as given, that shape what it receives: part of the
        request cache's key, so that one model name on two servers is two models. The settings as
        given, not as "auto" resolves them, so that a cached run replays without asking the server."""
        return {"base_url": self._endpoint.safe(self.base_url), **self._settings}

    # ---- public API -------------------------------------------------------------------------

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Answer every request; results are in request order.

        Raises `GenerationFailed` (with the results that did succeed) when some requests failed
        after their retries, and `CrossknowError` at once for refusals that concern every request.
        """
        if not requests:
            return []
        outcomes = run_sync(lambda: self._generate_all(list(requests)))
        failures = {i: o for i, o in enumerate(outcomes) if isinstance(o, str)}
        results = [None if isinstance(o, str) else o for o in outcomes]
        if failures:
            raise GenerationFailed(results, failures)
        return results  # type: ignore[return-value]

    # ---- transport --------------------------------------------------------------------------

    async def _generate_all(self, requests: list[GenerateRequest]) -> list[GenerateResult | str]:
        semaphore = asyncio.Semaphore(self._endpoint.concurrency)
        async with self._endpoint.client() as client:
            if self.fold_system is None and any(r.prompt is None for r in requests):
                problem = await self._decide_fold(client)
                if problem is not None:
                    return [problem] * len(requests)

            async def one(request: GenerateRequest) -> GenerateResult | str:
                async with semaphore:
                    try:
                        body = await self._post(client, request)
                    except RequestGaveUp as error:
                        return str(error)
                    except RequestRefused as error:
                        if error.status in PER_REQUEST_REFUSALS:
                            return str(error)
                        raise
                try:
                    return self._parse(body, request)
                except CrossknowError as error:
                    return str(error)

            return await gather_or_cancel([one(r) for r in requests])

    async def _decide_fold(self, client: Any) -> str | None:
        """Resolve fold_system "auto" from the server's /models (docs/distributed.md); the problem
        when the server could not tell, else None."""
        url = f"{self.base_url}/models"
        httpx = self._endpoint.httpx
        try:
            response = await client.get(url)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as error:
            return self._endpoint.safe(f"openai: {url} (asked to decide fold_system 'auto') failed: {error!r}")
        if response.status_code >= 500:
            return self._endpoint.safe(f"openai: {url} (asked to decide fold_system 'auto') answered "
                                       f"HTTP {response.status_code}")
        models: Any = []
        if response.status_code == 200:
            try:
                models = response.json().get("data") or []
            except (ValueError, AttributeError):
                models = []
        self.fold_system = any(isinstance(m, dict) and m.get("owned_by") == LLAMA_CPP_PYTHON_OWNER for m in models)
        log.info("openai: %s is %sllama-cpp-python: system messages %s", self.base_url,
                 "" if self.fold_system else "not ", "folded" if self.fold_system else "kept")
        return None

    async def _post(self, client: Any, request: GenerateRequest) -> dict:
        """POST one request; in "auto" mode, fall back to "json_object" when the server refuses the schema."""
        if request.prompt is not None:
            return await self._completions.post(client, self.payload(request))
        while True:
            mode = self.json_mode if request.json_schema is not None else "none"
            probing = mode == "auto"
            try:
                body = await self._endpoint.post(
                    client, self.payload(request, mode), refuse=_names_response_format if probing else None
                )
            except RequestRefused as error:
                if probing and _names_response_format(error.status, error.server_message):
                    if self.json_mode == "auto":
                        self.json_mode = "json_object"
                        log.info("openai: %s refused json_schema output; using json_object", self._endpoint.url)
                    continue
                raise
            if probing and self.json_mode == "auto":
                self.json_mode = "json_schema"
            return body

    def payload(self, request: GenerateRequest, mode: str | None = None) -> dict[str, Any]:
        """The JSON body for one request (`mode` defaults to the current json_mode)."""
        if request.prompt is not None:
            return self._completion_payload(request)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if self.fold_system:
            messages = _fold_system(messages)
        body = self._settings_body(request) | {"messages": messages}
        if request.top_logprobs > 0:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        mode = mode or self.json_mode
        if request.json_schema is not None and mode != "none":
            if mode == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.json_schema}
            else:  # json_schema, and auto until it is decided
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": _schema_name(request.json_schema),
                        "schema": request.json_schema,
                        "strict": self.strict_schema,
                    },
                }
        return body

    def _completion_payload(self, request: GenerateRequest) -> dict[str, Any]:
        """The `/v1/completions` body of a completion request."""
        if request.json_schema is not None:
            raise CrossknowError("openai: a completion request cannot carry a JSON schema (/v1/completions has no "
                                 "common form for it); ask a chat model, or build the structure from the prompt")
        body = self._settings_body(request) | {"prompt": request.prompt}
        if request.top_logprobs > 0:
            body["logprobs"] = request.top_logprobs
        return body

    def _settings_body(self, request: GenerateRequest) -> dict[str, Any]:
        """What both endpoints' bodies hold alike: the model, the length limit, the temperature, the seed and the
        stop strings (the last two only when given)."""
        body: dict[str, Any] = {"model": self.model_id, "max_tokens": request.max_tokens,
                                "temperature": request.temperature}
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        return body

    # ---- response ---------------------------------------------------------------------------

    def _parse(self, body: dict, request: GenerateRequest) -> GenerateResult:
        """The GenerateResult of one chat completion."""
        choices = body.get("choices")
        if not choices or not isinstance(choices[0], dict):
            raise CrossknowError(self._endpoint.safe(f"openai: response without choices: {short(body)}"))
        choice = choices[0]
        usage = body.get("usage") or {}
        logprobs = None
        if request.prompt is not None:
            text = choice.get("text") or ""
            if request.top_logprobs > 0:
                logprobs = _completion_alternatives(choice.get("logprobs") or {})
        else:
            text = (choice.get("message") or {}).get("content") or ""
            if request.top_logprobs > 0:
                content = (choice.get("logprobs") or {}).get("content")
                if content:
                    logprobs = tuple(_alternatives(entry) for entry in content)
        return GenerateResult(
            text=text,
            backend=self.name,
            model_id=self.model_id,
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
            ),
            logprobs=logprobs,
            finish_reason=choice.get("finish_reason"),
        )


def _alternatives(entry: dict) -> TokenAlternatives:
    """One `logprobs.content` entry as TokenAlternatives, alternatives most likely first."""
    top = [(str(alt.get("token", "")), float(alt["logprob"])) for alt in entry.get("top_logprobs") or []]
    top.sort(key=lambda pair: pair[1], reverse=True)
    return TokenAlternatives(token=str(entry.get("token", "")), logprob=float(entry["logprob"]), top=tuple(top))


def _completion_alternatives(logprobs: dict) -> tuple[TokenAlternatives, ...] | None:
    """A `/v1/completions` choice's `logprobs` (`tokens`, `token_logprobs`, `top_logprobs` as one dict of
    token -> logprob per position) as TokenAlternatives, alternatives most likely first; None when absent."""
    tokens = logprobs.get("tokens") or []
    chosen = logprobs.get("token_logprobs") or []
    tops = logprobs.get("top_logprobs") or []
    if not tokens or len(chosen) != len(tokens):
        return None
    result = []
    for k, (token, logprob) in enumerate(zip(tokens, chosen, strict=True)):
        top = sorted(((str(t), float(v)) for t, v in (tops[k] or {}).items()) if k < len(tops) else (),
                     key=lambda pair: pair[1], reverse=True)
        result.append(TokenAlternatives(token=str(token), logprob=float(logprob if logprob is not None else "-inf"),
                                        top=tuple(top)))
    return tuple(result)


def _names_response_format(status: int, message: str) -> bool:
    """True for a refusal that says the server takes `response_format` of type json_object only
    (pydantic's "Input should be 'text' or 'json_object'" at `response_format.type`). An error
    about the schema itself (OpenAI's "Invalid schema for response_format ...") does not match."""
    return status in (400, 422, 500) and "response_format" in message and "json_object" in message


def _fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """System messages joined into the start of the first user message."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if not system:
        return rest
    for message in rest:
        if message["role"] == "user":
            message["content"] = f"{system}\n\n{message['content']}"
            return rest
    return [{"role": "user", "content": system}, *rest]


def _schema_name(schema: dict[str, Any]) -> str:
    """OpenAI's schema name (letters, digits, '_' and '-', at most 64) from the schema's title."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(schema.get("title") or "output")).strip("_")
    return name[:64] or "output"
