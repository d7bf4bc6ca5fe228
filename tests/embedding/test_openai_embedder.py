"""What only OpenAI has, through the REAL openai SDK against the loopback FakeOpenAI (``tests/fakes/openai_server.py``).

What every remote embedder keeps (the dimension, batching and order, input types, every failure onto the package's
errors, the retry budget, settings end to end, the service's 502, the key nowhere) is
``tests/embedding/test_provider_contract.py``, OpenAI included.
Here: the wire (``/v1/embeddings``, float encoding, the SDK's
own retries off), the 300,000 tokens one request may carry, ``dimensions`` (sent, reported, renormalised, set by
``EMBEDDING_DIMENSIONS``, keyed apart in the run cache), and ``plan``'s call count at each provider's batch size.
"""

from __future__ import annotations

import numpy as np
import pytest
from fakes.openai_server import FakeOpenAI
from remote_checks import RecordingSleep

from retrieval_lib.config import load_settings
from retrieval_lib.embedding import OpenAIEmbedder, make_embedder
from retrieval_lib.errors import ConfigurationError

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


def test_the_wire_is_post_v1_embeddings_with_floats_and_the_sdks_retries_off(fake):
    emb, sleep = make(fake)
    emb.embed_queries(["what is a humanoid robot?"])
    emb.embed_documents(["Humanoid robots walk.", "ROS 2 is middleware."])
    assert (emb.provider, emb.model, emb.dimension, emb.max_tokens) == ("openai", "text-embedding-3-small", 1536, 8191)
    reqs = fake.embed_requests
    assert [r["path"] for r in reqs] == ["/v1/embeddings"] * 2 and emb.calls == 2 and sleep.delays == []
    assert reqs[1]["json"] == {"model": "text-embedding-3-small", "input": ["Humanoid robots walk.",
                                                                            "ROS 2 is middleware."],
                               "encoding_format": "float"}
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in reqs)
    assert reqs[0]["headers"]["x-stainless-retry-count"] == "0"  # the SDK's own retries are off


def test_dimensions_is_sent_reported_and_set_by_embedding_dimensions(fake):
    emb, _ = make(fake, dimensions=256)
    [v] = emb.embed_documents(["one text"])
    assert emb.dimension == len(v) == 256 and fake.embed_requests[-1]["json"]["dimensions"] == 256
    assert abs(np.linalg.norm(v) - 1) < 1e-6  # OpenAI renormalises the shortened vector
    with pytest.raises(ConfigurationError) as ei:
        make(fake, model="text-embedding-ada-002", dimensions=256)
    assert ei.value.variable == "EMBEDDING_DIMENSIONS" and "ada-002" in ei.value.message
    settings = load_settings(env={"EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": KEY,
                                  "OPENAI_BASE_URL": fake.url + "/v1/", "EMBEDDING_DIMENSIONS": "512"})
    emb = make_embedder(settings)
    assert isinstance(emb, OpenAIEmbedder) and (emb.model, emb.dimension) == ("text-embedding-3-small", 512)
    assert len(emb.embed_queries(["hi"])[0]) == 512 and fake.embed_requests[-1]["json"]["dimensions"] == 512


def test_a_request_carries_fewer_texts_where_their_tokens_would_pass_300000(fake):
    emb, _ = make(fake, model="a-compatible-model", dimensions=8, batch_size=5000)  # OpenAI's own limits
    long = "word " * 5000  # 25,000 characters: about 8,300 tokens estimated, counted at the 8,191 window
    vectors = emb.embed_documents([long] * 40)
    assert [len(r["json"]["input"]) for r in fake.embed_requests] == [36, 4]  # 36 * 8,191 <= 300,000 < 37 * 8,191
    assert len(vectors) == 40


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
