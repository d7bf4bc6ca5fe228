"""Off-topic files (notebook 10, :mod:`.reachability`): which source files are far from the rest of the collection?

A site generator's template page, a changelog or a stray page about something
else gets ingested with the book and then answers questions it should not. Such a
file is unlike the book as a whole, which its chunks' vectors show:

- a file's **centroid** is the mean of its chunks' (unit) vectors;
- its **rest similarity** is the cosine between that centroid and the mean of every
  *other* chunk of the collection: how close the file is to the book without it;
- its **nearest file** is the other file with the most similar centroid, shown to say
  what it resembles most;
- its **z** is the modified z-score of Iglewicz and Hoaglin (1993) of its rest
  similarity among the files: ``z = 0.6745 (x - median) / MAD`` (shown per file).

A stray page is an outlier on its own, but a *block* of them (eight tutorial pages
that a site generator's template left in the docs) resemble one another: each one's
"rest" holds the seven others, and together they widen the spread they are judged by.
So the rule judges **groups**:

- the files' centroids are clustered (average linkage on cosine distance,
  ``scipy.cluster.hierarchy``); every cluster of the tree holding at most half the
  files is a candidate group ``G`` (a single file is a group of one);
- ``G``'s similarity to the **body** (every chunk outside ``G``) is the cosine between
  the centroid of ``G``'s chunks and the body's; it is scored against the body's own
  spread: the modified z-score over the body files' rest similarities (each computed
  within the body), so the group widens nothing;
- ``G`` is off-topic when that score is below ``-max_z`` (default 4.0: Iglewicz and
  Hoaglin's 3.5 failed a sound installation page of the sample book cut in 1,000-character
  chunks, at -3.56; params/demo.yaml lists what it was measured on); the largest such
  groups are reported, and every file in them is an **off-topic candidate**. The rule is
  relative to the book's own spread, so it holds for any embedding model's range of cosines.

A site generator's **stock pages** (:func:`retrieval_lib.collection.boilerplate.stock_page`:
Docusaurus' tutorial, MkDocs' welcome page ...) are recognised by their text as well
and are candidates whatever their vectors say.

A **stub** (a placeholder page: "Coming soon", or fewer than
:data:`~retrieval_lib.book.pages.STUB_MIN_WORDS` words; :func:`is_stub`, the rule notebook 16 and the ingest read
a page by) has no text to be off-topic about: its few words lie far from any book, so it is listed apart, like
notebook 16 lists it, and left out of the judgment (neither a group nor the body it is scored against).

With fewer than :data:`MIN_FILES` files, or no spread (MAD 0), no group is judged by
its vectors (stock pages still are).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from retrieval_lib.book.pages import STUB_MIN_WORDS
from retrieval_lib.book.text import drop_front_matter
from retrieval_lib.collection.boilerplate import is_placeholder
from retrieval_lib.errors import ValidationError
from retrieval_lib.validation import number_in

__all__ = ["FileDistance", "OffTopicGroup", "OffTopicStudy", "measure_offtopic", "offtopic_frame", "is_stub",
           "MIN_FILES", "MAX_Z", "STUB_MAX_CHARS"]

#: Fewer files than this give no meaningful median and MAD: nothing is judged.
MIN_FILES = 5
#: Iglewicz and Hoaglin's cut-off for the modified z-score.
MAX_Z = 4.0
#: A file's chunks are read for a stub up to this many characters: a placeholder has little text, so a longer file
#: is never one (and is not read for it).
STUB_MAX_CHARS = 3_000


def is_stub(texts: Sequence[str]) -> bool:
    """Whether a file whose chunks' texts are ``texts`` is a stub, by the rule notebook 16 reads a page by
    (:func:`~retrieval_lib.collection.boilerplate.is_placeholder` with
    :data:`~retrieval_lib.book.pages.STUB_MIN_WORDS`): fewer words than that (headings aside), or little more than
    a placeholder marker ("Coming soon" ...). Front matter a chunker left in is not the page's text
    (:func:`~retrieval_lib.book.text.drop_front_matter`). Chunks without text (a collection whose payload names no
    content) say nothing: such a file is not a stub."""
    if not any(t and not t.isspace() for t in texts):
        return False
    return is_placeholder("\n\n".join(drop_front_matter(t) for t in texts if t), min_words=STUB_MIN_WORDS)


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
    stock: str | None = None  # the site generator's template this is a stock page of, by its text
    group: int | None = None  # index into OffTopicStudy.groups when the file is in an off-topic group
    stub: bool = False  # a placeholder page (:func:`is_stub`): listed apart, not judged


@dataclass(frozen=True)
class OffTopicGroup:
    """Files that together lie far from the rest of the book (one file is a group of one)."""

    files: tuple[str, ...]
    similarity: float  # cosine between the group's chunk centroid and the body's
    z: float  # against the body files' own spread

    def text(self) -> str:
        shown = ", ".join(self.files[:4]) + (f" and {len(self.files) - 4} more" if len(self.files) > 4 else "")
        what = f"a group of {len(self.files)} files" if len(self.files) > 1 else "1 file"
        return f"{what} (similarity to the rest {self.similarity:.3f}, z {self.z:.2f}): {shown}"


@dataclass(frozen=True)
class OffTopicStudy:
    """Every file's distance to the rest, the groups that lie apart, and the rule that flagged the candidates."""

    files: list[FileDistance]
    max_z: float
    judged: bool
    rule: str
    groups: list[OffTopicGroup] = field(default_factory=list)
    #: the lowest z of any group of files scored, flagged or not (None when not judged): the margin to a finding
    closest_z: float | None = None

    @property
    def stock_pages(self) -> list[FileDistance]:
        """Files recognised by their text as a site generator's stock pages."""
        return [f for f in self.files if f.stock]

    @property
    def stubs(self) -> list[FileDistance]:
        """Stubs (placeholder pages), listed apart and not judged."""
        return [f for f in self.files if f.stub]

    @property
    def candidates(self) -> list[FileDistance]:
        """Off-topic candidates, farthest first."""
        return sorted((f for f in self.files if f.offtopic), key=lambda f: f.rest_similarity)


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _groups_apart(sums: np.ndarray, max_z: float) -> tuple[list[tuple[list[int], float, float]], float | None]:
    """The largest clusters of files (rows of ``sums``, each a file's sum of unit chunk vectors) that lie apart
    from the rest by the module's rule, ``(members, similarity, z)`` farthest first; and the lowest z of any
    cluster scored (how close the book came to a finding), None when none could be scored."""
    from scipy.cluster.hierarchy import linkage, to_tree
    from scipy.stats import median_abs_deviation

    n = len(sums)
    total = sums.sum(axis=0)
    _, nodes = to_tree(linkage(_unit(sums), method="average", metric="cosine"), rd=True)
    flagged: list[tuple[list[int], float, float]] = []
    lowest: float | None = None
    for node in nodes:
        members = node.pre_order()
        if len(members) > n // 2:
            continue
        inside = np.zeros(n, dtype=bool)
        inside[members] = True
        body_sum = total - sums[inside].sum(axis=0)
        similarity = float(_unit(sums[inside].sum(axis=0)) @ _unit(body_sum))
        body = sums[~inside]
        rest = np.einsum("ij,ij->i", _unit(body), _unit(body_sum[None, :] - body))
        mad = float(median_abs_deviation(rest))
        if mad <= 0:
            continue
        z = 0.6745 * (similarity - float(np.median(rest))) / mad
        lowest = z if lowest is None else min(lowest, z)
        if z < -max_z:
            flagged.append((sorted(members), similarity, z))
    flagged.sort(key=lambda g: -len(g[0]))  # keep the largest: a group's members are not listed again
    kept: list[tuple[list[int], float, float]] = []
    for members, similarity, z in flagged:
        if not any(set(members) <= set(k[0]) for k in kept):
            kept.append((members, similarity, z))
    return sorted(kept, key=lambda g: g[2]), lowest


