"""The loopback fakes work through the REAL cohere SDK and the REAL qdrant-client.

These tests also pin down, as executable facts, what the installed SDKs do on
each failure mode (exception types, retry counts and delays, timeouts); the
production code's error mapping relies on them. See the docstring of
``tests/fakes/cohere_server.py`` for the summary.
"""

from __future__ import annotations

import threading
import time

import cohere
import cohere.errors  # lazy package: cohere.errors is not an attribute until imported
import httpx
import numpy as np
import pytest
from cohere.core.api_error import ApiError
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException

try:
    from tests.fakes.cohere_server import FakeCohere, embed_text
    from tests.fakes.tcp import BlackholeServer, closed_port
except ImportError:  # tests/ is not a package: rootdir-relative import
    from fakes.cohere_server import FakeCohere, embed_text
    from fakes.tcp import BlackholeServer, closed_port

MODEL = "embed-v4.0"
KEY = "test-key-123"
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch):
    """Loopback must be reached directly: the SDKs' httpx clients honour proxy variables."""
    for var in _PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def client(fake_or_url, **kwargs) -> cohere.ClientV2:
    url = fake_or_url if isinstance(fake_or_url, str) else fake_or_url.url
    assert url.startswith("http://127.0.0.1:")
    return cohere.ClientV2(api_key=KEY, base_url=url, **kwargs)


def embed(co, texts, input_type="search_document", **kwargs):
    return co.embed(texts=texts, model=MODEL, input_type=input_type, embedding_types=["float"], **kwargs)


