"""The loopback fakes work through the REAL cohere SDK and the REAL qdrant-client.

These tests also pin down, as executable facts, what the installed SDKs do on
each failure mode (exception types, retry counts and delays, timeouts); the
production code's error mapping relies on them. See the docstring of
``tests/fakes/cohere_server.py`` for the summary.

Time. The suite runs in parallel on busy machines, so no assertion here depends on how
fast the machine is. A test about the SDK's retry waits records the delays its retry
loop asks ``time.sleep`` for (the ``sdk_sleeps`` fixture) instead of waiting them out:
the values are exact and the test takes milliseconds. A test about a timeout checks
the timeout httpx actually enforced on the request (``request.extensions["timeout"]``,
carried by the exception), so "the per-call value, not the client's or the SDK's
default" is read, not timed. Wall-clock lower bounds stay where a wait must really
have happened (a timeout never fires early; load only makes waits longer). Tests that
must wait out a real SDK default (the backoff on the wire, qdrant-client's 5 s timeout)
are marked ``sdk_defaults`` and left out of the default run; ``pytest tests -m
sdk_defaults`` runs them.
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

from fakes.cohere_server import FakeCohere, embed_text
from fakes.tcp import BlackholeServer, closed_port

MODEL = "embed-v4.0"
KEY = "test-key-123"
#: An explicit client-wide timeout that a per-call timeout must beat (the SDK's own default is 300 s).
CLIENT_TIMEOUT_S = 5.0
#: qdrant-client's default request timeout (httpx's), which production always overrides.
QDRANT_DEFAULT_TIMEOUT_S = 5.0

pytestmark = pytest.mark.usefixtures("no_proxies")


class _SleepRecorder:
    """Stands in for the ``time`` module inside cohere's HTTP client: records each retry sleep.

    It sleeps none of them, or all of them for real with ``real=True``.
    """

    def __init__(self, real: bool = False) -> None:
        self.delays: list[float] = []
        self.real = real

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        if self.real:
            time.sleep(seconds)

    def __getattr__(self, name: str):
        return getattr(time, name)


def _record_sdk_sleeps(monkeypatch, *, real: bool) -> list[float]:
    from cohere.core import http_client

    recorder = _SleepRecorder(real=real)
    monkeypatch.setattr(http_client, "time", recorder)
    return recorder.delays


@pytest.fixture
def sdk_sleeps(monkeypatch) -> list[float]:
    """The delays the cohere SDK's retry loop asks to sleep, in order: recorded, not slept."""
    return _record_sdk_sleeps(monkeypatch, real=False)


@pytest.fixture
def sdk_real_sleeps(monkeypatch) -> list[float]:
    """The delays the cohere SDK's retry loop asks to sleep, in order: recorded, and really slept."""
    return _record_sdk_sleeps(monkeypatch, real=True)


def enforced_timeout(exc: httpx.HTTPError) -> dict[str, float]:
    """The timeouts httpx applied to the request that failed: ``{"connect", "read", "write", "pool"}``."""
    return exc.request.extensions["timeout"]


def uniform(seconds: float) -> dict[str, float]:
    """An httpx timeout of ``seconds`` for every phase, as the SDKs pass one number."""
    return {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}


def default_backoff(delay: float, retry: int) -> bool:
    """Whether ``delay`` is the SDK's default wait before retry ``retry`` (0-based): 1 s * 2**retry, +/-10 %."""
    return 0.9 * 2**retry <= delay <= 1.1 * 2**retry


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
    other_model = embed_text("Qdrant stores vectors for semantic search", model="other",
                             input_type="search_document", dim=1024)
    assert abs(cos(a1, other_model)) < 0.15


# --------------------------------------------------------------------------- retries


@pytest.mark.timeout(20)
def test_429_then_ok_is_retried_by_default_after_about_one_second(sdk_sleeps):
    with FakeCohere(dim=8, script=[("status", 429)]) as fake, client(fake) as co:
        resp = embed(co, ["hello"])
        assert len(resp.embeddings.float_[0]) == 8
        assert len(fake.requests) == 2
    [delay] = sdk_sleeps
    assert default_backoff(delay, 0)  # exponential backoff 1 s * 2**0, +/-10% jitter


