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

A golden set is written with the site's routes; a collection may name its pages by file path only
(``module-01-ros2/08-kinematics-and-inverse-kinematics.md``, team #9). Where the profile names the book
(``book_docs``, or ``book_sitemap``), a pattern also matches a source whose page's *route* in the book matches it
(:class:`BookRoutes`: the book check's mapping of sources onto pages, :func:`retrieval_lib.book.map_sources`, and
each page's route as the book gives it; no route rule of its own). Without a book, a set of route patterns over a
collection of file paths is not applicable with the reason naming ``book_docs``, never called "another book".
Negatives are judged on their own and never counted as passes.

IR metrics come from pytrec_eval (trec_eval), computed at page level: a
query's run is its distinct pages in rank order; relevant pages are every
page of the collection that matches one of its patterns.

- hit@k (trec ``success_k``) = 1 if a relevant page is in the top k, else 0
- MRR (trec ``recip_rank``) = mean over queries of 1 / rank of the first relevant page
- nDCG@k (trec ``ndcg_cut_k``) = DCG@k / IDCG@k with DCG@k = Σ_{i≤k} rel_i / log2(i + 1)

The qrels are owned here: :func:`relevant_pages` decides which pages of the
collection a query's patterns name; each :class:`QueryOutcome` carries them and
:func:`trec_qrels` gives them in TREC form (what the metrics used).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from retrieval_lib.book import BookRoutes, book_routes
from retrieval_lib.checks.collection.collection_health import PayloadScan, record_completeness, scan_payloads
from retrieval_lib.checks.gates import GOLDEN_NEGATIVES, GOLDEN_PASSES, HEALTH_COMPLETENESS
from retrieval_lib.errors import ConfigurationError, DocumentError
from retrieval_lib.models import SearchResponse
from retrieval_lib.params import GoldenQuery, GoldenSet, NegativeQuery, load_golden_set
from retrieval_lib.retrievers.as_search import rank_stand_in
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.check import NotApplicable
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.runfiles import write_run

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "GoldenSetCheck", "QueryOutcome", "ValidationReport", "evaluate_golden", "matches", "url_matches",
           "relevant_pages", "profile_routes", "route_names", "routes_unread"]

#: The gates this check records.
GATES = (GOLDEN_PASSES, GOLDEN_NEGATIVES, HEALTH_COMPLETENESS)

#: The stand-in page a query with no relevant page gets in the qrels: trec_eval skips a query without
#: relevant documents, which would lift the means; with it, such a query scores 0.
NO_RELEVANT_PAGE = "__no_relevant_page_in_collection__"


def _under(value: str, pattern: str) -> bool:
    """``value`` is ``pattern`` or lies below it, segment-wise."""
    stem = pattern.rstrip("/")
    return bool(stem) and (value.rstrip("/") == stem or value.startswith(stem + "/"))


def url_matches(url: str, pattern: str, base: Sequence[str] = ()) -> bool:
    """True when the URL, or its path, is the pattern's page or lies below it; or its path does once the first
    segments of ``base`` are taken off (the site's base path, :func:`site_base`)."""
    path = urlsplit(url).path
    if _under(path, pattern) or _under(url, pattern):
        return True
    parts = path.strip("/").split("/")
    for k in range(1, min(len(base), len(parts)) + 1):
        if parts[k - 1] != base[k - 1]:
            break
        if _under("/" + "/".join(parts[k:]), pattern):
            return True
    return False


def site_base(pages: Iterable[str]) -> tuple[str, ...]:
    """The path segments every page URL starts with: the site's base path and route base
    (``/physical-ai-book/docs`` for a Docusaurus site on GitHub Pages), empty where pages are files or share none.

    A golden set is written against the site's routes (``/docs/module-01-ros2/urdf``) or its pages' own paths
    (``/module-01-ros2/urdf``); the collection holds the URLs the site serves, under its base path. A pattern
    matches a URL whose path matches it once some of these shared segments are taken off: only segments every
    page has, so a pattern never matches a page of another section.
    """
    paths = [urlsplit(u).path.strip("/").split("/") for u in pages if "://" in u or u.startswith("/")]
    if not paths:
        return ()
    common: list[str] = []
    for segments in zip(*(p[:-1] for p in paths)):  # never a page's own last segment
        if len(set(segments)) != 1:
            break
        common.append(segments[0])
    return tuple(common)


def profile_routes(view: Any, collection: str, *, book_docs: str | None, book_sitemap: str | None,
                   book_base_url: str | None = None,
                   book_route_base: str | None = None) -> tuple[BookRoutes | None, str]:
    """The book's routes where the profile names the book (``book_docs``: a folder, ``"sample_book"`` the one in the
    package; or ``book_sitemap``) and ""; (None, "") where it names none; (None, why) where it cannot be read (the
    check goes on with the sources alone, and says why)."""
    from retrieval_lib.book import resolve_docs

    docs, sitemap = resolve_docs(book_docs), book_sitemap or None
    if not docs and not sitemap:
        return None, ""
    try:
        return book_routes(view, collection, docs=docs, sitemap=sitemap, base_url=book_base_url or None,
                           route_base=book_route_base or None), ""
    except (ConfigurationError, DocumentError) as exc:
        return None, str(exc)


def route_names(routes: BookRoutes | None, values: Iterable[str | None], pattern: str) -> bool:
    """True when the book (``routes``) puts the source named by ``values`` (its URL, file...) on a page whose route
    is the pattern's page or lies below it: the one rule by which a golden pattern names a source through the book
    (notebooks 05, 15 and the book check)."""
    if routes is None:
        return False
    route = routes.route(*values)
    return route is not None and url_matches(route, pattern, routes.base)


def matches(result: Any, pattern: str, base: Sequence[str] = (), routes: BookRoutes | None = None) -> bool:
    """True when the result's URL (or URL path) or source file is the pattern's page or lies below it (``result``:
    anything with ``source_url`` and ``source_file``, a search result or a side-by-side row); ``base``: as for
    :func:`url_matches`; ``routes``: the book's, when the profile names it (:func:`route_names`)."""
    return (url_matches(result.source_url or "", pattern, base) or _under(result.source_file or "", pattern)
            or route_names(routes, (result.source_url, result.source_file), pattern))


def collection_pages(store: Any, collection: str) -> list[str]:
    """The collection's pages as a result names them (its ``source_url``, else its ``source_file``: the page of a
    result in the run file): the distinct source URLs, or the distinct source files where no chunk has a URL
    (team #3 names its pages ``module/page`` only)."""
    return list(store.distinct_values(collection, "source_url")) or list(store.distinct_values(collection,
                                                                                                "source_file"))


def relevant_pages(patterns: Iterable[str], pages: Iterable[str], base: Sequence[str] = (),
                   routes: BookRoutes | None = None) -> tuple[str, ...]:
    """The pages (:func:`collection_pages`) that one of ``patterns`` names: a query's relevant pages, in page order;
    ``base``: as for :func:`url_matches`; ``routes``: the book's (:func:`route_names`)."""
    wanted = list(patterns)
    return tuple(u for u in pages if any(url_matches(u, p, base) or route_names(routes, (u,), p) for p in wanted))


@dataclass
class QueryOutcome:
    """How one golden or negative query fared.

    ``threshold`` is the query's ``min_score`` (golden, extra) or ``max_score``
    (negative); ``relevant_pages`` are its qrels (empty for a negative).
    """

    query: str
    kind: str  # "golden", "extra" or "negative"
    passed: bool
    reason: str
    first_relevant_rank: int | None = None
    best_relevant_score: float | None = None
    top_score: float | None = None
    top_source: str | None = None
    threshold: float | None = None
    expected_url_patterns: tuple[str, ...] = ()
    relevant_pages: tuple[str, ...] = ()


def trec_qrels(outcomes: Sequence[QueryOutcome]) -> dict[str, dict[str, int]]:
    """TREC qrels of the golden queries among ``outcomes``: ``{"q0": {page: 1, ...}, ...}``.

    A query without a relevant page in the collection gets :data:`NO_RELEVANT_PAGE`, so it counts (as 0).
    """
    golden = [o for o in outcomes if o.kind == "golden"]
    return {f"q{i}": {page: 1 for page in (o.relevant_pages or (NO_RELEVANT_PAGE,))} for i, o in enumerate(golden)}


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
    #: the responses judged, in ``outcomes`` order (what the record keeps as the run file)
    responses: list[SearchResponse] = field(default_factory=list, repr=False)
    #: the collection's pages the patterns were judged against (:func:`collection_pages`)
    pages: list[str] = field(default_factory=list, repr=False)
    #: the book's routes the patterns were also judged against (None: no book named, or it could not be read)
    routes: BookRoutes | None = field(default=None, repr=False)
    #: why the book the profile names could not be used ("" when it was, or none was named)
    book_problem: str = ""

    def of_kind(self, kind: str) -> list[QueryOutcome]:
        """The outcomes of one kind (``"golden"``, ``"extra"`` or ``"negative"``), in golden-set order."""
        return [o for o in self.outcomes if o.kind == kind]


def _judge(q: GoldenQuery, response: SearchResponse, kind: str, pages: Sequence[str],
           base: Sequence[str] = (), routes: BookRoutes | None = None) -> QueryOutcome:
    top = response.results[0] if response.results else None
    relevant = [(rank, r) for rank, r in enumerate(response.results, 1)
                if any(matches(r, p, base, routes) for p in q.expected_url_patterns)]
    rank = relevant[0][0] if relevant else None
    unscored = rank_stand_in([response])  # rank stand-ins: the rank is all there is to judge, min_score is not
    best = round(max(r.similarity_score for _, r in relevant), 4) if relevant and not unscored else None
    passed = bool(relevant) if unscored else any(r.similarity_score >= q.min_score for _, r in relevant)
    reason = (f"expected page at rank {rank}" + (f" (min_score not applied: {unscored})" if unscored else "")
              if passed else
              f"expected page at rank {rank} but its score {best:.3f} < min_score {q.min_score:g}" if relevant else
              f"no expected page in the top {response.top_k} (top: {top.source_file if top else None})")
    return QueryOutcome(query=q.query, kind=kind, passed=passed, reason=reason, first_relevant_rank=rank,
                        best_relevant_score=best,
                        top_score=round(top.similarity_score, 4) if top and not unscored else None,
                        top_source=top.source_file if top else None, threshold=q.min_score,
                        expected_url_patterns=tuple(q.expected_url_patterns),
                        relevant_pages=relevant_pages(q.expected_url_patterns, pages, base, routes))


def _judge_negative(neg: NegativeQuery, response: SearchResponse) -> QueryOutcome:
    top = response.results[0] if response.results else None
    if top is not None and (unscored := rank_stand_in([response])):  # results, and no score to hold to max_score
        return QueryOutcome(query=neg.query, kind="negative", passed=False, threshold=neg.max_score,
                            reason=f"not judged ({unscored}): {len(response.results)} results",
                            top_source=top.source_file)
    ok = top is None or all(r.similarity_score < neg.max_score for r in response.results)
    reason = ("no results" if top is None else
              f"top score {top.similarity_score:.3f} {'<' if ok else '>='} max_score {neg.max_score:g}")
    return QueryOutcome(query=neg.query, kind="negative", passed=ok, reason=reason,
                        top_score=round(top.similarity_score, 4) if top else None,
                        top_source=top.source_file if top else None, threshold=neg.max_score)


def _ir_metrics(outcomes: list[QueryOutcome], responses: list[SearchResponse], k: int) -> tuple[float, float, float]:
    import pytrec_eval

    qrels = trec_qrels(outcomes)
    run: dict[str, dict[str, float]] = {}
    for i, response in enumerate(responses):
        pages: list[str] = []
        for r in response.results:
            page = r.source_url or r.source_file or r.point_id
            if page not in pages:
                pages.append(page)
        # trec_eval ranks by score and breaks ties by id, so rank order is encoded in the score.
        run[f"q{i}"] = {page: float(len(pages) - rank) for rank, page in enumerate(pages)}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"success_{k}", "recip_rank", f"ndcg_cut_{k}"})
    per_query = evaluator.evaluate(run)
    n = len(responses)

    def mean(measure: str) -> float:
        return sum(per_query.get(f"q{i}", {}).get(measure, 0.0) for i in range(n)) / n if n else math.nan

    return mean(f"success_{k}"), mean("recip_rank"), mean(f"ndcg_cut_{k}")


