"""Metrics from human relevance judgments (seed 000 SC-006): precision@3, graded nDCG@k, coverage, agreement.

The judgments (see :mod:`retrieval_lib.judging.judgments`) are matched to the current top-k of each query by
``chunk_id`` *and* ``content_hash``; a judgment whose chunk is gone or changed is stale and not used. Every
result of the top-k is then in one of three states: judged (grade 0, 1 or 2), **unjudged**, or judged only by a
stale entry (counted as unjudged, and listed). Metrics come from pytrec_eval (trec_eval):

- precision@3 (trec ``P_3``) = |{results at rank <= 3 with grade >= min_relevant_grade}| / 3, averaged over the
  queries. It is computed twice: with unjudged results counted as not relevant (the *lower bound*, what the
  SC-006 gate uses) and as relevant (the *upper bound*); the two are equal when the top 3 is fully judged, and
  the gap says how much the unjudged results could matter.
- nDCG@k (trec ``ndcg_cut_k``) = DCG@k / IDCG@k, DCG@k = Σ_{i<=k} grade_i / log2(i + 1), the ideal ordering taken
  over the query's judged chunks; unjudged results gain 0.
- coverage = judged results / results, over the top 3 and over the top k.

With two or more judges, their agreement on the pairs both judged (same text) is Cohen's kappa from
scikit-learn, κ = (p_o − p_e) / (1 − p_e), with the pairs they disagree on. The labelling and review widgets stay in
the notebook (they need a person).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.collection.collection_health import scan_payloads
from retrieval_lib.checks.gates import JUDGED_COVERAGE, JUDGED_PRECISION
from retrieval_lib.checks.retrieval.golden_set import ValidationReport, evaluate_golden
from retrieval_lib.errors import ValidationError
from retrieval_lib.judging.judgments import (
    GRADES,
    Judgment,
    JudgmentFile,
    StaleJudgment,
    collection_hashes,
    query_id,
    split_stale,
    to_qrels,
)
from retrieval_lib.models import SearchResponse
from retrieval_lib.retrievers.as_search import rank_stand_in
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.check import NotApplicable

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "Judgments", "JudgedEvaluation", "evaluate_judged", "agreement"]

#: The gates this check records.
GATES = (JUDGED_PRECISION, JUDGED_COVERAGE)

#: The placeholder qrel of a query with no usable judgment: trec_eval skips a query without qrels, which
#: would lift the means; with it the query counts (as 0).
NO_JUDGMENT = "__no_judgment__"


@dataclass(frozen=True)
class JudgedRow:
    """One result of the current top-k: its grade, or None when it is unjudged (or judged only stale)."""

    query: str
    rank: int
    chunk_id: str
    source_file: str
    score: float | None  # None: the retriever gives no score (ranks only)
    grade: int | None
    state: str  # "judged", "unjudged" or "stale"


@dataclass(frozen=True)
class Agreement:
    """Two judges on the pairs both judged (same chunk text): Cohen's kappa and where they differ."""

    judges: tuple[str, str]
    pairs: int
    kappa: float | None  # None when undefined (fewer than 2 pairs, or one label only)
    disagreements: list[tuple[str, str, int, int]] = field(default_factory=list)  # query, chunk_id, grade a, b


@dataclass
class JudgedEvaluation:
    """The judged view of the current top-k of a query set."""

    queries: list[str]
    top_k: int
    cutoff: int
    min_relevant_grade: int
    rows: list[JudgedRow]
    stale: list[StaleJudgment]
    precision_low: float
    precision_high: float
    ndcg: float
    per_query: dict[str, dict[str, float]]
    agreements: list[Agreement]
    #: the search responses the rows come from (what the labelling queue shows)
    responses: list[SearchResponse] = field(default_factory=list)

    def judged(self, depth: int) -> tuple[int, int]:
        """(judged, results) over the top ``depth`` of every query."""
        rows = [r for r in self.rows if r.rank <= depth]
        return sum(r.state == "judged" for r in rows), len(rows)

    def coverage(self, depth: int) -> float:
        """The share of the top ``depth`` results judged (0.0 with no result)."""
        n, m = self.judged(depth)
        return n / m if m else 0.0

    def precision_text(self) -> str:
        """precision@3 with how much of the top 3 was judged: a single figure only when all of it was."""
        (n, m), c = self.judged(self.cutoff), self.cutoff
        if n == m:
            return f"precision@{c} {self.precision_low:.3f} (all {m} top-{c} results judged)"
        return (f"precision@{c} between {self.precision_low:.3f} (unjudged as not relevant) and "
                f"{self.precision_high:.3f} (unjudged as relevant): {n} of {m} top-{c} results judged")


