"""Whole-collection scans: only the fields asked for, in few large pages, and one payload scan shared per run.

A recording wrapper on the store's ``scroll`` (and on the client's, for pages)
shows what every scan asks for; the shared scan is checked on an embedded store
in ``tmp_path`` (the project's own ``.qdrant`` is never opened).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import DOCS, make_payload
from fakes.embedders import FakeEmbedder
from qdrant_client import models

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import collection_health as health
from retrieval_lib.checks.retrieval import source_coverage as coverage
from retrieval_lib.errors import ValidationError
from retrieval_lib.ingest import ingest, pipeline
from retrieval_lib.models import PAYLOAD_FIELDS
from retrieval_lib.stores import scan as scanning

pytestmark = pytest.mark.timeout(60)

MODEL = "fixed-model"
COLL = "c"


def fill(store: VectorStore, payloads: list[dict[str, Any]], *, start: int = 1, create: bool = True) -> None:
    if create:
        store.create_collection(COLL, 4)
    store.upsert(COLL, [models.PointStruct(id=start + i, vector=[1.0, 0.0, 0.0, float(i % 3)], payload=p)
                        for i, p in enumerate(payloads)])


def book_payloads() -> list[dict[str, Any]]:
    return [make_payload(d, MODEL, heading_path=["x"], file_hash="h") for d in DOCS]


class Recorder:
    """Records every ``store.scroll`` call's arguments and every page the client is asked for."""

    def __init__(self, store: VectorStore) -> None:
        self.calls: list[dict[str, Any]] = []
        self.pages: list[int] = []
        scroll, client_scroll = store.scroll, store.client.scroll

        def recorded_scroll(collection: str, **kwargs: Any):
            self.calls.append(kwargs)
            return scroll(collection, **kwargs)

        def recorded_page(*args: Any, **kwargs: Any):
            self.pages.append(kwargs["limit"])
            return client_scroll(*args, **kwargs)

        store.scroll = recorded_scroll  # type: ignore[method-assign]
        store.client.scroll = recorded_page


@pytest.fixture
def memory_store():
    store = VectorStore.in_memory()
    yield store
    store.close()


@pytest.fixture
def disk_store(tmp_path):
    store = VectorStore.at_path(tmp_path / ".qdrant")
    yield store
    store.close()


# --------------------------------------------------------------------------- columns, fields, pages
def test_read_columns_returns_the_fields_asked_for_in_scroll_order(memory_store):
    fill(memory_store, [{"a": 1, "b": "x"}, {"a": 2}, {"b": "z", "c": "never read"}])
    rec = Recorder(memory_store)
    cols = scanning.read_columns(memory_store, COLL, ["a", "b"])
    assert cols.ids == ["1", "2", "3"] and len(cols) == 3
    assert cols["a"] == [1, 2, None] and cols["b"] == ["x", None, "z"] and "c" not in cols.values
    assert rec.calls == [{"with_payload": ["a", "b"], "with_vectors": False, "batch_size": scanning.MIN_PAGE}]


def test_a_whole_pass_costs_at_most_local_pages_requests(memory_store, monkeypatch):
    monkeypatch.setattr(scanning, "MIN_PAGE", 10)
    fill(memory_store, [{"n": i} for i in range(100)])
    rec = Recorder(memory_store)
    cols = scanning.read_columns(memory_store, COLL, ["n"])
    assert sorted(cols["n"]) == list(range(100))
    assert rec.pages == [25] * scanning.LOCAL_PAGES  # not 100 / 10 pages, each re-sorting every id
    assert scanning.page_size(VectorStore(None, "qdrant.test", kind="server"), 10**6) == scanning.SERVER_PAGE


@pytest.mark.parametrize("fields", [[], "source_file", ["ok", ""]])
def test_read_columns_refuses_a_field_list_that_is_not_one(memory_store, fields):
    with pytest.raises(ValidationError) as err:
        scanning.read_columns(memory_store, COLL, fields)
    assert err.value.field == "fields"


