"""Subject-domain categories (the paper's Table 4): the table's arithmetic by hand and against the paper's printed
table, the answer schema, the resumable stage, the probe's candidate files, the command, and the embedded model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossknow.cli.app import app
from crossknow.errors import InputError
from crossknow.generation.structured import StructuredClient, parse_structured
from crossknow.models.generator import GenerateResult, Usage
from crossknow.pitfalls.candidates import CandidateList, CandidateRecord, QuestionSide
from crossknow.pitfalls.categories import (
    CATEGORIES,
    TABLE_COLUMNS,
    CategoryAnswer,
    CategoryLog,
    CategoryPair,
    categorize_candidates,
    category_table,
    classify_pairs,
)
from crossknow.pitfalls.categorize import run as categorize_run
from crossknow.pitfalls.categorize.run import CategorizeConfig, read_category_pairs, run_categorize
from crossknow.report.pitfalls_categories_report import write_categories_report
from crossknow.store.request_cache import RequestCache
from tests.conftest import SHARED_DATA

RELEASE = SHARED_DATA / "cross-lingual-pitfalls"
PAPER = SHARED_DATA.parent / "papers" / "cross-lingual-pitfalls.txt"
SCI, HIST, SOC, ARTS, GEO, GEN = CATEGORIES


class ScriptedClassifier:
    """A generator answering the classifier prompt: 'Sports' (outside the six) for a question holding 'football',
    else a domain chosen by the question's length (even: Science & Technology, odd: General Knowledge)."""

    name = "scripted"
    model_id = "classifier"

    def __init__(self):
        self.requests = []

    def generate(self, requests):
        self.requests.extend(requests)
        results = []
        for request in requests:
            question = re.search(r"\[The Start of the Question\]\n(.*)\n\[The End of the Question\]",
                                 request.messages[-1].content, re.S).group(1)
            category = "Sports" if "football" in question else SCI if len(question) % 2 == 0 else GEN
            text = json.dumps({"reasoning": "scripted", "category": category})
            results.append(GenerateResult(text, "scripted", "classifier", Usage(20, 8)))
        return results


def scripted_client(tmp_path: Path) -> tuple[ScriptedClassifier, StructuredClient]:
    generator = ScriptedClassifier()
    return generator, StructuredClient(generator, RequestCache(tmp_path / "requests.sqlite"))


# ---- the table ----------------------------------------------------------------------------------------------------


def test_table_percentages_overall_average_and_flags_by_hand():
    rows = [("ja", SCI), ("ja", SCI), ("ja", SOC), ("ja", None),
            ("fr", SCI), ("fr", GEN), ("fr", GEN), ("fr", ARTS), ("ko", None)]
    table = category_table(rows)
    ja, fr, ko = table.languages
    # ja: 3 classified (the invalid pair is in no percentage): 2/3 and 1/3
    assert (ja.n_pairs, ja.n_classified, ja.n_invalid) == (4, 3, 1)
    assert ja.percent[SCI] == pytest.approx(66.6667, abs=1e-4) and ja.percent[SOC] == pytest.approx(33.3333, abs=1e-4)
    assert ja.percent[GEN] == 0.0
    assert fr.percent == {SCI: 25.0, HIST: 0.0, SOC: 0.0, ARTS: 25.0, GEO: 0.0, GEN: 50.0}
    # pooled over the 7 classified pairs: 3/7, 1/7, 2/7, 1/7 (the mean of the two languages' percentages would give
    # 45.83% for Science & Technology)
    assert table.overall_percent[SCI] == pytest.approx(42.8571, abs=1e-4)
    assert table.overall_percent[SOC] == pytest.approx(14.2857, abs=1e-4)
    assert table.overall_percent[GEN] == pytest.approx(28.5714, abs=1e-4)
    assert table.overall_percent[ARTS] == pytest.approx(14.2857, abs=1e-4)
    assert table.overall_percent[HIST] == table.overall_percent[GEO] == 0.0
    assert (table.n_classified, table.n_invalid) == (7, 2)
    # flags: strictly above the overall average (0% against 0% is not)
    assert [c for c in CATEGORIES if ja.above_average[c]] == [SCI, SOC]
    assert [c for c in CATEGORIES if fr.above_average[c]] == [ARTS, GEN]
    # a language with no classified pair has no percentage and no flag
    assert (ko.n_pairs, ko.n_classified) == (1, 0) and set(ko.percent.values()) == {None}
    assert not any(ko.above_average.values())
    with pytest.raises(ValueError, match="Sports"):
        category_table([("ja", "Sports")])


