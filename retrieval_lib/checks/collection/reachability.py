"""Reachability (notebook 10): which chunks can retrieval never return, which crowd every answer, which files
are off-topic?

Every stored vector is used as a query against the whole collection (through the
store's batched queries, so the check sees what the engine really returns) and
its top ``k`` neighbours, itself left out, are recorded. From those lists:

- **k-occurrence** ``N_k(c)`` = the number of other chunks whose top ``k`` holds ``c``
  (its mean is exactly ``k``);
- **anti-hubs**: chunks with ``N_k = 0``, which no other chunk retrieves;
- **hubs**: chunks with ``N_k > mean + hub_sd * sd`` (default ``hub_sd = 3``), which
  crowd into many answers;
- the **skewness** of ``N_k`` (``scipy.stats.skew``; 0 for a symmetric spread, large
  when a few chunks take many top-k places) and its **Gini** coefficient
  ``G = sum_i (2i - n - 1) x_(i) / (n sum x)`` over the sorted values (0 equal, 1 all in one chunk).

**Sampling.** A collection larger than ``max_full`` points (default 5,000) is judged
from a seeded simple random sample of ``sample_size`` chunks:

- each sampled chunk's top ``k`` gives ``hits(c)``, and ``N_k(c)`` is estimated as
  ``hits(c) (N - 1) / n`` (unbiased); the skewness of ``N_k`` is recovered from the
  sample's moments by undoing the binomial thinning (each query kept with ``f = n / N``):
  ``mu = m1 / f``, ``var = (m2 - f(1-f) mu) / f^2``,
  ``k3 = (m3 - f(1-f)(1-2f) mu - 3 f^2 (1-f) var) / f^3``, skewness ``k3 / var^1.5``;
- a chunk is listed as a hub when its hits are too many for a chunk at the hub threshold
  ``T``: binomial tail ``P(X >= hits | n, T / (N-1)) < 0.05 / N`` (Bonferroni over the chunks);
- the **anti-hub share** is a proportion over the sampled chunks with a Wilson 95% interval
  (``scipy.stats.binomtest``). A sampled chunk counts as reached when it is in the top ``k``
  of one of its own ``reverse_depth`` nearest neighbours (default 50), checked nearest first
  and stopping at the first that holds it, so most chunks cost one or two extra queries. A
  chunk reached only from farther away would be counted as an anti-hub: the estimate can
  only err upwards (on the sample book, depth 10 already agrees with the full count).

**Query-reachability** joins the pass with notebook 03's questions (its heading and golden queries, unfiltered,
top ``coverage_top_k``): a chunk that is an anti-hub *and* in no question's answer is one retrieval never shows.

:func:`run` is the check (notebook 10 and ``check reachability``): the pass, the questions and the off-topic files
(:mod:`._offtopic` judges whole files by their centroids); its :class:`~._reach_report.Reachability` records the
gates, figures and tables.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from retrieval_lib.checks.collection._offtopic import STUB_MAX_CHARS, is_stub, measure_offtopic
from retrieval_lib.checks.collection._reach_report import Reachability, gini, query_reach
from retrieval_lib.checks.gates import REACH_ANTIHUBS, REACH_HUBS, REACH_OFFTOPIC
from retrieval_lib.checks.statistics import wilson
from retrieval_lib.collection.boilerplate import stock_page
from retrieval_lib.errors import ValidationError
from retrieval_lib.stores import ReadableStore
from retrieval_lib.stores.base import require_vector
from retrieval_lib.stores.scan import kept, page_size, shared
from retrieval_lib.validation import whole_number
from retrieval_lib.workbook.check import NotApplicable

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookRun

__all__ = ["run", "Reachability", "ReachStudy", "ChunkTable", "AntiHubEstimate", "measure", "read_chunks",
           "neighbour_lists", "run_neighbour_lists", "measure_offtopic", "MAX_FULL", "SAMPLE_SIZE", "REVERSE_DEPTH"]

#: The gates this check records.
GATES = (REACH_ANTIHUBS, REACH_HUBS, REACH_OFFTOPIC)

#: Payload fields read with the vectors (nothing else).
SCAN_FIELDS: list[str] = ["source_file", "section_title", "title", "content"]
#: Above this many points the collection is sampled (a full pass costs one query per point).
MAX_FULL = 5_000
#: Chunks sampled when the collection is larger than ``max_full``.
SAMPLE_SIZE = 1_000
#: Nearest neighbours a sampled chunk's reachability is checked against.
REVERSE_DEPTH = 50
#: The name the pass's neighbour lists are kept under in the run folder (:func:`retrieval_lib.stores.scan.shared`).
NEIGHBOURS = "neighbours"


@dataclass
class ChunkTable:
    """Every chunk of the collection: ids, where it comes from, a text preview, and its vector (row ``i``)."""

    ids: list[str]
    files: list[str]
    sections: list[str]
    titles: list[str]
    previews: list[str]
    vectors: np.ndarray
    #: each chunk's site-generator template when its text is a stock page (:func:`stock_page`), else None
    stock: list[str | None] = field(default_factory=list)
    #: the files that are stubs, placeholder pages (:func:`~._offtopic.is_stub`, on their chunks' texts)
    stubs: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.ids)


def read_chunks(store: ReadableStore, collection: str, *, preview_chars: int = 160) -> ChunkTable:
    """One pass over every point with its vector and :data:`SCAN_FIELDS`, in large pages
    (:func:`~retrieval_lib.stores.scan.page_size`). A file's texts are kept until they pass
    :data:`~._offtopic.STUB_MAX_CHARS` (a longer file is never a stub), then judged for a stub.

    Raises:
        ValidationError: a point without a vector. CollectionNotFoundError, VectorStoreError: from the store.
    """
    size = page_size(store, store.count(collection))
    ids, files, sections, titles, previews, vectors, stock = [], [], [], [], [], [], []
    short: dict[str, list[str]] = {}  # a file's texts, while it may be a stub
    chars: dict[str, int] = {}
    for point in store.scroll(collection, with_payload=SCAN_FIELDS, with_vectors=True, batch_size=size):
        payload = point.payload or {}
        ids.append(str(point.id))
        files.append(str(payload.get("source_file") or "<missing source_file>"))
        sections.append(str(payload.get("section_title") or ""))
        titles.append(str(payload.get("title") or ""))
        content = str(payload.get("content") or "")
        chars[files[-1]] = chars.get(files[-1], 0) + len(content)
        if chars[files[-1]] <= STUB_MAX_CHARS:
            short.setdefault(files[-1], []).append(content)
        else:
            short.pop(files[-1], None)
        text = " ".join(content.split())
        previews.append(text[:preview_chars] + ("…" if len(text) > preview_chars else ""))
        stock.append(stock_page(titles[-1], text))
        vectors.append(require_vector(point, "reachability"))
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
    return ChunkTable(ids, files, sections, titles, previews, matrix, stock,
                      {path for path, texts in short.items() if is_stub(texts)})


def neighbour_lists(store: ReadableStore, collection: str, table: ChunkTable, rows: Sequence[int] | np.ndarray, *,
                    width: int, batch_size: int = 64, progress: bool = False,
                    desc: str = "top-k queries") -> np.ndarray:
    """The ``width`` nearest other chunks of each chunk in ``rows``, as table rows (``-1`` pads a short list).

    Queries go through :meth:`VectorStore.query_batch` in batches of ``batch_size`` (bounded requests).
    The chunk itself is left out by id; when it is missing from its own results (a duplicate
    vector tied with it), the first ``width`` results are kept.
    """
    index = {pid: i for i, pid in enumerate(table.ids)}
    out = np.full((len(rows), width), -1, dtype=np.int64)
    starts = range(0, len(rows), batch_size)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc=desc, unit="batch", total=len(starts))
    for start in starts:
        chunk = list(rows[start:start + batch_size])
        answers = store.query_batch(collection, table.vectors[chunk].tolist(), limit=width + 1, with_payload=False)
        for offset, (row, points) in enumerate(zip(chunk, answers)):
            found = [index.get(str(p.id), -1) for p in points]
            others = [r for r in found if r != row and r >= 0][:width]
            out[start + offset, :len(others)] = others
    return out


def _ids_digest(ids: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(ids).encode("utf-8")).hexdigest()


def _kept_neighbour_lists(run_dir: str | os.PathLike[str] | None, store: ReadableStore, collection: str,
                          table: ChunkTable, rows: np.ndarray, *, width: int, batch_size: int, progress: bool,
                          desc: str = "top-k queries") -> np.ndarray:
    """:func:`neighbour_lists` of the pass, kept in the run folder for the run's other notebooks
    (:func:`run_neighbour_lists`); the rows are the table's, so the table's ids (in order) are kept with them."""
    def compute() -> dict[str, object]:
        lists = neighbour_lists(store, collection, table, rows, width=width, batch_size=batch_size, progress=progress,
                                desc=desc)
        return {"ids": _ids_digest(table.ids), "rows": rows.tolist(), "lists": lists.tolist()}

    found, reused = shared(run_dir, NEIGHBOURS, store, collection, ["vector"], compute)
    if not reused or (found["ids"] == _ids_digest(table.ids) and found["rows"] == rows.tolist()
                      and np.asarray(found["lists"]).shape[1:] == (width,)):
        return np.asarray(found["lists"], dtype=np.int64).reshape(len(rows), width)
    return neighbour_lists(store, collection, table, rows, width=width, batch_size=batch_size, progress=progress,
                           desc=desc)  # kept by a pass with other parameters: this one queries for its own


def run_neighbour_lists(run_dir: str | os.PathLike[str] | None, store: ReadableStore, collection: str,
                        table: ChunkTable, *, width: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The neighbour lists notebook 10's pass kept in this run's folder, as ``(rows, lists)`` cut to ``width``
    columns (a prefix of a longer list is the shorter list), with no query; None when there are none to reuse:
    no run folder, the collection changed since, its chunks read in another order, or lists narrower than
    ``width``."""
    found = kept(run_dir, NEIGHBOURS, store, collection, ["vector"])
    if found is None or found.get("ids") != _ids_digest(table.ids):
        return None
    rows = np.asarray(found["rows"], dtype=np.int64)
    lists = np.asarray(found["lists"], dtype=np.int64).reshape(len(rows), -1)
    if lists.shape[1] < width:
        return None
    return rows, lists[:, :width]


