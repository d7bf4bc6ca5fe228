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

The target (issue 33: at most x2) is against the floor as the issue writes it: a plain scroll, as a team's own
script would read the collection. The check's own read pauses Python's cyclic collector
(:func:`retrieval_lib.stores.scan.collector_paused`), which a plain scroll does not, so the benchmark also measures
the floor with its scroll paused too (**equal terms**: what the check costs beyond the cheapest read) and prints the
ratio against it beside the target's. Both floors and the check are measured in every round. Prints each ratio in
CPU seconds of this process and in wall seconds, and the parts: the floors' and the check's four stages, in CPU
seconds (steadier than wall time when other jobs share the cores).
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
from collections.abc import Callable
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

        def floor(paused: bool) -> None:
            # the scroll with the cyclic collector paused (as the check's read pauses it: the target's floor), or
            # running (the floor as written)
            t0 = time.process_time()
            if paused:
                gc.disable()
            try:
                store.client.scroll(COLLECTION, limit=points + 1, with_payload=["text", "url", "chunk_index"])
            finally:
                if paused:
                    gc.enable()
            t0 = stage("one scroll" + (", collector paused" if paused else ""), t0, floor_stages)
            for f in docs.rglob("*.md"):
                f.read_bytes()
            stage("one read of the folder", t0, floor_stages)

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

        wall: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}

        def timed(name: str, run: Callable[[], None]) -> None:
            t0, c0 = time.perf_counter(), time.process_time()
            run()
            wall.setdefault(name, []).append(time.perf_counter() - t0)
            cpu.setdefault(name, []).append(time.process_time() - c0)

        for _ in range(args.repeat):
            timed("floor", lambda: floor(paused=False))
            timed("floor paused", lambda: floor(paused=True))
            timed("check", check)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(check)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
        store.close()
    med = statistics.median
    c, cc = med(wall["check"]), med(cpu["check"])
    print(f"{'points':>8} {'pages':>6} {'floor':>22} {'floor s':>8} {'check s':>8} {'ratio':>6}   "
          f"{'CPU s: floor':>12} {'check':>6} {'ratio':>6}")
    for name, label in (("floor", "as written (target)"), ("floor paused", "equal terms")):
        f, fc = med(wall[name]), med(cpu[name])
        print(f"{points:>8} {args.pages:>6} {label:>22} {f:>8.2f} {c:>8.2f} {c / f:>6.2f}   {fc:>12.2f} {cc:>6.2f} "
              f"{cc / fc:>6.2f}")
    print(f"target: the CPU ratio against the floor as written at most 2.0 (equal terms: the floor's scroll with the "
          f"cyclic collector paused, as the check's read pauses it); load average while it ran: "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("floors by part (median CPU s): " + ", ".join(f"{name} {med(t):.2f}" for name, t in floor_stages.items()))
    print("check by stage (median CPU s): " + ", ".join(f"{name} {med(t[:args.repeat]):.2f}"
                                                       for name, t in stages.items()))
    print(f"found: {found['missing']} pages never ingested (3 planted), "
          f"{found['gone']} sources gone (2 planted), {found['changed']} pages changed (2 planted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
