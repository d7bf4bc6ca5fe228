"""Every provider end to end, and each one batching at its own limit.

For each provider, through its real SDK against its loopback fake (Cohere, OpenAI, Gemini) or its model on this
machine (sentence-transformers, e5; ``local`` is the demo every notebook and nbval run): a small collection is built,
and the library calls notebooks 01, 06 and 09 make run on it: the search and its gates, a sequential and a bounded
concurrent run whose rankings must agree, and the embedding contract. The fakes serve the bundled MiniLM's vectors
zero-padded to the provider's dimension (Cohere's fake: its hashed bag of words), so rankings have meaning.
401, 429 with ``Retry-After`` and 503 onto typed errors and the service's 502: Cohere's here, OpenAI's and Gemini's
in their own modules (``test_openai_embedder.py``, ``test_gemini_embedder.py``); the local models make no requests.

Batching: search and ingest cut texts at the embedder's request limit (Cohere 96, Gemini 100, OpenAI 2,048), a model
on this machine takes them all in one call, and ``plan`` counts calls at the same sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from corpus import DOCS, make_payload
from fakes.cohere_server import FakeCohere
from fakes.e5 import single_threaded_e5
from fakes.embedders import FakeEmbedder
from fakes.gemini_server import FakeGemini
from fakes.loopback import minilm_padded
from fakes.openai_server import FakeOpenAI
from remote_checks import RecordingSleep, service_answers

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.checks.retrieval import query
from retrieval_lib.checks.stability import latency
from retrieval_lib.cli.commands.plan import RunPlan
from retrieval_lib.collection.ours import embedded_text
from retrieval_lib.embedding import (
    CohereEmbedder,
    GeminiEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    batch_limit,
    request_size,
)
from retrieval_lib.ingest import SAMPLE_BOOK, ingest
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.report import NotebookReport

KEY = "sk-TEST-providers-41d0"
#: The short docs (the long URDF one would only slow the local models down).
SHORT = [d for d in DOCS if len(d["content"]) < 400]
QUERIES = ["What is ROS 2?", "Gazebo simulation", "Which battery powers the humanoid?"]
EXPECTED_TOP = {"What is ROS 2?": "module-01-ros2/", "Gazebo simulation": "module-02-simulation/01",
                "Which battery powers the humanoid?": "appendices/b-hardware"}
pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(300)]


@contextmanager
def provider(name: str, minilm: Any) -> Iterator[Any]:
    """The embedder of provider ``name``, pointed at its loopback fake while the block runs."""
    if name == "cohere":
        with FakeCohere(dim=384) as fake:
            emb = CohereEmbedder(KEY, "embed-english-light-v3.0", base_url=fake.url, max_retries=0)
            yield emb
            emb.close()
    elif name == "openai":
        with FakeOpenAI(vectors=minilm_padded(minilm), api_key=KEY) as fake:
            emb = OpenAIEmbedder(KEY, base_url=fake.url + "/v1", max_retries=0)
            yield emb
            emb.close()
    elif name == "gemini":
        with FakeGemini(vectors=minilm_padded(minilm), api_key=KEY) as fake:
            emb = GeminiEmbedder(KEY, "text-embedding-004", base_url=fake.url, max_retries=0)
            yield emb
            emb.close()
    elif name == "sentence-transformers":
        yield SentenceTransformerEmbedder(str(minilm._folder))  # the bundled MiniLM as any model folder
    else:
        yield single_threaded_e5()


def build(store: VectorStore, emb: Any) -> None:
    """The short docs as ingest writes them: title line + content, embedded as documents."""
    from qdrant_client import models

    store.create_collection("book", emb.dimension)
    payloads = [make_payload(d, emb.model) for d in SHORT]
    vectors = emb.embed_documents([embedded_text(p) for p in payloads])
    store.upsert("book", [models.PointStruct(id=d["id"], vector=v, payload=p)
                          for d, p, v in zip(SHORT, payloads, vectors)])


@pytest.mark.parametrize("name", ["cohere", "openai", "gemini", "sentence-transformers", "e5"])
def test_each_provider_builds_a_collection_and_passes_01_06_and_09(name, embedder, tmp_path):
    with provider(name, embedder) as emb:
        store = VectorStore.in_memory()
        build(store, emb)
        retriever = Retriever(store, emb, "book")
        # 01: the queries, their gates, and an unreachable threshold that empties the answer
        report01 = NotebookReport("01_query", "t", run_dir=tmp_path)
        responses = retriever.search_many(QUERIES, top_k=3)
        no_match = retriever.search(QUERIES[0], top_k=3, similarity_threshold=0.9999)
        query.QueryAnswers(responses, no_match, top_k=3, similarity_threshold=0.0).record(report01)
        assert report01.gates and all(g.passed for g in report01.gates), report01.gates
        tops = {r.query_text: r.results[0].source_file for r in responses}
        assert all(tops[q].startswith(prefix) for q, prefix in EXPECTED_TOP.items()), tops
        # 06: two sequential rounds and a bounded concurrent run agree on every ranking (no timing is judged)
        samples = latency.time_searches(retriever, QUERIES, 2, top_k=3)
        run = latency.run_concurrent(retriever, QUERIES, 6, 3, reference=latency.reference_rankings(samples),
                                     timeout_s=120, top_k=3)
        assert latency.unstable_queries(samples) == []
        assert (run.completed, run.errors, run.timed_out) == (6, 0, 0) and run.rankings_identical
        # 09: the stored vectors are what this embedder makes of the stored text
        result = contract.probe(store, "book", emb, sample=len(SHORT))
        assert result.passed and result.diagnosis is None and result.lowest_cosine > 0.99
        assert result.dimension == emb.dimension
        store.close()


# --------------------------------------------------------------------------- batching at each provider's limit

def _sizes(fake: Any, name: str) -> list[int]:
    field = {"cohere": "texts", "openai": "input", "gemini": "requests"}[name]
    return [len(r["json"][field]) for r in fake.embed_requests]


@contextmanager
def hashed(name: str) -> Iterator[tuple[Any, Any]]:
    """A remote embedder against its fake serving hashed vectors (no model: batching only)."""
    if name == "cohere":
        with FakeCohere(dim=384) as fake:
            # each fake stands in for its vendor's own API: EMBEDDING_BATCH_SIZE at the vendor's limit (at another
            # base URL the batch would start at a local server's 16: tests/embedding/test_embed_batches.py)
            yield CohereEmbedder(KEY, "embed-english-light-v3.0", base_url=fake.url, max_retries=0,
                                 batch_size=batch_limit(name)), fake
    elif name == "openai":
        with FakeOpenAI(dim=32) as fake:
            yield OpenAIEmbedder(KEY, "compatible-model", base_url=fake.url + "/v1", dimensions=32,
                                 batch_size=batch_limit(name),
                                 max_retries=0), fake
    else:
        with FakeGemini(dim=32) as fake:
            yield GeminiEmbedder(KEY, "compatible-model", base_url=fake.url, dimensions=32, max_retries=0,
                                 batch_size=batch_limit(name)), fake


@pytest.mark.parametrize(("name", "limit"), [("cohere", 96), ("openai", 2048), ("gemini", 100)])
def test_search_and_ingest_batch_at_the_providers_own_limit(name, limit):
    texts = [f"question {i} about robots" for i in range(250)]
    with hashed(name) as (emb, fake):
        assert request_size(emb) == limit == batch_limit(name)
        store = VectorStore.in_memory()
        summary = ingest(store, emb, "book", SAMPLE_BOOK, progress=False)
        chunks = summary.chunks_total
        sizes = _sizes(fake, name)
        assert sum(sizes) == chunks and len(sizes) == math.ceil(chunks / limit) > 0
        assert all(s == limit for s in sizes[:-1])  # not Cohere's 96 for everyone
        before = len(fake.embed_requests)
        responses = Retriever(store, emb, "book").search_many(texts, top_k=2)
        sent = _sizes(fake, name)[before:]
        plan = RunPlan(name, emb.model, batch_limit(name), [], [])
        assert len(responses) == 250 and sum(sent) == 250 and all(s == min(limit, 250) for s in sent[:-1])
        assert len(sent) == plan.calls_for(250) == math.ceil(250 / limit)
        store.close()


def test_a_model_on_this_machine_embeds_a_search_in_one_call_and_ingests_at_its_encode_batch():
    emb = FakeEmbedder.hashed()
    assert request_size(emb) is None
    store = VectorStore.in_memory()
    summary = ingest(store, emb, "book", SAMPLE_BOOK, progress=False)
    assert emb.document_calls == math.ceil(summary.chunks_total / batch_limit("local"))
    Retriever(store, emb, "book").search_many([f"question {i}" for i in range(150)], top_k=2)
    assert emb.query_calls == 1 == RunPlan("local", emb.model, batch_limit("local"), [], []).calls_for(150)
    store.close()


def test_cohere_maps_401_429_with_retry_after_and_503_onto_the_services_502(tmp_path, caplog):
    # OpenAI and Gemini: the same assertion in their own modules (service_answers, remote_checks.py)
    with FakeCohere(dim=384) as fake:
        emb = CohereEmbedder(KEY, "embed-english-light-v3.0", base_url=fake.url, max_retries=1, retry_budget=3.0,
                             backoff=0.01, sleep=RecordingSleep())
        answers = service_answers(emb, fake, [("status", 401), ("status", 429, {"Retry-After": "1"}),
                                              ("status", 503)], tmp_path, KEY, caplog)
        emb.close()
    assert answers == [(502, "AuthenticationError"), (502, "RateLimitedError"), (502, "EmbeddingUnavailableError")]
