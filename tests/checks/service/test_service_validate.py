"""Validating a seed-003 service by URL (notebook 08's package code), and the metadata consistency check."""

from __future__ import annotations

import io

import pytest
from corpus import make_payload
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from service_fixtures import SERVICE_DOCS, serving, small_retriever, sqlite_db

from retrieval_lib import load_settings
from retrieval_lib.checks.service import _consistency as meta_check
from retrieval_lib.checks.service._client import ApiClient, error_view, health_dependencies, ranking_of
from retrieval_lib.checks.service._validate import record, validate_service
from retrieval_lib.service import ServiceOptions, create_app
from retrieval_lib.workbook.report import NotebookReport

pytestmark = pytest.mark.usefixtures("no_proxies")

QUERIES = ["What is ROS 2?", "Gazebo simulation", "launch files"]
# three copies of the book: enough chunks for top_k 50 to be capped at 20
DOCS = [{**d, "id": 100 * k + d["id"], "source_file": f"copy{k}/{d['source_file']}"}
        for k in range(3) for d in SERVICE_DOCS]


def _gates(report: NotebookReport) -> dict[str, bool]:
    return {g.name: g.passed for g in report.gates}


def test_our_service_meets_every_gate_and_ranks_as_the_library(tmp_path):
    retriever = small_retriever(docs=DOCS)
    db = sqlite_db(tmp_path)
    db.sync_collection(retriever.store, retriever.collection)
    app = create_app(load_settings(env={}), retriever=retriever, metadata=db, log_stream=io.StringIO())
    with serving(app) as url, ApiClient(url) as client:
        result = validate_service(client, QUERIES, library=retriever, repeats=2, concurrency=(10,), latency_rounds=2)
    report = NotebookReport("08_api", "test", tmp_path / "run")
    record(report, result, max_overhead_ms=1000)
    assert all(_gates(report).values()), report.summary()
    assert "the golden queries rank as the library does" in _gates(report)
    assert len(result.http_ms) == len(result.library_ms) == 2 * len(QUERIES)
    assert report.metrics["http_p95_ms"] >= report.metrics["http_p50_ms"] > 0


def _foreign_app(*, flat: bool) -> FastAPI:
    """A team's own seed-003 service: flat error and health envelopes (``flat``), or FastAPI's defaults."""
    app = FastAPI()
    rows = [{"chunk_id": f"c{i}", "snippet": "text", "source_path": "a.md", "slug": "a", "title": "A",
             "score": 1 - i / 100} for i in range(20)]

    @app.get("/health")
    def health():
        return {"status": "ok", "qdrant": True, "postgres": True} if flat else {"status": "ok"}

    @app.post("/search")
    async def search(request: Request):
        try:
            body = await request.json()
        except ValueError:
            body = None
        ok = isinstance(body, dict) and isinstance(body.get("query"), str) and body["query"].strip() \
            and len(body["query"]) <= 500 and isinstance(body.get("top_k", 5), int) and body.get("top_k", 5) > 0
        if not ok:
            content = {"error": "validation_error", "message": "bad request"} if flat else {"detail": "bad"}
            return JSONResponse(content, status_code=400 if flat else 422)
        return {"query": body["query"], "results": rows[:min(body.get("top_k", 5), 20)]}

    return app


def test_a_foreign_service_with_flat_envelopes_is_judged_by_the_seed_not_by_our_shapes(tmp_path):
    with serving(_foreign_app(flat=True)) as url, ApiClient(url) as client:
        result = validate_service(client, QUERIES, repeats=2, concurrency=(10,), latency_rounds=1)
    report = NotebookReport("08_api", "test", tmp_path / "run")
    record(report, result, max_overhead_ms=5)
    gates = _gates(report)
    assert all(gates.values()), report.summary()
    assert "the golden queries rank as the library does" not in gates  # no library to compare with
    assert "library_p50_ms" not in report.metrics and result.dependencies == {"qdrant": True, "postgres": True}


def test_a_service_with_fastapis_defaults_fails_the_health_and_error_gates(tmp_path):
    with serving(_foreign_app(flat=False)) as url, ApiClient(url) as client:
        result = validate_service(client, QUERIES, repeats=1, concurrency=(), latency_rounds=1)
    report = NotebookReport("08_api", "test", tmp_path / "run")
    record(report, result, max_overhead_ms=5)
    gates = _gates(report)
    assert not gates["/health answers 200 and names its dependencies"]
    assert not gates["invalid input is 400 with an error type and message"]
    assert gates["every result carries the seed-003 fields"]
    assert gates["top_k: 5 by default, 3 when asked, capped at 20"]


