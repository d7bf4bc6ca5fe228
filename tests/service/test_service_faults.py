"""Faults on loopback, in-process: Qdrant refused or silent -> 503, Cohere failing -> 502, PostgreSQL stopped
-> 503 and recovery without a restart, and >= 1,000 hostile requests from the OpenAPI schema -> no 5xx.

"Within the timeout" is shown without a stopwatch (the suite runs in parallel on busy machines): the timeout
each dependency call actually carried (httpx's ``request.extensions["timeout"]``, the driver's connect
arguments), how many calls were made, and the retry waits asked for.
"""

from __future__ import annotations

import json
import time

import pytest
import sqlalchemy as sa
from fakes.cohere_server import FakeCohere
from fakes.tcp import BlackholeServer, closed_port
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from remote_checks import record_sent, uniform
from service_fixtures import (  # noqa: F401
    SERVICE_DOCS,
    BagOfWordsEmbedder,
    client_for,
    postgres,
    small_retriever,
    sqlite_db,
)

from retrieval_lib import Retriever, load_settings
from retrieval_lib.embedding import CohereEmbedder
from retrieval_lib.stores import MetadataDB, open_store

pytestmark = pytest.mark.usefixtures("no_proxies")

QUERY = "What is ROS 2?"
KEY = "co-test-SECRET-4b1d"
COHERE_MODEL = "embed-english-light-v3.0"  # 384 dimensions: small vectors, the real SDK path


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"type", "message", "status"} and error["status"] == status
    return error


def _unreachable_store(url: str) -> Retriever:
    settings = load_settings(env={"QDRANT_URL": url, "QDRANT_TIMEOUT": "1"})
    return Retriever(open_store(settings), BagOfWordsEmbedder(), "book")


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict[str, float]]]:
    """``(url, timeout)`` of every request an httpx client of this process sent, in order."""
    return record_sent(monkeypatch)


def _to(base_url: str, sent: list[tuple[str, dict[str, float]]]) -> list[dict[str, float]]:
    """The timeouts of the requests in ``sent`` that went to ``base_url``."""
    return [timeout for url, timeout in sent if url.startswith(base_url + "/")]


@pytest.mark.parametrize("kind", ["refused", "silent"])
def test_an_unreachable_qdrant_is_503_within_the_timeout(kind, tmp_path, sent):
    with BlackholeServer() as silent:
        url = silent.url if kind == "silent" else f"http://127.0.0.1:{closed_port()}"
        with client_for(_unreachable_store(url), sqlite_db(tmp_path)) as s:
            sent.clear()
            error = _error(s.client.post("/search", json={"query": QUERY}), 503)
            assert error["type"] == "StoreUnavailableError" and "127.0.0.1" in error["message"]
            # within the 1 s timeout: the answer came after at most two calls to Qdrant (no retry loop),
            # each bounded by QDRANT_TIMEOUT's 1 s (not qdrant-client's 5 s default)
            to_store = _to(url, sent)
            assert 1 <= len(to_store) <= 2 and all(t == uniform(1) for t in to_store), f"{kind}: {to_store}"
            health = s.client.get("/health")
            assert health.status_code == 503
            deps = health.json()["dependencies"]
            assert deps["vector_store"]["reachable"] is False and deps["database"]["reachable"] is True
            assert s.log_lines()[0]["error_type"] == "StoreUnavailableError"


def test_a_missing_collection_is_503_naming_it(tmp_path):
    retriever = small_retriever()
    retriever.collection = "no_such_collection"
    with client_for(retriever, sqlite_db(tmp_path)) as s:
        error = _error(s.client.post("/search", json={"query": QUERY}), 503)
        assert error["type"] == "CollectionNotFoundError" and "no_such_collection" in error["message"]
        assert s.client.get("/health").status_code == 503


COHERE_TIMEOUT_S, COHERE_MAX_RETRIES, COHERE_RETRY_BUDGET_S = 1.0, 1, 3.0


