"""The book check's cost: the mapping and the first three findings against one scroll plus one read of the book.

Builds, in a temporary folder, a synthetic Docusaurus book of ``--pages`` pages (random words, numbered folders and
files, so routes drop prefixes) and a team-shaped collection of ``--scale`` points cut from it (md5 ids,
``text/url/title/chunk_index``, URLs through the routes; a few pages left out, a few deleted from the book after,
a few rewritten), then times, the median of ``--repeat`` rounds:

- the **floor**: ONE scroll of the payload fields the check needs (``text``, ``url``, ``chunk_index``) through
  qdrant-client, plus ONE read of every file of the book folder (bytes, nothing parsed);
- the **check**: :func:`retrieval_lib.book.read_docs`, :func:`~retrieval_lib.book.read_chunks` (through the
  collection view, inferring the roles), :func:`~retrieval_lib.book.map_sources`, and the findings missing, gone
  and changed (:func:`~retrieval_lib.book.compare_pages` with its shingles; thin comes from the same comparison).

Prints the ratio (the issue's target: at most x2), in wall and in CPU seconds of this process, and its parts: the
floor's two and the check's four stages, in CPU seconds (steadier than wall time when other jobs share the cores).
The check's own read pauses Python's cyclic collector (:func:`retrieval_lib.stores.scan.collector_paused`), which
the floor's plain scroll does not: for comparison, not as the target, it also prints the floor's scroll measured
with the collector paused and the check's ratio against that floor.
Near duplicates are not timed here: they read the neighbour lists notebook 10 computes (one query per chunk), a
cost of their own.

    python benchmarks/bench_book.py                          # 10,000 points, 200 pages
    python benchmarks/bench_book.py --scale 100000 --pages 2000
    python benchmarks/bench_book.py --scale 100000 --pages 2000 --keep /tmp/book-100k --profile 25
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from retrieval_lib import VectorStore
from retrieval_lib.book import (
    changed_pages,
    compare_pages,
    gone_sources,
    map_sources,
    missing_pages,
    read_chunks,
    read_docs,
)
from retrieval_lib.collection import CollectionView

COLLECTION = "book_bench"
SITE = "https://book.example"
DIM = 64
CHUNK_WORDS = 120
VOCAB = np.array([f"w{i}" for i in range(5_000)])


def build_book(docs: Path, pages: int, words_per_page: int, rng: np.random.Generator) -> list[tuple[str, str, str]]:
    """Write the book; returns (route tail, title, text) per page."""
    out = []
    for p in range(pages):
        folder, name = f"{p // 50 + 1:02d}-part-{p // 50}", f"{p % 50 + 1:02d}-page-{p}"
        text = " ".join(rng.choice(VOCAB, size=words_per_page))
        path = docs / folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\ntitle: Page {p}\n---\n# Page {p}\n\n{text}\n", encoding="utf-8")
        out.append((f"part-{p // 50}/page-{p}", f"Page {p}", text))
    return out


def build_collection(store: VectorStore, book: list[tuple[str, str, str]], points: int,
                     rng: np.random.Generator) -> None:
    from qdrant_client import models

    store.client.create_collection(COLLECTION, vectors_config=models.VectorParams(
        size=DIM, distance=models.Distance.COSINE))
    batch, made = [], 0
    per_page = max(1, points // len(book))
    for route, title, text in book[: len(book) - 3]:  # the last three pages never ingested
        words = text.split()
        for i in range(per_page):
            if made >= points:
                break
            start = (i * CHUNK_WORDS) % max(1, len(words) - CHUNK_WORDS)
            url = f"{SITE}/docs/{route}"
            batch.append(models.PointStruct(
                id=hashlib.md5(f"{url}:{i}".encode()).hexdigest(), vector=rng.standard_normal(DIM).tolist(),
                payload={"text": " ".join(words[start:start + CHUNK_WORDS]), "url": url, "title": title,
                         "chunk_index": i}))
            made += 1
            if len(batch) == 2_000:
                store.client.upsert(COLLECTION, points=batch, wait=True)
                batch = []
    if batch:
        store.client.upsert(COLLECTION, points=batch, wait=True)


def prepare(root: Path, scale: int, pages: int) -> tuple[Path, Path]:
    """Build the book and the collection under ``root`` (docs/, store/), or reuse them when ``root`` already
    holds a build of the same size (a marker file names it). Returns (docs folder, store folder)."""
    docs, store_dir, marker = root / "docs", root / "store", root / "built.txt"
    size = f"{scale} {pages}"
    if marker.is_file() and marker.read_text() == size:
        return docs, store_dir
    if marker.exists() or docs.exists() or store_dir.exists():
        raise SystemExit(f"{root} holds another build (not {size}): give an empty or new folder to --keep")
    rng = np.random.default_rng(7)
    words_per_page = max(CHUNK_WORDS * 2, scale * CHUNK_WORDS // pages)
    book = build_book(docs, pages, words_per_page, rng)
    store = VectorStore.at_path(store_dir)
    build_collection(store, book, scale, rng)
    store.close()
    # after the ingest: two pages deleted, two rewritten
    files = sorted(docs.rglob("*.md"))
    for f in files[:2]:
        f.unlink()
    for f in files[2:4]:
        f.write_text("# Rewritten\n\n" + " ".join(rng.choice(VOCAB, size=words_per_page)), encoding="utf-8")
    marker.write_text(size)
    return docs, store_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10_000, metavar="N", help="points in the collection")
    ap.add_argument("--pages", type=int, default=200, help="pages in the book")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="build the book and the collection in DIR, or reuse the build "
                                                  "DIR holds (same --scale and --pages); default: a temporary folder")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="after timing, profile one round of the check (cProfile) and print its N costliest calls")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*Local mode is not recommended.*")
    with tempfile.TemporaryDirectory() as tmp:
        docs, store_dir = prepare(Path(args.keep) if args.keep else Path(tmp), args.scale, args.pages)
        store = VectorStore.at_path(store_dir)
        points = store.count(COLLECTION)

        found: dict[str, int] = {}
        stages: dict[str, list[float]] = {}
        floor_stages: dict[str, list[float]] = {}

        def stage(name: str, t0: float, into: dict[str, list[float]] = stages) -> float:
            # CPU seconds of this process: what a stage costs, whatever else the machine runs meanwhile
            now = time.process_time()
            into.setdefault(name, []).append(now - t0)
            return now

        def floor() -> None:
            t0 = time.process_time()
            store.client.scroll(COLLECTION, limit=points + 1, with_payload=["text", "url", "chunk_index"])
            t0 = stage("one scroll", t0, floor_stages)
            for f in docs.rglob("*.md"):
                f.read_bytes()
            stage("one read of the folder", t0, floor_stages)

        def floor_paused() -> float:
            # for the report only, not the target's floor: the same scroll with the cyclic collector paused, as
            # the check's own read pauses it (retrieval_lib.stores.scan.collector_paused)
            gc.disable()
            try:
                t0 = time.process_time()
                store.client.scroll(COLLECTION, limit=points + 1, with_payload=["text", "url", "chunk_index"])
                return time.process_time() - t0
            finally:
                gc.enable()

        def check() -> None:
            t0 = time.process_time()
            pages = read_docs(docs)
            t0 = stage("read the book", t0)
            chunks = read_chunks(CollectionView(store), COLLECTION)
            t0 = stage("read the chunks", t0)
            bmap = map_sources(pages, chunks)
            t0 = stage("map", t0)
            comparisons = compare_pages(pages, bmap, chunks)
            found.update(missing=len(missing_pages(pages, bmap)), gone=len(gone_sources(bmap)),
                         changed=sum(r["changed"] for r in changed_pages(comparisons, 0.2)))
            stage("compare", t0)

        floor_t, check_t, floor_cpu, check_cpu, paused_cpu = [], [], [], [], []
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            floor()
            floor_t.append(time.perf_counter() - t0)
            floor_cpu.append(time.process_time() - c0)
            paused_cpu.append(floor_paused())
            t0, c0 = time.perf_counter(), time.process_time()
            check()
            check_t.append(time.perf_counter() - t0)
            check_cpu.append(time.process_time() - c0)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(check)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
        store.close()
    f, c = statistics.median(floor_t), statistics.median(check_t)
    fc, cc = statistics.median(floor_cpu), statistics.median(check_cpu)
    print(f"{'points':>8} {'pages':>6} {'floor s':>8} {'book check s':>13} {'ratio':>6}  (target <= 2.0)"
          f"   CPU s of this process: floor, check, ratio")
    print(f"{points:>8} {args.pages:>6} {f:>8.2f} {c:>13.2f} {c / f:>6.2f}   {fc:>25.2f} {cc:>6.2f} {cc / fc:>6.2f}")
    print(f"load average while it ran: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("floor by part (median CPU s): " + ", ".join(f"{name} {statistics.median(t):.2f}"
                                                      for name, t in floor_stages.items()))
    print("check by stage (median CPU s): " + ", ".join(f"{name} {statistics.median(t[:args.repeat]):.2f}"
                                                     for name, t in stages.items()))
    paused = statistics.median(paused_cpu)
    print(f"for comparison, not the target: the floor's scroll with the collector paused as the check's read pauses "
          f"it, {paused:.2f} (of {statistics.median(floor_stages['one scroll']):.2f}); the check against that floor: "
          f"{cc / (fc - statistics.median(floor_stages['one scroll']) + paused):.2f}")
    print(f"found: {found['missing']} pages never ingested (3 planted), "
          f"{found['gone']} sources gone (2 planted), {found['changed']} pages changed (2 planted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
