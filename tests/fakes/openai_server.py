"""A loopback fake of OpenAI's embeddings API, for driving the REAL ``openai`` SDK.

Use: ``with FakeOpenAI() as fake:`` then ``openai.OpenAI(api_key="k", base_url=fake.url + "/v1")``.

What the installed SDK (openai==3.57.0, on httpx2) sends, read from its source (``openai/resources/embeddings.py``,
``openai/lib/_parsing/_embeddings.py``, ``openai/_base_client.py``) and seen on the wire by
``tests/embedding/test_openai_embedder.py``:

Request
    ``client.embeddings.create(model=..., input=[...], dimensions=..., encoding_format=...)`` sends
    ``POST {base_url}/embeddings`` (``base_url`` keeps its path: ``.../v1`` -> ``/v1/embeddings``), headers
    ``authorization: Bearer <key>``, ``x-stainless-retry-count``, ``x-stainless-read-timeout``; JSON body
    ``{"model", "input", "dimensions"?, "encoding_format"}``. Without an explicit ``encoding_format`` the SDK asks
    for ``"base64"`` and decodes float32 itself; the workbook always asks for ``"float"``.
Response
    ``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}, ...], "model",
    "usage": {"prompt_tokens", "total_tokens"}}``.
Errors
    ``{"error": {"message", "type", "param", "code"}}``; the SDK raises ``openai.APIStatusError`` subclasses
    (``AuthenticationError`` 401, ``RateLimitError`` 429, ``InternalServerError`` >= 500) with ``.status_code`` and
    ``.response.headers``; a timeout is ``openai.APITimeoutError``, a refused connection ``openai.APIConnectionError``.
    The SDK retries 408/409/429/5xx by itself (default 2 retries, honouring ``Retry-After`` up to 60 s) unless
    ``max_retries=0``, which the workbook sets.

The fake: vectors from ``vectors`` (default: hashed bag of words; see :mod:`fakes.loopback`) at the model's
dimension (:data:`DIMENSIONS`, else ``dim``), truncated and renormalised to ``dimensions`` when asked (as OpenAI
does); more than 2,048 inputs, a missing model or input -> 400; another path -> 404; with ``api_key`` set, another
bearer key -> 401 with OpenAI's ``invalid_api_key`` body.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from typing import Any

from fakes.loopback import LoopbackFake

__all__ = ["FakeOpenAI", "DIMENSIONS"]

DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
_TOKEN = re.compile(r"\w+")
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
          429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class FakeOpenAI(LoopbackFake):
    """Context manager: ``with FakeOpenAI(dim=64) as fake: fake.url`` (see the module)."""

    name = "openai"

    def error_body(self, code: int, message: str) -> Any:
        return {"error": {"message": message, "type": _TYPES.get(code, "api_error"), "param": None,
                          "code": "invalid_api_key" if code == 401 else None}}

    def count_texts(self, body: Any) -> int:
        texts = body.get("input") if isinstance(body, dict) else None
        return 1 if isinstance(texts, str) else len(texts) if isinstance(texts, list) else 0

    @property
    def embed_requests(self) -> list[dict]:
        """The recorded requests to ``.../embeddings``."""
        with self._lock:
            return [r for r in self.requests if r["path"].rstrip("/").endswith("/embeddings")]

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any, behaviour: Any) -> tuple[int, Any]:
        if method != "POST" or not path.rstrip("/").endswith("/embeddings"):
            return 404, self.error_body(404, f"fake openai: no route {method} {path}")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, self.error_body(401, "Incorrect API key provided.")
        if not isinstance(body, dict):
            return 400, self.error_body(400, "body must be a JSON object")
        model, texts = body.get("model"), body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(model, str) or not model:
            return 400, self.error_body(400, "you must provide a model parameter")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return 400, self.error_body(400, "'input' must be a non-empty string or list of non-empty strings")
        if len(texts) > 2048:
            return 400, self.error_body(400, f"'input' holds {len(texts)} items; at most 2048")
        native = DIMENSIONS.get(model, self.dim)
        asked = body.get("dimensions")
        if asked is not None and (not isinstance(asked, int) or not 1 <= asked <= native):
            return 400, self.error_body(400, f"dimensions must be from 1 to {native}")
        vectors = self.embed_vectors(texts, model, "none", native, behaviour)
        if asked and not (isinstance(behaviour, tuple) and behaviour[0] == "dim"):
            vectors = [_unit(v[:asked]) for v in vectors]
        if body.get("encoding_format") == "base64":
            data: list[Any] = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
        else:
            data = [[round(float(x), 8) for x in v] for v in vectors]
        tokens = sum(len(_TOKEN.findall(t)) for t in texts)
        return 200, {"object": "list", "model": model,
                     "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(data)],
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
