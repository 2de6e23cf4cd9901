"""Start and stop a real llama-cpp-python OpenAI-compatible server on 127.0.0.1 for tests.

The command line:

    python -m llama_cpp.server --model FILE --chat_format gemma --host 127.0.0.1 --port PORT
        --n_threads 2 --n_threads_batch 2 --n_ctx N_CTX --logits_all true

`--logits_all true` keeps the logits of every position, which `/v1/completions` needs to echo the
prompt with log-probabilities and which `/v1/chat/completions` needs for `logprobs` and
`top_logprobs` (without it llama-cpp-python 0.3.36 answers HTTP 500 "logprobs is not supported for
models created with logits_all=False"). It is the server's default in llama-cpp-python 0.3, and is
passed anyway so that a changed default cannot break the tests. The server keeps an n_ctx x 262,144
float32 buffer of logits (512 MiB at n_ctx 512, 2 GiB at 2048) and, for every request that asks
for log-probabilities, takes the log-softmax of that whole buffer and sorts the vocabulary once per
returned token (about 0.3-1 s per token on 2 cores): log-probabilities are slow, ask for them only
where they are tested. `--chat_format gemma` because the GGUF has no chat template.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

STARTUP_TIMEOUT_S = 120.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """One `python -m llama_cpp.server` process serving `model_path` on a free loopback port."""

    def __init__(
        self,
        model_path: str | Path,
        log_path: str | Path,
        *,
        threads: int = 2,
        n_ctx: int = 512,
        logits_all: bool = True,
    ):
        self.model_path = Path(model_path)
        self.log_path = Path(log_path)
        self.threads = threads
        self.n_ctx = n_ctx
        self.logits_all = logits_all
        self.port: int | None = None
        self._process: subprocess.Popen | None = None

    def command(self, port: int) -> list[str]:
        """The server's command line for `port`."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--chat_format",
            "gemma",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--n_ctx",
            str(self.n_ctx),
            "--logits_all",
            "true" if self.logits_all else "false",
        ]

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in /v1."""
        assert self.port is not None, "server not started"
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S, attempts: int = 3) -> str:
        """Start the server and wait until it answers GET /v1/models; returns the base URL.

        Retries on a new port when the process exits early (the free port was taken meanwhile).
        """
        last_error = ""
        for _ in range(attempts):
            port = free_port()
            with open(self.log_path, "ab") as log:
                self._process = subprocess.Popen(
                    self.command(port), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            self.port = port
            outcome = self._wait_ready(timeout_s)
            if outcome == "ready":
                return self.base_url
            last_error = outcome
            self.stop()
            if outcome.startswith("timed out"):
                break
        raise RuntimeError(f"llama.cpp server did not start: {last_error}\n{self._log_tail()}")

    def _wait_ready(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/models"
        while time.monotonic() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                return f"exited with code {code}"
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200 and json.load(response).get("data"):
                        return "ready"
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.25)
        return f"timed out after {timeout_s:.0f} s"

    def stop(self) -> None:
        """Stop the server process (terminate, then kill after 10 s)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def _log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no server log)"

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
