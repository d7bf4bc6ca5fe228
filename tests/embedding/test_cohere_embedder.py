"""What only Cohere has, through the REAL cohere SDK against the loopback FakeCohere (``tests/fakes/cohere_server.py``).

What every remote embedder keeps (the dimension, batching and order, input types, every failure onto the package's
errors, the retry budget, settings end to end, the service's 502, the key nowhere) is
``tests/embedding/test_provider_contract.py``, Cohere included. Here: the v2 wire (``embedding_types=["float"]``,
``truncate="END"``, the bearer key), the input type deciding the vector, the default model, ``output_dimension``
(embed-v4.0), and the closed list of models.
"""

from __future__ import annotations

import numpy as np
import pytest
from fakes.cohere_server import FakeCohere, embed_text
from remote_checks import RecordingSleep, assert_no_secret

from retrieval_lib.config import load_settings
from retrieval_lib.embedding.providers import CohereEmbedder, make_embedder
from retrieval_lib.errors import ConfigurationError

FAKE_KEY = "co-TEST-KEY-3f9a1c"
DEFAULT_MODEL = "embed-multilingual-v3.0"
DIM = 1024

pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(20)]


@pytest.fixture
def fake():
    with FakeCohere(dim=DIM, api_key=FAKE_KEY, hang_cap=5) as f:
        yield f


def make(url: str, **options) -> CohereEmbedder:
    defaults = {"timeout": 5.0, "max_retries": 0, "backoff": 0.01, "sleep": RecordingSleep()}
    return CohereEmbedder(FAKE_KEY, base_url=url, **{**defaults, **options})


def test_the_wire_is_v2_embed_with_float_types_truncation_and_the_input_type_deciding_the_vector(fake):
    emb = make(fake.url)
    [q] = emb.embed_queries(["what is a humanoid robot?"])
    d = emb.embed_documents(["Humanoid robots walk on two legs.", "ROS 2 is middleware."])
    emb.close()
    query, document = fake.embed_requests
    assert query["path"] == "/v2/embed" and query["method"] == "POST"
    assert query["json"] == {"model": DEFAULT_MODEL, "input_type": "search_query", "embedding_types": ["float"],
                             "truncate": "END", "texts": ["what is a humanoid robot?"]}
    assert document["json"]["input_type"] == "search_document" and len(document["json"]["texts"]) == 2
    assert all(r["headers"]["authorization"] == f"Bearer {FAKE_KEY}" for r in (query, document))
    # what the fake computed for exactly these (model, input_type, text) triples: the input type reached the vector
    assert np.allclose(q, embed_text("what is a humanoid robot?", model=DEFAULT_MODEL, input_type="search_query",
                                     dim=DIM))
    assert np.allclose(d[1], embed_text("ROS 2 is middleware.", model=DEFAULT_MODEL, input_type="search_document",
                                        dim=DIM))
    assert not np.allclose(q, embed_text("what is a humanoid robot?", model=DEFAULT_MODEL,
                                         input_type="search_document", dim=DIM))


def test_settings_without_a_model_give_embed_multilingual_v3_at_1024(fake):
    settings = load_settings(env={"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": FAKE_KEY,
                                  "COHERE_BASE_URL": fake.url})
    emb = make_embedder(settings)
    assert isinstance(emb, CohereEmbedder) and (emb.model, emb.dimension, emb.max_tokens) == (DEFAULT_MODEL, DIM, 512)
    assert emb.input_types == ("search_document", "search_query", "classification", "clustering")
    assert_no_secret(FAKE_KEY, emb, settings)


def test_embed_v4_sends_output_dimension_and_refuses_a_size_it_does_not_offer(fake):
    emb = make(fake.url, model="embed-v4.0", dimensions=512)
    [v] = emb.embed_documents(["one text"])
    assert emb.dimension == len(v) == 512 and emb.native_dimension == 1536 and emb.max_tokens == 128_000
    assert fake.embed_requests[-1]["json"]["output_dimension"] == 512
    with FakeCohere(dim=1536) as wide:  # the model's own size: nothing asked
        full = make(wide.url, model="embed-v4.0")
        assert full.dimension == 1536 == len(full.embed_documents(["x"])[0])
        assert "output_dimension" not in wide.embed_requests[-1]["json"]
    for model, dimensions, offered in (("embed-v4.0", 300, "256, 512, 1024, 1536"),
                                       ("embed-english-v3.0", 512, "1024 only")):
        with pytest.raises(ConfigurationError) as ei:
            make(fake.url, model=model, dimensions=dimensions)
        assert ei.value.variable == "EMBEDDING_DIMENSIONS" and offered in ei.value.message
    assert len(fake.requests) == 1


def test_a_model_cohere_does_not_have_is_refused_by_name_before_any_request(fake):
    settings = load_settings(env={"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": FAKE_KEY,
                                  "EMBEDDING_MODEL": "embed-nonexistent-v9", "COHERE_BASE_URL": fake.url})
    with pytest.raises(ConfigurationError) as ei:
        make_embedder(settings)
    assert ei.value.variable == "EMBEDDING_MODEL" and "embed-multilingual-v3.0" in ei.value.message
    assert_no_secret(FAKE_KEY, ei.value)
    assert fake.requests == []
