"""The stores a run reads: the vector store (qdrant-client or qdrant-edge) and the metadata database.

- :func:`open_store` picks the backend from the settings. :class:`VectorStore` (qdrant-client: server,
  Cloud, embedded folder, memory) and :class:`EdgeStore` (qdrant-edge, with HNSW) share one interface;
- :func:`collection_stats` reports seed 004's statistics for either;
- :mod:`~retrieval_lib.stores.scan` reads whole collections in large pages, once per run;
- :mod:`~retrieval_lib.stores.metadata` is seed 003's metadata database (SQLite or PostgreSQL).
"""

from retrieval_lib.stores.base import (
    INDEXED_FIELDS,
    IndexInfo,
    ReadableStore,
    size_warning,
)
from retrieval_lib.stores.edge import EdgeStore
from retrieval_lib.stores.factory import open_store
from retrieval_lib.stores.metadata import MetadataDB, sync_from_settings
from retrieval_lib.stores.qdrant import VectorStore
from retrieval_lib.stores.scan import Columns, iter_points, page_size, read_columns
from retrieval_lib.stores.stats import collection_stats

__all__ = ["INDEXED_FIELDS", "IndexInfo", "ReadableStore", "size_warning", "open_store",
           "VectorStore", "EdgeStore", "collection_stats", "MetadataDB", "sync_from_settings", "Columns", "iter_points",
           "page_size", "read_columns"]
