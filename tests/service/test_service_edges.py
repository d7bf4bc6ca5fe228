"""The service's edges over a real loopback socket: slow and oversized clients, the connection limit,
``/health`` without paths, and SIGTERM draining the requests in flight.

The socket tests serve the small book with uvicorn in a thread of this process, configured as
``serve`` configures it, with 1 s read timeouts. Nothing here times a success: each test asserts what
happened (an answer 408, a closed connection, a 200 meanwhile), with waits that only bound a failure.
The SIGTERM tests run ``serve``'s uvicorn set-up in a child process whose query embedding is slow.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import corpus
import httpx
import pytest
from service_fixtures import serving, small_retriever, sqlite_db

from retrieval_lib import load_settings
from retrieval_lib.checks.service._target import free_port
from retrieval_lib.service import ServiceOptions, create_app

pytestmark = pytest.mark.usefixtures("no_proxies")

TIMEOUT = 1.0  # the read timeouts the tests configure (the default is 10 s)
OPTIONS = ServiceOptions(header_timeout=TIMEOUT, body_timeout=TIMEOUT, max_header_bytes=8 * 1024)
QUERY = {"query": "What is ROS 2?"}
TESTS = corpus.TESTS


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, int, list[dict]]]:
    """(url, port, the query log's lines so far) of the small book behind uvicorn, as ``serve`` runs it."""
    import io

    retriever = small_retriever()
    db = sqlite_db(tmp_path_factory.mktemp("edges"))
    db.sync_collection(retriever.store, retriever.collection)
    log = io.StringIO()
    app = create_app(load_settings(env={}), retriever=retriever, metadata=db, options=OPTIONS, log_stream=log)

    class Lines(list):
        def __iter__(self):  # read afresh each time
            return iter([json.loads(line) for line in log.getvalue().splitlines()])

    with serving(app, OPTIONS) as url:
        yield url, int(url.rsplit(":", 1)[1]), Lines()


def _raw(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10 * TIMEOUT)  # bounds a failure only
    if data:
        sock.sendall(data)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket timeout: a failure)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks)


