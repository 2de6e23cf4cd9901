"""The recipes' settings, `run_probe` end to end with scripted parts (files, accounting, resume), and a
short real run of the `np` and `dp` recipes: the llama.cpp chat server as proxy, the embedded model by
loss as simulator, two released English sources."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from crossknow.data.formats import load_item_set
from crossknow.models.generator import GenerationFailed
from crossknow.pitfalls.pairs import SourceQuestion
from crossknow.pitfalls.probe.probe import BATCH_TABLE, run_probe
from crossknow.pitfalls.probe.recipes import RECIPES, get_recipe
from crossknow.pitfalls.probe.transformation import DirectPerturbation, ProxyPerturbation, placement
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import MCQuestion, SimAnswer
from crossknow.report.pitfalls_probe_report import probe_lead
from crossknow.store.request_cache import RequestCache

from .scripted import source
from .test_transformation import ScriptedProxy

SOURCES = Path("/work/shared/data/cross-lingual-pitfalls/source")


def test_the_paper_recipe_has_the_papers_settings():
    # Appendix B.1: batch 4, w = 12, d1 = 4, d2 = 6, θ_pot = 0.6, θ_inc = 0.8, k = 3
    settings = get_recipe("paper").settings
    assert (settings.initial_batch, settings.width, settings.depth, settings.extended_depth) == (4, 12, 4, 6)
    assert (settings.potential, settings.inclusion, settings.cap) == (0.6, 0.8, 3)
    proxy = ProxyLLM.from_generator(ScriptedProxy())
    assert isinstance(RECIPES["paper"].transformation(proxy, "French"), ProxyPerturbation)
    assert RECIPES["np"].transformation(proxy, "French") is None and RECIPES["np"].settings.depth == 0
    assert isinstance(RECIPES["dp"].transformation(proxy, "French"), DirectPerturbation)
    assert RECIPES["dp"].settings.depth == RECIPES["dp"].settings.extended_depth == 1
    assert (proxy.perturber.temperature, proxy.translator.temperature) == (0.7, 0.001)


class FooledByHints:
    """Right in English; wrong in the target language exactly when the question holds a 'hint'."""

    name = "fooled"

    def answer(self, questions, resimulation=0):
        wrong = [q.lang == "fr" and "hint" in q.question for q in questions]
        return [SimAnswer((q.answer + w) % len(q.choices), None, None) for q, w in zip(questions, wrong, strict=True)]


def test_run_probe_writes_the_list_items_and_account_and_resumes(tmp_path):
    sources = [source(i) for i in range(5)]  # batches of 4 and 1
    generator = ScriptedProxy()
    proxy = ProxyLLM.from_generator(generator, RequestCache(tmp_path / "requests.sqlite"))
    out = tmp_path / "run"
    account = run_probe("paper", sources, proxy, [FooledByHints()], out, lang="fr")
    # every perturbed child (one per incorrect option, 3 a question) has V = 1 and enters at depth 1
    assert (account.candidates, account.found_now, account.converted, account.conversion_rate) == (15, 15, 5, 1.0)
    # proxy: 5 question translations + 15 perturbations + 3 translations of δq^E (the three distractions,
    # "hint about option k", read the same for every question: sent once, then answered by the cache)
    assert account.proxy.calls == 23 and account.proxy.prompt_tokens == 230 and account.proxy.completion_tokens == 115
    # simulation: 5 roots and 15 children, two sides each
    assert account.simulation.calls == 40 and account.scored == 20
    assert account.per_found_pair.calls == pytest.approx((23 + 40) / 15)
    assert json.loads((out / "account.json").read_text())["found_now"] == 15
    items = load_item_set(out / "candidate_items.jsonl")
    assert len(items.items) == 30 and not items.invalid
    english, target = items.items[:2]
    assert english.pair_id == target.pair_id and (english.lang, target.lang) == ("en", "fr")
    # the distraction written from option 1 of root s0 goes after both questions: the side the seeded coin of
    # `placement` gives that root and option, the same on every run
    first = json.loads((out / "candidates.jsonl").read_text().splitlines()[0])
    assert first["lineage"][0]["wrong_option"] == 1 and placement(first["parent_id"], 1) == "after"
    assert (english.prompt, target.prompt) == ("Question 0? hint about option 1",
                                               "FR(Question 0?) FR(hint about option 1)")
    # killed during the second batch: nothing of it committed, its record and its three pairs
    lines = (out / "candidates.jsonl").read_text().splitlines(keepends=True)
    drop_last_shard(out / "stages" / "batches")
    resumed = run_probe("paper", sources, proxy, [FooledByHints()], out, lang="fr")
    assert (resumed.candidates, resumed.found_now) == (15, 3)
    assert len(generator.requests) == 23  # the replay came from the cache
    # the account covers the whole run, as the uninterrupted one: the killed batch's 4 paid calls (1 translation,
    # 3 perturbations), replayed from the cache, count once (the run's spend ledger recorded them when paid)
    assert resumed.proxy == account.proxy.model_copy(update={"seconds": resumed.proxy.seconds})
    assert resumed.batches == 2 and resumed.scored == 20 and resumed.this_invocation.calls == 0
    assert resumed.simulation.calls == 40  # simulation is local: the replay asked again
    assert resumed.per_found_pair.calls == pytest.approx((23 + 40) / 15)
    assert (out / "candidates.jsonl").read_text().splitlines(keepends=True) == lines


def drop_last_shard(stage: Path) -> None:
    """Leave out the last shard of a stage's manifest, as a kill before its commit would have."""
    manifest = json.loads((stage / "manifest.json").read_text())
    (stage / "manifest.json").write_text(json.dumps({"shards": manifest["shards"][:-1]}))


