"""OpenAIEmbedder through the REAL openai SDK against the loopback FakeOpenAI (``tests/fakes/openai_server.py``).

The wire (path, headers, JSON), batching to 2,048 inputs, ``dimensions``, the bounded retries honouring
``Retry-After``, every error onto the package's tree and onto the service's 502, settings end to end, a small
collection searched and probed with meaningful vectors (the bundled MiniLM's, zero-padded), and the key nowhere.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from corpus import DOCS, fill_collection
from fakes.loopback import minilm_padded
from fakes.openai_server import FakeOpenAI
from fakes.tcp import closed_port
from remote_checks import RecordingSleep, assert_no_secret, service_answers

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.config import load_settings
from retrieval_lib.embedding import OpenAIEmbedder, make_embedder
from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    ConfigurationError,
    EmbeddingUnavailableError,
    RateLimitedError,
)
from retrieval_lib.search import Retriever

KEY = "sk-TEST-openai-9c2e71"
pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(60)]


@pytest.fixture
def fake():
    with FakeOpenAI(api_key=KEY, hang_cap=5) as f:
        yield f


def make(fake: FakeOpenAI, *, key: str = KEY, model: str = "text-embedding-3-small", **options):
    sleep = RecordingSleep()
    defaults = {"timeout": 5.0, "max_retries": 3, "retry_budget": 60.0, "backoff": 0.01}
    emb = OpenAIEmbedder(key, model, base_url=fake.url + "/v1", sleep=sleep, **{**defaults, **options})
    return emb, sleep


def test_the_wire_is_post_v1_embeddings_with_floats_and_the_bearer_key(fake, caplog):
    emb, sleep = make(fake)
    with caplog.at_level(logging.DEBUG):
        q = emb.embed_queries(["what is a humanoid robot?"])
        d = emb.embed_documents(["Humanoid robots walk.", "ROS 2 is middleware."])
    assert (emb.provider, emb.model, emb.dimension, emb.max_tokens) == ("openai", "text-embedding-3-small", 1536, 8191)
    assert len(q) == 1 and len(d) == 2 and all(len(v) == 1536 for v in q + d)
    reqs = fake.embed_requests
    assert [r["path"] for r in reqs] == ["/v1/embeddings"] * 2 and emb.calls == 2 and sleep.delays == []
    assert reqs[1]["json"] == {"model": "text-embedding-3-small", "input": ["Humanoid robots walk.",
                                                                            "ROS 2 is middleware."],
                               "encoding_format": "float"}
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in reqs)
    assert reqs[0]["headers"]["x-stainless-retry-count"] == "0"  # the SDK's own retries are off
    # no input types at OpenAI: the same text is the same vector as a query and as a document
    assert np.allclose(emb.embed_queries(["ROS 2 is middleware."])[0], d[1])
    assert_no_secret(KEY, emb, logs=caplog.text)


def test_dimensions_is_sent_and_reported(fake):
    emb, _ = make(fake, dimensions=256)
    [v] = emb.embed_documents(["one text"])
    assert emb.dimension == len(v) == 256 and fake.embed_requests[-1]["json"]["dimensions"] == 256
    assert abs(np.linalg.norm(v) - 1) < 1e-6  # OpenAI renormalises the shortened vector
    with pytest.raises(ConfigurationError) as ei:
        make(fake, model="text-embedding-ada-002", dimensions=256)
    assert ei.value.variable == "EMBEDDING_DIMENSIONS" and "ada-002" in ei.value.message


def test_inputs_go_in_batches_of_at_most_2048_in_order(fake):
    # the fake stands in for OpenAI's own API: EMBEDDING_BATCH_SIZE above the limit is held to OpenAI's 2,048
    emb, _ = make(fake, model="tiny-compatible-model", dimensions=8, batch_size=5000)
    texts = [f"passage {i} token{i}" for i in range(2050)]
    vectors = emb.embed_documents(texts)
    assert [len(r["json"]["input"]) for r in fake.embed_requests] == [2048, 2]
    assert [t for r in fake.embed_requests for t in r["json"]["input"]] == texts
    [alone] = emb.embed_documents([texts[2049]])
    assert np.allclose(alone, vectors[2049])


def test_an_unknown_model_reports_the_dimension_its_server_gives(fake):
    emb, _ = make(fake, model="intfloat/multilingual-e5-small")
    assert "unknown" in repr(emb) and fake.embed_requests == []
    assert emb.dimension == fake.dim and len(fake.embed_requests) == 1  # one probe, once
    assert emb.dimension == fake.dim and len(fake.embed_requests) == 1


def test_429_with_retry_after_is_honoured_then_succeeds(fake):
    fake.push(("status", 429, {"Retry-After": "2"}))
    emb, sleep = make(fake)
    assert len(emb.embed_queries(["hello"])) == 1
    assert sleep.delays == [2.0] and len(fake.embed_requests) == 2 and emb.calls == 2


def test_429_forever_is_rate_limited_after_bounded_attempts(fake):
    fake.always(("status", 429, {"Retry-After": "1"}))
    emb, sleep = make(fake, max_retries=2)
    with pytest.raises(RateLimitedError) as ei:
        emb.embed_queries(["hello"])
    err = ei.value
    assert err.attempts == 3 == len(fake.embed_requests) and sleep.delays == [1.0, 1.0]
    assert err.retry_after == 1.0 and err.status == 429 and err.exit_code == 3 and err.provider == "openai"
    assert_no_secret(KEY, err, emb)


def test_retry_after_past_the_budget_fails_at_once(fake):
    fake.always(("status", 429, {"Retry-After": "120"}))
    emb, sleep = make(fake, retry_budget=5.0)
    with pytest.raises(RateLimitedError) as ei:
        emb.embed_queries(["hello"])
    assert sleep.delays == [] and len(fake.embed_requests) == 1 and "budget" in ei.value.message


@pytest.mark.parametrize("how", ["scripted 401", "a wrong key"])
def test_401_is_an_authentication_error_without_retry(fake, how):
    if how == "scripted 401":
        fake.always(("status", 401))
        emb, sleep = make(fake)
    else:
        emb, sleep = make(fake, key="sk-wrong-key")
    with pytest.raises(AuthenticationError) as ei:
        emb.embed_documents(["hello"])
    err = ei.value
    assert err.status == 401 and err.exit_code == 2 and "OPENAI_API_KEY" in err.message
    assert len(fake.embed_requests) == 1 and sleep.delays == []
    assert_no_secret(KEY, err)


def test_503_forever_is_unavailable_after_max_retries_plus_one(fake):
    fake.always(("status", 503))
    emb, sleep = make(fake, max_retries=2)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_documents(["hello"])
    assert ei.value.attempts == 3 == len(fake.embed_requests) and len(sleep.delays) == 2
    assert ei.value.status == 503 and fake.url.split("//")[1] in ei.value.message
    assert_no_secret(KEY, ei.value)


def test_an_unanswered_request_times_out_and_is_unavailable(fake):
    fake.always("hang")
    emb, sleep = make(fake, timeout=0.3, max_retries=1)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_queries(["hello"])
    assert "no answer within 0.3 s" in ei.value.message and ei.value.attempts == 2 == len(fake.embed_requests)
    assert fake.embed_requests[0]["headers"]["x-stainless-read-timeout"] == "0.3"


def test_a_refused_connection_is_unavailable():
    sleep = RecordingSleep()
    emb = OpenAIEmbedder(KEY, base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=1, backoff=0.01,
                         sleep=sleep)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_queries(["hello"])
    assert "connection failed" in ei.value.message and ei.value.attempts == 2 and len(sleep.delays) == 1
    assert_no_secret(KEY, ei.value, emb)


@pytest.mark.parametrize("behaviour", ["malformed", "count_mismatch", ("dim", 12)])
def test_unusable_answers_are_bad_responses_not_retried(fake, behaviour):
    fake.push(behaviour)
    emb, sleep = make(fake)
    with pytest.raises(BadEmbeddingResponseError) as ei:
        emb.embed_documents(["one", "two"])
    assert len(fake.embed_requests) == 1 and sleep.delays == [] and ei.value.provider == "openai"
    assert_no_secret(KEY, ei.value)


def test_settings_end_to_end_and_what_is_missing(fake):
    env = {"EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": fake.url + "/v1/",
           "EMBEDDING_DIMENSIONS": "512"}
    settings = load_settings(env=env)
    assert KEY not in repr(settings) and settings.describe()["openai_api_key"] == "set"
    emb = make_embedder(settings)
    assert isinstance(emb, OpenAIEmbedder) and (emb.model, emb.dimension) == ("text-embedding-3-small", 512)
    assert len(emb.embed_queries(["hi"])[0]) == 512
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"EMBEDDING_PROVIDER": "openai"})
    assert ei.value.variable == "OPENAI_API_KEY" and ei.value.exit_code == 2


def test_the_service_answers_502_for_401_429_and_503(fake, tmp_path, caplog):
    emb, _ = make(fake, max_retries=1, retry_budget=3.0)
    answers = service_answers(emb, fake, [("status", 401), ("status", 429, {"Retry-After": "1"}), ("status", 503)],
                              tmp_path, KEY, caplog)
    assert answers == [(502, "AuthenticationError"), (502, "RateLimitedError"), (502, "EmbeddingUnavailableError")]


@pytest.mark.timeout(300)
def test_a_collection_built_through_the_fake_is_searched_and_passes_the_contract(embedder):
    with FakeOpenAI(vectors=minilm_padded(embedder)) as fake:
        emb = OpenAIEmbedder(KEY, base_url=fake.url + "/v1", max_retries=0)
        store = VectorStore.in_memory()
        fill_collection(store, "book", emb, DOCS)
        result = contract.probe(store, "book", emb, sample=len(DOCS))
        with Retriever(store, emb, "book") as retriever:
            top = retriever.search("How do I install ROS 2 on Ubuntu?", top_k=3).results
    assert "ros" in top[0].content.lower()
    assert result.passed and result.diagnosis is None and result.dimension == 1536


@pytest.mark.parametrize(("provider", "texts", "calls"), [
    ("cohere", 200, 3), ("openai", 2050, 2), ("gemini", 250, 3), ("local", 500, 1), ("sentence-transformers", 500, 1),
    ("e5", 500, 1)])
def test_plan_counts_calls_at_each_providers_batch_size(provider, texts, calls):
    from retrieval_lib.cli.commands.plan import RunPlan
    from retrieval_lib.embedding import batch_limit

    plan = RunPlan(provider, "m", batch_limit(provider), [], [])
    assert plan.calls_for(texts) == calls and plan.calls_for(0) == 0
    assert plan.calls_text(texts) == (f"⌈{texts}/{plan.batch}⌉" if plan.remote else str(calls))


def test_the_run_cache_keys_a_reduced_dimension_apart(fake, tmp_path):
    from retrieval_lib.embedding import CachedEmbedder, QueryCache

    cache = QueryCache(tmp_path / "q.json")
    full, _ = make(fake)
    short, _ = make(fake, dimensions=256)
    a, b = CachedEmbedder(full, cache), CachedEmbedder(short, cache)
    assert len(a.embed_queries(["hello"])[0]) == 1536 and len(b.embed_queries(["hello"])[0]) == 256
    assert len(a.embed_queries(["hello"])[0]) == 1536 and len(fake.embed_requests) == 2  # the second from the cache
    # what only some embedders have passes through (the fake is not OpenAI's own URL: a local server's batch)
    assert b.input_types == ("none",) and b.max_batch == 16
