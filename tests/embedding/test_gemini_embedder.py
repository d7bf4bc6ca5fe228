"""What only Gemini has, through the REAL google-genai SDK against the loopback FakeGemini
(``tests/fakes/gemini_server.py``).

What every remote embedder keeps (the dimension, batching and order, input types, every failure onto the package's
errors, the retry budget, settings end to end, the service's 502, the key nowhere) is
``tests/embedding/test_provider_contract.py``, Gemini included.
Here: the wire (``:batchEmbedContents``, ``x-goog-api-key``,
one request per text with its task type), ``outputDimensionality`` and the unnormalised reduced vectors, the
``RetryInfo`` delay Google puts in a 429's body, and ``GOOGLE_API_KEY`` as the key's other name.
"""

from __future__ import annotations

import numpy as np
import pytest
from fakes.gemini_server import FakeGemini
from remote_checks import RecordingSleep, assert_no_secret

from retrieval_lib.config import load_settings
from retrieval_lib.embedding import GeminiEmbedder, make_embedder
from retrieval_lib.errors import ConfigurationError

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


def test_the_wire_is_batch_embed_contents_with_task_types_and_the_key_header(fake):
    emb, sleep = make(fake)
    emb.embed_queries(["what is a humanoid robot?"])
    emb.embed_documents(["Humanoid robots walk.", "ROS 2 is middleware."])
    assert (emb.provider, emb.model, emb.dimension, emb.max_tokens) == ("gemini", "text-embedding-004", 768, 2048)
    reqs = fake.embed_requests
    assert [r["path"] for r in reqs] == ["/v1/models/text-embedding-004:batchEmbedContents"] * 2
    assert emb.calls == 2 and sleep.delays == []
    assert reqs[1]["json"]["requests"][1] == {"model": "models/text-embedding-004", "taskType": "RETRIEVAL_DOCUMENT",
                                              "content": {"parts": [{"text": "ROS 2 is middleware."}], "role": "user"}}
    assert reqs[0]["json"]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert all(r["headers"]["x-goog-api-key"] == KEY for r in reqs)


def test_output_dimensionality_is_sent_and_reduced_vectors_stay_unnormalised(fake):
    emb, _ = make(fake, model="gemini-embedding-001", dimensions=768)
    [v] = emb.embed_documents(["one text"])
    assert emb.dimension == len(v) == 768
    assert fake.embed_requests[-1]["json"]["requests"][0]["outputDimensionality"] == 768
    assert np.linalg.norm(v) < 0.99  # as Google gives them below 3,072 dimensions
    with pytest.raises(ConfigurationError) as ei:
        make(fake, model="embedding-001", dimensions=256)
    assert ei.value.variable == "EMBEDDING_DIMENSIONS"


def test_429_waits_the_retry_info_delay_google_puts_in_its_body():
    with FakeGemini(api_key=KEY, retry_delay="7s") as fake:
        fake.push(("status", 429))
        emb, sleep = make(fake)
        assert len(emb.embed_queries(["hello"])) == 1
    assert sleep.delays == [7.0] and len(fake.embed_requests) == 2


def test_google_api_key_is_the_keys_other_name(fake):
    settings = load_settings(env={"EMBEDDING_PROVIDER": "gemini", "GOOGLE_API_KEY": KEY, "GEMINI_BASE_URL": fake.url,
                                  "EMBEDDING_MODEL": "text-embedding-004"})
    assert settings.gemini_api_key is not None and settings.gemini_api_key.reveal() == KEY
    emb = make_embedder(settings)
    assert isinstance(emb, GeminiEmbedder) and len(emb.embed_queries(["hi"])[0]) == 768
    assert fake.embed_requests[-1]["headers"]["x-goog-api-key"] == KEY
    assert_no_secret(KEY, settings, emb)
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"EMBEDDING_PROVIDER": "gemini"})
    assert ei.value.variable == "GEMINI_API_KEY" and "GOOGLE_API_KEY" in ei.value.message
