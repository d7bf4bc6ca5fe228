"""Golden-set evaluation (seed 004): known queries, expected pages, negatives.

A golden set is a YAML file (data, not code)::

    top_k: 5
    min_score: 0.6            # seed 004's figure for Cohere embed v3
    required_passes: 4        # of the golden queries
    queries:                  # count toward required_passes
      - query: What is inverse kinematics?
        expected_url_patterns: [/docs/module-01-ros2/kinematics-and-inverse-kinematics]
        min_score: 0.6        # optional, per query
    extra_queries: [...]      # reported, not counted
    negatives:                # out-of-domain: empty, or every score below max_score
      - query: What is the best pizza recipe?
        max_score: 0.5

A pattern matches a result when the result's ``source_url`` path (or the whole
URL, or its ``source_file``) equals it or continues it past a ``/``: the pattern
``/docs/intro`` matches ``/docs/intro`` and ``/docs/intro/setup`` but not
``/docs/introduction`` (a URL pattern names pages or sections, not spellings). A golden query passes when some
result in the top ``top_k`` matches with ``similarity_score >= min_score``.
Negatives are judged on their own and never counted as passes.

IR metrics come from pytrec_eval (trec_eval), computed at page level: a
query's run is its distinct pages in rank order; relevant pages are every
page of the collection that matches one of its patterns.

- hit@k (trec ``success_k``) = 1 if a relevant page is in the top k, else 0
- MRR (trec ``recip_rank``) = mean over queries of 1 / rank of the first relevant page
- nDCG@k (trec ``ndcg_cut_k``) = DCG@k / IDCG@k with DCG@k = Σ_{i≤k} rel_i / log2(i + 1)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..models import SearchResponse, SearchResult
from ..params import GoldenQuery, GoldenSet, NegativeQuery, load_golden_set
from ..search import Retriever

__all__ = ["GoldenQuery", "NegativeQuery", "GoldenSet", "QueryOutcome", "ValidationReport",
           "load_golden_set", "evaluate_golden", "matches", "url_matches"]


def _under(value: str, pattern: str) -> bool:
    """``value`` is ``pattern`` or lies below it, segment-wise."""
    stem = pattern.rstrip("/")
    return bool(stem) and (value.rstrip("/") == stem or value.startswith(stem + "/"))


def url_matches(url: str, pattern: str) -> bool:
    """True when the URL, or its path, is the pattern's page or lies below it."""
    return _under(urlsplit(url).path, pattern) or _under(url, pattern)


def matches(result: SearchResult, pattern: str) -> bool:
    """True when the result's URL (or URL path) or source file is the pattern's page or lies below it."""
    return url_matches(result.source_url or "", pattern) or _under(result.source_file or "", pattern)


@dataclass
class QueryOutcome:
    """How one golden or negative query fared."""

    query: str
    kind: str  # "golden", "extra" or "negative"
    passed: bool
    reason: str
    first_relevant_rank: int | None = None
    best_relevant_score: float | None = None
    top_score: float | None = None
    top_source: str | None = None


@dataclass
class ValidationReport:
    """Seed 004's ValidationReport, plus IR metrics and the negatives' verdicts."""

    passed: bool
    total_queries: int
    passed_queries: int
    required_passes: int
    failed_queries: list[dict[str, str]]
    vector_count: int
    metadata_completeness: float
    negatives_total: int
    negatives_passed: int
    hit_at_k: float
    mrr: float
    ndcg_at_k: float
    top_k: int
    outcomes: list[QueryOutcome] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _judge(q: GoldenQuery, response: SearchResponse, kind: str) -> QueryOutcome:
    top = response.results[0] if response.results else None
    relevant = [(rank, r) for rank, r in enumerate(response.results, 1)
                if any(matches(r, p) for p in q.expected_url_patterns)]
    outcome = QueryOutcome(query=q.query, kind=kind, passed=False, reason="",
                           top_score=round(top.similarity_score, 4) if top else None,
                           top_source=top.source_file if top else None)
    if relevant:
        outcome.first_relevant_rank = relevant[0][0]
        outcome.best_relevant_score = round(max(r.similarity_score for _, r in relevant), 4)
    good = [r for _, r in relevant if r.similarity_score >= q.min_score]
    if good:
        outcome.passed = True
        outcome.reason = f"expected page at rank {outcome.first_relevant_rank}"
    elif relevant:
        outcome.reason = (f"expected page at rank {outcome.first_relevant_rank} but its score "
                          f"{outcome.best_relevant_score:.3f} < min_score {q.min_score:g}")
    else:
        outcome.reason = f"no expected page in the top {response.top_k} (top: {outcome.top_source})"
    return outcome