def evaluate_golden(retriever: Retriever, golden: GoldenSet, *, vector_count: int,
                    metadata_completeness: float, routes: BookRoutes | None = None,
                    book_problem: str = "") -> ValidationReport:
    """Run a golden set and judge it by seed 004's criteria.

    ``passed`` is True when at least ``required_passes`` golden queries pass
    AND every negative passes. Extra queries and IR metrics are reported only.
    Each golden and extra outcome carries its relevant pages (the qrels), found
    among the collection's pages (:func:`collection_pages`); with ``routes`` (the
    book's, :func:`book_routes`) a pattern also names a page by its route.
    ``book_problem``: why the profile's book could not be read (said where it matters).
    """
    asked = [(q, "golden") for q in golden.queries] + [(q, "extra") for q in golden.extra_queries]
    responses = retriever.search_many([q.query for q, _ in asked] + [n.query for n in golden.negatives],
                                      top_k=golden.top_k)
    pages = collection_pages(retriever.store, retriever.collection)
    base = site_base(pages)
    outcomes = [_judge(q, r, kind, pages, base, routes) for (q, kind), r in zip(asked, responses)]
    outcomes += [_judge_negative(n, r) for n, r in zip(golden.negatives, responses[len(asked):])]
    gold = [o for o in outcomes if o.kind == "golden"]
    negatives_passed = sum(o.passed for o in outcomes if o.kind == "negative")
    hit, mrr, ndcg = _ir_metrics(outcomes, responses[:len(gold)], golden.top_k)
    passed_queries = sum(o.passed for o in gold)
    return ValidationReport(
        passed=passed_queries >= golden.required_passes and negatives_passed == len(golden.negatives),
        total_queries=len(gold), passed_queries=passed_queries, required_passes=golden.required_passes,
        failed_queries=[{"query": o.query, "reason": o.reason} for o in gold if not o.passed],
        vector_count=vector_count, metadata_completeness=metadata_completeness,
        negatives_total=len(golden.negatives), negatives_passed=negatives_passed,
        hit_at_k=hit, mrr=mrr, ndcg_at_k=ndcg, top_k=golden.top_k, outcomes=outcomes, responses=responses,
        pages=pages, routes=routes, book_problem=book_problem,
    )