@pytest.mark.timeout(20)
def test_429_forever_default_is_three_attempts_with_1s_2s_backoff(sdk_sleeps):
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", 429))
        with pytest.raises(cohere.errors.TooManyRequestsError) as ei:
            embed(co, ["hello"])
        assert ei.value.status_code == 429 and "message" in ei.value.body
        assert len(fake.requests) == 3  # 1 + max_retries(2)
    d1, d2 = sdk_sleeps
    assert default_backoff(d1, 0) and default_backoff(d2, 1)


@pytest.mark.sdk_defaults
@pytest.mark.timeout(20)
def test_default_backoff_is_really_waited_between_attempts(sdk_real_sleeps):
    """The recorded default delays are real waits on the wire (about 3 s, hence ``sdk_defaults``)."""
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", 429))
        t0 = time.monotonic()
        with pytest.raises(cohere.errors.TooManyRequestsError):
            embed(co, ["hello"])
        elapsed = time.monotonic() - t0
        assert len(fake.requests) == 3  # no fourth attempt (and no fourth, ~4 s, wait)
        d1, d2 = sdk_real_sleeps
        # the ~1 s step first, then the ~2 s step: the order of the waits, not how long the machine took
        assert default_backoff(d1, 0) and default_backoff(d2, 1)
        # each requested wait really passed on the wire between two attempts (load only adds to a gap)
        g1, g2 = gaps(fake)
        assert g1 >= d1 - 0.01 and g2 >= d2 - 0.01
        assert elapsed >= d1 + d2 - 0.01


@pytest.mark.timeout(20)
def test_retry_after_header_is_honoured_without_jitter(sdk_sleeps):
    with FakeCohere(dim=8, script=[("status", 429, {"retry_after": "2"}),
                                    ("status", 429, {"Retry-After-Ms": "300"})]) as fake, client(fake) as co:
        embed(co, ["hello"])
        assert len(fake.requests) == 3
    # exactly the headers' values: no jitter, and not the default ~1 s then ~2 s
    assert sdk_sleeps == [2.0, 0.3]


@pytest.mark.timeout(20)
def test_max_retries_zero_per_call_and_per_client_raises_429_at_once(sdk_sleeps):
    with FakeCohere(dim=8) as fake:
        fake.always(("status", 429, {"Retry-After": "5"}))
        with client(fake) as co:
            with pytest.raises(cohere.errors.TooManyRequestsError) as ei:
                embed(co, ["hello"], request_options={"max_retries": 0})
            assert sdk_sleeps == []  # at once: the 5 s Retry-After was not waited
            assert ei.value.headers["retry-after"] == "5"
            assert len(fake.requests) == 1
        with client(fake, max_retries=0) as co:
            with pytest.raises(cohere.errors.TooManyRequestsError):
                embed(co, ["hello"])
            assert len(fake.requests) == 2 and sdk_sleeps == []
        with client(fake, max_retries=0) as co:  # per call wins over per client
            fake.always(("status", 429, {"Retry-After-Ms": "10"}))
            with pytest.raises(cohere.errors.TooManyRequestsError):
                embed(co, ["hello"], request_options={"max_retries": 1})
            assert len(fake.requests) == 4 and sdk_sleeps == [0.01]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("code, exc", [(401, cohere.errors.UnauthorizedError),
                                       (403, cohere.errors.ForbiddenError),
                                       (400, cohere.errors.BadRequestError),
                                       (422, cohere.errors.UnprocessableEntityError)])
def test_4xx_raise_typed_errors_without_retry(code, exc, sdk_sleeps):
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", code))
        with pytest.raises(exc) as ei:
            embed(co, ["hello"])
        assert ei.value.status_code == code and isinstance(ei.value, ApiError)
        assert len(fake.requests) == 1 and sdk_sleeps == []


