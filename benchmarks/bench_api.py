"""Benchmark: /search over loopback HTTP against the library's in-process search, at concurrency 1, 10 and 100.

Starts the project's own service (``python -m retrieval_lib serve``, over a copy of the
embedded store) on a free loopback port, and times the same queries both ways in the
same run (in ABBA order, so a change in the machine's load hits both alike): per-call latency
p50/p95 and throughput, with the HTTP/in-process ratios.
Seed-003 targets (issue 10): HTTP p50 <= in-process p50 + 5 ms at concurrency 1, and at
concurrency 100 a throughput of at least 0.8x the library's.

    .venv/bin/python benchmarks/bench_api.py [--requests 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from retrieval_lib import Retriever, load_settings
from retrieval_lib.checks.service.api import ApiClient, own_service
from retrieval_lib.params import load_query_sets
from retrieval_lib.percentile import percentile


def timed(call: Callable[[str], object], queries: list[str], n: int, concurrency: int) -> tuple[list[float], float]:
    """Per-call milliseconds of ``n`` calls cycling over ``queries`` at ``concurrency``, and the wall seconds."""

    def one(i: int) -> float:
        t = time.perf_counter()
        call(queries[i % len(queries)])
        return (time.perf_counter() - t) * 1000

    # Always from pool threads, even at concurrency 1: the service runs each search in a worker thread, and on
    # a busy machine torch's two intra-op threads make a call from the MAIN thread many times slower
    # (measured here at load 3 on 2 cores: about 450 ms against 20 ms a call).
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        ms = list(pool.map(one, range(n)))
    return ms, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the queries at concurrency 1")
    parser.add_argument("--requests", type=int, default=200, help="calls per concurrent measurement")
    parser.add_argument("--queries", default="params/query_sets/sample_book.yaml")
    args = parser.parse_args()
    queries = load_query_sets(args.queries, required=["in_domain"])["in_domain"]
    settings = load_settings()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {len(queries)} queries")

    with own_service(settings) as svc, ApiClient(svc.url, max_connections=100) as client:
        print(f"service answered /health 200 {svc.startup_seconds:.1f} s after launch (SC-001: within 10 s)")
        retriever = Retriever.from_settings(settings)
        retriever.search(queries[0])  # model loaded, collection checked: as the service did at start-up

        def http(q: str) -> object:
            answer = client.search({"query": q})
            if answer.status != 200:
                raise RuntimeError(f"HTTP {answer.status}: {answer.body}")
            return answer

        http(queries[0])
        print(f"{'concurrency':>11} {'path':>10} {'p50 ms':>9} {'p95 ms':>9} {'calls/s':>9}")
        for concurrency in (1, 10, 100):
            n = len(queries) * args.rounds if concurrency == 1 else args.requests
            # ABBA order, half the calls each time: a change in the machine's load hits both paths alike
            samples: dict[str, tuple[list[float], float]] = {"library": ([], 0.0), "HTTP": ([], 0.0)}
            for name in ("library", "HTTP", "HTTP", "library"):
                ms, seconds = timed(retriever.search if name == "library" else http, queries, n // 2, concurrency)
                samples[name] = (samples[name][0] + ms, samples[name][1] + seconds)
            figures = {}
            for name, (ms, seconds) in samples.items():
                figures[name] = (percentile(ms, 50), percentile(ms, 95), len(ms) / seconds)
                p50, p95, qps = figures[name]
                print(f"{concurrency:>11} {name:>10} {p50:9.2f} {p95:9.2f} {qps:9.1f}")
            (l50, l95, lq), (h50, h95, hq) = figures["library"], figures["HTTP"]
            print(f"{concurrency:>11} {'HTTP/lib':>10} {h50 / l50:8.2f}x {h95 / l95:8.2f}x {hq / lq:8.2f}x"
                  f"   (p50 +{h50 - l50:.2f} ms)")
        retriever.close()


if __name__ == "__main__":
    main()
