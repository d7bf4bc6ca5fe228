"""Embedding: the one :class:`Embedder` interface, its providers, and a run's query cache.

- :mod:`~retrieval_lib.embedding.providers`: :func:`make_embedder`, which picks one from the settings, and the six
  embedders (its table says which ``EMBEDDING_PROVIDER`` is which); :mod:`~retrieval_lib.embedding.base` holds the
  protocol, each provider's limits (:data:`PROVIDERS`), :func:`request_size` (the texts search and ingest send per
  call) and the shared bounded retries;
- :mod:`~retrieval_lib.embedding.cache`: :class:`CachedEmbedder` and :class:`QueryCache`, so a run embeds
  each query once, and the usage figures a report shows.
"""

from retrieval_lib.embedding.base import input_types_of, request_size
from retrieval_lib.embedding.cache import MAX_BATCH, CachedEmbedder, EmbedUsage, QueryCache
from retrieval_lib.embedding.providers import (
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

__all__ = ["Embedder", "LocalEmbedder", "CohereEmbedder", "make_embedder", "MAX_BATCH", "CachedEmbedder", "QueryCache",
           "EmbedUsage", "SentenceTransformerEmbedder", "OpenAIEmbedder", "GeminiEmbedder", "E5Embedder", "batch_limit",
           "input_types_of", "request_size"]
