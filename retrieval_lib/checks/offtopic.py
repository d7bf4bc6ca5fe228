"""Off-topic files (notebook 10): which source files are far from the rest of the collection?

A site generator's template page, a changelog or a stray page about something
else gets ingested with the book and then answers questions it should not. Such a
file is unlike the book as a whole, which its chunks' vectors show:

- a file's **centroid** is the mean of its chunks' (unit) vectors;
- its **rest similarity** is the cosine between that centroid and the mean of every
  *other* chunk of the collection: how close the file is to the book without it;
- its **nearest file** is the other file with the most similar centroid, shown to say
  what it resembles most;
- a file is an **off-topic candidate** when its rest similarity is an outlier on the
  low side, by the modified z-score of Iglewicz and Hoaglin (1993):
  ``z = 0.6745 (x - median) / MAD`` over the files, flagged when ``z < -max_z``
  (their recommended cut-off, 3.5, is the default). The rule is relative to the book's
  own spread, so it holds for any embedding model's range of cosines.

With fewer than :data:`MIN_FILES` files, or no spread (MAD 0), no file is judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_lib.errors import ValidationError

__all__ = ["FileDistance", "OffTopicStudy", "measure_offtopic", "offtopic_frame", "MIN_FILES", "MAX_Z"]

#: Fewer files than this give no meaningful median and MAD: nothing is judged.
MIN_FILES = 5
#: Iglewicz and Hoaglin's cut-off for the modified z-score.
MAX_Z = 3.5


@dataclass(frozen=True)
class FileDistance:
    """One file's centroid against the rest of the collection."""

    path: str
    title: str
    chunks: int
    rest_similarity: float
    z: float | None
    nearest_file: str | None
    nearest_similarity: float | None
    offtopic: bool


@dataclass(frozen=True)
class OffTopicStudy:
    """Every file's distance to the rest, and the rule that flagged the candidates."""

    files: list[FileDistance]
    max_z: float
    judged: bool
    rule: str

    @property
    def candidates(self) -> list[FileDistance]:
        """Off-topic candidates, farthest first."""
        return sorted((f for f in self.files if f.offtopic), key=lambda f: f.rest_similarity)


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def measure_offtopic(files: Sequence[str], titles: Sequence[str], vectors: np.ndarray, *,
                     max_z: float = MAX_Z) -> OffTopicStudy:
    """Judge every file by its centroid (module docstring).

    Args:
        files, titles: each chunk's ``source_file`` and document title (row ``i`` of ``vectors``).
        vectors: the chunks' vectors, one row each.
        max_z: the modified z-score below ``-max_z`` that flags a file.

    Raises:
        ValidationError: ``max_z`` not positive, or the lengths differ.
    """
    from scipy.stats import median_abs_deviation

    if not max_z > 0:
        raise ValidationError(f"max_z must be > 0 (got {max_z!r})", field="offtopic_max_z")
    if not len(files) == len(titles) == len(vectors):
        raise ValidationError(f"{len(files)} files, {len(titles)} titles and {len(vectors)} vectors differ",
                              field="vectors")
    unit = _unit(np.asarray(vectors, dtype=np.float64))
    names = np.asarray(files)
    paths = sorted(set(files))
    sums = np.array([unit[names == p].sum(axis=0) for p in paths]).reshape(len(paths), -1)
    counts = [int(np.sum(names == p)) for p in paths]
    centroids = _unit(sums)
    rest = _unit(unit.sum(axis=0) - sums)
    similarity = np.einsum("ij,ij->i", centroids, rest)
    between = centroids @ centroids.T
    np.fill_diagonal(between, -np.inf)
    first_title: dict[str, str] = {}
    for f, t in zip(files, titles):
        first_title.setdefault(f, t)
    mad = float(median_abs_deviation(similarity)) if len(paths) else 0.0
    judged = len(paths) >= MIN_FILES and mad > 0
    median = float(np.median(similarity)) if len(paths) else 0.0
    out = []
    for i, path in enumerate(paths):
        z = 0.6745 * (float(similarity[i]) - median) / mad if judged else None
        j = int(np.argmax(between[i])) if len(paths) > 1 else None
        out.append(FileDistance(path=path, title=first_title[path], chunks=counts[i],
                                rest_similarity=float(similarity[i]), z=z,
                                nearest_file=paths[j] if j is not None else None,
                                nearest_similarity=float(between[i, j]) if j is not None else None,
                                offtopic=z is not None and z < -max_z))
    rule = (f"modified z-score of the rest similarity < -{max_z:g} (median {median:.3f}, MAD {mad:.3f} over "
            f"{len(paths)} files)" if judged else
            f"not judged: {len(paths)} files (at least {MIN_FILES} with some spread are needed)")
    return OffTopicStudy(files=out, max_z=max_z, judged=judged, rule=rule)


def offtopic_frame(study: OffTopicStudy, *, decimals: int = 3, candidates_only: bool = False):
    """One row per file, farthest from the rest first: title, chunks, rest similarity, z, nearest file."""
    import pandas as pd

    chosen = study.candidates if candidates_only else sorted(study.files, key=lambda f: f.rest_similarity)
    columns = ["source_file", "title", "chunks", "rest_similarity", "z", "nearest_file", "nearest_similarity",
               "offtopic"]
    return pd.DataFrame([{"source_file": f.path, "title": f.title, "chunks": f.chunks,
                          "rest_similarity": round(f.rest_similarity, decimals),
                          "z": None if f.z is None else round(f.z, 2), "nearest_file": f.nearest_file,
                          "nearest_similarity": None if f.nearest_similarity is None
                          else round(f.nearest_similarity, decimals), "offtopic": f.offtopic}
                         for f in chosen], columns=columns)
