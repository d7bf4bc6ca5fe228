"""``python -m retrieval_lib serve`` as a real uvicorn process on a loopback port.

One process serves the sample book with the real MiniLM model (start-up measured
from launch to the first ``/health`` 200); one more, with the Cohere provider
pointed at the loopback fake, proves that an unreachable Qdrant is 503 end to end.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fakes.cohere_server import FakeCohere
from fakes.proxies import direct_env
from fakes.tcp import closed_port
from service_fixtures import assert_schemathesis_clean, schemathesis_run

from retrieval_lib import VectorStore
from retrieval_lib.checks.service._target import ServiceProcess
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.service.querylog import LOG_FIELDS
from retrieval_lib.service.schemas import RESULT_FIELDS
from retrieval_lib.stores.metadata import MetadataDB

#: One worker runs this module (--dist loadgroup): its service is a cold `serve` process (about 7 s of
#: CPU to import the model's stack and warm up), which every worker would start again.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_service_process")]

QUERY = "What is ROS2?"
SECRET = "sk-live-NEVER-LOGGED-77"
_SETTINGS = ("EMBEDDING_PROVIDER", "EMBEDDING_MODEL", "COHERE_API_KEY", "COHERE_BASE_URL", "QDRANT_URL",
             "QDRANT_API_KEY", "QDRANT_PATH", "QDRANT_COLLECTION_NAME", "DATABASE_URL", "QDRANT_TIMEOUT")


def _env(**settings: str) -> dict[str, str]:
    """This process's environment, direct to loopback, with every setting explicit (a developer's .env loses)."""
    env = direct_env({k: v for k, v in os.environ.items() if k not in _SETTINGS})
    return {**env, **{k: "" for k in _SETTINGS}, **settings}


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory, request):
    """A private copy of the embedded sample collection (``make sample``), its metadata rows written."""
    folder = tmp_path_factory.mktemp("served") / "store"
    source, collection = PROJECT_ROOT / ".qdrant", "physicalai"
    if not (source / "collection" / collection).is_dir():  # no `make sample` here: build it once (about 30 s)
        book = request.getfixturevalue("book")
        source, collection = book.folder, "sample_book"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".lock", "metadata.sqlite3*"))
    with VectorStore.at_path(folder) as store, MetadataDB.open(f"sqlite:///{folder / 'metadata.sqlite3'}") as db:
        db.sync_collection(store, collection)
    return folder, collection


@pytest.fixture(scope="module")
def live(sample_store, tmp_path_factory, figure_line):
    folder, collection = sample_store
    log_file = tmp_path_factory.mktemp("log") / "queries.jsonl"
    svc = ServiceProcess(env=_env(QDRANT_PATH=str(folder), QDRANT_COLLECTION_NAME=collection,
                                  EMBEDDING_PROVIDER="local"),
                         inherit_env=False, args=["--log-file", str(log_file)], startup_timeout=120)
    with svc:
        figure_line(f"service: `serve` answered /health 200 {svc.startup_seconds:.1f} s after launch "
                    "(MiniLM loaded and warmed up)")
        yield svc, log_file
        # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal, so the exit status names it
        assert svc.stop() in (0, -15) and "Finished server process" in svc.output()


@pytest.fixture(scope="module")
def http(live):
    svc, _ = live
    with httpx.Client(base_url=svc.url, timeout=30, trust_env=False,
                      limits=httpx.Limits(max_connections=100)) as client:
        yield client


def test_serve_answers_health_with_every_dependency(live, http):
    svc, _ = live
    assert svc.startup_seconds is not None
    body = http.get("/health").json()
    assert body["status"] == "ok"
    deps = body["dependencies"]
    points = deps["vector_store"]["points"]
    assert points > 100 and deps["database"]["tables"]["chunks"] == points
    assert (deps["embedder"]["provider"], deps["embedder"]["dimension"]) == ("local", 384)


def test_what_is_ros2_returns_five_results_with_every_field_and_no_warning(http):
    body = http.post("/search", json={"query": QUERY}).json()
    assert body["total_results"] == 5 and not body["warnings"]
    for item in body["results"]:
        assert all(item[f] not in (None, "") for f in RESULT_FIELDS), item
    assert "ros2" in body["results"][0]["source_path"]
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_top_k_zero_is_400_with_the_schema(http):
    response = http.post("/search", json={"query": QUERY, "top_k": 0})
    assert response.status_code == 400
    assert response.json() == {"error": {"type": "ValidationError", "message": "top_k must be at least 1 (got 0)",
                                         "status": 400}}


@pytest.mark.parametrize("n", [10, 100])
def test_concurrent_requests_give_no_error_and_the_serial_answers(http, n):
    queries = ["What is ROS2?", "Gazebo simulation", "humanoid URDF", "How do I set up ROS2?", "Isaac Sim"]
    serial = {q: http.post("/search", json={"query": q}).json()["results"] for q in queries}

    def one(i: int) -> tuple[str, int, list]:
        q = queries[i % len(queries)]
        response = http.post("/search", json={"query": q})
        return q, response.status_code, response.json().get("results", [])

    with ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(one, range(n)))
    assert [code for _, code, _ in answers] == [200] * n
    for q, _, results in answers:
        assert [r["chunk_id"] for r in results] == [r["chunk_id"] for r in serial[q]]
        assert [r["score"] for r in results] == pytest.approx([r["score"] for r in serial[q]], abs=1e-6)


def test_a_one_megabyte_body_is_413_quickly_over_http(http):
    t0 = time.perf_counter()
    response = http.post("/search", content=b"{" + b" " * (1 << 20) + b"}",
                         headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json()["error"]["type"] == "RequestTooLargeError"
    assert time.perf_counter() - t0 < 2.0
    assert http.get("/health").status_code == 200


def _new_log_lines(log_file, before: int, want: int, timeout_s: float = 5.0) -> list[bytes]:
    """The log's lines after the first ``before``, once there are ``want`` of them (or ``timeout_s`` has passed).

    The service writes a request's line when the request is over, i.e. just AFTER its response was sent (the line
    holds the time it took), so a client that reads the file at once may be a line early: wait, bounded.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        lines = [line for line in log_file.read_bytes().split(b"\n") if line][before:]
        if len(lines) >= want or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def test_the_log_file_holds_one_line_per_request_and_no_key(live, http):
    svc, log_file = live
    before = len(log_file.read_text().splitlines())
    http.post("/search", json={"query": "logged query", "top_k": 2}, headers={"Authorization": f"Bearer {SECRET}"})
    lines = _new_log_lines(log_file, before, 1)
    time.sleep(0.2)  # and no second line follows
    assert len(log_file.read_text().splitlines()) == before + 1
    last = json.loads(lines[-1])
    assert list(last) == list(LOG_FIELDS)
    assert (last["query"], last["results"], last["status"]) == ("logged query", 2, 200)
    assert SECRET not in log_file.read_text() and SECRET not in svc.output()


