"""How local models are asked: their prompt format, and chat messages as text for models without a chat template."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.models.generator import PROMPT_FORMATS, ChatMessage, GenerateRequest, PromptFormat


def gemma_prompt(messages: Sequence[ChatMessage]) -> str:
    """Gemma's turn format for `messages`, ending with the open model turn (no BOS: the tokenizer adds it),
    with system text opening the first user turn as Gemma's own template does."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    text = ""
    for message in messages:
        if message.role == "system":
            continue
        content = message.content
        if system and message.role == "user":
            content, system = f"{system}\n\n{content}", ""
        role = "model" if message.role == "assistant" else "user"
        text += f"<start_of_turn>{role}\n{content}<end_of_turn>\n"
    if system:  # no user message to carry it
        text = f"<start_of_turn>user\n{system}<end_of_turn>\n" + text
    return text + "<start_of_turn>model\n"


def request_ids(tokenizer: Any, request: GenerateRequest) -> list[int]:
    """Token ids of a request's prompt (chat or completion), ending where the model's answer starts, as every local
    generator sends it to its model: the tokenizer's chat template, or Gemma's turn format without one."""
    if request.prompt is not None:
        return tokenizer(request.prompt).input_ids
    if getattr(tokenizer, "chat_template", None):
        chat = [{"role": m.role, "content": m.content} for m in request.messages]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        return tokenizer(text, add_special_tokens=False).input_ids
    return tokenizer(gemma_prompt(request.messages)).input_ids


def resolve_prompt_format(asked: str, tokenizer: Any) -> PromptFormat:
    """'chat' or 'completion' for a local model: `asked` unless it is "auto", which is 'chat' for a tokenizer
    with a chat template and 'completion' for one without (a base model)."""
    if asked not in PROMPT_FORMATS:
        raise CrossknowError(f"prompt format must be one of {', '.join(PROMPT_FORMATS)}; got {asked!r}")
    if asked != "auto":
        return asked  # type: ignore[return-value]
    return "chat" if getattr(tokenizer, "chat_template", None) else "completion"
