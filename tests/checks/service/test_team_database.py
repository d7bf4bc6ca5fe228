"""A team's own metadata database is read, never written, and never taken for "0 rows" (team #6).

Team #6 of shared/REAL_COLLECTIONS.md wrote its Qdrant collection and, beside it, one row per point in its own
PostgreSQL table ``embeddings_metadata``; its ``.env`` sets ``DATABASE_URL``. The service notebook 08 starts must
not create our ``chunks`` table there; 08's metadata gate is not applicable, with the database's tables named, and
never tells the team to run our ingest; ``inspect`` says the same. Our own ingest's rows (the embedded store's
SQLite file beside a collection it wrote) are still compared, as before.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from corpus import DOCS, make_payload
from fakes.cohere_server import FakeCohere
from fakes.embedders import FakeEmbedder
from fakes.proxies import direct_env
from fastapi.testclient import TestClient
from qdrant_client import models
from service_fixtures import SERVICE_DOCS, BagOfWordsEmbedder, postgres  # noqa: F401
from shapes import build
from warm_cli import run_cli

from retrieval_lib import Retriever, VectorStore, load_settings
from retrieval_lib.checks.gates import API_METADATA
from retrieval_lib.checks.service import _consistency
from retrieval_lib.collection import CollectionView
from retrieval_lib.collection.ours import point_id_for
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.service import create_app
from retrieval_lib.stores.metadata import (
    NO_METADATA_DATABASE,
    SEED003_DOCUMENTS,
    SQLITE_NAME,
    MetadataDB,
    metadata_source,
)
from retrieval_lib.workbook.report import NotebookReport

COLLECTION = "book_embeddings"
QUERY = "How does Gazebo simulate robots?"
#: What notebook 08 and `inspect` say of team #6's database (the tables listed are the database's own).
TEAM_REASON = ("the database at DATABASE_URL holds no `chunks` table this workbook reads (its tables: "
               "embeddings_metadata); rows are compared only for collections our ingest wrote")
#: Team #6's own table, as its database.py creates it (types both SQLite and PostgreSQL take).
TEAM_TABLE = ("CREATE TABLE embeddings_metadata (id INTEGER PRIMARY KEY, chunk_id VARCHAR UNIQUE, "
              "qdrant_point_id VARCHAR, document_reference VARCHAR, title VARCHAR, section VARCHAR, "
              "chunk_index INTEGER)")


def team6(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#6: uuid ids; ``chunk_id``, ``content``, ``document_reference`` (the file path), a nested ``metadata{}``."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"team6-{f}-{i}")), {
        "chunk_id": f"{doc['source_file']}::{i}", "content": text, "document_reference": "docs/" + doc["source_file"],
        "metadata": {"title": doc["title"], "section": doc["section_title"], "chunk_index": i}}


def team_rows(url: str) -> int:
    """Team #6's table with one row per point of :func:`team6` (its ingest writes both); returns the count."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(sa.text(TEAM_TABLE))
        for f, doc in enumerate(DOCS):
            point_id, payload = team6(f, doc["id"], doc["content"], doc)
            conn.execute(sa.text("INSERT INTO embeddings_metadata VALUES (:n, :c, :p, :d, :t, :s, :i)"),
                         {"n": f, "c": payload["chunk_id"], "p": point_id, "d": payload["document_reference"],
                          "t": doc["title"], "s": doc["section_title"], "i": doc["id"]})
    engine.dispose()
    return len(DOCS)


def tables_and_rows(url: str) -> dict[str, int]:
    """Every table of the database's default schema, with its row count: read here, not through the library."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            return {t: int(conn.execute(sa.text(f'SELECT count(*) FROM "{t}"')).scalar_one())
                    for t in sa.inspect(engine).get_table_names()}
    finally:
        engine.dispose()


def team_collection(store: Any, embedder: Any) -> Any:
    build(store, COLLECTION, team6, embedder.embed_documents([d["content"] for d in DOCS]))
    return store


@pytest.fixture
def team_database(postgres):  # noqa: F811
    """A fresh PostgreSQL database holding only team #6's ``embeddings_metadata``, one row per point."""
    url = postgres.fresh_database()
    team_rows(url)
    return url


def test_the_service_over_a_teams_database_creates_nothing_and_answers_from_the_payload(team_database):
    before = tables_and_rows(team_database)
    assert before == {"embeddings_metadata": len(DOCS)}
    embedder = BagOfWordsEmbedder()
    retriever = Retriever(team_collection(VectorStore.in_memory(), embedder), embedder, COLLECTION)
    app = create_app(load_settings(env={"DATABASE_URL": team_database}), retriever=retriever,
                     log_stream=io.StringIO())  # no metadata handed in: the service opens the configured one
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.post("/search", json={"query": QUERY})
        health = client.get("/health")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["results"] and not [w for w in body["warnings"] if "metadata row" in w], body["warnings"]
    assert body["results"][0]["snippet"]  # from the payload
    database = health.json()["dependencies"]["database"]
    assert health.status_code == 200 and database["configured"] is False
    # not "not configured (no DATABASE_URL)": it is set, and its tables are not ones this service reads
    assert database["detail"].startswith("not read: the database at DATABASE_URL holds no `chunks` table")
    assert "embeddings_metadata" in database["detail"] and "no DATABASE_URL" not in database["detail"]
    assert tables_and_rows(team_database) == before  # no `chunks`: nothing was written


