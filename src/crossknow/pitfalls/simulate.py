"""Simulation: K models answer the multiple-choice questions of bilingual pairs; an invalid answer (choice None)
is recorded with its error and never counted as wrong.

`GenerativeSimulator`: the paper's zero-shot chain-of-thought templates (Appendix E, `ANSWER_TEMPLATES`) at
temperature 0.001 for a chat model, crossknow's few-shot letter prompt (`extract_letter`) for a base model, fresh
seeds for a re-simulation or a sample (`resimulation_seed`). `LossSimulator` (crossknow's): the lowest-loss option.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from pydantic import ValidationError

from crossknow.data.schemas import MCItem
from crossknow.errors import CrossknowError
from crossknow.generation.ask import OWN_PARSERS, Ask, ChatPrompt, CompletionPrompt, Reading, TextOutput
from crossknow.generation.clients import ClientPool, Role
from crossknow.generation.structured import StructuredClient, per_form, prompt_format_of
from crossknow.models.protocol import Scorer
from crossknow.scoring.normalise import Normalisation, OptionScore, predict
from crossknow.scoring.rules import PRIMARY_NORMALISATION, Rule, option_requests
from crossknow.scoring.stage import score_isolating

SIMULATION_TEMPERATURE = 0.001
"""The paper's temperature for simulation (Appendix B.1)."""
SIMULATION_MAX_TOKENS = 1024
"""The paper's cap on output length (Appendix B.1)."""
LETTER_MAX_TOKENS = 4
"""The cap on a completion-form answer: a letter and what may follow it on its line (crossknow's choice)."""
LETTERS = string.ascii_uppercase
"""The option letters of the completion form: A for the first choice, and so on."""


@dataclass(frozen=True)
class MCQuestion:
    """One side of a pair: a multiple-choice question in one language."""

    question: str
    choices: tuple[str, ...]
    answer: int
    """Index of the correct choice."""
    lang: str
    """Language code ('en', 'zh', ...)."""


@dataclass(frozen=True)
class SimAnswer:
    """One simulator's answer to one question."""

    choice: int | None
    """The chosen index; None = invalid (after retries), never wrong."""
    raw: str | None
    """The raw output (generative), or None (loss-based)."""
    error: str | None
    """Why the answer is invalid; None when valid."""
    seed: int | None = None
    """The sampling seed of the call whose output this is (a generative simulator's last attempt); None
    for a simulator that does not sample (loss-based)."""


@runtime_checkable
class Simulator(Protocol):
    """A model that answers multiple-choice questions."""

    name: str
    """The model spec."""

    def answer(self, questions: Sequence[MCQuestion], resimulation: int | Sequence[int] = 0) -> list[SimAnswer]:
        """One answer per question, in order. `resimulation` numbers the draw: one int for all the questions
        (r >= 1 marks the r-th time they are asked again after an invalid answer) or one per question (the
        objective's `draw_index` of each sample). A simulator that samples must draw afresh for each
        number, never replay an earlier answer; one that does not sample (scoring) may ignore it."""
        ...


# ---- the paper's answering templates (Appendix E, verbatim) --------------------------------------------