def test_scan_sources_and_scan_payloads_read_only_their_fields(memory_store):
    fill(memory_store, book_payloads())
    rec = Recorder(memory_store)
    sources = coverage.scan_sources(memory_store, COLL)
    scan = health.scan_payloads(memory_store, COLL, expected_model=MODEL)
    assert [c["with_payload"] for c in rec.calls] == [coverage.SCAN_FIELDS, list(PAYLOAD_FIELDS)]
    assert not any(c["with_vectors"] for c in rec.calls)
    assert "heading_path" not in PAYLOAD_FIELDS and "file_hash" not in PAYLOAD_FIELDS  # extras are left unread
    assert sum(s.chunks for s in sources) == scan.points == len(DOCS)
    assert scan.metadata_completeness == 100.0 and scan.foreign_model_points == 0


def test_the_payload_tally_counts_missing_fields_duplicates_and_models(memory_store):
    payloads = book_payloads()
    payloads[0]["title"] = ""
    payloads[1]["content_hash"] = payloads[2]["content_hash"]
    payloads[3]["model_version"] = "other-model"
    del payloads[4]["source_file"]
    fill(memory_store, payloads)
    scan = health.scan_payloads(memory_store, COLL, expected_model=MODEL, batch_size=3)
    assert scan.points == len(DOCS) and scan.complete_points == len(DOCS) - 2
    assert scan.field_present["title"] == len(DOCS) - 1 and scan.field_present["source_file"] == len(DOCS) - 1
    assert list(scan.duplicate_hashes.values()) == [2] and scan.foreign_model_points == 1
    assert scan.model_versions == {MODEL: len(DOCS) - 1, "other-model": 1}
    assert scan.points_per_file["(none)"] == 1 and list(scan.points_per_file) == sorted(scan.points_per_file)