def golden_hint(v: ValidationReport) -> str:
    """What to change when too few golden queries pass, computed from the outcomes.

    When the expected pages were found but scored below ``min_score``, the hint
    names the ``min_score`` that would let ``required_passes`` queries pass;
    when pages were missing from the top k, it names those queries.
    """
    gold = v.of_kind("golden")
    failed = [o for o in gold if not o.passed]
    short = v.required_passes - v.passed_queries
    below = sorted((o for o in failed if o.best_relevant_score is not None),
                   key=lambda o: -(o.best_relevant_score or 0.0))
    missing = [o.query for o in failed if o.best_relevant_score is None]
    if short > 0 and len(below) >= short:
        needed = below[short - 1].best_relevant_score or 0.0
        threshold, highest = below[0].threshold, below[0].best_relevant_score or 0.0
        return (f"min_score {threshold:g} is above the failing golden hits (highest {highest:.3f}): "
                f"lower `min_score` to {math.floor(needed * 1000) / 1000:.3f} in your golden set file to let "
                f"{v.required_passes} pass, or improve retrieval for those queries")
    if missing:
        shown = ", ".join(repr(q) for q in missing[:3])
        return (f"no expected page in the top {v.top_k} for {shown}: check their expected_url_patterns against the "
                "collection's source_url paths, or whether those pages were ingested")
    return "read each failed query's reason in the outcomes table"


