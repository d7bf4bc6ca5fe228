"""Notebook 10's result, :class:`Reachability`: its tables, figures and record, from a
:class:`~.reachability.ReachStudy` and an :class:`~._offtopic.OffTopicStudy`.

**Query-reachability**: :func:`query_reach` takes notebook 03's :class:`CoverageStudy` (its heading and golden
queries, unfiltered, top ``coverage_top_k``) and marks each chunk that is in some question's top k.

Gates (:meth:`Reachability.record`), each with its parameter:

- ``max_antihub_share``: the share of chunks with ``N_k = 0`` (sampled: the estimate, its
  interval in the detail);
- ``max_nk_skewness``: the skewness of ``N_k`` (hubs crowding the answers);
- ``max_offtopic_files``: off-topic candidates among the source files.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_lib.checks.collection._offtopic import OffTopicStudy, offtopic_frame
from retrieval_lib.checks.gates import REACH_ANTIHUBS, REACH_HUBS, REACH_OFFTOPIC
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.checks.collection.reachability import ReachStudy
    from retrieval_lib.checks.retrieval.source_coverage import CoverageStudy
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["Reachability", "QueryReach", "query_reach", "file_frame", "occurrence_figure", "file_figure",
           "offtopic_text", "gini"]


@dataclass(frozen=True)
class QueryReach:
    """Which chunks the questions reach: ``reached[i]`` for table row ``i``; how many questions, which top k."""

    reached: np.ndarray
    queries: int
    top_k: int
    origins: dict[str, int]

    @property
    def share(self) -> float:
        """Chunks in some question's top k / all chunks (0.0 for an empty collection)."""
        return float(self.reached.mean()) if len(self.reached) else 0.0


def query_reach(study: ReachStudy, coverage: CoverageStudy) -> QueryReach:
    """Mark the chunks that appear in any top k of the coverage study's (heading and golden) questions."""
    index = {pid: i for i, pid in enumerate(study.table.ids)}
    reached = np.zeros(study.points, dtype=bool)
    for response in coverage.responses:
        for result in response.results:
            row = index.get(result.point_id)
            if row is not None:
                reached[row] = True
    return QueryReach(reached, len(coverage.queries), coverage.top_k, dict(Counter(q.origin for q in coverage.queries)))


def _chunk_rows(study: ReachStudy, rows: list[int]):
    """One row per chunk of ``rows``: its file, section, ``N_k`` (1 decimal) and a text preview."""
    import pandas as pd

    t = study.table
    return pd.DataFrame([{"source_file": t.files[r], "section_title": t.sections[r],
                          "n_k": round(float(study.occurrence[r]), 1), "preview": t.previews[r]} for r in rows],
                        columns=["source_file", "section_title", "n_k", "preview"])


def file_frame(study: ReachStudy, offtopic: OffTopicStudy | None = None, reach: QueryReach | None = None):
    """``N_k`` rolled up per source file (3 decimals): chunks, mean and max ``N_k``, its share of all top-k places,
    anti-hubs, hubs, the skewness and Gini of ``N_k`` inside the file, and (when given) chunks reached by a
    question and the off-topic verdict. Sampled: anti-hubs count among the file's sampled chunks."""
    import pandas as pd
    from scipy.stats import skew

    by_file: dict[str, list[int]] = defaultdict(list)
    for row, path in enumerate(study.table.files):
        by_file[path].append(row)
    antihubs, hubs = set(study.antihub_rows), set(study.hub_rows)
    sampled = set(int(r) for r in study.query_rows)
    total = float(study.occurrence.sum()) or 1.0
    flagged = {f.path for f in offtopic.candidates} if offtopic else set()
    rows: list[dict[str, Any]] = []
    for path in sorted(by_file):
        members = by_file[path]
        values = study.occurrence[members]
        judged = [r for r in members if r in sampled]
        entry: dict[str, Any] = {
            "source_file": path, "chunks": len(members), "mean_n_k": round(float(values.mean()), 3),
            "max_n_k": round(float(values.max()), 3),
            "share_of_top_k_places": round(float(values.sum()) / total, 3),
            "antihubs": sum(r in antihubs for r in judged),
            "hubs": sum(r in hubs for r in members),
            "skewness": round(float(skew(values)), 3) if len(values) > 2 and values.std() > 0 else 0.0,
            "gini": round(gini(values), 3)}
        if study.sampled:
            entry["sampled_chunks"] = len(judged)
        if reach is not None:
            entry["reached_by_questions"] = int(reach.reached[members].sum())
        if offtopic is not None:
            entry["offtopic"] = path in flagged
        rows.append(entry)
    return pd.DataFrame(rows)