ANSWER_TEMPLATES: dict[str, str] = {
    "en": "Please carefully read the question below and provide a solution from the choices. You must choose the "
    "model’s final answer from one of the choices. Let’s think step by step!\n[The Start of the Question]\n"
    "{question}\n[The End of the Question]\n[The Start of the Choices]\n{choices}\n[The End of the Choices]\n"
    '[Output Format]\n{"final_answer": "<Your selected answer, exactly matching one of the given choices>"}',
    "fr": "Veuillez lire attentivement la question ci-dessous et choisir une réponse parmi les options proposées. "
    "Votre réponse finale doit correspondre exactement à l’une des options données. Réfléchissons étape par "
    "étape !\n[Début de la question]\n{question}\n[Fin de la question]\n[Début des options]\n{choices}\n"
    '[Fin des options]\n[Format de sortie]\n{"final_answer": "<Votre réponse finale, correspondant exactement à '
    'l’une des options données>"}',
    "it": "Leggi attentamente la domanda qui sotto e fornisci una soluzione scegliendo tra le opzioni disponibili. "
    "La tua risposta finale deve corrispondere esattamente a una delle opzioni fornite. Pensiamo passo dopo "
    "passo!\n[Inizio della Domanda]\n{question}\n[Fine della Domanda]\n[Inizio delle Opzioni]\n{choices}\n"
    '[Fine delle Opzioni]\n[Formato di Output]\n{"final_answer": "<La tua risposta finale, che deve '
    'corrispondere esattamente a una delle opzioni date>"}',
    "es": "Por favor, lee atentamente la siguiente pregunta y proporciona una solución eligiendo una de las "
    "opciones dadas. Tu respuesta final debe coincidir exactamente con una de las opciones. ¡Pensemos paso a "
    "paso!\n[Inicio de la Pregunta]\n{question}\n[Fin de la Pregunta]\n[Inicio de las Opciones]\n{choices}\n"
    '[Fin de las Opciones]\n[Formato de Salida]\n{"final_answer": "<Tu respuesta final, exactamente igual a una '
    'de las opciones dadas>"}',
}
"""The paper's zero-shot CoT answering templates, by language. The paper prints these four only."""

RETRY_NOTE = (
    '\n\nEnd your reply with the JSON object {"final_answer": "..."} whose value is exactly one of the choices.'
)
"""crossknow's choice: appended from the second attempt on (at temperature 0.001 a new seed alone barely
changes the output). Not in the paper."""

SIMULATOR_READING = Reading(TextOutput(OWN_PARSERS.parse, RETRY_NOTE), OWN_PARSERS)
"""Free text in either form, read by each question's own parser; a chat answer's retries carry RETRY_NOTE."""

_PLACEHOLDER = re.compile(r"\{(question|choices)\}")
_FINAL_ANSWER = re.compile(r'\{\s*"final_answer"\s*:\s*("(?:[^"\\]|\\.)*")\s*\}')


def template_language(lang: str) -> str:
    """The language of the template used for questions in `lang`: its own where the paper prints one (en, fr,
    it, es), else English (crossknow's choice: the English instructions around the target-language question
    and choices; the paper does not print its templates for the other twelve languages)."""
    return lang if lang in ANSWER_TEMPLATES else "en"


def render_choices(choices: Sequence[str]) -> str:
    """The {choices} slot: a JSON list (crossknow's choice; the paper does not say how choices are listed),
    which quotes each choice exactly, so that the answer can be copied from it."""
    return json.dumps(list(choices), ensure_ascii=False)


def answer_prompt(question: MCQuestion) -> str:
    """The user message that asks `question` (see `template_language` and `render_choices`)."""
    slots = {"question": question.question, "choices": render_choices(question.choices)}
    return _PLACEHOLDER.sub(lambda match: slots[match.group(1)], ANSWER_TEMPLATES[template_language(question.lang)])


def extract_choice(text: str, choices: Sequence[str]) -> tuple[int | None, str | None]:
    """Strict answer extraction: the last `{"final_answer": "..."}` object of `text`, whose value, stripped
    of surrounding whitespace, must equal exactly one choice (stripped likewise). Returns (index, None), or
    (None, why not). No LLM extractor and no fuzzy matching (crossknow's choice)."""
    found = _FINAL_ANSWER.findall(text)
    if not found:
        return None, 'no {"final_answer": "..."} object in the output'
    try:
        value = json.loads(found[-1]).strip()
    except json.JSONDecodeError as error:
        return None, f"final_answer is not a JSON string: {error}"
    matches = [index for index, choice in enumerate(choices) if choice.strip() == value]
    if len(matches) == 1:
        return matches[0], None
    if matches:
        return None, f"final_answer {value!r} matches choices {matches}"
    return None, f"final_answer {value!r} is not one of the {len(choices)} choices"


# ---- crossknow's few-shot completion form, for base models --------------------------------------------