def _file_pages(pages: Iterable[str]) -> list[str]:
    """The pages named by a file path, not a URL or a site route."""
    return [p for p in pages if "://" not in p and (not p.startswith("/") or p.lower().endswith((".md", ".mdx")))]


def routes_unread(pages: Sequence[str], patterns: Iterable[str], routes: BookRoutes | None,
                  book_problem: str = "") -> str | None:
    """Why patterns written as the site's routes could not be put on a collection that names its pages by file
    path, where no book gave the files' routes (``routes`` None); None where that is not the case. The reason says
    what to do: name the book (``book_docs``)."""
    files = _file_pages(pages)
    routed = [p for p in patterns if p.startswith("/")]
    if routes is not None or not files or len(files) < len(pages) or not routed:
        return None
    why = (f"the book the profile names could not be read ({book_problem}); fix it" if book_problem else
           "name the book in the profile (book_docs: its docs folder, or book_sitemap)")
    return (f"this collection names its pages by file path ({files[0]}) and the golden set's expected_url_patterns "
            f"are the site's routes ({routed[0]}): no page could be matched without the book's routes; {why} so that "
            "each file is matched by its page's route")


def golden_absent(validation: ValidationReport) -> str | None:
    """Why the golden set cannot be judged on this collection, or None when it can: none was given; its patterns are
    routes and the collection's pages file paths, with no book to give their routes (:func:`routes_unread`); or
    none of its expected pages is in the collection (it describes another book)."""
    if not validation.total_queries and not validation.negatives_total:
        return ("no golden set for this book (golden_set is empty in the profile): write one, or draft one from "
                "the collection")
    gold = [o for o in validation.outcomes if o.kind == "golden"]
    if validation.total_queries and not any(o.relevant_pages for o in gold):
        unread = routes_unread(validation.pages, (p for o in gold for p in o.expected_url_patterns),
                               validation.routes, validation.book_problem)
        if unread:
            return f"none of the golden set's {validation.total_queries} queries could be judged: {unread}"
        through = (f" (its sources and, through the {validation.routes.book}, their pages' routes)"
                   if validation.routes else "")
        return (f"none of the golden set's {validation.total_queries} queries expects a page this collection "
                f"holds{through}: it describes another book, or its expected_url_patterns are wrong")
    return None


