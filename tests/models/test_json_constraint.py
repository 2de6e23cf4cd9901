"""Constrained JSON decoding: the loop stop inside an open JSON string.

The regression case is the one seen in `crossknow pitfalls demo`: the embedded Gemma 3 270M, asked (with
the root-pair translation prompt of that time) to translate "How many legs does an insect have?", loops
inside the "text" string ("The answer is 10. The answer is 10. ...") until max_tokens=64, under an active
grammar. With the loop stop the row ends as soon as the loop shows, still invalid, and the structured client
says why.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict, Field

import crossknow.models.hf_decoding as hf_decoding
from crossknow.generation.ask import ChatPrompt
from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import ChatMessage, GenerateRequest
from crossknow.models.json_constraint import LOOP_MIN_CHARS, open_string_content, repeats_in_open_string

SPAN = "abcdefghijklmnop"  # 16 characters: LOOP_MIN_CHARS


def test_open_string_content_follows_quotes_and_escapes():
    assert open_string_content('{"a": "b", "c": "de') == "de"
    assert open_string_content('{"a": 1') is None
    assert open_string_content('{"a": "b"') is None
    assert open_string_content('{"a": "say \\"hi') == 'say \\"hi'  # an escaped quote does not close it
    assert open_string_content('{"a": "b\\\\"') is None  # an escaped backslash, then the closing quote
    assert open_string_content("") is None


def test_a_span_written_twice_inside_the_open_string_is_a_loop():
    assert LOOP_MIN_CHARS == len(SPAN)
    assert repeats_in_open_string('{"text": "' + SPAN + SPAN)
    assert repeats_in_open_string('{"text": "Q? The answer is 10. The answer is 10. ')  # 18-char span, twice
    assert repeats_in_open_string('{"a": "x", "text": "say \\"' + SPAN * 2)
    assert not repeats_in_open_string('{"text": "' + SPAN[:-1] * 2)  # a 15-char span: shorter than the minimum
    assert not repeats_in_open_string('{"text": "' + SPAN + "x" + SPAN)  # not back to back
    assert not repeats_in_open_string('{"text": "' + SPAN * 2 + '"')  # the string is closed
    assert not repeats_in_open_string('{"a": "' + SPAN * 2 + '", "b": "x')  # the loop is in a closed string
    assert not repeats_in_open_string('{"text": "How many legs does an insect have? Six legs.')


class TranslatedQuestion4(BaseModel):
    """The demo's root-pair translation schema at the time the symptom was seen."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, description="The translated question.")
    choices: list[str] = Field(min_length=4, max_length=4, description="The translated choices, in order.")


def _translation_prompt(question: str, choices: list[str]) -> str:
    """The demo's root-pair translation prompt at the time the symptom was seen (crossknow's own text)."""
    listed = "\n".join(f"{n + 1}. {c}" for n, c in enumerate(choices))
    return (
        "Translate the multiple-choice question and its choices below into Japanese. Keep the meaning of the "
        "question and of every choice exactly, keep the choices in the same order, translate each choice on its "
        "own, and leave no choice empty.\n[The Start of the Question]\n" + question + "\n[The End of the Question]\n"
        "[The Start of the Choices]\n" + listed + "\n[The End of the Choices]\n"
        'Return a JSON object: {"text": "<the translated question>", "choices": ["<translated choice 1>", ...]}'
    )


LOOPING = _translation_prompt("How many legs does an insect have?", ["four", "six", "eight", "ten"])
CLEAN = _translation_prompt("How many days are there in a week?", ["five", "six", "seven", "eight"])


def _request(prompt: str) -> GenerateRequest:
    """What the demo's proxy translator sent: temperature 0.001, seed 0, at most 64 tokens, the schema."""
    return GenerateRequest(messages=(ChatMessage("user", prompt),), max_tokens=64, temperature=0.001, seed=0,
                           json_schema=TranslatedQuestion4.model_json_schema())


@pytest.mark.slow
def test_a_loop_inside_a_json_string_stops_the_row_early(embedded_generator, monkeypatch):
    assert embedded_generator.constrain_json
    requests = [_request(LOOPING), _request(CLEAN)]
    with monkeypatch.context() as off:  # the code before the fix: nothing stops a loop inside a string
        off.setattr(hf_decoding, "repeats_in_open_string", lambda text: False)
        loop_before, clean_before = embedded_generator.generate(requests)
    assert (loop_before.finish_reason, loop_before.usage.completion_tokens) == ("length", 64)
    assert loop_before.text.startswith('{"text": "The answer is 10. The answer is 10. The answer is 10.')

    loop_after, clean_after = embedded_generator.generate(requests)
    assert loop_after.finish_reason == "repetition"
    assert loop_after.usage.completion_tokens < 32  # stopped after two copies, not at the budget of 64
    assert loop_before.text.startswith(loop_after.text)  # the same tokens up to the stop
    assert "The answer is 10. The answer is 10." in loop_after.text
    with pytest.raises(json.JSONDecodeError):
        json.loads(loop_after.text)  # still invalid: the stop closes nothing
    assert clean_after == clean_before  # a row that does not loop is untouched by the check


@pytest.mark.slow
def test_the_structured_client_reports_the_loop_as_an_invalid_output(embedded_generator):
    client = StructuredClient(embedded_generator, max_attempts=1, max_tokens=64, temperature=0.001)
    [outcome] = client.call_many([ChatPrompt(None, LOOPING)], TranslatedQuestion4)
    assert not outcome.valid and outcome.attempts == 1
    assert "stopped looping inside a JSON string" in outcome.error
    assert outcome.usage.completion_tokens < 32