class _RecordingSleep:
    """The embedder's ``sleep``: records each retry wait asked for (and sleeps it, capped at 50 ms)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        time.sleep(min(seconds, 0.05))


@pytest.fixture
def cohere_app(tmp_path):
    """The app with the REAL Cohere SDK pointed at the loopback fake (1 s timeout, one retry)."""
    with FakeCohere(dim=384, hang_cap=5) as fake:
        docs = BagOfWordsEmbedder(model=COHERE_MODEL, dimension=384)
        retriever = small_retriever(embedder=docs)
        sleep = _RecordingSleep()
        retriever.embedder = CohereEmbedder(KEY, COHERE_MODEL, base_url=fake.url, timeout=COHERE_TIMEOUT_S,
                                            max_retries=COHERE_MAX_RETRIES, retry_budget=COHERE_RETRY_BUDGET_S,
                                            backoff=0.01, sleep=sleep)
        with client_for(retriever, sqlite_db(tmp_path)) as s:
            yield fake, s, sleep


@pytest.mark.parametrize(("behaviour", "kind"), [
    (("status", 500), "EmbeddingUnavailableError"),
    ("hang", "EmbeddingUnavailableError"),
    (("status", 429), "RateLimitedError"),
    (("status", 401), "AuthenticationError"),
    ("malformed", "BadEmbeddingResponseError"),
])
def test_a_failing_embedding_service_is_502_and_the_service_recovers(cohere_app, behaviour, kind, sent):
    fake, s, sleep = cohere_app
    assert s.client.post("/search", json={"query": QUERY}).status_code == 200
    fake.always(behaviour)
    before, sent_before = len(fake.embed_requests), len(sent)
    response = s.client.post("/search", json={"query": QUERY})
    assert _error(response, 502)["type"] == kind
    # bounded (at most 2 x 1 s + 3 s), by what the embedder did rather than by a stopwatch: at most
    # max_retries + 1 attempts, each bounded by the 1 s timeout httpx enforced, with waits within the budget
    attempts = len(fake.embed_requests) - before
    assert 1 <= attempts <= COHERE_MAX_RETRIES + 1
    assert _to(fake.url, sent[sent_before:]) == [uniform(COHERE_TIMEOUT_S)] * attempts
    assert len(sleep.delays) == attempts - 1 and sum(sleep.delays) <= COHERE_RETRY_BUDGET_S
    assert s.client.get("/health").json()["dependencies"]["embedder"]["reachable"] is False
    fake.always(None)
    assert s.client.post("/search", json={"query": QUERY}).status_code == 200
    assert s.client.get("/health").json()["dependencies"]["embedder"]["reachable"] is True
    assert KEY not in response.text and KEY not in s.log.getvalue()
    assert fake.embed_requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"  # the key did travel, to Cohere


def test_postgresql_stopped_is_503_and_the_service_recovers_without_a_restart(postgres):  # noqa: F811
    retriever = small_retriever()
    db = MetadataDB.open(postgres.fresh_database(), timeout=2)
    db.sync_collection(retriever.store, retriever.collection)
    connects: list[dict] = []  # the driver's arguments of every new connection, as the pool opens it
    sa.event.listen(db.engine, "do_connect", lambda _dialect, _record, _args, params: connects.append(dict(params)))
    with client_for(retriever, db) as s:
        before = s.client.post("/search", json={"query": QUERY}).json()
        assert not before["warnings"]
        postgres.stop()
        try:
            connects.clear()
            error = _error(s.client.post("/search", json={"query": QUERY}), 503)
            assert error["type"] == "DatabaseUnavailableError"
            # within the 2 s timeout, without a stopwatch: at most two connection attempts, each carrying
            # the 2 s connect timeout (and the statement timeout) to the driver
            assert 1 <= len(connects) <= 2, connects
            assert all(c["connect_timeout"] == 2 and c["options"] == "-c statement_timeout=2000" for c in connects)
            health = s.client.get("/health")
            deps = health.json()["dependencies"]
            assert health.status_code == 503 and deps["database"]["reachable"] is False
            assert deps["vector_store"]["reachable"] is True
        finally:
            postgres.start()
        after = s.client.post("/search", json={"query": QUERY})
        assert after.status_code == 200 and after.json()["results"] == before["results"]
        assert s.client.get("/health").status_code == 200
    db.close()


@pytest.mark.parametrize("holds", ["a team's own table", "our chunks table"])
def test_a_database_down_at_start_is_judged_when_it_comes_back(holds, postgres):  # noqa: F811
    """Down at start-up, the database is kept, unjudged; once reached, what it holds decides: a team's own table
    is not read (the answers come from the payload, /health says why; never a 503 for a table it never had), and
    our ``chunks`` table is joined as ever. Nothing is created in it either way."""
    from retrieval_lib.collection.ours import point_id_for

    # the points' ids are our ingest's (its collection: our chunks table is read for it, not for a team's)
    retriever = small_retriever(docs=[{**d, "id": point_id_for(d["source_file"], d.get("chunk_sequence", 0))}
                                      for d in SERVICE_DOCS])
    url = postgres.fresh_database()
    db = MetadataDB.open(url, timeout=2, create=False)
    postgres.stop()
    try:
        with client_for(retriever, db, env={"DATABASE_URL": url}) as s:
            assert _error(s.client.post("/search", json={"query": QUERY}), 503)["type"] == "DatabaseUnavailableError"
            assert s.client.get("/health").json()["dependencies"]["database"]["reachable"] is False
            postgres.start()
            engine = sa.create_engine(url)
            if holds == "our chunks table":
                with MetadataDB.open(url) as ours:
                    ours.sync_collection(retriever.store, retriever.collection)
            else:
                with engine.begin() as conn:
                    conn.execute(sa.text("CREATE TABLE embeddings_metadata (id TEXT PRIMARY KEY, file_path TEXT)"))
            tables = sorted(sa.inspect(engine).get_table_names())
            back = s.client.post("/search", json={"query": QUERY})
            assert back.status_code == 200, back.text
            body = back.json()
            assert body["results"] and body["warnings"] == []  # rows joined, or the payload's: no gap either way
            database = s.client.get("/health").json()["dependencies"]["database"]
            if holds == "our chunks table":
                assert database["reachable"] is True
            else:
                assert database["reachable"] is None and "no `chunks` table" in database["detail"]
                assert "embeddings_metadata" in database["detail"] and url not in database["detail"]
            assert sorted(sa.inspect(engine).get_table_names()) == tables  # nothing created
            engine.dispose()
    finally:
        postgres.start()
    db.close()


# --------------------------------------------------------------------------- hostile requests

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_ROUTES = st.sampled_from([("POST", "/search")] * 8 + [("GET", "/health"), ("GET", "/search"), ("PUT", "/search"),
                                                         ("DELETE", "/health"), ("POST", "/search/../health"),
                                                         ("POST", "/%00"), ("OPTIONS", "/search")])
_CONTENT_TYPES = st.sampled_from(["application/json"] * 6 + ["text/plain", "application/x-www-form-urlencoded",
                                                               "application/json; charset=latin-1", ""])
MIN_HOSTILE = 1000


_SCALARS = {"string": st.text(max_size=600), "integer": st.integers(), "number": st.floats() | st.integers(),
            "boolean": st.booleans(), "null": st.none()}


def from_schema(schema: dict) -> st.SearchStrategy:
    """Instances of a (small) JSON schema: the OpenAPI request model's types, nullable fields, optional keys."""
    if "anyOf" in schema:
        return st.one_of([from_schema(s) for s in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "object":
        props = {k: from_schema(v) for k, v in schema.get("properties", {}).items()}
        required = set(schema.get("required", []))
        return st.fixed_dictionaries({k: v for k, v in props.items() if k in required},
                                     optional={k: v for k, v in props.items() if k not in required})
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {})), max_size=4)
    return _SCALARS.get(kind, _JSON)


