"""The whole workbook, run by papermill against the loopback Cohere fake, sends exactly the planned embed calls.

`python -m retrieval_lib run --dry-run` (:mod:`retrieval_lib.cli.commands.plan`) states, before a run, the calls
each notebook will make. This test runs every notebook with ``params/demo.yaml`` through the same runner
``make demo`` uses, with ``EMBEDDING_PROVIDER=cohere`` pointed at the fake, and checks the bill:

- the prefetch embeds every distinct query of the cache-reading notebooks once, in ⌈distinct/96⌉ calls (the floor);
- each notebook's ``embed_calls`` metric equals its planned calls (0 for the cache readers);
- the fake received exactly prefetch + the declared calls + the service-under-test's calls, and nothing more;
- neither key (a recognisable COHERE_API_KEY and QDRANT_API_KEY, raw or base64-encoded) appears in any file the
  run or ingest wrote (executed notebooks, HTML, figures, tables, metrics, summary, the store and its metadata) or
  in anything logged at DEBUG level or printed meanwhile. (``test_secrets`` covers the failure paths through the
  command line; this is the one full run both checks share.)
- every gate has the id, verdict and value it had before the checks moved to one contract (issue 31;
  tests/fixtures/gates_before_contract.json, recorded with the same hashed vectors at d6aac9d).
About 3 minutes on 2 cores (15 kernels, the service of 08, the sample book's collection).
"""

from __future__ import annotations

import base64
import logging
import math

import corpus
import pytest
from fakes.cohere_server import FakeCohere

from retrieval_lib.cli.commands.plan import plan_run, prefetch_queries
from retrieval_lib.config import PROJECT_ROOT, load_settings
from retrieval_lib.embedding.cache import MAX_BATCH
from retrieval_lib.ingest.pipeline import ingest_from_settings
from retrieval_lib.stores.metadata import sync_from_settings
from retrieval_lib.workbook.runner import list_notebooks, load_profile, run_workbook

KEY = "co-BILL-TEST-5e21c9"
QDRANT_KEY = "qd-BILL-TEST-77a1e0"
NEEDLES = [k.encode() for k in (KEY, QDRANT_KEY)] + [base64.b64encode(k.encode()) for k in (KEY, QDRANT_KEY)]
FIXTURES = corpus.FIXTURES
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_a_full_run_sends_exactly_the_planned_calls_and_reveals_no_key(tmp_path, monkeypatch, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    with FakeCohere(dim=384) as fake:
        for name in ("QDRANT_URL", "QDRANT_ENGINE"):
            monkeypatch.delenv(name, raising=False)
        env = {"EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-light-v3.0",
               "COHERE_API_KEY": KEY, "COHERE_BASE_URL": fake.url, "EMBEDDING_MAX_RETRIES": "0",
               "EMBEDDING_BATCH_SIZE": "96",  # the fake stands in for Cohere's own API (another URL starts at 16)
               "QDRANT_API_KEY": QDRANT_KEY,
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
            if planned[name].queries and not planned[name].calls and not planned[name].conditional:
                assert int(o.metrics["embed_texts_cached"]) > 0, f"{name} read nothing from the run's cache"
        # the prefetch is the floor: every distinct query once, 96 per call
        import json

        summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
        _same_gates_as_before_the_contract(summary["gates"])
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
        # (the service embeds requests that arrive together in one call, so its concurrent rounds cost fewer: its
        # sequential probes at least reach the fake)
        assert len(sent) > ours, "the service under test sent no request of its own"
        assert all(len(r["json"]["texts"]) <= MAX_BATCH for r in sent)
        queries = [t for r in sent if r["json"]["input_type"] == "search_query" for t in r["json"]["texts"]]
        assert set(plan.prefetch) <= set(queries)
        assert all(r["headers"].get("authorization") == f"Bearer {KEY}" for r in sent)  # the key did travel
    files = [p for root in (result.run_dir, tmp_path / ".qdrant") for p in root.rglob("*") if p.is_file()]
    leaks = {str(p): [n for n in NEEDLES if n in p.read_bytes()] for p in files}
    streams = capfd.readouterr()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    leaks.update({name: [n for n in NEEDLES if n in text.encode()] for name, text in
                  (("stdout", streams.out), ("stderr", streams.err), ("log", logged))})
    print(f"\nsecret scan: {len(files)} files, stdout, stderr and {len(caplog.records)} log records")
    assert len(files) >= 15 * 3  # every notebook's executed copy, HTML render and metrics at least
    assert not {k: v for k, v in leaks.items() if v}


#: Gates whose value is a time (or follows from one): their figures move with the machine's load.
TIMED = ("latency.", "api.overhead", "api.concurrent.")


def _same_gates_as_before_the_contract(gates: list[dict]) -> None:
    """Issue 31: the checks moved to one contract (``run(ctx, **params)``) with no change to what they judge.

    Every gate of this run (hashed vectors: the same figures on any machine) has the id, the verdict and the value
    recorded before the move (tests/fixtures/gates_before_contract.json); timed gates keep their id only.
    """
    import json

    before = json.loads((FIXTURES / "gates_before_contract.json").read_text(encoding="utf-8"))["gates"]
    now = {g["id"]: g for g in gates}
    assert sorted(now) == sorted(before), (sorted(set(now) - set(before)), sorted(set(before) - set(now)))
    changed = {gid: ((b["passed"], b["value"]), (now[gid]["passed"], now[gid]["value"]))
               for gid, b in before.items() if not gid.startswith(TIMED)
               and (b["passed"] != now[gid]["passed"] or not _same_value(b["value"], now[gid]["value"]))}
    assert not changed, changed


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    return a == b