def judged_metrics(qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]], *, cutoff: int, top_k: int,
                   min_relevant_grade: int) -> dict[str, dict[str, float]]:
    """pytrec_eval's ``P_cutoff`` and ``ndcg_cut_top_k`` per query (keyed like ``ranked``: query -> chunk ids).

    ``qrels`` maps query -> {chunk_id: grade}; a query without judgments scores 0.
    """
    import pytrec_eval

    ids = {q: query_id(q) for q in ranked}
    trec_qrels = {ids[q]: dict(qrels.get(q) or {NO_JUDGMENT: 0}) for q in ranked}
    # trec_eval ranks by score and breaks ties by id, so the rank order is encoded in the score.
    run = {ids[q]: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for q, docs in ranked.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(trec_qrels, {f"P_{cutoff}", f"ndcg_cut_{top_k}"},
                                               relevance_level=min_relevant_grade)
    scores = evaluator.evaluate(run)
    return {q: {"precision": scores.get(ids[q], {}).get(f"P_{cutoff}", 0.0),
                "ndcg": scores.get(ids[q], {}).get(f"ndcg_cut_{top_k}", 0.0)} for q in ranked}


def agreement(judgments: Sequence[Judgment]) -> list[Agreement]:
    """Cohen's kappa (scikit-learn) for every pair of judges over the (query, chunk, text) both judged."""
    import warnings

    from sklearn.metrics import cohen_kappa_score

    by_judge: dict[str, dict[tuple[str, str, str], int]] = {}
    for j in judgments:
        by_judge.setdefault(j.judge, {})[(j.query, j.chunk_id, j.content_hash)] = j.grade
    out = []
    for a, b in combinations(sorted(by_judge), 2):
        common = sorted(set(by_judge[a]) & set(by_judge[b]))
        ga, gb = [by_judge[a][k] for k in common], [by_judge[b][k] for k in common]
        kappa: float | None = None
        if len(common) >= 2 and len(set(ga) | set(gb)) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                value = float(cohen_kappa_score(ga, gb, labels=sorted(GRADES)))
            kappa = value if value == value else None  # NaN when p_e == 1
        out.append(Agreement((a, b), len(common), kappa,
                             [(k[0], k[1], x, y) for k, x, y in zip(common, ga, gb) if x != y]))
    return out


def evaluate_judged(retriever: Retriever, queries: Sequence[str], judgments: Sequence[Judgment], *,
                    top_k: int = 5, cutoff: int = 3, min_relevant_grade: int = 1) -> JudgedEvaluation:
    """Search every query, match its top-k with the judgments still fresh on the collection, and compute the metrics.

    Raises:
        ValidationError: ``cutoff`` above ``top_k``, or ``min_relevant_grade`` not 1 or 2.
    """
    if not 1 <= cutoff <= top_k:
        raise ValidationError(f"cutoff ({cutoff}) must be between 1 and top_k ({top_k})", field="cutoff")
    if min_relevant_grade not in (1, 2):
        raise ValidationError(f"min_relevant_grade must be 1 (partly relevant counts) or 2 (only relevant); "
                              f"got {min_relevant_grade!r}", field="min_relevant_grade")
    queries = list(dict.fromkeys(queries))
    fresh, stale = split_stale(judgments, collection_hashes(retriever.store, retriever.collection))
    asked = set(queries)
    stale = [s for s in stale if s.judgment.query in asked]
    qrels = to_qrels(j for j in fresh if j.query in asked)
    stale_keys = {(s.judgment.query, s.judgment.chunk_id) for s in stale}
    responses = retriever.search_many(queries, top_k=top_k)
    rows: list[JudgedRow] = []
    ranked: dict[str, list[str]] = {}
    for q, response in zip(queries, responses):
        ranked[q] = []
        unscored = rank_stand_in([response]) is not None  # 1/rank stand-ins: the table shows no score
        for rank, r in enumerate(response.results, 1):
            cid = r.chunk_id or r.point_id
            ranked[q].append(cid)
            grade = qrels.get(q, {}).get(cid)
            state = "judged" if grade is not None else "stale" if (q, cid) in stale_keys else "unjudged"
            rows.append(JudgedRow(q, rank, cid, r.source_file or "", None if unscored else r.similarity_score, grade,
                                  state))
    per_query = judged_metrics(qrels, ranked, cutoff=cutoff, top_k=top_k, min_relevant_grade=min_relevant_grade)
    # the upper bound: every unjudged result of the top k counted as relevant
    optimistic = {q: dict(qrels.get(q, {})) for q in queries}
    for row in rows:
        if row.state != "judged":
            optimistic[row.query][row.chunk_id] = max(GRADES)
    high = judged_metrics(optimistic, ranked, cutoff=cutoff, top_k=top_k, min_relevant_grade=min_relevant_grade)
    n = len(queries)

    def mean(values: dict[str, dict[str, float]], name: str) -> float:
        return sum(v[name] for v in values.values()) / n if n else 0.0

    for q in queries:
        per_query[q]["precision_high"] = high[q]["precision"]
    return JudgedEvaluation(queries=queries, top_k=top_k, cutoff=cutoff, min_relevant_grade=min_relevant_grade,
                            rows=rows, stale=stale, precision_low=mean(per_query, "precision"),
                            precision_high=mean(high, "precision"), ndcg=mean(per_query, "ndcg"),
                            per_query=per_query, agreements=agreement(fresh), responses=list(responses))


# --------------------------------------------------------------------------- tables
def results_frame(ev: JudgedEvaluation, *, decimals: int = 3):
    """One row per result of the top k: query, rank, chunk, score, grade (or empty) and state."""
    import pandas as pd

    frame = pd.DataFrame([vars(r) for r in ev.rows],
                         columns=["query", "rank", "chunk_id", "source_file", "score", "grade", "state"])
    frame["grade"] = frame["grade"].astype("Int64")
    return frame.round({"score": decimals})


def per_query_frame(ev: JudgedEvaluation, *, decimals: int = 3):
    """One row per query: judged results of its top 3 and top k, precision@3 (both bounds) and nDCG@k."""
    import pandas as pd

    rows = []
    for q in ev.queries:
        mine = [r for r in ev.rows if r.query == q]
        top = [r for r in mine if r.rank <= ev.cutoff]
        rows.append({"query": q, f"judged_top{ev.cutoff}": f"{sum(r.state == 'judged' for r in top)}/{len(top)}",
                     f"judged_top{ev.top_k}": f"{sum(r.state == 'judged' for r in mine)}/{len(mine)}",
                     f"P@{ev.cutoff}": round(ev.per_query[q]["precision"], decimals),
                     f"P@{ev.cutoff}_upper": round(ev.per_query[q]["precision_high"], decimals),
                     f"nDCG@{ev.top_k}": round(ev.per_query[q]["ndcg"], decimals)})
    return pd.DataFrame(rows)


def unjudged_frame(ev: JudgedEvaluation):
    """The results of the top k with no usable judgment (unjudged, or judged only by a stale entry)."""
    import pandas as pd

    return pd.DataFrame([{"query": r.query, "rank": r.rank, "chunk_id": r.chunk_id, "state": r.state}
                         for r in ev.rows if r.state != "judged"], columns=["query", "rank", "chunk_id", "state"])


def stale_frame(ev: JudgedEvaluation):
    """The stale judgments of the asked queries: why (chunk gone, text changed), who judged, the grade."""
    import pandas as pd

    return pd.DataFrame([{"query": s.judgment.query, "chunk_id": s.judgment.chunk_id, "reason": s.reason,
                          "grade": s.judgment.grade, "judge": s.judgment.judge} for s in ev.stale],
                        columns=["query", "chunk_id", "reason", "grade", "judge"])


def disagreements_frame(ev: JudgedEvaluation):
    """Every pair two judges graded differently."""
    import pandas as pd

    return pd.DataFrame([{"judge_a": a.judges[0], "judge_b": a.judges[1], "query": q, "chunk_id": c,
                          "grade_a": x, "grade_b": y} for a in ev.agreements for q, c, x, y in a.disagreements],
                        columns=["judge_a", "judge_b", "query", "chunk_id", "grade_a", "grade_b"])


def golden_frame(validation: ValidationReport, ev: JudgedEvaluation):
    """The golden set's URL-pattern verdict beside the judgments, per golden or extra query also judged here.

    ``pattern_rank`` is the rank of the first result on an expected page (URL patterns); ``first_relevant_rank``
    the rank of the first result a judge graded 2; ``judged`` how many of the top k have a usable judgment.
    """
    import pandas as pd

    rows = []
    for o in validation.of_kind("golden") + validation.of_kind("extra"):
        mine = [r for r in ev.rows if r.query == o.query]
        if not mine:
            continue
        relevant = [r.rank for r in mine if r.grade == max(GRADES)]
        rows.append({"kind": o.kind, "query": o.query, "pattern_passed": o.passed,
                     "pattern_rank": o.first_relevant_rank, "first_relevant_rank": relevant[0] if relevant else None,
                     "judged": f"{sum(r.state == 'judged' for r in mine)}/{len(mine)}",
                     "agree": bool(relevant) == (o.first_relevant_rank is not None)})
    frame = pd.DataFrame(rows, columns=["kind", "query", "pattern_passed", "pattern_rank", "first_relevant_rank",
                                        "judged", "agree"])
    return frame.astype({"pattern_rank": "Int64", "first_relevant_rank": "Int64"})


# --------------------------------------------------------------------------- notebook 13
def run(ctx: NotebookRun, *, judgments: str, agreement_files: Sequence[str], query_sets: str, judged_query_set: str,
        judged_top_k: int, min_relevant_grade: int, min_precision_at_3: float, min_judged_coverage: float,
        judge: str, golden_set: str) -> Judgments | NotApplicable:
    """Notebook 13's check: the judgments (and ``agreement_files``) against the current top ``judged_top_k`` of
    ``judged_query_set``, and the golden set's URL-pattern verdicts beside them.

    The questions go to ``ctx.retriever``; the judgments are matched to the collection's chunk texts, so with only
    a team's retriever configured it is not applicable. ``judge`` is the labelling widget's (the notebook's); the
    check itself reads every judge.
    """
    from retrieval_lib.judging import load_judgments
    from retrieval_lib.params import load_golden_set, load_query_sets

    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES, fill={"min_precision_at_3": min_precision_at_3, "cutoff": _CUTOFF})
    queries = load_query_sets(query_sets, required=[judged_query_set])[judged_query_set]
    jfile = load_judgments(judgments, missing_ok=True)
    others = [load_judgments(path) for path in agreement_files]
    ev = evaluate_judged(ctx.retriever, queries, jfile.judgments + [j for f in others for j in f.judgments],
                         top_k=judged_top_k, cutoff=_CUTOFF, min_relevant_grade=min_relevant_grade)
    scan = scan_payloads(ctx.store, ctx.collection, run_dir=ctx.report.run_dir)
    validation = evaluate_golden(ctx.retriever, load_golden_set(golden_set),
                                 vector_count=ctx.store.count(ctx.collection),
                                 metadata_completeness=scan.metadata_completeness)
    return Judgments(ev, jfile, judged_query_set, validation, min_precision_at_3=min_precision_at_3,
                     min_judged_coverage=min_judged_coverage)


