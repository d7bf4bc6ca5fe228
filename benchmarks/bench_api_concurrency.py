"""Benchmark: /search at 1, 10 and 100 concurrent requests, micro-batched against one search at a time,
and both against the batched floor measured in the same run.

Starts two ``serve`` processes over copies of the embedded sample store (MiniLM on the CPU): one with
micro-batching (the default) and one without (``ServiceOptions(batching=False)``). The floor is the
library doing the best it can with all the queries at once: ONE batched embedding call of 100 queries
plus their searches (``Retriever.search_many``), in this process, with the service's one torch thread.
Paths are measured in ABBA order, so a change in the machine's load hits both alike.

Issue 25's goals: p95 at 100 concurrent within 2x the floor, and no slower at 1 concurrent than the
unbatched path. Seed 001 asks 95% of requests within 1.5 s at 100 concurrent.

    .venv/bin/python benchmarks/bench_api_concurrency.py [--requests 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from retrieval_lib import Retriever, load_settings
from retrieval_lib.params import load_query_sets
from retrieval_lib.percentile import percentile

_SERVE = ("import torch; from retrieval_lib import load_settings; from retrieval_lib.service import ServiceOptions, "
          "serve; serve(load_settings(), port={port}, log_file={log!r}, "
          "options=ServiceOptions(batching={batching}, batch_max={batch_max}))")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def service(store: Path, batching: bool, tmp: Path, batch_max: int) -> Iterator[str]:
    """``serve`` over a copy of ``store`` on a free loopback port, batching or not; yields its URL."""
    copy = tmp / f"store-{batching}"
    shutil.copytree(store, copy, ignore=shutil.ignore_patterns(".lock"))
    port = free_port()
    code = _SERVE.format(port=port, batching=batching, log=str(tmp / f"log-{batching}.jsonl"), batch_max=batch_max)
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "QDRANT_PATH": str(copy)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode}")
            try:
                if httpx.get(url + "/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("serve did not answer /health within 120 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def timed(client: httpx.Client, queries: list[str], n: int, concurrency: int) -> list[float]:
    """Milliseconds of each of ``n`` /search calls cycling over ``queries``, ``concurrency`` at a time."""

    def one(i: int) -> float:
        t = time.perf_counter()
        response = client.post("/search", json={"query": queries[i % len(queries)]})
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
        return (time.perf_counter() - t) * 1000

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, range(n)))


def floor_ms(retriever: Retriever, queries: list[str], rounds: int) -> float:
    """The fastest of ``rounds`` batched passes: one embedding call of all ``queries`` plus their searches."""
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        retriever.search_many(queries)
        best = min(best, (time.perf_counter() - t) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="calls per measurement at 10 and 100 concurrent")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries at concurrency 1")
    parser.add_argument("--queries", default="params/query_sets/sample_book.yaml")
    parser.add_argument("--batch-max", type=int, default=96, help="most queries in one embedding call (service)")
    args = parser.parse_args()
    sets = load_query_sets(args.queries, required=["in_domain"])
    base = [q for name in sorted(sets) for q in sets[name]]
    queries = [f"{q} ({i // len(base)})" if i >= len(base) else q for i, q in enumerate(base * (100 // len(base) + 1))]
    queries = queries[:100]  # 100 distinct queries: one per concurrent client
    settings = load_settings()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {len(queries)} distinct queries; "
          f"batches of at most {args.batch_max}")

    import torch

    torch.set_num_threads(1)  # as `serve` runs it
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-api-")))
        store = Path(settings.qdrant_path)
        urls = {"batched": stack.enter_context(service(store, True, tmp, args.batch_max)),
                "unbatched": stack.enter_context(service(store, False, tmp, args.batch_max))}
        clients = {name: stack.enter_context(httpx.Client(base_url=url, timeout=60, trust_env=False,
                                                          limits=httpx.Limits(max_connections=100)))
                   for name, url in urls.items()}
        retriever = stack.enter_context(Retriever.from_settings(settings))
        retriever.search(queries[0])  # the model loaded and the collection checked, as the service did
        for client in clients.values():
            timed(client, queries, 20, 10)  # connections opened, first calls paid

        floors = [floor_ms(retriever, queries, 3)]
        print(f"{'concurrency':>11} {'path':>10} {'p50 ms':>9} {'p95 ms':>9} {'p95/floor':>10}")
        results: dict[tuple[int, str], tuple[float, float]] = {}
        for concurrency in (1, 10, 100):
            n = len(queries) * args.rounds if concurrency == 1 else args.requests
            samples: dict[str, list[float]] = {"batched": [], "unbatched": []}
            for name in ("batched", "unbatched", "unbatched", "batched"):
                samples[name] += timed(clients[name], queries, n // 2, concurrency)
            floors.append(floor_ms(retriever, queries, 3))
            floor = min(floors)
            for name, ms in samples.items():
                p50, p95 = percentile(ms, 50), percentile(ms, 95)
                results[concurrency, name] = (p50, p95)
                print(f"{concurrency:>11} {name:>10} {p50:9.1f} {p95:9.1f} {p95 / floor:9.2f}x")
        floor = min(floors)
        print(f"floor: one batched embedding of {len(queries)} queries plus their searches, {floor:.0f} ms "
              f"(best of {3 * len(floors)})")
        b1, u1 = results[1, "batched"][0], results[1, "unbatched"][0]
        b100, u100 = results[100, "batched"][1], results[100, "unbatched"][1]
        print(f"goal p95 at 100 <= 2x floor: batched {b100 / floor:.2f}x, unbatched {u100 / floor:.2f}x; "
              f"p50 at 1, batched/unbatched {b1 / u1:.2f}x; seed 001 (p95 <= 1500 ms at 100): "
              f"batched {b100:.0f} ms, unbatched {u100:.0f} ms")


if __name__ == "__main__":
    main()
