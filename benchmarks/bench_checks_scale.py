"""Benchmark: `reach` (notebook 10's pass) and `probe` (notebook 09's) against the number of points.

Builds seeded synthetic collections (``benchmarks/synthetic.py``: the real ingest payload schema,
300 source files, clustered 384-dim vectors) in a temporary embedded store (``--engines``: qdrant-edge,
the engine to choose for large local collections, and/or qdrant-client local mode), then times:

- reach: reading every vector, the chunk-as-query pass (every chunk up to ``--max-full`` points,
  else a seeded sample of ``--sample`` with the anti-hub share's Wilson 95% interval) and the
  off-topic centroids; the heading/golden questions are left out (they cost the same at any size);
- probe: :func:`retrieval_lib.checks.collection.embedding_contract.probe` with MiniLM (64 sampled points re-embedded),
  the model loaded once beforehand and not timed.

The collection build is not timed. Growth is each time divided by the smallest size's time.

    .venv/bin/python benchmarks/bench_checks_scale.py                    # 10k and 50k points, edge
    .venv/bin/python benchmarks/bench_checks_scale.py --points 100000    # 100k: reach samples
    .venv/bin/python benchmarks/bench_checks_scale.py --engines local --points 10000   # local mode (slow)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthetic import build
from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import reachability

COLLECTION = "scale"


def reach(store: VectorStore, args: argparse.Namespace) -> tuple[float, reachability.ReachStudy]:
    t = time.perf_counter()
    study = reachability.measure(store, COLLECTION, top_k=10, max_full=args.max_full, sample_size=args.sample,
                                 seed=0)
    reachability.measure_offtopic(study.table.files, study.table.titles, study.table.vectors)
    return time.perf_counter() - t, study


def probe(store: VectorStore, embedder) -> float | None:
    try:
        from retrieval_lib.checks.collection import embedding_contract as contract
    except ImportError:
        return None
    t = time.perf_counter()
    contract.probe(store, COLLECTION, embedder, sample=64, seed=0)
    return time.perf_counter() - t


def _open(engine: str, folder: Path) -> VectorStore:
    if engine == "edge":
        from retrieval_lib.stores import EdgeStore

        return EdgeStore.at_path(folder)
    return VectorStore.at_path(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--max-full", type=int, default=reachability.MAX_FULL)
    parser.add_argument("--sample", type=int, default=reachability.SAMPLE_SIZE)
    parser.add_argument("--engines", nargs="+", default=["edge"], choices=["edge", "local"])
    parser.add_argument("--no-probe", action="store_true", help="time reach only (no model load)")
    args = parser.parse_args()
    embedder = None
    if not args.no_probe:
        from retrieval_lib.embedding import LocalEmbedder

        embedder = LocalEmbedder()
        embedder.embed_documents(["warm up"])
    for engine in args.engines:
        print(f"engine: {engine}", flush=True)
        _series(engine, args, embedder)


def _series(engine: str, args: argparse.Namespace, embedder) -> None:
    rows = []
    for n in args.points:
        with tempfile.TemporaryDirectory(prefix="bench-reach-") as tmp:
            store = _open(engine, Path(tmp) / ".qdrant")
            t = time.perf_counter()
            build(store, COLLECTION, n)
            built = time.perf_counter() - t
            seconds, study = reach(store, args)
            probed = probe(store, embedder) if embedder is not None else None
            store.close()
        rows.append((n, seconds, probed))
        print(f"{n:>7,} points (built in {built:.0f} s): reach {seconds:7.1f} s "
              f"({'sampled ' + str(len(study.query_rows)) if study.sampled else 'every chunk'}, "
              f"{study.queries_run} store queries; anti-hub share {study.antihub.text()}; "
              f"skewness {study.skewness:.2f}, {len(study.hub_rows)} hubs)   "
              + (f"probe {probed:6.1f} s" if probed is not None else "probe not timed"), flush=True)
    base_n, base_reach, base_probe = rows[0]
    for n, seconds, probed in rows[1:]:
        growth = f"reach x{seconds / base_reach:.2f}"
        if probed is not None and base_probe:
            growth += f", probe x{probed / base_probe:.2f}"
        print(f"growth {base_n:,} -> {n:,} points (x{n / base_n:.0f}): {growth}")


if __name__ == "__main__":
    main()