def test_a_probe_run_begun_in_the_json_lines_layout_resumes(tmp_path):
    sources = [source(i) for i in range(5)]
    generator = ScriptedProxy()
    proxy = ProxyLLM.from_generator(generator, RequestCache(tmp_path / "requests.sqlite"))
    out = tmp_path / "run"
    run_probe("paper", sources, proxy, [FooledByHints()], out, lang="fr")
    lines = (out / "candidates.jsonl").read_text().splitlines(keepends=True)
    batches = [json.dumps(record.model_dump(mode="json")) + "\n" for record in BATCH_TABLE.open(out).rows()]
    # layout 1, killed while appending the second batch's third pair: no layout.json, no tables, JSON lines
    shutil.rmtree(out / "stages")
    (out / "layout.json").unlink()
    (out / "candidates.jsonl").write_text("".join(lines[:-2]) + lines[-2][:40])
    (out / "batches.jsonl").write_text(batches[0])
    resumed = run_probe("paper", sources, proxy, [FooledByHints()], out, lang="fr")
    # the second batch's one whole pair had no batch line: found again with the two others, as if uninterrupted
    assert (resumed.candidates, resumed.found_now, resumed.batches, resumed.scored) == (15, 3, 2, 20)
    assert len(generator.requests) == 23  # the replay came from the cache
    assert (out / "candidates.jsonl").read_text().splitlines(keepends=True) == lines
    assert not (out / "batches.jsonl").exists()
    assert json.loads((out / "layout.json").read_text())["version"] == 2


@pytest.mark.parametrize("recipe", ["paper", "np"])
def test_pairs_and_conversion_at_depth_0_are_reported_apart_from_those_beyond_it(recipe, tmp_path):
    # of 5 sources, s1 and s3 already hold a hint: their translated pair fools the simulator at depth 0 (V = 1)
    # and enters the list at once; the other three convert only by perturbation (3 children each at depth 1)
    options = source(0).question.choices
    sources = [SourceQuestion(f"s{i}", MCQuestion(f"Question {i}{' with a hint' if i in (1, 3) else ''}?", options,
                                                  0, "en")) for i in range(5)]
    proxy = ProxyLLM.from_generator(ScriptedProxy(), RequestCache(tmp_path / "requests.sqlite"))
    account = run_probe(recipe, sources, proxy, [FooledByHints()], tmp_path / "run", lang="fr")
    beyond = 9 if recipe == "paper" else 0
    assert (account.pairs_at_depth_0, account.pairs_beyond_depth_0, account.candidates) == (2, beyond, 2 + beyond)
    assert (account.converted_at_depth_0, account.converted_beyond_depth_0) == (2, 3 if recipe == "paper" else 0)
    assert (account.conversion_rate_at_depth_0, account.conversion_rate_beyond_depth_0) == (
        0.4, 0.6 if recipe == "paper" else 0.0)
    assert account.conversion_rate == (1.0 if recipe == "paper" else 0.4)  # the total keeps NP's share
    saved = json.loads((tmp_path / "run" / "account.json").read_text())
    assert (saved["pairs_at_depth_0"], saved["converted_beyond_depth_0"]) == (2, 3 if recipe == "paper" else 0)
    if recipe == "paper":  # the console's and the report's lead
        assert ("Found at depth 0 (the unperturbed translation, as NP finds it): 2 pairs, 2 questions (40.0%); "
                "beyond depth 0: 9 pairs, 3 more questions (60.0%).") in probe_lead(account)