def test_notebook_08_finds_no_table_it_reads_in_a_teams_database_and_is_not_applicable(team_database, tmp_path):
    before = tables_and_rows(team_database)
    view = CollectionView(team_collection(VectorStore.in_memory(), BagOfWordsEmbedder()))
    assert view.owned(COLLECTION) is False
    settings = load_settings(env={"DATABASE_URL": team_database})
    source = metadata_source(settings, False)
    assert (source.configured, source.readable, source.reason, source.tables, source.error) == (
        True, False, TEAM_REASON, ("embeddings_metadata",), None)

    result = _consistency.check(settings, view, COLLECTION)
    assert result.not_applicable == TEAM_REASON and (result.points, result.rows) == (0, 0)
    report = NotebookReport("08_api", "test", tmp_path / "run")
    _consistency.record(report, result)
    [gate] = report.gates
    assert gate.id == API_METADATA.id and gate.passed is None
    assert gate.detail == f"not applicable: {TEAM_REASON}" and not gate.hint
    assert not report.findings and "metadata_rows" not in report.metrics  # no "0 rows" anywhere
    # seed 003's `documents` is not there either: said with the same table list
    documents = _consistency.check(settings, view, COLLECTION, table="documents")
    assert documents.not_applicable.startswith("the database at DATABASE_URL holds no `documents` table this "
                                               "workbook reads (its tables: embeddings_metadata)")
    assert tables_and_rows(team_database) == before


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'team.sqlite3'}"


def _execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(sa.text(statement))
    engine.dispose()


def test_only_tables_this_workbook_reads_are_read_and_ours_only_for_our_collections(sqlite_url, tmp_path):
    settings = load_settings(env={"DATABASE_URL": sqlite_url})
    # a file that does not exist is not created by looking at it
    missing = metadata_source(settings, None)
    assert not missing.readable and "its tables: none" in missing.reason
    assert not (tmp_path / "team.sqlite3").exists()
    # a team's table called `chunks`, not of our shape: named, not read
    _execute(sqlite_url, "CREATE TABLE chunks (id INTEGER PRIMARY KEY, chunk_id VARCHAR, text VARCHAR)")
    theirs = metadata_source(settings, None)
    assert not theirs.readable and "is not the one this workbook reads (it has no column chunk_sequence" \
        in theirs.reason
    # seed 003's `documents` beside it: read through its mapping, and named as the table to set
    _execute(sqlite_url, "DROP TABLE chunks", "CREATE TABLE documents (chunk_id VARCHAR PRIMARY KEY, "
             "source_path VARCHAR, slug VARCHAR, title VARCHAR, order_index INTEGER)")
    assert metadata_source(settings, False).reason.endswith("; it holds `documents`: set metadata_table: documents")
    assert metadata_source(settings, False, SEED003_DOCUMENTS).readable  # a team's table: read for its collection
    # our own `chunks`: read for a collection our ingest wrote (or one not known yet), not for a team's
    with MetadataDB.open(sqlite_url):
        pass
    assert metadata_source(settings, True).readable and metadata_source(settings, None).readable
    foreign = metadata_source(settings, False)
    assert not foreign.readable and "built by another pipeline" in foreign.reason
    assert "rows are compared only for collections our ingest wrote" in foreign.reason
    # nothing configured: the reason 08 has always given
    assert metadata_source(load_settings(env={"QDRANT_PATH": str(tmp_path / "none")}), None).reason \
        == NO_METADATA_DATABASE


def test_an_unreachable_database_is_an_error_never_a_table_list(tmp_path):
    settings = load_settings(env={"DATABASE_URL": "postgresql://app:hunter2@127.0.0.1:9/db", "QDRANT_TIMEOUT": "2"})
    source = metadata_source(settings, False)
    assert source.error is not None and not source.readable and source.tables == ()
    assert "check that it is running" in source.reason and "hunter2" not in source.reason
    view = CollectionView(team_collection(VectorStore.in_memory(), BagOfWordsEmbedder()))
    with pytest.raises(type(source.error), match="check that it is running"):
        _consistency.check(settings, view, COLLECTION)


def _our_store(folder: Any) -> VectorStore:
    """An embedded store holding a collection as our ingest writes it (its ids), its rows in the SQLite file."""
    embedder = BagOfWordsEmbedder()
    store = VectorStore.at_path(folder)
    store.create_collection(COLLECTION, embedder.dimension)
    vectors = embedder.embed_documents([d["content"] for d in SERVICE_DOCS])
    store.upsert(COLLECTION, [models.PointStruct(id=point_id_for(d["source_file"], d["chunk_sequence"]), vector=v,
                                                 payload=make_payload(d, embedder.model))
                              for d, v in zip(SERVICE_DOCS, vectors)])
    with MetadataDB.open(f"sqlite:///{folder / SQLITE_NAME}") as db:
        db.sync_collection(store, COLLECTION)
    return store


