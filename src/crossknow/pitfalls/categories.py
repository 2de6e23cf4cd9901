"""Subject-domain categories of bilingual pairs, by an LLM classifier (the paper's section 3.3 and Table 4).

crossknow's choices (the paper prints neither classifier nor prompt): the English question and its choices are
classified, by `CLASSIFY_TEMPLATE` (JSON, `reasoning` then `category`) or, for a base model, by a few-shot line
that `read_category` reads; percentages are per language, and the overall average is pooled over all languages
(what the paper's printed row is). The stage is `categories.jsonl` (`CategoryLog`), resumable per chunk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crossknow.data.jsonl import iter_json_lines, validation_problem, write_jsonl
from crossknow.data.schemas import Record
from crossknow.errors import InputError
from crossknow.generation.ask import Ask, ChatPrompt, CompletionPrompt, Reading, TextOutput, one_line
from crossknow.generation.structured import TRANSPORT_FAILURE, StructuredClient
from crossknow.pitfalls.candidates import CandidateRecord
from crossknow.store.layout import Table

CATEGORIES: tuple[str, ...] = (
    "Science & Technology",
    "History & World Events",
    "Society & Culture",
    "Arts & Literature",
    "Geography & Environment",
    "General Knowledge",
)
"""The six subject domains, in the order of the paper's text (section 3.3)."""

TABLE_COLUMNS: tuple[str, ...] = (
    "Science & Technology",
    "General Knowledge",
    "Geography & Environment",
    "Society & Culture",
    "Arts & Literature",
    "History & World Events",
)
"""The domains in the column order of the paper's Table 4."""

ABBREVIATIONS: dict[str, str] = {
    "Science & Technology": "Sci & Tech",
    "General Knowledge": "Gen Knowl.",
    "Geography & Environment": "Geo & Env.",
    "Society & Culture": "Soc & Cult.",
    "Arts & Literature": "Arts & Lit.",
    "History & World Events": "Hist & Events",
}
"""Table 4's column abbreviations (its caption)."""

Category = Literal[CATEGORIES]  # type: ignore[valid-type]  # the six names, written once
"""One of the six domains (a Literal over `CATEGORIES`)."""

CLASSIFY_TEMPLATE = """Classify the multiple-choice question below into exactly one of these six subject domains:
- Science & Technology: natural sciences, mathematics, medicine and health, engineering, computing and technology.
- History & World Events: historical periods, events and figures, wars, and events in the news.
- Society & Culture: customs, religion, law, politics, economics, psychology, everyday social life and behaviour.
- Arts & Literature: literature, music, painting, film, theatre and other arts.
- Geography & Environment: places, countries and regions, landforms, climate, natural resources and the environment.
- General Knowledge: common-sense or everyday facts that belong to none of the domains above.
[The Start of the Question]
{question}
[The End of the Question]
[The Start of the Choices]
{choices}
[The End of the Choices]
Return a JSON object with two keys: "reasoning", one or two sentences on what the question is about, then \
"category", its domain, written exactly as in the list above."""
"""crossknow's classifier prompt (the paper does not print its own): {question} and {choices} (numbered lines)."""