def test_an_unreachable_url_fails_every_gate_without_raising(tmp_path):
    from fakes.tcp import closed_port

    with ApiClient(f"http://127.0.0.1:{closed_port()}", timeout=2) as client:
        result = validate_service(client, QUERIES[:1], repeats=1, concurrency=(10,), latency_rounds=1)
    report = NotebookReport("08_api", "test", tmp_path / "run")
    record(report, result, max_overhead_ms=5)
    assert not any(_gates(report).values())
    assert result.health.status == 0


@pytest.mark.parametrize(("body", "view"), [
    ({"error": {"type": "ValidationError", "message": "m", "status": 400}},
     {"type": "ValidationError", "message": "m", "status": 400}),
    ({"error": "validation_error", "message": "m"}, {"type": "validation_error", "message": "m", "status": None}),
    ({"type": "upstream_error", "message": "m", "status": 502},
     {"type": "upstream_error", "message": "m", "status": 502}),
    ({"detail": [{"msg": "field required"}]}, None),
    ({"error": {"message": "no type"}}, None),
    ("plain text", None),
])
def test_error_bodies_of_the_common_shapes_are_read(body, view):
    assert error_view(body) == view


def test_health_bodies_of_the_common_shapes_name_their_dependencies():
    ours = {"status": "ok", "dependencies": {"vector_store": {"reachable": True}, "database": {"reachable": False}}}
    assert health_dependencies(ours) == {"vector_store": True, "database": False}
    assert health_dependencies({"status": "degraded", "qdrant": True, "postgres": False}) == {
        "qdrant": True, "postgres": False}
    assert health_dependencies({"status": "ok", "checks": {"db": "up", "cache": {"status": "down"}}}) == {
        "db": True, "cache": False}
    assert health_dependencies({"status": "ok"}) == {}
    assert ranking_of({"results": [{"chunk_id": "a", "score": 0.5}]}) == [("a", 0.5)]


def test_the_consistency_check_counts_missing_orphan_and_differing_rows(tmp_path):
    retriever = small_retriever()
    db = sqlite_db(tmp_path)
    db.sync_collection(retriever.store, retriever.collection)
    clean = meta_check.compare_store(retriever.store, retriever.collection, db)
    assert clean.consistent and clean.points == clean.rows == len(SERVICE_DOCS)

    payloads = [make_payload(d, "bow-64") for d in SERVICE_DOCS]
    drifted = {payloads[0]["source_file"], payloads[1]["source_file"]}
    db.sync([{**payloads[0], "title": "Renamed"}]  # differs
            + [p for p in payloads if p["source_file"] not in drifted]  # payloads[1]'s file: a point without its row
            + [{**payloads[2], "chunk_id": "gone.md#0", "source_file": "gone.md"}])  # an orphan
    broken = meta_check.compare_store(retriever.store, retriever.collection, db)
    assert (broken.points_without_row, broken.rows_without_point, broken.differing_fields) == (1, 1, {"title": 1})
    assert any("Renamed" in e for e in broken.examples) and any("gone.md#0" in e for e in broken.examples)

    report = NotebookReport("08_api", "test", tmp_path / "run")
    meta_check.record(report, clean)
    meta_check.record(report, broken)
    assert [g.passed for g in report.gates] == [True, False]
    assert report.metrics["metadata_points_without_row"] == 1


def test_options_reach_the_app(tmp_path):
    retriever = small_retriever()
    app = create_app(load_settings(env={}), retriever=retriever, metadata=sqlite_db(tmp_path),
                     options=ServiceOptions(query_max_chars=10, max_body_bytes=100), log_stream=io.StringIO())
    with serving(app) as url, ApiClient(url) as client:
        assert client.search({"query": "a" * 11}).status == 400
        assert client.search({"query": "a" * 10}).status == 200
        assert client.search({"query": "a", "section": "x" * 200}).status == 413


def test_bad_api_urls_or_stores_are_configuration_errors(tmp_path):
    from retrieval_lib.checks.service.api import own_service
    from retrieval_lib.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="api_url"):
        ApiClient("ftp://example.com")
    with pytest.raises(ConfigurationError, match="make sample"), own_service(
            load_settings(env={"QDRANT_PATH": str(tmp_path / "none")})):
        pass

