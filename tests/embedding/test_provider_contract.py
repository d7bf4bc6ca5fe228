"""What every remote embedder keeps (Cohere, OpenAI, Gemini), through each REAL SDK against its loopback fake.

One module, every case parametrised over the three providers (:data:`REMOTES`); what only one provider has (Cohere's
``embedding_types``, Gemini's task types on the wire and ``RetryInfo``, OpenAI's ``dimensions``) stays in
``tests/test_<provider>_embedder.py``. The contract:

- the dimension an embedder says is the dimension that comes back (its model's, a reduced one, or, for a model the
  workbook does not know, its server's first answer), and an answer of another dimension is refused;
- texts go in requests of at most the provider's limit (``EMBEDDING_BATCH_SIZE`` above it is held to it), in input
  order, and the vectors come back in that order;
- queries and documents are embedded under the provider's own input types, where its API has them;
- every HTTP failure becomes the package's typed error, and the error says what to do: a refused key (401, 403, a
  proxy's HTML 401, a wrong key) and an unusable answer (400, a malformed body, one vector too few, a wrong
  dimension) at once; a 429 (honouring ``Retry-After``), a 5xx, a request unanswered past the timeout, a dropped or
  refused connection after bounded retries within the retry budget; the HTTP service answers 502 for them;
- the key is never in a ``repr``, a ``str``, an error's message, fields or traceback, nor in a log line.

Bounded: every fake binds 127.0.0.1 (port 0) and holds a hang at most :data:`HANG_CAP` seconds; timeouts are
fractions of a second; every retry loop has ``max_retries`` 2 and waits a few milliseconds at most (the waits asked
for are recorded, not slept). No assertion depends on how fast the machine is: waits are the delays asked for, the
budget runs on a :class:`~remote_checks.FakeClock`, a timeout is what httpx enforced on each request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from corpus import DOCS, fill_collection
from fakes.cohere_server import FakeCohere
from fakes.gemini_server import FakeGemini
from fakes.loopback import LoopbackFake
from fakes.openai_server import FakeOpenAI
from fakes.tcp import closed_port
from remote_checks import (
    FakeClock,
    RecordingSleep,
    assert_no_secret,
    record_sent_timeouts,
    service_answers,
    uniform,
)

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.config import load_settings
from retrieval_lib.embedding import CohereEmbedder, GeminiEmbedder, OpenAIEmbedder, make_embedder
from retrieval_lib.embedding.base import RemoteEmbedder
from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    ConfigurationError,
    EmbeddingError,
    EmbeddingUnavailableError,
    RateLimitedError,
)
from retrieval_lib.search import Retriever

KEY = "TEST-contract-key-6d2f90"
WRONG_KEY = "TEST-contract-wrong-1b7c44"
#: seconds a scripted hang lasts at most (a request is given up on long before)
HANG_CAP = 5
#: the embedders' timeout here: a hang costs this much per attempt
TIMEOUT = 0.3
RETRIES = 2

pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(60)]


@dataclass(frozen=True)
class Remote:
    """One remote provider as the contract drives it: its fake, its embedder, and how to read its wire."""

    name: str
    fake_class: type[LoopbackFake]
    embedder_class: type[RemoteEmbedder]
    model: str  # a model the workbook knows ...
    dimension: int  # ... and its dimension
    reduced: tuple[str, int]  # a model that takes a reduced dimension, and one it offers
    small: tuple[str, int]  # a model and dimension whose vectors are small on the wire (and cheap at the fake)
    limit: int  # texts one request may carry at the vendor's API
    url_path: str  # what the base URL adds to the fake's address
    key_variable: str
    base_url_variable: str
    sent_texts: Callable[[dict], list[str]]  # the texts of one recorded request body
    sent_type: Callable[[dict], str | None]  # the input type it names (None: the API has none)
    unknown_model_served: bool  # a model the workbook does not know is served (its dimension read from the answer)
    fake_dim: int  # what the fake serves a model it has no size for (FakeCohere: every model)

    def fake(self, **options: Any) -> LoopbackFake:
        return self.fake_class(dim=self.fake_dim, hang_cap=HANG_CAP, **options)

    def base_url(self, fake_or_url: LoopbackFake | str) -> str:
        url = fake_or_url if isinstance(fake_or_url, str) else fake_or_url.url
        return url + self.url_path

    def embedder(self, fake: LoopbackFake | str, *, key: str = KEY, model: str | None = None,
                 **options: Any) -> tuple[RemoteEmbedder, RecordingSleep]:
        """The embedder at ``fake`` (or a URL), with the waits it asks for recorded (and not slept)."""
        sleep = RecordingSleep()
        settings = {"timeout": TIMEOUT, "max_retries": RETRIES, "retry_budget": 60.0, "backoff": 0.01,
                    "sleep": sleep, **options}
        return self.embedder_class(key, model or self.model, base_url=self.base_url(fake), **settings), sleep


def _gemini_texts(body: dict) -> list[str]:
    return [r["content"]["parts"][0]["text"] for r in body["requests"]]


REMOTES = [
    Remote("cohere", FakeCohere, CohereEmbedder, "embed-english-light-v3.0", 384, ("embed-v4.0", 256),
           ("embed-v4.0", 256), 96, "", "COHERE_API_KEY", "COHERE_BASE_URL",
           lambda b: b["texts"], lambda b: b["input_type"], False, 384),
    Remote("openai", FakeOpenAI, OpenAIEmbedder, "text-embedding-3-small", 1536, ("text-embedding-3-small", 256),
           ("a-compatible-model", 8), 2048, "/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL",
           lambda b: b["input"], lambda b: None, True, 16),
    Remote("gemini", FakeGemini, GeminiEmbedder, "text-embedding-004", 768, ("text-embedding-004", 256),
           ("a-compatible-model", 8), 100, "", "GEMINI_API_KEY", "GEMINI_BASE_URL",
           _gemini_texts, lambda b: b["requests"][0].get("taskType"), True, 16),
]


@pytest.fixture(params=REMOTES, ids=lambda r: r.name)
def remote(request) -> Remote:
    return request.param


@pytest.fixture
def fake(remote):
    with remote.fake(api_key=KEY) as f:
        yield f


@pytest.fixture(autouse=True)
def no_key_in_logs(caplog):
    """Every log line of every case, at DEBUG (the SDKs' own included), is scanned for the keys."""
    with caplog.at_level(logging.DEBUG):
        yield
    assert_no_secret(KEY, logs=caplog.text)
    assert_no_secret(WRONG_KEY, logs=caplog.text)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The shared retry loop's clock, moved only by the waits it asks for."""
    from retrieval_lib.embedding import base

    fake_clock = FakeClock()
    monkeypatch.setattr(base, "time", fake_clock)
    return fake_clock


def fails(emb: RemoteEmbedder, kind: type[EmbeddingError], texts: list[str] | None = None) -> EmbeddingError:
    """The error ``emb`` raises embedding ``texts`` as documents: of ``kind``, on the package's tree, exit code
    2 (a refused key) or 3 (the service), naming provider and model, and holding no key anywhere."""
    with pytest.raises(kind) as ei:
        emb.embed_documents(texts or ["hello"])
    err = ei.value
    assert isinstance(err, EmbeddingError) and err.provider == emb.provider and err.model == emb.model
    assert err.exit_code == (2 if kind is AuthenticationError else 3)
    assert_no_secret(KEY, err, emb)
    assert_no_secret(WRONG_KEY, err, emb)
    return err


# --------------------------------------------------------------------------- dimension


def test_the_dimension_it_says_is_the_dimension_that_comes_back(remote, fake):
    emb, sleep = remote.embedder(fake)
    assert emb.dimension == remote.dimension and f"dimension={remote.dimension}" in repr(emb)
    vectors = emb.embed_documents(["Humanoid robots walk.", "ROS 2 is middleware."]) + emb.embed_queries(["what?"])
    assert [len(v) for v in vectors] == [remote.dimension] * 3
    assert all(isinstance(x, float) for v in vectors for x in v)
    model, reduced = remote.reduced
    short, _ = remote.embedder(fake, model=model, dimensions=reduced)
    assert short.dimension == reduced and [len(v) for v in short.embed_documents(["one", "two"])] == [reduced] * 2
    assert_no_secret(KEY, emb, short)


def test_an_unknown_model_is_served_at_its_servers_dimension_or_refused_before_any_request(remote, fake):
    if not remote.unknown_model_served:
        with pytest.raises(ConfigurationError) as ei:
            remote.embedder(fake, model="embed-nonexistent-v9")
        assert ei.value.variable == "EMBEDDING_MODEL" and ei.value.exit_code == 2
        assert fake.requests == []
        return
    emb, sleep = remote.embedder(fake, model="a-compatible-model")
    assert "unknown" in repr(emb) and fake.requests == []
    assert emb.dimension == fake.dim and len(fake.embed_requests) == 1  # one probe ...
    assert emb.dimension == fake.dim and len(fake.embed_requests) == 1  # ... once
    assert len(emb.embed_queries(["hello"])[0]) == fake.dim


def test_an_answer_of_another_dimension_is_refused_naming_both(remote, fake):
    fake.push(("dim", 12))
    emb, sleep = remote.embedder(fake)
    err = fails(emb, BadEmbeddingResponseError)
    assert "12" in err.message and str(remote.dimension) in err.message and "EMBEDDING_DIMENSIONS" in err.message
    assert len(fake.embed_requests) == 1 and sleep.delays == []


# --------------------------------------------------------------------------- batching and order


def test_texts_go_in_requests_of_at_most_the_providers_limit_and_come_back_in_order(remote, fake):
    model, dims = remote.small  # thousands of texts stay cheap on the wire
    # the fake stands in for the vendor's API: EMBEDDING_BATCH_SIZE above the limit is held to the limit (and a
    # timeout that a full request meets on a busy machine: at a server not the vendor's a timeout halves the batch)
    emb, _ = remote.embedder(fake, model=model, dimensions=dims, batch_size=remote.limit * 10, timeout=30.0)
    assert emb.max_batch == remote.limit
    texts = [f"passage {i} token{i} word{i % 7}" for i in range(remote.limit + 3)]
    vectors = emb.embed_documents(texts)
    sent = [remote.sent_texts(r["json"]) for r in fake.embed_requests]
    assert [len(s) for s in sent] == [remote.limit, 3]
    assert [t for s in sent for t in s] == texts and emb.calls == 2
    assert len(vectors) == len(texts) and len({tuple(np.round(v, 6)) for v in vectors}) == len(texts)
    for i in (0, remote.limit - 1, remote.limit, len(texts) - 1):  # each where its text is: as embedded alone
        [alone] = emb.embed_documents([texts[i]])
        assert np.allclose(alone, vectors[i], atol=1e-6)


def test_no_text_no_request(remote, fake):
    emb, sleep = remote.embedder(fake)
    assert emb.embed_queries([]) == [] and emb.embed_documents([]) == []
    assert fake.requests == [] and emb.calls == 0


# --------------------------------------------------------------------------- input types


def test_queries_and_documents_go_under_the_providers_input_types(remote, fake):
    emb, sleep = remote.embedder(fake)
    text = "ROS 2 nodes exchange messages over topics."
    [q], [d] = emb.embed_queries([text]), emb.embed_documents([text])
    for input_type in emb.input_types:
        emb.embed_as([text], input_type)
    sent = [remote.sent_type(r["json"]) for r in fake.embed_requests]
    if emb.input_types == ("none",):  # the API has no input types: one vector for both
        assert sent == [None] * 3 and np.allclose(q, d)
    else:
        assert sent == [emb.query_type, emb.document_type, *emb.input_types]
        assert emb.input_types[:2] == (emb.document_type, emb.query_type) and not np.allclose(q, d)
    with pytest.raises(ValueError, match="no input type 'not-a-type'"):
        emb.embed_as([text], "not-a-type")
    assert len(fake.embed_requests) == len(sent)  # refused before any request


# --------------------------------------------------------------------------- failures at once


REFUSED_KEY = {
    "401": ("status", 401),
    "403": ("status", 403),
    "401 as a proxy's HTML page": ("status", 401, {}, "<html><body>401 Unauthorized</body></html>"),
    "a wrong key": None,
}


@pytest.mark.parametrize("how", list(REFUSED_KEY))
def test_a_refused_key_is_an_authentication_error_at_once_naming_the_variable(remote, fake, how):
    if REFUSED_KEY[how] is None:
        emb, sleep = remote.embedder(fake, key=WRONG_KEY)  # the fake holds KEY: answered as the vendor answers
    else:
        fake.always(REFUSED_KEY[how])
        emb, sleep = remote.embedder(fake)
    err = fails(emb, AuthenticationError)
    assert remote.key_variable in err.message and str(err.status) in err.message
    assert err.status == (403 if how == "403" else 400 if how == "a wrong key" and remote.name == "gemini" else 401)
    assert len(fake.embed_requests) == 1 and emb.calls == 1 and sleep.delays == []


UNUSABLE = {
    "400": (("status", 400), "rejected the embed request"),
    "a malformed body": ("malformed", "{base_url_variable}"),
    "one vector too few": ("count_mismatch", "returned 1 embeddings for 2 texts"),
    "a wrong dimension": (("dim", 12), "12-dimensional"),
}


@pytest.mark.parametrize("how", list(UNUSABLE))
def test_an_unusable_answer_is_a_bad_response_at_once_saying_what_to_check(remote, fake, how):
    behaviour, said = UNUSABLE[how]
    fake.push(behaviour)
    emb, sleep = remote.embedder(fake)
    err = fails(emb, BadEmbeddingResponseError, ["one text", "two texts"])
    assert said.format(base_url_variable=remote.base_url_variable) in err.message and "check" in err.message
    assert len(fake.embed_requests) == 1 and sleep.delays == []


# --------------------------------------------------------------------------- failures retried


PASSING = {
    "429 with Retry-After": (("status", 429, {"Retry-After": "2"}), [2.0]),
    "429": (("status", 429), "backoff"),
    "429 as a proxy's HTML page": (("status", 429, {"Retry-After": "1"}, "<html>Too Many Requests</html>"), [1.0]),
    "500": (("status", 500), "backoff"),
    "503 with Retry-After": (("status", 503, {"Retry-After": "1"}), [1.0]),
    "a hang past the timeout": ("hang", "backoff"),
    "a dropped connection": ("disconnect", "backoff"),
}


@pytest.mark.parametrize("how", list(PASSING))
def test_a_passing_failure_is_retried_after_the_wait_it_asks_for(remote, fake, how):
    behaviour, waits = PASSING[how]
    fake.push(behaviour)
    emb, sleep = remote.embedder(fake)
    [vector] = emb.embed_queries(["hello"])
    assert len(vector) == remote.dimension
    assert len(fake.embed_requests) == 2 == emb.calls
    delays = sleep.delays
    if waits == "backoff":  # 0.01 s * 2**0, plus at most 20 % jitter
        assert len(delays) == 1 and 0.01 <= delays[0] <= 0.0121, delays
    else:
        assert delays == waits


LASTING = {
    "429": (("status", 429, {"Retry-After": "1"}), RateLimitedError, "wait and re-run"),
    "500": (("status", 500), EmbeddingUnavailableError, "try again later"),
    "502 as a proxy's HTML page": (("status", 502, {}, "<html>Bad Gateway</html>"), EmbeddingUnavailableError,
                                   "try again later"),
    "503": (("status", 503), EmbeddingUnavailableError, "try again later"),
    "a hang past the timeout": ("hang", EmbeddingUnavailableError, "EMBEDDING_TIMEOUT"),
    "a dropped connection": ("disconnect", EmbeddingUnavailableError, "is up and reachable"),
}


@pytest.mark.parametrize("how", list(LASTING))
def test_a_lasting_failure_ends_after_bounded_attempts_saying_what_to_do(remote, fake, how, monkeypatch):
    behaviour, kind, advice = LASTING[how]
    fake.always(behaviour)
    sent_timeouts = record_sent_timeouts(monkeypatch)
    emb, sleep = remote.embedder(fake)
    err = fails(emb, kind)
    assert err.attempts == RETRIES + 1 == len(fake.embed_requests) == emb.calls
    assert len(sleep.delays) == RETRIES and advice in err.message, err.message
    assert f"{RETRIES + 1} attempt(s)" in err.message
    # every attempt was one request that httpx bounded by the embedder's timeout (no SDK retries inside)
    assert sent_timeouts == [uniform(TIMEOUT)] * (RETRIES + 1)
    if kind is RateLimitedError:
        assert err.status == 429 and err.retry_after == 1.0 and sleep.delays == [1.0] * RETRIES
        return
    assert fake.url.split("//")[1] in err.message  # names the endpoint to check
    for k, delay in enumerate(sleep.delays):  # no Retry-After: the backoff doubles, 0.01 s * 2**k plus <= 20 % jitter
        assert 0.01 * 2**k <= delay <= 0.01 * 2**k * 1.2 + 1e-9, sleep.delays
    if behaviour == "hang":
        assert err.status is None and f"no answer within {TIMEOUT:g} s" in err.message
    elif behaviour == "disconnect":
        assert err.status is None and "connection failed" in err.message
    else:
        assert str(err.status) in err.message


def test_a_refused_connection_is_unavailable_after_bounded_attempts(remote):
    url = f"http://127.0.0.1:{closed_port()}"
    emb, sleep = remote.embedder(url, timeout=10.0)  # refused at once: the timeout is never waited out
    err = fails(emb, EmbeddingUnavailableError)
    assert "connection failed" in err.message and "no answer" not in err.message and "127.0.0.1" in err.message
    assert err.attempts == RETRIES + 1 == emb.calls and len(sleep.delays) == RETRIES


def test_a_retry_after_past_the_budget_fails_at_once(remote, fake, clock):
    fake.always(("status", 429, {"Retry-After": "30"}))
    emb, sleep = remote.embedder(fake, max_retries=5, retry_budget=3.0)
    err = fails(emb, RateLimitedError)
    assert sleep.delays == [] and clock.delays == []  # never slept towards the budget
    assert err.attempts == 1 == len(fake.embed_requests) and err.retry_after == 30.0 and "budget" in err.message


def test_the_waits_of_one_call_stay_within_the_retry_budget(remote, fake, clock):
    fake.always(("status", 429, {"Retry-After": "1"}))
    emb, sleep = remote.embedder(fake, max_retries=10, retry_budget=2.5, sleep=clock.sleep)
    err = fails(emb, RateLimitedError)
    assert clock.delays == [1.0, 1.0] and sum(clock.delays) <= 2.5
    assert err.attempts == 3 == len(fake.embed_requests) and "retry budget" in err.message  # not max_retries (10)


# --------------------------------------------------------------------------- settings, the service, a collection


def test_the_service_answers_502_for_401_429_and_503(remote, fake, tmp_path, caplog):
    emb, sleep = remote.embedder(fake, max_retries=1, retry_budget=3.0)
    answers = service_answers(emb, fake, [("status", 401), ("status", 429, {"Retry-After": "1"}), ("status", 503)],
                              tmp_path, KEY, caplog)
    assert answers == [(502, "AuthenticationError"), (502, "RateLimitedError"), (502, "EmbeddingUnavailableError")]


def test_settings_build_the_embedder_a_collection_is_searched_and_passes_the_contract(remote, fake):
    env = {"EMBEDDING_PROVIDER": remote.name, remote.key_variable: KEY, "EMBEDDING_MODEL": remote.model,
           remote.base_url_variable: remote.base_url(fake) + "/", "EMBEDDING_MAX_RETRIES": "0"}
    settings = load_settings(env=env)
    assert getattr(settings, f"{remote.name}_api_key").reveal() == KEY
    assert_no_secret(KEY, settings)
    emb = make_embedder(settings)
    assert type(emb) is remote.embedder_class and (emb.model, emb.dimension) == (remote.model, remote.dimension)
    store = VectorStore.in_memory()
    fill_collection(store, "book", emb, DOCS)
    result = contract.probe(store, "book", emb, sample=len(DOCS))
    with Retriever(store, emb, "book") as retriever:
        top = retriever.search("How do I install ROS 2 on Ubuntu?", top_k=3).results
        assert_no_secret(KEY, retriever)
    assert "ros 2" in top[0].content.lower()
    assert result.passed and result.diagnosis is None and result.dimension == remote.dimension
    assert all(r["headers"].get("authorization", r["headers"].get("x-goog-api-key")) in (KEY, f"Bearer {KEY}")
               for r in fake.embed_requests)
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"EMBEDDING_PROVIDER": remote.name})
    assert ei.value.variable == remote.key_variable and ei.value.exit_code == 2
