"""Gemini embeddings through the official ``google-genai`` SDK (``client.models.embed_content``).

With an API key (the Gemini Developer API) the SDK sends ``POST {base}/{version}/models/{model}:batchEmbedContents``
(version ``v1`` by default), the key in the ``x-goog-api-key`` header, and one request per text:
``{"requests": [{"model": "models/<m>", "content": {"parts": [{"text": ...}], "role": "user"},
"taskType": "RETRIEVAL_DOCUMENT", "outputDimensionality": 768}, ...]}``; the answer is
``{"embeddings": [{"values": [...]}, ...]}``. Documents are embedded as ``RETRIEVAL_DOCUMENT``, queries as
``RETRIEVAL_QUERY``; :meth:`GeminiEmbedder.embed_as` takes the other task types. At most 100 texts per request
(the API's limit; at a ``GEMINI_BASE_URL`` that is not Google's own API, 16 to start with, halved on a timeout;
``EMBEDDING_BATCH_SIZE`` sets it). ``EMBEDDING_DIMENSIONS`` is sent as ``output_dimensionality``; Google normalises
only the full 3,072-dimensional vectors of gemini-embedding-001, so reduced ones come back (and are kept) unnormalised.
``GEMINI_BASE_URL`` points the SDK at a proxy (or at the loopback fake in tests). The SDK's retries stay off (no
``retry_options``); the shared bounded loop retries, honouring ``Retry-After`` or the ``RetryInfo`` delay Google
puts in a 429's body.
"""

from __future__ import annotations

import math
import re
from typing import Any

from retrieval_lib.config import PROVIDER_DEFAULTS
from retrieval_lib.embedding.base import PROVIDERS, Failure, RemoteEmbedder
from retrieval_lib.errors import AuthenticationError, BadEmbeddingResponseError

__all__ = ["GeminiEmbedder", "GEMINI_DIMENSIONS"]

#: Default output size of the Gemini embedding models, and whether ``output_dimensionality`` can reduce it.
GEMINI_DIMENSIONS: dict[str, int] = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "embedding-001": 768}
GEMINI_REDUCIBLE = ("gemini-embedding-001", "text-embedding-004")
GEMINI_TASK_TYPES = PROVIDERS["gemini"].input_types
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_info_delay(details: Any) -> float | None:
    """The ``retryDelay`` of a ``google.rpc.RetryInfo`` in an error body (``"17s"`` -> 17.0), or None."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DELAY.match(str(item.get("retryDelay", "")))
            if match and math.isfinite(float(match.group(1))):
                return float(match.group(1))
    return None


class GeminiEmbedder(RemoteEmbedder):
    """Gemini embeddings through ``google.genai.Client(api_key=...).models.embed_content``."""

    provider = "gemini"
    label = "Gemini"
    key_variable = "GEMINI_API_KEY (or GOOGLE_API_KEY)"  # as messages name it
    base_url_variable = "GEMINI_BASE_URL"
    default_endpoint = "generativelanguage.googleapis.com"
    input_types = GEMINI_TASK_TYPES

    def __init__(self, api_key: str, model: str = PROVIDER_DEFAULTS["gemini"].model, *, dimensions: int | None = None,
                 **options: Any) -> None:
        """``options``: :class:`~retrieval_lib.embedding.base.RemoteEmbedder`'s (``base_url``, ``timeout``,
        ``max_retries``, ``retry_budget``, ``backoff``, ``sleep``, ``batch_size``)."""
        from google import genai
        from google.genai import types

        short = model.removeprefix("models/")
        super().__init__(short, **options)
        self._reduce_to(dimensions, GEMINI_DIMENSIONS, GEMINI_REDUCIBLE)
        http: dict[str, Any] = {"timeout": max(1, int(round(self.timeout * 1000)))}
        if self.base_url:
            http["base_url"] = self.base_url
        self._types = types
        self._client = genai.Client(api_key=api_key, http_options=types.HttpOptions(**http))

    def _request(self, texts: list[str], input_type: str) -> list[list[float]]:
        config = self._types.EmbedContentConfig(task_type=input_type, output_dimensionality=self._dimensions)
        contents: Any = list(texts)
        response = self._client.models.embed_content(model=self.model, contents=contents, config=config)
        embeddings = getattr(response, "embeddings", None)
        vectors = [getattr(e, "values", None) for e in embeddings] if isinstance(embeddings, list) else None
        return self._check(vectors, len(texts), self._dimension)

    def _classify(self, err: Exception) -> Failure | None:
        from google.genai import errors

        if isinstance(err, errors.APIError):
            status = int(err.code or 0)
            headers = getattr(getattr(err, "response", None), "headers", None)
            failure = self._http_failure(status, headers)
            if status == 400 and "API key not valid" in str(err.message or ""):  # Google's answer to a wrong key
                return Failure(AuthenticationError, "", status,
                               final=f"Gemini refused the API key (HTTP 400, API key not valid): check "
                                     f"{self.key_variable}")
            if failure.final is None and failure.wait is None:
                wait = _retry_info_delay(err.details)
                if wait is not None:
                    return Failure(failure.kind, failure.detail, failure.status, wait)
            return failure
        if isinstance(err, (ValueError, KeyError, TypeError)):
            return Failure(BadEmbeddingResponseError, "", None,
                           final=f"Gemini answered with a body the SDK could not read as embeddings "
                                 f"({type(err).__name__}); check that {self.base_url_variable} points at a "
                                 "Gemini-compatible API")
        return None