def _paper_table4() -> dict[str, list[float]]:
    """Table 4 as the paper's text prints it: language -> six percentages in the table's column order."""
    text = PAPER.read_text(encoding="utf-8")
    block = text[text.index("Table 4: Percentage distribution"):]
    rows = {}
    for line in block.splitlines()[2:]:
        found = re.fullmatch(r"(\D+?) ((?:[\d.]+% ?){6})", line.strip())
        if not found:
            break
        rows[found.group(1)] = [float(v) for v in re.findall(r"([\d.]+)%", found.group(2))]
    return rows


def test_release_labels_give_the_papers_table4_and_its_pooled_overall_average():
    paper = _paper_table4()
    assert len(paper) == 17 and "Overall Average" in paper
    rows = []
    for language in paper:
        if language != "Overall Average":
            rows += [(language, record["category"])
                     for record in json.loads((RELEASE / f"{language}.json").read_text(encoding="utf-8"))]
    table = category_table(rows)
    assert table.n_classified == 6713
    mismatched = []
    for row in table.languages:
        for printed, category in zip(paper[row.lang], TABLE_COLUMNS, strict=True):
            if round(row.percent[category], 2) != printed:
                mismatched.append((row.lang, category, printed, round(row.percent[category], 2)))
    # the paper's Hebrew row sums to 99.0%: two of its cells differ from the release's labels
    assert mismatched == [("Hebrew", GEN, 10.02, 11.6), ("Hebrew", GEO, 0.58, 0.0)]
    assert [round(table.overall_percent[c], 2) for c in TABLE_COLUMNS] == paper["Overall Average"]
    # the paper's highlights, checked on its text: Amharic is above average in Science & Technology, Chinese in
    # Society & Culture, Korean in Geography & Environment; Chinese is below in Science & Technology
    flags = {row.lang: row.above_average for row in table.languages}
    assert flags["Amharic"][SCI] and flags["Chinese"][SOC] and flags["Korean"][GEO] and not flags["Chinese"][SCI]


# ---- the answer ---------------------------------------------------------------------------------------------------


def test_schema_is_reasoning_then_one_of_the_six():
    schema = CategoryAnswer.model_json_schema()
    assert list(schema["properties"]) == ["reasoning", "category"]
    assert schema["properties"]["category"]["enum"] == list(CATEGORIES)
    value, error = parse_structured('{"reasoning": "a sport", "category": "Sports"}', CategoryAnswer)
    assert value is None and "category" in error
    value, error = parse_structured('{"reasoning": "rocks", "category": "Science & Technology"}', CategoryAnswer)
    assert error is None and value.category == SCI


def test_a_category_outside_the_six_is_retried_then_invalid_and_never_counted(tmp_path):
    generator, client = scripted_client(tmp_path)
    pairs = [CategoryPair("p1", "ja", "Who won the football match?", ("A", "B"), None),
             CategoryPair("p2", "ja", "Which gas do plants take in?", ("O2", "CO2"), SOC)]
    first, second = classify_pairs(pairs, client)
    assert first.category is None and first.attempts == 3 and "category" in first.error
    assert len(generator.requests) == 4  # 3 attempts for p1, 1 for p2
    assert len(pairs[1].question) % 2 == 0 and second.category == SCI and second.error is None
    assert second.reference == SOC
    table = category_table([(row.lang, row.category) for row in (first, second)])
    assert (table.n_classified, table.n_invalid, table.counts[SCI]) == (1, 1, 1)
    assert sum(table.counts.values()) == 1