def measure_offtopic(files: Sequence[str], titles: Sequence[str], vectors: np.ndarray, *,
                     max_z: float = MAX_Z, stock: Sequence[str | None] | None = None,
                     stubs: Collection[str] = ()) -> OffTopicStudy:
    """Judge every file by its centroid and every cluster of files by theirs (module docstring).

    Args:
        files, titles: each chunk's ``source_file`` and document title (row ``i`` of ``vectors``).
        vectors: the chunks' vectors, one row each.
        max_z: the modified z-score below ``-max_z`` that flags a group.
        stock: each chunk's stock-page template (:func:`~retrieval_lib.collection.boilerplate.stock_page`), or
            None; a file any of whose chunks is stock is a candidate.
        stubs: the files that are stubs (:func:`is_stub`): listed apart, left out of the groups and of the body
            (a stock page stays a candidate, as notebook 16 names a page stock before stub).

    Raises:
        ValidationError: ``max_z`` not positive, or the lengths differ.
    """
    from scipy.stats import median_abs_deviation

    number_in(max_z, "offtopic_max_z", 0, above=True)
    stock = list(stock) if stock is not None else [None] * len(files)
    if not len(files) == len(titles) == len(vectors) == len(stock):
        raise ValidationError(f"{len(files)} files, {len(titles)} titles, {len(vectors)} vectors and {len(stock)} "
                              "stock marks differ", field="vectors")
    unit = _unit(np.asarray(vectors, dtype=np.float64))
    names = np.asarray(files)
    paths = sorted(set(files))
    sums = np.array([unit[names == p].sum(axis=0) for p in paths]).reshape(len(paths), -1)
    counts = [int(np.sum(names == p)) for p in paths]
    first_title: dict[str, str] = {}
    stock_of: dict[str, str] = {}
    for f, t, s in zip(files, titles, stock):
        first_title.setdefault(f, t)
        if s:
            stock_of.setdefault(f, s)
    stub = np.array([p in stubs and p not in stock_of for p in paths], dtype=bool)
    kept = np.flatnonzero(~stub)  # the files judged: every file but the stubs
    centroids = _unit(sums)
    total = unit.sum(axis=0)
    if stub.any():  # the body is every chunk but the stubs': a stub's rest is all of it
        total = total - sums[stub].sum(axis=0)
    rest = _unit(total - np.where(stub[:, None], 0.0, sums))
    similarity = np.einsum("ij,ij->i", centroids, rest)
    between = centroids @ centroids.T
    np.fill_diagonal(between, -np.inf)
    mad = float(median_abs_deviation(similarity[kept])) if kept.size else 0.0
    judged = kept.size >= MIN_FILES and mad > 0
    median = float(np.median(similarity[kept])) if kept.size else 0.0
    apart, closest = _groups_apart(sums[kept], max_z) if judged else ([], None)
    groups = [OffTopicGroup(tuple(paths[kept[i]] for i in members), sim, z) for members, sim, z in apart]
    group_of = {path: g for g, group in enumerate(groups) for path in group.files}
    out = []
    for i, path in enumerate(paths):
        z = 0.6745 * (float(similarity[i]) - median) / mad if judged else None
        j = int(np.argmax(between[i])) if len(paths) > 1 else None
        out.append(FileDistance(path=path, title=first_title[path], chunks=counts[i],
                                rest_similarity=float(similarity[i]), z=z,
                                nearest_file=paths[j] if j is not None else None,
                                nearest_similarity=float(between[i, j]) if j is not None else None,
                                offtopic=path in group_of or path in stock_of, stock=stock_of.get(path),
                                group=group_of.get(path), stub=bool(stub[i])))
    rule = (f"a group of files (or one) whose similarity to the rest has a modified z-score < -{max_z:g} against "
            f"the rest's own spread (files: median {median:.3f}, MAD {mad:.3f} over {kept.size} files)"
            if judged else
            f"not judged by vectors: {kept.size} files (at least {MIN_FILES} with some spread are needed)")
    rule += "; and site generators' stock pages, by their text"
    return OffTopicStudy(files=out, max_z=max_z, judged=judged, rule=rule, groups=groups, closest_z=closest)


def offtopic_frame(study: OffTopicStudy):
    """One row per file, farthest from the rest first: title, chunks, rest similarity (3 decimals), z, nearest file;
    ``stock_page`` names the template of a stock page, or ``"stub"`` for a stub (as notebook 16 marks a page)."""
    import pandas as pd

    columns = ["source_file", "title", "chunks", "rest_similarity", "z", "nearest_file", "nearest_similarity",
               "offtopic", "group", "stock_page"]
    frame = pd.DataFrame([{"source_file": f.path, "title": f.title, "chunks": f.chunks,
                          "rest_similarity": round(f.rest_similarity, 3),
                          "z": None if f.z is None else round(f.z, 2), "nearest_file": f.nearest_file,
                          "nearest_similarity": None if f.nearest_similarity is None
                          else round(f.nearest_similarity, 3), "offtopic": f.offtopic,
                          "group": f.group, "stock_page": f.stock or ("stub" if f.stub else None)}
                          for f in sorted(study.files, key=lambda f: f.rest_similarity)], columns=columns)
    frame["group"] = frame["group"].astype("Int64")
    return frame
