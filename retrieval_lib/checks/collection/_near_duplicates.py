"""Near-duplicate chunks for the book check (notebook 16): pairs from notebook 10's neighbour lists.

The lists are :func:`retrieval_lib.checks.collection.reachability.neighbour_lists` (each chunk's ``k`` nearest other
chunks through the store's batched queries). In a batch run they are the ones notebook 10 kept in the run folder
(:func:`~retrieval_lib.checks.collection.reachability.run_neighbour_lists`: no query is sent); where there are none
(notebook 16 alone, an interactive kernel, the collection changed since), they are computed here as notebook 10
computes them (every chunk up to ``max_full`` points, a seeded sample above).

For each listed place (chunk ``a``, neighbour ``b``): cosine ``a·b / |a||b|`` of the stored vectors; a place is a
near duplicate when the cosine is at least the threshold and the two chunks come from different pages, or from one
page at least :data:`FAR_APART` chunks apart (neighbours overlap by design). The share of top-k places taken by
near duplicates = near-duplicate places / all places.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_lib import book as bk
from retrieval_lib.errors import ValidationError

__all__ = ["NearDuplicates", "near_duplicates", "FAR_APART"]

#: Chunks of one page this far apart in sequence or more are "far apart" (neighbours overlap by design).
FAR_APART = 2


@dataclass
class NearDuplicates:
    """Near-duplicate pairs found in the neighbour lists."""

    pairs: list[dict[str, Any]]
    places: int
    duplicate_places: int
    method: str

    @property
    def share(self) -> float:
        return self.duplicate_places / self.places if self.places else 0.0


def near_duplicates(store: Any, collection: str, chunks: bk.BookChunks, bmap: bk.BookMap | None, *,
                    cosine: float, top_k: int, max_full: int, sample_size: int, seed: int,
                    run_dir: str | os.PathLike[str] | None = None) -> NearDuplicates:
    """Near-duplicate pairs in the neighbour lists (module docstring).

    Raises:
        ValidationError: the collection holds no more points than ``top_k`` (``field="near_duplicate_top_k"``).
    """
    from retrieval_lib.checks.collection.reachability import neighbour_lists, read_chunks, run_neighbour_lists

    table = read_chunks(store, collection)
    n = len(table)
    if n <= top_k:
        raise ValidationError(f"collection {collection!r} holds {n} points: near duplicates need more than "
                              f"near_duplicate_top_k = {top_k}", field="near_duplicate_top_k")
    reused = run_neighbour_lists(run_dir, store, collection, table, width=top_k)
    if reused is not None:
        rows, lists = reused
        source = "the neighbour lists notebook 10 computed in this run, no query sent"
    else:
        rows = np.arange(n) if n <= max_full else np.sort(
            np.random.default_rng(seed).choice(n, size=min(sample_size, n), replace=False))
        lists = neighbour_lists(store, collection, table, rows, width=top_k)
        source = "the neighbour lists of notebook 10, computed here"
    method = f"{source}: top {top_k} of " + (f"every chunk ({n})" if len(rows) == n
                                             else f"a seeded sample of {len(rows)} of {n} chunks")
    index = {cid: i for i, cid in enumerate(chunks.ids)}
    vectors = np.asarray(table.vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    places = duplicate_places = 0
    for row, neighbours in zip(rows, lists):
        for other in neighbours:
            if other < 0:
                continue
            places += 1
            cos = float(vectors[row] @ vectors[other] / (norms[row] * norms[other]))
            if cos < cosine:
                continue
            a, b = index.get(table.ids[row]), index.get(table.ids[other])
            if a is None or b is None:
                continue
            page_a = (bmap.chunk_page[a] if bmap else None) or chunks.source(a) or table.ids[row]
            page_b = (bmap.chunk_page[b] if bmap else None) or chunks.source(b) or table.ids[other]
            seq_a, seq_b = chunks.sequence[a], chunks.sequence[b]
            if page_a == page_b and (seq_a is None or seq_b is None or abs(seq_a - seq_b) < FAR_APART):
                continue
            duplicate_places += 1
            key = (min(a, b), max(a, b))
            if key not in pairs:
                pairs[key] = {"page": page_a, "chunk": chunks.ids[a], "sequence": seq_a, "other_page": page_b,
                              "other_chunk": chunks.ids[b], "other_sequence": seq_b, "cosine": round(cos, 4),
                              "same_page": page_a == page_b}
    ordered = sorted(pairs.values(), key=lambda r: (-r["cosine"], r["page"], r["other_page"]))
    return NearDuplicates(ordered, places, duplicate_places, method)
