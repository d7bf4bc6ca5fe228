"""Shared pieces of the retrieval-API tests (``tests/test_service_*.py``).

- :class:`BagOfWordsEmbedder`: the loopback Cohere fake's deterministic vectors
  (:func:`fakes.cohere_server.embed_text`) behind the Embedder protocol, so a
  small collection is searched without loading a model;
- :data:`SERVICE_DOCS`: the shared 13-doc book with a distinct ``chunk_id`` per doc;
- :func:`small_retriever`: an in-memory collection of those docs;
- :func:`client_for`: the app in-process (``TestClient``), its query log captured;
- ``postgres``: a real PostgreSQL 16 (the ``pgserver`` package) for the test session,
  with :func:`stop_postgres` / :func:`start_postgres` for outage tests and
  :func:`fresh_database` for an empty database per test.

Test modules import the fixtures by name: ``from service_fixtures import postgres``.
"""

from __future__ import annotations

import io
import os
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from corpus import DOCS, fill_collection
from fakes.embedders import FakeEmbedder
from fastapi.testclient import TestClient

from retrieval_lib import Retriever, VectorStore, load_settings
from retrieval_lib.service import MetadataDB, ServiceOptions, create_app

COLLECTION = "book"


#: Deterministic vectors (the Cohere fake's), no model: texts sharing words score high.
BagOfWordsEmbedder = FakeEmbedder.like_cohere_fake


def _distinct_chunk_ids(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    # two shared docs are chunks 0 and 1 of one file; give each its position so chunk_ids differ
    out, seen = [], {}
    for doc in docs:
        doc = dict(doc)
        n = seen.get(doc["source_file"], 0)
        seen[doc["source_file"]] = n + 1
        doc["chunk_sequence"] = n
        out.append(doc)
    totals = {f: n for f, n in seen.items()}
    return [{**d, "total_chunks": totals[d["source_file"]]} for d in out]


SERVICE_DOCS: list[dict[str, Any]] = _distinct_chunk_ids(DOCS)


def small_retriever(embedder: Any | None = None, docs: Sequence[dict[str, Any]] = SERVICE_DOCS) -> Retriever:
    """An in-memory collection ``book`` of ``docs``, embedded by ``embedder`` (default bag of words)."""
    embedder = embedder or BagOfWordsEmbedder()
    store = VectorStore.in_memory()
    fill_collection(store, COLLECTION, embedder, docs)
    return Retriever(store, embedder, COLLECTION)


def sqlite_db(tmp_path: Any, name: str = "metadata.sqlite3") -> MetadataDB:
    return MetadataDB.open(f"sqlite:///{tmp_path / name}")


@dataclass
class Served:
    """An app in-process: its client and its captured query log."""

    client: TestClient
    log: io.StringIO
    retriever: Retriever
    metadata: MetadataDB

    def log_lines(self) -> list[dict[str, Any]]:
        import json

        return [json.loads(line) for line in self.log.getvalue().splitlines()]


@contextmanager
def client_for(retriever: Retriever, metadata: MetadataDB, *, env: dict[str, str] | None = None,
               options: ServiceOptions | None = None) -> Iterator[Served]:
    """The app over ``retriever`` and ``metadata``, started (lifespan) and stopped around the block."""
    log = io.StringIO()
    app = create_app(load_settings(env=env or {}), retriever=retriever, metadata=metadata,
                     options=options or ServiceOptions(), log_stream=log)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Served(client, log, retriever, metadata)


# --------------------------------------------------------------------------- PostgreSQL

@dataclass
class Postgres:
    """A private PostgreSQL server (pgserver): ``url`` for a database, stop/start for outages."""

    server: Any

    def url(self, database: str = "postgres") -> str:
        return str(self.server.get_uri(database=database))

    def fresh_database(self) -> str:
        """Create an empty database; returns its URL."""
        name = "t_" + uuid.uuid4().hex[:12]
        self.server.psql(f"CREATE DATABASE {name};")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server now (fast shutdown: clients are disconnected)."""
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        """Start it again, on the same socket, so the same URL works."""
        with self.server._lock:
            self.server.ensure_postgres_running()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory) -> Iterator[Postgres]:
    """PostgreSQL 16 for the whole test session, on a Unix socket in a temporary folder."""
    folder = tmp_path_factory.mktemp("pg")
    os.chmod(folder, 0o755)  # as root, pgserver runs the server as its own user, which must enter the folder
    with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset (it falls back to /tmp)
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    yield Postgres(server)
    server.cleanup()


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn in a thread of this process, on a free loopback port; yields its URL."""
    import threading
    import time

    import uvicorn

    from retrieval_lib.checks.api.target import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
