"""Benchmark: whole-collection scans against their floor, on synthetic collections of the real payload schema.

For each size it builds a collection (300 source files, ingest's payload fields,
seeded vectors) in an embedded store in a temporary folder, then times, each
beside its floor measured in the same run (the median of ``--repeat`` rounds,
floor and scan alternating):

- ``source_coverage.scan_sources`` (notebook 03) and ``health.scan_payloads`` (05, 07);
  the floor is ONE scroll request of just the fields the scan needs plus the
  same tally;
- ingest's incremental diff read (``pipeline._existing_points``), floor likewise;
- the second notebook's ``scan_payloads`` reading the run's shared scan, against
  the first notebook's own scan;
- with ``--before``: the old reading (pages of 256 / 512 points, whole payloads
  for the health scan) with the same tally, to show what large pages fixed.

    .venv/bin/python benchmarks/bench_scans.py                  # 10k and 50k points
    .venv/bin/python benchmarks/bench_scans.py --sizes 100000   # once, about 4 minutes
    .venv/bin/python benchmarks/bench_scans.py --sizes 10000 --before

Linear in points means the µs per point stays flat from size to size.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from retrieval_lib.checks.collection import collection_health as health  # noqa: E402
from retrieval_lib.checks.retrieval import source_coverage as coverage  # noqa: E402
from retrieval_lib.ingest import pipeline  # noqa: E402
from retrieval_lib.models import PAYLOAD_FIELDS  # noqa: E402
from retrieval_lib.stores import Columns, VectorStore, page_size  # noqa: E402

COLLECTION = "synthetic"
FILES = 300
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WORDS = ("robot sensor gazebo node topic urdf lidar joint link controller simulation camera odometry "
         "frame transform launch parameter service action message planner map isaac policy").split()
DIFF_FIELDS = ["source_file", "file_hash", "chunk_sequence", "total_chunks", "model_version"]


def build(store: VectorStore, points: int, dimension: int, seed: int = 7) -> None:
    """``points`` chunks over :data:`FILES` files with ingest's payload (``prepare_documents``) and seeded vectors."""
    rng, vectors = random.Random(seed), np.random.default_rng(seed)
    store.create_collection(COLLECTION, dimension)
    fast_writes(store, COLLECTION)
    files = [f"module-{i % 6 + 1:02d}/{i:03d}-chapter-{i}.md" for i in range(FILES)]
    per_file = [points // FILES + (i < points % FILES) for i in range(FILES)]
    batch: list[Any] = []
    from qdrant_client import models

    for f, (source, total) in enumerate(zip(files, per_file)):
        file_hash = hashlib.sha256(source.encode()).hexdigest()
        for seq in range(total):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 220)))
            payload = {
                "chunk_id": f"{source}#{seq}", "source_file": source,
                "source_url": f"https://book.example/docs/{source[:-3]}", "title": f"Chapter {f}",
                "section_title": f"Section {seq // 3}", "heading_path": [f"Chapter {f}", f"Section {seq // 3}"],
                "content": text, "content_hash": hashlib.sha256(text.encode()).hexdigest(),
                "chunk_sequence": seq, "total_chunks": total, "token_count": len(text.split()),
                "processing_timestamp": "2026-11-23T00:00:00+00:00", "model_version": MODEL, "file_hash": file_hash,
            }
            batch.append(models.PointStruct(id=str(uuid.UUID(int=rng.getrandbits(128))),
                                            vector=vectors.standard_normal(dimension).astype(np.float32).tolist(),
                                            payload=payload))
            if len(batch) == 2_000:
                store.upsert(COLLECTION, batch)
                batch = []
    if batch:
        store.upsert(COLLECTION, batch)


def fast_writes(store: VectorStore, collection: str) -> None:
    """Let local mode's per-point sqlite commits skip the disk sync while building (a throw-away folder).

    Without it local mode syncs the file once per point: 5,000 points take about 2 minutes instead of 8 s.
    It reaches into qdrant-client's internals, so any change there only makes the build slow again.
    """
    try:
        connection = store.client._client.collections[collection].storage.storage
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute("PRAGMA journal_mode=MEMORY")
    except (AttributeError, KeyError):
        pass


def one_request(store: VectorStore, fields: list[str]) -> Columns:
    """The floor's reading: ONE scroll request for every point, just ``fields``, as columns."""
    records, _ = store.client.scroll(COLLECTION, limit=store.count(COLLECTION) + 1, with_payload=fields,
                                     with_vectors=False)
    return Columns([str(r.id) for r in records], {f: [(r.payload or {}).get(f) for r in records] for f in fields})


def paged(store: VectorStore, fields: list[str] | bool, batch_size: int) -> Columns:
    """The old reading: pages of ``batch_size`` (``fields`` True: whole payloads), as columns of PAYLOAD_FIELDS."""
    names = list(PAYLOAD_FIELDS) if isinstance(fields, bool) else list(fields)
    ids: list[str] = []
    values: dict[str, list[Any]] = {f: [] for f in names}
    for point in store.scroll(COLLECTION, with_payload=fields, batch_size=batch_size):
        ids.append(str(point.id))
        for f in names:
            values[f].append((point.payload or {}).get(f))
    return Columns(ids, values)


