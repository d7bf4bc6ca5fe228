"""The application factory: :func:`create_app` builds the FastAPI app of the seed-003 retrieval API.

Tests call it in-process with their own retriever and database; ``python -m
retrieval_lib serve`` calls it with the configured ones and hands the app to
uvicorn. Either way the embedding model is loaded and warmed up at start-up,
never on the first query, and every dependency is reached through the same
library objects the notebooks use (:class:`~retrieval_lib.search.Retriever`,
:class:`~retrieval_lib.stores.metadata.MetadataDB`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from fastapi import FastAPI

from retrieval_lib.config import Settings, load_settings
from retrieval_lib.errors import RetrievalError
from retrieval_lib.search import Retriever
from retrieval_lib.service.batching import SearchBatcher
from retrieval_lib.service.guard import RequestGuard
from retrieval_lib.service.handlers import install_handlers, without_422
from retrieval_lib.service.querylog import QueryLog
from retrieval_lib.service.routes import router
from retrieval_lib.stores.metadata import MetadataDB, judge_metadata, metadata_source, metadata_where

__all__ = ["ServiceOptions", "ServiceState", "create_app", "open_retriever"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceOptions:
    """What the service itself limits (the dependencies are configured by :class:`~retrieval_lib.config.Settings`).

    Every limit here is published: the request limits in the OpenAPI schema, all of them in ``docs/api.md``.

    Attributes:
        query_max_chars: longest query accepted (seed 003 assumes 500 characters).
        max_body_bytes: largest request body; a larger one is refused with 413 before it is read.
        warm_up: run one search at start-up so the first query pays no warm-up (local models
            only: a remote embedding call would spend quota on every start).
        batching: embed and search concurrent queries together (:mod:`.batching`); False searches each alone.
        batch_max: most queries in one embedding call (96: Cohere's most per call, the library's batch size;
            measured: p95 at 100 concurrent 1.79x the batched floor, against 2.69x with batches of 32).
        batch_wait_ms: how long a batch waits for more queries once one arrived (0: none; a lone query
            never waits, queries arriving while a batch runs form the next one).
        batch_queue: most queries waiting for a batch; beyond it a search is 503 (ServiceBusyError).
        header_timeout: seconds a connection may take to send a request's headers (the first request's,
            or the next one's once it has started) before it is answered 408 and closed.
        body_timeout: seconds the body may pause between two reads before the request is answered 408.
        max_header_bytes: most bytes of request line and headers; more is answered 431 and closed.
        keep_alive: seconds an idle keep-alive connection is kept (uvicorn's ``timeout_keep_alive``).
        max_connections: connections served at once (uvicorn's ``limit_concurrency``); beyond it uvicorn
            answers 503 itself.
        shutdown_timeout: seconds SIGTERM waits for requests in flight before closing them
            (uvicorn's ``timeout_graceful_shutdown``).
    """

    query_max_chars: int = 500
    max_body_bytes: int = 64 * 1024
    warm_up: bool = True
    batching: bool = True
    batch_max: int = 96
    batch_wait_ms: float = 0.0
    batch_queue: int = 256
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    max_header_bytes: int = 32 * 1024
    keep_alive: int = 5
    max_connections: int = 200
    shutdown_timeout: int = 5


class ServiceState:
    """The live dependencies of one app, and what the last embedding call did."""

    def __init__(self, settings: Settings, options: ServiceOptions, retriever: Retriever, metadata: MetadataDB | None,
                 *, owns_retriever: bool = False, owns_metadata: bool = False) -> None:
        self.settings = settings
        self.options = options
        self.retriever = retriever
        self.metadata = metadata
        #: why no rows are read where a database is configured but holds no table this service reads ("" otherwise)
        self.metadata_reason = ""
        #: the database was down at start-up: what it holds is judged when it is reached (:meth:`read_metadata`)
        self._metadata_unjudged = False
        self._metadata_lock = threading.Lock()  # requests in several threads: the database is judged once
        self._owned = (owns_retriever, owns_metadata)
        # An in-process model is up once loaded; a remote one is known only after a call.
        self.embedder_ok: bool | None = True if retriever.embedder.provider == "local" else None
        self.embed_ms: float | None = None
        self.batcher: SearchBatcher | None = None

    def start(self) -> list[str]:
        """Warm up and check what can be checked; returns problems found (the service still starts)."""
        problems: list[str] = []
        # the database is only read: its schema is our ingest's to create (stores.metadata.metadata_source)
        if self.metadata is not None and not (probe := self.metadata.probe())["reachable"]:
            problems.append(str(probe["error"]))
            self._metadata_unjudged = True
        try:
            self.retriever.check_compatibility()
            if self.options.warm_up and self.retriever.embedder.provider == "local":
                # one whole search: the model's and the store's first-call costs are paid here, not by a client
                self.retriever.search("warm-up")
        except RetrievalError as err:
            problems.append(err.message)
        for problem in problems:
            log.warning("starting with a dependency not ready: %s", problem)
        if self.options.batching:
            self.batcher = SearchBatcher(self.retriever, max_batch=self.options.batch_max,
                                         max_wait_ms=self.options.batch_wait_ms, max_queue=self.options.batch_queue)
        return problems

    def read_metadata(self) -> MetadataDB | None:
        """The database whose rows the answers join, or None (they come from the payload).

        A database down at start-up was kept without knowing what it holds; once reached, it is judged as at
        start-up (:func:`~retrieval_lib.stores.metadata.judge_metadata`): one without a table this service reads
        is dropped, and ``/health`` says why (never a 503 for a table the team never had). While it is down, it
        is returned as it is, and reading it is the 503 it should be.
        """
        if not self._metadata_unjudged:  # the common case, on every search: no lock
            return self.metadata
        with self._metadata_lock:
            return self._judged_metadata()

    def _judged_metadata(self) -> MetadataDB | None:
        if self.metadata is not None and self._metadata_unjudged:
            source = judge_metadata(self.metadata, _owned(self.retriever), metadata_where(self.settings))
            if source.error is None:
                self._metadata_unjudged = False
                if not source.readable:
                    log.warning("no metadata rows read, results come from the vector payload: %s", source.reason)
                    if self._owned[1]:
                        self.metadata.close()
                    self.metadata, self.metadata_reason = None, source.reason
        return self.metadata

    def close(self) -> None:
        """Close what the app opened itself (a retriever or database handed in stays open)."""
        if self.batcher is not None:
            self.batcher.close()
        if self._owned[0]:
            self.retriever.close()
        if self._owned[1] and self.metadata is not None:
            self.metadata.close()


def open_retriever(settings: Settings, options: ServiceOptions | None = None) -> Retriever:
    """The configured embedder (its model loaded now) over the configured store.

    Raises:
        ConfigurationError: a setting is invalid or the model cannot be loaded.
        StoreLockedError: the embedded store is held by another process.
    """
    options = options or ServiceOptions()
    # The service applies its own (shorter) query limit first; the library's must not be the tighter one.
    return Retriever.from_settings(settings, query_max_chars=max(options.query_max_chars, settings.query_max_chars))


def _owned(retriever: Retriever) -> bool | None:
    try:
        return retriever.store.owned(retriever.collection)
    except RetrievalError:  # the store is not readable yet: the service starts, and says so on /health
        return None


def served_metadata(settings: Settings, retriever: Retriever) -> tuple[MetadataDB | None, str]:
    """(the metadata database of the served collection, opened read-only, or None when it has no rows this
    service reads; why a configured database is not read, "" otherwise: what ``/health`` says in place of "not
    configured"), from one :func:`~retrieval_lib.stores.metadata.metadata_source`.

    None: no ``DATABASE_URL`` and no SQLite file of our own ingest for it, a database without our ``chunks`` table
    (a team's own, with its own tables), or a team's collection; the service then answers from the payload.
    Nothing is created in the database: a team's data is never written, and our ingest made the table wherever it
    wrote the rows. A database down at start-up is kept (``/health`` says so, and it is read once it is back)."""
    if settings.qdrant_url and not settings.database_url:
        return None, ""  # a server's collections have no SQLite file of ours beside them
    source = metadata_source(settings, _owned(retriever))
    if source.readable or source.error is not None:
        return MetadataDB.from_settings(settings, create=False), ""
    if source.configured:
        log.warning("no metadata rows read, results come from the vector payload: %s", source.reason)
        return None, source.reason
    return None, ""


def configured_metadata(settings: Settings, retriever: Retriever) -> MetadataDB | None:
    """The metadata database of the served collection, or None (:func:`served_metadata`)."""
    return served_metadata(settings, retriever)[0]


def create_app(settings: Settings | None = None, *, retriever: Retriever | None = None,
               metadata: MetadataDB | None = None, options: ServiceOptions | None = None,
               log_stream: IO[str] | None = None, log_path: str | Path | None = None) -> FastAPI:
    """Build the retrieval API.

    Args:
        settings: the configuration (default :func:`~retrieval_lib.config.load_settings`).
        retriever: the retriever to serve (default: built from ``settings`` at start-up, model included).
        metadata: the metadata database (default: ``DATABASE_URL`` or the SQLite file of the embedded store).
        options: the service's own limits.
        log_stream: where query-log lines go (default stderr); ``log_path`` appends them to a file instead.

    Returns:
        A FastAPI app. Its dependencies open when it starts (the lifespan: uvicorn, or
        ``with TestClient(app)``) and close when it stops, where the app opened them.
    """
    settings = settings or load_settings()
    options = options or ServiceOptions()
    querylog = QueryLog(log_stream, path=log_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        served = retriever if retriever is not None else open_retriever(settings, options)
        db, unread = (metadata, "") if metadata is not None else served_metadata(settings, served)
        state = ServiceState(settings, options, served, db, owns_retriever=retriever is None,
                             owns_metadata=metadata is None)
        state.metadata_reason = unread
        state.start()
        app.state.service = state
        try:
            yield
        finally:
            state.close()
            querylog.close()

    app = FastAPI(
        title="retrieval_lib retrieval API",
        version="1.0",
        summary="Seed 003: semantic search over the book, joined with chunk metadata by chunk_id",
        lifespan=lifespan,
    )
    app.include_router(router)
    install_handlers(app)
    app.add_middleware(RequestGuard, querylog=querylog, max_body_bytes=options.max_body_bytes,
                       body_timeout=options.body_timeout)
    app.openapi = without_422(app, query_max_chars=options.query_max_chars)  # type: ignore[method-assign]
    return app
