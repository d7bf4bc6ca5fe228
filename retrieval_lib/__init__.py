"""retrieval_lib: prove that Qdrant + embedding retrieval works before an LLM goes on top.

The public API; everything else is internal. See ``errors`` for the exception tree.
"""

from .config import PROJECT_ROOT, Secret, Settings, load_settings
from .embedders import CohereEmbedder, Embedder, LocalEmbedder, make_embedder
from .errors import *  # noqa: F403 - the exception tree is public
from .errors import __all__ as _error_names
from .models import PAYLOAD_FIELDS, CollectionStats, SearchResponse, SearchResult
from .search import MAX_TOP_K, SCORE_TOLERANCE, Retriever
from .store import VectorStore

__all__ = [
    "PROJECT_ROOT", "Secret", "Settings", "load_settings",
    "Embedder", "LocalEmbedder", "CohereEmbedder", "make_embedder",
    "PAYLOAD_FIELDS", "SearchResult", "SearchResponse", "CollectionStats",
    "MAX_TOP_K", "SCORE_TOLERANCE", "Retriever", "VectorStore",
    *_error_names,
]
