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

Prints the ratio (the issue's target: at most x2). Near duplicates are not timed here: they read the neighbour
lists notebook 10 computes (one query per chunk), a cost of their own.

    python benchmarks/bench_book.py                          # 10,000 points, 200 pages
    python benchmarks/bench_book.py --scale 100000 --pages 2000
"""

from __future__ import annotations

import argparse
import hashlib
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10_000, metavar="N", help="points in the collection")
    ap.add_argument("--pages", type=int, default=200, help="pages in the book")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*Local mode is not recommended.*")
    rng = np.random.default_rng(7)
    words_per_page = max(CHUNK_WORDS * 2, args.scale * CHUNK_WORDS // args.pages)
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        book = build_book(docs, args.pages, words_per_page, rng)
        store = VectorStore.at_path(Path(tmp) / "store")
        build_collection(store, book, args.scale, rng)
        # after the ingest: two pages deleted, two rewritten
        files = sorted(docs.rglob("*.md"))
        for f in files[:2]:
            f.unlink()
        for f in files[2:4]:
            f.write_text("# Rewritten\n\n" + " ".join(rng.choice(VOCAB, size=words_per_page)), encoding="utf-8")
        points = store.count(COLLECTION)

        def floor() -> None:
            store.client.scroll(COLLECTION, limit=points + 1, with_payload=["text", "url", "chunk_index"])
            for f in docs.rglob("*.md"):
                f.read_bytes()

        found: dict[str, int] = {}

        def check() -> None:
            pages = read_docs(docs)
            chunks = read_chunks(CollectionView(store), COLLECTION)
            bmap = map_sources(pages, chunks)
            comparisons = compare_pages(pages, bmap, chunks)
            found.update(missing=len(missing_pages(pages, bmap)), gone=len(gone_sources(bmap)),
                         changed=sum(r["changed"] for r in changed_pages(comparisons, 0.2)))

        floor_t, check_t = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            floor()
            floor_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            check()
            check_t.append(time.perf_counter() - t0)
        store.close()
    f, c = statistics.median(floor_t), statistics.median(check_t)
    print(f"{'points':>8} {'pages':>6} {'floor s':>8} {'book check s':>13} {'ratio':>6}  (target <= 2.0)")
    print(f"{points:>8} {args.pages:>6} {f:>8.2f} {c:>13.2f} {c / f:>6.2f}")
    print(f"found: {found['missing']} pages never ingested (3 planted), "
          f"{found['gone']} sources gone (2 planted), {found['changed']} pages changed (2 planted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
