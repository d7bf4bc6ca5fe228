"""The metadata database: one code path, run against SQLite and a real PostgreSQL (pgserver)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from corpus import make_payload
from service_fixtures import COLLECTION, SERVICE_DOCS, postgres, small_retriever  # noqa: F401

from retrieval_lib.service.errors import DatabaseUnavailableError
from retrieval_lib.stores.metadata import (
    ROW_FIELDS,
    SEED003_DOCUMENTS,
    MetadataDB,
    TableMapping,
    row_from_payload,
    slug_of,
)

PAYLOADS = [make_payload(d, "bow-64") for d in SERVICE_DOCS]


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """An empty ``chunks`` table in SQLite, then in PostgreSQL: every test runs on both."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.sqlite3'}"
    else:
        url = request.getfixturevalue("postgres").fresh_database()
    database = MetadataDB.open(url, timeout=3)
    assert database.backend == request.param
    yield database
    database.close()


def _rows(db: MetadataDB) -> dict[str, dict]:
    return {r["chunk_id"]: r for r in db.iter_rows()}


def test_a_row_is_the_payload_keyed_by_chunk_id_with_the_page_path_as_slug():
    row = row_from_payload(PAYLOADS[0])
    assert row is not None
    assert set(row) == {"chunk_id", *ROW_FIELDS}
    assert row["chunk_id"] == "module-01-ros2/01-ros2-overview.md#0"
    assert row["source_path"] == "module-01-ros2/01-ros2-overview.md"
    assert row["slug"] == "/docs/module-01-ros2/what-is-ros2" == slug_of(row["source_url"])
    assert row_from_payload({"title": "no key"}) is None


def test_sync_writes_every_row_then_changes_nothing(db):
    first = db.sync(PAYLOADS)
    assert (first.inserted, first.updated, first.deleted) == (len(PAYLOADS), 0, 0)
    assert db.count() == len(PAYLOADS) == len({p["chunk_id"] for p in PAYLOADS})
    again = db.sync(PAYLOADS)
    assert (again.inserted, again.updated, again.deleted, again.unchanged) == (0, 0, 0, len(PAYLOADS))
    stored = _rows(db)[PAYLOADS[5]["chunk_id"]]
    assert stored == row_from_payload(PAYLOADS[5])


def test_sync_converges_from_any_partial_state(db):
    """A killed ingest leaves some rows stale, some missing and some orphaned: one sync fixes all three."""
    db.sync([{**PAYLOADS[0], "title": "stale title"}]
            + [p for p in PAYLOADS[:8] if p["source_file"] != PAYLOADS[0]["source_file"]]
            + [make_payload({**SERVICE_DOCS[0], "source_file": "gone/file.md"}, "bow-64")])
    summary = db.sync(PAYLOADS)
    assert summary.inserted == len(PAYLOADS) - 8
    assert summary.updated == 1 and summary.deleted == 1
    assert _rows(db) == {p["chunk_id"]: row_from_payload(p) for p in PAYLOADS}


def test_rows_for_reads_all_hits_in_one_statement(db):
    db.sync(PAYLOADS)
    statements: list[str] = []
    sa.event.listen(db.engine, "before_cursor_execute",
                    lambda conn, cursor, statement, *a: statements.append(statement))
    wanted = [PAYLOADS[3]["chunk_id"], PAYLOADS[0]["chunk_id"], "no/such.md#0"]
    rows = db.rows_for(wanted)
    assert set(rows) == set(wanted[:2])
    on_table = [s for s in statements if "chunks" in s]
    assert len(on_table) == 1 and " IN " in on_table[0].upper()


def test_sync_collection_reads_the_points_of_a_collection(db):
    retriever = small_retriever()
    summary = db.sync_collection(retriever.store, COLLECTION)
    assert summary.inserted == len(SERVICE_DOCS) and db.backend in summary.location
    assert set(_rows(db)) == {p["chunk_id"] for p in PAYLOADS}


def test_a_teams_documents_table_is_read_through_a_column_mapping(db):
    with db.engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE documents (chunk_id VARCHAR PRIMARY KEY, source_path VARCHAR, "
                             "slug VARCHAR, title VARCHAR, order_index INTEGER, snippet VARCHAR)"))
        conn.execute(sa.text("INSERT INTO documents VALUES ('a#0', 'a.md', 'a', 'A', 0, 'text'), "
                             "('a#1', 'a.md', 'a', 'A', 1, 'more')"))
    theirs = MetadataDB(db.engine, db.location, mapping=SEED003_DOCUMENTS)
    rows = theirs.rows_for(["a#1", "b#0"])
    assert rows == {"a#1": {"chunk_id": "a#1", "source_path": "a.md", "slug": "a", "title": "A", "chunk_sequence": 1}}
    assert theirs.count() == 2 and [r["chunk_id"] for r in theirs.iter_rows()] == ["a#0", "a#1"]
    with pytest.raises(ValueError, match="never written"):
        theirs.sync(PAYLOADS)
    with pytest.raises(ValueError, match="chunk_id"):
        MetadataDB(db.engine, db.location, mapping=TableMapping("documents", {"title": "title"}))


def test_a_missing_table_is_unavailable_with_advice(db):
    theirs = MetadataDB(db.engine, db.location, mapping=TableMapping("nowhere", {"chunk_id": "chunk_id"}))
    with pytest.raises(DatabaseUnavailableError, match="missing"):
        theirs.rows_for(["a#0"])
    assert theirs.probe()["reachable"] is False


def test_an_unreachable_postgresql_is_database_unavailable_without_the_password():
    db = MetadataDB.open("postgresql://user:hunter2@127.0.0.1:9/db", timeout=2, create=False)
    with pytest.raises(DatabaseUnavailableError) as caught:
        db.rows_for(["a#0"])
    assert "hunter2" not in str(caught.value) and "127.0.0.1:9" in caught.value.location
    probe = db.probe()
    assert probe["reachable"] is False and "hunter2" not in str(probe)


def test_database_url_is_read_once_and_shown_redacted(tmp_path):
    from retrieval_lib import load_settings
    from retrieval_lib.errors import ConfigurationError

    settings = load_settings(env={"DATABASE_URL": "postgresql://app:s3cret@db.example:5432/rag"})
    assert settings.database_url == "postgresql://app:s3cret@db.example:5432/rag"
    assert "s3cret" not in repr(settings)
    with pytest.raises(ConfigurationError, match="DATABASE_URL"):
        load_settings(env={"DATABASE_URL": "mysql://x@y/z"})
    default = MetadataDB.from_settings(load_settings(env={"QDRANT_PATH": str(tmp_path / "store")}), create=False)
    assert default.backend == "sqlite" and default.location == str(tmp_path / "store" / "metadata.sqlite3")
