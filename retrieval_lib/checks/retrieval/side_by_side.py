"""Side by side: does the team's retriever (their chatbot's endpoint or function) retrieve what the collection holds?

The same in-domain questions (a golden set's ``queries`` and ``extra_queries``, hand-written or drafted) go through
the team's retriever (:mod:`retrieval_lib.retrievers`: what answers a question for their chatbot) and through the
collection directly (:meth:`~retrieval_lib.search.Retriever.search_many`: one direct query per question). Per
question:

- overlap@k = |team top k ∩ collection top k| / k, the same chunk being the same chunk id where the team's result
  carries one the collection knows (its point id or its ``chunk_id``), else the same (source, text);
- rank shifts: team rank - collection rank of each chunk both returned;
- hit@k of each side against the golden pages (:func:`retrieval_lib.checks.retrieval.golden_set.matches`: the
  result's page is a pattern's page or lies below it; where the profile names the book, also by its page's route in
  the book, as notebook 05 reads patterns), and the paired test of the difference that ``compare`` uses
  (:func:`retrieval_lib.checks.statistics.paired_p_values`, ranx's paired t-test over the answered questions).

Then the differences get their names (:mod:`retrieval_lib.checks.retrieval._causes`): errors, empty or cut
answers, results without text or source, another query embedding, another order, a subset of sources. Each comes
with a small table of evidence; those that are faults have a gate.

Nothing is compared when no retriever is configured (``retriever: kind collection``, the default: the questions
already go to the collection) or when there is no golden set: every gate is then not applicable, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import retrieval_lib.checks.statistics as compare_stats
from retrieval_lib.book import BookRoutes
from retrieval_lib.checks.gates import SIDE_BY_SIDE_ERRORS, SIDE_BY_SIDE_HIT_RATE
from retrieval_lib.checks.retrieval import _views as views
from retrieval_lib.checks.retrieval._causes import name_causes
from retrieval_lib.checks.retrieval._pairs import (
    ALPHA,
    CAUSES,
    QueryPair,
    SideBySide,
    collection_side,
    same_chunk,
    team_side,
)
from retrieval_lib.checks.retrieval.golden_set import (
    collection_pages,
    matches,
    profile_routes,
    relevant_pages,
    routes_unread,
    site_base,
)
from retrieval_lib.models import SearchResponse
from retrieval_lib.params import GoldenQuery, GoldenSet, load_golden_set
from retrieval_lib.retrievers import Answer, QuestionRetriever

if TYPE_CHECKING:
    from retrieval_lib.search import Retriever
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "SideBySideResult", "compare_answers", "measure", "GATES"]

#: Why nothing is compared when the profile configures no retriever of the team's.
NO_RETRIEVER = ("no retriever is configured (retriever: kind collection, the default): the questions already go to "
                "the collection itself, so there is nothing to compare; set `retriever:` in the profile to your "
                "chatbot's HTTP endpoint or Python function")

#: The gates this check records, in the order it records them: the errors', the hit rate's, then each other cause's.
GATES = (SIDE_BY_SIDE_ERRORS, SIDE_BY_SIDE_HIT_RATE,
         *(gate for key, (_, gate) in CAUSES.items() if gate is not None and key != "errors"))


# --------------------------------------------------------------------------- the comparison

def _pair(q: GoldenQuery, kind: str, answer: Answer, response: SearchResponse, k: int,
          base: Sequence[str] = (), routes: BookRoutes | None = None) -> QueryPair:
    team, ours = team_side(answer), collection_side(response)
    pair = QueryPair(q.query, kind, tuple(q.expected_url_patterns), team, ours, k)
    if not team.failed:
        used: set[int] = set()
        for t in team.rows[:k]:
            for c in ours.rows[:k]:
                if c.rank not in used and same_chunk(t, c):
                    pair.matched.append((t.rank, c.rank))
                    used.add(c.rank)
                    break
        # golden.matches reads a result's source_url and source_file only: a row carries both under those names
        pair.team_hit = int(any(matches(r, p, base, routes) for r in team.rows[:k] for p in q.expected_url_patterns))
    pair.collection_hit = int(any(matches(r, p, base, routes) for r in ours.rows[:k]
                                  for p in q.expected_url_patterns))
    return pair


#: The one relevant document of a question in the paired test's runs: any result a golden pattern names.
_EXPECTED = "__golden_page__"


def _hit_test(pairs: Sequence[QueryPair], base: Sequence[str] = (),
              routes: BookRoutes | None = None) -> tuple[float, float, float | None]:
    """Mean hit@k of each side over the answered questions and the paired test's p (None under 2 questions).

    ranx gets page runs in which every result a golden pattern names counts as the one relevant document of its
    question (``hit_rate@k`` asks only whether one is in the top k), so the team's spelling of a URL does not matter
    as long as :func:`~retrieval_lib.checks.retrieval.golden_set.matches` names it.
    """
    answered = [p for p in pairs if p.team_hit is not None]
    if not answered:
        return math.nan, math.nan, None
    team = sum(p.team_hit or 0 for p in answered) / len(answered)
    ours = sum(p.collection_hit for p in answered) / len(answered)
    if len(answered) < 2:
        return team, ours, None
    deltas = [(p.team_hit or 0) - p.collection_hit for p in answered]
    if all(d == deltas[0] for d in deltas):
        # no spread at all: a t-test has no variance to weigh (ranx gives nan, read as p = 1); the difference is
        # then either nothing (p 1) or the same on every single question (p 0)
        return team, ours, 1.0 if deltas[0] == 0 else 0.0
    qrels = {f"q{i}": {_EXPECTED: 1} for i in range(len(answered))}
    runs: tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]] = ({}, {})
    for i, p in enumerate(answered):
        for run, side in zip(runs, (p.collection, p.team)):
            docs = list(dict.fromkeys(
                _EXPECTED if any(matches(r, pat, base, routes) for pat in p.patterns) else (r.page or f"rank {r.rank}")
                for r in side.rows[:p.k]))
            run[f"q{i}"] = {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
    metric = f"hit_rate@{answered[0].k}"
    return team, ours, compare_stats.paired_p_values(qrels, runs[0], runs[1], [metric])[metric]


def compare_answers(golden: GoldenSet, answers: Sequence[Answer], responses: Sequence[SearchResponse], *,
                    top_k: int, retriever: str = "", alpha: float = ALPHA, base: Sequence[str] = (),
                    routes: BookRoutes | None = None) -> SideBySide:
    """Pair the team's answers with the collection's, one per question of ``golden`` (its ``queries`` then its
    ``extra_queries``, in that order), and test hit@k (no cause yet); ``retriever``: the retriever in one line;
    ``base``: the site's base path segments (:func:`~retrieval_lib.checks.retrieval.golden_set.site_base`);
    ``routes``: the book's routes of the sources, where the profile names the book
    (:func:`~retrieval_lib.checks.retrieval.golden_set.profile_routes`).

    Raises:
        ValueError: the numbers of questions, answers and responses differ.
    """
    asked = [(q, "golden") for q in golden.queries] + [(q, "extra") for q in golden.extra_queries]
    if not (len(asked) == len(answers) == len(responses)):
        raise ValueError(f"{len(asked)} questions, {len(answers)} answers and {len(responses)} responses: "
                         "each question needs one answer from each side, in the golden set's order")
    pairs = [_pair(q, kind, a, r, top_k, base, routes) for (q, kind), a, r in zip(asked, answers, responses)]
    team, ours, p = _hit_test(pairs, base, routes)
    return SideBySide(retriever=retriever, pairs=pairs, top_k=top_k, team_hit_rate=team, collection_hit_rate=ours,
                      p_value=p, alpha=alpha, provenance=golden.provenance)


def not_applicable(reason: str, *, retriever: str = "", top_k: int = 5) -> SideBySide:
    """A comparison that cannot be made, and why (every gate not applicable)."""
    return SideBySide(retriever=retriever, pairs=[], top_k=top_k, absent=reason)


def measure(asker: QuestionRetriever, collection: Retriever, golden: GoldenSet, *, top_k: int = 5,
            alpha: float = ALPHA, routes: BookRoutes | None = None, book_problem: str = "") -> SideBySide:
    """Ask the golden set's in-domain questions (golden and extra queries; negatives are not asked) through the
    team's retriever (``asker``; of kind ``collection``: nothing to compare) and once through the collection's own
    retriever, and name the causes of every difference; ``alpha``: the paired test's significance; ``routes``: the
    book's routes of the sources (a pattern names a source by its page's route, as in notebook 05), and
    ``book_problem`` why the profile's book could not be read.

    Returns:
        A :class:`SideBySide`; its ``absent`` says why nothing was compared when it was not.
    """
    if asker.kind == "collection":
        return not_applicable(NO_RETRIEVER, top_k=top_k)
    described = str(asker.describe())
    if golden.absent or not (golden.queries or golden.extra_queries):
        return not_applicable("no golden set for this book (golden_set is empty in the profile): write one, or "
                              "draft one from the collection (`python -m retrieval_lib draft`)",
                              retriever=described, top_k=top_k)
    texts = [q.query for q in golden.queries] + [q.query for q in golden.extra_queries]
    answers = list(asker.ask_many(texts, top_k))
    responses = collection.search_many(texts, top_k=top_k)
    pages = collection_pages(collection.store, collection.collection)
    base = site_base(pages)
    study = compare_answers(golden, answers, responses, top_k=top_k, retriever=described, alpha=alpha, base=base,
                            routes=routes)
    if not any(p.collection_hit for p in study.pairs) and not any(relevant_pages(p.patterns, pages, base, routes)
                                                                  for p in study.pairs):
        unread = routes_unread(pages, (pat for p in study.pairs for pat in p.patterns), routes, book_problem)
        study.absent = (f"none of the golden set's {len(study.pairs)} questions could be judged: {unread}" if unread
                        else f"none of the golden set's {len(study.pairs)} questions expects a page this collection "
                             "holds: it describes another book, or its expected_url_patterns are wrong")
        return study
    study.causes = name_causes(study, collection)
    return study


def run(ctx: NotebookRun, *, golden_set: str, top_k: int, compare_alpha: float, book_docs: str | None = None,
        book_sitemap: str | None = None, book_base_url: str | None = None,
        book_route_base: str | None = None) -> SideBySideResult:
    """Notebook 15's check: the golden set's in-domain questions through the profile's retriever (``ctx.asker``:
    ``retriever:``, the collection itself by default) and through the collection's own search
    (``ctx.collection_retriever``), and the named causes of every difference.

    Nothing is compared (every gate not applicable, with the reason) without a team's retriever, without a golden
    set, or when the collection cannot be opened. Where the profile names the book (``book_docs`` or
    ``book_sitemap``), a golden pattern also names a source by its page's route, as in notebook 05.
    """
    golden = load_golden_set(golden_set)
    if reason := ctx.collection_absent():
        return SideBySideResult(not_applicable(reason, retriever=str(ctx.asker.describe()), top_k=top_k))
    routes, problem = ((None, "") if ctx.asker.kind == "collection" else
                       profile_routes(ctx.store, ctx.collection, book_docs=book_docs, book_sitemap=book_sitemap,
                                      book_base_url=book_base_url, book_route_base=book_route_base))
    return SideBySideResult(measure(ctx.asker, ctx.collection_retriever, golden, top_k=top_k, alpha=compare_alpha,
                                    routes=routes, book_problem=problem))


@dataclass
class SideBySideResult:
    """Notebook 15's result: the comparison (:class:`SideBySide`), its tables, figures and record."""

    study: SideBySide

    def __str__(self) -> str:
        s = self.study
        return (f"retriever: {s.retriever or '(none)'}\n"
                + (s.absent or f"{len(s.pairs)} questions, {len(s.answered)} answered by the retriever"))

    def tables(self) -> dict[str, Any]:
        """``per_query``, ``causes``, and ``evidence_<cause>`` of each cause found with evidence."""
        s = self.study
        out = {"per_query": views.queries_frame(s), "causes": views.causes_frame(s)}
        out |= {f"evidence_{key}": views.evidence_frame(s, key) for key, cause in s.causes.items()
                if cause.found and cause.evidence}
        return out

    def found_causes(self) -> list[tuple[str, str]]:
        """(table name, "title: summary") of each cause found with evidence, in order."""
        return [(f"evidence_{key}", f"{cause.title}: {cause.summary}") for key, cause in self.study.causes.items()
                if cause.found and cause.evidence]

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The tables and figures, then the gates (``side_by_side.*``), findings and metrics; every gate not
        applicable, with the reason, when nothing was compared (no retriever, no golden set)."""
        study = self.study
        for name, frame in self.tables().items():
            report.table(frame, name)
        if study.pairs:
            report.figure(views.hits_figure(study), "hits", show=show)
        if study.scores:
            report.figure(views.scores_figure(study), "scores", show=show)
        if study.absent:
            for gate in GATES:
                gate.not_applicable(report, study.absent)
            report.finding(f"side by side: {study.absent}")
            return
        self._cause_gate(report, "errors")
        self._hit_gate(report)
        for key in CAUSES:
            if key != "errors":
                self._cause_gate(report, key)
        report.finding(f"retriever: {study.retriever}")
        for cause in study.causes.values():
            if cause.found:
                report.finding(f"CAUSE {cause.title}: {cause.summary}")
        if not any(c.found for c in study.causes.values()):
            report.finding("no difference has a name: the retriever answers as the collection does")
        overlaps = [p.overlap for p in study.answered if p.overlap is not None]
        mean_overlap = sum(overlaps) / len(overlaps) if overlaps else math.nan
        report.finding(f"mean overlap@{study.top_k} {mean_overlap:.3f} over {len(overlaps)} answered questions "
                       f"of {len(study.pairs)}" if overlaps else
                       f"overlap@{study.top_k}: no question answered ({len(study.pairs)} asked; see the errors gate)")
        for name, value in (("questions", len(study.pairs)), ("answered", len(study.answered)),
                            ("mean_overlap_at_k", mean_overlap), ("team_hit_at_k", study.team_hit_rate),
                            ("collection_hit_at_k", study.collection_hit_rate),
                            ("hit_p_value", study.p_value if study.p_value is not None else math.nan),
                            ("top_k", study.top_k)):
            report.metric(name, value)
        report.metric("causes_found", sorted(c.key for c in study.causes.values() if c.found))

    def _cause_gate(self, report: NotebookReport, key: str) -> None:
        cause = self.study.causes.get(key)
        if cause is None or cause.gate is None:
            return
        if cause.found is None:
            cause.gate.not_applicable(report, cause.summary)
        else:
            cause.gate.record(report, not cause.found, hint=HINTS.get(key),
                              detail=f"{cause.title}: {cause.summary}" if cause.found else cause.summary)

    def _hit_gate(self, report: NotebookReport) -> None:
        s = self.study
        answered = s.answered
        if len(answered) < 2:
            SIDE_BY_SIDE_HIT_RATE.not_applicable(report, f"{len(answered)} of {len(s.pairs)} questions answered: the "
                                                         "paired test needs at least 2 (see the errors gate)")
            return
        worse, p = s.hit_rate_worse, s.p_value if s.p_value is not None else 1.0
        SIDE_BY_SIDE_HIT_RATE.record(
            report, not worse, value=round(s.team_hit_rate, 4), threshold=round(s.collection_hit_rate, 4),
            unit="hit rate", provenance=s.provenance,
            detail=(f"hit@{s.top_k} {s.team_hit_rate:.3f} through the retriever, {s.collection_hit_rate:.3f} through "
                    f"the collection over {len(answered)} questions; paired t-test p = {p:.3f} "
                    f"({'significantly lower' if worse else 'not significantly lower'} at alpha {s.alpha:g})"),
            hint="read the named causes below: each says what in the retriever's code differs from the "
                 "collection's own search")


#: What to change when a cause's gate fails.
HINTS: Mapping[str, str] = {
    "errors": "the first message names the failure: make the endpoint or function answer every question (its URL, "
              "its status, its timeout), then run again",
    "cut": "a similarity threshold or a limit in the retriever's code drops results the collection has: lower the "
           "threshold below the scores shown, or pass top_k through as the limit",
    "missing": "the retriever's reader asks the payload for a key the ingest never wrote: read the key named in "
               "the evidence",
    "embedding": "embed the question as a query with the model that embedded the documents (Cohere "
                 "input_type='search_query', e5's 'query: ' prefix, the same model name)",
    "filter": "the retriever filters the collection (a chapter, a module, a source): drop the filter or make it "
              "depend on the question",
}
