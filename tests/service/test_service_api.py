"""The retrieval API in-process (app factory + TestClient): answers, the 400 contract, 413, the log, the join."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa
from corpus import make_payload
from service_fixtures import SERVICE_DOCS, client_for, small_retriever, sqlite_db

from retrieval_lib.service import ServiceOptions
from retrieval_lib.service.join import MISSING_ROWS_WARNING
from retrieval_lib.service.querylog import LOG_FIELDS
from retrieval_lib.service.schemas import RESULT_FIELDS

QUERY = "What is ROS 2?"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    retriever = small_retriever()
    db = sqlite_db(tmp_path_factory.mktemp("api"))
    db.sync_collection(retriever.store, retriever.collection)
    with client_for(retriever, db) as s:
        yield s
    db.close()
    retriever.close()


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message", "status"}
    assert body["error"]["status"] == status and body["error"]["message"]
    return body["error"]


def test_search_returns_five_results_with_every_field_in_the_librarys_order(served):
    response = served.client.post("/search", json={"query": QUERY})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"query", "results", "total_results", "took_ms", "warnings"}
    assert body["query"] == QUERY and body["total_results"] == len(body["results"]) == 5
    for item in body["results"]:
        assert set(item) == set(RESULT_FIELDS)
        assert all(item[f] not in (None, "") for f in RESULT_FIELDS), item
    library = served.retriever.search(QUERY)
    assert [r["chunk_id"] for r in body["results"]] == [r.chunk_id for r in library.results]
    assert [r["score"] for r in body["results"]] == pytest.approx([r.similarity_score for r in library.results])
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert body["warnings"] == [w for w in library.warnings]


def test_top_k_three_and_repeats_give_identical_answers(served):
    answers = [served.client.post("/search", json={"query": "launch files", "top_k": 3}).json() for _ in range(3)]
    assert len(answers[0]["results"]) == 3
    assert all(a["results"] == answers[0]["results"] for a in answers)


def test_top_k_above_twenty_is_capped_with_a_warning(tmp_path):
    docs = [{**d, "id": 100 * k + d["id"], "source_file": f"copy{k}/{d['source_file']}"}
            for k in range(3) for d in SERVICE_DOCS]
    retriever = small_retriever(docs=docs)
    with client_for(retriever, sqlite_db(tmp_path)) as s:
        body = s.client.post("/search", json={"query": "robot", "top_k": 50}).json()
    assert body["total_results"] == 20
    assert any("capped at 20" in w for w in body["warnings"])


@pytest.mark.parametrize(("body", "says"), [
    ({"query": ""}, "empty"),
    ({"query": "   \n\t"}, "empty"),
    ({"query": "x" * 501}, "at most 500"),
    ({"query": "ok", "top_k": 0}, "top_k"),
    ({"query": "ok", "top_k": -3}, "top_k"),
    ({"query": "ok", "top_k": "5"}, "top_k"),
    ({"query": "ok", "top_k": 2.5}, "top_k"),
    ({"query": "ok", "top_k": True}, "top_k"),
    ({"query": 42}, "query"),
    ({"query": None}, "query"),
    ({"top_k": 3}, "'query' is required"),
    ({"query": "ok", "similarity_threshold": 1.5}, "similarity_threshold"),
    ({"query": "ok", "similarity_threshold": -0.1}, "similarity_threshold"),
    ({"query": "ok", "similarity_threshold": "high"}, "similarity_threshold"),
    ({"query": "ok", "limit": 5}, "unknown field 'limit'"),
    ({"query": "ok", "source_prefix": ""}, "source_prefix"),
    ([{"query": "ok"}], "JSON object"),
    ("What is ROS2?", "JSON object"),
])
def test_invalid_input_is_400_with_the_schema_and_a_message_naming_the_fault(served, body, says):
    error = _error(served.client.post("/search", json=body), 400)
    assert error["type"] == "ValidationError"
    assert says in error["message"]


@pytest.mark.parametrize(("content", "headers", "says"), [
    (b'{"query": "What is', {"content-type": "application/json"}, "not valid JSON"),
    (b"", {"content-type": "application/json"}, "required"),
    (b'{"query": NaN}', {"content-type": "application/json"}, "query"),
    (b'{"query": "ok", "top_k": 1e999}', {"content-type": "application/json"}, "top_k"),
    (b'{"query": "\\ud800 a lone surrogate"}', {"content-type": "application/json"}, "Unicode"),
    ('{"query": "\u200b\u200b\ufeff"}'.encode(), {"content-type": "application/json"}, "no visible characters"),
    (b'{"query": "\\ufeff\\u200d\\u2060 "}', {"content-type": "application/json"}, "no visible characters"),
])
def test_malformed_bodies_are_400_never_422(served, content, headers, says):
    error = _error(served.client.post("/search", content=content, headers=headers), 400)
    assert error["type"] == "ValidationError" and says in error["message"]


@pytest.mark.parametrize("headers", [{"content-type": "text/plain"},
                                     {"content-type": "application/x-www-form-urlencoded"},
                                     {"content-type": "multipart/form-data; boundary=x"}, {}])
def test_a_body_that_is_not_sent_as_json_is_415(served, headers):
    error = _error(served.client.post("/search", content=b'{"query": "ok"}', headers=headers), 415)
    assert error["type"] == "UnsupportedMediaTypeError" and "application/json" in error["message"]
    ok = served.client.post("/search", content=b'{"query": "ok"}',
                            headers={"content-type": "application/vnd.api+json; charset=utf-8"})
    assert ok.status_code == 200


def test_a_one_megabyte_body_is_413_before_it_is_read(served):
    response = served.client.post("/search", content=b'{"query": "' + b"a" * (1 << 20) + b'"}',
                                  headers={"content-type": "application/json"})
    assert _error(response, 413)["type"] == "RequestTooLargeError"

    # the same megabyte, handed over only as the app reads it: counting what was pulled shows it was refused
    # on its Content-Length, before a single byte was read (the test client reads a body on the app's first
    # receive), rather than by a stopwatch
    parts = [b'{"query": "', *[b"a" * 4096] * 256, b'"}']
    pulled: list[int] = []

    def counted():
        for part in parts:
            pulled.append(len(part))
            yield part

    response = served.client.post("/search", content=counted(), headers={
        "content-type": "application/json", "content-length": str(sum(map(len, parts)))})
    assert _error(response, 413)["type"] == "RequestTooLargeError"
    assert pulled == []

    def chunks():  # no Content-Length: the limit is applied to the bytes as they arrive
        yield b'{"query": "'
        for _ in range(40):
            yield b"a" * 4096
        yield b'"}'

    response = served.client.post("/search", content=chunks(), headers={"content-type": "application/json"})
    assert _error(response, 413)["type"] == "RequestTooLargeError"


def test_unknown_routes_and_methods_keep_the_schema(served):
    assert _error(served.client.get("/nothing"), 404)["type"] == "NotFound"
    assert _error(served.client.get("/search"), 405)["type"] == "MethodNotAllowed"


def test_the_query_log_has_one_line_per_request_and_never_a_key(served):
    served.log.seek(0)
    served.log.truncate()
    secret = "sk-live-DO-NOT-LOG-9f8e7d"
    headers = {"Authorization": f"Bearer {secret}", "X-Api-Key": secret, "Cookie": f"session={secret}"}
    ok = served.client.post("/search", json={"query": QUERY, "top_k": 2}, headers=headers)
    bad = served.client.post("/search", json={"query": ""}, headers=headers)
    served.client.get("/health", headers=headers)
    assert secret not in served.log.getvalue()
    lines = served.log_lines()
    assert [line["route"] for line in lines] == ["/search", "/search", "/health"]
    assert all(list(line) == list(LOG_FIELDS) for line in lines)
    first, second, _ = lines
    assert first["request_id"] == ok.headers["x-request-id"] and bad.headers["x-request-id"] == second["request_id"]
    assert (first["status"], first["query"], first["top_k"], first["results"], first["error_type"]) == (
        200, QUERY, 2, 2, None)
    assert (second["status"], second["error_type"]) == (400, "ValidationError")
    assert all(isinstance(line["took_ms"], float) and line["time"] for line in lines)


def test_health_lists_each_dependency_with_its_facts(served):
    response = served.client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    deps = body["dependencies"]
    assert set(deps) == {"vector_store", "database", "embedder"}
    assert deps["vector_store"]["reachable"] and deps["vector_store"]["points"] == len(SERVICE_DOCS)
    assert deps["database"]["reachable"] and deps["database"]["tables"] == {"chunks": len(SERVICE_DOCS)}
    assert deps["embedder"]["model"] == "bow-64" and deps["embedder"]["dimension"] == 64
    assert all(isinstance(d["latency_ms"], float) for d in (deps["vector_store"], deps["database"]))


def test_hits_without_rows_are_returned_from_the_payload_and_named_in_a_warning(tmp_path):
    retriever = small_retriever()
    db = sqlite_db(tmp_path)
    kept = [make_payload(d, "bow-64") for d in SERVICE_DOCS[:2]]
    db.sync(kept)
    with db.engine.begin() as conn:  # the row is the metadata's source of truth: it wins over the payload
        conn.execute(sa.text("UPDATE chunks SET title = 'Title from the row' WHERE chunk_id = :c"),
                     {"c": kept[0]["chunk_id"]})
    with client_for(retriever, db) as s:
        body = s.client.post("/search", json={"query": "ROS 2 nodes topics publisher", "top_k": 5}).json()
    by_id = {r["chunk_id"]: r for r in body["results"]}
    assert len(by_id) == 5 and kept[0]["chunk_id"] in by_id
    assert by_id[kept[0]["chunk_id"]]["title"] == "Title from the row"
    rowless = [c for c in by_id if c not in {p["chunk_id"] for p in kept}]
    warning = next(w for w in body["warnings"] if w.startswith(MISSING_ROWS_WARNING))
    assert all(c in warning for c in rowless) and kept[0]["chunk_id"] not in warning
    assert all(by_id[c]["title"] and by_id[c]["source_path"] for c in rowless)


def test_one_search_reads_the_database_once(served):
    statements: list[str] = []

    def record(conn, cursor, statement, *args):
        statements.append(statement)

    sa.event.listen(served.metadata.engine, "before_cursor_execute", record)
    try:
        assert served.client.post("/search", json={"query": QUERY, "top_k": 10}).status_code == 200
    finally:
        sa.event.remove(served.metadata.engine, "before_cursor_execute", record)
    assert len([s for s in statements if "chunks" in s]) == 1


def test_a_bug_is_a_500_with_the_schema_and_no_detail(tmp_path):
    retriever = small_retriever()

    def broken(*args, **kwargs):
        raise RuntimeError("token=sk-secret-in-a-bug")

    retriever.search = retriever.search_many = broken  # type: ignore[method-assign]  # lone and batched paths
    with client_for(retriever, sqlite_db(tmp_path)) as s:
        response = s.client.post("/search", json={"query": QUERY})
        error = _error(response, 500)
        assert error["type"] == "InternalError" and "sk-secret" not in response.text
        assert "Traceback" not in response.text
        assert s.log_lines()[-1]["error_type"] == "InternalError"
        assert s.client.get("/health").status_code == 200


def test_the_openapi_schema_publishes_400_not_422_and_refuses_unknown_fields(served):
    schema = served.client.get("/openapi.json").json()
    text = json.dumps(schema)
    assert '"422"' not in text and "HTTPValidationError" not in text
    responses = schema["paths"]["/search"]["post"]["responses"]
    assert {"200", "400", "413", "502", "503"} <= set(responses)
    request = schema["components"]["schemas"]["SearchRequest"]
    assert request["additionalProperties"] is False and request["required"] == ["query"]


def test_the_openapi_schema_publishes_every_limit_the_service_enforces(tmp_path):
    retriever = small_retriever()
    with client_for(retriever, sqlite_db(tmp_path), options=ServiceOptions(query_max_chars=200)) as s:
        schema = s.client.get("/openapi.json").json()
    responses = schema["paths"]["/search"]["post"]["responses"]
    assert {"200", "400", "408", "413", "415", "500", "502", "503"} <= set(responses)
    for status, response in responses.items():  # the error schema on every error status
        if status != "200":
            assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorAnswer"}
    props = schema["components"]["schemas"]["SearchRequest"]["properties"]
    query = props["query"]
    assert (query["minLength"], query["maxLength"]) == (1, 200)  # the app's own limit
    assert re.search(query["pattern"], "\u200b\ufeff \u2060") is None and re.search(query["pattern"], "\u200bROS")
    assert props["top_k"]["minimum"] == 1 and "maximum" not in props["top_k"] and props["top_k"]["x-capped-at"] == 20
    number = next(b for b in props["similarity_threshold"]["anyOf"] if b.get("type") == "number")
    assert (number["minimum"], number["maximum"]) == (0, 1)
    for name in ("source_prefix", "section"):
        text = next(b for b in props[name]["anyOf"] if b.get("type") == "string")
        assert (text["minLength"], text["maxLength"]) == (1, 500) and re.search(text["pattern"], " \t") is None
