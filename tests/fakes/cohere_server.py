"""A loopback fake of Cohere's v2 embed API, for driving the REAL ``cohere`` SDK.

Use: ``with FakeCohere(dim=1024) as fake:`` then
``cohere.ClientV2(api_key="k", base_url=fake.url)``. The server binds
127.0.0.1 port 0 and nothing else.

What the installed SDK (cohere==7.3.1) does -- read from its source
(``cohere/client_v2.py``, ``cohere/base_client.py``, ``cohere/v2/raw_client.py``,
``cohere/core/http_client.py``, ``cohere/core/client_wrapper.py``,
``cohere/core/request_options.py``) and checked by ``tests/test_fakes.py``:

Request
    ``ClientV2.embed(...)`` sends ``POST {base_url}/v2/embed``. ``base_url`` is
    joined as ``base_url.rstrip('/') + '/v2/embed'`` (a path prefix in base_url is
    kept). ``ClientV2``'s ``base_url`` default is ``os.getenv("CO_API_URL")`` read
    once at *import* time, else ``https://api.cohere.com``; ``api_key=None`` falls
    back to ``CO_API_KEY`` (else ``ApiError`` at construction).
    Headers: ``Authorization: Bearer <api_key>``, ``content-type: application/json``,
    ``User-Agent: cohere/7.3.1``, ``X-Fern-Language``/``X-Fern-SDK-Name``/
    ``X-Fern-SDK-Version`` etc.
    JSON body: only the arguments actually passed (omitted ones are left out,
    not sent as null): ``model``, ``input_type``, ``texts``, ``embedding_types``,
    ``truncate``, and optionally ``images``, ``inputs``, ``max_tokens``,
    ``output_dimension``, ``priority``.

Response
    2xx: ``response.json()`` is built into ``EmbedByTypeResponse`` *without
    validation* (``construct_type``; models are ``UncheckedBaseModel``):
    ``id``, ``embeddings`` (``EmbedByTypeResponseEmbeddings``; the ``"float"`` key
    is the attribute ``float_``), ``texts``, ``meta``, ``response_type``. So a
    wrong dimension or a missing vector is NOT detected by the SDK: the caller
    must check ``len(resp.embeddings.float_) == len(texts)`` and each length.
    A 2xx body that is not JSON raises ``cohere.core.api_error.ApiError``
    (``status_code=200``, ``body`` = the raw text), not a JSONDecodeError.

Errors (after retries are exhausted) -- all subclasses of
``cohere.core.api_error.ApiError`` (also ``cohere.core.ApiError``; there is NO
``cohere.ApiError``) with ``.status_code``, ``.headers`` (lower-case keys),
``.body`` (the parsed JSON). The typed classes are exported both as
``cohere.TooManyRequestsError`` etc. and in ``cohere.errors`` -- but ``cohere`` is
a lazy package: write ``import cohere.errors`` before using ``cohere.errors.X``.
    400 BadRequestError, 401 UnauthorizedError, 403 ForbiddenError,
    404 NotFoundError, 422 UnprocessableEntityError, 429 TooManyRequestsError,
    498 InvalidTokenError, 499 ClientClosedRequestError, 500 InternalServerError,
    501 NotImplementedError (cohere.errors.NotImplementedError, not the builtin),
    503 ServiceUnavailableError, 504 GatewayTimeoutError (all in ``cohere.errors``).
    Any other status (e.g. 502) -> plain ``ApiError``. Caveat: the typed error is
    raised only if the error body is JSON; a non-JSON error body (an HTML 429/503
    from a proxy) gives plain ``ApiError`` with that status_code. So classify on
    ``ApiError.status_code``, not on the subclass.

Retries (``HttpClient.request`` in cohere/core/http_client.py)
    * ``max_retries`` default 2 (=> up to 3 attempts). Set per client with
      ``ClientV2(..., max_retries=N)`` or per call with
      ``request_options={"max_retries": N}`` (per call wins; 0 disables).
    * Retried statuses: 429, 408, 409 and every status >= 500.
    * Delay before retry k (k = 0, 1, ...): ``Retry-After-Ms`` header (ms) if > 0,
      else ``Retry-After`` (integer seconds or an HTTP date) if > 0 -- both used
      as-is, no jitter, capped at 60 s; else ``X-RateLimit-Reset`` (unix time)
      +0..20% jitter; else exponential ``1 s * 2**k`` +/-10% jitter (so ~1 s then
      ~2 s: a default 429/5xx failure costs ~3 s of sleeping). ``Retry-After: 0``
      falls back to the exponential delay. The sleep is ``time.sleep`` inside the
      call; it is not bounded by the request timeout.
    * ``httpx.ConnectError`` (refused) is retried the same way (exponential, ~1 s
      then ~2 s) and finally re-raised as ``httpx.ConnectError``.
    * ``httpx.RemoteProtocolError`` (server dropped the connection) is raised at
      once, not retried, unless ``request_options={"retry_remote_protocol_errors": True}``.
    * Timeouts (``httpx.ReadTimeout``, ``httpx.ConnectTimeout``, ...) are never
      retried and propagate as httpx exceptions (not ApiError).

Timeouts
    ``ClientV2(timeout=...)`` sets the httpx client timeout; the DEFAULT IS 300 s.
    Per call: ``request_options={"timeout": 1.5}`` (float) or the deprecated
    alias ``{"timeout_in_seconds": 1}``; each applies to connect/read/write/pool
    of each attempt (so total wall time <= attempts * timeout + retry sleeps).

Proxies
    The SDK's default httpx client re-creates the environment's
    HTTP(S)_PROXY/ALL_PROXY mounts (honouring NO_PROXY). Tests clear those so
    127.0.0.1 is reached directly (``tests/fakes/proxies.py``: the ``no_proxies``
    fixture in process, ``direct_env`` for a child process).

Behaviours (one consumed per request, in order; when the script is empty a
request gets ``"ok"``; :meth:`FakeCohere.always` overrides both):

* ``"ok"`` -- 200 with a valid v2 embed response. Vectors are a hashed
  bag-of-words: each lower-cased ``\\w+`` token gets a pseudo-random Gaussian
  vector seeded from sha256(model, token); the text vector is their sum plus a
  small (weight 0.05) component seeded from sha256(model, input_type, text),
  L2-normalised. Hence: identical (model, input_type, text) -> identical vector;
  texts sharing words -> high cosine; unrelated texts -> cosine ~ 0; the same
  text as ``search_query`` and ``search_document`` -> cosine ~ 0.999 (one space,
  as with the real models); another model -> an unrelated space. Opt-in:
  ``FakeCohere(input_type_weight=w)`` sets that component's weight (1.0: the two
  types of one text meet at cosine ~ 0.5, so a swapped type shows). A body
  ``output_dimension`` overrides ``dim``. Missing/empty ``texts`` (and no text in
  ``inputs``) or missing ``model``/``input_type`` -> 400 ``{"message": ...}``;
  a path other than ``/v2/embed`` -> 404.
* ``("status", code)`` / ``("status", code, headers)`` / ``("status", code, headers, body)``
  -- that status with ``{"id": ..., "message": ...}`` (or ``body``: a dict/list is
  sent as JSON, a str/bytes as-is, e.g. an HTML page) and the extra headers,
  e.g. ``("status", 429, {"Retry-After": "1"})``. Header names may be given in
  any case; ``{"retry_after": "1"}`` is accepted as ``Retry-After``.
* ``"hang"`` -- read the request, then never answer (sleeps up to ``hang_cap``,
  30 s by default, and wakes at once when the server shuts down), then drops
  the connection.
* ``"disconnect"`` -- read the request and close the connection without a
  response (the SDK raises ``httpx.RemoteProtocolError``).
* ``"malformed"`` -- 200, ``content-type: application/json``, body ``{"embeddings": ``.
* ``("dim", n)`` -- 200, valid structure, vectors of dimension n.
* ``"count_mismatch"`` -- 200, one vector fewer than texts.

``per_text_delay`` (seconds, default 0) makes every embed answer wait that long per
text before it is sent (a server whose time grows with the batch; at most
``hang_cap``, waking at once on shutdown).

``fake.requests`` records every request: ``{"path", "method", "headers"
(lower-case keys), "json" (parsed body or None), "time" (time.monotonic()),
"behaviour"}``. Shutdown takes well under 2 s, even with a request hanging.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
import uuid
from collections import deque
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["FakeCohere", "embed_text"]

_HOST = "127.0.0.1"
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_INPUT_TYPE_WEIGHT = 0.05
_SIMPLE = {"ok", "hang", "malformed", "count_mismatch", "disconnect"}


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
    """The fake's deterministic embedding of one text (see the module docstring)."""
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


