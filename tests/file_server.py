"""A static file server on 127.0.0.1 for download tests: serves a directory's files by path, can corrupt chosen
files (one byte changed, the size kept), and counts the requests of each path."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from urllib.parse import unquote

from tests.loopback import LoopbackServer, QuietHandler


class FileServer(LoopbackServer):
    """`with FileServer(directory, corrupt={"a.json"}) as server:` serves `directory` at `server.url` (ending in
    '/')."""

    def __init__(self, directory: Path, corrupt: set[str] = frozenset()):
        self.directory = directory
        self.corrupt = set(corrupt)
        self.requests: Counter[str] = Counter()
        owner = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                path = unquote(self.path.lstrip("/"))
                owner.requests[path] += 1
                file = owner.directory / path
                if ".." in Path(path).parts or not file.is_file():
                    self.send_error(404)
                    return
                body = bytearray(file.read_bytes())
                if path in owner.corrupt:
                    body[len(body) // 2] ^= 0x20
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)
        self.url = self.root
