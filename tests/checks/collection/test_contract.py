"""The embedding contract probe fires on each broken case and stays quiet on the sound one.

Broken cases: the sample book's MiniLM vectors under a fixed random rotation (dimension and model_version still
match), documents stored with Cohere's ``search_query`` type (the loopback fake, opt-in input-type weight), payload
text edited after ingest, and long chunks embedded from another cut of their text. The MiniLM cases sample 16
points to stay bounded.
"""

from __future__ import annotations

import tempfile
from collections import Counter

import numpy as np
import pytest
from corpus import DOCS, SAMPLE_COLLECTION, make_payload
from fakes.cohere_server import FakeCohere
from fakes.embedders import FakeEmbedder, hashed_bag_of_words
from qdrant_client import models

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import collection_health as health
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.cli.commands import gate_exit_code
from retrieval_lib.collection.ours import embedded_text
from retrieval_lib.embedding.base import LOCAL_SERVER_BATCH
from retrieval_lib.embedding.local import LocalEmbedder
from retrieval_lib.embedding.providers import CohereEmbedder
from retrieval_lib.errors import ModelMismatchError, ValidationError
from retrieval_lib.search import ensure_compatible
from retrieval_lib.workbook.report import NotebookReport

# the session fixture `book` ingests the sample book in the first test that asks (about 30 s on idle cores)
pytestmark = pytest.mark.timeout(900)


def fill(store: VectorStore, name: str, docs, embed, model: str, dimension: int) -> None:
    """A collection of ``docs`` whose vectors are ``embed(texts)`` of the text ingest embeds."""
    store.create_collection(name, dimension)
    payloads = [make_payload(d, model) for d in docs]
    vectors = embed([embedded_text(p) for p in payloads])
    store.upsert(name, [models.PointStruct(id=d["id"], vector=v, payload=p)
                        for d, p, v in zip(docs, payloads, vectors)])


def recorded(result: contract.ProbeResult) -> NotebookReport:
    report = NotebookReport("09_embedding_contract", "t", run_dir=tempfile.mkdtemp())
    contract.EmbeddingContract(result, contract.DEFAULT_MAX_SELF_RETRIEVAL_DROP).record(report, show=False)
    return report


LONG = " ".join(f"Sentence {i} describes joint {i} and its limit of {i} newton metres." for i in range(12))
DOCS_WITH_LONG = list(DOCS) + [
    dict(id=20 + i, source_file=f"module-05-long/{i:02d}-long.md", route=f"module-05-long/{i}", title=f"Long {i}",
         section_title="Long", content=f"Part {i}. {LONG}") for i in range(3)]


# --------------------------------------------------------------------------- no model needed

def test_a_sound_book_of_generic_first_sentences_passes_and_shows_its_low_raw_share():
    """Every chunk opens with the same generic sentence, so the raw self-retrieval share is low: a property of the
    book, shown with its interval, never a contract failure (stored and fresh vectors rank alike)."""
    embedder = FakeEmbedder(hashed_bag_of_words(64), dimension=64)
    docs = [dict(d, content="In this chapter we will look at the following topic. " + d["content"]) for d in DOCS]
    with VectorStore.in_memory() as store:
        fill(store, "generic", docs, embedder.embed_documents, embedder.model, embedder.dimension)
        result = contract.probe(store, "generic", embedder, sample=len(docs), seed=0, top_k=3)
    assert {r.query for r in result.rows} == {"In this chapter we will look at the following topic."}
    assert result.file_share < 0.85 and result.self_retrieval_drop == 0  # the old fixed 0.85 gate failed this
    report = recorded(result)
    assert [g.passed for g in report.gates] == [True, True]
    low, high = result.interval("file_share")
    assert low <= result.file_share <= high and any("not gated" in f and "interval" in f for f in report.findings)
    assert report.metrics["self_retrieval_drop"] == 0


def test_a_sample_no_larger_than_k_leaves_the_self_retrieval_gate_not_applicable():
    embedder = FakeEmbedder(hashed_bag_of_words(64), dimension=64)
    with VectorStore.in_memory() as store:
        fill(store, "tiny", DOCS[:3], embedder.embed_documents, embedder.model, embedder.dimension)
        result = contract.probe(store, "tiny", embedder, sample=3, top_k=5)
    gate = recorded(result).gates[1]
    assert gate.passed is None and "not applicable" in gate.detail and gate.parameter == "max_self_retrieval_drop"