def _normalise_behaviour(b: Any) -> Any:
    if isinstance(b, str):
        if b not in _SIMPLE:
            raise ValueError(f"unknown FakeCohere behaviour {b!r}")
        return b
    if isinstance(b, (tuple, list)) and b:
        kind = b[0]
        if kind == "dim" and len(b) == 2 and isinstance(b[1], int) and b[1] >= 0:
            return ("dim", b[1])
        if kind == "status" and 2 <= len(b) <= 4 and isinstance(b[1], int):
            headers = dict(b[2]) if len(b) >= 3 and b[2] else {}
            body = b[3] if len(b) == 4 else None
            return ("status", b[1], headers, body)
    raise ValueError(f"unknown FakeCohere behaviour {b!r}")


def _header_name(name: str) -> str:
    if name.lower() in ("retry_after", "retry-after"):
        return "Retry-After"
    return name


def _texts_from_body(body: dict) -> list[str] | None:
    texts = body.get("texts")
    if isinstance(texts, list) and texts and all(isinstance(t, str) for t in texts):
        return texts
    inputs = body.get("inputs")
    if isinstance(inputs, list) and inputs:
        out = []
        for item in inputs:
            content = item.get("content") if isinstance(item, dict) else None
            if not isinstance(content, list):
                return None
            out.append(" ".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"))
        return out
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    fake: FakeCohere

    def process_request(self, request, client_address):  # track sockets so close() can wake them
        self.fake._track(request)
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeCohere/1.0"
    timeout = 60  # idle keep-alive connections do not live forever

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    # every method goes through one path
    def do_POST(self) -> None:
        self._handle()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

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

    def _send_json(self, status: int, obj: Any, headers: dict | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers)

    def _handle(self) -> None:
        fake: FakeCohere = self.server.fake  # type: ignore[attr-defined]
        raw = self._read_body()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        path = self.path.split("?", 1)[0]
        behaviour = fake._next_behaviour()
        fake._record({
            "path": path,
            "method": self.command,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "json": parsed,
            "time": time.monotonic(),
            "behaviour": behaviour,
        })

        if behaviour == "hang":
            fake._stop.wait(fake.hang_cap)
            self.close_connection = True
            return
        if behaviour == "disconnect":
            self.close_connection = True
            return
        if isinstance(behaviour, tuple) and behaviour[0] == "status":
            _, code, headers, body = behaviour
            if body is None:
                payload = json.dumps({"id": str(uuid.uuid4()), "message": f"fake cohere error {code}"}).encode()
                ctype = "application/json"
            elif isinstance(body, (dict, list)):
                payload, ctype = json.dumps(body).encode(), "application/json"
            elif isinstance(body, bytes):
                payload, ctype = body, "text/plain"
            else:
                payload, ctype = str(body).encode("utf-8"), "text/plain"
                if payload.lstrip()[:1] == b"<":
                    ctype = "text/html"
            self._send(code, payload, headers, content_type=ctype)
            return
        if behaviour == "malformed":
            self._send(200, b'{"embeddings": ')
            return

        # "ok", ("dim", n), "count_mismatch": a real embed answer
        if path.rstrip("/") != "/v2/embed" or self.command != "POST":
            self._send_json(404, {"id": str(uuid.uuid4()), "message": f"fake cohere: no route {self.command} {path}"})
            return
        if not isinstance(parsed, dict):
            self._send_json(400, {"id": str(uuid.uuid4()), "message": "invalid request: body must be a JSON object"})
            return
        model, input_type = parsed.get("model"), parsed.get("input_type")
        texts = _texts_from_body(parsed)
        if not isinstance(model, str) or not model:
            self._send_json(400, {"id": str(uuid.uuid4()), "message": "invalid request: model is required"})
            return
        if not isinstance(input_type, str) or not input_type:
            self._send_json(400, {"id": str(uuid.uuid4()), "message": "invalid request: input_type is required"})
            return
        if texts is None:
            self._send_json(400, {"id": str(uuid.uuid4()),
                                  "message": "invalid request: texts must be a non-empty list of strings"})
            return

        dim = fake.dim
        if isinstance(parsed.get("output_dimension"), int) and parsed["output_dimension"] > 0:
            dim = parsed["output_dimension"]
        if isinstance(behaviour, tuple) and behaviour[0] == "dim":
            dim = behaviour[1]
        vectors = [embed_text(t, model=model, input_type=input_type, dim=dim,
                              input_type_weight=fake.input_type_weight) for t in texts]
        if behaviour == "count_mismatch":
            vectors = vectors[:-1]
        n_tokens = sum(len(_TOKEN_RE.findall(t)) for t in texts)
        if fake.per_text_delay:  # a server whose answer takes longer the more texts a request carries
            fake._stop.wait(min(fake.hang_cap, fake.per_text_delay * len(texts)))
        answer = {
            "id": str(uuid.uuid4()),
            "embeddings": {"float": vectors},
            "texts": list(texts),
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": n_tokens}},
            "response_type": "embeddings_by_type",
        }
        try:
            self._send_json(200, answer)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its timeout)
            self.close_connection = True


