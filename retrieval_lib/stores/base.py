"""What every store backend shares: the filtered payload fields, the small-collection warning, how a
collection is searched (:class:`IndexInfo`), and which vector a point read back carries (:func:`stored_vector`).
It imports no backend, so every backend imports it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from retrieval_lib.errors import ValidationError

__all__ = ["INDEXED_FIELDS", "SMALL_COLLECTION", "size_warning", "IndexInfo", "exactness", "ReadableStore",
           "stored_vector", "require_vector"]

#: Payload fields that filters use; indexed where the backend supports it.
INDEXED_FIELDS: dict[str, str] = {
    "source_file": "keyword",
    "source_url": "keyword",
    "section_title": "keyword",
    "content_hash": "keyword",
    "model_version": "keyword",
}

#: Below this many points a collection says little about retrieval quality.
SMALL_COLLECTION = 10


def size_warning(collection: str, points: int) -> str | None:
    """The one warning for an empty or very small collection (None when it is large enough).

    Search, statistics and the health check all say it in these words, so a
    report that gathers warnings from all three can de-duplicate them exactly.
    """
    if points == 0:
        return f"collection {collection!r} is empty: every search will return no results"
    if points < SMALL_COLLECTION:
        return f"collection {collection!r} holds only {points} points (< {SMALL_COLLECTION}): results say little"
    return None


def stored_vector(point: Any, name: str | None = None) -> list[float] | None:
    """The dense vector a point read with its vectors carries, as a list of floats.

    A collection's unnamed vector is the point's ``vector`` itself; of named vectors (a dict) it is the one called
    ``name``, else the point's only one (a read with ``QDRANT_VECTOR_NAME`` set fetches that one alone). None when
    the point carries none, several named vectors and none chosen, or one that is not a flat list of numbers (a
    multi-vector or a sparse vector).
    """
    vector = point.vector
    if isinstance(vector, dict):
        vector = vector.get(name) if name else next(iter(vector.values())) if len(vector) == 1 else None
    if hasattr(vector, "tolist"):  # an engine that hands back numpy arrays
        vector = vector.tolist()
    if not isinstance(vector, list | tuple) or not vector or isinstance(vector[0], list | tuple):
        return None
    return list(vector)


def require_vector(point: Any, needed_by: str) -> list[float]:
    """:func:`stored_vector`, for a check that needs every point's vector.

    Raises:
        ValidationError: the point carries no single dense vector (``needed_by`` names the check).
    """
    vector = stored_vector(point)
    if vector is None:
        raise ValidationError(f"point {point.id} carries no single dense vector: {needed_by} needs every stored "
                              "vector (set QDRANT_VECTOR_NAME when the collection holds several named vectors)",
                              field="vectors")
    return vector


@dataclass(frozen=True)
class IndexInfo:
    """How a collection is searched: its vector index as the engine reports it.

    ``searches_exactly`` is True when every search is a full scan (local mode, or
    no index built: a collection below the indexing threshold), so an
    ANN-against-exact comparison there cannot differ; ``reason`` says why.
    """

    engine: str  # "local", "server" or "edge"
    points_count: int
    indexed_vectors_count: int | None
    segments_count: int | None
    status: str | None
    hnsw: dict[str, int] | None  # m, ef_construct, full_scan_threshold (KB)
    payload_indexes: tuple[str, ...]
    searches_exactly: bool
    reason: str


def exactness(points: int, indexed: int | None, size: int | None, hnsw: dict[str, int] | None, *,
              filtered: int | None = None) -> tuple[bool, str]:
    """(searches exactly?, why) for an HNSW engine from its counts and config.

    Without an index every search is a full scan. With one, a filtered search
    whose matching vectors take less than ``full_scan_threshold`` KB is planned
    as a full scan too (``filtered``: the points the filter matches).
    """
    if not indexed:
        return True, f"no HNSW index is built ({indexed or 0} of {points} vectors indexed): every search is a full scan"
    threshold = (hnsw or {}).get("full_scan_threshold")
    if filtered is not None and threshold is not None:
        kb = filtered * (size or 0) * 4 / 1024
        if kb < threshold:
            return True, (f"the filter matches {filtered} points (about {kb:.0f} KB of vectors), below the "
                          f"full_scan_threshold of {threshold} KB: Qdrant plans such a search as a full scan")
    return False, f"{indexed} of {points} vectors are in the HNSW index"


class ReadableStore(Protocol):
    """What a check reads a collection through: any backend, or a collection seen through payload roles
    (:class:`~retrieval_lib.collection.CollectionView`). Nothing here writes."""

    @property
    def kind(self) -> str: ...
    @property
    def location(self) -> str: ...
    def count(self, collection: str) -> int: ...
    def info(self, collection: str) -> Any: ...
    def vector_params(self, collection: str) -> tuple[str | None, int | None, str | None]: ...
    def index_info(self, collection: str) -> IndexInfo: ...
    def query(self, collection: str, vector: Sequence[float], *, limit: int, similarity_threshold: float | None = None,
              query_filter: Any = None, exact: bool = False, hnsw_ef: int | None = None) -> list[Any]: ...
    def query_batch(self, collection: str, vectors: Sequence[Sequence[float]], *, limit: int,
                    similarity_threshold: float | None = None, query_filter: Any = None, exact: bool = False,
                    hnsw_ef: int | None = None, with_payload: bool | Sequence[str] = True) -> list[list[Any]]: ...
    def retrieve(self, collection: str, point_ids: Sequence[Any], *, with_vectors: bool = True,
                 with_payload: bool | Sequence[str] = False) -> list[Any]: ...
    def scroll(self, collection: str, *, with_payload: bool | Sequence[str] = True, with_vectors: bool = False,
               batch_size: int = 256, query_filter: Any = None) -> Iterator[Any]: ...
    def distinct_values(self, collection: str, key: str, limit: int = 100_000) -> dict[str, int]: ...
    def close(self) -> None: ...
