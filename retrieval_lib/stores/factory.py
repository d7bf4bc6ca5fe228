"""``open_store(settings)``: the one place that picks a backend from the settings.

It sits outside the backends so that no base class has to know its subclasses.
"""

from __future__ import annotations

from retrieval_lib.config import Settings
from retrieval_lib.errors import ConfigurationError
from retrieval_lib.stores.qdrant import VectorStore

__all__ = ["open_store"]


def open_store(settings: Settings, *, create: bool = False) -> VectorStore:
    """The store the settings name: qdrant-edge (``QDRANT_ENGINE=edge``), a server (``QDRANT_URL``), or the
    embedded qdrant-client folder (``QDRANT_PATH``).

    ``create``: make the embedded folder when it does not exist (ingest); otherwise a folder that is not there is
    an error, and nothing is made where a mistyped or misplaced path points.

    Raises:
        StoreLockedError: the embedded folder is held by another process.
        StoreUnavailableError: the server client cannot be built.
        ConfigurationError: the embedded folder does not exist (and ``create`` is False), or cannot be created.
    """
    embedded = settings.qdrant_engine == "edge" or not settings.qdrant_url
    if embedded and not create and not settings.qdrant_path.exists():
        raise ConfigurationError(
            f"the embedded store folder {settings.qdrant_path} does not exist: set QDRANT_PATH to the folder your "
            "ingest wrote (a relative path starts at the folder of the .env that sets it, or the working folder "
            "when the environment sets it), or QDRANT_URL for a server; `ingest` (or make sample) builds the demo's",
            variable="QDRANT_PATH")
    if settings.qdrant_engine == "edge":
        from retrieval_lib.stores.edge import EdgeStore

        return EdgeStore.at_path(settings.qdrant_path)
    if settings.qdrant_url:
        store = VectorStore.connect(settings)
    else:
        store = VectorStore.at_path(settings.qdrant_path)
    store.vector_name = settings.vector_name
    return store
