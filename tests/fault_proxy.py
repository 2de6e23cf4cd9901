"""A fault-injecting HTTP proxy on 127.0.0.1 for testing retries against a real server.

Each incoming request takes the next action from a script (then `pass` once the script is used
up): forward it to the upstream server, or answer it with a fault instead. The proxy speaks just
enough HTTP/1.1 for a JSON API client: a request with a Content-Length body, one request per
connection (every answer carries `Connection: close`).

Actions:
- "pass": forward to the upstream and relay its answer.
- "429": HTTP 429 with `Retry-After: 0`.
- "500": HTTP 500 with a JSON error body and no Retry-After.
- "503": HTTP 503 with a JSON error body and no Retry-After.
- "drop": close the connection without answering.
- "truncate": HTTP 200 whose body stops half-way through its Content-Length.
- "hang": answer nothing for `hang_s` seconds, then close.
- ("status", CODE, BODY): answer with CODE and the JSON-encoded BODY; any string "{auth}" in
  BODY is replaced by the request's Authorization header (a server that reflects the key).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from typing import Any

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class FaultProxy:
    """Runs in a background thread with its own event loop; use as a context manager."""

    def __init__(self, upstream_port: int, script: list[Any] | None = None, hang_s: float = 5.0):
        self.upstream_port = upstream_port
        self.hang_s = hang_s
        self._script: deque[Any] = deque(script or [])
        self._lock = threading.Lock()
        self.seen: list[dict[str, Any]] = []
        """One record per request: its action, path, headers (lower-case names) and body (bytes)."""
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The proxy's OpenAI-compatible base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def set_script(self, script: list[Any]) -> None:
        """Replace the remaining actions."""
        with self._lock:
            self._script = deque(script)

    def _next_action(self) -> Any:
        with self._lock:
            return self._script.popleft() if self._script else "pass"

    # ---- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> FaultProxy:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._server.close()
            self._loop.run_until_complete(self._server.wait_closed())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fault proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    # ---- one connection ---------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in header_lines:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            action = self._next_action()
            method, path, _ = request_line.split(" ", 2)
            self.seen.append({"action": action, "path": path, "headers": headers, "body": body})
            if action == "pass":
                await self._forward(writer, method, path, headers, body)
            elif action == "429":
                await self._answer(writer, 429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
            elif action == "500":
                await self._answer(writer, 500, {"error": {"message": "internal error"}})
            elif action == "503":
                await self._answer(writer, 503, {"error": {"message": "overloaded"}})
            elif action == "drop":
                pass
            elif action == "truncate":
                payload = b'{"choices": [{"text": "half'
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    + f"Content-Length: {len(payload) * 2}\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
            elif action == "hang":
                await asyncio.sleep(self.hang_s)
            elif isinstance(action, tuple) and action[0] == "status":
                _, code, content = action
                text = json.dumps(content).replace("{auth}", headers.get("authorization", ""))
                await self._answer(writer, code, json.loads(text))
            else:
                raise ValueError(f"unknown proxy action {action!r}")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass

    async def _answer(
        self, writer: asyncio.StreamWriter, code: int, content: Any, extra: dict[str, str] | None = None
    ) -> None:
        payload = json.dumps(content).encode()
        lines = [
            f"HTTP/1.1 {code} {REASONS.get(code, 'Status')}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
            "Connection: close",
        ]
        lines += [f"{name}: {value}" for name, value in (extra or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        await writer.drain()

    async def _forward(
        self, writer: asyncio.StreamWriter, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        keep = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: 127.0.0.1:{self.upstream_port}",
            f"Content-Length: {len(body)}",
            "Connection: close",
        ]
        lines += [f"{name}: {value}" for name, value in keep.items()]
        up_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await up_writer.drain()
        response = await up_reader.read()  # the upstream closes after one answer
        up_writer.close()
        head, sep, rest = response.partition(b"\r\n\r\n")
        lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
        writer.write(b"\r\n".join([*lines, b"Connection: close"]) + sep + rest)
        await writer.drain()