# --------------------------------------------------------------------------- tables
def golden_set_frame(validation: ValidationReport):
    """The golden set as judged: kind, query, patterns, threshold and the number of relevant pages (qrels)."""
    import pandas as pd

    rows = []
    for o in validation.outcomes:
        negative = o.kind == "negative"
        rows.append({"kind": o.kind, "query": o.query,
                     "expected_url_patterns": "(none: out of domain)" if negative
                     else ", ".join(o.expected_url_patterns),
                     "threshold": f"every score < {o.threshold:g}" if negative else f"score >= {o.threshold:g}",
                     "relevant_pages": len(o.relevant_pages)})
    return pd.DataFrame(rows)


def outcomes_frame(validation: ValidationReport, *, decimals: int = 3):
    """One row per query: verdict, reason, rank and scores (rounded to ``decimals``) and the top source."""
    import pandas as pd

    columns = ["kind", "query", "passed", "reason", "first_relevant_rank", "best_relevant_score", "top_score",
               "top_source"]
    frame = pd.DataFrame([{c: getattr(o, c) for c in columns} for o in validation.outcomes], columns=columns)
    frame["first_relevant_rank"] = frame["first_relevant_rank"].astype("Int64")
    return frame.round({"best_relevant_score": decimals, "top_score": decimals})


def ir_frame(validation: ValidationReport, *, decimals: int = 3):
    """hit@k, MRR and nDCG@k of the golden queries, rounded to ``decimals``."""
    import pandas as pd

    k = validation.top_k
    return pd.DataFrame({"metric": [f"hit@{k}", "MRR", f"nDCG@{k}"],
                         "value": [round(x, decimals) for x in (validation.hit_at_k, validation.mrr,
                                                                validation.ndcg_at_k)]})


def report_frame(validation: ValidationReport):
    """Seed 004's ValidationReport fields as text rows (``field``, ``value``)."""
    import pandas as pd

    failed = "; ".join(f"{f['query']}: {f['reason']}" for f in validation.failed_queries) or "none"
    values = {"passed": validation.passed, "total_queries": validation.total_queries,
              "passed_queries": validation.passed_queries, "failed_queries": failed,
              "vector_count": validation.vector_count,
              "metadata_completeness": round(validation.metadata_completeness, 2)}
    return pd.DataFrame({"field": list(values), "value": [str(x) for x in values.values()]})


@plain_figure
def scores_figure(validation: ValidationReport):
    """Top: each golden and extra query's best relevant score (0 when no expected page made the top k) against
    its ``min_score``; bottom: each negative's top score against its ``max_score``. Green passes."""
    from retrieval_lib.workbook.plots import BarPanel, threshold_bars

    positive = validation.of_kind("golden") + validation.of_kind("extra")
    negative = validation.of_kind("negative")
    return threshold_bars([
        BarPanel("golden / extra: best relevant score",
                 [f"{o.query} (extra)" if o.kind == "extra" else o.query for o in positive],
                 [o.best_relevant_score or 0.0 for o in positive], [o.threshold or 0.0 for o in positive],
                 [o.passed for o in positive], "min_score"),
        BarPanel("negatives: top score", [o.query for o in negative], [o.top_score or 0.0 for o in negative],
                 [o.threshold or 0.0 for o in negative], [o.passed for o in negative], "max_score")])