def test_the_embedded_text_is_the_title_line_then_the_content():
    assert embedded_text({"title": "Gazebo Basics", "content": "Worlds."}) == "Gazebo Basics\nWorlds."
    assert embedded_text({"content": "Worlds."}) == "Worlds."


def test_probe_query_takes_the_first_prose_sentence_not_headings_code_or_bold_lines():
    content = "## Setup\n\n**Problem.**\n\n```bash\nls -la\n```\n- The **first** step [installs](x) ROS 2. Then more."
    assert contract.probe_query({"content": content}) == "The first step installs ROS 2."
    assert contract.probe_query({"content": "## Only a heading", "section_title": "Only"}) == "Only"


def test_sampling_is_seeded_stratified_and_takes_everything_when_asked_for_more():
    store, fake = VectorStore.in_memory(), FakeEmbedder.hashed()
    fill(store, "c", DOCS_WITH_LONG, fake.embed_documents, fake.model, fake.dimension)
    files = {d["source_file"] for d in DOCS_WITH_LONG}
    first = [p.id for p in contract.sample_points(store, "c", sample=len(files), seed=3)]
    assert first == [p.id for p in contract.sample_points(store, "c", sample=len(files), seed=3)]
    picked = contract.sample_points(store, "c", sample=len(files), seed=3)
    assert Counter(p.payload["source_file"] for p in picked) == Counter(dict.fromkeys(files, 1))
    assert all(p.vector is not None for p in picked)
    several = {tuple(p.id for p in contract.sample_points(store, "c", sample=5, seed=s)) for s in range(6)}
    assert len(several) > 1, "the seed changes the sample"
    assert len(contract.sample_points(store, "c", sample=1000)) == len(DOCS_WITH_LONG)


def test_cost_is_stated_in_the_embedders_batches():
    fake = FakeEmbedder.hashed()
    cost = contract.plan_cost(fake, 130)
    assert (cost.texts, cost.run_calls, cost.calls(cost.diagnosis_texts)) == (260, 6, 3)
    assert "260 texts in 6 embed calls" in cost.line()


def test_cost_counts_the_calls_ingest_and_plan_count_not_a_local_models_inner_batches():
    local = LocalEmbedder()  # reads its config files; the model is not loaded
    assert (contract.plan_cost(local, 64).run_calls, contract.plan_cost(local, 65).run_calls) == (2, 4)
    assert "batches of 64" in contract.plan_cost(local, 64).line()
    # Cohere's SDK at a base URL that is not Cohere's own (a gateway, a local server) sends 16 texts a request, not 96
    remote = CohereEmbedder("test-key", "embed-english-light-v3.0", base_url="http://127.0.0.1:9", max_retries=0)
    assert contract.plan_cost(remote, 96).run_calls == 2 * 96 // LOCAL_SERVER_BATCH
    remote.batch_size = LOCAL_SERVER_BATCH // 2  # what a timeout's halving leaves: the calls to come are that size
    assert contract.plan_cost(remote, 96).run_calls == 2 * 2 * 96 // LOCAL_SERVER_BATCH


@pytest.mark.parametrize("kwargs", [{"sample": 0}, {"top_k": 0}, {"min_cosine": 2.0}])
def test_bad_arguments_are_refused_before_any_embedding(kwargs):
    fake = FakeEmbedder.hashed()
    with pytest.raises(ValidationError):
        contract.probe(VectorStore.in_memory(), "c", fake, **kwargs)
    assert fake.calls == 0


@pytest.mark.parametrize("params, field", [({"contract_sample": 0}, "sample"), ({"top_k": 101}, "top_k"),
                                           ({"max_self_retrieval_drop": 1.5}, "max_self_retrieval_drop")])
def test_the_check_refuses_its_parameters_before_opening_anything(params, field):
    class Untouchable:  # the context: reading anything from it fails the test
        def __getattr__(self, name):
            raise AssertionError(f"the check read ctx.{name} before refusing its parameters")

    values = {"contract_sample": 8, "contract_seed": 0, "top_k": 5, "contract_min_cosine": 0.99,
              "max_self_retrieval_drop": 0.05} | params
    with pytest.raises(ValidationError) as err:
        contract.run(Untouchable(), **values)
    assert err.value.field == field


