"""CohereEmbedder through the REAL cohere SDK against the loopback FakeCohere.

Every case builds the embedder with a recording ``sleep`` (it appends the
requested delay and really sleeps only a few milliseconds), so retry waits are
observable without making the tests slow. A recognisable fake key is used and
checked to never leak into error text, ``repr`` or ``to_dict``.

Time. No assertion depends on how fast the machine is (the suite runs in parallel
on busy machines). Retry waits are the delays the embedder asked for; the retry
budget is checked on an injected clock (the ``clock`` fixture: ``time`` inside the
embedder's module, moved only by the waits asked for); a timeout is the value httpx
enforced on each request (the ``sent_timeouts`` fixture). Wall-clock lower bounds
stay where a wait must really have happened (a timeout never fires early; load only
makes waits longer).
"""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest
from fakes.cohere_server import FakeCohere, embed_text
from fakes.tcp import closed_port

from retrieval_lib.config import load_settings
from retrieval_lib.embedding.providers import COHERE_MAX_BATCH, CohereEmbedder, make_embedder
from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    ConfigurationError,
    EmbeddingError,
    EmbeddingUnavailableError,
    RateLimitedError,
)
from retrieval_lib.search import Retriever
from retrieval_lib.stores.qdrant import VectorStore

FAKE_KEY = "co-TEST-KEY-3f9a1c"
DEFAULT_MODEL = "embed-multilingual-v3.0"
DIM = 1024

pytestmark = pytest.mark.usefixtures("no_proxies")


class RecordingSleep:
    """Records every requested delay; really sleeps only a tiny bit."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        time.sleep(min(seconds, 0.005))


class FakeClock:
    """Stands in for the ``time`` module inside the embedder's module: ``monotonic()`` moves only by ``sleep``.

    Every wait asked for is recorded in ``delays`` and added to the clock at once, so the retry budget is
    spent by exactly the waits asked for, however long the requests themselves take on a busy machine.
    """

    def __init__(self) -> None:
        self.now = 1000.0
        self.delays: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds

    def __getattr__(self, name: str):
        return getattr(time, name)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The embedder module's clock, replaced by a :class:`FakeClock` for the test."""
    from retrieval_lib.embedding import base  # the shared retry loop reads its clock there

    fake_clock = FakeClock()
    monkeypatch.setattr(base, "time", fake_clock)
    return fake_clock


