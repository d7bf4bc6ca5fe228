"""Scale of the embedded engines: qdrant-client local mode against qdrant-edge, each figure beside its floor.

For each size (10k and 50k by default; ``--sizes 100000`` for ``make bench-scale``) and each engine, a
synthetic collection (benchmarks/synthetic.py: the ingest payload, 300 source files, seeded clustered
384-dim vectors) is built once, then measured in a fresh subprocess (so peak RSS is that engine's alone):

- open, stats, ``source_coverage.scan_sources``, ``health.scan_payloads``;
- one search, 200 batched searches, a top-10 pass over every chunk (local mode: a 500-chunk sample,
  extrapolated and marked so: the full pass takes hours);
- memory: the RSS the open store adds, then after its first search (ready to serve), and the peak over
  all of the above, against the data (float32 vectors plus the payloads as JSON).

Floors, measured in the same subprocess: numpy exact top-k over the same vectors (search, batch, all chunks),
and one scroll of just the needed fields (scans). Usage::

    python benchmarks/bench_scale.py                 # 10k and 50k
    python benchmarks/bench_scale.py --sizes 100000  # once: builds take minutes
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENGINES = ("local", "edge")
LOCAL_ALL_SAMPLE = 500


def _open(engine: str, folder: Path):
    from retrieval_lib.stores import EdgeStore, VectorStore

    return EdgeStore.at_path(folder) if engine == "edge" else VectorStore.at_path(folder)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _topk_numpy(x, queries, k: int = 10):
    import numpy as np

    scores = queries @ x.T
    idx = np.argpartition(-scores, k, axis=1)[:, :k]
    return np.take_along_axis(scores, idx, axis=1)


def build(engine: str, n: int, folder: Path) -> None:
    from benchmarks.synthetic import build as fill

    with _open(engine, folder) as store:
        fill(store, "bench", n)


def measure(engine: str, n: int, folder: Path) -> dict:
    import numpy as np

    from benchmarks.synthetic import vectors
    from retrieval_lib.checks.collection import collection_health as health
    from retrieval_lib.checks.retrieval import source_coverage as coverage

    x, _ = vectors(n)
    rng = np.random.default_rng(1)
    queries = x[rng.choice(n, 200, replace=False)]
    row: dict = {"engine": engine, "points": n, "data_mb": x.nbytes / 2**20,
                 "payload_mb": _payload_bytes(n) / 2**20}
    _reset_peak()  # building the vectors above peaked higher than the store may: measure from here
    row["rss_before_open_mb"] = _status_mb("VmRSS")
    row["open_s"], store = _timed(lambda: _open(engine, folder))
    row["rss_open_mb"] = _status_mb("VmRSS")
    with store:
        store.query("bench", queries[0], limit=10)  # the first search with payloads (edge maps payload storage)
        row["rss_ready_mb"] = _status_mb("VmRSS")
        from retrieval_lib.stores import collection_stats

        row["stats_s"], _ = _timed(lambda: collection_stats(store, "bench"))
        fields = ["source_file", "chunk_sequence", "section_title", "title"]

        def floor() -> int:
            return sum(1 for _ in store.scroll("bench", with_payload=fields, batch_size=n))

        # each scan and its floor twice, the faster kept: the first pass over a freshly opened store also pages
        # its files in, which would otherwise be charged to whichever pass ran first
        row["scan_sources_s"] = min(_timed(lambda: coverage.scan_sources(store, "bench"))[0] for _ in range(2))
        row["scan_payloads_s"] = min(_timed(lambda: health.scan_payloads(store, "bench", expected_model=None))[0]
                                     for _ in range(2))
        row["scroll_floor_s"] = min(_timed(floor)[0] for _ in range(2))
        row["rss_scans_mb"] = _status_mb("VmHWM")
        row["search_ms"] = 1000 * min(_timed(lambda i=i: store.query("bench", queries[i], limit=10))[0]
                                      for i in range(5))
        row["search_floor_ms"] = 1000 * min(_timed(lambda: _topk_numpy(x, queries[:1]))[0] for _ in range(5))
        row["batch200_s"], _ = _timed(lambda: store.query_batch("bench", list(queries), limit=10,
                                                               with_payload=False))
        row["batch200_floor_s"], _ = _timed(lambda: _topk_numpy(x, queries))
        sample = n if engine == "edge" else min(n, LOCAL_ALL_SAMPLE)
        t = 0.0
        for start in range(0, sample, 1000):
            chunk = list(x[start:min(sample, start + 1000)])
            t += _timed(lambda chunk=chunk: store.query_batch("bench", chunk, limit=11, with_payload=False))[0]
        row["all_top10_s"] = t * n / sample
        row["peak_rss_mb"] = _status_mb("VmHWM")  # before the numpy floor
        row["all_top10_extrapolated"] = sample < n
        row["all_top10_floor_s"] = sum(_timed(lambda s=s: _topk_numpy(x, x[s:s + 2000], 11))[0]
                                       for s in range(0, n, 2000))
    return row


def _status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (the peak since :func:`_reset_peak`) of this process, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


def _payload_bytes(n: int) -> int:
    """The stored payloads' size as JSON (what the points hold besides their vectors)."""
    import numpy as np

    from benchmarks.synthetic import FILES, payload, vectors

    _, owner = vectors(n)
    totals = np.bincount(owner, minlength=FILES)
    seq = np.zeros(FILES, dtype=int)
    size = 0
    for i, f in enumerate(owner):
        size += len(json.dumps(payload(i, int(f), int(seq[f]), int(totals[f]))).encode())
        seq[f] += 1
    return size


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=7200)
    if out.returncode:
        raise SystemExit(f"{args} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _print(row: dict) -> None:
    r = row
    ex = " (extrapolated from a 500-chunk sample)" if r["all_top10_extrapolated"] else ""
    print(f"\n{r['engine']} {r['points']:,} points ({r['data_mb']:.0f} MB of vectors; built in {r['build_s']:.1f} s)")
    print(f"  open                 {r['open_s']:8.2f} s")
    print(f"  stats                {r['stats_s']:8.2f} s")
    for scan in ("scan_sources", "scan_payloads"):
        print(f"  {scan:<20} {r[scan + '_s']:8.2f} s   floor (one scroll) {r['scroll_floor_s']:.2f} s, "
              f"x{r[scan + '_s'] / max(r['scroll_floor_s'], 1e-9):.1f}")
    print(f"  one search           {r['search_ms']:8.2f} ms  floor (numpy) {r['search_floor_ms']:.2f} ms, "
          f"x{r['search_ms'] / max(r['search_floor_ms'], 1e-9):.1f}")
    print(f"  200 batched          {r['batch200_s']:8.3f} s   floor (numpy) {r['batch200_floor_s']:.3f} s, "
          f"x{r['batch200_s'] / max(r['batch200_floor_s'], 1e-9):.1f}")
    print(f"  top-10 every chunk   {r['all_top10_s']:8.1f} s   floor (numpy) {r['all_top10_floor_s']:.1f} s, "
          f"x{r['all_top10_s'] / max(r['all_top10_floor_s'], 1e-9):.1f}{ex}")
    data = r["data_mb"] + r["payload_mb"]
    held = r["rss_open_mb"] - r["rss_before_open_mb"]
    grown = r["peak_rss_mb"] - r["rss_before_open_mb"]
    print(f"  memory holding them  {held:8.0f} MB  (RSS after opening the store, above the "
          f"{r['rss_before_open_mb']:.0f} MB before; data {data:.0f} MB = {r['data_mb']:.0f} MB of vectors + "
          f"{r['payload_mb']:.0f} MB of payload JSON, x{held / data:.2f})")
    ready = r["rss_ready_mb"] - r["rss_before_open_mb"]
    print(f"  ... ready to serve   {ready:8.0f} MB  (after the first search with payloads: "
          f"x{ready / data:.2f})")
    scans = r["rss_scans_mb"] - r["rss_before_open_mb"]
    print(f"  peak RSS             {r['peak_rss_mb']:8.0f} MB  ({grown:.0f} MB above, after every scan and search "
          f"above, x{grown / data:.2f} the data; {scans:.0f} MB above by the end of the scans)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--_build", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--_measure", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._build:
        engine, n, folder = args._build
        t = time.perf_counter()
        build(engine, int(n), Path(folder))
        print(json.dumps({"build_s": time.perf_counter() - t}))
        return
    if args._measure:
        engine, n, folder = args._measure
        print(json.dumps(measure(engine, int(n), Path(folder))))
        return
    rows = []
    for n in args.sizes:
        for engine in args.engines:
            with tempfile.TemporaryDirectory(prefix=f"bench-{engine}-") as tmp:
                folder = Path(tmp) / ".qdrant"
                built = _child(["--_build", engine, str(n), str(folder)])
                row = {**_child(["--_measure", engine, str(n), str(folder)]), **built}
            _print(row)
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