class BaseClassifier:
    """A scripted base model (completion form): it continues every prompt by the next of `lines` (the last one
    again when they run out)."""

    name = "base"
    model_id = "base-1"
    prompt_format = "completion"

    def __init__(self, lines):
        self.lines = list(lines)
        self.requests = []

    def generate(self, requests):
        self.requests.extend(requests)
        return [GenerateResult(self.lines.pop(0) if len(self.lines) > 1 else self.lines[0], "base", "base-1",
                               Usage(30, 4)) for _ in requests]


def test_a_base_model_is_asked_for_the_domain_by_a_completion_prompt_not_json(tmp_path):
    """A base model gets crossknow's few-shot completion form: the question and choices on one line each, the
    domain as one short line, read as one of the six by code; an answer outside the six is asked again."""
    base = BaseClassifier([" Sports", " Arts & Literature (painting)", " geography & environment"])  # p1, p2, p1
    client = StructuredClient(base, RequestCache(tmp_path / "requests.sqlite"))
    pairs = [CategoryPair("p1", "ja", "Which river\nis the longest?", ("Nile", "Amazon"), None),
             CategoryPair("p2", "ja", "Who painted the Mona Lisa?", ("Leonardo", "Raphael"), None)]
    first, second = classify_pairs(pairs, client)
    assert all(r.prompt is not None and not r.messages and r.json_schema is None for r in base.requests)
    assert base.requests[0].stop == ("\n",)
    assert base.requests[0].prompt.endswith("Question: Which river is the longest?\nChoices: Nile | Amazon\nDomain:")
    assert (first.category, first.error, first.attempts) == (GEO, None, 2)
    assert (second.category, second.error) == (ARTS, None)
    assert first.reasoning is None  # a base model is not asked for a reason


# ---- reading, the stage and its resume ----------------------------------------------------------------------------


def test_release_pairs_are_read_with_their_labels_and_bad_records_named(tmp_path):
    pairs, skipped = read_category_pairs(RELEASE / "Japanese.json", limit=3)
    records = json.loads((RELEASE / "Japanese.json").read_text(encoding="utf-8"))[:3]
    assert skipped == [] and [p.pair_id for p in pairs] == ["Japanese:0", "Japanese:1", "Japanese:2"]
    assert [(p.lang, p.question, list(p.choices), p.reference) for p in pairs] == [
        ("ja", r["question"], r["choices"], r["category"]) for r in records]
    broken = records[:2]
    del broken[1]["question"]
    path = tmp_path / "Japanese.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(InputError, match=r"Japanese.json, line 2: field 'question': missing"):
        read_category_pairs(path)


def config_for(tmp_path: Path, *files: Path, limit: int | None = 5) -> CategorizeConfig:
    return CategorizeConfig(pairs=[str(f) for f in files], classifier="openai:x", base_url="http://127.0.0.1:9/v1",
                            limit=limit, batch_size=2, cache=str(tmp_path / "requests.sqlite"))


