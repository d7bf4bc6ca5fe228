"""VectorStore failure modes against loopback sockets, a locked folder and the CLI.

Store tests use a tiny deterministic embedder (no model load); only the CLI
test runs the real default (MiniLM) path, in a subprocess.

Time. No assertion depends on how fast the machine is (the suite runs in parallel on
busy machines): "within the timeout" is the timeout each request to Qdrant carried
(httpx's ``request.extensions["timeout"]``) and how many requests there were; "at
once" for a locked folder is the order of events (the holder still holds the folder
when the error comes back) and no wait asked for. Only the CLI subprocess keeps a
wall-clock bound, a generous hang guard.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import corpus
import pytest
from fakes.embedders import FakeEmbedder
from fakes.proxies import direct_env
from fakes.tcp import BlackholeServer, closed_port
from remote_checks import record_sent, uniform
from warm_cli import run_cli

from retrieval_lib.config import load_settings
from retrieval_lib.errors import (
    CollectionNotFoundError,
    ConfigurationError,
    RetrievalError,
    StoreLockedError,
    StoreUnavailableError,
)
from retrieval_lib.search import Retriever
from retrieval_lib.stores import VectorStore, collection_stats, open_store

QDRANT_KEY = "qd-TEST-KEY-77ab"
PROJECT = corpus.TESTS.parent

pytestmark = pytest.mark.usefixtures("no_proxies")


def server_settings(url: str, **extra: str):
    return load_settings(env={"QDRANT_URL": url, "QDRANT_TIMEOUT": "1", **extra})


def assert_mentions_what_to_do(err: RetrievalError) -> None:
    assert "check" in err.message and "QDRANT_URL" in err.message


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict[str, float]]]:
    """``(url, timeout)`` of every request an httpx client of this process sent, in order."""
    return record_sent(monkeypatch)


def assert_bounded_by_the_timeout(url: str, sent: list[tuple[str, dict[str, float]]]) -> None:
    """At most two requests went to ``url`` (no retry loop), each bounded by QDRANT_TIMEOUT's 1 s.

    That bounds the failure at ~2 s without timing it; qdrant-client's own default would be 5 s per request.
    """
    to_store = [timeout for u, timeout in sent if u.startswith(url + "/")]
    assert 1 <= len(to_store) <= 2, to_store
    assert all(t == uniform(1) for t in to_store), to_store


# --------------------------------------------------------------------------- 1. refused


@pytest.mark.timeout(30)
def test_closed_port_search_is_store_unavailable_naming_the_url(sent):
    from retrieval_lib.embedding.providers import Embedder

    port = closed_port()
    url = f"http://127.0.0.1:{port}"
    settings = server_settings(url)
    embedder = FakeEmbedder.tiny()
    assert isinstance(embedder, Embedder)
    with Retriever(open_store(settings), embedder, settings.collection_name) as retriever:
        with pytest.raises(StoreUnavailableError) as ei:
            retriever.search("what is ROS 2?")
    assert_bounded_by_the_timeout(url, sent)
    err = ei.value
    assert f"127.0.0.1:{port}" in err.message
    assert err.location == url
    assert "refused" in err.message  # refused at once, not waited out ("did not answer in time")
    assert_mentions_what_to_do(err)
    assert err.exit_code == 3 and err.to_dict()["exit_code"] == 3
    assert embedder.calls == 0  # failed before spending an embedding call


# --------------------------------------------------------------------------- 2. blackhole


@pytest.mark.timeout(40)
@pytest.mark.parametrize("operation", ["list_collections", "search", "stats"])
def test_blackhole_times_out_quickly_with_a_typed_error(operation, sent):
    with BlackholeServer() as bh:
        settings = server_settings(bh.url)
        store = open_store(settings)
        retriever = Retriever(store, FakeEmbedder.tiny(), settings.collection_name)
        calls = {
            "list_collections": store.list_collections,
            "search": lambda: retriever.search("what is ROS 2?"),
            "stats": retriever.stats,
        }
        try:
            with pytest.raises(StoreUnavailableError) as ei:
                calls[operation]()
        finally:
            store.close()
        assert_bounded_by_the_timeout(bh.url, sent)  # quickly: the 1 s QDRANT_TIMEOUT, not a 5 s default
        assert bh.connections >= 1  # it really connected, then got no answer
    err = ei.value
    assert "did not answer in time" in err.message
    assert f"127.0.0.1:{bh.port}" in err.message
    assert_mentions_what_to_do(err)
    assert err.exit_code == 3


# --------------------------------------------------------------------------- 3. API key never shown


class _Refusing401(BaseHTTPRequestHandler):
    """Answers every request with 401 and records the api-key header it got."""

    seen: list[str | None] = []

    def log_message(self, *args):  # silence
        pass

    def _answer(self):
        type(self).seen.append(self.headers.get("api-key"))
        body = json.dumps({"status": {"error": "Unauthorized"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _answer


def _all_texts(err: RetrievalError) -> list[str]:
    return [str(err), repr(err), err.message, json.dumps(err.to_dict(), default=str), repr(err.fields)]


@pytest.mark.timeout(30)
@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_qdrant_api_key_never_appears_in_errors_or_settings():
    # refused connection
    port = closed_port()
    settings = server_settings(f"http://127.0.0.1:{port}", QDRANT_API_KEY=QDRANT_KEY)
    assert settings.qdrant_api_key is not None and settings.qdrant_api_key.reveal() == QDRANT_KEY
    for text in (repr(settings), str(settings), str(settings.qdrant_api_key)):
        assert QDRANT_KEY not in text
    store = open_store(settings)
    try:
        with pytest.raises(StoreUnavailableError) as ei:
            store.list_collections()
        assert QDRANT_KEY not in repr(store)
    finally:
        store.close()
    for text in _all_texts(ei.value):
        assert QDRANT_KEY not in text

    # a URL carrying credentials: the printable location drops them
    settings2 = server_settings(f"http://user:s3cretpw@127.0.0.1:{port}", QDRANT_API_KEY=QDRANT_KEY)
    assert settings2.store_location == f"http://127.0.0.1:{port}"
    for text in (repr(settings2), str(settings2)):
        assert QDRANT_KEY not in text and "s3cretpw" not in text

    # a server that refuses the key: the key reached it, the error names the variable, not the value
    _Refusing401.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing401)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        settings3 = server_settings(f"http://127.0.0.1:{server.server_address[1]}", QDRANT_API_KEY=QDRANT_KEY)
        with open_store(settings3) as store3:
            with pytest.raises(ConfigurationError) as ei3:
                store3.list_collections()
    finally:
        server.shutdown()
        server.server_close()
    assert _Refusing401.seen and _Refusing401.seen[0] == QDRANT_KEY
    assert ei3.value.variable == "QDRANT_API_KEY" and "QDRANT_API_KEY" in ei3.value.message
    assert "401" in ei3.value.message
    for text in _all_texts(ei3.value):
        assert QDRANT_KEY not in text


@pytest.mark.timeout(20)
def test_api_key_with_plain_http_to_a_remote_host_is_refused():
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"QDRANT_URL": "http://qdrant.example.com:6333", "QDRANT_API_KEY": QDRANT_KEY})
    assert ei.value.variable == "QDRANT_URL"
    for text in _all_texts(ei.value):
        assert QDRANT_KEY not in text


# --------------------------------------------------------------------------- 4. missing collection


def _make_collections(store: VectorStore, names) -> None:
    for name in names:
        store.create_collection(name, 4)


@pytest.mark.timeout(20)
def test_missing_collection_in_memory_lists_the_existing_ones():
    store = VectorStore.in_memory()
    _make_collections(store, ["beta", "alpha"])
    retriever = Retriever(store, FakeEmbedder.tiny(), "gamma")
    with pytest.raises(CollectionNotFoundError) as ei:
        retriever.search("anything")
    err = ei.value
    assert err.collection == "gamma" and err.available == ["alpha", "beta"]
    assert "'gamma'" in err.message and "alpha, beta" in err.message
    assert "QDRANT_COLLECTION_NAME" in err.message
    assert err.exit_code == 2
    with pytest.raises(CollectionNotFoundError):
        retriever.stats()
    store.close()


@pytest.mark.timeout(20)
def test_missing_collection_in_an_embedded_folder(tmp_path):
    with VectorStore.at_path(tmp_path / "store") as store:
        _make_collections(store, ["physicalai"])
        for call in (lambda: store.count("nope"), lambda: store.info("nope"), lambda: collection_stats(store, "nope")):
            with pytest.raises(CollectionNotFoundError) as ei:
                call()
            assert ei.value.available == ["physicalai"]
            assert "physicalai" in ei.value.message and "ingest" in ei.value.message
            assert str(tmp_path / "store") in ei.value.message
    # empty store: says "none"
    with VectorStore.at_path(tmp_path / "empty") as empty:
        with pytest.raises(CollectionNotFoundError) as ei:
            empty.info("physicalai")
        assert ei.value.available == [] and "none" in ei.value.message


# --------------------------------------------------------------------------- 5. locked folder


_HOLDER = """
import sys, time
from retrieval_lib.stores.qdrant import VectorStore
store = VectorStore.at_path(sys.argv[1])
print("READY", flush=True)
time.sleep(30)
"""


def _wait_for_line(proc: subprocess.Popen, expected: str, timeout: float) -> str:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:  # EOF: the child died
                break
            if line.strip() == expected:
                return line
    finally:
        sel.close()
    raise AssertionError(f"child did not print {expected!r} in {timeout} s (rc={proc.poll()}): "
                         f"{proc.stderr.read() if proc.poll() is not None else ''}")


@pytest.mark.timeout(60)
def test_locked_embedded_folder_is_a_store_locked_error(tmp_path, monkeypatch):
    folder = tmp_path / "held"
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(tmp_path))
    try:
        _wait_for_line(proc, "READY", timeout=40)
        # at once, shown by what happened rather than a stopwatch: no wait was asked for (no polling for
        # the lock) and the error came back while the holder still held the folder (it lets go after 30 s)
        waits: list[float] = []
        sleep, here = time.sleep, threading.get_ident()

        def recording_sleep(seconds: float) -> None:
            if threading.get_ident() == here:
                waits.append(seconds)
            sleep(seconds)

        monkeypatch.setattr(time, "sleep", recording_sleep)
        with pytest.raises(StoreLockedError) as ei:
            VectorStore.at_path(folder)
        monkeypatch.undo()
        assert waits == []
        assert proc.poll() is None, "the holder had already let go: the error was not about a held lock"
        err = ei.value
        assert str(folder) in err.message and err.location == str(folder)
        assert "another process" in err.message
        assert "JupyterLab" in err.message
        assert "QDRANT_PATH" in err.message and "QDRANT_URL" in err.message
        assert err.exit_code == 3
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    # once the holder is gone, the folder opens again: the error really was the lock
    with VectorStore.at_path(folder) as store:
        assert store.list_collections() == []


# --------------------------------------------------------------------------- 6. CLI


@pytest.mark.timeout(60)
def test_cli_search_against_a_closed_port_exits_3_with_one_error_line(tmp_path):
    env = direct_env({k: v for k, v in os.environ.items()
                      if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_", "CO_"))})
    port = closed_port()
    env.update({"QDRANT_URL": f"http://127.0.0.1:{port}", "QDRANT_TIMEOUT": "1",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    t0 = time.monotonic()
    proc = run_cli(["search", "x"], env=env, cwd=tmp_path, timeout=50)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:")
    assert f"127.0.0.1:{port}" in lines[0] and "QDRANT_URL" in lines[0]
    assert "refused the connection" in lines[0]  # refused at once, not waited out ("did not answer in time")
    assert proc.stdout == ""
    # a hang guard, the one wall-clock bound kept: nothing else shows that a child process ends. ~3 s idle and
    # ~6 s on a loaded 2-core machine (interpreter, imports), so 45 s is generous; a hang hits the 50 s timeout
    assert elapsed < 45
