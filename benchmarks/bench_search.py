"""Benchmark: one search on the configured backend, split into embed and search.

Prints medians and p95 over repeated queries, next to a baseline measured in
the same run: the raw embedder call and the raw qdrant-client ``query_points``
call that ``Retriever.search`` wraps. The ratio is the cost of validation,
ranking and result building. Also times ``search_many`` (batched) against the
same queries one by one.

    .venv/bin/python benchmarks/bench_search.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from retrieval_lib import Retriever
from retrieval_lib.params import load_query_sets
from retrieval_lib.percentile import percentile


def pct(values: list[float], q: float) -> float:
    """The workbook's own percentile (linear), so the benchmark and notebook 06 agree; ``q`` in [0, 1]."""
    return percentile(values, q * 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", default="params/query_sets/sample_book.yaml")
    args = parser.parse_args()
    queries = load_query_sets(args.queries, required=["in_domain"])["in_domain"]

    t0 = time.perf_counter()
    retriever = Retriever.from_settings()
    retriever.search("warm up")  # loads the model, checks the collection
    print(f"setup (model load + collection check): {time.perf_counter() - t0:.2f} s")
    print(f"backend: {retriever.embedder.provider}/{retriever.embedder.model} on {retriever.store.kind} store, "
          f"{retriever.store.count(retriever.collection)} points; {len(queries)} queries x {args.rounds} rounds")

    embed, search, total, raw_embed, raw_search = [], [], [], [], []
    for _ in range(args.rounds):
        for q in queries:
            t = time.perf_counter()
            r = retriever.search(q)
            total.append((time.perf_counter() - t) * 1000)
            embed.append(r.embed_ms)
            search.append(r.search_ms)
            t = time.perf_counter()
            vec = retriever.embedder.embed_queries([q])[0]
            raw_embed.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            retriever.store.client.query_points(retriever.collection, query=vec, limit=5, with_payload=True)
            raw_search.append((time.perf_counter() - t) * 1000)

    def row(name, xs, base=None):
        ratio = f"  x{statistics.median(xs) / statistics.median(base):.2f} of baseline" if base else ""
        print(f"{name:28} median {statistics.median(xs):8.2f} ms   p95 {pct(xs, .95):8.2f} ms{ratio}")

    print()
    row("search: embed", embed, raw_embed)
    row("search: qdrant", search, raw_search)
    row("search: total (wall)", total, [a + b for a, b in zip(raw_embed, raw_search)])
    row("baseline: raw embed", raw_embed)
    row("baseline: raw query_points", raw_search)

    t = time.perf_counter()
    retriever.search_many(queries)
    batched = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    for q in queries:
        retriever.search(q)
    single = (time.perf_counter() - t) * 1000
    print(f"\nsearch_many over {len(queries)} queries: {batched:.0f} ms; one by one: {single:.0f} ms "
          f"(batched is x{single / batched:.2f} faster)")
    retriever.close()


if __name__ == "__main__":
    main()
