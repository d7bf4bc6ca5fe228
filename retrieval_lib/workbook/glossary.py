"""What each figure a notebook records means, and its unit: the report shows the unit and, on hover, the definition.

A unit a notebook gives with :meth:`NotebookReport.metric` wins; otherwise it comes
from :data:`METRICS`, then from the name's suffix (``_ms``, ``_bytes``, ``_qps``,
``_pct``, ``_share``).
"""

from __future__ import annotations

__all__ = ["METRICS", "unit_of", "definition_of"]

#: name -> (unit, definition). Names are those the notebooks record.
METRICS: dict[str, tuple[str, str]] = {
    # 01 query
    "queries": ("queries", "questions asked"),
    "mean_top1_score": ("", "mean similarity of each question's best chunk (0-1)"),
    # 02 score distributions
    "in_domain_queries": ("queries", "questions the book answers"),
    "ood_queries": ("queries", "out-of-domain questions the book does not answer"),
    "in_domain_top1_min": ("", "lowest best-chunk score over the in-domain questions"),
    "in_domain_top1_median": ("", "median best-chunk score over the in-domain questions"),
    "in_domain_top1_max": ("", "highest best-chunk score over the in-domain questions"),
    "ood_top1_max": ("", "highest best-chunk score over the out-of-domain questions"),
    "separation": ("", "lowest in-domain best score minus highest out-of-domain best score; > 0 means a threshold "
                       "can tell them apart"),
    "recommended_threshold": ("", "the midpoint of the gap between in-domain and out-of-domain best scores"),
    "negative_raw_scores": ("scores", "raw cosine scores below 0 (shown as 0 after clipping)"),
    "scores_checked": ("scores", "every score of every result checked for the [0, 1] range"),
    # 03 coverage
    "source_files": ("files", "distinct source files in the collection"),
    "chunks": ("chunks", "points (chunks) scanned"),
    "reachable_files": ("files", "files with a chunk in some question's top k"),
    "reachable_share": ("share", "reachable files / all files"),
    "unreachable_files": ("", "files no question reached"),
    "mean_heading_hit_rate": ("share", "mean over files of: own-heading questions that found the file / all of them"),
    "files_reached_by_other_queries": ("files", "files also found by a question not taken from their own headings"),
    "missed_heading_queries": ("queries", "heading questions whose top k missed their own file"),
    "primary_share": ("share", "results of the topic question that come from the expected module"),
    # 04 consistency
    "runs_compared": ("runs", "answers compared with the first answer to the same question"),
    "identical_runs": ("runs", "answers with the same ids, order and scores (within the tolerance)"),
    "max_score_diff": ("", "largest score difference between two answers to the same question"),
    "min_rbo": ("", "lowest rank-biased overlap between two answers (1 = identical rankings)"),
    "min_jaccard": ("", "lowest overlap of result sets between two answers (1 = same chunks)"),
    "min_adjacent_gap": ("", "smallest score gap between neighbouring ranks: how close a swap is"),
    # 05 golden
    "golden_passed": ("queries", "golden questions that found an expected page with enough similarity"),
    "golden_total": ("queries", "golden questions"),
    "required_passes": ("queries", "golden questions that must pass"),
    "extra_passed": ("queries", "extra questions that passed (reported, not counted)"),
    "negatives_passed": ("queries", "out-of-domain questions that found nothing relevant"),
    "negatives_total": ("queries", "out-of-domain negatives"),
    "hit_at_k": ("", "share of golden questions with a relevant page in the top k (trec success@k)"),
    "mrr": ("", "mean of 1 / rank of the first relevant page (trec recip_rank)"),
    "ndcg_at_k": ("", "normalised discounted cumulative gain at k (trec ndcg_cut_k)"),
    "top_k": ("results", "results per question"),
    "vector_count": ("points", "points in the collection"),
    "metadata_completeness": ("%", "points that carry every payload field"),
    "validation_report_passed": ("", "seed 004's pass criteria as a whole"),
    # 06 latency
    "setup_ms": ("ms", "opening the store and loading the embedder"),
    "warmup_ms": ("ms", "the first search, not counted in the percentiles"),
    "sequential_calls": ("calls", "searches timed one after another"),
    "under_2s_pct": ("%", "searches that finished in under 2 seconds (seed 000 SC-002)"),
    "concurrent_wall_s": ("s", "wall time of the concurrent run"),
    "p95_target_ms": ("ms", "the p95 target the gate holds latency to"),
    "concurrent_submitted": ("calls", "searches submitted concurrently"),
    "concurrent_completed": ("calls", "concurrent searches that returned"),
    "concurrent_errors": ("calls", "concurrent searches that raised"),
    "concurrent_timed_out": ("calls", "concurrent searches past the timeout"),
    "concurrency": ("threads", "searches in flight at once"),
    "rankings_identical": ("", "concurrent answers equal the sequential ones"),
    "rankings_stable_across_rounds": ("", "every round of the sequential run gave the same answers"),
    # 07 health
    "points": ("points", "points scanned, every one"),
    "field_completeness": ("%", "per payload field: points that carry it"),
    "duplicate_groups": ("groups", "texts stored more than once"),
    "duplicate_share": ("share", "points that repeat another point's text"),
    "foreign_model_points": ("points", "points embedded with another model than the configured one"),
    "model_versions": ("points", "points per embedding model"),
    "collection_dimension": ("dimensions", "the collection's vector size"),
    "embedder_dimension": ("dimensions", "the configured embedder's vector size"),
    "index_status": ("", "Qdrant's optimisation status (green: ready)"),
    "segments_count": ("segments", "storage segments of the collection"),
    "disk_data_size_bytes": ("bytes", "the collection's size on disk"),
    # 13 judgments
    "precision_at_3": ("share", "top-3 results judged topically related by a person, unjudged counted as not "
                                "(trec P_3; seed 000 SC-006)"),
    "precision_at_3_upper": ("share", "the same with unjudged results counted as related (equal when all judged)"),
    "ndcg_at_5": ("", "graded nDCG@5 from human grades 0/1/2 (trec ndcg_cut_5)"),
    "judged_coverage_top3": ("share", "top-3 results with a usable (not stale) human judgment"),
    "judged_coverage_top5": ("share", "top-5 results with a usable (not stale) human judgment"),
    "unjudged_results": ("results", "results of the top k nobody judged (or judged only on older text)"),
    "stale_judgments": ("judgments", "judgments of chunks that are gone or whose text changed: not used"),
    # every notebook: what it asked of the embedding service (the bill)
    "embed_calls": ("calls", "embed requests this notebook sent to the embedding service (retries included)"),
    "embed_texts": ("texts", "texts those embed requests carried"),
    "embed_texts_cached": ("texts", "queries answered from the run's query cache instead of the service"),
}

_SUFFIX_UNITS = (("_bytes", "bytes"), ("_qps", "queries/s"), ("_pct", "%"), ("_share", "share"), ("_s", "s"))
_TIMINGS = ("embed_ms", "search_ms", "execution_time_ms", "call_ms", "concurrent_call_ms")


def unit_of(name: str) -> str:
    """The unit of metric ``name`` ("" when it has none)."""
    if name in METRICS:
        return METRICS[name][0]
    if "_ms" in name:
        return "ms"
    return next((unit for suffix, unit in _SUFFIX_UNITS if name.endswith(suffix)), "")


def definition_of(name: str) -> str:
    """One sentence saying what metric ``name`` measures ("" when it is not in the glossary)."""
    if name in METRICS:
        return METRICS[name][1]
    for timing in _TIMINGS:
        if name.startswith(timing + "_p"):
            what = {"embed_ms": "embedding the question", "search_ms": "the Qdrant query",
                    "execution_time_ms": "embedding plus query", "call_ms": "the whole search call",
                    "concurrent_call_ms": "a search call under concurrency"}[timing]
            return f"{name.rsplit('_', 1)[1]} percentile of the time for {what}"
    if name.endswith("_throughput_qps"):
        return "searches completed per second"
    return ""
