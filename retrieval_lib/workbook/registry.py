"""The notebooks of the workbook, each described once.

A record says what a notebook is for (its question and the specification codes it answers), the family of its
check (the check is the module named like the notebook in that folder of :mod:`retrieval_lib.checks`), the
parameters its ``parameters`` cell declares, whether it measures the embedding service itself (and so never reads
the run's query cache), the CLI command that runs the same check alone, and what it will ask of the embedding
service (:attr:`NotebookSpec.plan`, which ``plan`` and the run's prefetch read).

Adding a notebook means adding a record here and the notebook file; ``tests/workbook/test_registry.py`` checks that
every numbered notebook on disk has a record, every record a notebook, and that a record's parameters are the
ones its notebook declares. Nothing else in the package writes a notebook's number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from retrieval_lib.collection.inspect import MODEL_SAMPLE
from retrieval_lib.errors import ValidationError
from retrieval_lib.params import load_topics
from retrieval_lib.retrievers import team_retriever

__all__ = ["NotebookSpec", "NotebookPlan", "PlanInputs", "NOTEBOOKS", "notebook_spec", "spec_for_stem"]


@dataclass
class NotebookPlan:
    """What one notebook will ask of the embedding service.

    Attributes:
        queries: query texts it asks through the run's cache (prefetched before the run, so 0 calls here).
        calls, texts: requests it sends itself (the declared, uncached ones) and the texts they carry.
        formula: how ``calls`` follows from the parameters, in words.
        service_calls: requests the service under test makes with its own embedder (08 only).
        conditional: calls made only in a stated case (09's diagnosis when its gate fails); not in ``calls``.
        known: False for a notebook this workbook does not know (its calls are not predicted).
    """

    notebook: str
    queries: list[str] = field(default_factory=list)
    calls: int = 0
    texts: int = 0
    formula: str = "no embedding"
    service_calls: int = 0
    conditional: str = ""
    known: bool = True


class PlanInputs(Protocol):
    """What a notebook's plan reads besides its parameters: the collection and the parameter files.

    :mod:`retrieval_lib.cli.commands.plan` implements it; reading the collection embeds nothing.
    """

    def headings(self, per_file: int) -> list[str]: ...
    def probe_queries(self, sample: int, seed: int) -> list[str]: ...
    def golden(self, path: str, *, negatives: bool = True) -> list[str]: ...
    def golden_count(self, path: str) -> int: ...
    def query_sets(self, path: str, *names: str) -> list[str]: ...
    def language_questions(self, path: Any) -> int: ...
    def calls_for(self, texts: int) -> int: ...
    def calls_text(self, texts: int) -> str: ...


PlanFn = Callable[[NotebookPlan, Mapping[str, Any], PlanInputs], None]


def _nothing(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    """No embedding at all."""


@dataclass(frozen=True)
class NotebookSpec:
    """One notebook of the workbook.

    Attributes:
        stem: its file name without ``.ipynb``, e.g. ``"03_source_coverage"``; ``name`` is the part after the
            number, ``number`` the number.
        question: the question it answers (its report's title).
        codes: the specification codes it answers (see :mod:`retrieval_lib.workbook.specs`).
        params: the parameters its ``parameters`` cell declares (``run_dir`` included).
        bypass: why it measures the embedding service itself, when it does: it then never reads the run's cache.
        command: the CLI command that runs the same check alone, if any.
        plan: fills in its :class:`NotebookPlan` from its parameter values.
        family: the folder of :mod:`retrieval_lib.checks` its check lives in (``"collection"``): its check is the
            module named like the notebook there (:attr:`module`), with one entry ``run(ctx, **params)``
            (:mod:`retrieval_lib.workbook.check`), which ``python -m retrieval_lib check NAME`` runs alone.
    """

    stem: str
    question: str
    codes: tuple[str, ...]
    params: tuple[str, ...]
    bypass: str | None = None
    command: str | None = None
    plan: PlanFn = _nothing
    family: str = ""

    @property
    def module(self) -> str:
        """Its check's module (``"retrieval_lib.checks.collection.chunk_quality"``), or "" when it has none."""
        return f"retrieval_lib.checks.{self.family}.{self.name}" if self.family else ""

    @property
    def number(self) -> str:
        return self.stem.split("_", 1)[0]

    @property
    def name(self) -> str:
        return self.stem.split("_", 1)[1]


# --------------------------------------------------------------------------- each notebook's embed plan

def _plan_holdings(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    s = MODEL_SAMPLE
    n.calls, n.texts = x.calls_for(s), s
    n.formula = f"{s} stored chunks re-embedded as documents to check the model, {x.calls_text(s)} (never cached)"
    n.conditional = f"+ {x.calls_for(s)} per other model tried when the configured one does not match"


def _plan_query(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = list(v["queries"])


def _plan_scores(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = x.query_sets(v["query_sets"], "in_domain", "out_of_domain")


def _plan_coverage(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = x.headings(int(v["headings_per_file"])) + x.golden(v["golden_set"], negatives=False)
    topics = load_topics(v.get("topics"), primary_query=v.get("primary_query"), primary_prefix=v.get("primary_prefix"))
    n.queries += [t.topic for t in topics.topics]


def _plan_reach(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = x.headings(int(v["headings_per_file"])) + x.golden(v["golden_set"], negatives=False)


def _plan_consistency(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    q, r = len(v["consistency_queries"]), int(v["repeats"])
    langs = x.language_questions(v.get("language_queries"))
    n.calls = q * r + x.calls_for(q) + q + x.calls_for(langs)
    n.texts = q * r + q + q + langs
    n.formula = (f"{q} queries x {r} repeats + {x.calls_text(q)} search_many + {q} on a fresh client "
                 f"+ {x.calls_text(langs)} for {langs} language questions (service measured: no cache)")


def _plan_golden(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = x.golden(v["golden_set"])


def _plan_latency(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    q = len(x.query_sets(v["query_sets"], "in_domain", "out_of_domain"))
    r, conc = int(v["latency_rounds"]), int(v["concurrent_queries"])
    n.calls = n.texts = 1 + q * r + conc
    n.formula = f"1 warm-up + {q} queries x {r} rounds + {conc} concurrent (service timed: no cache)"


def _plan_api(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    q, r, rounds = x.golden_count(v["golden_set"]), int(v["api_repeats"]), int(v["api_latency_rounds"])
    own = not v.get("api_url")
    n.calls = n.texts = (rounds + 1) * q if own else 0
    n.service_calls = q + 2 + q * r + sum(int(c) for c in v["api_concurrency"]) + rounds * q
    n.formula = (f"library reference {rounds} rounds x {q} + {q} rankings" if own else "no library reference") \
        + (f"; the service: {q} + 2 top_k + {q} x {r} repeats + {'+'.join(map(str, v['api_concurrency']))} "
           f"concurrent + {rounds} x {q} timed, with its own embedder")


def _plan_contract(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    s = int(v["contract_sample"])
    n.queries = x.probe_queries(s, int(v["contract_seed"]))
    n.calls, n.texts = x.calls_for(s), s
    n.formula = f"{s} stored chunks re-embedded as documents, {x.calls_text(s)} (documents are never cached)"
    n.conditional = ("+ more when a cosine is low: the content re-embedded alone, then the diagnosis re-embeds the "
                     "worst under each of the provider's input types")


def _plan_chunks(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = list(dict.fromkeys(x.golden(v["golden_set"], negatives=False)
                                   + x.headings(int(v["headings_per_file"])) + list(v.get("queries") or [])))


def _plan_book(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    if v.get("golden_set"):
        n.queries = x.golden(v["golden_set"], negatives=False)
        n.formula = "no embedding of its own"
        n.conditional = ("the golden and extra queries (05's, prefetched: the run's cache answers them), asked only "
                         "when a source is gone from the book: do they still retrieve its chunks?")


def _plan_side_by_side(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    # the kernel's rule (retrievers.team_retriever): plan_run puts RETRIEVER_SPEC in `retriever` when the profile
    # names none
    if team_retriever(v) is None:
        n.formula = "no retriever of the team's (profile or RETRIEVER_SPEC): nothing to compare, nothing asked"
        return
    n.queries = x.golden(v["golden_set"], negatives=False)
    n.formula = "the golden and extra queries, each asked of the collection once (the team's retriever embeds its own)"
    n.conditional = ("+ the questions embedded as documents, when a retriever of the team's returns scores and chunk "
                     "ids this collection holds (its query embedding is checked)")


def _plan_judgments(n: NotebookPlan, v: Mapping[str, Any], x: PlanInputs) -> None:
    n.queries = x.query_sets(v["query_sets"], v["judged_query_set"]) + x.golden(v["golden_set"])


# --------------------------------------------------------------------------- the records

NOTEBOOKS: tuple[NotebookSpec, ...] = (
    NotebookSpec(
        "00_collection", "What does this collection hold?", ("seed 004",), ("run_dir",),
        command="inspect", plan=_plan_holdings, family="collection"),
    NotebookSpec(
        "01_query", "Does a question bring back the right chunks, with full metadata?",
        ("seed 000 US1", "seed 000 US2", "seed 000 US4", "seed 000 FR-007"),
        ("queries", "top_k", "similarity_threshold", "source_prefix", "section", "no_match_threshold", "run_dir"),
        command="search", plan=_plan_query, family="retrieval"),
    NotebookSpec(
        "02_score_distributions",
        "Do in-domain and out-of-domain queries separate by score, and where should the threshold sit?",
        ("seed 000 SC-008", "seed 000 SC-001", "seed 004"),
        ("query_sets", "top_k", "candidate_threshold", "min_separation", "run_dir"), plan=_plan_scores,
        family="retrieval"),
    NotebookSpec(
        "03_source_coverage", "Can every source file be reached by a query, and do queries land in the right module?",
        ("seed 000 SC-003", "seed 000 SC-007"),
        ("golden_set", "coverage_top_k", "min_reachable_share", "headings_per_file", "primary_query",
         "primary_prefix", "topics", "min_primary_share", "run_dir"), plan=_plan_coverage, family="retrieval"),
    NotebookSpec(
        "04_consistency", "Does the same query always return the same ranking?",
        ("seed 000 SC-004", "seed 003 SC-005"),
        ("consistency_queries", "repeats", "top_k", "score_tolerance", "language_queries",
         "min_cross_lingual_jaccard", "run_dir"),
        bypass="repeat-consistency: every repeat, the fresh client and the search_many pass must each embed the "
               "query again, or the check would compare a cached vector with itself",
        plan=_plan_consistency, family="stability"),
    NotebookSpec(
        "05_golden_set", "Does retrieval pass the golden set (known queries, negatives)?",
        ("seed 004", "seed 003 SC-003", "seed 000 FR-007"),
        ("golden_set", "min_metadata_completeness", "book_docs", "book_sitemap", "book_base_url", "book_route_base",
         "run_dir"), plan=_plan_golden, family="retrieval"),
    NotebookSpec(
        "06_latency", "How fast is retrieval, and does it meet the latency and concurrency targets?",
        ("seed 000 SC-002", "seed 001", "seed 003 SC-008"),
        ("query_sets", "latency_rounds", "latency_p95_target_ms", "concurrent_queries", "concurrency",
         "concurrent_timeout_s", "top_k", "score_tolerance", "run_dir"),
        bypass="latency timings: every timed search, the warm-up and the concurrent run must call the embedding "
               "service, or the timings would measure a dictionary lookup",
        plan=_plan_latency, family="stability"),
    NotebookSpec(
        "07_collection_health", "Is the collection itself sound?", ("seed 004", "seed 000 FR-012"),
        ("min_points", "max_duplicate_share", "min_metadata_completeness", "run_dir"), command="stats",
        family="collection"),
    NotebookSpec(
        "08_api", "Does the retrieval API behave as its specification says?",
        ("seed 003", "seed 003 SC-001", "seed 003 SC-004", "seed 003 SC-005", "seed 003 SC-006", "seed 003 SC-008",
         "seed 003 FR-012"),
        ("api_url", "golden_set", "api_repeats", "api_concurrency", "api_latency_rounds", "api_max_overhead_ms",
         "metadata_table", "run_dir"),
        bypass="the in-process reference timings of the API check measure the library's own search path",
        command="serve", plan=_plan_api, family="service"),
    NotebookSpec(
        "09_embedding_contract", "Does the configured embedder still make the vectors the collection holds?",
        ("seed 000 FR-012",),
        ("contract_sample", "contract_seed", "top_k", "contract_min_cosine", "max_self_retrieval_drop",
         "run_dir"), command="probe", plan=_plan_contract, family="collection"),
    NotebookSpec(
        "10_reachability",
        "Which chunks can retrieval never return, which crowd every answer, and which files are off-topic?",
        ("seed 000 SC-003",),
        ("golden_set", "coverage_top_k", "headings_per_file", "reach_top_k", "reach_max_full", "reach_sample_size",
         "reach_seed", "reach_reverse_depth", "max_antihub_share", "max_nk_skewness", "offtopic_max_z",
         "max_offtopic_files", "run_dir"),
        command="reach", plan=_plan_reach, family="collection"),
    NotebookSpec(
        "11_ann_recall", "Does the HNSW index return what exact search would?",
        ("issue 12: ANN against exact", "seed 004 CollectionStats"),
        ("ann_top_k", "ann_queries", "ann_slice_queries", "ann_hnsw_ef", "ann_seed", "ann_min_recall",
         "ann_min_recall_p5", "run_dir"), command="ann", family="collection"),
    NotebookSpec(
        "12_chunk_quality", "Can the model read every chunk, and do fragments win?", ("seed 001",),
        ("golden_set", "headings_per_file", "queries", "fragment_min_length", "fragment_max_heading_share",
         "max_unseen_share", "max_fragment_share", "max_fragment_win_rate", "run_dir"),
        command="chunks", plan=_plan_chunks, family="collection"),
    NotebookSpec(
        "13_judgments", "Are the top results relevant, as judged by a person (SC-006)?",
        ("seed 000 SC-006", "seed 000 US4"),
        ("judgments", "agreement_files", "query_sets", "judged_query_set", "judged_top_k", "min_relevant_grade",
         "min_precision_at_3", "min_judged_coverage", "judge", "golden_set", "run_dir"), plan=_plan_judgments,
        family="retrieval"),
    NotebookSpec(
        "14_compare", "Did retrieval get worse than the previous run, by more than noise?", (),
        ("baseline_run", "candidate_run", "compare_alpha", "compare_min_effect", "run_dir"), command="compare",
        family="comparison"),
    NotebookSpec(
        "15_side_by_side", "Does the chatbot retrieve what the collection holds?",
        ("issue 32: the retrieval the chatbot runs",),
        ("golden_set", "top_k", "compare_alpha", "book_docs", "book_sitemap", "book_base_url", "book_route_base",
         "run_dir"), plan=_plan_side_by_side, family="retrieval"),
    NotebookSpec(
        "16_book", "Does the collection hold the book as it is now?", ("issue 33: the book is the source of truth",),
        ("book_docs", "book_sitemap", "book_base_url", "book_route_base", "golden_set", "changed_max_share",
         "thin_min_coverage", "max_missing_pages", "max_gone_sources", "near_duplicate_cosine", "near_duplicate_top_k",
         "max_near_duplicate_share", "run_dir"), command="book", plan=_plan_book, family="collection"),
)

_BY_NAME = {s.name: s for s in NOTEBOOKS}
_BY_STEM = {s.stem: s for s in NOTEBOOKS}


def notebook_spec(name: str) -> NotebookSpec:
    """The record of the notebook called ``name`` (its stem without the number, e.g. ``"compare"``).

    Raises:
        ValidationError: no notebook has that name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValidationError(f"no notebook is called {name!r} (notebooks: {', '.join(_BY_NAME)})",
                              field="notebook") from None


def spec_for_stem(stem: str) -> NotebookSpec | None:
    """The record of the notebook file ``stem`` (e.g. ``"03_source_coverage"``), None for one not registered."""
    return _BY_STEM.get(stem)
