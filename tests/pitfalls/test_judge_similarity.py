"""The LLM judge of the semantic checks (the probe's default), through a real StructuredClient and request cache in
front of a scripted generator (what the judge says is the test's input; the parsing, the NaN of an invalid verdict,
the constraint's reasons and which model judges by default are what is tested)."""

from __future__ import annotations

import json
import math
import re

import pytest
import yaml

from crossknow.generation.structured import StructuredClient
from crossknow.models.generator import GenerateResult
from crossknow.pitfalls.pairs import SourceQuestion, root_node
from crossknow.pitfalls.probe.constraints import SemanticSimilarity
from crossknow.pitfalls.probe.judge_similarity import (
    JUDGE_TEMPERATURE,
    JUDGE_THRESHOLD,
    JudgeSimilarity,
    completion_judge_prompt,
)
from crossknow.pitfalls.probe.probe import run_probe
from crossknow.pitfalls.probe.recipes import default_constraints
from crossknow.pitfalls.probe.run import PitfallsProbeConfig, probe_from_config
from crossknow.pitfalls.proxy import ProxyLLM
from crossknow.pitfalls.simulate import MCQuestion
from crossknow.store.request_cache import RequestCache

from .scripted import source
from .test_recipes import FooledByHints
from .test_transformation import ScriptedProxy


class ScriptedJudge:
    """Says 'yes' unless the second text holds 'RAIN'; writes no JSON at all when it holds 'GARBLED'."""

    name, model_id = "scripted", "judge"

    def __init__(self):
        self.calls = 0

    def generate(self, requests):
        self.calls += len(requests)
        results = []
        for request in requests:
            second = re.search(r"\[The Start of the Second Text\]\n(.*)\n\[The End of the Second Text\]",
                               request.messages[-1].content, re.S).group(1)
            if "GARBLED" in second:
                text = "I cannot tell."
            else:
                text = json.dumps({"reasoning": "compared", "same_question": "no" if "RAIN" in second else "yes"})
            results.append(GenerateResult(text, "scripted", "judge"))
        return results


class ProxyThatJudges(ScriptedProxy):
    """The scripted proxy, which also answers the judge's prompt: 'no' when the second text holds 'RAIN'."""

    @staticmethod
    def _text(prompt):
        if prompt.startswith("Compare the two texts below."):
            second = prompt.split("[The Start of the Second Text]\n", 1)[1]
            return json.dumps({"reasoning": "compared", "same_question": "no" if "RAIN" in second else "yes"})
        return ScriptedProxy._text(prompt)


def _node(target: str):
    english = MCQuestion("Which gas do plants absorb?", ("Oxygen", "Carbon dioxide"), 1, "en")
    return root_node(SourceQuestion("q1", english), MCQuestion(target, ("酸素", "二酸化炭素"), 1, "ja"))


def test_the_judges_verdicts_become_reasons_and_an_invalid_one_is_named_invalid():
    judge = JudgeSimilarity(StructuredClient(ScriptedJudge(), max_attempts=2))
    nodes = [_node("植物はどの気体を吸収しますか？"), _node("RAIN 今日は雨です。"), _node("GARBLED")]
    assert judge.similarity([(n.english.question, n.target.question) for n in nodes])[:2] == [1.0, 0.0]
    reasons = SemanticSimilarity(judge, JUDGE_THRESHOLD, "cross").check(nodes, None)
    assert reasons == [None, "judge_cross>=0.5: S = 0.000", "judge_cross>=0.5: invalid judgement"]


class BaseModelJudge:
    """A base model (completion form) that scores continuations: P(" yes") after a judge prompt is the number the
    second question names ('P=0.8 ...'), as a local model's engine would score it."""

    name, model_id, prompt_format = "scripted", "base-judge", "completion"

    def __init__(self):
        self.scored: list[str] = []

    def generate(self, requests):
        raise AssertionError("P(yes) is scored, not generated")

    def score_answers(self, requests):
        logprobs = []
        for request in requests:
            self.scored.append(request.prompt)
            second = request.prompt.rsplit("Second question:\n", 1)[1]
            p_yes = float(re.search(r"P=([0-9.]+)", second).group(1))
            logprobs.append(math.log(p_yes if request.continuation == " yes" else 1 - p_yes))
        return logprobs


def test_a_base_model_judge_gives_p_yes_and_passes_a_pair_at_one_half(tmp_path):
    judge = JudgeSimilarity(StructuredClient(BaseModelJudge(), RequestCache(tmp_path / "requests.sqlite")))
    assert judge.prompt_format == "completion" and judge.reads_choices
    nodes = [_node("P=0.8 植物はどの気体を吸収しますか？"), _node("P=0.5 植物は何を吸う？"),
             _node("P=0.2 今日は雨です。")]
    reasons = SemanticSimilarity(judge, JUDGE_THRESHOLD, "cross").check(nodes, None)
    assert reasons == [None, None, "judge_cross>=0.5: S = 0.200"]  # accepted when P(yes) >= 0.5
    prompts = judge.client.generator.scored
    assert len(prompts) == 6  # " yes" and " no" for each pair, then nothing generated
    # the judge reads the choices too, lettered, and the prompt ends where " yes" or " no" follows
    assert prompts[0] == completion_judge_prompt("Which gas do plants absorb?\nA. Oxygen\nB. Carbon dioxide",
                                                 "P=0.8 植物はどの気体を吸収しますか？\nA. 酸素\nB. 二酸化炭素")
    assert prompts[0].endswith("\nA. 酸素\nB. 二酸化炭素\nSame question? Answer:")
    assert prompts[0].count("Same question? Answer: yes") == 2 and "Same question? Answer: no" in prompts[0]


