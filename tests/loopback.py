"""The lifecycle every test HTTP server on 127.0.0.1 shares: a free port, a serving thread while the `with` block
runs, shut down and closed after it; and a request handler that logs nothing."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that does not log each request to stderr."""

    def log_message(self, *args: object) -> None:
        pass


class LoopbackServer:
    """Serves `handler` on 127.0.0.1 at `root` (`http://127.0.0.1:PORT/`) from a thread, inside `with`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()