def gini(values: Sequence[float] | np.ndarray) -> float:
    """Gini coefficient of non-negative values (0: all equal; towards 1: all in one); 0.0 when they sum to 0."""
    x = np.sort(np.asarray(values, dtype=float))
    n, total = len(x), float(np.sum(x))
    if n == 0 or total <= 0:
        return 0.0
    return float(np.dot(2 * np.arange(1, n + 1) - n - 1, x) / (n * total))


@plain_figure
def occurrence_figure(study: ReachStudy):
    """Histogram of ``N_k`` over the chunks (log count axis), with the mean and the hub threshold marked."""
    from retrieval_lib.workbook.plots import count_histogram

    what = "estimated from the sample" if study.sampled else "every chunk"
    return count_histogram(study.occurrence.tolist(), marks={"hub threshold": study.hub_threshold,
                                                    "mean (= k)": float(study.occurrence.mean())},
                           bins=min(60, max(10, int(study.occurrence.max()) + 1)),
                           xlabel=f"N_k: how many other chunks have this chunk in their top {study.top_k}",
                           title=f"k-occurrence of {study.points} chunks ({what})")


@plain_figure
def file_figure(study: ReachStudy, offtopic: OffTopicStudy | None = None):
    """Mean ``N_k`` per file (red: off-topic candidate; orange: holds an anti-hub), the mean ``k`` marked."""
    from retrieval_lib.workbook.plots import horizontal_bars

    frame = file_frame(study, offtopic).sort_values(["mean_n_k", "source_file"], ascending=[False, True])
    colours = ["tab:red" if offtopic is not None and row.offtopic else "tab:orange" if row.antihubs else "tab:blue"
               for row in frame.itertuples()]
    return horizontal_bars(list(frame["source_file"]), list(frame["mean_n_k"]), colours=colours,
                           notes=[f"{a} anti-hub(s), {h} hub(s)" if a or h else ""
                                  for a, h in zip(frame["antihubs"], frame["hubs"])],
                           reference=float(study.top_k), reference_label=f"mean over all chunks (k = {study.top_k})",
                           xlabel="mean N_k of the file's chunks", label_size=7,
                           title="How often each file's chunks are retrieved by other chunks "
                                 "(red: off-topic candidate, orange: has an anti-hub)")


def offtopic_text(offtopic: OffTopicStudy) -> str:
    """The off-topic candidates in words: the groups apart from the book (largest first), then stock pages; then
    the stubs, listed apart (not candidates: a placeholder page has no text to be off-topic about)."""
    parts = [g.text() for g in offtopic.groups]
    grouped = {path for g in offtopic.groups for path in g.files}
    by_template: dict[str, list[str]] = {}
    for f in offtopic.stock_pages:
        by_template.setdefault(str(f.stock), []).append(f.path)
    for template, paths in sorted(by_template.items()):
        parts.append(f"{len(paths)} stock pages of the {template} template"
                     + ("" if set(paths) <= grouped else f": {', '.join(sorted(paths))}"))
    text = "; ".join(parts) or "none"
    if stubs := sorted(f.path for f in offtopic.stubs):
        what = "1 stub (a placeholder page)" if len(stubs) == 1 else f"{len(stubs)} stubs (placeholder pages)"
        text += f"; {what} listed apart, not judged: {', '.join(stubs)}"
    return text


