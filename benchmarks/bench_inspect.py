"""Benchmark: ``inspect`` on a team's collection against its floor, one full scroll of the payload it reads.

For each size it builds, in an embedded store in a temporary folder, a collection the way a team's pipeline
writes one (md5-hex ids, ``text/url/title/chunk_index``, 300 pages, seeded 384-dim vectors), then times, the
median of ``--repeat`` rounds alternating:

- the floor: ONE scroll of every point's ``text`` (the payload ``inspect`` reads whole, for duplicates);
- ``inspect_collection``: the 1,000-point sample with whole payloads, the inference, the scroll of the mapped
  texts, the id forms, token lengths of 400 chunks and the model check on 24 (an embedder of whitespace tokens
  and seeded vectors stands in for the model, so the figure is the workbook's own cost, not a model's).

Target (issue 22): inspect at most x2 the floor at 100k points.

    .venv/bin/python benchmarks/bench_inspect.py                  # 10k points
    .venv/bin/python benchmarks/bench_inspect.py --sizes 100000   # once, a few minutes
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from retrieval_lib.collection import CollectionView, inspect_collection  # noqa: E402
from retrieval_lib.stores import VectorStore  # noqa: E402

COLLECTION = "their_book"
PAGES = 300
DIM = 384
WORDS = ("robot sensor gazebo node topic urdf lidar joint link controller simulation camera odometry frame "
         "transform launch parameter service action message planner map isaac policy").split()


class WordEmbedder:
    """Whitespace tokens and seeded vectors: the Embedder interface without a model's cost."""

    provider, model, dimension, max_tokens = "bench", "words", DIM, 256

    def _vectors(self, texts: Sequence[str]) -> list[list[float]]:
        return [np.random.default_rng(len(t)).standard_normal(DIM).tolist() for t in texts]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._vectors(texts)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._vectors(texts)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def build(store: VectorStore, points: int, seed: int = 7) -> None:
    from qdrant_client import models

    rng = np.random.default_rng(seed)
    store.client.create_collection(COLLECTION, vectors_config=models.VectorParams(
        size=DIM, distance=models.Distance.COSINE))
    batch = []
    for i in range(points):
        page, index = i % PAGES, i // PAGES
        url = f"https://book.example/docs/module-{page % 4}/page-{page}"
        words = rng.choice(WORDS, size=int(rng.integers(80, 200)))
        batch.append(models.PointStruct(
            id=hashlib.md5(f"{url}:{index}".encode()).hexdigest(), vector=rng.standard_normal(DIM).tolist(),
            payload={"text": " ".join(words), "url": url, "title": f"Page {page}", "chunk_index": index}))
        if len(batch) == 2_000:
            store.client.upsert(COLLECTION, points=batch, wait=True)
            batch = []
    if batch:
        store.client.upsert(COLLECTION, points=batch, wait=True)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message=".*Local mode is not recommended.*")
    print(f"{'points':>8} {'floor s':>9} {'inspect s':>10} {'ratio':>6}  (target <= 2.0)")
    for points in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = VectorStore.at_path(Path(tmp) / "store")
            build(store, points)
            floor_t, inspect_t = [], []

            def floor(store: VectorStore = store, points: int = points) -> None:
                store.client.scroll(COLLECTION, limit=points + 1, with_payload=["text"])

            def inspect(store: VectorStore = store) -> None:
                inspect_collection(CollectionView(store), COLLECTION, WordEmbedder())  # type: ignore[arg-type]

            for _ in range(args.repeat):
                floor_t.append(timed(floor))
                inspect_t.append(timed(inspect))
            store.close()
        floor, spent = statistics.median(floor_t), statistics.median(inspect_t)
        print(f"{points:>8} {floor:>9.2f} {spent:>10.2f} {spent / floor:>6.2f}")


if __name__ == "__main__":
    main()
