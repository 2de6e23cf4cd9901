"""What a stage asks, once, in both forms a model can take: the request object.

A stage builds one `Ask` per question, holding the chat rendering (the papers' prompts) and the completion rendering
(crossknow's few-shot prompt for a base model, or its `Parts`: one short field a call, assembled by the stage), and
names how each form's output is read (`Reading`).
`StructuredClient.ask_many` sends the rendering its model takes; the stage never tests which that is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel


@dataclass(frozen=True)
class ChatPrompt:
    """What a pipeline stage asks: an optional system message and one user message."""

    system: str | None
    user: str
    stop: tuple[str, ...] = ()
    """Strings that end the output where they first appear (e.g. the next line of a few-shot prompt)."""


@dataclass(frozen=True)
class CompletionPrompt:
    """What a pipeline stage asks a base model: text it continues as it is (no chat markup), ended by a
    stop string (by default the end of the line)."""

    text: str
    stop: tuple[str, ...] = ("\n",)
    """Strings that end the output where they first appear."""


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) as one space: an input of a completion prompt whose
    fields end at the newline, so that the stop ends the model's field and never an input's text."""
    return " ".join(text.split())


Prompt = ChatPrompt | CompletionPrompt
"""Either form of prompt; `StructuredClient.prompt_format` says which one a client's model takes."""

TextParser = Callable[[str], tuple[Any, "str | None"]]
"""(raw output) -> (value, None) when the output is valid, else (None, why not); None is never a
valid value."""


@dataclass(frozen=True)
class TextOutput:
    """Ask for free text rather than JSON: no `json_schema` in the request, `parse` decides validity."""

    parse: TextParser
    """(raw output) -> (value, None), or (None, why the output is invalid)."""
    retry_note: str = ""
    """Appended to the user message from the second attempt on; '' resends the prompt unchanged
    (only the seed differs)."""


OWN_PARSERS = TextOutput(lambda _: (None, "no parser of its own"))
"""Free text that each question's own parser reads (the output's parser is never used: a call passes one per
prompt)."""

YES_NO = "yes/no"
"""The completion output of a yes/no question: P(yes) after the prompt, which ends where " yes" or " no" follows
(`StructuredClient.yes_no_many`)."""


@dataclass(frozen=True)
class Part:
    """One field of a base model's answer, asked on its own line: its prompt, its parser, and its own seed where the
    field's requests must differ from the other fields' (None: the ask's seed)."""

    prompt: CompletionPrompt
    parse: TextParser | None = None
    seed: int | None = None


@dataclass(frozen=True)
class Parts:
    """A base model's rendering of a question whose answer has several fields (crossknow's rule for base models: one
    short field per call). Every part goes in one call with the other asks' parts; `assemble(values)` then makes the
    answer from the parts' values in order, or says why they make none (None, why). A part still invalid makes the
    question invalid, reported by the error `worst(errors)` picks (by default the first)."""

    parts: tuple[Part, ...]
    assemble: Callable[[list[Any]], tuple[Any, str | None]]
    worst: Callable[[list[str]], str] | None = None


@dataclass(frozen=True)
class NoCompletion:
    """A question with no completion rendering (crossknow's few-shot prompt has no examples for its input): asking it
    of a base model is an error that says `why`, raised before any request is sent."""

    why: str


@dataclass(frozen=True)
class Ask:
    """One question in both renderings, each with the parser of its answer where the reading's own is not enough
    (an answer valid for this question alone). `chat_output` replaces the Reading's chat output for this question
    (a JSON schema of its own shape: asks of one schema go in one call)."""

    chat: ChatPrompt
    completion: CompletionPrompt | Parts | NoCompletion
    chat_parse: TextParser | None = None
    completion_parse: TextParser | None = None
    chat_output: type[BaseModel] | TextOutput | None = None


@dataclass(frozen=True)
class Reading:
    """How the answers to a call's asks are read in each form. With `completion=YES_NO`, the outcome's value is P(yes)
    in both forms: the chat parser gives 1.0 or 0.0 for the answer it reads."""

    chat: type[BaseModel] | TextOutput
    completion: TextOutput | Literal["yes/no"]


def yes_no_value(parse: TextParser) -> TextParser:
    """`parse`, whose value is yes or no as a bool, giving 1.0 or 0.0 instead: a chat reading of a YES_NO question."""

    def read(text: str) -> tuple[float | None, str | None]:
        value, error = parse(text)
        return (None, error) if value is None else (1.0 if value else 0.0, None)

    return read