@dataclass
class Reachability:
    """Notebook 10's result: the reachability pass, the off-topic files, the questions' reach (None when not
    asked), and the bars."""

    study: ReachStudy
    offtopic: OffTopicStudy
    reach: QueryReach | None
    max_antihub_share: float
    max_nk_skewness: float
    max_offtopic_files: int

    def __str__(self) -> str:
        s, reach = self.study, self.reach
        lines = [f"{s.points} chunks; {len(s.query_rows)} used as queries "
                 f"({'a seeded sample' if s.sampled else 'every chunk'}), top {s.top_k} each; "
                 f"{s.queries_run} store queries",
                 f"anti-hub share {s.antihub.text()}; N_k skewness {s.skewness:.3f}, Gini {s.gini:.3f}, "
                 f"max N_k {s.occurrence.max():.0f}",
                 f"{len(s.hub_rows)} hubs: {s.hub_rule}"]
        if reach is not None:
            lines.append(f"{reach.queries} questions {reach.origins}: {int(reach.reached.sum())} of {s.points} "
                         f"chunks in some top {reach.top_k} ({reach.share:.1%})")
        lines += [self.offtopic.rule, f"off-topic candidates: {offtopic_text(self.offtopic)}"]
        return "\n".join(lines)

    def _where(self, row: int) -> str:
        """A chunk's file and section (``file §section``), or its file alone when it names no section."""
        table = self.study.table
        return f"{table.files[row]} §{table.sections[row]}" if table.sections[row].strip() else table.files[row]

    def tables(self) -> dict[str, Any]:
        """The anti-hubs (sampled: those found among the sample), the hubs (most retrieved first, at most 20, with
        their sampled hits), the anti-hubs no question reaches either (when asked: chunks retrieval never shows),
        every file's distance to the rest (farthest first) and ``N_k`` per file."""
        s, reach = self.study, self.reach
        hubs = _chunk_rows(s, s.hub_rows[:20])
        if s.sampled:
            hubs.insert(3, "sample_hits", [int(s.hits[r]) for r in s.hub_rows[:20]])
        out = {"antihubs": _chunk_rows(s, s.antihub_rows), "hubs": hubs}
        if reach is not None:
            out["antihubs_unreached_by_questions"] = _chunk_rows(s, [r for r in s.antihub_rows
                                                                      if not reach.reached[r]])
        out["file_distances"] = offtopic_frame(self.offtopic)
        out["per_file"] = file_frame(s, self.offtopic, reach)
        return out

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The ``N_k`` histogram, the tables, the per-file figure, then the gates, findings and metrics (module
        docstring)."""
        study, offtopic, reach = self.study, self.offtopic, self.reach
        report.figure(occurrence_figure(study), "occurrence_histogram", show=show)
        for name, frame in self.tables().items():
            report.table(frame, name)
        report.figure(file_figure(study, offtopic), "per_file", show=show)
        est, k, n = study.antihub, study.top_k, study.points
        how = (f"every one of the {n} chunks used as a query" if not study.sampled else
               f"{len(study.query_rows)} of {n} chunks sampled as queries (seed {study.seed})")
        max_share, max_skew, max_files = self.max_antihub_share, self.max_nk_skewness, self.max_offtopic_files
        REACH_ANTIHUBS.record(report, est.share <= max_share, value=round(est.share, 4),
                              threshold=max_share, rule="<=", unit="share",
                              detail=f"{est.antihubs} of {est.judged} chunks judged are in no other chunk's top {k}: "
                                     f"{est.text()}",
                              hint="read the anti-hub list: chunks too short, boilerplate or duplicated text are never "
                                   "retrieved; fix the chunking or the pages")
        REACH_HUBS.record(report, study.skewness <= max_skew, value=round(study.skewness, 3), threshold=max_skew,
                          rule="<=", detail=f"{len(study.hub_rows)} hubs ({study.hub_rule}); Gini {study.gini:.3f}",
                          hint="read the hub list: generic chunks (glossaries, index pages, boilerplate) near "
                               "everything should be cut down or dropped from the collection")
        cands = offtopic.candidates
        REACH_OFFTOPIC.record(report, len(cands) <= max_files, value=len(cands), threshold=max_files, rule="<=",
                              unit="files", detail=offtopic_text(offtopic) + f"; rule: {offtopic.rule}",
                              hint="remove the listed pages from the docs folder (template pages, changelogs, stray "
                                   "pages) and re-ingest, or raise offtopic_max_z if they belong to the book")
        report.finding(f"{how}; top {k} each: anti-hub share {est.text()}")
        report.finding(f"N_k skewness {study.skewness:.3f}, Gini {study.gini:.3f}; {len(study.hub_rows)} hubs "
                       f"({study.hub_rule})" + (": " + "; ".join(map(self._where, study.hub_rows[:5]))
                                                if study.hub_rows else ""))
        report.finding(f"off-topic candidates: {offtopic_text(offtopic)} ({offtopic.rule})")
        if reach is not None:
            never = [r for r in study.antihub_rows if not reach.reached[r]]
            report.finding(f"{int(reach.reached.sum())} of {n} chunks ({reach.share:.1%}) are in some top "
                           f"{reach.top_k} of the {reach.queries} heading and golden questions; {len(never)} anti-hubs "
                           "are reached by no question either")
            report.metric("query_reachable_share", reach.share, "share")
            report.metric("antihubs_unreached_by_questions", len(never), "chunks")
        for name, value, unit in (("points", n, "points"), ("reach_top_k", k, "results"),
                                  ("chunks_as_queries", len(study.query_rows), "queries"),
                                  ("reach_queries_run", study.queries_run, "queries"), ("sampled", study.sampled, ""),
                                  ("antihub_share", est.share, "share"), ("antihub_share_low", est.low, "share"),
                                  ("antihub_share_high", est.high, "share"), ("antihubs", est.antihubs, "chunks"),
                                  ("hubs", len(study.hub_rows), "chunks"), ("hub_threshold", study.hub_threshold, ""),
                                  ("nk_skewness", study.skewness, ""), ("nk_gini", study.gini, ""),
                                  ("max_nk", float(study.occurrence.max()), ""),
                                  ("offtopic_files", [f.path for f in cands], "")):
            report.metric(name, value, unit)