@pytest.mark.timeout(20)
def test_500_is_retried_twice_then_internal_server_error(sdk_sleeps):
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.always(("status", 500))
        with pytest.raises(cohere.errors.InternalServerError) as ei:
            embed(co, ["hello"])
        assert ei.value.status_code == 500
        assert len(fake.requests) == 3
    d1, d2 = sdk_sleeps  # the same default backoff as for 429
    assert default_backoff(d1, 0) and default_backoff(d2, 1)


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
    # the per-call value must beat the client's: httpx enforced the per-call timeout on the request, not the
    # client's 5 s; and it was really waited out (a lower bound: a timeout never fires early)
    with FakeCohere(dim=8) as fake, client(fake, timeout=CLIENT_TIMEOUT_S) as co:
        fake.always("hang")
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout) as ei:
            embed(co, ["hello"], request_options={"timeout_in_seconds": 1})  # the deprecated int alias
        assert time.monotonic() - t0 > 0.9
        assert enforced_timeout(ei.value) == uniform(1)
        assert len(fake.requests) == 1  # timeouts are never retried
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout) as ei:
            embed(co, ["hello"], request_options={"timeout": 0.25})
        assert time.monotonic() - t0 > 0.2
        assert enforced_timeout(ei.value) == uniform(0.25)
        assert len(fake.requests) == 2
    with FakeCohere(dim=8) as fake, client(fake, timeout=0.25) as co:  # per client
        fake.always("hang")
        with pytest.raises(httpx.TimeoutException) as ei:
            embed(co, ["hello"])
        assert enforced_timeout(ei.value) == uniform(0.25)  # the client's value, not the SDK's 300 s default
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
def test_disconnect_raises_remote_protocol_error_not_retried_unless_opted_in(sdk_sleeps):
    with FakeCohere(dim=8) as fake, client(fake) as co:
        fake.push("disconnect")
        with pytest.raises(httpx.RemoteProtocolError):
            embed(co, ["hello"])
        assert len(fake.requests) == 1 and sdk_sleeps == []
        fake.push("disconnect")
        resp = embed(co, ["hello"], request_options={"retry_remote_protocol_errors": True})
        assert len(resp.embeddings.float_) == 1 and len(fake.requests) == 3
    [delay] = sdk_sleeps  # the opted-in retry waits the default backoff
    assert default_backoff(delay, 0)


@pytest.mark.timeout(20)
def test_closed_port_raises_connect_error_after_retries(sdk_sleeps):
    url = f"http://127.0.0.1:{closed_port()}"
    with client(url) as co:
        with pytest.raises(httpx.ConnectError):
            embed(co, ["hello"], request_options={"max_retries": 0})
        assert sdk_sleeps == []  # at once
        with pytest.raises(httpx.ConnectError):
            embed(co, ["hello"])  # default: 2 retries, ~1 s + ~2 s backoff
    d1, d2 = sdk_sleeps
    assert default_backoff(d1, 0) and default_backoff(d2, 1)


@pytest.mark.timeout(20)
def test_cohere_sdk_against_blackhole_times_out():
    with BlackholeServer() as bh, client(bh.url, timeout=CLIENT_TIMEOUT_S) as co:
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout) as ei:
            embed(co, ["hello"], request_options={"timeout": 0.25})
        assert time.monotonic() - t0 > 0.2  # the read timeout was waited out, not failed early
        assert enforced_timeout(ei.value) == uniform(0.25)  # the per-call value, not the client's 5 s
        assert bh.connections == 1