def test_the_result_prints_its_lines_and_gives_its_tables_and_the_older_json_keys():
    embedder = FakeEmbedder(hashed_bag_of_words(64), dimension=64)
    with VectorStore.in_memory() as store:
        fill(store, "c", DOCS, embedder.embed_documents, embedder.model, embedder.dimension)
        result = contract.EmbeddingContract(contract.probe(store, "c", embedder, sample=len(DOCS), top_k=3), 0.05)
    lines = str(result).splitlines()
    assert lines[0].startswith(f"{len(DOCS)} points sampled from ") and "(gate 0.99)" in lines[0]
    assert "(drop 0.00, gate 0.05)" in lines[1] and lines[2].startswith("no diagnosis needed")
    tables = result.tables()
    assert len(tables["points"]) == len(DOCS) and tables["collection"] == "c" and tables["diagnosis"] is None
    assert tables["cost"]["document_texts"] == len(DOCS) and len(tables["lowest_cosines"]) == min(8, len(DOCS))
    assert set(tables["not_found"].columns) == {"source_file", "probe_query", "file_hit"}


def test_text_edited_after_ingest_is_diagnosed_as_changed_text():
    store, fake = VectorStore.in_memory(), FakeEmbedder.hashed()
    fill(store, "c", DOCS_WITH_LONG, fake.embed_documents, fake.model, fake.dimension)
    store.client.set_payload("c", {"content": "Bananas are yellow fruit grown in warm countries."}, points=[5, 9])
    result = contract.probe(store, "c", fake, sample=len(DOCS_WITH_LONG))
    assert not result.passed and result.diagnosis is not None
    assert result.diagnosis.cause == "text changed since ingest"
    assert result.diagnosis.points == {"text changed since ingest": 2}


def test_long_chunks_embedded_from_another_cut_are_diagnosed_as_truncation():
    store, whole = VectorStore.in_memory(), hashed_bag_of_words(64)
    fill(store, "c", DOCS_WITH_LONG, lambda texts: [whole(t) for t in texts], "hash-bow-v1", 64)
    # this embedder reads 40 words; the stored vectors were made from whole texts
    reader = FakeEmbedder(lambda t: whole(" ".join(t.split()[:40])), model="hash-bow-v1", dimension=64,
                          max_tokens=40)
    result = contract.probe(store, "c", reader, sample=len(DOCS_WITH_LONG))
    assert result.diagnosis is not None and result.diagnosis.cause == "truncation past the token limit"
    assert result.over_limit >= 4  # the URDF page and the three long pages


def test_a_different_dimension_is_refused_before_sampling():
    store, fake = VectorStore.in_memory(), FakeEmbedder.hashed()
    fill(store, "c", DOCS, fake.embed_documents, fake.model, fake.dimension)
    with pytest.raises(ModelMismatchError):
        contract.probe(store, "c", FakeEmbedder.hashed(dimension=32))


# --------------------------------------------------------------------------- Cohere: the input type

@pytest.mark.usefixtures("no_proxies")
@pytest.mark.parametrize("stored_as", ["search_query", "search_document"])
def test_documents_stored_with_the_query_type_are_diagnosed_as_a_swapped_input_type(stored_as):
    model = "embed-english-light-v3.0"  # 384 dimensions: small vectors, same code path
    with FakeCohere(dim=384, input_type_weight=1.0) as fake:
        cohere = CohereEmbedder("test-key", model, base_url=fake.url, max_retries=0)
        store = VectorStore.in_memory()
        embed = cohere.embed_queries if stored_as == "search_query" else cohere.embed_documents
        fill(store, "c", DOCS, embed, model, cohere.dimension)
        before = len(fake.embed_requests)
        result = contract.probe(store, "c", cohere, sample=len(DOCS))
        types = [r["json"]["input_type"] for r in fake.embed_requests[before:]]
        cohere.close()
    if stored_as == "search_document":
        assert result.passed and result.diagnosis is None
        assert types == ["search_document", "search_query"]
        return
    assert not result.passed and result.diagnosis is not None
    assert result.diagnosis.cause == "swapped input type", result.diagnosis.evidence
    assert result.diagnosis.mistake == "documents embedded as queries" and result.diagnosis.best_type == "search_query"
    assert "search_document" in result.diagnosis.hint
    cos = result.diagnosis.type_cosines  # the median cosine under every input type Cohere has
    assert set(cos) == {"search_document", "search_query", "classification", "clustering"}
    assert cos["search_query"] > 0.99 > 0.9 > max(cos["search_document"], cos["classification"], cos["clustering"])
    # after the documents and the self-retrieval queries, one call per other input type to diagnose
    assert types[types.index("search_query") + 1:] == ["search_query", "classification", "clustering"]
    assert result.cost.diagnosis_calls == 3 and result.cost.diagnosis_types == 3
    report = recorded(result)
    assert "documents embedded as queries" in report.gates[0].detail
    assert any("documents embedded as queries" in f and "search_query 1.000" in f for f in report.findings)