# --------------------------------------------------------------------------- notebook 05
def run(ctx: NotebookRun, *, golden_set: str, min_metadata_completeness: float, book_docs: str | None = None,
        book_sitemap: str | None = None, book_base_url: str | None = None,
        book_route_base: str | None = None) -> GoldenSetCheck | NotApplicable:
    """Notebook 05's check: metadata completeness over every point (a paged scan of the collection, which 07 reuses
    within a run), then every query of ``golden_set`` asked once of ``ctx.retriever`` and judged by seed 004.

    The answers are judged against the collection's pages: with only a team's retriever configured it is not
    applicable. Where the profile names the book (``book_docs`` or ``book_sitemap``, with ``book_base_url`` and
    ``book_route_base`` as notebook 16 reads them), a pattern also matches a source by its page's route
    (:class:`BookRoutes`).
    """
    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES, fill={"min_metadata_completeness": min_metadata_completeness})
    golden = load_golden_set(golden_set)
    scan = scan_payloads(ctx.store, ctx.collection, expected_model=ctx.collection_retriever.embedder.model,
                         run_dir=ctx.report.run_dir)
    routes, problem = profile_routes(ctx.store, ctx.collection, book_docs=book_docs, book_sitemap=book_sitemap,
                                     book_base_url=book_base_url, book_route_base=book_route_base)
    validation = evaluate_golden(ctx.retriever, golden, vector_count=ctx.store.count(ctx.collection),
                                 metadata_completeness=scan.metadata_completeness, routes=routes,
                                 book_problem=problem)
    return GoldenSetCheck(golden, validation, scan, min_metadata_completeness=min_metadata_completeness)


