"""A loopback fake of Cohere's v2 embed API, for driving the REAL ``cohere`` SDK.

Use: ``with FakeCohere(dim=1024) as fake:`` then
``cohere.ClientV2(api_key="k", base_url=fake.url)``. The server, the script of
behaviours, the record of requests and the shutdown are the shared
:class:`fakes.loopback.LoopbackFake` (127.0.0.1, port 0, nothing else); this
module is Cohere's answer and error bodies.

What the installed SDK (cohere==7.3.1) does -- read from its source
(``cohere/client_v2.py``, ``cohere/base_client.py``, ``cohere/v2/raw_client.py``,
``cohere/core/http_client.py``, ``cohere/core/client_wrapper.py``,
``cohere/core/request_options.py``) and checked by ``tests/fakes/test_fakes.py``:

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

The fake (behaviours, ``per_text_delay``, ``hang_cap``, ``max_requests`` and
``fake.requests`` as in :mod:`fakes.loopback`):

* ``"ok"`` -- 200 with a valid v2 embed response (``id``, ``embeddings.float``,
  ``texts``, ``meta.billed_units.input_tokens``, ``response_type``). Vectors are
  :func:`fakes.loopback.embed_text`'s hashed bag of words, seeded by (model,
  input_type, text); ``FakeCohere(input_type_weight=w)`` sets the weight of the
  input type's part (1.0: the two types of one text meet at cosine ~ 0.5, so a
  swapped type shows); ``vectors=`` takes another source (e.g.
  :func:`fakes.loopback.minilm_padded`). A body ``output_dimension`` overrides
  ``dim``. Missing/empty ``texts`` (and no text in ``inputs``) or missing
  ``model``/``input_type`` -> 400 ``{"id", "message"}``; a path other than
  ``/v2/embed`` -> 404; with ``api_key`` set, another bearer key -> 401 (Cohere's
  ``invalid api token``).
* ``("status", code, ...)`` -- that status with ``{"id": ..., "message": ...}``
  (or the body given; an HTML page is sent as ``text/html``).
* ``"malformed"`` -- 200, ``content-type: application/json``, body ``{"embeddings": ``.
* ``"disconnect"`` -- the SDK raises ``httpx.RemoteProtocolError``.

An idle keep-alive connection stays open 60 s (the workbook's runs pause between
notebooks longer than the shared default of 10 s).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from fakes.loopback import LoopbackFake, embed_text, hashed_vectors

__all__ = ["FakeCohere", "embed_text"]

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


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


class FakeCohere(LoopbackFake):
    """Context manager: ``with FakeCohere(dim=1024) as fake: fake.url`` (see the module).

    ``script`` / :meth:`push` queue behaviours (one per request); :meth:`always` makes every later request get one
    behaviour (``always(None)`` undoes it).
    """

    name = "cohere"
    malformed_body = b'{"embeddings": '
    idle_timeout = 60.0

    def __init__(self, *, dim: int = 1024, input_type_weight: float | None = None, **options: Any) -> None:
        if input_type_weight is not None and options.get("vectors") is None:
            options["vectors"] = hashed_vectors(input_type_weight)
        super().__init__(dim=dim, **options)

    def error_body(self, code: int, message: str) -> Any:
        return {"id": str(uuid.uuid4()), "message": message}

    def count_texts(self, body: Any) -> int:
        texts = _texts_from_body(body) if isinstance(body, dict) else None
        return len(texts) if texts else 0

    @property
    def embed_requests(self) -> list[dict]:
        """The recorded requests to ``/v2/embed``."""
        with self._lock:
            return [r for r in self.requests if r["path"].rstrip("/") == "/v2/embed"]

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any, behaviour: Any) -> tuple[int, Any]:
        if path.rstrip("/") != "/v2/embed" or method != "POST":
            return 404, self.error_body(404, f"fake cohere: no route {method} {path}")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, self.error_body(401, "invalid api token")
        if not isinstance(body, dict):
            return 400, self.error_body(400, "invalid request: body must be a JSON object")
        model, input_type, texts = body.get("model"), body.get("input_type"), _texts_from_body(body)
        if not isinstance(model, str) or not model:
            return 400, self.error_body(400, "invalid request: model is required")
        if not isinstance(input_type, str) or not input_type:
            return 400, self.error_body(400, "invalid request: input_type is required")
        if texts is None:
            return 400, self.error_body(400, "invalid request: texts must be a non-empty list of strings")
        asked = body.get("output_dimension")
        dim = asked if isinstance(asked, int) and asked > 0 else self.dim
        vectors = self.embed_vectors(texts, model, input_type, dim, behaviour)
        return 200, {"id": str(uuid.uuid4()), "embeddings": {"float": vectors}, "texts": list(texts),
                     "meta": {"api_version": {"version": "2"},
                              "billed_units": {"input_tokens": sum(len(_TOKEN_RE.findall(t)) for t in texts)}},
                     "response_type": "embeddings_by_type"}
