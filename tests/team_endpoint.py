"""A team's search endpoint on 127.0.0.1, for the retriever tests: its own schema, and scripted faults.

``TeamEndpoint(answer)`` serves ``POST /search`` (and ``GET /search?query=..&top_k=..``) by calling
``answer(query, top_k) -> JSON-able``; ``mode`` switches it to a fault: ``"500"`` / ``"404"`` (that status on every
request), ``"html"`` (200 with an HTML page), ``"hang"`` (no answer for ``hang_s``), ``"echo_auth_401"`` (401 whose
body repeats the Authorization header, as careless servers do). Bounded: at most ``max_requests`` requests are
answered (then 503), a hang lasts at most 10 s, ``close()`` stops it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["TeamEndpoint", "closed_port"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TeamEndpoint:
    def __init__(self, answer: Callable[[str, int], Any], *, mode: str = "ok", hang_s: float = 3.0,
                 max_requests: int = 500) -> None:
        self.answer = answer
        self.mode = mode
        self.hang_s = min(hang_s, 10.0)
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
        self.redirect_to = ""  # mode "redirect": every request is answered 307 to this URL
        self._stop = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _reply(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): fine
                    pass

            def _handle(self, query: str, top_k: int) -> None:
                endpoint.requests.append({"method": self.command, "path": self.path, "query": query,
                                          "top_k": top_k, "headers": {k.lower(): v for k, v in self.headers.items()}})
                if len(endpoint.requests) > endpoint.max_requests:
                    return self._reply(503, b'{"error": "too many requests in this test"}')
                mode = endpoint.mode
                if mode in ("500", "404"):
                    return self._reply(int(mode), json.dumps({"detail": f"boom {mode}"}).encode())
                if mode == "html":
                    return self._reply(200, b"<html><body>Search is down for maintenance</body></html>", "text/html")
                if mode == "hang":
                    endpoint._stop.wait(endpoint.hang_s)
                    return self._reply(200, b"[]")
                if mode == "redirect":
                    self.send_response(307)
                    self.send_header("location", endpoint.redirect_to)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return None
                if mode == "echo_auth_401":
                    said = self.headers.get("Authorization", "")
                    return self._reply(401, json.dumps({"detail": f"bad credentials: {said}"}).encode())
                return self._reply(200, json.dumps(endpoint.answer(query, top_k)).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                self._handle(str(body.get("query") or body.get("q") or ""), int(body.get("top_k") or
                                                                               body.get("limit") or 5))

            def do_GET(self) -> None:
                qs = parse_qs(urlsplit(self.path).query)
                self._handle(qs.get("query", [""])[0], int(qs.get("top_k", ["5"])[0]))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> TeamEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def search_results_shape(hits: list[dict[str, Any]], query: str) -> dict[str, Any]:
    """The second real backend's shape: ``{results: [{id, content, score, source_document, metadata,
    chunk_index}], query, search_time_ms}``."""
    return {"results": hits, "query": query, "search_time_ms": round(time.perf_counter() % 1, 3)}
