"""The shared test doubles outside the network: ``FakeEmbedder`` in each configuration, and the proxy guard."""

from __future__ import annotations

import math
import os
import time

import pytest
from fakes.embedders import FakeEmbedder, Killed, char_stats, hashed_bag_of_words
from fakes.proxies import LOOPBACK_HOSTS, PROXY_VARS, clear_proxies, direct_env

from retrieval_lib.embedding.providers import Embedder
from retrieval_lib.errors import EmbeddingError
from retrieval_lib.ingest.chunking import default_count_tokens

CONFIGURATIONS = {
    "hashed": lambda: FakeEmbedder.hashed(),
    "tiny": lambda: FakeEmbedder.tiny(),
    "fixed": lambda: FakeEmbedder.fixed([1, 0, 0]),
    "table": lambda: FakeEmbedder.table({"a": [1.0, 0.0], "b": [0.0, 1.0]}),
    "wrapping": lambda: FakeEmbedder(inner=FakeEmbedder.hashed(dimension=16)),
}


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_every_configuration_satisfies_the_embedder_protocol(name):
    e = CONFIGURATIONS[name]()
    assert isinstance(e, Embedder)
    text = "a" if name == "table" else "ROS 2 nodes"
    [q] = e.embed_queries([text])
    [d] = e.embed_documents([text])
    assert len(q) == len(d) == e.dimension and q == d  # no noise configured: one space for both kinds
    assert all(isinstance(x, float) for x in q)
    assert e.count_tokens("three small words") >= 3


def test_configurations_keep_their_identities_and_token_counts():
    hashed = FakeEmbedder.hashed(model="m", dimension=32)
    assert (hashed.provider, hashed.model, hashed.dimension, hashed.max_tokens) == ("test", "m", 32, 256)
    assert hashed.count_tokens("Ünïcode words, and punctuation!") == default_count_tokens(
        "Ünïcode words, and punctuation!")
    assert (FakeEmbedder.tiny().model, FakeEmbedder.tiny().dimension) == ("tiny-4", 4)
    fixed = FakeEmbedder.fixed([3, 4])
    assert (fixed.provider, fixed.model, fixed.dimension) == ("fixed", "fixed-model", 2)
    assert fixed.embed_queries(["anything", "else"]) == [[3.0, 4.0], [3.0, 4.0]]
    table = FakeEmbedder.table({"x": [0.6, 0.8]})
    assert (table.provider, table.model, table.dimension) == ("table", "table-model", 2)
    with pytest.raises(KeyError):
        table.embed_queries(["unknown"])
    inner = FakeEmbedder.hashed(model="inner-model", dimension=8, max_tokens=100)
    wrapper = FakeEmbedder(inner=inner)
    assert (wrapper.provider, wrapper.model, wrapper.dimension, wrapper.max_tokens) == ("test", "inner-model", 8, 100)
    assert FakeEmbedder(char_stats, dimension=4).max_tokens == 512  # what ingest assumes when unset


def test_vector_functions():
    bow = hashed_bag_of_words(64)
    a, b, c = bow("ROS 2 nodes"), bow("nodes ROS 2"), bow("pizza dough")
    assert a == b and a != c
    assert math.isclose(sum(x * x for x in a), 1.0) and bow("")[0] == 1.0  # never the zero vector
    assert all(x >= 1.0 for x in char_stats("")) and char_stats("ab") != char_stats("abc")


def test_calls_and_texts_are_recorded_and_reset():
    inner = FakeEmbedder.hashed()
    e = FakeEmbedder(inner=inner)
    e.embed_queries(["q1", "q2"])
    e.embed_documents(["d1"])
    e.embed_documents(["d2", "d3"])
    assert (e.query_calls, e.document_calls, e.calls) == (1, 2, 3)
    assert e.query_texts == ["q1", "q2"] and e.document_texts == ["d1", "d2", "d3"]
    assert inner.calls == 3  # every call reached the wrapped embedder
    assert e.peak == 1 and e.running == 0
    e.reset()
    assert (e.calls, e.query_texts, e.document_texts) == (0, [], [])


def test_kill_on_document_call_dies_from_that_batch_on():
    e = FakeEmbedder.hashed(kill_on_document_call=2)
    e.embed_documents(["first batch"])
    for n in (2, 3):
        with pytest.raises(Killed, match=f"call {n}"):
            e.embed_documents(["later batch"])
    assert e.document_calls == 3 and e.document_texts == ["first batch"]  # a killed batch embedded nothing
    assert e.embed_queries(["queries still work"])


def test_failing_query_is_an_outage_for_its_batch_only():
    e = FakeEmbedder.hashed(failing_query="bad")
    with pytest.raises(EmbeddingError) as ei:
        e.embed_queries(["good", "bad"])
    assert ei.value.provider == "test" and ei.value.model == "hash-bow-v1"
    assert len(e.embed_queries(["good"])) == 1
    assert e.query_calls == 2 and e.running == 0


def test_query_noise_is_seeded_and_leaves_documents_alone():
    base = FakeEmbedder.hashed()
    noisy = [FakeEmbedder(inner=base, query_noise=0.1, seed=s) for s in (0, 0, 1)]
    q = [n.embed_queries(["robot simulation"])[0] for n in noisy]
    assert q[0] == q[1] != q[2]
    assert q[0] != base.embed_queries(["robot simulation"])[0]
    assert noisy[0].embed_documents(["robot simulation"]) == base.embed_documents(["robot simulation"])


def test_query_delay_is_slept_in_every_query_batch():
    e = FakeEmbedder.tiny(query_delay=0.05)
    t0 = time.monotonic()
    e.embed_queries(["x"])
    e.embed_queries(["y"])
    assert time.monotonic() - t0 >= 0.1  # a lower bound only: sleeping never ends early
    assert e.query_calls == 2 and e.peak == 1 and e.running == 0


def test_exactly_one_vector_source_is_required():
    with pytest.raises(ValueError):
        FakeEmbedder()
    with pytest.raises(ValueError):
        FakeEmbedder(char_stats, inner=FakeEmbedder.tiny(), dimension=4)
    with pytest.raises(ValueError):
        FakeEmbedder(char_stats)  # no dimension


# --------------------------------------------------------------------------- the proxy guard

def test_direct_env_drops_every_proxy_variable_and_keeps_the_rest():
    env = {**{v: "http://proxy.example:3128" for v in PROXY_VARS}, "PATH": "/bin", "NO_PROXY": "corp.example"}
    out = direct_env(env)
    assert out == {"PATH": "/bin", "NO_PROXY": LOOPBACK_HOSTS}
    assert env["HTTP_PROXY"] == "http://proxy.example:3128"  # the input is not changed


def test_clear_proxies_lasts_for_the_test_only():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HTTPS_PROXY", "http://proxy.example:3128")
        with pytest.MonkeyPatch.context() as inner:
            clear_proxies(inner)
            assert not any(v in os.environ for v in PROXY_VARS)
            assert os.environ["NO_PROXY"] == LOOPBACK_HOSTS
        assert os.environ["HTTPS_PROXY"] == "http://proxy.example:3128"


@pytest.mark.usefixtures("no_proxies")
def test_the_no_proxies_fixture_clears_them():
    assert not any(v in os.environ for v in PROXY_VARS)
    assert os.environ["NO_PROXY"] == LOOPBACK_HOSTS