def k_occurrence(lists: np.ndarray, points: int) -> np.ndarray:
    """``N_k`` per chunk: how many of the lists hold it (padding ``-1`` ignored)."""
    flat = lists.ravel()
    return np.bincount(flat[flat >= 0], minlength=points)


def thinned_skewness(hits: np.ndarray, f: float) -> float:
    """Skewness of ``N_k`` from ``hits ~ Binomial(N_k, f)`` per chunk (moments, see the module docstring)."""
    x = np.asarray(hits, dtype=float)
    m1, m2, m3 = x.mean(), x.var(), float(np.mean((x - x.mean()) ** 3))
    mu = m1 / f
    var = (m2 - f * (1 - f) * mu) / f ** 2
    k3 = (m3 - f * (1 - f) * (1 - 2 * f) * mu - 3 * f ** 2 * (1 - f) * var) / f ** 3
    return float(k3 / var ** 1.5) if var > 0 else 0.0


@dataclass(frozen=True)
class AntiHubEstimate:
    """The anti-hub share: exact (every chunk judged) or a sampled proportion with its 95% interval."""

    share: float
    low: float
    high: float
    judged: int
    antihubs: int
    method: str

    @property
    def exact(self) -> bool:
        return self.low == self.high == self.share

    def text(self, decimals: int = 3) -> str:
        """``"0.002"`` when exact, else ``"0.004 (95% interval 0.001-0.012, 4 of 1000 sampled)"``."""
        if self.exact:
            return f"{self.share:.{decimals}f}"
        return (f"{self.share:.{decimals}f} (95% interval {self.low:.{decimals}f}-{self.high:.{decimals}f}, "
                f"{self.antihubs} of {self.judged} sampled)")


