"""Cohere v2 embeddings through the official SDK (``cohere.ClientV2.embed``).

``input_type="search_query"`` for queries and ``"search_document"`` for documents (``classification`` and
``clustering`` too, through :meth:`CohereEmbedder.embed_as`), float embeddings, at most 96 texts per call (at a
``COHERE_BASE_URL`` that is not Cohere's own API, 16 to start with, halved on a timeout; ``EMBEDDING_BATCH_SIZE``
sets it: :func:`~retrieval_lib.embedding.base.start_batch`), the shared bounded retries of
:class:`~retrieval_lib.embedding.base.RemoteEmbedder`. ``embed-v4.0`` also takes
``output_dimension`` (``EMBEDDING_DIMENSIONS``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from retrieval_lib.config import COHERE_DEFAULT_MODEL
from retrieval_lib.embedding.base import PROVIDERS, Failure, RemoteEmbedder
from retrieval_lib.errors import ConfigurationError

__all__ = ["CohereEmbedder", "COHERE_DIMENSIONS"]

#: Output size of the Cohere text embedding models this workbook knows (float embeddings, default dimension).
COHERE_DIMENSIONS: dict[str, int] = {
    "embed-multilingual-v3.0": 1024,
    "embed-english-v3.0": 1024,
    "embed-multilingual-light-v3.0": 384,
    "embed-english-light-v3.0": 384,
    "embed-v4.0": 1536,
}
#: The models that take ``output_dimension``, and the sizes they offer.
COHERE_REDUCED: dict[str, tuple[int, ...]] = {"embed-v4.0": (256, 512, 1024, 1536)}
#: Tokens each model reads (longer texts are cut at the end: ``truncate="END"``).
COHERE_WINDOWS: dict[str, int] = {"embed-v4.0": 128_000}


class CohereEmbedder(RemoteEmbedder):
    """Cohere embeddings through ``cohere.ClientV2`` (the SDK's own retries off: ``max_retries=0`` per request)."""

    provider = "cohere"
    label = "Cohere"
    key_variable = "COHERE_API_KEY"
    base_url_variable = "COHERE_BASE_URL"
    default_endpoint = "api.cohere.com"
    input_types = PROVIDERS["cohere"].input_types

    def __init__(self, api_key: str, model: str = COHERE_DEFAULT_MODEL, *, dimensions: int | None = None,
                 **options: Any) -> None:
        """``options``: :class:`~retrieval_lib.embedding.base.RemoteEmbedder`'s (``base_url``, ``timeout``,
        ``max_retries``, ``retry_budget``, ``backoff``, ``sleep``, ``batch_size``)."""
        import cohere

        if model not in COHERE_DIMENSIONS:
            raise ConfigurationError(
                f"EMBEDDING_MODEL {model!r} is not a Cohere text embedding model this workbook knows "
                f"({', '.join(sorted(COHERE_DIMENSIONS))})",
                variable="EMBEDDING_MODEL",
            )
        if dimensions is not None and dimensions != COHERE_DIMENSIONS[model] \
                and dimensions not in COHERE_REDUCED.get(model, ()):
            offered = COHERE_REDUCED.get(model)
            raise ConfigurationError(
                f"EMBEDDING_DIMENSIONS={dimensions}: {model} gives "
                + (f"one of {', '.join(map(str, offered))}" if offered else f"{COHERE_DIMENSIONS[model]} only")
                + "; fix or unset it", variable="EMBEDDING_DIMENSIONS")
        super().__init__(model, max_tokens=COHERE_WINDOWS.get(model), **options)
        self.native_dimension = COHERE_DIMENSIONS[model]
        self.dimension = dimensions or self.native_dimension
        self.dimensions_offered: tuple[int, ...] = COHERE_REDUCED.get(model, ())
        self._output_dimension = dimensions if dimensions and model in COHERE_REDUCED else None
        kwargs: dict[str, Any] = {"api_key": api_key, "timeout": self.timeout, "max_retries": 0,
                                  "log_warning_experimental_features": False}
        if self.base_url:
            kwargs["base_url"] = self.base_url
        self._client = cohere.ClientV2(**kwargs)

    def _request(self, texts: list[str], input_type: str) -> list[list[float]]:
        extra: dict[str, Any] = {}
        if self._output_dimension:
            extra["output_dimension"] = self._output_dimension
        response = self._client.embed(
            model=self.model, input_type=input_type, texts=texts, embedding_types=["float"], truncate="END",
            request_options={"max_retries": 0, "timeout": float(self.timeout)}, **extra,
        )
        vectors = getattr(getattr(response, "embeddings", None), "float_", None)
        return self._check(vectors, len(texts), self.dimension)

    def _classify(self, err: Exception) -> Failure | None:
        from cohere.core.api_error import ApiError

        if isinstance(err, ApiError):
            # Classify by status, not by class: the SDK loses the typed class when an error body is not JSON
            # (an HTML 429 from a proxy, say).
            return self._http_failure(err.status_code or 0, err.headers)
        return None

    def close(self) -> None:
        with contextlib.suppress(AttributeError):  # SDK internals moved
            self._client._client_wrapper.httpx_client.httpx_client.close()