def _bodies(schema: dict) -> st.SearchStrategy:
    fields = list(schema["properties"])
    near_valid = st.fixed_dictionaries({"query": st.text(max_size=600)}, optional={
        "top_k": st.integers(-5, 10**6) | _JSON, "similarity_threshold": st.floats() | _JSON,
        "source_prefix": st.text(max_size=20) | _JSON, "section": st.text(max_size=20) | _JSON})
    mutated = st.dictionaries(st.sampled_from(fields) | st.text(max_size=12), _JSON, max_size=6)
    return st.one_of(
        from_schema(schema).map(lambda b: json.dumps(b).encode()),
        near_valid.map(lambda b: json.dumps(b).encode()),
        mutated.map(lambda b: json.dumps(b).encode()),
        _JSON.map(lambda b: json.dumps(b).encode()),
        st.binary(max_size=200),
    )


@pytest.mark.slow
def test_hostile_requests_from_the_openapi_schema_never_get_a_5xx(tmp_path, figure_line):
    retriever = small_retriever()
    db = sqlite_db(tmp_path)
    db.sync_collection(retriever.store, retriever.collection)
    with client_for(retriever, db) as s:
        schema = s.client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]
        tried: list[int] = []

        @hsettings(max_examples=MIN_HOSTILE + 100, deadline=None, database=None, derandomize=True,
                   suppress_health_check=list(HealthCheck))
        @given(route=_ROUTES, body=_bodies(schema), content_type=_CONTENT_TYPES)
        def hostile(route, body, content_type):
            method, path = route
            headers = {"content-type": content_type} if content_type else {}
            response = s.client.request(method, path, content=body, headers=headers)
            tried.append(response.status_code)
            assert response.status_code < 500, (method, path, body[:200], response.text[:300])
            answer = response.json()
            if response.status_code >= 400:
                assert set(answer["error"]) == {"type", "message", "status"}
                assert answer["error"]["status"] == response.status_code
            elif path == "/search":
                assert set(answer) == {"query", "results", "total_results", "took_ms", "warnings"}

        t0 = time.perf_counter()
        hostile()
        seconds = time.perf_counter() - t0
        fives = sum(1 for code in tried if code >= 500)
        figure_line(f"service: {len(tried)} hostile requests in {seconds:.1f} s, {fives} answered 5xx; "
                    f"statuses {sorted(set(tried))}")
        assert len(tried) >= MIN_HOSTILE and fives == 0
        assert {200, 400} <= set(tried)
        assert s.client.get("/health").status_code == 200
        assert s.client.post("/search", json={"query": QUERY}).json()["total_results"] == 5
