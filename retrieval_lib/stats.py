"""Collection statistics (seed 004 ``CollectionStats``), as any store backend can report them.

A figure the backend cannot report is ``None`` with the reason in ``unreported``,
never a made-up zero.
"""

from __future__ import annotations

from pathlib import Path

from .errors import VectorStoreError
from .models import CollectionStats, UnreportedField
from .store import VectorStore, size_warning

__all__ = ["collection_stats"]


def collection_stats(store: VectorStore, collection: str) -> CollectionStats:
    """Seed 004's CollectionStats; unreportable figures are None with the reason."""
    info = store.info(collection)
    _, size, distance = store.vector_params(collection)
    unreported: list[UnreportedField] = []
    warnings: list[str] = []
    vector_count = store.count(collection) if size is not None else 0
    status = getattr(info.status, "value", info.status)
    if store.kind == "embedded" and store.folder is not None:
        disk = _folder_size(store.folder / "collection" / collection)
    else:
        disk = None
        unreported.append(UnreportedField(
            field="disk_data_size_bytes",
            reason="in-memory store" if store.kind == "memory"
            else "Qdrant's collection API does not report it (see the server's /telemetry)",
        ))
    unreported.append(UnreportedField(
        field="ram_data_size_bytes",
        reason="qdrant-client local mode keeps no separate RAM accounting" if store.kind != "server"
        else "Qdrant's collection API does not report it (see the server's /telemetry)",
    ))
    if store.kind != "server":
        warnings.append("local mode searches exactly (no HNSW index): timings differ from a Qdrant server")
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
        index_status=str(status) if status is not None else None,
        segments_count=info.segments_count,
        disk_data_size_bytes=disk,
        ram_data_size_bytes=None,
        indexed_fields=sorted(info.payload_schema or {}),
        unreported=unreported,
        warnings=warnings,
    )


def _folder_size(folder: Path) -> int | None:
    if not folder.exists():
        return None
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
