"""Which points the embedding contract probes: a seeded sample, stratified by ``source_file``.

Every file is represented when the sample is at least as large as the number of files, so a file embedded apart
from the rest (re-ingested with another model, say) cannot hide; the rest of the sample follows the files' sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval_lib.stores import ReadableStore

__all__ = ["sample_points", "allocate"]


def allocate(sizes: dict[str, int], sample: int, rng: np.random.Generator) -> dict[str, int]:
    """Points to draw per file: one from every file, the rest in proportion to the file's remaining points
    (largest remainder); with fewer draws than files, ``sample`` files drawn at random, one point each."""
    files = sorted(sizes)
    if sample < len(files):
        return {str(f): 1 for f in rng.choice(files, size=sample, replace=False)}
    quota = dict.fromkeys(files, 1)
    rest, weights = sample - len(files), {f: sizes[f] - 1 for f in files}
    total = sum(weights.values())
    if rest and total:
        exact = {f: rest * weights[f] / total for f in files}
        for f in files:
            quota[f] += int(exact[f])
        left = rest - sum(int(exact[f]) for f in files)
        for f in sorted(files, key=lambda f: (-(exact[f] - int(exact[f])), f))[:left]:
            quota[f] += 1
    return quota


def sample_points(store: ReadableStore, collection: str, *, sample: int = 64, seed: int = 0) -> list[Any]:
    """A seeded sample of ``sample`` points (all when fewer), stratified by ``source_file``, with payloads and
    vectors, in (file, id) order.

    One scroll reads every point's ``source_file`` (pages of 10,000: a small-page scroll is slow on large local
    collections), then the chosen ids are read with their vectors by one filtered scroll.
    """
    from qdrant_client import models

    by_file: dict[str, list[Any]] = {}  # ids as stored (an integer id is not matched by its string)
    for point in store.scroll(collection, with_payload=["source_file"], batch_size=10_000):
        by_file.setdefault(str((point.payload or {}).get("source_file")), []).append(point.id)
    rng = np.random.default_rng(seed)
    quota = allocate({f: len(ids) for f, ids in by_file.items()}, sample, rng)
    chosen = []
    for f in sorted(quota):
        ids = sorted(by_file[f], key=str)
        chosen += [ids[i] for i in sorted(rng.choice(len(ids), size=min(quota[f], len(ids)), replace=False))]
    if not chosen:
        return []
    wanted = models.Filter(must=[models.HasIdCondition(has_id=chosen)])
    points = list(store.scroll(collection, with_payload=True, with_vectors=True, batch_size=len(chosen),
                               query_filter=wanted))
    order = {str(pid): i for i, pid in enumerate(chosen)}
    return sorted(points, key=lambda p: order.get(str(p.id), len(order)))