#: The depth precision is judged at (seed 000 SC-006: the top 3).
_CUTOFF = 3


@dataclass
class Judgments:
    """Notebook 13's result: the judged view of the current top k, the judgments file, the golden set beside it."""

    evaluation: JudgedEvaluation
    file: JudgmentFile
    query_set: str
    validation: ValidationReport | None
    min_precision_at_3: float
    min_judged_coverage: float

    def __str__(self) -> str:
        f, ev = self.file, self.evaluation
        return (f"{f.path.name}: {len(f.judgments)} judgments by {', '.join(f.judges()) or 'nobody yet'}"
                f"{'; ' + f.about if f.about else ''}\n"
                f"{len(ev.queries)} questions of {self.query_set!r}, top {ev.top_k}: {ev.judged(ev.top_k)[0]} of "
                f"{ev.judged(ev.top_k)[1]} results judged, {len(ev.stale)} stale judgments; {ev.precision_text()}")

    def agreement_text(self) -> str:
        """One line per pair of judges (pairs judged, Cohen's kappa, disagreements), then how many pairs."""
        lines = [f"{a.judges[0]} / {a.judges[1]}: {a.pairs} pairs, kappa "
                 f"{'undefined' if a.kappa is None else f'{a.kappa:.3f}'}, {len(a.disagreements)} disagreements"
                 for a in self.evaluation.agreements]
        return "\n".join([*lines, f"{len(self.evaluation.agreements)} pairs of judges"])

    def tables(self) -> dict[str, Any]:
        """``per_query``, ``results``, ``unjudged``, ``stale``, ``disagreements`` and, with the golden set,
        ``golden_vs_judgments``."""
        ev = self.evaluation
        out = {"per_query": per_query_frame(ev, decimals=3), "results": results_frame(ev, decimals=3),
               "unjudged": unjudged_frame(ev), "stale": stale_frame(ev), "disagreements": disagreements_frame(ev)}
        if self.validation is not None:
            out["golden_vs_judgments"] = golden_frame(self.validation, ev)
        return out

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The tables (the disagreements aside: they are shown), then the gates, metrics and findings.

        Raises:
            ValidationError: a threshold outside [0, 1].
        """
        for name, frame in self.tables().items():
            if name != "disagreements":
                report.table(frame, name)
        # gates: SC-006 precision@3 with its coverage; judged coverage
        ev, min_precision_at_3, min_judged_coverage = self.evaluation, self.min_precision_at_3, self.min_judged_coverage
        for name, value in (("min_precision_at_3", min_precision_at_3), ("min_judged_coverage", min_judged_coverage)):
            if not 0.0 <= value <= 1.0:
                raise ValidationError(f"{name} must be a share between 0 and 1 (got {value!r})", field=name)
        c, k = ev.cutoff, ev.top_k
        (n_top, m_top), (n_all, m_all) = ev.judged(c), ev.judged(k)
        counted = "partly relevant or relevant" if ev.min_relevant_grade == 1 else "relevant"
        fill = {"min_precision_at_3": min_precision_at_3, "cutoff": c}
        if not n_all:
            why = ("nobody has judged this collection's results yet: open notebooks/13_judgments.ipynb in JupyterLab "
                   "(make lab), set judge, and grade them")
            JUDGED_PRECISION.not_applicable(report, why, fill=fill)
            JUDGED_COVERAGE.not_applicable(report, why, fill=fill)
            report.finding(f"no judgments: {m_all} results of {len(ev.queries)} queries wait for a judge")
            return
        JUDGED_PRECISION.record(
            report, ev.precision_low >= min_precision_at_3, fill=fill, value=round(ev.precision_low, 3),
            threshold=min_precision_at_3, rule=">=", unit="share",
            hint=(f"judge the {m_top - n_top} unjudged top-{c} results in notebooks/13_judgments.ipynb first"
                  if n_top < m_top else "read the results graded 0 in the results table: improve the chunks "
                  "or the embedder for those queries"),
            detail=f"{ev.precision_text()} over {len(ev.queries)} queries; grade >= {ev.min_relevant_grade} "
                   f"({counted}) counts")
        JUDGED_COVERAGE.record(
            report, ev.coverage(c) >= min_judged_coverage, fill=fill, value=round(ev.coverage(c), 3),
            threshold=min_judged_coverage, rule=">=", unit="share",
            hint="open notebooks/13_judgments.ipynb in JupyterLab (make lab), set judge, and grade the "
                 "unjudged results listed; stale judgments must be judged again",
            detail=f"{n_top} of {m_top} top-{c} results judged ({len(ev.stale)} stale judgments not used)")
        for name, value, unit in ((f"precision_at_{c}", ev.precision_low, "share"),
                                  (f"precision_at_{c}_upper", ev.precision_high, "share"),
                                  (f"ndcg_at_{k}", ev.ndcg, ""), (f"judged_coverage_top{c}", ev.coverage(c), "share"),
                                  (f"judged_coverage_top{k}", ev.coverage(k), "share"),
                                  ("unjudged_results", m_all - n_all, "results"),
                                  ("stale_judgments", len(ev.stale), "judgments")):
            report.metric(name, round(value, 4) if isinstance(value, float) else value, unit)
        report.finding(f"SC-006: {ev.precision_text()}, over {len(ev.queries)} queries (judged: {n_all} of {m_all} "
                       f"top-{k} results); graded nDCG@{k} {ev.ndcg:.3f}")
        if ev.stale:
            gone = sum(s.reason == "gone" for s in ev.stale)
            report.finding(f"{len(ev.stale)} judgments are stale ({gone} chunks gone, {len(ev.stale) - gone} changed "
                           "text) and were not used: judge those results again")
        for a in ev.agreements:
            kappa = "undefined" if a.kappa is None else f"{a.kappa:.3f}"
            report.metric(f"kappa_{a.judges[0]}_{a.judges[1]}", a.kappa, "")
            report.finding(f"judges {a.judges[0]} and {a.judges[1]}: Cohen's kappa {kappa} over {a.pairs} pairs, "
                           f"{len(a.disagreements)} disagreements")