def as_tally(scan: health.PayloadScan) -> dict[str, Any]:
    """The scan's raw counts, shaped as :func:`health.tally_payloads` returns them (to check scan == floor)."""
    keys = ("points", "field_present", "complete_points", "duplicate_hashes", "model_versions", "points_per_file")
    return {k: getattr(scan, k) for k in keys}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def compare(repeat: int, scan: Callable[[], Any], floor: Callable[[], Any]) -> tuple[float, float]:
    """Medians of ``scan`` and ``floor`` over ``repeat`` alternating rounds; checks they agree."""
    scans, floors = [], []
    for _ in range(repeat):
        t_floor, expected = timed(floor)
        t_scan, got = timed(scan)
        if got != expected:
            raise SystemExit(f"the scan and its floor disagree: {str(got)[:200]} vs {str(expected)[:200]}")
        scans.append(t_scan)
        floors.append(t_floor)
    return statistics.median(scans), statistics.median(floors)


def row(points: int, name: str, seconds: float, floor: float, floor_name: str) -> None:
    print(f"{points:>7}  {name:<34} {seconds:8.2f} s  {floor:8.2f} s  x{seconds / floor:5.2f}  "
          f"{seconds / points * 1e6:7.1f} us/pt   floor: {floor_name}", flush=True)


def bench(points: int, args: argparse.Namespace) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="bench-scans-"))
    store = VectorStore.at_path(folder / ".qdrant")
    seconds, _ = timed(lambda: build(store, points, args.dimension))
    print(f"{points:>7}  built in {seconds:.1f} s ({FILES} files, {args.dimension} dims, embedded store; "
          f"scan pages of {page_size(store, points)} points)", flush=True)
    out: dict[str, float] = {}

    t, f = compare(args.repeat, lambda: coverage.scan_sources(store, COLLECTION),
                   lambda: coverage.tally_sources(one_request(store, coverage.SCAN_FIELDS)))
    row(points, "coverage.scan_sources (03)", t, f, "1 request of 4 fields + tally")
    out["scan_sources"] = t
    t, f = compare(args.repeat, lambda: as_tally(health.scan_payloads(store, COLLECTION, expected_model=MODEL)),
                   lambda: health.tally_payloads(one_request(store, list(PAYLOAD_FIELDS))))
    row(points, "health.scan_payloads (05, 07)", t, f, "1 request of 12 fields + tally")
    out["scan_payloads"] = t
    t, f = compare(args.repeat, lambda: pipeline._existing_points(store, COLLECTION),
                   lambda: _diff_floor(store))
    row(points, "ingest diff read", t, f, "1 request of 5 fields + grouping")
    out["ingest_diff"] = t

    run_dir = folder / "run"
    first, _ = timed(lambda: health.scan_payloads(store, COLLECTION, expected_model=MODEL, run_dir=run_dir))
    reuse, _ = timed(lambda: health.scan_payloads(store, COLLECTION, expected_model=MODEL, run_dir=run_dir))
    print(f"{points:>7}  {'07 reusing 05s shared scan':<34} {reuse:8.2f} s  {first:8.2f} s  x{reuse / first:5.2f}  "
          f"{'':>15}   against: 05's own scan (which stored it)", flush=True)

    if args.before:
        t, f = compare(1, lambda: coverage.tally_sources(paged(store, coverage.SCAN_FIELDS, 256)),
                       lambda: coverage.tally_sources(one_request(store, coverage.SCAN_FIELDS)))
        row(points, "before: scan_sources, pages of 256", t, f, "1 request of 4 fields + tally")
        t, f = compare(1, lambda: health.tally_payloads(paged(store, True, 512)),
                       lambda: health.tally_payloads(one_request(store, list(PAYLOAD_FIELDS))))
        row(points, "before: scan_payloads, pages of 512", t, f, "1 request of 12 fields + tally")
    store.close()
    return out


def _diff_floor(store: VectorStore) -> dict[str, list[dict[str, Any]]]:
    columns = one_request(store, DIFF_FIELDS)
    by_file: dict[str, list[dict[str, Any]]] = {}
    for i, point_id in enumerate(columns.ids):
        payload = {f: columns[f][i] for f in DIFF_FIELDS if columns[f][i] is not None}
        payload["_id"] = point_id
        by_file.setdefault(str(payload.get("source_file")), []).append(payload)
    return by_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=3, help="rounds per figure (median)")
    parser.add_argument("--before", action="store_true", help="also time the old small-page reading (slow)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="Local mode is not recommended")
    print(f"{'points':>7}  {'operation':<34} {'time':>10}  {'floor':>10}  {'ratio':>6}  {'per point':>13}")
    results = {n: bench(n, args) for n in args.sizes}
    sizes = sorted(results)
    for small, large in zip(sizes, sizes[1:]):
        for name in results[small]:
            growth = (results[large][name] / large) / (results[small][name] / small)
            print(f"linearity {name}: time per point at {large} is x{growth:.2f} that at {small} (1.00 = linear)")


if __name__ == "__main__":
    main()
