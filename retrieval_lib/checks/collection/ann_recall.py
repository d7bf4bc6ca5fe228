"""ANN recall: does the HNSW index return what a full scan would (notebook 11, ``check ann_recall``, ``ann``)?

Sampled stored vectors (seeded) are searched twice on the collection's engine:
under its HNSW index (the search every user gets) and with
``SearchParams(exact=True)`` (a full scan, the truth). recall@k of a query is
|ANN top-k ∩ exact top-k| / |exact top-k|; the report gives its mean, minimum and
P5 (:func:`retrieval_lib.percentile.percentile`), over the whole collection and
again for each top-level source prefix with the filter applied, where filtered
HNSW search is known to lose recall (qdrant/qdrant #7147, #5606, #10547).

Whether the comparison can differ is checked first (:class:`~retrieval_lib.stores.stats.IndexInfo`):

- qdrant-client local mode has no index: "not applicable, local mode searches exactly", and no gate;
- an engine whose index is not built (a collection below the indexing threshold)
  searches exactly too: recall 1.0 there proves nothing, and the report says so instead of gating;
- a filtered search matching fewer vectors than ``full_scan_threshold`` KB is a
  full scan as well: that slice is listed but not gated;
- on a Qdrant server, its telemetry (``GET /telemetry``: plain against HNSW segment searches, counted before and
  after the whole-collection ANN searches) says how those searches really ran: when none went through HNSW the
  recall is named a full scan and its gates are not applicable, whatever ``indexed_vectors_count`` claims. The
  counters are the collection's, so another client searching it meanwhile adds to them; a key that may not read
  telemetry leaves this check out.

:func:`run` is the check; its :class:`AnnRecall` records the table, the figure and the gates.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import ANN_RECALL_MEAN, ANN_RECALL_P5, ANN_SLICES
from retrieval_lib.percentile import percentile
from retrieval_lib.stores import ReadableStore
from retrieval_lib.stores.base import IndexInfo, exactness
from retrieval_lib.validation import number_in, whole_number
from retrieval_lib.workbook.check import NotApplicable
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "AnnRecall", "AnnStudy", "SliceRecall", "measure", "ROOT_SLICE"]

#: The gates this check records.
GATES = (ANN_RECALL_MEAN, ANN_RECALL_P5, ANN_SLICES)
#: The slice of files at the top level of the docs folder (no sub-folder).
ROOT_SLICE = "(top-level files)"


@dataclass(frozen=True)
class SliceRecall:
    """recall@k of one slice: the whole collection (``prefix`` None) or one top-level source prefix."""

    name: str
    prefix: str | None
    points: int
    recalls: tuple[float, ...]
    searches_exactly: bool
    reason: str

    @property
    def mean(self) -> float | None:
        return sum(self.recalls) / len(self.recalls) if self.recalls else None

    @property
    def min(self) -> float | None:
        return min(self.recalls) if self.recalls else None

    @property
    def p5(self) -> float | None:
        return percentile(self.recalls, 5) if self.recalls else None


@dataclass
class AnnStudy:
    """What :func:`measure` found: the index, and recall per slice (empty when not applicable)."""

    collection: str
    index: IndexInfo
    top_k: int
    hnsw_ef: int | None
    seed: int
    queries: int = 0
    slices: list[SliceRecall] = field(default_factory=list)
    #: a server's own count of how the whole-collection ANN searches ran, from its telemetry (``hnsw``, ``plain``,
    #: ``exact`` segment searches, :meth:`~retrieval_lib.stores.VectorStore.search_counters`); None: not told
    search_path: dict[str, int] | None = None

    @property
    def applicable(self) -> bool:
        return self.index.engine != "local"

    @property
    def overall(self) -> SliceRecall | None:
        return next((s for s in self.slices if s.prefix is None), None)


def _recalls(store: ReadableStore, collection: str, vectors: list[Any], top_k: int, hnsw_ef: int | None,
             query_filter: Any = None) -> tuple[float, ...]:
    ann = store.query_batch(collection, vectors, limit=top_k, hnsw_ef=hnsw_ef, query_filter=query_filter,
                            with_payload=False)
    exact = store.query_batch(collection, vectors, limit=top_k, exact=True, query_filter=query_filter,
                              with_payload=False)
    out = []
    for a, e in zip(ann, exact):
        truth = {str(p.id) for p in e}
        if truth:
            out.append(len(truth & {str(p.id) for p in a}) / len(truth))
    return tuple(out)


def measure(store: ReadableStore, collection: str, *, top_k: int = 10, queries: int = 200, slice_queries: int = 50,
            hnsw_ef: int | None = None, seed: int = 0) -> AnnStudy:
    """Recall@k of ANN against exact search, overall and per top-level source prefix.

    Args:
        top_k: results compared per query.
        queries: stored vectors sampled (seeded) as queries for the whole collection.
        slice_queries: of those, how many run again under each prefix filter.
        hnsw_ef: HNSW search breadth (None: the collection's default).
        seed: the sample's seed.

    Raises:
        ValidationError: a bad argument. CollectionNotFoundError, VectorStoreError: from the store.
    """
    import numpy as np
    from qdrant_client import models

    whole_number(top_k, "top_k", low=1)
    whole_number(queries, "queries", low=1)
    whole_number(slice_queries, "slice_queries")
    if hnsw_ef is not None:
        whole_number(hnsw_ef, "hnsw_ef", low=1)
    index = store.index_info(collection)
    study = AnnStudy(collection, index, top_k, hnsw_ef, seed)
    if not study.applicable:
        return study
    ids, files = [], []
    for point in store.scroll(collection, with_payload=["source_file"], batch_size=10_000):
        ids.append(point.id)
        files.append(str((point.payload or {}).get("source_file") or ""))
    if not ids:
        return study
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(ids), size=min(queries, len(ids)), replace=False).tolist())
    vectors = [p.vector for p in store.retrieve(collection, [ids[i] for i in chosen], with_vectors=True)]
    study.queries = len(vectors)
    size = store.vector_params(collection)[1]
    counters = getattr(store, "search_counters", None)  # a Qdrant server's telemetry; other engines have none
    before = counters(collection) if callable(counters) else None
    whole = _recalls(store, collection, vectors, top_k, hnsw_ef)
    after = counters(collection) if callable(counters) and before is not None else None
    if before is not None and after is not None:
        study.search_path = {key: after.get(key, 0) - before.get(key, 0) for key in after}
    study.slices.append(SliceRecall("whole collection", None, index.points_count, whole,
                                    index.searches_exactly, index.reason))
    by_prefix: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for path in files:
        prefix = path.split("/", 1)[0] + "/" if "/" in path else ROOT_SLICE  # module-01/x.md -> module-01/
        by_prefix[prefix].add(path)
        counts[prefix] += 1
    if slice_queries == 0 or len(by_prefix) < 2:
        return study
    for prefix in sorted(by_prefix):
        only = models.Filter(must=[models.FieldCondition(key="source_file",
                                                         match=models.MatchAny(any=sorted(by_prefix[prefix])))])
        exact, reason = exactness(index.points_count, index.indexed_vectors_count, size, index.hnsw,
                                  filtered=counts[prefix])
        study.slices.append(SliceRecall(prefix, prefix, counts[prefix],
                                        _recalls(store, collection, vectors[:slice_queries], top_k, hnsw_ef, only),
                                        exact, reason))
    return study


@plain_figure
def recall_figure(study: AnnStudy, *, min_recall: float) -> Any:
    """Mean recall@k per slice (full-scan slices grey), with the gate's minimum marked."""
    from retrieval_lib.workbook.plots import horizontal_bars

    rows = [s for s in study.slices if s.recalls]
    colours = ["lightgrey" if s.searches_exactly else ("tab:green" if (s.mean or 0) >= min_recall else "tab:red")
               for s in rows]
    return horizontal_bars([s.name for s in rows], [s.mean or 0.0 for s in rows], colours=colours,
                           notes=[f"min {s.min:.2f}, P5 {s.p5:.2f}" for s in rows], xlim=(0.0, 1.05),
                           xlabel=f"mean recall@{study.top_k} (ANN vs exact)", reference=min_recall,
                           reference_label="minimum (gate)", title="ANN recall by slice (grey: searched exactly)")


def run(ctx: NotebookRun, *, ann_top_k: int, ann_queries: int, ann_slice_queries: int, ann_hnsw_ef: int | None,
        ann_seed: int, ann_min_recall: float, ann_min_recall_p5: float) -> AnnRecall | NotApplicable:
    """Notebook 11's check: sampled stored vectors searched under the index and exactly, whole and per top-level
    source prefix (no embed call)."""
    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES, fill={"k": ann_top_k, "ann_min_recall": ann_min_recall,
                                                  "ann_min_recall_p5": ann_min_recall_p5})
    study = measure(ctx.store, ctx.collection, top_k=ann_top_k, queries=ann_queries, slice_queries=ann_slice_queries,
                    hnsw_ef=ann_hnsw_ef, seed=ann_seed)
    return AnnRecall(study, min_recall=ann_min_recall, min_recall_p5=ann_min_recall_p5)


