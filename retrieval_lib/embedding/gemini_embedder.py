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
import time
from collections.abc import Callable
from typing import Any

from retrieval_lib.embedding.base import PROVIDERS, Failure, RemoteEmbedder, http_failure
from retrieval_lib.errors import AuthenticationError, BadEmbeddingResponseError, ConfigurationError

__all__ = ["GeminiEmbedder", "GEMINI_DIMENSIONS", "GEMINI_DEFAULT_MODEL", "GEMINI_MAX_BATCH", "GEMINI_TASK_TYPES"]

GEMINI_DEFAULT_MODEL = "gemini-embedding-001"
#: Default output size of the Gemini embedding models, and whether ``output_dimensionality`` can reduce it.
GEMINI_DIMENSIONS: dict[str, int] = {"gemini-embedding-001": 3072, "text-embedding-004": 768, "embedding-001": 768}
GEMINI_REDUCIBLE = ("gemini-embedding-001", "text-embedding-004")
GEMINI_MAX_BATCH = PROVIDERS["gemini"].batch
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
    key_variable = "GEMINI_API_KEY"
    base_url_variable = "GEMINI_BASE_URL"
    default_endpoint = "generativelanguage.googleapis.com"
    input_types = GEMINI_TASK_TYPES

    def __init__(
        self,
        api_key: str,
        model: str = GEMINI_DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 4,
        retry_budget: float = 60.0,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        batch_size: int | None = None,
    ) -> None:
        from google import genai
        from google.genai import types

        short = model.removeprefix("models/")
        if dimensions is not None and short in GEMINI_DIMENSIONS and (
                short not in GEMINI_REDUCIBLE or not 1 <= dimensions <= GEMINI_DIMENSIONS[short]):
            raise ConfigurationError(
                f"EMBEDDING_DIMENSIONS={dimensions}: {short} "
                + (f"takes 1 to {GEMINI_DIMENSIONS[short]}" if short in GEMINI_REDUCIBLE
                   else f"gives {GEMINI_DIMENSIONS[short]} only (no reduced dimension)") + "; fix or unset it",
                variable="EMBEDDING_DIMENSIONS")
        super().__init__(short, base_url=base_url, timeout=timeout, max_retries=max_retries,
                         retry_budget=retry_budget, backoff=backoff, sleep=sleep, max_batch=GEMINI_MAX_BATCH,
                         max_tokens=PROVIDERS["gemini"].window, batch_size=batch_size)
        self.native_dimension: int | None = GEMINI_DIMENSIONS.get(short)
        self.dimensions_offered: tuple[int, ...] = (
            tuple(range(1, GEMINI_DIMENSIONS[short] + 1)) if short in GEMINI_REDUCIBLE else ())
        self._dimensions = dimensions
        self._dimension: int | None = dimensions or self.native_dimension
        #: False when Google returns the vectors unnormalised (a reduced gemini-embedding-001)
        self.normalised = not (dimensions and short == "gemini-embedding-001" and dimensions < 3072)
        options: dict[str, Any] = {"timeout": max(1, int(round(self.timeout * 1000)))}
        if base_url:
            options["base_url"] = base_url
        self._types = types
        self._client = genai.Client(api_key=api_key, http_options=types.HttpOptions(**options))

    @property
    def dimension(self) -> int:
        if self._dimension is None:  # a model this workbook does not know: its first answer says
            [vector] = self.embed_documents(["dimension probe"])
            self._dimension = len(vector)
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = int(value)

    def __repr__(self) -> str:
        shown = self._dimension if self._dimension is not None else "unknown"
        return f"GeminiEmbedder(model={self.model!r}, dimension={shown})"

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
            failure = http_failure(status, headers, label=self.label,
                                   key_variable="GEMINI_API_KEY (or GOOGLE_API_KEY)",
                                   base_url_variable=self.base_url_variable, model=self.model)
            if status == 400 and "API key not valid" in str(err.message or ""):  # Google's answer to a wrong key
                return Failure(AuthenticationError, "", status,
                               final="Gemini refused the API key (HTTP 400, API key not valid): check GEMINI_API_KEY "
                                     "(or GOOGLE_API_KEY)")
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

    def close(self) -> None:
        try:
            self._client.close()
        except AttributeError:  # pragma: no cover - SDK internals moved
            pass