def test_ingest_reads_its_diff_fields_in_large_pages(memory_store, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n" + " ".join(f"Sentence {i} about robots." for i in range(60)))
    embedder = FakeEmbedder.hashed()
    ingest(memory_store, embedder, COLL, docs, base_url="https://docs.test", progress=False)
    rec = Recorder(memory_store)
    summary = ingest(memory_store, embedder, COLL, docs, base_url="https://docs.test", progress=False)
    assert summary.files_unchanged == 1
    # one small page to tell that this ingest wrote the collection, then the diff in one large page
    assert [c["with_payload"] for c in rec.calls] == [["source_file", "chunk_sequence"],
                                                       ["source_file", "file_hash", "chunk_sequence",
                                                        "total_chunks", "model_version"]]
    assert rec.pages == [pipeline.OWNER_SAMPLE, scanning.MIN_PAGE]


# --------------------------------------------------------------------------- one payload scan per run
def test_the_second_notebook_reuses_the_scan_of_the_first(disk_store, tmp_path):
    fill(disk_store, book_payloads())
    run_dir = tmp_path / "run"
    first = health.scan_payloads(disk_store, COLL, expected_model=MODEL, run_dir=run_dir)
    rec = Recorder(disk_store)
    second = health.scan_payloads(disk_store, COLL, expected_model="another-model", run_dir=run_dir)
    assert rec.calls == []  # no scroll: read from the run folder
    assert second.points == first.points and second.field_present == first.field_present
    assert second.points_per_file == first.points_per_file and second.duplicate_hashes == first.duplicate_hashes
    assert first.foreign_model_points == 0 and second.foreign_model_points == len(DOCS)  # model applied on reuse
    files = list((run_dir / scanning.SHARED_FOLDER).iterdir())
    assert [f.name[:14] for f in files] == ["scan-payloads-"] and files[0].suffix == ".json"  # no temporary file
    stored = json.loads(files[0].read_text())
    assert stored["key"]["points"] == len(DOCS) and stored["key"]["fields"] == list(PAYLOAD_FIELDS)


def test_a_scan_is_recomputed_when_points_were_added(disk_store, tmp_path):
    fill(disk_store, book_payloads())
    before = health.scan_payloads(disk_store, COLL, run_dir=tmp_path)
    fill(disk_store, book_payloads()[:2], start=100, create=False)  # two more points, same texts
    rec = Recorder(disk_store)
    after = health.scan_payloads(disk_store, COLL, run_dir=tmp_path)
    assert len(rec.calls) == 1 and after.points == before.points + 2 and after.extra_copies == 2


def test_a_scan_is_recomputed_when_a_payload_changed_but_the_count_did_not(disk_store, tmp_path):
    payloads = book_payloads()
    fill(disk_store, payloads)
    before = health.scan_payloads(disk_store, COLL, run_dir=tmp_path)
    disk_store.upsert(COLL, [models.PointStruct(id=1, vector=[1.0, 0.0, 0.0, 0.0],
                                                payload=payloads[0] | {"section_title": ""})])
    after = health.scan_payloads(disk_store, COLL, run_dir=tmp_path)
    assert after.points == before.points and after.complete_points == before.complete_points - 1


def test_a_stored_scan_under_another_key_or_unreadable_is_recomputed(disk_store, tmp_path):
    fill(disk_store, book_payloads())
    runs: list[str] = []

    def compute(tag: str):
        return lambda: runs.append(tag) or {"tag": tag}

    assert scanning.shared(tmp_path, "t", disk_store, COLL, ["a"], compute("1")) == ({"tag": "1"}, False)
    assert scanning.shared(tmp_path, "t", disk_store, COLL, ["a"], compute("2")) == ({"tag": "1"}, True)
    assert scanning.shared(tmp_path, "t", disk_store, COLL, ["a", "b"], compute("3")) == ({"tag": "3"}, False)
    (path,) = (tmp_path / scanning.SHARED_FOLDER).iterdir()
    path.write_text("{half a file")
    assert scanning.shared(tmp_path, "t", disk_store, COLL, ["a", "b"], compute("4")) == ({"tag": "4"}, False)
    assert runs == ["1", "3", "4"]


def test_kept_reads_what_another_notebook_shared_until_the_collection_changes(disk_store, tmp_path):
    fill(disk_store, book_payloads())
    assert scanning.kept(tmp_path, "t", disk_store, COLL, ["a"]) is None  # nothing kept yet
    scanning.shared(tmp_path, "t", disk_store, COLL, ["a"], lambda: {"tag": "10"})
    assert scanning.kept(tmp_path, "t", disk_store, COLL, ["a"]) == {"tag": "10"}
    assert scanning.kept(None, "t", disk_store, COLL, ["a"]) is None  # an interactive kernel: no run folder
    fill(disk_store, book_payloads()[:1], start=100, create=False)
    assert scanning.kept(tmp_path, "t", disk_store, COLL, ["a"]) is None  # the collection changed since
    assert [f.suffix for f in (tmp_path / scanning.SHARED_FOLDER).iterdir()] == [".json"]  # kept() wrote nothing


def test_nothing_is_shared_without_a_run_folder_or_a_revision(memory_store, tmp_path):
    fill(memory_store, book_payloads())
    runs: list[int] = []
    for run_dir in ("", None, tmp_path):  # an in-memory store has no revision: it dies with its process
        scanning.shared(run_dir, "t", memory_store, COLL, ["a"], lambda: runs.append(1) or {})
    assert len(runs) == 3 and not (tmp_path / scanning.SHARED_FOLDER).exists()


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
def test_a_server_revision_follows_the_indexed_facets(tmp_path):
    from qdrant_client import QdrantClient

    store = VectorStore(QdrantClient(location=":memory:"), "qdrant.test", kind="server")
    payloads = book_payloads()
    fill(store, payloads)
    first = scanning.revision(store, COLL, len(payloads))
    assert first is not None and first == scanning.revision(store, COLL, len(payloads))
    store.upsert(COLL, [models.PointStruct(id=1, vector=[1.0, 0.0, 0.0, 0.0],
                                           payload=payloads[0] | {"content_hash": "edited"})])
    assert scanning.revision(store, COLL, len(payloads)) not in (None, first)
    store.close()


def test_a_scan_changed_during_the_scan_is_not_stored(disk_store, tmp_path):
    fill(disk_store, book_payloads())

    def compute_while_writing() -> dict[str, Any]:
        fill(disk_store, book_payloads()[:1], start=500, create=False)
        return {"stale": True}

    assert scanning.shared(tmp_path, "t", disk_store, COLL, ["a"], compute_while_writing)[1] is False
    assert not list(Path(tmp_path / scanning.SHARED_FOLDER).glob("*.json"))