@dataclass
class AnnRecall:
    """Notebook 11's result: the index and recall per slice (:class:`AnnStudy`), and the bars."""

    study: AnnStudy
    min_recall: float
    min_recall_p5: float

    def __str__(self) -> str:
        index = self.study.index
        return (f"engine {index.engine}: {index.points_count} points, indexed vectors {index.indexed_vectors_count}, "
                f"HNSW {index.hnsw}\nsearches exactly: {index.searches_exactly} ({index.reason})")

    def tables(self) -> dict[str, Any]:
        """``slices``: one row per slice (empty where nothing is compared): points, queries, mean / min / P5
        recall@k to 3 decimals, and how that slice is searched; beside it, as ``ann --json`` has always printed
        them, ``applicable`` (False in local mode) and ``index`` (what the engine reports)."""
        import pandas as pd

        study, mean = self.study, f"mean_recall@{self.study.top_k}"

        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 3)

        columns = ["slice", "points", "queries", mean, "min", "p5", "search"]
        slices = pd.DataFrame([{"slice": s.name, "points": s.points, "queries": len(s.recalls), mean: r(s.mean),
                                "min": r(s.min), "p5": r(s.p5), "search": "full scan" if s.searches_exactly else "HNSW"}
                               for s in study.slices], columns=columns)
        return {"slices": slices, "applicable": study.applicable, "index": vars(study.index)}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The slices' table and figure, then the findings, metrics and gates.

        Gates (only where ANN can differ from exact): the whole collection's mean recall@k >= ``min_recall`` and its
        P5 >= ``min_recall_p5``; every filtered slice searched with HNSW has a mean >= ``min_recall``.

        Raises:
            ValidationError: a minimum outside [0, 1].
        """
        study, min_recall, min_recall_p5 = self.study, self.min_recall, self.min_recall_p5
        number_in(min_recall, "min_recall", 0, 1)
        number_in(min_recall_p5, "min_recall_p5", 0, 1)
        report.table(self.tables()["slices"], "ann_recall")
        if study.slices:
            report.figure(recall_figure(study, min_recall=min_recall), "ann_recall_by_slice", show=show)
        idx, k = study.index, study.top_k
        if not study.applicable:
            report.finding("ANN recall: not applicable: local mode searches exactly (qdrant-client local mode has no "
                           "HNSW index), so ANN and exact results cannot differ. Run this check against a Qdrant "
                           "server or with QDRANT_ENGINE=edge to measure an index")
            return
        hnsw = ", ".join(f"{key} {value}" for key, value in (idx.hnsw or {}).items()) or "not reported"
        report.finding(f"index ({idx.engine}): {idx.indexed_vectors_count} of {idx.points_count} vectors indexed, "
                       f"{idx.segments_count} segments, HNSW {hnsw}; searched with hnsw_ef "
                       f"{study.hnsw_ef if study.hnsw_ef is not None else 'default'}")
        overall = study.overall
        if overall is None or not overall.recalls:
            report.finding("ANN recall: the collection is empty: nothing to compare")
            return
        report.metric(f"ann_mean_recall_at_{k}", overall.mean)
        report.metric(f"ann_min_recall_at_{k}", overall.min)
        report.metric(f"ann_p5_recall_at_{k}", overall.p5)
        report.metric("ann_queries", study.queries, "queries")
        if overall.searches_exactly:
            report.finding(f"recall@{k} {overall.mean:.3f} proves nothing here: {idx.reason}. ANN and exact are the "
                           "same search on this collection; no recall gate is applied (a larger collection, or a "
                           "lower indexing threshold, builds the index)")
            return
        path, fill = study.search_path, {"k": k, "ann_min_recall": min_recall, "ann_min_recall_p5": min_recall_p5}
        if path is not None and path.get("hnsw", 0) == 0 and path.get("plain", 0) > 0:
            reason = (f"the server's telemetry counted the {study.queries} ANN searches as {path['plain']} plain "
                      f"(full-scan) segment searches and none through HNSW, although it reports "
                      f"{idx.indexed_vectors_count} of {idx.points_count} vectors indexed")
            report.finding(f"recall@{k} {overall.mean:.3f} was really a full scan: {reason}. ANN and exact were the "
                           "same search; the recall gates are not applicable (segments below the indexing threshold "
                           "or still being optimised are searched plainly)")
            ANN_RECALL_MEAN.not_applicable(report, reason, fill=fill)
            ANN_RECALL_P5.not_applicable(report, reason, fill=fill)
            return
        if path is not None:
            report.finding(f"the server's telemetry: the ANN searches ran as {path.get('hnsw', 0)} HNSW and "
                           f"{path.get('plain', 0)} plain segment searches")
        report.finding(f"whole collection: mean recall@{k} {overall.mean:.3f}, min {overall.min:.3f}, "
                       f"P5 {overall.p5:.3f} over {len(overall.recalls)} sampled stored vectors")
        hint = ("raise hnsw_ef at query time, or rebuild the index with a larger m / ef_construct; for filtered "
                "slices, index the filtered field (payload index) so Qdrant builds filter-aware links")
        ANN_RECALL_MEAN.record(report, overall.mean is not None and overall.mean >= min_recall, fill=fill,
                               value=round(overall.mean or 0.0, 3), threshold=min_recall, rule=">=", hint=hint,
                               detail=f"{len(overall.recalls)} queries, HNSW against exact")
        ANN_RECALL_P5.record(report, overall.p5 is not None and overall.p5 >= min_recall_p5, fill=fill,
                             value=round(overall.p5 or 0.0, 3), threshold=min_recall_p5, rule=">=", hint=hint,
                             detail="the 5th percentile of per-query recall")
        gated = [s for s in study.slices if s.prefix is not None and s.recalls and not s.searches_exactly]
        for s in study.slices:
            if s.prefix is not None and s.searches_exactly:
                report.finding(f"slice {s.name}: searched exactly under its filter ({s.reason}); not gated")
        if gated:
            worst = min(gated, key=lambda s: s.mean or 0.0)
            failing = [s.name for s in gated if (s.mean or 0.0) < min_recall]
            ANN_SLICES.record(report, not failing, fill=fill, value=round(worst.mean or 0.0, 3), threshold=min_recall,
                              rule=">=", hint=hint, detail=f"worst slice {worst.name}"
                              + (f"; below: {', '.join(failing)}" if failing else ""))
