"""A static file server on 127.0.0.1 for download tests: serves a directory's files by path, can corrupt chosen
files (one byte changed, the size kept), and counts the requests of each path."""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote


class FileServer:
    """`with FileServer(root, corrupt={"a.json"}) as server:` serves `root` at `server.url` (ending in '/')."""

    def __init__(self, root: Path, corrupt: set[str] = frozenset()):
        self.root = root
        self.corrupt = set(corrupt)
        self.requests: Counter[str] = Counter()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                path = unquote(self.path.lstrip("/"))
                owner.requests[path] += 1
                file = owner.root / path
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

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
