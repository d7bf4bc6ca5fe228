"""Collection statistics (seed 004 ``CollectionStats``), as any store backend can report them.

A figure the backend cannot report is ``None`` with the reason in ``unreported``,
never a made-up zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import VectorStoreError
from .models import CollectionStats, UnreportedField
from .store import VectorStore, size_warning

__all__ = ["collection_stats", "IndexInfo", "index_info"]


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


def index_info(store: VectorStore, collection: str) -> IndexInfo:
    """:class:`IndexInfo` of a qdrant-client store (the edge store reports its own)."""
    info = store.info(collection)
    points = int(info.points_count or 0)
    status = str(getattr(info.status, "value", info.status))
    indexes = tuple(sorted(info.payload_schema or {}))
    if store.kind != "server":
        return IndexInfo("local", points, None, info.segments_count, status, None, indexes, True,
                         "qdrant-client local mode searches exactly (no HNSW index)")
    config = info.config.hnsw_config
    hnsw = {"m": int(config.m), "ef_construct": int(config.ef_construct),
            "full_scan_threshold": int(config.full_scan_threshold)}
    indexed = info.indexed_vectors_count
    exact, reason = exactness(points, indexed, store.vector_params(collection)[1], hnsw)
    return IndexInfo("server", points, indexed, info.segments_count, status, hnsw, indexes, exact, reason)


def collection_stats(store: VectorStore, collection: str) -> CollectionStats:
    """Seed 004's CollectionStats; unreportable figures are None with the reason."""
    info = store.index_info(collection)
    _, size, distance = store.vector_params(collection)
    unreported: list[UnreportedField] = []
    warnings: list[str] = []
    vector_count = store.count(collection) if size is not None else 0
    folder = _data_folder(store, collection)
    if folder is not None:
        disk = _folder_size(folder)
    else:
        disk = None
        unreported.append(UnreportedField(
            field="disk_data_size_bytes",
            reason="in-memory store" if store.kind == "memory"
            else "Qdrant's collection API does not report it (see the server's /telemetry)",
        ))
    unreported.append(UnreportedField(
        field="ram_data_size_bytes",
        reason={"local": "qdrant-client local mode keeps no separate RAM accounting",
                "edge": "qdrant-edge keeps no RAM accounting"}.get(info.engine,
                                                                   "Qdrant's collection API does not report it "
                                                                   "(see the server's /telemetry)"),
    ))
    if info.engine == "local":
        warnings.append("local mode searches exactly (no HNSW index): timings differ from a Qdrant server")
    elif info.engine == "edge" and info.searches_exactly:
        warnings.append(f"qdrant-edge searches this collection exactly: {info.reason}")
    small = size_warning(collection, vector_count)
    if small:
        warnings.append(small)
    per_file: dict[str, int] | None = {}
    models: dict[str, int] | None = {}
    if vector_count:
        try:
            per_file = dict(sorted(store.distinct_values(collection, "source_file").items()))
        except VectorStoreError:
            per_file = None
            unreported.append(UnreportedField(
                field="source_files", reason="the server could not facet on source_file (no keyword index?)"))
        try:
            models = store.distinct_values(collection, "model_version")
        except VectorStoreError:
            models = None
            unreported.append(UnreportedField(
                field="models", reason="the server could not facet on model_version (no keyword index?)"))
    source_files = len(per_file) if per_file is not None else None
    return CollectionStats(
        collection=collection,
        source_files=source_files,
        models=models,
        points_per_source_file=per_file,
        location=store.location,
        vector_count=vector_count,
        points_count=info.points_count,
        dimensions=size,
        distance=distance,
        index_status=info.status,
        segments_count=info.segments_count,
        disk_data_size_bytes=disk,
        ram_data_size_bytes=None,
        indexed_fields=list(info.payload_indexes),
        unreported=unreported,
        warnings=warnings,
    )


def _data_folder(store: Any, collection: str) -> Path | None:
    if store.kind == "embedded" and store.folder is not None:
        return Path(store.folder) / "collection" / collection
    if store.kind == "edge":
        return Path(store.shard_folder(collection))
    return None


def _folder_size(folder: Path) -> int | None:
    if not folder.exists():
        return None
    # allocated bytes: qdrant-edge pre-allocates sparse segment files far larger than their data
    return sum(min(s.st_size, s.st_blocks * 512) for s in (p.stat() for p in folder.rglob("*") if p.is_file()))
