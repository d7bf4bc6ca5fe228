"""Calibration: notebook 09's and 10's defaults on real books, not only on ours.

For every collection named (each a book that ``python -m retrieval_lib ingest`` built in an embedded store), it
prints what the gates measure:

- ``probe`` (notebook 09) on the collection as it is, and on a copy whose vectors are turned by a random rotation
  (another model of the same size: every cosine is preserved between stored vectors, none with the embedder):
  the lowest cosine, the raw share of sampled chunks whose first sentence finds their own file in the whole
  collection (with its Wilson interval: the old, fixed gate of 0.85 judged this), and the gated pair, the
  sample's self-retrieval by stored vectors and by fresh re-embeddings, with their drop;
- ``reach``'s off-topic rule (notebook 10): the groups of files apart from the book and the stock pages found by
  their text, against the single-file rule it replaced.

The public books of the README's calibration table are course books whose repositories are public; build them
with our ingest, then run this::

    git clone https://github.com/EmanIqbal620/ai-textbook /tmp/eman
    QDRANT_PATH=/tmp/books .venv/bin/python -m retrieval_lib ingest /tmp/eman/humanoid-robotics-textbook/docs \\
        --collection eman
    .venv/bin/python benchmarks/bench_calibration.py --store /tmp/books eman ...
    .venv/bin/python benchmarks/bench_calibration.py physicalai     # the sample book, in .qdrant

Read-only on the store: the rotated copy lives in memory.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from retrieval_lib.checks.collection import embedding_contract as contract  # noqa: E402
from retrieval_lib.checks.collection import reachability  # noqa: E402
from retrieval_lib.collection import CollectionView  # noqa: E402
from retrieval_lib.config import PROJECT_ROOT, load_settings  # noqa: E402
from retrieval_lib.embedding import make_embedder  # noqa: E402
from retrieval_lib.stores import VectorStore  # noqa: E402

OLD_MIN_FILE_SHARE = 0.85  # the fixed gate the drop replaced


def rotated_copy(source: VectorStore, collection: str, seed: int = 0) -> VectorStore:
    """An in-memory copy of ``collection`` whose vectors are turned by one seeded random rotation."""
    from qdrant_client import models

    _, dim, _ = source.vector_params(collection)
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    copy = VectorStore.in_memory()
    copy.client.create_collection(collection, vectors_config=models.VectorParams(
        size=dim, distance=models.Distance.COSINE))
    batch = []
    for point in source.scroll(collection, with_payload=True, with_vectors=True, batch_size=512):
        vector = point.vector if not isinstance(point.vector, dict) else next(iter(point.vector.values()))
        batch.append(models.PointStruct(id=point.id, vector=(q @ np.asarray(vector)).tolist(),
                                        payload=point.payload))
        if len(batch) == 512:
            copy.client.upsert(collection, points=batch, wait=True)
            batch = []
    if batch:
        copy.client.upsert(collection, points=batch, wait=True)
    return copy


def probe_line(name: str, result: contract.ProbeResult) -> str:
    lo, hi = result.interval("file_share")
    old = "pass" if result.file_share >= OLD_MIN_FILE_SHARE else "FAIL"
    new = "pass" if result.passed and result.self_retrieval_drop <= contract.DEFAULT_MAX_SELF_RETRIEVAL_DROP \
        else "FAIL"
    return (f"{name:<22} {result.points:>6} {result.lowest_cosine:>7.3f} {result.file_share:>6.2f} "
            f"[{lo:.2f}-{hi:.2f}] {old:>5} {result.stored_share:>7.2f} {result.fresh_share:>6.2f} "
            f"{result.self_retrieval_drop:>6.2f} {new:>5}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("collections", nargs="+")
    ap.add_argument("--store", default=str(PROJECT_ROOT / ".qdrant"), help="embedded store folder")
    ap.add_argument("--sample", type=int, default=64)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message=".*Local mode is not recommended.*")
    embedder = make_embedder(load_settings())
    store = VectorStore.at_path(Path(args.store))
    print(f"probe ({embedder.model}, {args.sample} sampled chunks, top 5)")
    print(f"{'collection':<22} {'points':>6} {'min cos':>7} {'file share [95%]':>20} {'old':>5} "
          f"{'stored':>7} {'fresh':>6} {'drop':>6} {'new':>5}")
    studies = {}
    try:
        for name in args.collections:
            view = CollectionView(store)
            print(probe_line(name, contract.probe(view, name, embedder, sample=args.sample)))
            rotated = rotated_copy(store, name)
            try:
                print(probe_line(f"{name} (rotated)", contract.probe(CollectionView(rotated), name, embedder,
                                                                     sample=args.sample)))
            finally:
                rotated.close()
            studies[name] = reachability.measure(view, name, top_k=10)
    finally:
        store.close()
    print("\noff-topic files (notebook 10): the group rule and stock pages, against the single-file rule")
    for name, study in studies.items():
        table = study.table
        off = reachability.measure_offtopic(table.files, table.titles, table.vectors, stock=table.stock)
        single = [f.path for f in off.files if f.z is not None and f.z < -off.max_z]
        lowest = min((f.z for f in off.files if f.z is not None), default=float("nan"))
        closest = float("nan") if off.closest_z is None else off.closest_z
        print(f"{name}: {len(off.files)} files; single-file rule flags {len(single)} (lowest z {lowest:.2f}); "
              f"group rule + stock pages flag {len(off.candidates)} (lowest group z {closest:.2f})")
        for group in off.groups:
            print(f"    group: {group.text()}")
        for f in off.stock_pages:
            print(f"    stock page ({f.stock}): {f.path}")


if __name__ == "__main__":
    main()
