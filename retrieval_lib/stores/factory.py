"""``open_store(settings)``: the one place that picks a backend from the settings.

It sits outside the backends so that no base class has to know its subclasses.
"""

from __future__ import annotations

from retrieval_lib.config import Settings
from retrieval_lib.stores.qdrant import VectorStore

__all__ = ["open_store"]


def open_store(settings: Settings) -> VectorStore:
    """The store the settings name: qdrant-edge (``QDRANT_ENGINE=edge``), a server (``QDRANT_URL``), or the
    embedded qdrant-client folder (``QDRANT_PATH``).

    Raises:
        StoreLockedError: the embedded folder is held by another process.
        StoreUnavailableError: the server client cannot be built.
        ConfigurationError: the embedded folder cannot be created.
    """
    if settings.qdrant_engine == "edge":
        from retrieval_lib.stores.edge import EdgeStore

        return EdgeStore.at_path(settings.qdrant_path)
    if settings.qdrant_url:
        store = VectorStore.connect(settings)
    else:
        store = VectorStore.at_path(settings.qdrant_path)
    store.vector_name = settings.vector_name
    return store