LETTER_EXAMPLES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("Which of these animals can fly?", ("dog", "sparrow", "fish", "horse"), 1),
    ("What do plants need from sunlight to make their food?", ("energy", "sand", "salt", "noise"), 0),
    ("How many days are there in one week?", ("five", "six", "ten", "seven"), 3),
)
"""The completion form's invented solved examples (question, choices, index of the answer): written for
crossknow, answers spread over A, B and D so that no letter is the examples' habit."""
_LETTER = re.compile(r"\s*\(?([A-Z])\)?(?=[\s.,:;)]|$)")


def lettered(question: str, choices: Sequence[str]) -> str:
    """`question` then one line per choice, "A. first", "B. second", ... (at most 26 choices)."""
    if len(choices) > len(LETTERS):
        raise CrossknowError(f"the completion form letters at most {len(LETTERS)} choices, got {len(choices)}")
    return "\n".join([question, *(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(choices))])


def completion_answer_prompt(question: MCQuestion) -> str:
    """The completion prompt that asks `question` of a base model (see the module docstring): the solved
    `LETTER_EXAMPLES`, then the question, ending "Answer:" where the model writes a letter."""
    blocks = [f"Question: {lettered(q, choices)}\nAnswer: {LETTERS[answer]}" for q, choices, answer in LETTER_EXAMPLES]
    blocks.append(f"Question: {lettered(question.question, question.choices)}\nAnswer:")
    return "\n\n".join(blocks)


def extract_letter(text: str, choices: Sequence[str]) -> tuple[int | None, str | None]:
    """The option letter a completion-form answer starts with: an upper-case letter, optionally in
    parentheses, alone or followed by a space, a newline or punctuation (" B", "B. sparrow", "(C)").
    Returns (index, None), or (None, why not): an empty output, text that does not start with a letter
    (a word such as "Berlin" does not), or a letter past the last choice."""
    if not text.strip():
        return None, "empty output"
    match = _LETTER.match(text)
    if match is None:
        return None, f"no option letter at the start of the output: {text.strip()[:40]!r}"
    index = LETTERS.index(match.group(1))
    if index >= len(choices):
        return None, f"letter {match.group(1)} is past the {len(choices)} choices (A-{LETTERS[len(choices) - 1]})"
    return index, None


def letter_role(role: Role) -> Role:
    """The role a base model answers by letter in: `role`'s server, key, seed and attempts, greedy, at most
    `LETTER_MAX_TOKENS` tokens (or the role's budget where lower)."""
    return replace(role, temperature=0.0, max_tokens=min(role.max_tokens, LETTER_MAX_TOKENS))


def resimulation_seed(seed: int, resimulation: int, attempts: int) -> int:
    """The base seed of re-simulation r (0 = the first asking) for a client whose base seed is `seed` and
    that makes up to `attempts` calls per question: seed + r * attempts. The client's attempt k then uses
    seed + r * attempts + k, a seed no other attempt of any asking uses, so a re-simulation is a new request
    (a new cache key) that reaches the model, and a rerun asks with the same seeds and replays it from the
    cache (crossknow's choice; the paper does not say how it re-simulates)."""
    return seed + resimulation * attempts


def draw_index(resimulation: int, sample: int, samples: int) -> int:
    """The draw of sample `sample` (0 to `samples` − 1) of a question at re-simulation `resimulation`:
    resimulation * samples + sample, a different number for every (re-simulation, sample), and the
    re-simulation itself when there is one sample (crossknow's choice; the paper does not say how it samples)."""
    return resimulation * samples + sample