def _ir_metrics(queries: list[GoldenQuery], responses: list[SearchResponse], all_urls: list[str],
                k: int) -> tuple[float, float, float]:
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i, (q, response) in enumerate(zip(queries, responses)):
        qid = f"q{i}"
        qrels[qid] = {u: 1 for u in all_urls if any(url_matches(u, p) for p in q.expected_url_patterns)}
        pages: list[str] = []
        for r in response.results:
            page = r.source_url or r.source_file or r.point_id
            if page not in pages:
                pages.append(page)
        # trec_eval ranks by score and breaks ties by id, so rank order is encoded in the score.
        run[qid] = {page: float(len(pages) - rank) for rank, page in enumerate(pages)}
        if not qrels[qid]:  # trec_eval skips queries without relevant docs; keep them, scoring 0
            qrels[qid] = {"__no_relevant_page_in_collection__": 1}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"success_{k}", "recip_rank", f"ndcg_cut_{k}"})
    per_query = evaluator.evaluate(run)
    n = len(queries)

    def mean(measure: str) -> float:
        return sum(per_query.get(f"q{i}", {}).get(measure, 0.0) for i in range(n)) / n if n else math.nan

    return mean(f"success_{k}"), mean("recip_rank"), mean(f"ndcg_cut_{k}")


def evaluate_golden(retriever: Retriever, golden: GoldenSet, *, vector_count: int,
                    metadata_completeness: float) -> ValidationReport:
    """Run a golden set and judge it by seed 004's criteria.

    ``passed`` is True when at least ``required_passes`` golden queries pass
    AND every negative passes. Extra queries and IR metrics are reported only.
    """
    texts = ([q.query for q in golden.queries] + [q.query for q in golden.extra_queries]
             + [n.query for n in golden.negatives])
    responses = retriever.search_many(texts, top_k=golden.top_k)
    n_gold, n_extra = len(golden.queries), len(golden.extra_queries)
    gold_resp = responses[:n_gold]
    extra_resp = responses[n_gold:n_gold + n_extra]
    neg_resp = responses[n_gold + n_extra:]

    outcomes = [_judge(q, r, "golden") for q, r in zip(golden.queries, gold_resp)]
    outcomes += [_judge(q, r, "extra") for q, r in zip(golden.extra_queries, extra_resp)]
    negatives_passed = 0
    for neg, response in zip(golden.negatives, neg_resp):
        top = response.results[0] if response.results else None
        ok = top is None or all(r.similarity_score < neg.max_score for r in response.results)
        negatives_passed += ok
        reason = ("no results" if top is None else
                  f"top score {top.similarity_score:.3f} {'<' if ok else '>='} max_score {neg.max_score:g}")
        outcomes.append(QueryOutcome(query=neg.query, kind="negative", passed=ok, reason=reason,
                                     top_score=round(top.similarity_score, 4) if top else None,
                                     top_source=top.source_file if top else None))
    all_urls = list(retriever.store.distinct_values(retriever.collection, "source_url"))
    hit, mrr, ndcg = _ir_metrics(list(golden.queries), gold_resp, all_urls, golden.top_k)
    passed_queries = sum(o.passed for o in outcomes if o.kind == "golden")
    return ValidationReport(
        passed=passed_queries >= golden.required_passes and negatives_passed == len(golden.negatives),
        total_queries=n_gold, passed_queries=passed_queries, required_passes=golden.required_passes,
        failed_queries=[{"query": o.query, "reason": o.reason} for o in outcomes if o.kind == "golden" and not o.passed],
        vector_count=vector_count, metadata_completeness=metadata_completeness,
        negatives_total=len(golden.negatives), negatives_passed=negatives_passed,
        hit_at_k=hit, mrr=mrr, ndcg_at_k=ndcg, top_k=golden.top_k, outcomes=outcomes,
    )