@dataclass
class ReachStudy:
    """One reachability pass.

    Attributes:
        table: every chunk (vectors included).
        top_k: neighbours per query.
        query_rows: the chunks used as queries (all, or the sample).
        lists: their top ``k`` (rows of ``table``), ``lists[i]`` for ``query_rows[i]``.
        occurrence: ``N_k`` per chunk (sampled: the estimate ``hits (N-1)/n``).
        antihub_rows: chunks judged anti-hubs (sampled: among the sample).
        antihub: the share with its interval.
        hub_rows: hubs, most retrieved first; ``hub_threshold`` the ``N_k`` they exceed; ``hub_rule`` in words.
        skewness, gini: of ``N_k``.
        queries_run: store queries made (top-k lists plus reverse checks).
        seed, reverse_depth: the sample's seed and the reverse-check depth (sampled passes).
    """

    table: ChunkTable
    top_k: int
    query_rows: np.ndarray
    lists: np.ndarray
    occurrence: np.ndarray
    antihub_rows: list[int]
    antihub: AntiHubEstimate
    hub_rows: list[int]
    hub_threshold: float
    hub_rule: str
    skewness: float
    gini: float
    queries_run: int
    seed: int | None = None
    reverse_depth: int = 0
    hits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def points(self) -> int:
        return len(self.table)

    @property
    def sampled(self) -> bool:
        return len(self.query_rows) < self.points


