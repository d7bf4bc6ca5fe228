"""Embedding: the one :class:`Embedder` interface, its providers, and a run's query cache.

- :mod:`~retrieval_lib.embedding.providers`: the bundled MiniLM (:class:`LocalEmbedder`), Cohere v2
  (:class:`CohereEmbedder`) and :func:`make_embedder`, which picks one from the settings;
- :mod:`~retrieval_lib.embedding.cache`: :class:`CachedEmbedder` and :class:`QueryCache`, so a run embeds
  each query once, and the usage figures a report shows.
"""

from retrieval_lib.embedding.cache import MAX_BATCH, CachedEmbedder, EmbedUsage, QueryCache, embedding_totals
from retrieval_lib.embedding.providers import (
    COHERE_DIMENSIONS,
    COHERE_MAX_BATCH,
    CohereEmbedder,
    Embedder,
    LocalEmbedder,
    make_embedder,
)

__all__ = ["Embedder", "LocalEmbedder", "CohereEmbedder", "make_embedder", "COHERE_DIMENSIONS", "COHERE_MAX_BATCH",
           "MAX_BATCH", "CachedEmbedder", "QueryCache", "EmbedUsage", "embedding_totals"]