class CategoryAnswer(BaseModel):
    """The classifier's answer: its reasoning, then one of the six domains (any other value is invalid)."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(description="What the question is about, in a sentence or two.")
    category: Category = Field(description="The question's subject domain, one of the six.")


@dataclass(frozen=True)
class CategoryPair:
    """A pair to classify: its id, its target language and its English question."""

    pair_id: str
    lang: str
    """Language code of the pair's target side (the table's row)."""
    question: str
    """The English question, as the pair holds it."""
    choices: tuple[str, ...]
    """The English choices, in order."""
    reference: str | None = None
    """The category the input file gives the pair (the release's `category` field), when it gives one."""


class CategoryRow(Record):
    """One classified pair: a line of categories.jsonl."""

    pair_id: str = Field(description="The pair's id (release: '<Language>:<index>'; probe: the candidate's id).")
    lang: str = Field(description="Language code of the pair's target side.")
    category: str | None = Field(description="The domain the classifier gave, one of the six; null when invalid.")
    reasoning: str | None = Field(description="The classifier's reasoning; null when invalid, and from a base model "
                                  "(completion form), which is asked for the domain only.")
    error: str | None = Field(description="Why the answer is invalid after the client's retries; null when valid.")
    attempts: int = Field(ge=0, description="Classifier calls made for this pair, cached ones included.")
    reference: str | None = Field(default=None, description="The category the input file gives the pair (the "
                                  "release's labels), when it gives one.")


def classify_prompt(pair: CategoryPair) -> ChatPrompt:
    """The classifier prompt of one pair (its English side)."""
    choices = "\n".join(f"{n + 1}. {choice}" for n, choice in enumerate(pair.choices))
    return ChatPrompt(None, CLASSIFY_TEMPLATE.format(question=pair.question, choices=choices))


COMPLETION_SHOTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("Which gas do green plants take in to make their food?", ("Oxygen", "Carbon dioxide", "Nitrogen", "Helium"),
     "Science & Technology"),
    ("In which year did the Berlin Wall fall?", ("1961", "1979", "1989", "1999"), "History & World Events"),
    ("What do people usually say to someone who has just sneezed?", ("Bless you", "Good night", "Congratulations",
     "See you"), "Society & Culture"),
    ("Who wrote the novel Pride and Prejudice?", ("Jane Austen", "Charles Dickens", "Mark Twain", "Leo Tolstoy"),
     "Arts & Literature"),
    ("Which river flows through Cairo?", ("The Nile", "The Amazon", "The Danube", "The Ganges"),
     "Geography & Environment"),
    ("How many days are there in a leap year?", ("364", "365", "366", "367"), "General Knowledge"),
)
"""The examples of the completion form, one per domain in CATEGORIES order (crossknow's)."""


def classify_completion_prompt(pair: CategoryPair) -> CompletionPrompt:
    """The classifier prompt of one pair for a base model: the few-shot examples, then the pair's English question
    and choices, each on one line, ending where the domain's name starts."""
    header = f"Each multiple-choice question is sorted into one subject domain: {', '.join(CATEGORIES)}.\n\n"
    blocks = [_completion_block(question, choices) + f" {domain}\n\n" for question, choices, domain in COMPLETION_SHOTS]
    return CompletionPrompt(header + "".join(blocks) + _completion_block(pair.question, pair.choices))


def _completion_block(question: str, choices: Sequence[str]) -> str:
    return f"Question: {one_line(question)}\nChoices: {' | '.join(one_line(c) for c in choices)}\nDomain:"


