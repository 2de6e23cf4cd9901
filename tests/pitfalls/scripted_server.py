"""A scripted OpenAI-compatible chat server on 127.0.0.1 for the probe's spend tests, and the same models as
in-process generators.

One address serves every model: the proxy (the transformation tests' scripted proxy, which also judges, for
any model name but the simulators') and simulators that answer the paper's chat templates: right in English,
except on question 'q1', and wrong in the target language exactly when the question holds a hint (a scripted
distraction). The right answer is the first choice, as in `write_sources`. Every answer reports a token usage
that depends only on the request, so two runs that send the same requests count the same tokens.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

from crossknow.models.generator import GenerateResult, Usage

from ..loopback import LoopbackServer, QuietHandler
from .test_judge_similarity import ProxyThatJudges

SIMULATORS = ("sim-a", "sim-b")
"""The simulator model names the server answers as simulators."""
_QUESTION = re.compile(r"\[(?:The Start of the Question|Début de la question)\]\n(.*)\n"
                       r"\[(?:The End of the Question|Fin de la question)\]", re.S)
_CHOICES = re.compile(r"\[(?:The Start of the Choices|Début des options)\]\n(.*)\n")


def write_sources(path: Path, count: int) -> Path:
    """A released-style source file of questions q0, q1, ... with choices a-d, the answer 'a'."""
    records = [{"question": f"q{i}", "choices": ["a", "b", "c", "d"], "answer": "a"} for i in range(count)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def simulated_answer(prompt: str) -> str:
    """A simulator's reply to the paper's answering template: the first choice, or the second when the question
    is 'q1' or holds a hint in the French template."""
    question = _QUESTION.search(prompt).group(1)
    choices = json.loads(_CHOICES.search(prompt).group(1))
    wrong = question == "q1" or (prompt.startswith("Veuillez") and "hint" in question)
    return "Step by step. " + json.dumps({"final_answer": choices[1 if wrong else 0]}, ensure_ascii=False)


def reply(model: str, prompt: str) -> tuple[str, Usage]:
    """What the server answers `model` asked `prompt` (the last message), with its token usage."""
    text = simulated_answer(prompt) if model in SIMULATORS else ProxyThatJudges._text(prompt)
    return text, Usage(len(prompt.split()) + 7, len(text.split()) + 3)


class ScriptedGenerator:
    """The server's models in-process: a Generator whose `model_id` names the model it plays."""

    name = "scripted"

    def __init__(self, model_id: str):
        self.model_id = model_id
        self.requests = 0

    def generate(self, requests):
        self.requests += len(requests)
        results = []
        for request in requests:
            text, usage = reply(self.model_id, request.messages[-1].content)
            results.append(GenerateResult(text, self.name, self.model_id, usage))
        return results


class ScriptedServer(LoopbackServer):
    """The scripted models behind one loopback address; `requests` counts the chat requests answered or begun.
    Each answer waits `delay_s` first, so that a test can kill a client mid-run."""

    def __init__(self, delay_s: float = 0.0):
        self.requests = 0
        self.delay_s = delay_s
        self._lock = threading.Lock()
        outer = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                models = [{"id": name, "object": "model", "owned_by": "scripted"} for name in ("proxy", *SIMULATORS)]
                self._send({"object": "list", "data": models})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with outer._lock:
                    outer.requests += 1
                time.sleep(outer.delay_s)
                text, usage = reply(body["model"], body["messages"][-1]["content"])
                self._send({"id": "scripted", "object": "chat.completion", "model": body["model"],
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": usage.prompt_tokens,
                                      "completion_tokens": usage.completion_tokens,
                                      "total_tokens": usage.prompt_tokens + usage.completion_tokens}})

            def _send(self, value: dict) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(Handler)
        self.base_url = self.root + "v1"