def _reverse_check(store: ReadableStore, collection: str, table: ChunkTable, rows: np.ndarray, wide: np.ndarray, *,
                   top_k: int, depth: int, batch_size: int, progress: bool) -> tuple[list[int], int]:
    """Sampled chunks in the top ``k`` of none of their ``depth`` nearest neighbours; and the queries it took."""
    known = {int(r): set(int(x) for x in wide[i, :top_k]) for i, r in enumerate(rows)}
    pending = {int(r): i for i, r in enumerate(rows)}
    queries = 0
    for j in range(min(depth, wide.shape[1])):
        if not pending:
            break
        wanted = sorted({int(wide[i, j]) for i in pending.values() if wide[i, j] >= 0} - set(known))
        if wanted:
            lists = neighbour_lists(store, collection, table, wanted, width=top_k, batch_size=batch_size,
                                    progress=progress, desc=f"reverse check {j + 1}")
            known.update({r: set(int(x) for x in lst) for r, lst in zip(wanted, lists)})
            queries += len(wanted)
        for row, i in list(pending.items()):
            holder = int(wide[i, j])
            if holder >= 0 and row in known[holder]:
                del pending[row]
    return sorted(pending), queries


def measure(store: ReadableStore, collection: str, *, top_k: int, max_full: int = MAX_FULL,
            sample_size: int = SAMPLE_SIZE, seed: int = 0, hub_sd: float = 3.0,
            reverse_depth: int = REVERSE_DEPTH, batch_size: int = 64, progress: bool = False,
            table: ChunkTable | None = None, run_dir: str | os.PathLike[str] | None = None) -> ReachStudy:
    """Query the collection with its own vectors and measure reachability (module docstring).

    Args:
        top_k: neighbours per query (the chunk itself excluded).
        max_full: use every chunk up to this many points; sample above it.
        sample_size: chunks sampled above ``max_full`` (every chunk when the collection is not larger).
        seed: the sample's seed. hub_sd: the hub rule's number of standard deviations.
        reverse_depth: nearest neighbours checked per sampled chunk (sampled passes).
        batch_size: queries per batched request. progress: tqdm bars on stderr.
        table: the chunks, when already read (:func:`read_chunks`).
        run_dir: the run folder: the pass's neighbour lists are kept there for notebook 16's near duplicates
            (:func:`run_neighbour_lists`); None keeps nothing (an interactive kernel).

    Raises:
        ValidationError: a parameter out of range, or fewer than ``top_k + 1`` points.
    """
    from scipy import stats

    top_k, max_full = whole_number(top_k, "top_k", low=1), whole_number(max_full, "max_full", low=1)
    batch_size = whole_number(batch_size, "batch_size", low=1)
    reverse_depth = whole_number(reverse_depth, "reverse_depth", low=1)
    table = table if table is not None else read_chunks(store, collection)
    n_points = len(table)
    if n_points <= top_k:
        raise ValidationError(f"collection {collection!r} holds {n_points} points: reachability needs more than "
                              f"top_k = {top_k}; lower --top-k or ingest more documents", field="top_k")
    sample_size = whole_number(sample_size, "sample_size", low=2)
    wanted = n_points if n_points <= max_full else sample_size
    if wanted >= n_points:  # every chunk: exact
        rows = np.arange(n_points)
        lists = _kept_neighbour_lists(run_dir, store, collection, table, rows, width=top_k, batch_size=batch_size,
                                      progress=progress)
        occurrence = k_occurrence(lists, n_points)
        antihubs = [int(r) for r in np.flatnonzero(occurrence == 0)]
        share = len(antihubs) / n_points
        estimate = AntiHubEstimate(share, share, share, n_points, len(antihubs), "every chunk judged")
        threshold = float(occurrence.mean() + hub_sd * occurrence.std())
        hubs = [int(r) for r in np.flatnonzero(occurrence > threshold)]
        skewness = float(stats.skew(occurrence)) if occurrence.std() > 0 else 0.0
        rule = f"N_k > mean + {hub_sd:g} sd = {threshold:.1f}"
        return ReachStudy(table, top_k, rows, lists, occurrence.astype(float), antihubs, estimate,
                          sorted(hubs, key=lambda r: -occurrence[r]), threshold, rule, skewness,
                          gini(occurrence), len(rows), hits=occurrence)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n_points, size=wanted, replace=False))
    wide = _kept_neighbour_lists(run_dir, store, collection, table, rows, width=max(top_k, reverse_depth),
                                 batch_size=batch_size, progress=progress, desc="sampled queries")
    lists = wide[:, :top_k]
    hits = k_occurrence(lists, n_points)
    f = wanted / n_points
    occurrence = hits * (n_points - 1) / wanted
    antihubs, extra = _reverse_check(store, collection, table, rows, wide, top_k=top_k, depth=reverse_depth,
                                     batch_size=batch_size, progress=progress)
    low, high = wilson(len(antihubs), wanted)
    estimate = AntiHubEstimate(len(antihubs) / wanted, low, high, wanted, len(antihubs),
                               f"seeded sample of {wanted} (seed {seed}), Wilson 95% interval, reverse depth "
                               f"{reverse_depth}")
    mu = hits.mean() / f
    var = max(0.0, (hits.var() - f * (1 - f) * mu) / f ** 2)
    threshold = float(mu + hub_sd * var ** 0.5)
    tail = stats.binom.sf(hits - 1, wanted, min(1.0, threshold / (n_points - 1)))
    hubs = [int(r) for r in np.flatnonzero((tail < 0.05 / n_points) & (hits > 0))]
    rule = (f"N_k > mean + {hub_sd:g} sd = {threshold:.1f} (estimated), hits among the {wanted} sampled queries "
            f"beyond a binomial tail of 0.05/{n_points}")
    return ReachStudy(table, top_k, rows, lists, occurrence, antihubs, estimate,
                      sorted(hubs, key=lambda r: -hits[r]), threshold, rule, thinned_skewness(hits, f),
                      gini(occurrence), wanted + extra, seed=seed, reverse_depth=reverse_depth, hits=hits)


