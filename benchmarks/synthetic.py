"""Synthetic collections with the real ingest payload schema, for benchmarks at 10k-100k points.

Vectors are seeded and clustered the way embeddings are (each source file has a
centre; its chunks lie around it), so an HNSW index behaves as on real text
rather than on uniform noise. Importable: ``from benchmarks.synthetic import build``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["build", "vectors", "payload", "DIM", "FILES"]

DIM = 384
FILES = 300
MODEL = "all-MiniLM-L6-v2"
SECTIONS = ("Overview", "Setup", "Concepts", "Example", "Troubleshooting", "Summary")


def vectors(n: int, *, dim: int = DIM, files: int = FILES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(unit vectors float32 [n, dim], file index of each point)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(files, dim))
    owner = np.sort(rng.integers(0, files, n))
    x = (centres[owner] + 0.9 * rng.normal(size=(n, dim))).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, owner


def payload(i: int, file_index: int, sequence: int, total: int) -> dict[str, Any]:
    """The payload ingest writes (retrieval_lib.ingest.pipeline), for chunk ``sequence`` of file ``file_index``."""
    module = f"module-{file_index % 6:02d}"
    source = f"{module}/{file_index:03d}-page.md"
    content = f"Synthetic chunk {sequence} of page {file_index}: " + "robot joint sensor topic " * 12
    return {
        "chunk_id": f"{source}#{sequence}", "source_file": source,
        "source_url": f"https://book.example/docs/{module}/page-{file_index}", "title": f"Page {file_index}",
        "section_title": SECTIONS[sequence % len(SECTIONS)], "heading_path": [f"Page {file_index}"],
        "content": content, "content_hash": hashlib.sha256(content.encode()).hexdigest(),
        "chunk_sequence": sequence, "total_chunks": total, "token_count": 80, "model_version": MODEL,
        "file_hash": hashlib.sha256(source.encode()).hexdigest(), "processing_timestamp": "2026-01-01T00:00:00+00:00",
    }


def build(store: Any, collection: str, n: int, *, dim: int = DIM, files: int = FILES, seed: int = 0,
          batch: int = 2000) -> np.ndarray:
    """Create ``collection`` in ``store`` with ``n`` points; returns the vectors (for numpy floors)."""
    import uuid

    from qdrant_client import models

    x, owner = vectors(n, dim=dim, files=files, seed=seed)
    totals = np.bincount(owner, minlength=files)
    seq = np.zeros(files, dtype=int)
    store.create_collection(collection, dim, recreate=True)
    for start in range(0, n, batch):
        points = []
        for i in range(start, min(n, start + batch)):
            f = int(owner[i])
            points.append(models.PointStruct(id=str(uuid.UUID(int=i + 1)), vector=x[i].tolist(),
                                             payload=payload(i, f, int(seq[f]), int(totals[f]))))
            seq[f] += 1
        store.upsert(collection, points)
    if hasattr(store, "optimize"):
        store.optimize(collection)
    return x
