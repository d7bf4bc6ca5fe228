"""A run's Cohere bill: every notebook's embedding work, against the loopback Cohere fake, stays at its floor.

The notebooks' embedding steps (the same check calls, with params/demo.yaml's figures) run in one process,
each with its own :class:`NotebookRun` over one run folder, as papermill's kernels do one after another:
the run's query cache travels between them only through the cache file. The bill asserted:

- notebooks that read the cache (01, 02, 03, 05, 07) send each distinct query once in the whole run, in
  calls of at most 96 texts: no more than ⌈new queries / 96⌉ calls per search pass (07 sends none);
- the checks that measure the service (04 repeat-consistency, 06 latency) bypass the cache by name and make
  exactly the calls they declare: 04 ``q × repeats + q`` single searches + ``⌈q/96⌉`` for its search_many
  pass; 06 ``1 + n × latency_rounds + concurrent_queries``.
Each notebook's ``embed_calls`` metric equals the requests the fake received while it ran.
About 40 s on 2 cores (most of it the sample-book collection and 03's scan).
"""

from __future__ import annotations

import json
import math

import pytest
import yaml
from fakes.cohere_server import FakeCohere

from retrieval_lib.checks import consistency, coverage, golden, latency, scores
from retrieval_lib.config import PROJECT_ROOT, load_settings
from retrieval_lib.embed_cache import MAX_BATCH
from retrieval_lib.ingest.pipeline import ingest_from_settings
from retrieval_lib.params import load_golden_set, load_query_sets
from retrieval_lib.report import open_run

KEY = "co-COST-TEST-7d41a0"
P = yaml.safe_load((PROJECT_ROOT / "params" / "demo.yaml").read_text(encoding="utf-8"))
pytestmark = pytest.mark.timeout(300)


def notebook_01(run):
    run.retriever.search_many(P["queries"], top_k=P["top_k"])
    run.retriever.search(P["queries"][0], top_k=P["top_k"], similarity_threshold=P["no_match_threshold"])


def notebook_02(run):
    sets = load_query_sets(PROJECT_ROOT / P["query_sets"], required=("in_domain", "out_of_domain"))
    scores.measure(run.retriever, sets["in_domain"], sets["out_of_domain"], top_k=P["top_k"])


def notebook_03(run):
    coverage.measure(run.retriever, top_k=P["coverage_top_k"], headings_per_file=P["headings_per_file"],
                     golden=load_golden_set(PROJECT_ROOT / P["golden_set"]))
    run.retriever.search(P["primary_query"], top_k=P["coverage_top_k"])


def notebook_04(run):
    q = P["consistency_queries"]
    consistency.repeat_search(run.retriever, q, P["repeats"], P["top_k"])
    run.retriever.search_many(q, top_k=P["top_k"])
    run.close()
    consistency.repeat_search(run.retriever, q, 1, P["top_k"])


def notebook_05(run):
    validation_set = load_golden_set(PROJECT_ROOT / P["golden_set"])
    golden.evaluate_golden(run.retriever, validation_set, vector_count=run.store.count(run.collection),
                           metadata_completeness=100.0)


def notebook_06(run):
    sets = load_query_sets(PROJECT_ROOT / P["query_sets"], required=("in_domain",))
    queries = sets["in_domain"] + sets.get("out_of_domain", [])
    latency.warm_up(run, queries[0], top_k=P["top_k"])
    samples = latency.time_searches(run.retriever, queries, P["latency_rounds"], top_k=P["top_k"])
    latency.run_concurrent(run.retriever, queries, P["concurrent_queries"], P["concurrency"],
                           reference=latency.reference_rankings(samples), timeout_s=120.0, top_k=P["top_k"])


def notebook_07(run):
    run.retriever.stats()
    assert run.retriever.embedder.dimension == 384


NOTEBOOKS = {"01_query": notebook_01, "02_score_distributions": notebook_02, "03_source_coverage": notebook_03,
             "04_consistency": notebook_04, "05_golden_set": notebook_05, "06_latency": notebook_06,
             "07_collection_health": notebook_07}


#: Notebooks whose check embeds in more than one search_many pass: 02 asks its in-domain and its
#: out-of-domain set separately (scores.measure), so each set's new queries make their own call.
SEARCH_PASSES = {"02_score_distributions": 2}


def declared_calls(name: str) -> int | None:
    """The calls a service-measuring check declares (None: the notebook reads the cache)."""
    if name == "04_consistency":
        q = len(P["consistency_queries"])
        return q * P["repeats"] + q + math.ceil(q / MAX_BATCH)
    if name == "06_latency":
        sets = load_query_sets(PROJECT_ROOT / P["query_sets"], required=("in_domain",))
        n = len(sets["in_domain"]) + len(sets.get("out_of_domain", []))
        return 1 + n * P["latency_rounds"] + P["concurrent_queries"]
    return None


def test_a_full_run_makes_the_floor_of_calls_plus_the_declared_ones(tmp_path, monkeypatch):
    with FakeCohere(dim=384) as fake:
        for name in ("QDRANT_URL", "QDRANT_API_KEY"):
            monkeypatch.delenv(name, raising=False)
        env = {"EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-light-v3.0",
               "COHERE_API_KEY": KEY, "COHERE_BASE_URL": fake.url, "EMBEDDING_MAX_RETRIES": "0",
               "QDRANT_PATH": str(tmp_path / ".qdrant"), "QDRANT_COLLECTION_NAME": "costbook"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        ingest_from_settings(progress=False, settings=load_settings())
        ingest_calls = len(fake.embed_requests)
        assert all(len(r["json"]["texts"]) <= MAX_BATCH for r in fake.embed_requests)
        assert ingest_calls == math.ceil(sum(len(r["json"]["texts"]) for r in fake.embed_requests) / MAX_BATCH)

        run_dir = tmp_path / "run"
        seen: set[str] = set()
        bill = {}
        for name, steps in NOTEBOOKS.items():
            before = len(fake.embed_requests)
            run = open_run(name, "cost", run_dir)
            steps(run)
            run.finish()
            sent = fake.embed_requests[before:]
            texts = [t for r in sent for t in r["json"]["texts"]]
            metrics = json.loads((run_dir / "metrics" / f"{name}.json").read_text())["metrics"]
            assert (metrics["embed_calls"], metrics["embed_texts"]) == (len(sent), len(texts)), name
            declared = declared_calls(name)
            if declared is None:
                new = set(texts)
                assert len(new) == len(texts) and not new & seen, f"{name} sent a query twice in the run"
                passes = SEARCH_PASSES.get(name, 1)
                assert len(sent) <= math.ceil(len(new) / MAX_BATCH) + passes - 1 if new else not sent, name
                seen |= new
            else:
                assert len(sent) == declared, (name, len(sent), declared)
            bill[name] = len(sent)
        floor = math.ceil(len(seen) / MAX_BATCH)
        cached_calls = sum(n for name, n in bill.items() if declared_calls(name) is None)
        # one cache-reading notebook after another: each pays for its own new queries (⌈new/96⌉)
        passes = sum(SEARCH_PASSES.get(name, 1) for name in bill if declared_calls(name) is None and bill[name])
        assert cached_calls <= floor + passes - 1, (bill, floor)
        assert bill["07_collection_health"] == 0
        assert KEY not in (run_dir / "cache" / "query_embeddings.json").read_text()