def run(ctx: NotebookRun, *, golden_set: str | None, coverage_top_k: int, headings_per_file: int, reach_top_k: int,
        reach_max_full: int, reach_sample_size: int, reach_seed: int, reach_reverse_depth: int,
        max_antihub_share: float, max_nk_skewness: float, offtopic_max_z: float, max_offtopic_files: int,
        questions: bool = True) -> Reachability | NotApplicable:
    """Notebook 10's check: every stored vector as a query (a seeded sample above ``reach_max_full`` points), the
    questions of notebook 03 asked of ``ctx.retriever``, and every file's distance to the rest.

    Args:
        questions: ask notebook 03's heading and golden questions (``reach --no-questions`` skips them: no
            embedding model is loaded).
    """
    from retrieval_lib.checks.retrieval.source_coverage import measure as measure_questions
    from retrieval_lib.params import load_golden_set

    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES)
    study = measure(ctx.store, ctx.collection, top_k=reach_top_k, max_full=reach_max_full,
                    sample_size=reach_sample_size, seed=reach_seed, reverse_depth=reach_reverse_depth,
                    progress=ctx.progress, run_dir=ctx.shared_dir)
    reach = None
    if questions:
        asked = measure_questions(ctx.retriever, top_k=coverage_top_k, headings_per_file=headings_per_file,
                                  golden=load_golden_set(golden_set))
        reach = query_reach(study, asked)
    off = measure_offtopic(study.table.files, study.table.titles, study.table.vectors, max_z=offtopic_max_z,
                           stock=study.table.stock, stubs=study.table.stubs)
    return Reachability(study, off, reach, max_antihub_share=max_antihub_share, max_nk_skewness=max_nk_skewness,
                        max_offtopic_files=max_offtopic_files)
