"""The vector store: Qdrant through qdrant-client, whichever way it is reached.

One class serves all three qdrant-client locations, because qdrant-client itself
puts the server client and local mode behind one interface:

- a URL (Qdrant server or Qdrant Cloud, with an API key),
- a folder (``QdrantClient(path=...)``, the embedded default),
- ``":memory:"`` (tests).

The opt-in embedded engine qdrant-edge (``QDRANT_ENGINE=edge``: Qdrant's own
engine in-process, with HNSW and payload indexes) is the subclass
:class:`~retrieval_lib.stores.edge.EdgeStore`, behind the same methods; filters
are built as qdrant-client models by every caller and translated there.

Every call goes through :func:`_translated`, which turns transport failures
into :class:`~retrieval_lib.errors.StoreUnavailableError`, a missing
collection into :class:`~retrieval_lib.errors.CollectionNotFoundError`, and a
locked embedded folder into :class:`~retrieval_lib.errors.StoreLockedError`.

On a server, :meth:`VectorStore._run` retries what fails in passing, at most :data:`RETRIES` times: 429 and
502/503/504 honouring ``Retry-After`` (at most :data:`MAX_RETRY_WAIT` s a wait), and a connection closed
mid-answer with a short backoff when the call can be repeated (reads; upserts and deletes by id). A refused
connection and a timeout are not retried (the timeout's error names ``QDRANT_TIMEOUT``); a scroll whose retries
are spent stops the scan with an error saying how far it got. A facet the server refuses for want of a keyword
index is answered by one scroll of that field instead: the workbook never creates an index on a collection it did
not build. The API key is handed to qdrant-client only; no message, log line or repr carries it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from retrieval_lib.config import Settings
from retrieval_lib.errors import (
    CollectionNotFoundError,
    ConfigurationError,
    RetrievalError,
    StoreLockedError,
    StoreUnavailableError,
    ValidationError,
    VectorStoreError,
)
from retrieval_lib.stores.base import INDEXED_FIELDS, IndexInfo, exactness, size_warning
from retrieval_lib.stores.server import RETRIES, counters_of, retry_wait, server_message, tally

__all__ = ["VectorStore", "size_warning"]

log = logging.getLogger(__name__)


class _NoIndexError(VectorStoreError):
    """A server refused a facet or filter for want of a payload index (a VectorStoreError to every caller)."""


class VectorStore:
    """A Qdrant collection host. Build with :meth:`connect`, :meth:`at_path` or :meth:`in_memory`."""

    def __init__(self, client: Any, location: str, *, kind: str, folder: Path | None = None) -> None:
        self.client = client
        self.location = location  # safe to print: no credentials
        self.kind = kind  # "server", "embedded" or "memory"
        self.folder = folder
        self._vector_names: dict[str, str | None] = {}
        #: the named vector to use when a collection has several (settings' QDRANT_VECTOR_NAME)
        self.vector_name: str | None = None
        # Local mode is an in-process engine with no thread-safety promise; calls to it are
        # serialised (a server client is thread-safe and is left concurrent).
        self._lock: Any = threading.RLock() if kind != "server" else contextlib.nullcontext()
        #: the client's per-request timeout in seconds (QDRANT_TIMEOUT), named in a timeout's error
        self.timeout: float | None = None
        #: ``time.sleep``, replaceable so tests of the retry path do not wait
        self.sleep: Any = time.sleep

    def __repr__(self) -> str:
        return f"VectorStore(kind={self.kind!r}, location={self.location!r})"

    # ------------------------------------------------------------------ opening
    @classmethod
    def connect(cls, settings: Settings) -> VectorStore:
        """Connect to the Qdrant server or Cloud cluster that ``settings.qdrant_url`` names.

        Raises:
            StoreUnavailableError: the server client cannot be built.
        """
        from qdrant_client import QdrantClient

        api_key = settings.qdrant_api_key.reveal() if settings.qdrant_api_key else None
        try:
            with warnings.catch_warnings():
                # load_settings only lets a key travel over http to loopback; qdrant-client would
                # still print a multi-line UserWarning, breaking the CLI's one-line error contract.
                warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")
                client = QdrantClient(
                    url=settings.qdrant_url, api_key=api_key,
                    # annotated int, but handed to httpx, which takes fractions of a second
                    timeout=settings.qdrant_timeout,  # type: ignore[arg-type]
                    check_compatibility=False,  # it costs a request and only warns
                )
        except Exception as err:  # noqa: BLE001 - any failure here means "cannot reach"
            raise StoreUnavailableError(
                f"cannot connect to Qdrant at {settings.store_location} ({type(err).__name__}); "
                "check QDRANT_URL",
                location=settings.store_location,
            ) from None
        store = cls(client, settings.store_location, kind="server")
        store.timeout = float(settings.qdrant_timeout)
        return store

    @classmethod
    def at_path(cls, folder: Path) -> VectorStore:
        """Open (creating if needed) the embedded store in ``folder``."""
        from qdrant_client import QdrantClient

        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            client = QdrantClient(path=str(folder))
        except RuntimeError as err:
            if "already accessed" in str(err):
                raise StoreLockedError(
                    f"the embedded Qdrant folder {folder} is in use by another process (a JupyterLab "
                    "kernel, another run or an ingest). Only one process can open it at a time: shut down "
                    "that kernel or wait for the run to end, or set QDRANT_PATH to another folder, or run a "
                    "Qdrant server and set QDRANT_URL",
                    location=str(folder),
                ) from None
            raise
        except OSError as err:
            raise ConfigurationError(
                f"cannot open the embedded store folder {folder}: {err.strerror}; check QDRANT_PATH",
                variable="QDRANT_PATH",
            ) from None
        return cls(client, str(folder), kind="embedded", folder=folder)

    @classmethod
    def in_memory(cls) -> VectorStore:
        """A throw-away store (tests, scratch work)."""
        from qdrant_client import QdrantClient

        return cls(QdrantClient(location=":memory:"), ":memory:", kind="memory")

    def close(self) -> None:
        """Release the client (and the embedded folder's lock)."""
        with contextlib.suppress(Exception):
            self.client.close()

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ errors
    @contextlib.contextmanager
    def _translated(self, collection: str | None = None, *, attempts: int = 1) -> Iterator[None]:
        import httpx
        from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        tried = f" (after {attempts} attempts)" if attempts > 1 else ""
        try:
            with self._lock:
                yield
        except (VectorStoreError, CollectionNotFoundError):
            raise
        except ResourceExhaustedResponse:
            raise VectorStoreError(
                f"Qdrant at {self.location} is rate limiting this key (HTTP 429){tried}: wait and run again, or "
                "ask for a higher rate limit", location=self.location) from None
        except UnexpectedResponse as err:
            said = server_message(err)
            if err.status_code == 404 and collection is not None:
                raise self._not_found(collection) from None
            if err.status_code in (401, 403):
                raise ConfigurationError(
                    f"Qdrant at {self.location} refused the request (HTTP {err.status_code}): check QDRANT_API_KEY",
                    variable="QDRANT_API_KEY",
                ) from None
            if err.status_code == 400 and "Vector dimension error" in said:
                raise self._wrong_size(collection) from None
            if err.status_code == 400 and "Index required but not found" in said:
                raise _NoIndexError(
                    f"Qdrant at {self.location} refused the request: {said}. The workbook never creates an index "
                    "on a collection it did not build: ask its owners for a keyword payload index on that field",
                    location=self.location) from None
            raise VectorStoreError(
                f"Qdrant at {self.location} answered HTTP {err.status_code} {err.reason_phrase}{tried}"
                + (f": {said}" if said else ""),
                location=self.location,
            ) from None
        except (ResponseHandlingException, httpx.TransportError, ConnectionError, TimeoutError) as err:
            source = getattr(err, "source", err)
            if isinstance(source, httpx.TimeoutException) or isinstance(err, TimeoutError):
                what = (f"did not answer in time (QDRANT_TIMEOUT is {self.timeout:g} s: raise it for a slow "
                        "server or a large page)" if self.timeout else "did not answer in time")
            elif isinstance(source, httpx.RemoteProtocolError | httpx.ReadError):
                what = f"closed the connection mid-answer{tried}"
            elif isinstance(source, httpx.ConnectError):
                what = "refused the connection"
            else:
                what = f"could not be reached ({type(source).__name__})"
            raise StoreUnavailableError(
                f"Qdrant at {self.location} {what}; check that it is running and that QDRANT_URL is right",
                location=self.location,
            ) from None
        except ValueError as err:
            # local mode raises ValueError("Collection X not found"), and a numpy error on a wrong-size vector
            if collection is not None and "not found" in str(err).lower():
                raise self._not_found(collection) from None
            if "dimension" in str(err) or "not aligned" in str(err):
                raise self._wrong_size(collection) from None
            raise

    def _run(self, collection: str | None, call: Any) -> Any:
        """``call()`` with its errors translated (:meth:`_translated`), retried while a server fails in passing
        (:func:`~retrieval_lib.stores.server.retry_wait`): at most :data:`RETRIES` retries."""
        attempt = 0
        while True:
            wait: float | None = None
            with self._translated(collection, attempts=attempt + 1):  # only a server retries: attempt > 0
                try:
                    return call()
                except Exception as err:  # classified, then re-raised into _translated
                    wait = retry_wait(err, attempt) if self.kind == "server" else None
                    if wait is None:
                        raise
            log.info("Qdrant at %s failed in passing; retry %d of %d in %.1f s", self.location, attempt + 1,
                     RETRIES, wait)
            self.sleep(wait)
            attempt += 1

    def _wrong_size(self, collection: str | None) -> ValidationError:
        size = self.vector_params(collection)[1] if collection else None
        return ValidationError(f"a vector does not have the collection's size ({size} dimensions) in {collection!r}: "
                               "embed with the model the collection was built with", field="vector")

    def _not_found(self, collection: str) -> CollectionNotFoundError:
        try:
            available = self.list_collections()
        except VectorStoreError:
            available = []
        listed = ", ".join(available) if available else "none"
        hint = (
            "set QDRANT_COLLECTION_NAME to one of them, or run `python -m retrieval_lib ingest` "
            "(or `make demo`) to build the sample collection"
            if self.kind == "embedded" else "check QDRANT_COLLECTION_NAME"
        )
        return CollectionNotFoundError(
            f"collection {collection!r} does not exist in {self.location} (collections there: {listed}); {hint}",
            collection=collection,
            available=available,
        )

    # ------------------------------------------------------------------ collections
    def list_collections(self) -> list[str]:
        """Names of the collections in the store, sorted."""
        return sorted(c.name for c in self._run(None, lambda: self.client.get_collections().collections))

    def exists(self, collection: str) -> bool:
        return bool(self._run(None, lambda: self.client.collection_exists(collection)))

    def info(self, collection: str) -> Any:
        """qdrant-client's CollectionInfo, or CollectionNotFoundError."""
        if not self._run(collection, lambda: self.client.collection_exists(collection)):
            raise self._not_found(collection)
        return self._run(collection, lambda: self.client.get_collection(collection))

    def vector_params(self, collection: str) -> tuple[str | None, int | None, str | None]:
        """(vector name or None for the default vector, size, distance) of the collection."""
        vectors = self.info(collection).config.params.vectors
        if isinstance(vectors, dict):
            names = ", ".join(sorted(vectors))
            if self.vector_name:
                if self.vector_name not in vectors:
                    raise ConfigurationError(
                        f"collection {collection!r} has no vector named {self.vector_name!r} (its vectors: "
                        f"{names or 'none'}); set QDRANT_VECTOR_NAME to one of them", variable="QDRANT_VECTOR_NAME")
                name, params = self.vector_name, vectors[self.vector_name]
            elif len(vectors) != 1:
                raise ConfigurationError(
                    f"collection {collection!r} has several named vectors ({names}); set QDRANT_VECTOR_NAME to "
                    "the one your chatbot searches (the workbook validates one vector per point)",
                    variable="QDRANT_VECTOR_NAME",
                )
            else:
                name, params = next(iter(vectors.items()))
        else:
            name, params = None, vectors
        if params is None:
            return None, None, None
        distance = getattr(params.distance, "value", params.distance)
        self._vector_names[collection] = name
        return name, int(params.size), str(distance)

    def create_collection(self, collection: str, dimension: int, *, recreate: bool = False) -> None:
        """Create a cosine collection of ``dimension``; drop an existing one first if ``recreate``."""
        from qdrant_client import models

        with self._translated(collection):
            if recreate and self.client.collection_exists(collection):
                self.client.delete_collection(collection)
            if not self.client.collection_exists(collection):
                self.client.create_collection(
                    collection, vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE)
                )
            self.ensure_payload_indexes(collection)

    def ensure_payload_indexes(self, collection: str) -> list[str]:
        """Create keyword indexes on the filtered fields; returns the fields now indexed.

        Local mode ignores payload indexes (it filters by scanning), so nothing
        is created there.
        """
        from qdrant_client import models

        if self.kind != "server":
            return []
        with self._translated(collection):
            existing = set(self.client.get_collection(collection).payload_schema or {})
            for field, kind in INDEXED_FIELDS.items():
                if field not in existing:
                    self.client.create_payload_index(collection, field, field_schema=models.PayloadSchemaType(kind))
            return sorted(set(existing) | set(INDEXED_FIELDS))

    # ------------------------------------------------------------------ reading
    def count(self, collection: str) -> int:
        return int(self._run(collection, lambda: self.client.count(collection, exact=True)).count)

    def _search_params(self, exact: bool, hnsw_ef: int | None) -> Any:
        from qdrant_client import models

        if self.kind != "server" or (not exact and hnsw_ef is None):
            return None  # local mode always searches exactly (and warns about search params)
        return models.SearchParams(exact=exact, hnsw_ef=hnsw_ef)

    def query(self, collection: str, vector: Sequence[float], *, limit: int, similarity_threshold: float | None = None,
              query_filter: Any = None, exact: bool = False, hnsw_ef: int | None = None) -> list[Any]:
        """Nearest points to ``vector`` with payloads (no vectors), best first.

        ``exact`` forces a full scan and ``hnsw_ef`` sets the HNSW search breadth
        (engines with an index; local mode always searches exactly).
        """
        params = self._search_params(exact, hnsw_ef)
        return self._run(collection, lambda: self.client.query_points(
            collection, query=list(vector), using=self._vector_names.get(collection), limit=limit,
            score_threshold=similarity_threshold, query_filter=query_filter,
            search_params=params, with_payload=True, with_vectors=False,
        )).points

    def query_batch(self, collection: str, vectors: Sequence[Sequence[float]], *, limit: int,
                    similarity_threshold: float | None = None, query_filter: Any = None, exact: bool = False,
                    hnsw_ef: int | None = None, with_payload: bool | Sequence[str] = True) -> list[list[Any]]:
        """:meth:`query` for many vectors in one request (``query_batch_points``)."""
        from qdrant_client import models

        params = self._search_params(exact, hnsw_ef)
        payload = with_payload if isinstance(with_payload, bool) else list(with_payload)
        requests = [
            models.QueryRequest(query=list(v), using=self._vector_names.get(collection), limit=limit,
                                score_threshold=similarity_threshold, filter=query_filter, params=params,
                                with_payload=payload, with_vector=False)
            for v in vectors
        ]
        return [r.points for r in self._run(collection,
                                            lambda: self.client.query_batch_points(collection, requests=requests))]

    def _vectors_to_read(self, collection: str, with_vectors: bool) -> bool | list[str]:
        """``with_vectors`` for a read: the one named vector validated when the collection has several."""
        if not with_vectors or not self.vector_name:
            return with_vectors
        if collection not in self._vector_names:
            self.vector_params(collection)
        name = self._vector_names.get(collection)
        return [name] if name else with_vectors

    def retrieve(self, collection: str, point_ids: Sequence[str], *, with_vectors: bool = True,
                 with_payload: bool | Sequence[str] = False) -> list[Any]:
        """The points with these ids (missing ids are left out), in the order asked."""
        vectors = self._vectors_to_read(collection, with_vectors)
        found = self._run(collection, lambda: self.client.retrieve(collection, list(point_ids),
                                                                   with_payload=with_payload, with_vectors=vectors))
        by_id = {str(p.id): p for p in found}
        return [by_id[str(i)] for i in point_ids if str(i) in by_id]

    def scroll(self, collection: str, *, with_payload: bool | Sequence[str] = True,
               with_vectors: bool = False, batch_size: int = 256, query_filter: Any = None) -> Iterator[Any]:
        """Every point of the collection, by paged scroll (never one huge request).

        A page that fails in passing is asked again from the same offset (:meth:`_run`); when the retries are
        spent the scan raises, saying where it stopped: a scan is never silently short.

        Raises:
            StoreUnavailableError, VectorStoreError: the scan stopped (the message names the point it reached).
        """
        offset = None
        vectors = self._vectors_to_read(collection, with_vectors)
        read = pages = 0
        while True:
            try:
                points, offset = self._run(collection, lambda at=offset: self.client.scroll(
                    collection, limit=batch_size, offset=at, with_payload=with_payload,
                    with_vectors=vectors, scroll_filter=query_filter,
                ))
            except VectorStoreError as err:
                if not read:
                    raise
                raise type(err)(
                    f"{err.message.rstrip('.')}. The scan of {collection!r} stopped after {read} points ({pages} "
                    f"pages of {batch_size}; next page from id {offset}): nothing was judged on a partial scan",
                    location=err.location) from None
            pages += 1
            read += len(points)
            yield from points
            if offset is None:
                return

    def distinct_values(self, collection: str, key: str, limit: int = 100_000) -> dict[str, int]:
        """Distinct values of a keyword payload field with their point counts (Qdrant facet), most frequent first.

        A server refuses a facet on a field without a keyword index, and the workbook never creates one on a
        collection it did not build: there the values are counted from one scroll of just that field.
        """
        from retrieval_lib.stores.scan import SERVER_PAGE

        try:
            return self.facet_counts(collection, key, limit)
        except _NoIndexError:
            log.info("Qdrant at %s has no keyword index on %r of %r: its values are counted by a scan",
                     self.location, key, collection)
            return tally(self.scroll(collection, with_payload=[key], batch_size=SERVER_PAGE), key, limit)

    def facet_counts(self, collection: str, key: str, limit: int = 100_000) -> dict[str, int]:
        """:meth:`distinct_values` by a facet only: no scan where the server has no index to facet on.

        Raises:
            VectorStoreError: the server refused the facet (no keyword index on ``key``), or failed.
        """
        hits = self._run(collection, lambda: self.client.facet(collection, key=key, limit=limit, exact=True)).hits
        return {str(h.value): int(h.count) for h in hits}

    # ------------------------------------------------------------------ writing
    def upsert(self, collection: str, points: Sequence[Any]) -> None:
        self._run(collection, lambda: self.client.upsert(collection, points=list(points), wait=True))

    def delete(self, collection: str, point_ids: Sequence[str]) -> None:
        from qdrant_client import models

        if not point_ids:
            return
        selector = models.PointIdsList(points=list(point_ids))
        self._run(collection, lambda: self.client.delete(collection, points_selector=selector, wait=True))

    # ------------------------------------------------------------------ how it is searched
    def search_counters(self, collection: str) -> dict[str, int] | None:
        """How a server has searched ``collection`` so far, by its telemetry (``GET /telemetry?details_level=4``):
        segment searches ``{"hnsw", "plain", "exact"}`` (:func:`~retrieval_lib.stores.server.counters_of`).
        None where nothing says: local mode, a key without telemetry access, a collection the answer does not list.
        """
        if self.kind != "server":
            return None
        try:
            answer = self._run(collection, lambda: self.client.http.client.request(
                type_=dict, method="GET", url="/telemetry", params={"details_level": "4"}))
        except RetrievalError as err:  # a collection-scoped or JWT key may not read telemetry: nothing is told
            log.info("no search-path counters from Qdrant at %s: %s", self.location, err)
            return None
        return counters_of(answer, collection)

    def index_info(self, collection: str) -> IndexInfo:
        """How the collection is searched: local mode always exactly; a server by its HNSW index."""
        info = self.info(collection)
        points = int(info.points_count or 0)
        status = str(getattr(info.status, "value", info.status))
        indexes = tuple(sorted(info.payload_schema or {}))
        if self.kind != "server":
            return IndexInfo("local", points, None, info.segments_count, status, None, indexes, True,
                             "qdrant-client local mode searches exactly (no HNSW index)")
        config = info.config.hnsw_config
        hnsw = {"m": int(config.m), "ef_construct": int(config.ef_construct),
                "full_scan_threshold": int(config.full_scan_threshold)}
        indexed = info.indexed_vectors_count
        exact, reason = exactness(points, indexed, self.vector_params(collection)[1], hnsw)
        return IndexInfo("server", points, indexed, info.segments_count, status, hnsw, indexes, exact, reason)
