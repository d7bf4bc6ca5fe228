"""The whole workbook, run by papermill against the loopback Cohere fake, sends exactly the planned embed calls.

`python -m retrieval_lib run --dry-run` (:mod:`retrieval_lib.cli.commands.plan`) states, before a run, the calls
each notebook will make. This test runs every notebook with ``params/demo.yaml`` through the same runner
``make demo`` uses, with ``EMBEDDING_PROVIDER=cohere`` pointed at the fake, and checks the bill:

- the prefetch embeds every distinct query of the cache-reading notebooks once, in ⌈distinct/96⌉ calls (the floor);
- each notebook's ``embed_calls`` metric equals its planned calls (0 for the cache readers);
- the fake received exactly prefetch + the declared calls + the service-under-test's calls, and nothing more;
- the API key appears in no file of the run folder.
About 3 minutes on 2 cores (14 kernels, the service of 08, the sample book's collection).
"""

from __future__ import annotations

import math

import pytest
from fakes.cohere_server import FakeCohere

from retrieval_lib.cli.commands.plan import plan_run, prefetch_queries
from retrieval_lib.config import PROJECT_ROOT, load_settings
from retrieval_lib.embedding.cache import MAX_BATCH
from retrieval_lib.ingest.pipeline import ingest_from_settings
from retrieval_lib.stores.metadata import sync_from_settings
from retrieval_lib.workbook.runner import list_notebooks, load_profile, run_workbook

KEY = "co-BILL-TEST-5e21c9"
pytestmark = pytest.mark.timeout(900)


def test_a_full_run_sends_exactly_the_planned_calls(tmp_path, monkeypatch):
    with FakeCohere(dim=384) as fake:
        for name in ("QDRANT_URL", "QDRANT_API_KEY", "QDRANT_ENGINE"):
            monkeypatch.delenv(name, raising=False)
        env = {"EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-light-v3.0",
               "COHERE_API_KEY": KEY, "COHERE_BASE_URL": fake.url, "EMBEDDING_MAX_RETRIES": "0",
               "QDRANT_PATH": str(tmp_path / ".qdrant"), "QDRANT_COLLECTION_NAME": "billbook"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings = load_settings()
        ingest_from_settings(progress=False, settings=settings)
        sync_from_settings(settings)  # the metadata rows 08 checks, as `ingest` writes them
        notebooks = list_notebooks(None)
        plan = plan_run(load_profile(PROJECT_ROOT / "params" / "demo.yaml").values, notebooks, settings)
        before = len(fake.embed_requests)

        result = run_workbook(PROJECT_ROOT / "params" / "demo.yaml", out_dir=tmp_path / "out", progress=False,
                              prefetch=prefetch_queries)

        sent = fake.embed_requests[before:]
        outcomes = {o.notebook: o for o in result.outcomes}
        assert not [o.notebook for o in result.outcomes if o.status == "error"], \
            {o.notebook: o.error for o in result.outcomes if o.status == "error"}
        assert set(outcomes) == {n.notebook for n in plan.notebooks}
        planned = {n.notebook: n for n in plan.notebooks}
        # every notebook's own requests are the planned ones (09's diagnosis adds calls only when its gate fails)
        diagnosis = 0
        for name, o in outcomes.items():
            calls = int(o.metrics["embed_calls"]) if "embed_calls" in o.metrics else 0
            if name.startswith("09_") and calls != planned[name].calls:
                diagnosis = calls - planned[name].calls
                # the content alone, then the worst texts under each of Cohere's other input types
                assert 0 < diagnosis <= 5 * math.ceil(64 / MAX_BATCH), (name, calls)
                assert any(not g["passed"] for g in o.gates), "diagnosis calls without a failed gate"
                continue
            assert calls == planned[name].calls, (name, calls, planned[name].calls)
            if planned[name].queries and not planned[name].calls:
                assert int(o.metrics["embed_texts_cached"]) > 0, f"{name} read nothing from the run's cache"
        # the prefetch is the floor: every distinct query once, 96 per call
        import json

        summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
        pre = summary["embedding"]["prefetch"]
        assert pre["queries"] == len(plan.prefetch) and pre["texts"] == len(plan.prefetch)
        assert pre["calls"] == plan.prefetch_calls == math.ceil(len(plan.prefetch) / MAX_BATCH)
        assert summary["embedding"]["calls"] == plan.total_calls + diagnosis
        # the fake saw that, plus the service under test's own requests, and nothing else
        service = sum(n.service_calls for n in plan.notebooks)
        # (the service may send fewer when the machine is so loaded that a timed request is abandoned at its
        # timeout before the service embeds it; never more)
        ours = plan.total_calls + diagnosis
        assert ours <= len(sent) <= ours + service, (len(sent), plan.total_calls, service)
        assert len(sent) >= ours + service - 3, "the service under test sent far fewer requests than planned"
        assert all(len(r["json"]["texts"]) <= MAX_BATCH for r in sent)
        queries = [t for r in sent if r["json"]["input_type"] == "search_query" for t in r["json"]["texts"]]
        assert set(plan.prefetch) <= set(queries)
        for path in result.run_dir.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), f"the API key is in {path}"
