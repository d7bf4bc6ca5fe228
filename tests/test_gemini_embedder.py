"""GeminiEmbedder through the REAL google-genai SDK against the loopback FakeGemini (``tests/fakes/gemini_server.py``).

The wire (``:batchEmbedContents``, ``x-goog-api-key``, task types, ``outputDimensionality``), batching to 100,
the bounded retries honouring ``Retry-After`` and Google's ``RetryInfo``, every error onto the package's tree and
onto the service's 502, settings end to end (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``), a small collection searched
and probed with meaningful vectors, and the key nowhere.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from corpus import DOCS, fill_collection
from fakes.gemini_server import FakeGemini
from fakes.loopback import minilm_padded
from fakes.tcp import closed_port
from remote_checks import RecordingSleep, assert_no_secret, service_answers

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.config import load_settings
from retrieval_lib.embedding import GeminiEmbedder, make_embedder
from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    ConfigurationError,
    EmbeddingUnavailableError,
    RateLimitedError,
)
from retrieval_lib.search import Retriever

KEY = "AIza-TEST-gemini-51f0d3"
pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(60)]


@pytest.fixture
def fake():
    with FakeGemini(api_key=KEY, hang_cap=5) as f:
        yield f


def make(fake: FakeGemini, *, key: str = KEY, model: str = "text-embedding-004", **options):
    sleep = RecordingSleep()
    defaults = {"timeout": 5.0, "max_retries": 3, "retry_budget": 60.0, "backoff": 0.01}
    emb = GeminiEmbedder(key, model, base_url=fake.url, sleep=sleep, **{**defaults, **options})
    return emb, sleep


def test_the_wire_is_batch_embed_contents_with_task_types_and_the_key_header(fake, caplog):
    emb, sleep = make(fake)
    with caplog.at_level(logging.DEBUG):
        q = emb.embed_queries(["what is a humanoid robot?"])
        d = emb.embed_documents(["Humanoid robots walk.", "ROS 2 is middleware."])
    assert (emb.provider, emb.model, emb.dimension, emb.max_tokens) == ("gemini", "text-embedding-004", 768, 2048)
    assert len(q) == 1 and len(d) == 2 and all(len(v) == 768 for v in q + d)
    reqs = fake.embed_requests
    assert [r["path"] for r in reqs] == ["/v1/models/text-embedding-004:batchEmbedContents"] * 2
    assert emb.calls == 2 and sleep.delays == []
    assert reqs[1]["json"]["requests"][1] == {"model": "models/text-embedding-004", "taskType": "RETRIEVAL_DOCUMENT",
                                              "content": {"parts": [{"text": "ROS 2 is middleware."}], "role": "user"}}
    assert reqs[0]["json"]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert all(r["headers"]["x-goog-api-key"] == KEY for r in reqs)
    assert_no_secret(KEY, emb, logs=caplog.text)


def test_every_task_type_is_sent_as_asked(fake):
    emb, _ = make(fake)
    for task in emb.input_types:
        emb.embed_as(["one text"], task)
    assert [r["json"]["requests"][0]["taskType"] for r in fake.embed_requests] == list(emb.input_types)
    assert emb.input_types[:2] == ("RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY")
    with pytest.raises(ValueError):
        emb.embed_as(["x"], "search_query")


def test_output_dimensionality_is_sent_and_reduced_vectors_stay_unnormalised(fake):
    emb, _ = make(fake, model="gemini-embedding-001", dimensions=768)
    [v] = emb.embed_documents(["one text"])
    assert emb.dimension == len(v) == 768 and not emb.normalised
    assert fake.embed_requests[-1]["json"]["requests"][0]["outputDimensionality"] == 768
    assert np.linalg.norm(v) < 0.99  # as Google gives them below 3,072 dimensions
    with pytest.raises(ConfigurationError) as ei:
        make(fake, model="embedding-001", dimensions=256)
    assert ei.value.variable == "EMBEDDING_DIMENSIONS"


def test_texts_go_in_batches_of_at_most_100_in_order(fake):
    emb, _ = make(fake, batch_size=500)  # the fake stands in for Google's API: held to its limit of 100
    texts = [f"passage {i} token{i}" for i in range(250)]
    vectors = emb.embed_documents(texts)
    assert [len(r["json"]["requests"]) for r in fake.embed_requests] == [100, 100, 50]
    sent = [q["content"]["parts"][0]["text"] for r in fake.embed_requests for q in r["json"]["requests"]]
    assert sent == texts
    [alone] = emb.embed_documents([texts[180]])
    assert np.allclose(alone, vectors[180])


@pytest.mark.parametrize(("headers", "delay"), [({"Retry-After": "2"}, None), ({}, "7s")])
def test_429_waits_as_asked_by_retry_after_or_retry_info(headers, delay):
    with FakeGemini(api_key=KEY, retry_delay=delay) as fake:
        fake.push(("status", 429, headers))
        emb, sleep = make(fake)
        assert len(emb.embed_queries(["hello"])) == 1
    assert sleep.delays == [2.0 if headers else 7.0] and len(fake.embed_requests) == 2


def test_429_forever_is_rate_limited_after_bounded_attempts(fake):
    fake.always(("status", 429, {"Retry-After": "1"}))
    emb, sleep = make(fake, max_retries=2)
    with pytest.raises(RateLimitedError) as ei:
        emb.embed_queries(["hello"])
    err = ei.value
    assert err.attempts == 3 == len(fake.embed_requests) and sleep.delays == [1.0, 1.0]
    assert err.retry_after == 1.0 and err.status == 429 and err.provider == "gemini"
    assert_no_secret(KEY, err, emb)


@pytest.mark.parametrize("how", ["scripted 401", "a wrong key (Google's 400)"])
def test_a_refused_key_is_an_authentication_error_without_retry(fake, how):
    if how == "scripted 401":
        fake.always(("status", 401))
        emb, sleep = make(fake)
    else:
        emb, sleep = make(fake, key="AIza-wrong")
    with pytest.raises(AuthenticationError) as ei:
        emb.embed_documents(["hello"])
    err = ei.value
    assert err.exit_code == 2 and "GEMINI_API_KEY" in err.message
    assert len(fake.embed_requests) == 1 and sleep.delays == []
    assert_no_secret(KEY, err)


def test_503_forever_is_unavailable_after_max_retries_plus_one(fake):
    fake.always(("status", 503))
    emb, sleep = make(fake, max_retries=2)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_documents(["hello"])
    assert ei.value.attempts == 3 == len(fake.embed_requests) and len(sleep.delays) == 2
    assert ei.value.status == 503
    assert_no_secret(KEY, ei.value)


def test_an_unanswered_request_times_out_and_is_unavailable(fake):
    fake.always("hang")
    emb, _ = make(fake, timeout=0.3, max_retries=1)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_queries(["hello"])
    assert "no answer within 0.3 s" in ei.value.message and ei.value.attempts == 2 == len(fake.embed_requests)


def test_a_refused_connection_is_unavailable():
    sleep = RecordingSleep()
    emb = GeminiEmbedder(KEY, base_url=f"http://127.0.0.1:{closed_port()}", max_retries=1, backoff=0.01, sleep=sleep)
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
    assert len(fake.embed_requests) == 1 and sleep.delays == [] and ei.value.provider == "gemini"
    assert_no_secret(KEY, ei.value)


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_settings_end_to_end_with_either_key_variable(fake, variable):
    settings = load_settings(env={"EMBEDDING_PROVIDER": "gemini", variable: KEY, "GEMINI_BASE_URL": fake.url,
                                  "EMBEDDING_MODEL": "text-embedding-004"})
    assert KEY not in repr(settings) and settings.describe()["gemini_api_key"] == "set"
    emb = make_embedder(settings)
    assert isinstance(emb, GeminiEmbedder) and emb.dimension == 768
    assert len(emb.embed_queries(["hi"])[0]) == 768
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"EMBEDDING_PROVIDER": "gemini"})
    assert ei.value.variable == "GEMINI_API_KEY" and "GOOGLE_API_KEY" in ei.value.message


def test_the_service_answers_502_for_401_429_and_503(fake, tmp_path, caplog):
    emb, _ = make(fake, max_retries=1, retry_budget=3.0)
    answers = service_answers(emb, fake, [("status", 401), ("status", 429, {"Retry-After": "1"}), ("status", 503)],
                              tmp_path, KEY, caplog)
    assert answers == [(502, "AuthenticationError"), (502, "RateLimitedError"), (502, "EmbeddingUnavailableError")]


@pytest.mark.timeout(300)
def test_a_collection_built_through_the_fake_is_searched_and_passes_the_contract(embedder):
    with FakeGemini(vectors=minilm_padded(embedder)) as fake:
        emb = GeminiEmbedder(KEY, "text-embedding-004", base_url=fake.url, max_retries=0)
        store = VectorStore.in_memory()
        fill_collection(store, "book", emb, DOCS)
        result = contract.probe(store, "book", emb, sample=len(DOCS))
        with Retriever(store, emb, "book") as retriever:
            top = retriever.search("How do I install ROS 2 on Ubuntu?", top_k=3).results
    assert "ros" in top[0].content.lower()
    assert result.passed and result.diagnosis is None and result.dimension == 768