def _body(answer: bytes) -> dict:
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def test_half_a_header_is_cut_off_with_408_while_search_stays_responsive(server):
    url, port, _ = server
    slow = [_raw(port, b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty") for _ in range(20)]
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:  # while they hang
        answers = [client.post("/search", json=QUERY) for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5
    for sock in slow:
        answer = _read_all(sock)  # returns only because the server closed the connection
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert _body(answer)["error"]["type"] == "RequestTimeoutError"


def test_a_stalled_body_is_408_and_logged(server):
    url, port, lines = server
    sock = _raw(port, b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n{\"query\": ")
    answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"connection: close" in answer.lower()
    error = _body(answer)["error"]
    assert error["type"] == "RequestTimeoutError" and "stopped arriving" in error["message"]
    assert [line["status"] for line in lines if line["route"] == "/search"][-1] == 408


def test_a_connection_that_sends_nothing_is_closed(server):
    _, port, _ = server
    assert _read_all(_raw(port, b"")) == b""


def test_headers_over_the_limit_are_431(server):
    url, port, _ = server
    answer = _read_all(_raw(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 10_000))
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert _body(answer)["error"]["type"] == "RequestTooLargeError"
    assert httpx.get(url + "/health", trust_env=False).status_code == 200


def test_keep_alive_requests_and_a_413_body_still_arriving_are_not_cut(server):
    url, _, _ = server
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        big = client.post("/search", content=b"{" + b" " * (1 << 20) + b"}",
                          headers={"content-type": "application/json"})
        assert big.status_code == 413
        time.sleep(1.5 * TIMEOUT)  # longer than the header timeout, shorter than keep-alive
        assert client.get("/health").status_code == 200
        assert client.post("/search", json=QUERY).status_code == 200


def test_connections_over_the_limit_get_503(tmp_path):
    retriever = small_retriever()
    options = ServiceOptions(max_connections=2)
    app = create_app(load_settings(env={}), retriever=retriever, metadata=sqlite_db(tmp_path), options=options)
    with serving(app, options) as url:
        port = int(url.rsplit(":", 1)[1])
        held = [_raw(port, b"GET /hea") for _ in range(2)]
        try:
            with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
                assert client.get("/health").status_code == 503  # uvicorn's own answer, text/plain
        finally:
            for sock in held:
                sock.close()


def test_health_names_the_collection_and_kinds_but_no_path(tmp_path):
    retriever = small_retriever()
    db = sqlite_db(tmp_path)
    db.sync_collection(retriever.store, retriever.collection)
    app = create_app(load_settings(env={}), retriever=retriever, metadata=db, options=OPTIONS)
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        body = client.get("/health").json()
    deps = body["dependencies"]
    assert deps["vector_store"]["kind"] == "memory" and deps["vector_store"]["collection"] == "book"
    assert deps["database"]["kind"] == "sqlite"
    text = json.dumps(body)
    assert str(tmp_path) not in text and "location" not in text and "sqlite:///" not in text


def test_health_of_an_embedded_store_holds_no_folder(tmp_path):
    from fastapi.testclient import TestClient

    from retrieval_lib import Retriever
    from retrieval_lib.stores import open_store

    folder = tmp_path / "store"
    folder.mkdir()  # a store without the collection (a folder that is not there is refused when it is opened)
    settings = load_settings(env={"QDRANT_PATH": str(folder)})
    retriever = Retriever(open_store(settings), small_retriever().embedder, "absent")
    db = sqlite_db(tmp_path)
    app = create_app(settings, retriever=retriever, metadata=db, options=ServiceOptions(warm_up=False))
    with TestClient(app) as client:
        health = client.get("/health")
        search = client.post("/search", json=QUERY)
    assert health.status_code == 503 and search.status_code == 503  # the collection is missing: said, no path
    assert health.json()["dependencies"]["vector_store"]["kind"] == "embedded"
    for text in (health.text, search.text):
        assert str(tmp_path) not in text, text
    assert "absent" in search.json()["error"]["message"]
    retriever.close()


# --------------------------------------------------------------------------- SIGTERM

@contextmanager
def slow_service(delay: float, shutdown_timeout: int) -> Iterator[tuple[subprocess.Popen, str, list[str]]]:
    """``serve``'s uvicorn set-up in a child process, its query embedding ``delay`` s; yields (process, url,
    the lines of its stdout so far)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    code = f"import service_fixtures as f; f.serve_slow({port}, {delay}, {shutdown_timeout})"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=TESTS, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()  # type: ignore[union-attr]
            try:
                if httpx.get(url + "/health", trust_env=False, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield proc, url, out
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _wait_for(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.02)


#: Seconds a query batch of the SIGTERM test is embedded: the window in which the test sees the last batch start and
#: sends its signal, far longer than that takes on a loaded machine (with 1 s, a late signal could find nothing in
#: flight), and shorter than the 10 s the service gives the requests in flight.
IN_FLIGHT_S = 3.0


@pytest.mark.slow
def test_sigterm_lets_the_requests_in_flight_finish(figure_line):
    with slow_service(delay=IN_FLIGHT_S, shutdown_timeout=10) as (proc, url, out):
        def one(i: int) -> httpx.Response:
            return httpx.post(url + "/search", json={"query": f"ROS 2 nodes {i}"}, trust_env=False, timeout=30)

        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(one, i) for i in range(4)]
            # every query has reached the embedder (the first alone, the others queued behind it as one
            # batch): at least three requests are in flight, their batch being embedded for IN_FLIGHT_S
            _wait_for(lambda: sum(int(line.split()[1]) for line in out if line.startswith("embedding")) == 4)
            in_flight = sum(not f.done() for f in futures)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            # the premise: the last batch (how the 4 split into batches depends on when they arrive) is still being
            # embedded when the signal lands, so there is something to let finish
            assert in_flight >= 1, f"{in_flight} request(s) in flight at SIGTERM: nothing left to finish"
            answers = [f.result() for f in futures]
        code = proc.wait(30)
        seconds = time.monotonic() - t0
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    assert [a.status_code for a in answers] == [200] * 4
    assert all(a.json()["total_results"] == 5 for a in answers)
    assert code in (0, -signal.SIGTERM) and "Traceback" not in stderr
    logged = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert sorted(line["status"] for line in logged if line["route"] == "/search") == [200] * 4
    figure_line(f"service: SIGTERM with {in_flight} requests in flight (embedding {IN_FLIGHT_S:g} s a batch): "
                f"4 answered 200, exit in {seconds:.1f} s")


def test_sigterm_exits_within_the_bound_when_a_request_hangs():
    with slow_service(delay=60.0, shutdown_timeout=1) as (proc, url, out):
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(httpx.post, url + "/search", json=QUERY, trust_env=False, timeout=60)
            _wait_for(lambda: any(line.startswith("embedding") for line in out))
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(15)  # bounded by shutdown_timeout (1 s), not by the 60 s
            answer = future.result()
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    assert code in (0, -signal.SIGTERM)
    # the request cut short is told so, in the schema, and logged; no traceback
    assert answer.status_code == 503 and answer.json()["error"]["type"] == "ShuttingDown"
    logged = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert [(line["status"], line["error_type"]) for line in logged if line["route"] == "/search"] == [
        (503, "ShuttingDown")]
    assert "Traceback" not in stderr
