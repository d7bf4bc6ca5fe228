"""retrieval_lib: prove that Qdrant + embedding retrieval works before an LLM goes on top.

The public API, assembled here. The families live in sub-packages:

- the core (this folder, flat): settings, errors, result models, embedders, the vector
  store, search, parameter files, notebook reports, the batch runner and the CLI;
- :mod:`retrieval_lib.ingest`: markdown/MDX book in, chunks embedded into a collection;
- :mod:`retrieval_lib.checks`: one module per question a notebook asks (public, with its own ``__all__``).

See :mod:`retrieval_lib.errors` for the exception tree.
"""

import sys as _sys

try:
    import dotenv as _dotenv  # noqa: F401 - the first third-party import: is this the project's Python?
    import pydantic as _pydantic  # noqa: F401
except ModuleNotFoundError as _missing:  # pragma: no cover - exercised by a subprocess test
    # ``python3 -m retrieval_lib`` outside the project's virtual environment: one line, not a traceback
    if _sys.argv[:1] == ["-m"]:
        _sys.stderr.write(
            f"error: this Python ({_sys.executable}) lacks the workbook's dependencies ({_missing.name} is "
            "missing): run `make setup`, then `source .venv/bin/activate` (or use .venv/bin/retrieval-lib)\n")
        raise SystemExit(2) from None
    raise

from .config import PROJECT_ROOT, Secret, Settings, load_settings
from .embedders import CohereEmbedder, Embedder, LocalEmbedder, make_embedder
from .errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentError,
    EmbeddingError,
    EmbeddingUnavailableError,
    ModelMismatchError,
    ParamsError,
    RateLimitedError,
    RetrievalError,
    RunsNotComparableError,
    StoreLockedError,
    StoreUnavailableError,
    ValidationError,
    VectorStoreError,
)
from .frames import results_frame
from .models import PAYLOAD_FIELDS, CollectionStats, SearchResponse, SearchResult
from .report import NotebookReport, NotebookRun, open_run
from .search import SCORE_TOLERANCE, Retriever, same_ranking
from .store import VectorStore
from .validation import MAX_TOP_K

__version__ = "0.1.0"

__all__ = [
    "PROJECT_ROOT", "Secret", "Settings", "load_settings",
    "Embedder", "LocalEmbedder", "CohereEmbedder", "make_embedder",
    "PAYLOAD_FIELDS", "SearchResult", "SearchResponse", "CollectionStats",
    "MAX_TOP_K", "SCORE_TOLERANCE", "Retriever", "same_ranking", "VectorStore",
    "NotebookReport", "NotebookRun", "open_run", "results_frame",
    "RetrievalError", "ValidationError", "ParamsError", "RunsNotComparableError", "ConfigurationError",
    "DocumentError",
    "ModelMismatchError", "CollectionNotFoundError", "VectorStoreError", "StoreUnavailableError",
    "StoreLockedError", "EmbeddingError", "RateLimitedError", "AuthenticationError",
    "EmbeddingUnavailableError", "BadEmbeddingResponseError",
]