class GenerativeSimulator:
    """Answers by generation through a StructuredClient (its cache, retries and meter), in the form its model
    takes (`client.prompt_format`): the paper's templates for a chat model, the few-shot letter form for a base
    model. `from_pool` builds the client each form asks for: a chat model's with the role's settings (at
    `SIMULATION_TEMPERATURE` to follow the paper), a base model's greedy and capped at `LETTER_MAX_TOKENS`
    (`letter_role`). A simulator asks through its one client, whose meter is the simulator's."""

    def __init__(self, name: str, client: StructuredClient):
        self.name = name
        self.client = client

    @classmethod
    def from_pool(cls, name: str, pool: ClientPool, spec: str, role: Role) -> GenerativeSimulator:
        """The simulator of model `spec` from `pool`: a client with `role`'s settings for a chat model, with
        `letter_role(role)`'s for a base model asked by completion."""
        role = per_form(prompt_format_of(pool.generator(spec, role)), chat=role, completion=letter_role(role))
        return cls(name, pool.client(spec, role))

    @property
    def prompt_format(self) -> str:
        """'chat' (the paper's templates) or 'completion' (the few-shot letter form): how this simulator asks."""
        return self.client.prompt_format

    def answer(self, questions: Sequence[MCQuestion], resimulation: int | Sequence[int] = 0) -> list[SimAnswer]:
        """One answer per question; invalid answers (after the client's attempts) carry the last raw
        output and the reason. Draw d (`resimulation`, one for all or one per question) asks from
        `resimulation_seed`; each answer records its seed."""
        draws = [resimulation] * len(questions) if isinstance(resimulation, int) else list(resimulation)
        if len(draws) != len(questions):
            raise CrossknowError(f"{len(draws)} draws for {len(questions)} questions")
        seeds = [resimulation_seed(self.client.seed, draw, self.client.max_attempts) for draw in draws]
        asks = [Ask(ChatPrompt(None, answer_prompt(question)), CompletionPrompt(completion_answer_prompt(question)),
                    chat_parse=lambda text, choices=question.choices: extract_choice(text, choices),
                    completion_parse=lambda text, choices=question.choices: extract_letter(text, choices))
                for question in questions]
        outcomes = self.client.ask_many(asks, SIMULATOR_READING, seeds=seeds)
        return [SimAnswer(outcome.value, outcome.raw_text or None, outcome.error, seed + max(outcome.attempts, 1) - 1)
                for outcome, seed in zip(outcomes, seeds, strict=True)]


class LossSimulator:
    """Answers by loss (crossknow's addition): each option scored under `rule` by `scorer`, the option with
    the lowest loss under `normalisation` (default: the rule's own) chosen, ties to the lower index."""

    prompt_format = "loss"
    """No prompt: the options are scored (recorded as the simulator's prompt format)."""

    def __init__(self, name: str, scorer: Scorer, rule: Rule = "lm-eval", normalisation: Normalisation | None = None):
        self.name = name
        self.scorer = scorer
        self.rule: Rule = rule
        self.normalisation = normalisation or PRIMARY_NORMALISATION[rule]

    def answer(self, questions: Sequence[MCQuestion], resimulation: int | Sequence[int] = 0) -> list[SimAnswer]:
        """One answer per question; a question that is not a valid item (an empty choice) or that the scorer
        cannot score is invalid, with the reason. Scoring is deterministic: any draw (`resimulation`) scores
        again and gets the same answer."""
        answers: list[SimAnswer | None] = [None] * len(questions)
        requests, positions = [], []
        for position, question in enumerate(questions):
            try:
                item = MCItem(id=f"q{position}", lang=question.lang, kind="question", prompt=question.question,
                              options=list(question.choices), answer=question.answer)
            except ValidationError as error:
                answers[position] = SimAnswer(None, None, f"not a valid question: {error.errors()[0]['msg']}")
                continue
            requests.append(option_requests(item, self.rule))
            positions.append(position)
        scored, failed = score_isolating(self.scorer, [[option.request for option in options] for options in requests])
        for group, position in enumerate(positions):
            if group in failed:
                answers[position] = SimAnswer(None, None, f"unscorable: {failed[group]}")
                continue
            scores = [OptionScore(result.logprob_sum, result.n_tokens, len(option.norm_text),
                                  len(option.norm_text.encode("utf-8")))
                      for option, result in zip(requests[group], scored[group], strict=True)]
            answers[position] = SimAnswer(predict(scores, self.normalisation), None, None)
        return answers  # type: ignore[return-value]