class FakeCohere:
    """Context manager. ``with FakeCohere(dim=1024) as fake: fake.url ...``

    ``script`` / :meth:`push` queue behaviours (one per request); :meth:`always`
    makes every later request get one behaviour (``always(None)`` undoes it).
    """

    def __init__(self, dim: int = 1024, script: list | None = None, hang_cap: float = 30.0,
                 input_type_weight: float = _INPUT_TYPE_WEIGHT, per_text_delay: float = 0.0):
        self.dim = dim
        self.per_text_delay = max(0.0, float(per_text_delay))
        self.input_type_weight = input_type_weight
        self.hang_cap = min(float(hang_cap), 30.0)
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

    # ---- scripting -------------------------------------------------------
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

    @property
    def embed_requests(self) -> list[dict]:
        """The recorded requests to ``/v2/embed``."""
        with self._lock:
            return [r for r in self.requests if r["path"].rstrip("/") == "/v2/embed"]

    # ---- lifecycle -------------------------------------------------------
    def start(self) -> FakeCohere:
        server = _Server((_HOST, 0), _Handler)
        server.fake = self
        self._server = server
        self.port = server.server_address[1]
        self.url = f"http://{_HOST}:{self.port}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"fake-cohere-{self.port}", daemon=True,
        )
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

    def __enter__(self) -> FakeCohere:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
