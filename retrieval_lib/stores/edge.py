"""The opt-in embedded engine: qdrant-edge (``QDRANT_ENGINE=edge``), behind :class:`VectorStore`'s methods.

qdrant-edge (``qdrant-edge-py``, imported as ``qdrant_edge``) is Qdrant's own
Rust engine in-process: HNSW index, payload indexes, batched queries. One
``EdgeShard`` holds one collection, in ``<QDRANT_PATH>/edge/<collection>/``
(beside, never inside, a qdrant-client local-mode store in the same folder).

What differs from local mode, and how it is bridged here:

- filters arrive as qdrant-client models (every caller builds them so) and are
  translated by :func:`edge_filter`; results come back as qdrant-client
  ``ScoredPoint``/``Record`` with string ids, so callers see one type;
- faceting needs a keyword index: the filtered fields are indexed on creation,
  and a field faceted without one gets its index on first use;
- the engine builds its HNSW index only when told to: :meth:`EdgeStore.optimize`
  runs after writes, on :meth:`~EdgeStore.close` at the latest; until then (and
  for a collection below the full-scan threshold) it searches exactly, which
  :meth:`~EdgeStore.index_info` reports;
- errors (plain ``Exception`` with a message) become the retrieval_lib.errors tree.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from retrieval_lib.errors import (
    CollectionNotFoundError,
    ConfigurationError,
    RetrievalError,
    StoreLockedError,
    ValidationError,
    VectorStoreError,
)
from retrieval_lib.stores.base import INDEXED_FIELDS, IndexInfo, exactness
from retrieval_lib.stores.edge_filter import _point_id, edge_filter
from retrieval_lib.stores.qdrant import VectorStore

__all__ = ["EdgeStore", "edge_filter"]

#: Qdrant's defaults, written explicitly into every new shard (full_scan_threshold in KB of vectors).
DEFAULT_HNSW = {"m": 16, "ef_construct": 100, "full_scan_threshold": 10_000}
#: Segments larger than this (KB of vectors) get an HNSW index when optimized (Qdrant's default).
DEFAULT_INDEXING_THRESHOLD_KB = 10_000
_MIN_PAGE = 10_000


def _floats(vector: Any) -> list[float]:
    return vector.tolist() if hasattr(vector, "tolist") else [float(x) for x in vector]


def _scored(point: Any) -> Any:
    from qdrant_client import models

    return models.ScoredPoint.model_construct(id=_point_id(point.id), version=point.version, score=float(point.score),
                                              payload=point.payload, vector=point.vector, shard_key=None,
                                              order_value=None)


def _record(point: Any) -> Any:
    from qdrant_client import models

    return models.Record.model_construct(id=_point_id(point.id), payload=point.payload, vector=point.vector,
                                         shard_key=None, order_value=None)


def _keyword_index(field: str) -> Any:
    """The operation creating a keyword index on ``field``, kept on disk (memory-mapped) rather than in RAM.

    Measured at 100k points (``benchmarks/bench_scale.py``): in-RAM keyword indexes on the five filtered fields,
    ``content_hash`` above all (one distinct value per chunk), put about 60 MB on the heap of every process that
    opens the store; on disk they cost nothing until a filter or facet reads them.
    """
    import qdrant_edge as qe

    return qe.UpdateOperation.create_field_index(field, qe.KeywordIndexParams(memory=qe.Memory.Cold))


def _release_freed_heap() -> None:
    """Hand the heap freed after loading shards back to the OS (glibc's ``malloc_trim``; elsewhere a no-op).

    Loading a shard replays its write-ahead log, whose decoded records are freed but stay in the process's heap:
    about 60 MB at 100k points (``benchmarks/bench_scale.py``), in every notebook kernel that opens the store.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class EdgeStore(VectorStore):
    """Collections as qdrant-edge shards under ``<folder>/edge/``. Build with :meth:`at_path`.

    Args:
        hnsw: HNSW settings for new collections (``m``, ``ef_construct``,
            ``full_scan_threshold`` in KB); Qdrant's defaults otherwise.
        indexing_threshold_kb: segments above this size get an HNSW index.
    """

    def __init__(self, folder: Path, *, hnsw: dict[str, int] | None = None,
                 indexing_threshold_kb: int = DEFAULT_INDEXING_THRESHOLD_KB) -> None:
        super().__init__(None, str(folder), kind="edge", folder=folder)
        self._lock = threading.RLock()
        self._shards: dict[str, Any] = {}
        self._dirty: set[str] = set()
        self.hnsw = {**DEFAULT_HNSW, **(hnsw or {})}
        self.indexing_threshold_kb = indexing_threshold_kb

    def __repr__(self) -> str:
        return f"EdgeStore(location={self.location!r})"

    @classmethod
    def at_path(cls, folder: Path, *, hnsw: dict[str, int] | None = None,
                indexing_threshold_kb: int = DEFAULT_INDEXING_THRESHOLD_KB) -> EdgeStore:
        """Open (creating if needed) the edge store in ``folder``, loading every collection there.

        Raises:
            StoreLockedError: another process holds one of its collections.
            ConfigurationError: the folder cannot be created.
        """
        import qdrant_edge as qe

        store = cls(Path(folder), hnsw=hnsw, indexing_threshold_kb=indexing_threshold_kb)
        try:
            store.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigurationError(f"cannot open the edge store folder {folder}: {err.strerror}; check QDRANT_PATH",
                                     variable="QDRANT_PATH") from None
        try:
            for path in sorted(store.root.iterdir()):
                if (path / "edge_config.json").is_file():
                    with store._translated(path.name):
                        store._shards[path.name] = qe.EdgeShard.load(str(path))
        except BaseException:
            store.close()
            raise
        _release_freed_heap()
        return store

    @property
    def root(self) -> Path:
        assert self.folder is not None
        return self.folder / "edge"

    def shard_folder(self, collection: str) -> Path:
        return self.root / collection

    def close(self) -> None:
        """Build pending HNSW indexes (:meth:`optimize`), flush and release every collection."""
        with self._lock:
            for name, shard in list(self._shards.items()):
                with contextlib.suppress(Exception):
                    if name in self._dirty:
                        shard.optimize()
                    shard.flush()
                with contextlib.suppress(Exception):
                    shard.close()
            self._shards.clear()
            self._dirty.clear()

    def optimize(self, collection: str) -> bool:
        """Run the engine's optimizers now (builds the HNSW index of a large enough collection)."""
        with self._translated(collection):
            changed = bool(self._shard(collection).optimize())
            self._dirty.discard(collection)
            return changed

    # ------------------------------------------------------------------ errors
    @contextlib.contextmanager
    def _translated(self, collection: str | None = None, *, attempts: int = 1) -> Iterator[None]:
        try:
            with self._lock:
                yield
        except RetrievalError:
            raise
        except Exception as err:  # noqa: BLE001 - qdrant-edge raises plain Exception; sorted by its message
            text = str(err)
            if "WouldBlock" in text or "failed to open WAL" in text:
                raise StoreLockedError(
                    f"the edge store folder {self.location} is in use by another process (a JupyterLab kernel, "
                    "another run or an ingest). Only one process can open it at a time: shut that down, or set "
                    "QDRANT_PATH to another folder",
                    location=self.location) from None
            if "dimension error" in text:
                raise self._wrong_size(collection) from None
            raise VectorStoreError(f"qdrant-edge at {self.location} failed: {text.splitlines()[0][:300]}",
                                   location=self.location) from None

    def _not_found(self, collection: str) -> CollectionNotFoundError:
        available = self.list_collections()
        listed = ", ".join(available) if available else "none"
        local = self.folder / "collection" if self.folder is not None else None
        note = ""
        if local is not None and local.is_dir() and any(local.iterdir()):
            note = (" (this folder also holds a qdrant-client local-mode store, which the edge engine does not "
                    "read: ingest again with QDRANT_ENGINE=edge, or unset QDRANT_ENGINE)")
        return CollectionNotFoundError(
            f"collection {collection!r} does not exist in the edge store {self.location} (collections there: "
            f"{listed}){note}; run `QDRANT_ENGINE=edge python -m retrieval_lib ingest` to build it, or set "
            "QDRANT_COLLECTION_NAME to one of them",
            collection=collection, available=available)

    def _shard(self, collection: str) -> Any:
        shard = self._shards.get(collection)
        if shard is None:
            raise self._not_found(collection)
        return shard

    # ------------------------------------------------------------------ collections
    def list_collections(self) -> list[str]:
        return sorted(self._shards)

    def exists(self, collection: str) -> bool:
        return collection in self._shards

    def info(self, collection: str) -> Any:
        """qdrant-edge's ShardInfo, or CollectionNotFoundError."""
        with self._translated(collection):
            return self._shard(collection).info()

    def _config(self, collection: str) -> dict[str, Any]:
        self._shard(collection)
        return dict(json.loads((self.shard_folder(collection) / "edge_config.json").read_text("utf-8")))

    def vector_params(self, collection: str) -> tuple[str | None, int | None, str | None]:
        vectors = self._config(collection).get("vectors") or {}
        if len(vectors) != 1:
            raise ConfigurationError(f"collection {collection!r} has {len(vectors)} dense vectors; this workbook "
                                     "validates collections with one vector per point",
                                     variable="QDRANT_COLLECTION_NAME")
        name, params = next(iter(vectors.items()))
        return (name or None), int(params["size"]), str(params["distance"])

    def create_collection(self, collection: str, dimension: int, *, recreate: bool = False) -> None:
        import qdrant_edge as qe

        if not collection or "/" in collection or collection.startswith("."):
            raise ValidationError(f"collection name {collection!r} cannot name a folder", field="collection")
        with self._translated(collection):
            if recreate and collection in self._shards:
                self._shards.pop(collection).close()
                self._dirty.discard(collection)
                shutil.rmtree(self.shard_folder(collection))
            if collection not in self._shards:
                config = qe.EdgeConfig(
                    vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
                    hnsw_config=qe.HnswIndexConfig(m=self.hnsw["m"], ef_construct=self.hnsw["ef_construct"],
                                                   full_scan_threshold=self.hnsw["full_scan_threshold"]),
                    optimizers=qe.EdgeOptimizersConfig(indexing_threshold=self.indexing_threshold_kb))
                self._shards[collection] = qe.EdgeShard.create(str(self.shard_folder(collection)), config)
                (self.shard_folder(collection) / "retrieval_lib_hnsw.json").write_text(json.dumps(
                    {**self.hnsw, "indexing_threshold_kb": self.indexing_threshold_kb}), "utf-8")
        self.ensure_payload_indexes(collection)

    def ensure_payload_indexes(self, collection: str) -> list[str]:
        """Keyword indexes on the filtered fields (facets need them on this engine)."""
        with self._translated(collection):
            shard = self._shard(collection)
            existing = set(shard.info().payload_schema)
            for field in INDEXED_FIELDS:
                if field not in existing:
                    shard.update(_keyword_index(field))
            return sorted(existing | set(INDEXED_FIELDS))

    # ------------------------------------------------------------------ reading
    def count(self, collection: str) -> int:
        import qdrant_edge as qe

        with self._translated(collection):
            return int(self._shard(collection).count(qe.CountRequest(exact=True)))

    def _request(self, vector: Any, limit: int, similarity_threshold: float | None, query_filter: Any, exact: bool,
                 hnsw_ef: int | None, with_payload: bool | Sequence[str]) -> Any:
        import qdrant_edge as qe

        params = qe.SearchParams(exact=exact, hnsw_ef=hnsw_ef) if exact or hnsw_ef is not None else None
        payload = with_payload if isinstance(with_payload, bool) else list(with_payload)
        return qe.QueryRequest(limit=limit, query=qe.Query.Nearest(_floats(vector)), filter=query_filter,
                               score_threshold=similarity_threshold, params=params, with_payload=payload,
                               with_vector=False)

    def query(self, collection: str, vector: Sequence[float], *, limit: int, similarity_threshold: float | None = None,
              query_filter: Any = None, exact: bool = False, hnsw_ef: int | None = None) -> list[Any]:
        request = self._request(vector, limit, similarity_threshold, edge_filter(query_filter), exact, hnsw_ef, True)
        with self._translated(collection):
            return [_scored(p) for p in self._shard(collection).query(request)]

    def query_batch(self, collection: str, vectors: Sequence[Sequence[float]], *, limit: int,
                    similarity_threshold: float | None = None, query_filter: Any = None, exact: bool = False,
                    hnsw_ef: int | None = None, with_payload: bool | Sequence[str] = True) -> list[list[Any]]:
        import qdrant_edge as qe

        translated = edge_filter(query_filter)
        requests = [self._request(v, limit, similarity_threshold, translated, exact, hnsw_ef, with_payload)
                    for v in vectors]
        if not requests:
            return []
        with self._translated(collection):
            results = self._shard(collection).query_batch(qe.QueryBatchRequest(requests))
        return [[_scored(p) for p in points] for points in results]

    def retrieve(self, collection: str, point_ids: Sequence[str], *, with_vectors: bool = True,
                 with_payload: bool | Sequence[str] = False) -> list[Any]:
        payload = with_payload if isinstance(with_payload, bool) else list(with_payload)
        with self._translated(collection):
            found = self._shard(collection).retrieve([_point_id(i) for i in point_ids], with_payload=payload,
                                                     with_vector=with_vectors)
        by_id = {str(p.id): _record(p) for p in found}
        return [by_id[str(i)] for i in point_ids if str(i) in by_id]

    def scroll(self, collection: str, *, with_payload: bool | Sequence[str] = True,
               with_vectors: bool = False, batch_size: int = 256, query_filter: Any = None) -> Iterator[Any]:
        """Every point of the collection, by paged scroll (the engine pages by id: no re-sorting per page)."""
        import qdrant_edge as qe

        payload = with_payload if isinstance(with_payload, bool) else list(with_payload)
        translated = edge_filter(query_filter)
        # Each page call costs about 2 ms per 1,000 points of the collection (measured: 40 pages of 256 over 10k
        # points 0.83 s, 1 page 0.15 s), so small pages make a pass quadratic: read at least _MIN_PAGE at a time.
        batch_size = max(batch_size, _MIN_PAGE)
        offset = None
        while True:
            with self._translated(collection):
                points, offset = self._shard(collection).scroll(qe.ScrollRequest(
                    offset=offset, limit=batch_size, filter=translated, with_payload=payload,
                    with_vector=with_vectors))
            yield from (_record(p) for p in points)
            if offset is None:
                return

    def distinct_values(self, collection: str, key: str, limit: int = 100_000) -> dict[str, int]:
        """Distinct values of a keyword field with their counts (a facet; indexes the field if it has no index)."""
        import qdrant_edge as qe

        with self._translated(collection):
            shard = self._shard(collection)
            if key not in shard.info().payload_schema:
                shard.update(_keyword_index(key))
            hits = shard.facet(qe.FacetRequest(key=key, limit=limit, exact=True)).hits
        return {str(h.value): int(h.count) for h in hits}

    # ------------------------------------------------------------------ writing
    def upsert(self, collection: str, points: Sequence[Any]) -> None:
        import qdrant_edge as qe

        converted = [p if isinstance(p, qe.Point) else qe.Point(_point_id(p.id), _floats(p.vector), p.payload)
                     for p in points]
        with self._translated(collection):
            self._shard(collection).update(qe.UpdateOperation.upsert_points(converted))
            self._dirty.add(collection)

    def delete(self, collection: str, point_ids: Sequence[str]) -> None:
        import qdrant_edge as qe

        if not point_ids:
            return
        with self._translated(collection):
            self._shard(collection).update(qe.UpdateOperation.delete_points([_point_id(i) for i in point_ids]))
            self._dirty.add(collection)

    # ------------------------------------------------------------------ statistics
    def index_info(self, collection: str) -> IndexInfo:
        """Points, indexed vectors and HNSW settings; says when every search is a full scan."""
        info = self.info(collection)
        saved = self.shard_folder(collection) / "retrieval_lib_hnsw.json"
        hnsw = {k: int(v) for k, v in json.loads(saved.read_text("utf-8")).items()} if saved.is_file() else None
        points, indexed = int(info.points_count), int(info.indexed_vectors_count)
        exact, reason = exactness(points, indexed, self.vector_params(collection)[1], hnsw)
        if collection in self._dirty:
            reason += " (writes since opening are not optimized yet: EdgeStore.optimize builds the index)"
        return IndexInfo("edge", points, indexed, int(info.segments_count),
                         "yellow" if collection in self._dirty else "green", hnsw,
                         tuple(sorted(info.payload_schema)), exact, reason)