def released_sources(count: int) -> list[SourceQuestion]:
    """The `count` shortest SciQ questions of the release's English sources (question and choices
    together), so that the small model's translation fits a short output."""
    records = json.loads((SOURCES / "sciq.json").read_text(encoding="utf-8"))
    records = sorted(records, key=lambda r: len(r["question"]) + sum(len(c) for c in r["choices"]))[:count]
    return [
        SourceQuestion(
            f"sciq:{i}", MCQuestion(r["question"], tuple(r["choices"]), r["choices"].index(r["answer"]), "en")
        )
        for i, r in enumerate(records)
    ]


@pytest.mark.slow
# np's probe runs nightly: its structure is checked on the scripted proxy above, and dp takes the same path through
# the real server and scorer with a rewrite more
@pytest.mark.parametrize("recipe", [pytest.param("np", marks=pytest.mark.nightly), "dp"])
def test_a_real_run_of_the_baselines_accounts_for_what_it_spent(recipe, llama_chat_server, embedded_scorer, tmp_path):
    from crossknow.models.registry import ModelOptions, load_generator
    from crossknow.pitfalls.simulate import LossSimulator

    options = ModelOptions(base_url=llama_chat_server, concurrency=2, timeout_s=300)
    generator = load_generator("openai:gemma-3-270m", options)
    cache = RequestCache(tmp_path / "requests.sqlite")
    proxy = ProxyLLM.from_generator(generator, cache, max_tokens=96, max_attempts=1)
    simulator = LossSimulator("default", embedded_scorer)
    sources = released_sources(2)
    # ε = 1 switches the English-accuracy constraint off (the small simulator fails these questions in
    # English; the prefilter comes later), so that DP's rewrite is asked for: this test is about structure
    # and accounting, not quality
    account = run_probe(recipe, sources, proxy, [simulator], tmp_path / "run", lang="fr", epsilon=1.0)
    print(account.model_dump_json(indent=1))
    translated = account.sources - account.untranslated
    assert account.sources == 2 and account.proxy.calls >= 2 and account.proxy.prompt_tokens > 0
    assert account.proxy.cost_usd == 0 and account.proxy.seconds > 0
    # one loss simulator never answers invalid: two questions per scored pair, nothing re-simulated
    assert account.unscored == 0 and account.invalid_answers == 0
    assert account.simulation.calls == 2 * account.scored and account.scored >= translated
    if recipe == "np":
        assert account.scored == translated and account.proxy.calls == 2  # two question translations, no perturbation
    records = [json.loads(line) for line in (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()] \
        if (tmp_path / "run" / "candidates.jsonl").exists() else []
    assert account.candidates == len(records) == account.found_now
    assert all(r["value"] > 0.8 and r["recipe"] == recipe for r in records)
    if recipe == "dp":  # every root not listed at once is rewritten once: made, or rejected with a reason
        listed_roots = sum(r["depth"] == 0 for r in records)
        made = account.scored - translated
        rejected = account.rejected.get("direct perturbation", 0) + account.rejected.get("translation", 0)
        assert made + rejected == translated - listed_roots
        assert all(r["depth"] == 0 or len(r["lineage"]) == 1 for r in records)
    assert (account.per_found_pair is None) == (account.found_now == 0)
    if account.per_found_pair is not None:
        total = account.proxy.seconds + account.simulation.seconds
        assert account.per_found_pair.seconds == pytest.approx(total / account.found_now)
    again = run_probe(recipe, sources, proxy, [simulator], tmp_path / "run", lang="fr", epsilon=1.0)
    # nothing left to do: the account of the whole run is read back unchanged
    assert again.found_now == 0 and again.candidates == account.candidates
    assert (again.proxy, again.simulation, again.scored) == (account.proxy, account.simulation, account.scored)


class DownOnce(ScriptedProxy):
    """The scripted proxy behind a server that fails its first translation request in transport."""

    def __init__(self):
        super().__init__()
        self.down = True

    def generate(self, requests):
        if self.down and any("[The Start of the Choices]" in r.messages[-1].content for r in requests):
            self.down = False
            raise GenerationFailed([None] * len(requests), {i: "connection refused" for i in range(len(requests))})
        return super().generate(requests)


def test_a_batch_whose_translation_failed_in_transport_is_finished_by_the_next_run(tmp_path):
    sources = [source(i) for i in range(2)]
    generator = DownOnce()
    proxy = ProxyLLM.from_generator(generator, RequestCache(tmp_path / "requests.sqlite"))
    first = run_probe("np", sources, proxy, [FooledByHints()], tmp_path / "run", lang="fr")
    assert (first.batches, first.unfinished, first.candidates) == (0, 1, 0)
    assert not BATCH_TABLE.open(tmp_path / "run").keys()
    second = run_probe("np", sources, proxy, [FooledByHints()], tmp_path / "run", lang="fr")
    # asked again, translated, scored: two roots without a hint are right in both languages (V = 0)
    assert (second.batches, second.unfinished, second.scored, second.untranslated) == (1, 0, 2, 0)
