"""Embedding: the one :class:`Embedder` interface, its providers, and a run's query cache.

- :mod:`~retrieval_lib.embedding.providers`: :func:`make_embedder`, which picks one from the settings, and the six
  embedders (its table says which ``EMBEDDING_PROVIDER`` is which); :mod:`~retrieval_lib.embedding.base` holds the
  protocol, each provider's limits (:data:`PROVIDERS`), :func:`request_size` (the texts search and ingest send per
  call) and the shared bounded retries;
- :mod:`~retrieval_lib.embedding.cache`: :class:`CachedEmbedder` and :class:`QueryCache`, so a run embeds
  each query once, and the usage figures a report shows.
"""

from retrieval_lib.embedding.base import (
    PROVIDERS,
    ProviderInfo,
    embed_as,
    input_types_of,
    provider_info,
    request_size,
)
from retrieval_lib.embedding.cache import MAX_BATCH, CachedEmbedder, EmbedUsage, QueryCache, embedding_totals
from retrieval_lib.embedding.providers import (
    COHERE_DIMENSIONS,
    COHERE_MAX_BATCH,
    CohereEmbedder,
    E5Embedder,
    Embedder,
    GeminiEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    batch_limit,
    make_embedder,
)

__all__ = ["Embedder", "LocalEmbedder", "CohereEmbedder", "make_embedder", "COHERE_DIMENSIONS", "COHERE_MAX_BATCH",
           "MAX_BATCH", "CachedEmbedder", "QueryCache", "EmbedUsage", "embedding_totals",
           "SentenceTransformerEmbedder", "OpenAIEmbedder", "GeminiEmbedder", "E5Embedder", "PROVIDERS", "ProviderInfo",
           "provider_info", "batch_limit", "input_types_of", "embed_as", "request_size"]