@pytest.mark.timeout(20)
def test_fake_shuts_down_promptly_with_a_hanging_request_in_flight():
    request_timeout = 15.0
    fake = FakeCohere(dim=8).start()
    fake.always("hang")
    errors: list[BaseException] = []

    def call():
        with client(fake) as co:
            try:
                embed(co, ["hello"], request_options={"timeout": request_timeout, "max_retries": 0})
            except BaseException as e:  # noqa: BLE001 - recorded for the assertion
                errors.append(e)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    while not fake.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.requests, "request never arrived"
    assert t.is_alive() and not errors  # the request is in flight, hanging, when the server shuts down
    t0 = time.monotonic()
    fake.close()
    # a hang guard, not a speed limit: shutdown takes well under 2 s, and waiting for the client to give
    # up would take the 15 s request timeout (and end in ReadTimeout, checked below)
    assert time.monotonic() - t0 < request_timeout
    t.join(timeout=request_timeout)
    assert not t.is_alive()
    # the server cut the connection: a client timeout would be ReadTimeout
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
            # qdrant-client rounds timeouts up to whole seconds, so 1 s is the shortest
            t0 = time.monotonic()
            with pytest.raises(ResponseHandlingException) as ei:
                qc.get_collections()
            assert time.monotonic() - t0 > 0.9  # waited out, not failed early
            assert isinstance(ei.value.source, httpx.ReadTimeout)
            assert enforced_timeout(ei.value.source) == uniform(1)  # the given 1 s, not the 5 s default
            t0 = time.monotonic()
            with pytest.raises(ResponseHandlingException) as ei:
                qc.query_points("docs", query=[0.1, 0.2, 0.3], limit=3)
            assert time.monotonic() - t0 > 0.9
            assert isinstance(ei.value.source, httpx.ReadTimeout)
            assert enforced_timeout(ei.value.source) == uniform(1)
        finally:
            qc.close()


@pytest.mark.sdk_defaults
@pytest.mark.timeout(20)
def test_qdrant_default_timeout_is_five_seconds():
    """Waits out the real default (5 s, hence ``sdk_defaults``); production always passes QDRANT_TIMEOUT."""
    with BlackholeServer() as bh:
        qc = QdrantClient(url=bh.url, check_compatibility=False)
        try:
            t0 = time.monotonic()
            with pytest.raises(ResponseHandlingException) as ei:
                qc.get_collections()
            assert time.monotonic() - t0 > QDRANT_DEFAULT_TIMEOUT_S - 0.5  # really waited out
            assert isinstance(ei.value.source, httpx.ReadTimeout)
            assert enforced_timeout(ei.value.source) == uniform(QDRANT_DEFAULT_TIMEOUT_S)
        finally:
            qc.close()


@pytest.mark.timeout(20)
@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_qdrant_constructor_does_not_block_on_an_unresponsive_server():
    # check_compatibility=True (the default) probes the server in a daemon thread,
    # which later emits a UserWarning "Failed to obtain server version ..."
    probe_timeout = 10  # the probe waits this long on the silent server; the assertions never do
    with BlackholeServer() as bh:
        before = set(threading.enumerate())
        qc = QdrantClient(url=bh.url, timeout=probe_timeout)
        # the order of events, not a stopwatch: the constructor has returned while its probe is still
        # waiting for an answer (a constructor waiting for its probe would return only once the probe ended)
        probes = [t for t in set(threading.enumerate()) - before if t.is_alive()]
        assert probes, "no probe thread running once the constructor returned"
        deadline = time.monotonic() + probe_timeout
        while bh.connections == 0 and time.monotonic() < deadline:  # the probe reached the silent server ...
            time.sleep(0.01)
        assert bh.connections >= 1
        assert all(t.is_alive() for t in probes)  # ... and is still waiting on it
        qc.close()
    # the server is gone, so the probe ends: let it end here, where its warning falls under this
    # test's filter rather than into whichever test runs next
    for thread in probes:
        thread.join(timeout=probe_timeout)
        assert not thread.is_alive()


@pytest.mark.timeout(20)
def test_qdrant_closed_port_raises_connect_error_at_once():
    # a refused connect is an error at once, never a wait for the timeout: the client's timeout is set far
    # above any scheduling delay, so "at once" can be told from "waited out" on a busy machine
    client_timeout = 10
    qc = QdrantClient(url=f"http://127.0.0.1:{closed_port()}", timeout=client_timeout, check_compatibility=False)
    try:
        t0 = time.monotonic()
        with pytest.raises(ResponseHandlingException) as ei:
            qc.get_collections()
        assert time.monotonic() - t0 < client_timeout / 2  # generous: a refusal takes milliseconds
        assert isinstance(ei.value.source, httpx.ConnectError)  # refused (a timeout would be ConnectTimeout)
    finally:
        qc.close()