@pytest.fixture
def sent_timeouts(monkeypatch) -> list[dict[str, float]]:
    """The timeout httpx enforced on each request this process sent, in order (``request.extensions``)."""
    seen: list[dict[str, float]] = []
    send = httpx.Client.send

    def recording_send(self, request, **kwargs):
        seen.append(request.extensions.get("timeout"))
        return send(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", recording_send)
    return seen


def uniform(seconds: float) -> dict[str, float]:
    """An httpx timeout of ``seconds`` for every phase (connect, read, write, pool)."""
    return {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}


@pytest.fixture
def fake():
    with FakeCohere(dim=DIM) as f:
        yield f


def make(url: str, *, model: str = DEFAULT_MODEL, timeout: float = 5.0, max_retries: int = 3,
         retry_budget: float = 60.0, sleep: RecordingSleep | None = None,
         batch_size: int | None = None) -> tuple[CohereEmbedder, RecordingSleep]:
    sleep = sleep or RecordingSleep()
    emb = CohereEmbedder(api_key=FAKE_KEY, model=model, base_url=url, timeout=timeout,
                         max_retries=max_retries, retry_budget=retry_budget, backoff=0.01, sleep=sleep,
                         batch_size=batch_size)
    return emb, sleep


def assert_no_secret(*objects) -> None:
    for obj in objects:
        texts = [str(obj), repr(obj)]
        if hasattr(obj, "to_dict"):
            texts.append(json.dumps(obj.to_dict(), default=str))
        if hasattr(obj, "fields"):
            texts.append(repr(obj.fields))
        for text in texts:
            assert FAKE_KEY not in text, f"secret leaked in {type(obj).__name__}: {text!r}"


def cos(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --------------------------------------------------------------------------- 1. happy path


@pytest.mark.timeout(20)
@pytest.mark.parametrize("model", ["embed-multilingual-v3.0", "embed-english-v3.0"])
def test_ok_queries_and_documents_use_their_input_types(fake, model):
    emb, sleep = make(fake.url, model=model)
    try:
        q = emb.embed_queries(["what is a humanoid robot?"])
        d = emb.embed_documents(["Humanoid robots walk on two legs.", "ROS 2 is middleware."])
    finally:
        emb.close()
    assert len(q) == 1 and len(d) == 2
    assert all(len(v) == DIM == emb.dimension for v in q + d)
    assert all(isinstance(x, float) for x in q[0])
    assert abs(np.linalg.norm(q[0]) - 1.0) < 1e-5

    reqs = fake.embed_requests
    assert len(reqs) == 2 and emb.calls == 2 and sleep.delays == []
    assert [r["json"]["input_type"] for r in reqs] == ["search_query", "search_document"]
    for r in reqs:
        assert r["method"] == "POST"
        assert r["json"]["model"] == model
        assert r["json"]["embedding_types"] == ["float"]
        assert r["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    assert reqs[0]["json"]["texts"] == ["what is a humanoid robot?"]
    assert reqs[1]["json"]["texts"] == ["Humanoid robots walk on two legs.", "ROS 2 is middleware."]
    # what the fake computed for exactly these (model, input_type, text) triples
    assert np.allclose(q[0], embed_text("what is a humanoid robot?", model=model, input_type="search_query", dim=DIM))
    assert np.allclose(d[1], embed_text("ROS 2 is middleware.", model=model, input_type="search_document", dim=DIM))
    assert FAKE_KEY not in repr(emb) and FAKE_KEY not in str(emb)


@pytest.mark.timeout(20)
def test_empty_input_makes_no_request(fake):
    emb, _ = make(fake.url)
    assert emb.embed_queries([]) == [] and emb.embed_documents([]) == []
    assert fake.embed_requests == [] and emb.calls == 0


# --------------------------------------------------------------------------- 2. batching


@pytest.mark.timeout(30)
def test_200_texts_go_in_three_batches_of_at_most_96_in_input_order(fake):
    texts = [f"passage {i} mentions token{i} and word{i % 7}" for i in range(200)]
    # the fake stands in for Cohere's own API: EMBEDDING_BATCH_SIZE above the limit is held to Cohere's 96
    emb, _ = make(fake.url, batch_size=500)
    vectors = emb.embed_documents(texts)
    reqs = fake.embed_requests
    assert COHERE_MAX_BATCH == 96 == emb.max_batch
    assert [len(r["json"]["texts"]) for r in reqs] == [96, 96, 8]
    assert [t for r in reqs for t in r["json"]["texts"]] == texts
    assert len(vectors) == 200
    for text, vec in zip(texts, vectors):
        assert np.allclose(vec, embed_text(text, model=DEFAULT_MODEL, input_type="search_document", dim=DIM))
    # and the same as embedding some of them alone, through the embedder
    for i in (0, 95, 96, 150, 199):
        [alone] = emb.embed_documents([texts[i]])
        assert np.allclose(alone, vectors[i])
    # neighbours are different vectors (order was not shuffled into duplicates)
    assert cos(vectors[0], vectors[1]) < 0.99


# --------------------------------------------------------------------------- 3-5. 429


@pytest.mark.timeout(20)
def test_429_with_retry_after_is_honoured_then_succeeds(fake):
    fake.push(("status", 429, {"Retry-After": "2"}))
    emb, sleep = make(fake.url)
    [vec] = emb.embed_queries(["hello"])
    assert len(vec) == DIM
    assert sleep.delays == [2.0]
    assert len(fake.embed_requests) == 2 and emb.calls == 2


@pytest.mark.timeout(20)
def test_429_without_retry_after_backs_off_then_succeeds(fake):
    fake.push(("status", 429))
    emb, sleep = make(fake.url)
    [vec] = emb.embed_documents(["hello"])
    assert len(vec) == DIM
    assert len(sleep.delays) == 1
    assert 0.01 <= sleep.delays[0] <= 0.0121  # backoff 0.01 * 2**0 plus <= 20 % jitter
    assert len(fake.embed_requests) == 2


@pytest.mark.timeout(20)
def test_429_backoff_grows_exponentially(fake):
    fake.push(("status", 429), ("status", 429), ("status", 429))
    emb, sleep = make(fake.url, max_retries=3)
    emb.embed_queries(["hello"])
    assert len(sleep.delays) == 3
    for k, d in enumerate(sleep.delays):
        assert 0.01 * 2**k <= d <= 0.01 * 2**k * 1.2 + 1e-9
    assert len(fake.embed_requests) == 4


@pytest.mark.timeout(20)
def test_429_forever_raises_rate_limited_after_bounded_attempts(fake):
    fake.always(("status", 429))
    emb, sleep = make(fake.url, max_retries=3)
    with pytest.raises(RateLimitedError) as ei:
        emb.embed_queries(["hello"])
    err = ei.value
    assert len(fake.embed_requests) == 4 and emb.calls == 4
    assert err.attempts == 4 and len(sleep.delays) == 3
    assert err.exit_code == 3 and err.to_dict()["exit_code"] == 3
    assert err.provider == "cohere" and err.model == DEFAULT_MODEL
    assert "429" in err.message and "4 attempt" in err.message
    assert "wait and re-run" in err.message  # says what to do
    assert isinstance(err, EmbeddingError)
    assert_no_secret(err, emb)


@pytest.mark.timeout(20)
def test_retry_after_beyond_the_budget_fails_at_once(fake, clock):
    fake.always(("status", 429, {"Retry-After": "30"}))
    emb, sleep = make(fake.url, max_retries=5, retry_budget=3.0)
    with pytest.raises(RateLimitedError) as ei:
        emb.embed_queries(["hello"])
    assert sleep.delays == []  # never slept past (or towards) the budget
    assert clock.delays == []  # nor through the module's own time.sleep: failed at once
    assert len(fake.embed_requests) == 1
    assert ei.value.retry_after == 30.0 and ei.value.attempts == 1
    assert "budget" in ei.value.message
    assert_no_secret(ei.value)


@pytest.mark.timeout(20)
def test_total_retry_waiting_stays_within_the_budget(fake, clock, sent_timeouts):
    # Retry-After 1 s fits a 2.5 s budget twice at most. The embedder's clock is the fake one and its sleep
    # advances it: the budget is spent by exactly the waits asked for, whatever the machine's load
    fake.always(("status", 429, {"Retry-After": "1"}))
    budget, timeout = 2.5, 1.0
    emb = CohereEmbedder(api_key=FAKE_KEY, base_url=fake.url, timeout=timeout, max_retries=10,
                         retry_budget=budget, backoff=0.01, sleep=clock.sleep)
    with pytest.raises(RateLimitedError) as ei:
        emb.embed_queries(["hello"])
    assert clock.delays == [1.0, 1.0] and sum(clock.delays) <= budget
    assert ei.value.attempts == 3 and len(fake.embed_requests) == 3
    assert "retry budget" in ei.value.message  # stopped by the budget, not by max_retries (10)
    # the promise, at most the budget of waiting plus one timeout per attempt: the waits are within the budget
    # (above), and every attempt was one request that httpx bounded by the timeout (no SDK retries inside)
    assert sent_timeouts == [uniform(timeout)] * ei.value.attempts


# --------------------------------------------------------------------------- 6. auth


@pytest.mark.timeout(20)
@pytest.mark.parametrize("code", [401, 403])
def test_auth_errors_fail_after_one_attempt_without_retry(fake, code):
    fake.always(("status", code))
    emb, sleep = make(fake.url, max_retries=3)
    with pytest.raises(AuthenticationError) as ei:
        emb.embed_queries(["hello"])
    err = ei.value
    assert err.exit_code == 2 and err.status == code
    assert "COHERE_API_KEY" in err.message and str(code) in err.message
    assert len(fake.embed_requests) == 1 and emb.calls == 1 and sleep.delays == []
    assert_no_secret(err, emb)


@pytest.mark.timeout(20)
def test_401_with_an_html_body_is_still_an_authentication_error(fake):
    fake.always(("status", 401, {}, "<html><body>401 Unauthorized</body></html>"))
    emb, sleep = make(fake.url)
    with pytest.raises(AuthenticationError) as ei:
        emb.embed_documents(["hello"])
    assert ei.value.exit_code == 2 and "COHERE_API_KEY" in ei.value.message
    assert len(fake.embed_requests) == 1 and sleep.delays == []
    assert_no_secret(ei.value)


@pytest.mark.timeout(20)
def test_html_429_from_a_proxy_is_still_retried_as_rate_limit(fake):
    fake.push(("status", 429, {"Retry-After": "1"}, "<html>Too Many Requests</html>"))
    emb, sleep = make(fake.url)
    assert len(emb.embed_queries(["hello"])) == 1
    assert sleep.delays == [1.0] and len(fake.embed_requests) == 2


# --------------------------------------------------------------------------- 7. 5xx


@pytest.mark.timeout(20)
def test_500_then_ok_succeeds(fake):
    fake.push(("status", 500))
    emb, sleep = make(fake.url)
    assert len(emb.embed_queries(["hello"])[0]) == DIM
    assert len(sleep.delays) == 1 and len(fake.embed_requests) == 2


@pytest.mark.timeout(20)
@pytest.mark.parametrize("max_retries", [0, 2])
def test_503_forever_is_unavailable_after_max_retries_plus_one(fake, max_retries):
    fake.always(("status", 503))
    emb, sleep = make(fake.url, max_retries=max_retries)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_documents(["hello"])
    err = ei.value
    assert len(fake.embed_requests) == max_retries + 1 == err.attempts
    assert len(sleep.delays) == max_retries
    assert err.exit_code == 3 and err.status == 503 and "503" in err.message
    assert fake.url.split("//")[1] in err.message  # names the endpoint to check
    assert_no_secret(err, emb)


# --------------------------------------------------------------------------- 8. timeouts


@pytest.mark.timeout(20)
def test_hang_times_out_and_is_retried_within_bounded_wall_time(fake, sent_timeouts):
    fake.always("hang")
    timeout = 0.5
    emb, sleep = make(fake.url, timeout=timeout, max_retries=1)
    t0 = time.monotonic()
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_queries(["hello"])
    elapsed = time.monotonic() - t0
    # two attempts, each really waiting out the 0.5 s timeout (a lower bound: load only makes it longer) ...
    assert elapsed > 2 * timeout * 0.95
    # ... and each bounded by it: httpx enforced 0.5 s on both requests, not the SDK's 300 s default
    assert sent_timeouts == [uniform(timeout)] * 2
    assert len(fake.embed_requests) == 2 and emb.calls == 2 and ei.value.attempts == 2
    assert len(sleep.delays) == 1
    assert "no answer within 0.5 s" in ei.value.message
    assert_no_secret(ei.value)


@pytest.mark.timeout(20)
def test_sub_second_timeout_is_not_rounded_up(fake, sent_timeouts):
    # EMBEDDING_TIMEOUT accepts values down to 0.1 s; 0.1 must mean 0.1 s, not 1 s
    fake.always("hang")
    emb, _ = make(fake.url, timeout=0.1, max_retries=0)
    t0 = time.monotonic()
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_queries(["hello"])
    assert time.monotonic() - t0 > 0.09  # the timeout was waited out, not failed early
    assert sent_timeouts == [uniform(0.1)]  # what httpx enforced: rounded up, it would be 1 (or 0)
    assert "0.1 s" in ei.value.message


# --------------------------------------------------------------------------- 9. bad responses


@pytest.mark.timeout(20)
def test_wrong_dimension_is_a_bad_response_naming_both_sizes(fake):
    fake.push(("dim", 768))
    emb, sleep = make(fake.url)
    with pytest.raises(BadEmbeddingResponseError) as ei:
        emb.embed_queries(["hello"])
    assert "768" in ei.value.message and "1024" in ei.value.message
    assert ei.value.exit_code == 3
    assert len(fake.embed_requests) == 1 and sleep.delays == []
    assert_no_secret(ei.value)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("behaviour", ["count_mismatch", "malformed"])
def test_count_mismatch_and_malformed_bodies_are_bad_responses(fake, behaviour):
    fake.push(behaviour)
    emb, sleep = make(fake.url)
    with pytest.raises(BadEmbeddingResponseError) as ei:
        emb.embed_documents(["one text", "two texts", "three texts"])
    assert ei.value.provider == "cohere" and ei.value.exit_code == 3
    if behaviour == "count_mismatch":
        assert "2" in ei.value.message and "3" in ei.value.message
    assert len(fake.embed_requests) == 1 and sleep.delays == []
    assert_no_secret(ei.value)


# --------------------------------------------------------------------------- 10. refused


@pytest.mark.timeout(20)
def test_connection_refused_is_unavailable_fast():
    url = f"http://127.0.0.1:{closed_port()}"
    emb, sleep = make(url, max_retries=1)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_queries(["hello"])
    # refused, not waited out like an unanswered request: a ConnectError (a timeout would be "no answer
    # within 5 s"), and the one wait between the two attempts was the short backoff, nothing longer
    assert "connection failed (ConnectError)" in ei.value.message and "no answer" not in ei.value.message
    assert emb.calls == 2 and ei.value.attempts == 2 and len(sleep.delays) == 1
    assert 0.01 <= sleep.delays[0] <= 0.0121  # backoff 0.01 * 2**0 plus <= 20 % jitter
    assert "connection failed" in ei.value.message and "127.0.0.1" in ei.value.message
    assert_no_secret(ei.value, emb)


# --------------------------------------------------------------------------- 11. config


@pytest.mark.timeout(20)
def test_unknown_model_is_a_configuration_error(fake):
    with pytest.raises(ConfigurationError) as ei:
        make(fake.url, model="embed-nonexistent-v9")
    assert ei.value.variable == "EMBEDDING_MODEL" and "EMBEDDING_MODEL" in ei.value.message
    assert ei.value.exit_code == 2
    settings = load_settings(env={"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": FAKE_KEY,
                                  "EMBEDDING_MODEL": "embed-nonexistent-v9", "COHERE_BASE_URL": fake.url})
    with pytest.raises(ConfigurationError) as ei:
        make_embedder(settings)
    assert "EMBEDDING_MODEL" in ei.value.message
    assert_no_secret(ei.value)
    assert fake.requests == []


# --------------------------------------------------------------------------- 12. end to end


@pytest.mark.timeout(30)
def test_end_to_end_settings_embedder_retriever(fake, tmp_path):
    from qdrant_client import models

    settings = load_settings(env={"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": FAKE_KEY,
                                  "COHERE_BASE_URL": fake.url, "QDRANT_PATH": str(tmp_path)})
    assert FAKE_KEY not in repr(settings) and FAKE_KEY not in json.dumps(settings.describe())
    embedder = make_embedder(settings)
    assert isinstance(embedder, CohereEmbedder)
    assert embedder.model == DEFAULT_MODEL and embedder.dimension == DIM

    docs = [
        "Humanoid robots balance on two legs using feedback control.",
        "ROS 2 nodes exchange messages over topics and services.",
        "Lidar sensors measure distance with pulsed laser light.",
        "Gazebo simulates physics for robot testing.",
    ]
    vectors = embedder.embed_documents(docs)
    store = VectorStore.in_memory()
    store.create_collection("book", DIM)
    store.upsert("book", [
        models.PointStruct(id=i + 1, vector=v,
                           payload={"content": d, "chunk_id": f"c{i}", "model_version": DEFAULT_MODEL})
        for i, (d, v) in enumerate(zip(docs, vectors))
    ])
    with Retriever(store, embedder, "book", query_max_chars=settings.query_max_chars) as retriever:
        response = retriever.search("how do lidar sensors measure distance", top_k=3)
        assert FAKE_KEY not in repr(retriever) and FAKE_KEY not in str(retriever)
    assert response.results[0].content == docs[2]
    assert response.results[0].raw_score > response.results[1].raw_score + 0.2
    assert response.model == DEFAULT_MODEL
    reqs = fake.embed_requests
    assert [r["json"]["input_type"] for r in reqs] == ["search_document", "search_query"]
    assert reqs[-1]["json"]["texts"] == ["how do lidar sensors measure distance"]
    assert all(r["headers"]["authorization"] == f"Bearer {FAKE_KEY}" for r in reqs)
    embedder.close()