@dataclass
class GoldenSetCheck:
    """Notebook 05's result: the golden set, seed 004's ValidationReport of it, the payload scan, the bar."""

    golden: GoldenSet
    validation: ValidationReport
    scan: PayloadScan
    min_metadata_completeness: float

    def __str__(self) -> str:
        g, v, scan = self.golden, self.validation, self.scan
        return (f"golden set {g.name!r}: top_k {g.top_k}, required passes {g.required_passes} of {len(g.queries)} "
                f"golden queries; {len(g.extra_queries)} extra, {len(g.negatives)} negatives\n"
                f"{scan.points} points scanned ({v.vector_count} in the collection); {scan.complete_points} complete: "
                f"metadata completeness {scan.metadata_completeness:.2f}%")

    def tables(self) -> dict[str, Any]:
        """``golden_set`` (as judged), ``outcomes`` (per query), ``ir_metrics``, ``validation_report`` (seed 004)."""
        v = self.validation
        return {"golden_set": golden_set_frame(v), "outcomes": outcomes_frame(v, decimals=3),
                "ir_metrics": ir_frame(v, decimals=3), "validation_report": report_frame(v)}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The tables and the scores figure, then the gates, findings, metrics and the run file.

        Raises:
            ValidationError: ``min_metadata_completeness`` outside [0, 100].
        """
        for name, frame in self.tables().items():
            report.table(frame, name)
        unscored = rank_stand_in(self.validation.responses)  # rank stand-ins: no score to draw or judge
        if not unscored:
            report.figure(scores_figure(self.validation), "scores_vs_thresholds", show=show)
        # gates: at least required_passes golden queries pass; every negative passes; metadata completeness (from
        # the scan behind validation.metadata_completeness) >= min_metadata_completeness
        v, k, scan, golden = self.validation, self.validation.top_k, self.scan, self.golden
        gold, extra, negs = v.of_kind("golden"), v.of_kind("extra"), v.of_kind("negative")
        if v.book_problem:
            report.finding(f"the book the profile names could not be read, so patterns were matched against the "
                           f"sources alone: {v.book_problem}")
        absent = golden_absent(v)
        if absent:
            GOLDEN_PASSES.not_applicable(report, absent)
            GOLDEN_NEGATIVES.not_applicable(report, absent)
            record_completeness(report, scan, self.min_metadata_completeness)
            report.finding(f"golden set: {absent}")
            return
        GOLDEN_PASSES.record(
            report, v.passed_queries >= v.required_passes, fill={"required_passes": v.required_passes},
            value=v.passed_queries, threshold=v.required_passes, rule=">=", unit="queries", hint=golden_hint(v),
            detail=f"{v.passed_queries}/{len(gold)} golden queries found an expected page in the top {k} "
                   + (f"(min_score not applied: {unscored})" if unscored else "with score >= min_score")
                   + " (negatives not counted)",
            provenance=golden.provenance)
        unjudged = [o for o, r in zip(v.outcomes, v.responses)  # negatives answered with rank stand-ins
                    if o.kind == "negative" and r.results and rank_stand_in([r])]
        if unjudged:
            GOLDEN_NEGATIVES.not_applicable(report, f"{unscored}; {len(unjudged)} of {len(negs)} negatives got "
                                                    "results, with no score to hold to max_score")
        else:
            GOLDEN_NEGATIVES.record(
                report, v.negatives_passed == v.negatives_total, value=v.negatives_passed,
                threshold=v.negatives_total, rule="==", unit="negatives",
                hint="an out-of-domain query scored at or above its max_score: the collection holds text on that "
                     "topic, or the golden set file's max_score is too low for this embedder",
                detail=f"{v.negatives_passed}/{v.negatives_total} negatives empty or below max_score",
                provenance=golden.negatives_provenance, noun="negatives")
        record_completeness(report, scan, self.min_metadata_completeness)

        extra_passed = sum(o.passed for o in extra)
        report.finding(f"{v.passed_queries}/{len(gold)} golden queries passed (required {v.required_passes}); "
                       f"extra queries {extra_passed}/{len(extra)}; seed 004's pass criteria "
                       f"{'met' if v.passed else 'not met'}")
        scored = [o for o in gold + extra if o.best_relevant_score is not None and o.threshold is not None]
        if scored:
            low = min(scored, key=lambda o: (o.best_relevant_score or 0.0) - (o.threshold or 0.0))
            report.finding(f"smallest margin: {low.query!r} best relevant score {low.best_relevant_score:.3f} "
                           f"vs min_score {low.threshold:g}")
        for o in gold + extra:
            if not o.passed:
                report.finding(f"FAILED {o.kind} {o.query!r}: {o.reason}")
        if negs and unjudged:
            report.finding(f"{len(negs) - len(unjudged)}/{len(negs)} negatives got no result; {len(unjudged)} got "
                           f"results that cannot be judged ({unscored})")
        elif negs:
            worst = max(negs, key=lambda o: o.top_score or 0.0)
            report.finding(f"{v.negatives_passed}/{len(negs)} negatives returned nothing relevant; highest negative "
                           f"top score {worst.top_score or 0.0:.3f} ({worst.query!r}, max_score {worst.threshold:g})")
        report.finding(f"hit@{k} {v.hit_at_k:.3f}, MRR {v.mrr:.3f}, nDCG@{k} {v.ndcg_at_k:.3f} over {len(gold)} "
                       "golden queries")
        broad = [o for o in gold if len(o.relevant_pages) > 1]
        if v.ndcg_at_k < 1 and broad:
            report.finding(f"nDCG@{k} < 1 because {len(broad)} golden queries' patterns cover several pages ("
                           + ", ".join(f"{o.query!r}: {len(o.relevant_pages)}" for o in broad)
                           + f") that their top {k} does not all show")
        for name, value in (("golden_passed", v.passed_queries), ("golden_total", len(gold)),
                            ("required_passes", v.required_passes), ("extra_passed", extra_passed),
                            ("negatives_passed", v.negatives_passed), ("negatives_total", v.negatives_total),
                            ("hit_at_k", v.hit_at_k), ("mrr", v.mrr), ("ndcg_at_k", v.ndcg_at_k), ("top_k", k),
                            ("vector_count", v.vector_count), ("metadata_completeness", scan.metadata_completeness),
                            ("validation_report_passed", v.passed)):
            report.metric(name, value)
        if v.responses:  # the run file a later comparison reads (retrieval_lib.workbook.runfiles), page-level qrels
            write_run(report, v.responses, kinds=[o.kind for o in v.outcomes], top_k=k, qrels_level="source_url",
                      qrels={o.query: dict.fromkeys(o.relevant_pages or (NO_RELEVANT_PAGE,), 1) for o in gold + extra})
