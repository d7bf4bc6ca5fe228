"""Benchmark: a run's Cohere bill against its floor, and the notebook phase of `make demo` against its floor.

1. Bill (always): notebooks 01-07's embedding steps, with params/demo.yaml's figures, run against the
   loopback Cohere fake (tests/fakes/cohere_server.py), one NotebookRun per notebook over one run folder
   (the steps are those of tests/test_cohere_cost.py). Prints calls and texts per notebook, the distinct
   queries of the run, the floor ⌈distinct/96⌉, and the calls the service-measuring checks declare.
2. Notebook phase (``--phase``, needs the embedded store; set QDRANT_PATH to your copy): runs notebooks
   01-07 with papermill as `make demo` does, and a trivial notebook that starts a kernel, imports the
   library and loads MiniLM (the floor of one notebook), measured in the same run; prints the ratio
   (sum of the notebooks' seconds) / (7 × floor).

    .venv/bin/python benchmarks/bench_cohere_cost.py
    QDRANT_PATH=/tmp/me/.qdrant .venv/bin/python benchmarks/bench_cohere_cost.py --phase
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def bill() -> None:
    from fakes.cohere_server import FakeCohere
    from test_cohere_cost import KEY, NOTEBOOKS, declared_calls

    from retrieval_lib.config import load_settings
    from retrieval_lib.embed_cache import MAX_BATCH
    from retrieval_lib.ingest.pipeline import ingest_from_settings
    from retrieval_lib.report import open_run

    with tempfile.TemporaryDirectory() as tmp, FakeCohere(dim=384) as fake:
        for name in ("QDRANT_URL", "QDRANT_API_KEY"):
            os.environ.pop(name, None)
        os.environ.update({"EMBEDDING_PROVIDER": "cohere", "EMBEDDING_MODEL": "embed-english-light-v3.0",
                           "COHERE_API_KEY": KEY, "COHERE_BASE_URL": fake.url, "EMBEDDING_MAX_RETRIES": "0",
                           "QDRANT_PATH": str(Path(tmp) / ".qdrant"), "QDRANT_COLLECTION_NAME": "costbook"})
        ingest_from_settings(progress=False, settings=load_settings())
        chunks = sum(len(r["json"]["texts"]) for r in fake.embed_requests)
        print(f"ingest: {len(fake.embed_requests)} calls for {chunks} chunks "
              f"(floor ⌈{chunks}/96⌉ = {math.ceil(chunks / MAX_BATCH)})")
        seen: set[str] = set()
        total_calls = total_texts = declared_total = 0
        print(f"{'notebook':24} {'calls':>5} {'texts':>6}  cache")
        for name, steps in NOTEBOOKS.items():
            before = len(fake.embed_requests)
            run = open_run(name, "cost", Path(tmp) / "run")
            steps(run)
            run.finish()
            sent = fake.embed_requests[before:]
            texts = [t for r in sent for t in r["json"]["texts"]]
            declared = declared_calls(name)
            if declared is None:
                seen |= set(texts)
            else:
                declared_total += declared
            total_calls += len(sent)
            total_texts += len(texts)
            how = "reads the run cache" if declared is None else f"bypassed by name, declares {declared}"
            print(f"{name:24} {len(sent):5} {len(texts):6}  {how}")
        cached_calls = total_calls - declared_total
        floor = math.ceil(len(seen) / MAX_BATCH)
        print(f"run: {total_calls} calls for {total_texts} texts; cache-reading notebooks {cached_calls} calls for "
              f"{len(seen)} distinct queries, floor ⌈{len(seen)}/96⌉ = {floor} (x{cached_calls / floor:.2f}); "
              f"declared by 04 and 06: {declared_total}; target floor + declared = {floor + declared_total}")


def phase() -> None:
    import nbformat

    from retrieval_lib.runner import run_workbook

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "nb"
        folder.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "retrieval-lib", "display_name": "retrieval-lib", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell('run_dir = ""', metadata={"tags": ["parameters"]}),
                    nbformat.v4.new_code_cell(
                        "from retrieval_lib.checks import consistency, coverage, golden, health, latency, scores\n"
                        "from retrieval_lib.report import open_run\n"
                        "run = open_run('01_floor', 'floor', run_dir)\n"
                        "run.retriever.embedder.embed_queries(['What is ROS2?'])\n"
                        "print(run.finish())")]
        nbformat.write(nb, folder / "01_floor.ipynb")
        params = Path(tmp) / "p.yaml"
        params.write_text("profile: floor\n", encoding="utf-8")
        floors = []
        for _ in range(2):
            t0 = time.perf_counter()
            run_workbook(params, out_dir=Path(tmp) / "out", progress=False, notebook_dir=folder)
            floors.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = run_workbook(None, notebooks="01,02,03,04,05,06,07", out_dir=Path(tmp) / "out", progress=False)
        wall = time.perf_counter() - t0
        floors.append(min(floors))
    floor = statistics.median(floors)
    seconds = {o.notebook: o.seconds for o in result.outcomes}
    nbs = sum(seconds.values())
    print("notebook seconds: " + ", ".join(f"{k[:2]} {v:.1f}" for k, v in seconds.items()))
    print(f"notebook phase: {nbs:.1f} s (run wall {wall:.1f} s, exit {result.exit_code}); floor 7 x {floor:.1f} s "
          f"(kernel start + import + model load, a trivial notebook run the same way) = {7 * floor:.1f} s; "
          f"ratio x{nbs / (7 * floor):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", action="store_true", help="also time the notebook phase against its floor")
    args = parser.parse_args()
    bill()
    if args.phase:
        phase()


if __name__ == "__main__":
    main()
