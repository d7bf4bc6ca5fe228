"""A loopback fake of the Gemini Developer API's embeddings, for driving the REAL ``google-genai`` SDK.

Use: ``with FakeGemini() as fake:`` then
``genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fake.url))``.

What the installed SDK (google-genai==3.6.1) sends, read from its source (``google/genai/models.py``:
``Models.embed_content`` -> ``_embed_content``; ``google/genai/_api_client.py``; ``google/genai/errors.py``) and
seen on the wire by ``tests/embedding/test_gemini_embedder.py``:

Request
    With an API key (not Vertex AI), ``client.models.embed_content(model="gemini-embedding-001", contents=[...],
    config=EmbedContentConfig(task_type=..., output_dimensionality=...))`` sends
    ``POST {base_url}/{api_version}/models/{model}:batchEmbedContents`` (``api_version`` ``v1`` by default, or
    ``GOOGLE_GENAI_API_VERSION``), headers ``x-goog-api-key: <key>``, ``x-server-timeout`` (seconds), and the body
    ``{"requests": [{"model": "models/<m>", "content": {"parts": [{"text": ...}], "role": "user"},
    "taskType": ..., "outputDimensionality": ...}, ...]}`` (one request per text; unset fields left out).
Response
    ``{"embeddings": [{"values": [...]}, ...]}``.
Errors
    ``{"error": {"code", "message", "status", "details"?}}``; the SDK raises ``google.genai.errors.ClientError``
    (4xx) / ``ServerError`` (5xx), both ``APIError`` with ``.code``, ``.message``, ``.status``, ``.details`` (the
    parsed body) and ``.response`` (the httpx response: ``.headers``). A timeout propagates as the httpx
    ``TimeoutException``, a refused connection as ``ConnectError``. Without ``retry_options`` the sync client does
    not retry. A wrong key is answered 400 ``INVALID_ARGUMENT`` "API key not valid" by Google; a quota 429
    ``RESOURCE_EXHAUSTED`` carries a ``google.rpc.RetryInfo`` ``retryDelay`` (``"17s"``) in ``details``.

The fake: vectors from ``vectors`` (default: hashed bag of words; the task type seeds the per-text part) at the
model's dimension (:data:`DIMENSIONS`, else ``dim``), cut to ``outputDimensionality`` WITHOUT renormalising (as
Google does below 3,072 for gemini-embedding-001); more than 100 requests -> 400; another path -> 404; with
``api_key`` set, another key -> 400 "API key not valid" (Google's answer); ``retry_delay`` adds a RetryInfo to
every scripted 429 body.
"""

from __future__ import annotations

import re
from typing import Any

from fakes.loopback import LoopbackFake

__all__ = ["FakeGemini", "DIMENSIONS"]

DIMENSIONS = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "embedding-001": 768}
_ROUTE = re.compile(r"^/(?:v1|v1beta|v1alpha)/models/([^/:]+):(batchEmbedContents|embedContent)$")
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class FakeGemini(LoopbackFake):
    """Context manager: ``with FakeGemini(dim=64) as fake: fake.url`` (see the module)."""

    name = "gemini"

    def __init__(self, *, retry_delay: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.retry_delay = retry_delay

    def error_body(self, code: int, message: str) -> Any:
        error: dict[str, Any] = {"code": code, "message": message, "status": _STATUS.get(code, "UNKNOWN")}
        if code == 429 and self.retry_delay:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": self.retry_delay}]
        return {"error": error}

    def count_texts(self, body: Any) -> int:
        requests = body.get("requests") if isinstance(body, dict) else None
        return len(requests) if isinstance(requests, list) else 1 if isinstance(body, dict) else 0

    @property
    def embed_requests(self) -> list[dict]:
        """The recorded requests to ``...:batchEmbedContents`` / ``...:embedContent``."""
        with self._lock:
            return [r for r in self.requests if _ROUTE.match(r["path"])]

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any, behaviour: Any) -> tuple[int, Any]:
        route = _ROUTE.match(path)
        if method != "POST" or route is None:
            return 404, self.error_body(404, f"fake gemini: no route {method} {path}")
        if self.api_key is not None and headers.get("x-goog-api-key") != self.api_key:
            return 400, self.error_body(400, "API key not valid. Please pass a valid API key.")
        model, single = route.group(1), route.group(2) == "embedContent"
        requests = [body] if single and isinstance(body, dict) else (body or {}).get("requests") \
            if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return 400, self.error_body(400, "requests must be a non-empty list")
        if len(requests) > 100:
            return 400, self.error_body(400, f"at most 100 requests are allowed in a batch (got {len(requests)})")
        texts, task, asked = [], None, None
        for r in requests:
            parts = ((r or {}).get("content") or {}).get("parts") if isinstance(r, dict) else None
            if not isinstance(parts, list) or not parts:
                return 400, self.error_body(400, "each request needs content.parts")
            texts.append(" ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)))
            task, asked = r.get("taskType"), r.get("outputDimensionality")
            if r.get("model") not in (None, f"models/{model}"):
                return 400, self.error_body(400, "every request's model must match the URL's")
        native = DIMENSIONS.get(model, self.dim)
        if asked is not None and (not isinstance(asked, int) or not 1 <= asked <= native):
            return 400, self.error_body(400, f"outputDimensionality must be from 1 to {native}")
        vectors = self.embed_vectors(texts, model, str(task or "TASK_TYPE_UNSPECIFIED"), native, behaviour)
        if asked and not (isinstance(behaviour, tuple) and behaviour[0] == "dim"):
            vectors = [v[:asked] for v in vectors]  # cut, not renormalised
        values = [{"values": [round(float(x), 8) for x in v]} for v in vectors]
        return 200, ({"embedding": values[0]} if single else {"embeddings": values})
