"""Collection statistics (seed 004 ``CollectionStats``), as any store backend can report them.

A figure the backend cannot report is ``None`` with the reason in ``unreported``,
never a made-up zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_lib.errors import VectorStoreError
from retrieval_lib.models import CollectionStats, UnreportedField
from retrieval_lib.stores.base import size_warning

if TYPE_CHECKING:
    from retrieval_lib.stores.base import ReadableStore

__all__ = ["collection_stats"]


def collection_stats(store: ReadableStore, collection: str) -> CollectionStats:
    """Seed 004's CollectionStats; unreportable figures are None with the reason."""
    info = store.index_info(collection)
    _, size, distance = store.vector_params(collection)
    unreported: list[UnreportedField] = []
    warnings: list[str] = []
    vector_count = store.count(collection) if size is not None else 0
    folder = _data_folder(store, collection)
    disk = _folder_size(folder) if folder is not None else None
    if folder is None:
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
    facets: dict[str, dict[str, int] | None] = {"source_file": {}, "model_version": {}}
    for key, name in (("source_file", "source_files"), ("model_version", "models")):
        try:
            facets[key] = store.distinct_values(collection, key) if vector_count else {}
        except VectorStoreError:
            facets[key] = None
            unreported.append(UnreportedField(
                field=name, reason=f"the server could not facet on {key} (no keyword index?)"))
    per_file = facets["source_file"]
    return CollectionStats(
        collection=collection,
        source_files=len(per_file) if per_file is not None else None,
        models=facets["model_version"],
        points_per_source_file=dict(sorted(per_file.items())) if per_file is not None else None,
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