# --------------------------------------------------------------------------- MiniLM on the sample book

def test_the_sound_sample_book_passes(book, embedder):
    result = contract.probe(book.store, SAMPLE_COLLECTION, embedder, sample=16, seed=1)
    assert result.sample == 16 and result.files == 16
    assert result.passed and result.diagnosis is None
    assert result.lowest_cosine > 0.9999
    # stored and fresh vectors rank the sample alike: nothing lost to the contract
    assert result.self_retrieval_drop == 0 and result.stored_share == result.fresh_share > 0.5
    report = recorded(result)
    assert report.passed and gate_exit_code(report.gates) == 0


def test_ingest_embeds_exactly_document_text(book, embedder):
    from retrieval_lib.ingest.pipeline import SAMPLE_BOOK, prepare_documents

    prepared, _, _ = prepare_documents(SAMPLE_BOOK, embedder)
    chunks = [c for items in prepared.values() for c in items]
    assert chunks and all(embedded_text(c.payload) == c.embed_text for c in chunks)


@pytest.mark.slow
def test_rotated_vectors_pass_dimension_and_model_checks_but_fail_as_a_different_model(book, embedder):
    rotation, _ = np.linalg.qr(np.random.default_rng(12).standard_normal((embedder.dimension,) * 2))
    rotated = VectorStore.in_memory()
    rotated.create_collection("rotated", embedder.dimension)
    points = list(book.store.scroll(SAMPLE_COLLECTION, with_payload=True, with_vectors=True, batch_size=1000))
    rotated.upsert("rotated", [models.PointStruct(id=p.id, vector=(rotation @ np.asarray(p.vector)).tolist(),
                                                  payload=p.payload) for p in points])
    # the checks the workbook had before: both hold
    assert ensure_compatible(rotated, "rotated", embedder) == [embedder.model]
    assert health.scan_payloads(rotated, "rotated", expected_model=embedder.model).foreign_model_points == 0

    result = contract.probe(rotated, "rotated", embedder, sample=16, seed=1)
    assert not result.passed and result.median_cosine < 0.3
    assert result.diagnosis is not None and result.diagnosis.cause == "different model"
    assert result.fresh_share > 0.5 and result.self_retrieval_drop > 0.4  # the stored vectors lost their chunks
    report = recorded(result)
    assert [g.passed for g in report.gates] == [False, False] and gate_exit_code(report.gates) == 1
    assert "different model" in report.gates[0].detail and "EMBEDDING_MODEL" in (report.gates[0].hint or "")


@pytest.mark.slow
def test_the_probe_command_says_the_cost_first_and_exits_by_its_gates(book, embedder, tmp_path, monkeypatch, capsys):
    import json
    import shutil

    from retrieval_lib.cli.main import main

    assert main(["probe", "--sample", "0"]) == 2
    assert "sample" in capsys.readouterr().err
    folder = tmp_path / "store"
    shutil.copytree(book.folder, folder, ignore=shutil.ignore_patterns(".lock"))
    for name, value in {"QDRANT_PATH": str(folder), "QDRANT_URL": "", "QDRANT_COLLECTION_NAME": SAMPLE_COLLECTION,
                        "EMBEDDING_PROVIDER": "local", "EMBEDDING_MODEL": "", "COHERE_API_KEY": ""}.items():
        monkeypatch.setenv(name, value)
    assert main(["probe", "--sample", "8", "--json"]) == 0
    out = capsys.readouterr()
    assert out.err.startswith("probe cost (at most): 16 texts in 2 embed calls")
    data = json.loads(out.out)
    assert data["passed"] and len(data["points"]) == 8 and data["diagnosis"] is None
    assert data["collection"] == SAMPLE_COLLECTION and data["cost"]["document_texts"] == 8
    assert main(["probe", "--sample", "8"]) == 0
    printed = capsys.readouterr().out
    assert "[PASS] re-embedded chunks match their stored vectors" in printed and "[FAIL]" not in printed
    # the same check under its one name, from the registry: the same gates and verdict
    assert main(["check", "embedding_contract", "--contract-sample", "8", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert [(g["id"], g["passed"]) for g in again["gates"]] == [(g["id"], g["passed"]) for g in data["gates"]]
    assert main(["probe", "--max-drop", "1.5"]) == 2 and "max_self_retrieval_drop" in capsys.readouterr().err
