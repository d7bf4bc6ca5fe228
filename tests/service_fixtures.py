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
from retrieval_lib.service import ServiceOptions, create_app
from retrieval_lib.stores import MetadataDB

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
def serving(app: Any, options: ServiceOptions | None = None) -> Iterator[str]:
    """``app`` served by uvicorn in a thread of this process, on a free loopback port; yields its URL.

    uvicorn is configured as ``serve`` configures it (:func:`~retrieval_lib.service.server.uvicorn_config`).
    """
    import threading
    import time

    import uvicorn

    from retrieval_lib.checks.service._target import free_port
    from retrieval_lib.service.server import uvicorn_config

    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, port=port, options=options, log_level="warning"))
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


# --------------------------------------------------------------------------- schemathesis

#: Test cases per operation and phase (examples, coverage, fuzzing): about 330 requests a run, 2-3 s.
FUZZ_EXAMPLES = 250
FUZZ_SEED = 25
#: The bound on one run's wall time (a run takes a few seconds); the subprocess is killed past it.
FUZZ_MAX_SECONDS = 90


def schemathesis_run(url: str, report_dir: Any, *, expected_5xx: tuple[int, ...] = (),
                     max_examples: int = FUZZ_EXAMPLES) -> dict[str, Any]:
    """schemathesis's own command line (``st run``, every check) against the service at ``url``.

    Bounded: ``max_examples`` per operation and phase, the deterministic generation mode with a fixed
    seed (the same requests every run), and :data:`FUZZ_MAX_SECONDS` for the whole run. Returns its
    JSON report, with the console output under ``"output"``.
    """
    import json
    import subprocess
    import sys
    from pathlib import Path

    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    config = report_dir / "schemathesis.toml"
    statuses = ", ".join(f'"{s}"' for s in ["2xx", "3xx", "4xx", *map(str, expected_5xx)])
    # not_a_server_error: the 5xx a dependency's outage is documented to give are answers, not server errors
    config.write_text(f"[checks.not_a_server_error]\nexpected-statuses = [{statuses}]\n")
    bin_dir = Path(sys.executable).parent
    command = [str(bin_dir / "schemathesis"), "--config-file", str(config), "--no-color",
               "run", f"{url}/openapi.json", "--checks", "all", "--max-examples", str(max_examples),
               "--seed", str(FUZZ_SEED), "--generation-deterministic", "--phases", "examples,coverage,fuzzing",
               "--workers", "1", "--request-timeout", "10", "--continue-on-failure",
               "--report", "json", "--report-dir", str(report_dir)]
    # cwd: schemathesis keeps a cache folder (.schemathesis/) in its working folder, never in the project's
    done = subprocess.run(command, capture_output=True, text=True, timeout=FUZZ_MAX_SECONDS, cwd=report_dir,
                          env={"PATH": str(bin_dir), "HOME": str(report_dir), "NO_PROXY": "127.0.0.1"})
    reports = sorted(report_dir.glob("*.json"))
    assert reports, done.stdout[-3000:] + done.stderr[-2000:]
    report: dict[str, Any] = json.loads(reports[-1].read_text())
    report["output"] = done.stdout
    return report


def assert_schemathesis_clean(report: dict[str, Any]) -> None:
    """No failure of any check, no error, no warning (e.g. a pattern it could not use), every phase run."""
    cases = report["test_cases"]
    assert report["failures"] == [] and cases["with_failures"] == 0, report["output"][-4000:]
    assert report["errors"] == [] and cases["errored"] == 0, report["output"][-4000:]
    assert not any(report["warnings"].values()), report["warnings"]
    assert all(p["status"] in ("success", "skip") for p in report["phases"].values()), report["phases"]


# --------------------------------------------------------------------------- a slow service in a child process

class _Announcing:
    """An embedder that prints ``embedding N`` (and flushes) when a query batch starts, then sleeps ``delay``."""

    def __init__(self, inner: Any, delay: float) -> None:
        self.inner, self.delay = inner, delay
        self.provider, self.model, self.dimension = inner.provider, inner.model, inner.dimension

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        import sys
        import time

        print(f"embedding {len(texts)}", file=sys.stdout, flush=True)
        time.sleep(self.delay)
        return self.inner.embed_queries(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def serve_slow(port: int, delay: float, shutdown_timeout: int) -> None:
    """Serve the small book on ``port`` (loopback) with a query embedding that takes ``delay`` seconds, as
    ``serve`` serves (uvicorn, its signal handling and graceful shutdown); for a child process."""
    import tempfile
    from pathlib import Path

    import uvicorn

    from retrieval_lib.service.server import uvicorn_config

    retriever = small_retriever()
    retriever.embedder = _Announcing(retriever.embedder, delay)
    db = sqlite_db(Path(tempfile.mkdtemp(prefix="slow-service-")))
    db.sync_collection(retriever.store, retriever.collection)
    options = ServiceOptions(shutdown_timeout=shutdown_timeout)
    app = create_app(load_settings(env={}), retriever=retriever, metadata=db, options=options)
    uvicorn.Server(uvicorn_config(app, port=port, options=options)).run()
