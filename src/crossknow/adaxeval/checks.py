"""crossknow's checks of what the writer outputs, on the chat and the completion path alike: None, or why an
output is rejected as 'code: explanation' (a `records.RejectCode`, by which the summary counts rejections).
Grounding (`grounding_problem`: the answer and at least `MIN_SHARED` of the cloze's words occur in its sentence,
crossknow's threshold), echoes (`echo_problem`: an output that is, whole, a worked example's output;
`crossknow.generation.echo` without its long-run rule, crossknow's choice, since an option is a few words) and
duplicates (`duplicate_problem`). The reasons behind the rules: docs/adaxeval.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from crossknow.adaxeval.stages import normalise
from crossknow.data.schemas import BLANK
from crossknow.generation.echo import echoed_example
from crossknow.generation.overlap import share_in

MIN_SHARED = 0.6
"""Least share of a cloze's words (without the blank) that must occur in its sentence."""


def _glued(left: str, right: str) -> bool:
    """True when two adjacent characters are both ASCII letters or digits (one Latin word or number)."""
    return all(c.isascii() and c.isalnum() for c in (left, right)) and bool(left and right)


def occurs(needle: str, text: str) -> bool:
    """True when `needle` occurs in `text` without starting or ending inside a Latin word or number ("sulin"
    does not occur in "Insulin"; 血糖 occurs in 血糖値, since Japanese has no word boundaries to respect)."""
    start = text.find(needle) if needle else -1
    while start != -1:
        end = start + len(needle)
        if not (_glued(text[start - 1 : start], needle[0]) or _glued(needle[-1], text[end : end + 1])):
            return True
        start = text.find(needle, start + 1)
    return False


def grounding_problem(cloze: str, answer: str, sentence: str) -> str | None:
    """Why `cloze` with answer `answer` is not grounded in its `sentence`: the answer does not occur in it, or
    the cloze without the blank shares less than MIN_SHARED of its words with it; None when grounded."""
    if not occurs(normalise(answer), normalise(sentence)):
        return f"ungrounded_answer: the answer {answer!r} does not occur in the sentence"
    share = share_in(cloze.replace(BLANK, " "), sentence)
    if share < MIN_SHARED:
        return f"ungrounded_cloze: the cloze shares {share:.2f} of its words with the sentence (at least {MIN_SHARED})"
    return None


ECHO_FIELDS = {"cloze": "cloze", "question": "question", "options": "distractors"}
"""What an output is -> the key of the chat examples' JSON that holds it."""


def example_outputs(template: str, key: str) -> list[str | list[str]]:
    """The outputs the worked examples of prompt `template` show: on a chat prompt, the value of `key` in each
    example line that is a JSON object; on a completion prompt, the text after the label the prompt ends with (its
    last line, such as "Question:") on each earlier line that starts with it."""
    lines = [line.strip() for line in template.strip().splitlines()]
    found: list[str | list[str]] = []
    for line in lines:
        try:
            shown = json.loads(line) if line.startswith("{") else None
        except ValueError:
            continue
        if isinstance(shown, dict) and isinstance(shown.get(key), str | list):
            found.append(shown[key])
    if found or not lines or "$" in lines[-1] or not lines[-1].endswith(":"):
        return found
    return [line[len(lines[-1]) :].strip() for line in lines[:-1] if line.startswith(lines[-1])]


def echo_problem(output: str | Sequence[str], template: str, what: str, sources: Sequence[str] = ()) -> str | None:
    """Why `output` (a `what`: cloze, question, or the options of one answer) is an echo of prompt `template`: it
    is, as a whole, the output of one of its worked examples (`example_outputs`; options compared as a list, in any
    order), which none of `sources`, the prompt's inputs, holds; None when it is not."""
    example = echoed_example(output, example_outputs(template, ECHO_FIELDS[what]), sources, span=None)
    if example is not None:
        return f"prompt_echo: the {what} repeats an example of the prompt ({example!r})"
    return None


def duplicate_problem(output: str, taken: Mapping[str, str], key: str, what: str) -> str | None:
    """Why `output` may not be kept for input `key`: `taken` (normalised text -> key of the input that holds it)
    holds it for another input; None when it does not."""
    holder = taken.get(normalise(output))
    if holder is not None and holder != key:
        return f"duplicate: the same {what} was kept for another fact ({holder})"
    return None


def blank_object(sentence: str, obj: str) -> str | None:
    """`sentence` with the first occurrence of `obj` (ignoring case, runs of spaces and a final period; never
    starting or ending inside a Latin word or number) replaced by the blank; None when `obj` does not occur."""
    words = obj.strip().rstrip("。.").split()
    if not words:
        return None
    for found in re.finditer(r"\s+".join(re.escape(word) for word in words), sentence, re.IGNORECASE):
        start, end = found.span()
        before, after = sentence[start - 1 : start], sentence[end : end + 1]
        if not (_glued(before, sentence[start]) or _glued(sentence[end - 1], after)):
            return sentence[:start] + BLANK + sentence[end:]
    return None
