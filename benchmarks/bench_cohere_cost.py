"""Benchmark: a run's Cohere bill against its floor, and the notebook phase of `make demo` against its floor.

1. Bill (always): the whole workbook (every notebook, params/demo.yaml) runs through the runner `make demo`
   uses, with EMBEDDING_PROVIDER=cohere pointed at the loopback Cohere fake (tests/fakes/cohere_server.py)
   over a fresh ingest of the sample book. Prints, per notebook, the calls planned by
   `python -m retrieval_lib run --dry-run` beside the calls the fake received, the distinct queries,
   the floor ⌈distinct/96⌉ and the calls the service-measuring checks declare.
2. Notebook phase (``--phase``, needs the embedded store; set QDRANT_PATH to your copy): runs every notebook
   with papermill as `make demo` does, and a trivial notebook that starts a kernel, imports the library and
   loads MiniLM (the floor of one notebook), measured in the same run; prints the ratio
   (sum of the notebooks' seconds) / (notebooks × floor).

    .venv/bin/python benchmarks/bench_cohere_cost.py
    QDRANT_PATH=/tmp/me/.qdrant .venv/bin/python benchmarks/bench_cohere_cost.py --phase
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
KEY = "co-BENCH-COST-0b7e44"


def bill() -> None:
    saved = dict(os.environ)
    try:
        _bill()
    finally:  # the phase below runs on the embedded default again
        os.environ.clear()
        os.environ.update(saved)


def _bill() -> None:
    from fakes.cohere_server import FakeCohere

    from retrieval_lib.cli import plan_run, prefetch_queries
    from retrieval_lib.config import PROJECT_ROOT, load_settings
    from retrieval_lib.embedding import MAX_BATCH
    from retrieval_lib.ingest import ingest_from_settings
    from retrieval_lib.stores import sync_from_settings
    from retrieval_lib.workbook import list_notebooks, load_profile, run_workbook

    params = PROJECT_ROOT / "params" / "demo.yaml"
    with tempfile.TemporaryDirectory() as tmp, FakeCohere(dim=384) as fake:
        for name in ("QDRANT_URL", "QDRANT_API_KEY", "QDRANT_ENGINE"):
            os.environ.pop(name, None)
        os.environ.update({"EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-light-v3.0",
                           "COHERE_API_KEY": KEY, "COHERE_BASE_URL": fake.url, "EMBEDDING_MAX_RETRIES": "0",
                           "QDRANT_PATH": str(Path(tmp) / ".qdrant"), "QDRANT_COLLECTION_NAME": "costbook"})
        settings = load_settings()
        ingest_from_settings(progress=False, settings=settings)
        sync_from_settings(settings)
        chunks = sum(len(r["json"]["texts"]) for r in fake.embed_requests)
        print(f"ingest: {len(fake.embed_requests)} calls for {chunks} chunks "
              f"(floor ⌈{chunks}/96⌉ = {math.ceil(chunks / MAX_BATCH)})")
        plan = plan_run(load_profile(params).values, list_notebooks(None), settings)
        before = len(fake.embed_requests)
        result = run_workbook(params, out_dir=Path(tmp) / "out", progress=False, prefetch=prefetch_queries)
        sent = fake.embed_requests[before:]
        outcomes = {o.notebook: o for o in result.outcomes}
        print(f"{'':24} {'planned':>7} {'made':>5}  how")
        print(f"{'prefetch (run start)':24} {plan.prefetch_calls:>7} {'':>5}  "
              f"{len(plan.prefetch)} distinct queries, ⌈{len(plan.prefetch)}/96⌉")
        made_total = 0
        for n in plan.notebooks:
            made = int(outcomes[n.notebook].metrics.get("embed_calls") or 0) if n.notebook in outcomes else 0
            made_total += made
            print(f"{n.notebook:24} {n.calls:>7} {made:>5}  {n.formula[:90]}")
        service = sum(n.service_calls for n in plan.notebooks)
        floor = math.ceil(len(plan.prefetch) / MAX_BATCH)
        print(f"run: the fake received {len(sent)} calls for {sum(len(r['json']['texts']) for r in sent)} texts; "
              f"planned {plan.total_calls} + {service} by the service under test = {plan.total_calls + service}")
        print(f"cache-reading notebooks: {plan.prefetch_calls} calls for {len(plan.prefetch)} distinct queries, "
              f"floor ⌈{len(plan.prefetch)}/96⌉ = {floor} (x{plan.prefetch_calls / floor:.2f}); declared by the "
              f"checks that measure the service or re-embed documents: {plan.declared_calls} "
              f"(notebooks made {made_total}); target floor + declared = {floor + plan.declared_calls}")


def phase() -> None:
    import nbformat

    from retrieval_lib.workbook import run_workbook

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "nb"
        folder.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "retrieval-lib", "display_name": "retrieval-lib", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell('run_dir = ""', metadata={"tags": ["parameters"]}),
                    nbformat.v4.new_code_cell(
                        "from retrieval_lib.checks.retrieval import score_distributions, source_coverage\n"
                        "from retrieval_lib.checks.retrieval import golden_set\n"
                        "from retrieval_lib.checks.stability import consistency, latency\n"
                        "from retrieval_lib.checks.collection import collection_health\n"
                        "from retrieval_lib.workbook import open_run\n"
                        "run = open_run('01_floor', run_dir, title='floor')\n"
                        "run.retriever.embedder.embed_queries(['What is ROS2?'])\n"
                        "print(run.finish())")]
        nbformat.write(nb, folder / "01_floor.ipynb")
        params = Path(tmp) / "p.yaml"
        params.write_text("profile: floor\n", encoding="utf-8")
        floors = []
        for _ in range(2):  # the trivial notebook's own seconds, counted as the runner counts every notebook's
            trivial = run_workbook(params, out_dir=Path(tmp) / "out", progress=False, notebook_dir=folder)
            floors.append(trivial.outcomes[0].seconds)
        t0 = time.perf_counter()
        from retrieval_lib.cli import prefetch_queries

        result = run_workbook(None, out_dir=Path(tmp) / "out", progress=False, prefetch=prefetch_queries)
        wall = time.perf_counter() - t0
        summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
        floors.append(min(floors))
    floor = statistics.median(floors)
    seconds = {o.notebook: o.seconds for o in result.outcomes}
    pre = summary["embedding"]["prefetch"] or {}
    prefetch_s = float(pre.get("seconds") or 0.0)
    print("notebook seconds: " + ", ".join(f"{k[:2]} {v:.1f}" for k, v in seconds.items())
          + f"; the runner's prefetch {prefetch_s:.1f} s")
    first7 = [v for k, v in seconds.items() if k[:2] in {"01", "02", "03", "04", "05", "06", "07"}]
    for label, values in (("notebooks 01-07 (the issue's baseline: 62.5 s, x1.28)", first7),
                          (f"all {len(seconds)} notebooks", list(seconds.values()))):
        nbs = sum(values) + prefetch_s
        print(f"notebook phase, {label}: {nbs:.1f} s with the prefetch; floor {len(values)} x {floor:.1f} s "
              f"(kernel start + import + model load, a trivial notebook run the same way) = "
              f"{len(values) * floor:.1f} s; ratio x{nbs / (len(values) * floor):.2f}")
    print(f"run wall {wall:.1f} s, exit {result.exit_code}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", action="store_true", help="also time the notebook phase against its floor")
    args = parser.parse_args()
    bill()
    if args.phase:
        phase()


if __name__ == "__main__":
    main()