def read_category(text: str) -> tuple[str | None, str | None]:
    """One of the six names from a base model's line: the first line, case ignored, equal to a name or starting
    with one followed by anything but a letter ("Arts & Literature (painting)"); (None, why) otherwise."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    folded = line.casefold()
    for category in CATEGORIES:
        name = category.casefold()
        if folded == name or (folded.startswith(name) and not folded[len(name)].isalpha()):
            return category, None
    return None, f"category: not one of the six domains: {line[:60]!r}"


CLASSIFIER_READING = Reading(CategoryAnswer, TextOutput(read_category))
"""A chat model's JSON answer (CategoryAnswer), a base model's line read by `read_category` (the domain's name)."""


def classify_pairs(pairs: Sequence[CategoryPair], client: StructuredClient) -> list[CategoryRow]:
    """One row per pair, in order, from one `call_many` of the structured client (its cache and retries), in the
    form the client's model takes (see the module docstring). An answer still invalid after the client's attempts
    has `category` None and the reason in `error`; a request that failed in transport has an `error` starting
    with `TRANSPORT_FAILURE` (the caller does not record it, so a later run asks again)."""
    if not pairs:
        return []
    outcomes = client.ask_many([Ask(classify_prompt(pair), classify_completion_prompt(pair)) for pair in pairs],
                               CLASSIFIER_READING)
    rows = []
    for pair, outcome in zip(pairs, outcomes, strict=True):
        value = outcome.value if outcome.valid else None
        answered = isinstance(value, CategoryAnswer)  # a chat answer gives its reasoning, a base model's the name alone
        rows.append(CategoryRow(
            pair_id=pair.pair_id, lang=pair.lang, category=value.category if answered else value,
            reasoning=value.reasoning if answered else None,
            error=None if value else outcome.error or "invalid output", attempts=outcome.attempts,
            reference=pair.reference))
    return rows


class LanguageCategories(Record):
    """One row of the table: a language's pairs per domain."""

    lang: str = Field(description="Language code.")
    n_pairs: int = Field(description="Pairs of this language in the table (classified and invalid).")
    n_classified: int = Field(description="Pairs with a category: the denominator of the percentages.")
    n_invalid: int = Field(description="Pairs whose answer stayed invalid: in no category, in no percentage.")
    counts: dict[str, int] = Field(description="Pairs per domain (all six, in CATEGORIES order).")
    percent: dict[str, float | None] = Field(description="100 * count / n_classified per domain; null when the "
                                             "language has no classified pair.")
    above_average: dict[str, bool] = Field(description="True where the percentage is strictly above the domain's "
                                           "overall average (the paper's highlighted cells).")


class CategoryTable(Record):
    """The paper's Table 4: per language, the percentage of its pairs in each domain, and the overall average."""

    languages: list[LanguageCategories] = Field(description="One row per language, in order of first appearance.")
    n_classified: int = Field(description="Classified pairs of all languages.")
    n_invalid: int = Field(description="Invalid pairs of all languages.")
    counts: dict[str, int] = Field(description="Classified pairs per domain, all languages pooled.")
    overall_percent: dict[str, float | None] = Field(description="The overall average: 100 * pooled count / "
                                                     "pooled classified pairs per domain (see the module docstring); "
                                                     "null when no pair is classified.")


def category_table(rows: Sequence[tuple[str, str | None]]) -> CategoryTable:
    """Table 4 from (language, category or None when invalid) per pair: percentages over a language's classified
    pairs, the overall average pooled over all classified pairs, and a cell flagged when its percentage is strictly
    above its domain's overall average. A category outside the six is a ValueError."""
    unknown = sorted({category for _, category in rows if category is not None and category not in CATEGORIES})
    if unknown:
        raise ValueError(f"not one of the six categories: {', '.join(unknown)}")
    by_language: dict[str, list[str | None]] = {}
    for lang, category in rows:
        by_language.setdefault(lang, []).append(category)
    pooled = Counter(category for _, category in rows if category is not None)
    n_classified = sum(pooled.values())
    overall = {c: 100 * pooled[c] / n_classified if n_classified else None for c in CATEGORIES}
    languages = []
    for lang, categories in by_language.items():
        counts = Counter(c for c in categories if c is not None)
        classified = sum(counts.values())
        percent = {c: 100 * counts[c] / classified if classified else None for c in CATEGORIES}
        above = {c: percent[c] is not None and overall[c] is not None and percent[c] > overall[c]  # type: ignore[operator]
                 for c in CATEGORIES}
        languages.append(LanguageCategories(
            lang=lang, n_pairs=len(categories), n_classified=classified, n_invalid=len(categories) - classified,
            counts={c: counts[c] for c in CATEGORIES}, percent=percent, above_average=above))
    return CategoryTable(languages=languages, n_classified=n_classified, n_invalid=len(rows) - n_classified,
                         counts={c: pooled[c] for c in CATEGORIES}, overall_percent=overall)


# ---- the stage: a record table, shared by `crossknow pitfalls categorize` and a probe run -------------------------


CATEGORY_TABLE = Table("categories", CategoryRow, key=lambda row: row.pair_id)
"""The stage: one CategoryRow per pair id."""
CATEGORIES_FILE = "categories.jsonl"
"""The stage as the user reads it: one CategoryRow a line, written from the table."""


def reference_label(value: object) -> str | None:
    """`value` when it is one of the six domains (a pair's own label), else None."""
    return value if isinstance(value, str) and value in CATEGORIES else None


def candidate_pair(record: CandidateRecord) -> CategoryPair:
    """The pair to classify of one candidate: its English side, its target language, its own label."""
    return CategoryPair(record.id, record.target.lang, record.english.question, tuple(record.english.choices),
                        reference_label(record.category))


def candidate_pairs(path: Path, limit: int | None) -> list[CategoryPair]:
    """The first `limit` pairs of a probe's candidates.jsonl (malformed input is an InputError naming the file, the
    line and the field)."""
    pairs = []
    for line, data in iter_json_lines(path):
        if limit is not None and len(pairs) >= limit:
            break
        try:
            record = CandidateRecord.model_validate(data)
        except ValidationError as error:
            field, reason = validation_problem(error)
            raise InputError(path, reason, line=line, field=field) from None
        pairs.append(candidate_pair(record))
    return pairs


class CategoryLog:
    """The classified pairs of a run directory, by pair id (its categories table)."""

    def __init__(self, run: str | Path):
        self.run = Path(run)
        self.table = CATEGORY_TABLE.open(self.run)
        self.rows: dict[str, CategoryRow] = {}
        for row in self.table.rows():
            self.rows.setdefault(row.pair_id, row)

    def add(self, rows: Iterable[CategoryRow]) -> None:
        """Commit the rows not yet recorded, as one shard."""
        new: dict[str, CategoryRow] = {}
        for row in rows:
            if row.pair_id not in self.rows:
                new.setdefault(row.pair_id, row)
        self.table.commit(list(new.values()))
        self.rows.update(new)

    def export(self) -> Path:
        """Write categories.jsonl in the run directory from the table."""
        return write_jsonl(self.run / CATEGORIES_FILE, self.rows.values())


def classify_missing(
    pairs: Sequence[CategoryPair], log: CategoryLog, client: Callable[[], StructuredClient], batch_size: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> int:
    """Classify the pairs missing from `log` in chunks of `batch_size`, committing each chunk; `client()` is asked
    for the client only when a pair is missing. Returns how many failed in transport (left unrecorded)."""
    todo = [pair for pair in pairs if pair.pair_id not in log.rows]
    done, pending = len(pairs) - len(todo), 0
    if on_progress:
        on_progress(done, len(pairs))
    for start in range(0, len(todo), batch_size):
        rows = classify_pairs(todo[start : start + batch_size], client())
        failed = [row.error is not None and row.error.startswith(TRANSPORT_FAILURE) for row in rows]
        log.add(row for row, fail in zip(rows, failed, strict=True) if not fail)
        pending += sum(failed)
        done += len(rows)
        if on_progress:
            on_progress(done, len(pairs))
    return pending


def categorize_candidates(run_dir: str | Path, candidates: Sequence[CandidateRecord], client: StructuredClient,
                          on_progress: Callable[[int, int], None] | None = None) -> dict[str, CategoryRow]:
    """Classify a probe run's `candidates` into its categories table (only those missing), write categories.jsonl,
    and return every candidate's row by candidate id (a candidate whose request failed in transport is absent).
    The caller owns `run_dir`; `client` is any structured client, e.g. the proxy's `ProxyLLM.translator`."""
    pairs = [candidate_pair(record) for record in candidates]
    log = CategoryLog(run_dir)
    classify_missing(pairs, log, lambda: client, 16, on_progress)
    log.export()
    return {pair.pair_id: log.rows[pair.pair_id] for pair in pairs if pair.pair_id in log.rows}