class ServerBaseJudge:
    """A base model behind a server (completion form, no scoring): writes the word after 'Answer:' that the
    second question's marker names."""

    name, model_id, prompt_format = "scripted", "server-base", "completion"

    def generate(self, requests):
        words = {"SAME": " yes", "OTHER": " No, the second asks about rain.", "UNSURE": " Maybe"}
        results = []
        for request in requests:
            second = request.prompt.rsplit("Second question:\n", 1)[1]
            results.append(GenerateResult(next(w for m, w in words.items() if m in second), self.name, self.model_id))
        return results


def test_a_server_base_model_judge_reads_yes_or_no_and_an_unclear_word_is_invalid():
    judge = JudgeSimilarity(StructuredClient(ServerBaseJudge(), max_attempts=2))
    nodes = [_node("SAME 植物はどの気体を吸収しますか？"), _node("OTHER 今日は雨です。"), _node("UNSURE 何？")]
    assert judge.similarity([(n.english.question, n.target.question) for n in nodes])[:2] == [1.0, 0.0]
    reasons = SemanticSimilarity(judge, JUDGE_THRESHOLD, "cross").check(nodes, None)
    assert reasons == [None, "judge_cross>=0.5: S = 0.000", "judge_cross>=0.5: invalid judgement"]


def test_a_probe_with_a_judge_rejects_its_no_records_the_checks_and_counts_its_calls(tmp_path):
    class RainyProxy(ScriptedProxy):
        """Translates the first source's question into unrelated text ('RAIN ...')."""

        @staticmethod
        def _text(prompt):
            text = ScriptedProxy._text(prompt)
            return text.replace('"FR(Question 0?)"', '"RAIN"') if "[The Start of the Choices]" in prompt else text

    cache = RequestCache(tmp_path / "requests.sqlite")
    judge_generator = ScriptedJudge()
    judge = JudgeSimilarity(StructuredClient(judge_generator, cache))
    proxy = ProxyLLM.from_generator(RainyProxy(), cache)
    account = run_probe("np", [source(0), source(1)], proxy, [FooledByHints()], tmp_path / "run", lang="fr",
                        judge=judge)
    # q0's translation is judged another question and never simulated; an unperturbed pair is its own
    # original, so only θ' asks the judge: once per root
    assert account.rejected == {"judge_cross>=0.5": 1} and account.scored == 1
    assert judge_generator.calls == 2 and account.proxy.calls == 2 + 2  # 2 translations + 2 judgements
    names = [c.name for c in default_constraints(0.2, None, 0.75, None, 0.75, judge)]
    assert names == ["english_accuracy>=0.8", "judge_original>=0.5", "judge_cross>=0.5"]
    assert "judge_cross>=0.5" in (tmp_path / "run" / "config.yaml").read_text()
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())  # how each model was asked
    assert config["prompt_formats"] == {"proxy": "chat", "judge": "chat", "simulators": {"fooled": None}}


def test_the_probes_default_semantic_check_is_the_proxy_as_llm_judge(tmp_path):
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps([{"question": f"q{i}", "choices": ["a", "b", "c", "d"], "answer": "a"}
                                   for i in range(2)]), encoding="utf-8")
    config = PitfallsProbeConfig(recipe="np", sources=[str(sources)], n=2, lang="fr", proxy="openai:x",
                                 simulators=["fooled"], categorize=False)
    assert config.similarity == "llm" and config.similarities() == (None, None, None)
    generator = ProxyThatJudges()
    proxy = ProxyLLM.from_generator(generator, RequestCache(tmp_path / "requests.sqlite"))
    account, _ = probe_from_config(config, tmp_path / "run", proxy=proxy, simulators=[FooledByHints()])
    # the proxy itself judged each root's translation (θ' only: a root is its own original), at B.1's 0.001
    judged = [r for r in generator.requests if r.messages[-1].content.startswith("Compare the two texts below.")]
    assert len(judged) == 2 and {r.temperature for r in judged} == {JUDGE_TEMPERATURE} == {0.001}
    assert account.scored == 2 and account.proxy.calls == 2 + 2  # 2 translations + 2 judgements
    written = (tmp_path / "run" / "config.yaml").read_text()
    assert "semantic_check: llm" in written and "judge: scripted:proxy" in written
    assert "judge_cross>=0.5" in written and "e5" not in written


def test_a_judge_model_belongs_to_the_llm_check_only():
    base = dict(recipe="np", sources=["x.json"], n=1, proxy="default", simulators=["default"])
    assert PitfallsProbeConfig(**base, judge="openai:judge").judge.spec == "openai:judge"
    with pytest.raises(ValueError, match="--judge names the model of --similarity llm"):
        PitfallsProbeConfig(**base, similarity="e5", judge="openai:judge")