def test_resume_asks_nothing_twice_and_survives_a_torn_line(tmp_path):
    out, config = tmp_path / "run", config_for(tmp_path, RELEASE / "Japanese.json", RELEASE / "French.json")
    generator, client = scripted_client(tmp_path)
    metrics = run_categorize(config, out, client)
    assert (metrics.n_pairs, metrics.calls, metrics.cached_calls, metrics.table.n_classified) == (10, 10, 0, 10)
    assert [row.lang for row in metrics.table.languages] == ["ja", "fr"]
    # the reference table is the release's own labels of these ten pairs
    labels = [r["category"] for f in ("Japanese", "French")
              for r in json.loads((RELEASE / f"{f}.json").read_text(encoding="utf-8"))[:5]]
    assert sum(metrics.reference.counts.values()) == 10 and metrics.reference.counts[SCI] == labels.count(SCI)
    assert metrics.n_compared == 10
    lines = (out / "categories.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 10

    _, again = scripted_client(tmp_path)
    metrics = run_categorize(config, out, again)
    assert (metrics.calls, metrics.cached_calls, again.meter.calls) == (0, 0, 0)

    # a kill before the last chunk's commit: its two pairs alone are asked again, from the request cache
    manifest = out / "stages" / "categories" / "manifest.json"
    shards = json.loads(manifest.read_text())["shards"]
    manifest.write_text(json.dumps({"shards": shards[:-1]}))
    _, third = scripted_client(tmp_path)
    metrics = run_categorize(config, out, third)
    assert (metrics.calls, metrics.cached_calls, metrics.table.n_classified) == (0, 2, 10)
    ids = [json.loads(line)["pair_id"] for line in (out / "categories.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 10

    # a run of layout 1 (categories.jsonl its append-only log) killed while appending its last line: the torn line
    # is cut, and that pair alone is asked again
    shutil.rmtree(out / "stages")
    (out / "layout.json").unlink()
    data = (out / "categories.jsonl").read_bytes()
    (out / "categories.jsonl").write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 1 + 15])
    _, fifth = scripted_client(tmp_path)
    metrics = run_categorize(config, out, fifth)
    assert (metrics.calls, metrics.cached_calls, metrics.table.n_classified) == (0, 1, 10)
    assert [json.loads(line)["pair_id"] for line in (out / "categories.jsonl").read_text().splitlines()] == ids

    # a larger --limit classifies only the new pairs
    _, fourth = scripted_client(tmp_path)
    metrics = run_categorize(config.model_copy(update={"limit": 6}), out, fourth)
    assert (metrics.n_pairs, metrics.calls, metrics.cached_calls) == (12, 2, 0)


def candidate(pair_id: str, question: str, lang: str = "fr") -> CandidateRecord:
    side = QuestionSide(question=question, choices=["a", "b"], answer=0, lang="en")
    return CandidateRecord(
        id=pair_id, source_id=pair_id.split(":")[0], recipe="np", english=side,
        target=side.model_copy(update={"question": f"[{lang}] {question}", "lang": lang}), value=1.0,
        beta_en={"s": 1.0}, beta_target={"s": 0.0}, depth=0, parent_id=None, lineage=[])


def test_candidates_of_a_probe_run_are_categorized_in_its_directory(tmp_path):
    run = tmp_path / "probe"
    run.mkdir()
    candidates = CandidateList([candidate("s0:fr:a", "What is an atom?!"),
                                candidate("s1:fr:b", "Who won the football cup?"),
                                candidate("s2:fr:c", "Where is Paris?!")])
    generator, client = scripted_client(tmp_path)
    rows = categorize_candidates(run, candidates.records(), client)
    assert {k: r.category for k, r in rows.items()} == {"s0:fr:a": GEN, "s1:fr:b": None, "s2:fr:c": SCI}
    assert rows["s1:fr:b"].error and rows["s0:fr:a"].lang == "fr"
    assert len(CategoryLog(run).rows) == 3
    assert [json.loads(line)["pair_id"] for line in (run / "categories.jsonl").read_text().splitlines()] == \
        ["s0:fr:a", "s1:fr:b", "s2:fr:c"]
    asked = len(generator.requests)
    assert categorize_candidates(run, candidates.records(), client).keys() == rows.keys()
    assert len(generator.requests) == asked
    # the item form of the same candidates reads as the same pairs
    candidates.write_items(run / "candidate_items.jsonl")
    pairs, skipped = read_category_pairs(run / "candidate_items.jsonl")
    assert skipped == [] and [(p.pair_id, p.lang, p.question) for p in pairs] == [
        ("s0:fr:a", "fr", "What is an atom?!"), ("s1:fr:b", "fr", "Who won the football cup?"),
        ("s2:fr:c", "fr", "Where is Paris?!")]


def test_the_command_prints_table4_and_writes_the_report(tmp_path, monkeypatch):
    generator = ScriptedClassifier()
    real_pool = categorize_run.classifier_pool

    def scripted_pool(config, run_dir):  # the command's own pool, holding the scripted classifier under its spec
        pool = real_pool(config, run_dir)
        pool.adopt(config.classifier.spec, generator)
        return pool

    monkeypatch.setattr(categorize_run, "classifier_pool", scripted_pool)
    out = tmp_path / "run"
    args = ["pitfalls", "categorize", "--pairs", str(RELEASE / "Japanese.json"), "--pairs",
            str(RELEASE / "Korean.json"), "--classifier", "openai:x", "--base-url", "http://127.0.0.1:9/v1",
            "--limit", "4", "--cache", str(tmp_path / "requests.sqlite"), "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Overall Average" in result.output and "Japanese" in result.output and "Korean" in result.output
    assert "8 calls, 0 cached" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["table"]["n_classified"] == 8
    report = (out / "report.html").read_text()
    assert all(f'id="{part}"' in report for part in ("table-categories", "table-reference", "fig-pitfalls_categories"))
    flagged = sum(v for row in metrics["table"]["languages"] for v in row["above_average"].values())
    assert report.split('id="table-reference"')[0].count("background:#ffd8a8") == flagged > 0
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "0 calls, 0 cached" in again.output and len(generator.requests) == 8
    bad = CliRunner().invoke(app, [*args[:-2], "--classifier", "openai:y", "--out", str(out)])
    assert bad.exit_code != 0 and "classifier.spec: 'openai:x' -> 'openai:y'" in str(bad.exception)


# ---- real models --------------------------------------------------------------------------------------------------


def _check_real_run(metrics, out: Path, n: int) -> None:
    rows = list(CategoryLog(out).rows.values())
    assert len(rows) == n  # no pair lost
    for row in rows:
        assert (row.category in CATEGORIES and row.error is None) or (row.category is None and row.error)
    table = metrics.table
    assert sum(table.counts.values()) == table.n_classified == sum(r.category is not None for r in rows)
    assert table.n_classified + table.n_invalid == n
    assert write_categories_report(out).exists()


@pytest.mark.slow
def test_the_embedded_model_classifies_released_pairs(embedded_generator, tmp_path):
    cache = RequestCache(tmp_path / "requests.sqlite")
    client = StructuredClient(embedded_generator, cache, max_tokens=128)
    config = CategorizeConfig(pairs=[str(RELEASE / "Japanese.json"), str(RELEASE / "French.json")],
                              classifier="default", limit=3, max_tokens=128, cache=str(tmp_path / "requests.sqlite"))
    metrics = run_categorize(config, tmp_path / "run", client)
    _check_real_run(metrics, tmp_path / "run", 6)
    assert metrics.calls >= 6
    again = StructuredClient(embedded_generator, cache, max_tokens=128)
    assert run_categorize(config, tmp_path / "run", again).calls == 0 and again.meter.cached_calls == 0


@pytest.mark.nightly
def test_a_llama_cpp_server_classifies_released_pairs(llama_chat_server, tmp_path):
    config = CategorizeConfig(pairs=[str(RELEASE / "Korean.json")], classifier="openai:gemma-3-270m",
                              base_url=llama_chat_server, api_key_env="NO_KEY_NEEDED", limit=2, max_tokens=128,
                              cache=str(tmp_path / "requests.sqlite"))
    metrics = run_categorize(config, tmp_path / "run")
    _check_real_run(metrics, tmp_path / "run", 2)
    assert metrics.pending == 0 and metrics.calls >= 2