def test_an_unreachable_qdrant_is_503_on_search_and_health_end_to_end(tmp_path):
    key = "co-SECRET-in-env-51"
    with FakeCohere(dim=384) as fake:
        env = _env(EMBEDDING_PROVIDER="cohere", EMBEDDING_MODEL="embed-english-light-v3.0", COHERE_API_KEY=key,
                   COHERE_BASE_URL=fake.url, QDRANT_URL=f"http://127.0.0.1:{closed_port()}", QDRANT_TIMEOUT="1",
                   DATABASE_URL=f"sqlite:///{tmp_path / 'm.sqlite3'}")
        with ServiceProcess(env=env, inherit_env=False, require_healthy=False, startup_timeout=60) as svc:
            with httpx.Client(base_url=svc.url, timeout=10, trust_env=False) as client:
                search = client.post("/search", json={"query": QUERY})
                health = client.get("/health")
            assert search.status_code == 503 and search.json()["error"]["type"] == "StoreUnavailableError"
            assert health.status_code == 503
            assert health.json()["dependencies"]["vector_store"]["reachable"] is False
            assert key not in svc.output()


def test_schemathesis_finds_no_failure_against_the_real_model_and_sample_book(live, http, tmp_path, figure_line):
    svc, log_file = live
    before = len(log_file.read_text().splitlines())
    report = schemathesis_run(svc.url, tmp_path / "st", max_examples=50)
    lines = [json.loads(line) for line in log_file.read_text().splitlines()[before:]]
    statuses: dict[int, int] = {}
    for line in lines:
        statuses[line["status"]] = statuses.get(line["status"], 0) + 1
    cases = report["test_cases"]
    figure_line(f"service (MiniLM, sample book, `serve`): schemathesis {cases['generated']} test cases, {len(lines)} "
                f"requests, statuses {dict(sorted(statuses.items()))}, {cases['unique_failures']} failures")
    assert_schemathesis_clean(report)
    assert len(lines) >= cases["generated"] >= 50 and statuses.get(200, 0) >= 10 and 500 not in statuses
    assert "Traceback" not in svc.output()


def test_a_lone_surrogate_query_is_400_and_one_log_line_with_no_traceback(live, http):
    svc, log_file = live
    before = len(log_file.read_text().splitlines())
    for body in (b'{"query": "ROS2 \\ud800"}', b'{"query": "ROS2 \\udc80 nodes"}'):
        response = http.post("/search", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400 and "Unicode" in response.json()["error"]["message"]
    new = _new_log_lines(log_file, before, 2)
    log_file.read_bytes().decode("utf-8")  # still valid UTF-8
    lines = [json.loads(line) for line in new]
    assert [line["query"] for line in lines] == ["ROS2 \ud800", "ROS2 \udc80 nodes"]
    assert "Traceback" not in svc.output() and "UnicodeEncodeError" not in svc.output()