def test_our_own_ingests_rows_are_still_compared_and_a_teams_failure_never_hints_our_ingest(tmp_path):
    folder = tmp_path / "store"
    store = _our_store(folder)
    view = CollectionView(store)
    settings = load_settings(env={"QDRANT_PATH": str(folder)})
    assert view.owned(COLLECTION) is True
    clean = _consistency.check(settings, view, COLLECTION)
    assert not clean.not_applicable and clean.consistent and clean.points == clean.rows == len(SERVICE_DOCS)
    _execute(f"sqlite:///{folder / SQLITE_NAME}", "DELETE FROM chunks WHERE chunk_sequence = 0")
    broken = _consistency.check(settings, view, COLLECTION)
    report = NotebookReport("08_api", "test", tmp_path / "run")
    _consistency.record(report, clean)
    _consistency.record(report, broken)
    assert [g.passed for g in report.gates] == [True, False]
    assert broken.points_without_row > 0 and "retrieval_lib ingest" in report.gates[1].hint
    store.close()

    # a team's collection with seed 003's `documents` table that disagrees: a real failure, its team's to fix
    team_url = f"sqlite:///{tmp_path / 'team.sqlite3'}"
    _execute(team_url, "CREATE TABLE documents (chunk_id VARCHAR PRIMARY KEY, source_path VARCHAR, slug VARCHAR, "
             "title VARCHAR, order_index INTEGER)", "INSERT INTO documents VALUES ('gone.md::0', 'gone.md', "
             "'/docs/gone', 'Gone', 0)")
    theirs = CollectionView(team_collection(VectorStore.in_memory(), BagOfWordsEmbedder()))
    result = _consistency.check(load_settings(env={"DATABASE_URL": team_url}), theirs, COLLECTION, table="documents")
    assert result.owned is False and result.rows_without_point == 1 and result.points_without_row == len(DOCS)
    team_report = NotebookReport("08_api", "test", tmp_path / "team")
    _consistency.record(team_report, result)
    [gate] = team_report.gates
    assert gate.passed is False and gate.hint == _consistency.TEAM_HINT
    assert "retrieval_lib ingest" not in gate.hint


#: The fewest repeats and requests notebook 08 takes (a profile's keys).
LIGHT = {"api_repeats": 1, "api_concurrency": [2], "api_latency_rounds": 1}


@pytest.mark.slow
def test_check_api_and_inspect_on_team_6_write_nothing_and_say_why_nothing_is_compared(team_database, tmp_path):
    """The tour's commands, as team #6 runs them: ``inspect --write-profile`` and ``check api`` (its service a
    ``serve`` process of its own) with ``DATABASE_URL`` at the team's PostgreSQL, embeddings by a loopback Cohere."""
    before = tables_and_rows(team_database)
    folder = tmp_path / "store"
    team_collection(VectorStore.at_path(folder), FakeEmbedder.like_cohere_fake(
        model="embed-english-light-v3.0", dimension=384)).close()
    profile = tmp_path / "team6.yaml"
    with FakeCohere(dim=384) as fake:
        env = {**{k: v for k, v in direct_env(os.environ).items()
                  if k not in ("QDRANT_URL", "QDRANT_API_KEY", "PAYLOAD_FIELDS")},
               "EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-light-v3.0",
               "COHERE_API_KEY": "co-test-team6", "COHERE_BASE_URL": fake.url, "EMBEDDING_MAX_RETRIES": "0",
               "QDRANT_PATH": str(folder), "QDRANT_COLLECTION_NAME": COLLECTION, "DATABASE_URL": team_database}
        inspected = run_cli(["inspect", "--write-profile", str(profile)], env=env, cwd=PROJECT_ROOT, timeout=300)
        assert inspected.returncode == 0, inspected.stderr
        assert f"  no   metadata rows against points (08): {TEAM_REASON}" in inspected.stdout.splitlines()
        values = yaml.safe_load(profile.read_text(encoding="utf-8"))
        profile.write_text(yaml.safe_dump({**values, **LIGHT}), encoding="utf-8")
        checked = run_cli(["check", "api", "--params", str(profile), "--out", str(tmp_path / "out"), "--json"],
                          env=env, cwd=PROJECT_ROOT, timeout=600)
    assert checked.returncode in (0, 1), checked.stderr
    gates = {g["id"]: g for g in json.loads(checked.stdout)["gates"]}
    meta = gates[API_METADATA.id]
    assert meta["passed"] is None and meta["detail"] == f"not applicable: {TEAM_REASON}", meta
    assert gates["api.health"]["passed"] is True  # the service started and answered over the team's database
    assert "retrieval_lib ingest" not in checked.stdout + inspected.stdout
    assert tables_and_rows(team_database) == before  # `inspect`, the service and 08 wrote nothing