def cos(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def gaps(fake) -> list[float]:
    times = [r["time"] for r in fake.requests]
    return [b - a for a, b in zip(times, times[1:])]


# --------------------------------------------------------------------------- happy path


@pytest.mark.timeout(20)
def test_embed_returns_vectors_of_the_right_dim_and_records_the_request():
    with FakeCohere(dim=1024) as fake, client(fake) as co:
        texts = ["The cat sat on the mat.", "Quarterly revenue grew by ten percent."]
        resp = co.embed(texts=texts, model=MODEL, input_type="search_document",
                        embedding_types=["float"], truncate="END")
        assert isinstance(resp, cohere.EmbedByTypeResponse)
        assert resp.response_type == "embeddings_by_type"
        assert resp.id and resp.texts == texts
        vecs = resp.embeddings.float_
        assert len(vecs) == 2 and all(len(v) == 1024 for v in vecs)
        assert all(abs(np.linalg.norm(v) - 1.0) < 1e-5 for v in vecs)

        [req] = fake.requests
        assert req["method"] == "POST" and req["path"] == "/v2/embed"
        assert req["headers"]["authorization"] == f"Bearer {KEY}"
        assert req["headers"]["content-type"] == "application/json"
        assert req["headers"]["user-agent"].startswith("cohere/")
        assert req["json"] == {"texts": texts, "model": MODEL, "input_type": "search_document",
                               "embedding_types": ["float"], "truncate": "END"}


@pytest.mark.timeout(20)
def test_omitted_arguments_are_not_sent_and_output_dimension_is_honoured():
    with FakeCohere(dim=16) as fake, client(fake) as co:
        resp = co.embed(texts=["x"], model=MODEL, input_type="search_query", output_dimension=256)
        assert len(resp.embeddings.float_[0]) == 256
        assert fake.requests[0]["json"] == {"texts": ["x"], "model": MODEL, "input_type": "search_query",
                                            "output_dimension": 256}


@pytest.mark.timeout(20)
def test_vectors_are_deterministic_and_bag_of_words_similar():
    with FakeCohere(dim=1024) as fake, client(fake) as co:
        a1 = embed(co, ["Qdrant stores vectors for semantic search"]).embeddings.float_[0]
        a2 = embed(co, ["Qdrant stores vectors for semantic search"]).embeddings.float_[0]
        assert a1 == a2
        # same across server instances too
        assert a1 == embed_text("Qdrant stores vectors for semantic search",
                                model=MODEL, input_type="search_document", dim=1024)
        near, far = embed(co, ["semantic search over stored vectors in Qdrant",
                               "my grandmother bakes apple pie on sundays"]).embeddings.float_
        assert cos(a1, near) > 0.5
        assert abs(cos(a1, far)) < 0.15
        assert cos(a1, near) > cos(a1, far) + 0.4
        # query and document embeddings live in one space
        q = embed(co, ["Qdrant stores vectors for semantic search"], input_type="search_query").embeddings.float_[0]
        assert q != a1 and cos(q, a1) > 0.99
        assert [r["json"]["input_type"] for r in fake.requests] == [
            "search_document", "search_document", "search_document", "search_query"]
        assert {r["json"]["model"] for r in fake.requests} == {MODEL}
    other_model = embed_text("Qdrant stores vectors for semantic search", model="other", input_type="search_document", dim=1024)
    assert abs(cos(a1, other_model)) < 0.15


# --------------------------------------------------------------------------- retries


@pytest.mark.timeout(20)
def test_429_then_ok_is_retried_by_default_after_about_one_second():
    with FakeCohere(dim=8, script=[("status", 429)]) as fake, client(fake) as co:
        resp = embed(co, ["hello"])
        assert len(resp.embeddings.float_[0]) == 8
        assert len(fake.requests) == 2
        [gap] = gaps(fake)
        assert 0.85 < gap < 1.5  # exponential backoff 1 s * 2**0, +/-10% jitter


@pytest.mark.timeout(20)
def test_429_forever_default_is_three_attempts_with_1s_2s_backoff():
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", 429))
        t0 = time.monotonic()
        with pytest.raises(cohere.errors.TooManyRequestsError) as ei:
            embed(co, ["hello"])
        elapsed = time.monotonic() - t0
        assert ei.value.status_code == 429 and "message" in ei.value.body
        assert len(fake.requests) == 3  # 1 + max_retries(2)
        g1, g2 = gaps(fake)
        assert 0.85 < g1 < 1.5 and 1.75 < g2 < 2.6
        assert 2.6 < elapsed < 4.5


@pytest.mark.timeout(20)
def test_retry_after_header_is_honoured_without_jitter():
    with FakeCohere(dim=8, script=[("status", 429, {"retry_after": "2"}),
                                    ("status", 429, {"Retry-After-Ms": "300"})]) as fake, client(fake) as co:
        embed(co, ["hello"])
        g1, g2 = gaps(fake)
        assert 1.95 < g1 < 2.5   # Retry-After: 2 (default backoff would be ~1 s)
        assert 0.28 < g2 < 0.8   # Retry-After-Ms: 300 (default backoff would be ~2 s)
        assert len(fake.requests) == 3


@pytest.mark.timeout(20)
def test_max_retries_zero_per_call_and_per_client_raises_429_at_once():
    with FakeCohere(dim=8) as fake:
        fake.always(("status", 429, {"Retry-After": "5"}))
        with client(fake) as co:
            t0 = time.monotonic()
            with pytest.raises(cohere.errors.TooManyRequestsError) as ei:
                embed(co, ["hello"], request_options={"max_retries": 0})
            assert time.monotonic() - t0 < 0.5
            assert ei.value.headers["retry-after"] == "5"
            assert len(fake.requests) == 1
        with client(fake, max_retries=0) as co:
            with pytest.raises(cohere.errors.TooManyRequestsError):
                embed(co, ["hello"])
            assert len(fake.requests) == 2
        with client(fake, max_retries=0) as co:  # per call wins over per client
            fake.always(("status", 429, {"Retry-After-Ms": "10"}))
            with pytest.raises(cohere.errors.TooManyRequestsError):
                embed(co, ["hello"], request_options={"max_retries": 1})
            assert len(fake.requests) == 4


@pytest.mark.timeout(20)
@pytest.mark.parametrize("code, exc", [(401, cohere.errors.UnauthorizedError),
                                       (403, cohere.errors.ForbiddenError),
                                       (400, cohere.errors.BadRequestError),
                                       (422, cohere.errors.UnprocessableEntityError)])
def test_4xx_raise_typed_errors_without_retry(code, exc):
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", code))
        t0 = time.monotonic()
        with pytest.raises(exc) as ei:
            embed(co, ["hello"])
        assert ei.value.status_code == code and isinstance(ei.value, ApiError)
        assert len(fake.requests) == 1 and time.monotonic() - t0 < 0.5


@pytest.mark.timeout(20)
def test_500_is_retried_twice_then_internal_server_error():
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", 500))
        with pytest.raises(cohere.errors.InternalServerError) as ei:
            embed(co, ["hello"])
        assert ei.value.status_code == 500
        assert len(fake.requests) == 3


@pytest.mark.timeout(20)
def test_5xx_types_and_non_json_error_body():
    with FakeCohere(dim=8) as fake, client(fake) as co:
        no_retry = {"max_retries": 0}
        fake.always(("status", 503))
        with pytest.raises(cohere.errors.ServiceUnavailableError):
            embed(co, ["x"], request_options=no_retry)
        fake.always(("status", 504))
        with pytest.raises(cohere.errors.GatewayTimeoutError):
            embed(co, ["x"], request_options=no_retry)
        fake.always(("status", 502))  # no typed class for 502
        with pytest.raises(ApiError) as ei:
            embed(co, ["x"], request_options=no_retry)
        assert type(ei.value) is ApiError and ei.value.status_code == 502
        # a non-JSON body (proxy HTML page) loses the typed class: plain ApiError
        fake.always(("status", 429, {}, "<html>Too Many Requests</html>"))
        with pytest.raises(ApiError) as ei:
            embed(co, ["x"], request_options=no_retry)
        assert type(ei.value) is ApiError and ei.value.status_code == 429
        assert "Too Many" in ei.value.body
        # per-call max_retries=1: two attempts
        fake.always(("status", 503, {"Retry-After-Ms": "10"}))
        with pytest.raises(cohere.errors.ServiceUnavailableError):
            embed(co, ["x"], request_options={"max_retries": 1})
        assert len(fake.requests) == 6


# --------------------------------------------------------------------------- broken responses


@pytest.mark.timeout(20)
def test_hang_with_per_call_timeout_raises_httpx_read_timeout_and_is_not_retried():
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always("hang")
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            embed(co, ["hello"], request_options={"timeout_in_seconds": 1})
        assert 0.9 < time.monotonic() - t0 < 2.0
        assert len(fake.requests) == 1  # timeouts are never retried
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            embed(co, ["hello"], request_options={"timeout": 0.5})
        assert 0.4 < time.monotonic() - t0 < 1.5
    with FakeCohere(dim=8) as fake, client(fake, timeout=0.5) as co:  # per client
        fake.always("hang")
        with pytest.raises(httpx.TimeoutException):
            embed(co, ["hello"])
        assert len(fake.requests) == 1


@pytest.mark.timeout(20)
def test_malformed_json_raises_api_error_with_status_200():
    with FakeCohere(dim=8, script=["malformed"]) as fake, client(fake) as co:
        with pytest.raises(ApiError) as ei:
            embed(co, ["hello"])
        assert type(ei.value) is ApiError
        assert ei.value.status_code == 200 and ei.value.body == '{"embeddings": '
        assert len(fake.requests) == 1
        assert len(embed(co, ["hello"]).embeddings.float_) == 1  # script consumed -> ok


@pytest.mark.timeout(20)
def test_sdk_does_not_validate_dimension_or_count():
    with FakeCohere(dim=8, script=[("dim", 3), "count_mismatch"]) as fake, client(fake) as co:
        resp = embed(co, ["a b", "c d"])
        assert [len(v) for v in resp.embeddings.float_] == [3, 3]
        resp = embed(co, ["a b", "c d", "e f"])
        assert len(resp.embeddings.float_) == 2 and len(resp.texts) == 3
        assert len(fake.requests) == 2


@pytest.mark.timeout(20)
def test_disconnect_raises_remote_protocol_error_not_retried_unless_opted_in():
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.push("disconnect")
        with pytest.raises(httpx.RemoteProtocolError):
            embed(co, ["hello"])
        assert len(fake.requests) == 1
        fake.push("disconnect")
        resp = embed(co, ["hello"], request_options={"retry_remote_protocol_errors": True})
        assert len(resp.embeddings.float_) == 1 and len(fake.requests) == 3


@pytest.mark.timeout(20)
def test_closed_port_raises_connect_error_after_retries():
    url = f"http://127.0.0.1:{closed_port()}"
    with client(url) as co:
        t0 = time.monotonic()
        with pytest.raises(httpx.ConnectError):
            embed(co, ["hello"], request_options={"max_retries": 0})
        assert time.monotonic() - t0 < 0.5
        t0 = time.monotonic()
        with pytest.raises(httpx.ConnectError):
            embed(co, ["hello"])  # default: 2 retries, ~1 s + ~2 s backoff
        assert 2.6 < time.monotonic() - t0 < 4.5


@pytest.mark.timeout(20)
def test_cohere_sdk_against_blackhole_times_out():
    with BlackholeServer() as bh, client(bh.url) as co:
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            embed(co, ["hello"], request_options={"timeout": 1})
        assert time.monotonic() - t0 < 2.5
        assert bh.connections == 1


@pytest.mark.timeout(20)
def test_fake_shuts_down_promptly_with_a_hanging_request_in_flight():
    fake = FakeCohere(dim=8).start()
    fake.always("hang")
    errors: list[BaseException] = []

    def call():
        with client(fake) as co:
            try:
                embed(co, ["hello"], request_options={"timeout": 15, "max_retries": 0})
            except BaseException as e:  # noqa: BLE001 - recorded for the assertion
                errors.append(e)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    while not fake.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.requests, "request never arrived"
    t0 = time.monotonic()
    fake.close()
    assert time.monotonic() - t0 < 2.0
    t.join(timeout=3)
    assert not t.is_alive()
    assert errors and isinstance(errors[0], (httpx.RemoteProtocolError, httpx.ReadError))


def test_unknown_behaviour_is_rejected():
    fake = FakeCohere()
    with pytest.raises(ValueError):
        fake.push("explode")
    with pytest.raises(ValueError):
        fake.always(("status",))


# --------------------------------------------------------------------------- qdrant-client


@pytest.mark.timeout(20)
def test_qdrant_blackhole_get_collections_and_query_points_time_out():
    with BlackholeServer() as bh:
        qc = QdrantClient(url=bh.url, timeout=1, check_compatibility=False)
        try:
            t0 = time.monotonic()
            with pytest.raises(ResponseHandlingException) as ei:
                qc.get_collections()
            assert time.monotonic() - t0 < 3
            assert isinstance(ei.value.source, httpx.ReadTimeout)
            t0 = time.monotonic()
            with pytest.raises(ResponseHandlingException) as ei:
                qc.query_points("docs", query=[0.1, 0.2, 0.3], limit=3)
            assert time.monotonic() - t0 < 3
            assert isinstance(ei.value.source, httpx.ReadTimeout)
        finally:
            qc.close()


@pytest.mark.timeout(20)
def test_qdrant_default_timeout_is_five_seconds():
    with BlackholeServer() as bh:
        qc = QdrantClient(url=bh.url, check_compatibility=False)
        try:
            t0 = time.monotonic()
            with pytest.raises(ResponseHandlingException) as ei:
                qc.get_collections()
            assert 4.5 < time.monotonic() - t0 < 7
            assert isinstance(ei.value.source, httpx.ReadTimeout)
        finally:
            qc.close()


@pytest.mark.timeout(20)
@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_qdrant_constructor_does_not_block_on_an_unresponsive_server():
    # check_compatibility=True (the default) probes the server in a daemon thread,
    # which later emits a UserWarning "Failed to obtain server version ..."
    before = set(threading.enumerate())
    with BlackholeServer() as bh:
        t0 = time.monotonic()
        qc = QdrantClient(url=bh.url, timeout=1)
        assert time.monotonic() - t0 < 0.5
        with pytest.raises(ResponseHandlingException):
            qc.get_collections()
        qc.close()
    # the server is gone, so the probe ends: let it end here, where its warning falls under this
    # test's filter rather than into whichever test runs next
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=5)


@pytest.mark.timeout(20)
def test_qdrant_closed_port_raises_connect_error_at_once():
    qc = QdrantClient(url=f"http://127.0.0.1:{closed_port()}", timeout=1, check_compatibility=False)
    try:
        t0 = time.monotonic()
        with pytest.raises(ResponseHandlingException) as ei:
            qc.get_collections()
        assert time.monotonic() - t0 < 1
        assert isinstance(ei.value.source, httpx.ConnectError)
    finally:
        qc.close()
