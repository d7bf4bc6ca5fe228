"""Notebook 15's check: a team's retriever side by side with the collection, and the named causes.

Each fake team retriever below searches the sample collection the way a team's backend would (its own query
embedding, its own limit, threshold, reader or filter) and answers with :class:`retrieval_lib.retrievers.Answer` s;
the check must name what it does wrong, and pass a sound one on every gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from corpus import SAMPLE_COLLECTION

from retrieval_lib.checks.retrieval import _views as side_by_side_views
from retrieval_lib.checks.retrieval import side_by_side
from retrieval_lib.params import load_golden_set
from retrieval_lib.retrievers import Answer, Hit, open_retriever
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.report import NotebookReport

GOLDEN = "params/golden/sample_book.yaml"
IDS = [g.id for g in side_by_side.GATES]
PREFIX = "Represent this question for searching relevant passages: "


class Prefixed:
    """A model with input types: queries carry a prefix, documents do not (as e5's ``query: `` / ``passage: ``);
    the sample collection's stored vectors are its documents (plain MiniLM)."""

    def __init__(self, embedder: Any) -> None:
        self._e = embedder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._e, name)

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._e.embed_documents([PREFIX + t for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._e.embed_documents(list(texts))


class TeamRetriever:
    """A team's backend over the sample collection: embed, search, read the payload, answer.

    Args:
        embed: how it embeds a question (the mistake may be here).
        keep: which of the points it found it keeps (a threshold, a filter), in order.
        reorder: how it orders what it keeps (a reranker).
        reader: payload -> (content, source_url) (a reader asking for other keys).
        fail: every question fails with this error kind.
        ids: whether its results carry their chunk id (most backends return text, source and score only).
    """

    kind = "python"

    def __init__(self, store: Any, embed: Callable[[list[str]], list[list[float]]], *,
                 keep: Callable[[list[Any]], list[Any]] = lambda pts: pts,
                 reorder: Callable[[list[Any]], list[Any]] = lambda pts: pts,
                 reader: Callable[[dict[str, Any]], tuple[Any, Any]] = lambda p: (p.get("content"),
                                                                                  p.get("source_url")),
                 fail: str | None = None, ids: bool = True) -> None:
        self.store, self.embed, self.keep, self.reorder = store, embed, keep, reorder
        self.reader, self.fail, self.ids = reader, fail, ids
        self.asked = 0

    def describe(self) -> str:
        return "a team's search function (test)"

    def close(self) -> None:
        pass

    def ask(self, query: str, top_k: int) -> Answer:
        return self.ask_many([query], top_k)[0]

    def ask_many(self, queries: Sequence[str], top_k: int) -> list[Answer]:
        out = []
        for q in queries:
            self.asked += 1
            if self.fail:
                out.append(Answer(query=q, top_k=top_k, error=f"{self.fail}: Service Unavailable",
                                  error_kind=self.fail))
                continue
            points = self.store.query(SAMPLE_COLLECTION, self.embed([q])[0], limit=60)
            points = self.reorder(self.keep(list(points))[:top_k])
            hits = []
            for rank, p in enumerate(points, 1):
                content, url = self.reader(p.payload or {})
                hits.append(Hit(rank=rank, content=content, source_url=url, score=float(p.score),
                                chunk_id=str(p.id) if self.ids else None,
                                title=(p.payload or {}).get("title")))
            out.append(Answer(query=q, top_k=top_k, hits=hits))
        return out


@pytest.fixture(scope="module")
def golden():
    return load_golden_set(GOLDEN)


@pytest.fixture(scope="module")
def collection(book, embedder):
    return Retriever(book.store, embedder, SAMPLE_COLLECTION)


@pytest.fixture(scope="module")
def prefixed(book, embedder):
    return Retriever(book.store, Prefixed(embedder), SAMPLE_COLLECTION)


def study_of(team: Any, collection: Retriever, golden: Any, tmp_path) -> tuple[Any, NotebookReport]:
    study = side_by_side.measure(team, collection, golden, top_k=5)
    report = NotebookReport("15_side_by_side", "side by side", tmp_path)
    side_by_side.SideBySideResult(study).record(report, show=False)
    return study, report


def gates(report: NotebookReport) -> dict[str, bool | None]:
    return {g.id: g.passed for g in report.gates}


def found(study: Any) -> set[str]:
    return {key for key, c in study.causes.items() if c.found}


class Counted:
    """The collection's retriever, counting the questions asked of it directly."""

    def __init__(self, retriever: Retriever) -> None:
        self._r, self.asked = retriever, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._r, name)

    def search_many(self, queries: Sequence[str], **options: Any) -> Any:
        self.asked += len(queries)
        return self._r.search_many(queries, **options)


def test_a_sound_retriever_passes_every_gate_with_the_collections_hit_rate(book, collection, embedder, golden,
                                                                          tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries)
    counted = Counted(collection)
    study, report = study_of(team, counted, golden, tmp_path)
    assert counted.asked == len(study.pairs)  # at most one direct query per question
    assert gates(report) == dict.fromkeys(IDS, True)
    assert found(study) == set()
    assert study.team_hit_rate == study.collection_hit_rate == 1.0
    assert all(p.overlap == 1.0 and set(p.rank_shifts) == {0} for p in study.pairs)
    assert len(study.scores) == 5 * len(study.pairs)  # every result's score compared with its stored vector
    assert "same query embedding" in study.causes["embedding"].summary
    assert team.asked == len(golden.queries) + len(golden.extra_queries)  # each question asked once, no negative


def test_a_similarity_threshold_is_named_with_the_score_where_answers_stop(book, collection, embedder, golden,
                                                                          tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries, keep=lambda pts: [p for p in pts if p.score >= 0.5])
    study, report = study_of(team, collection, golden, tmp_path)
    assert "cut" in found(study)
    assert gates(report)["side_by_side.complete_answers"] is False
    summary = study.causes["cut"].summary
    assert "a similarity threshold" in summary
    low, high = (float(x) for x in summary.split("threshold between ")[1].split(" (")[0].split(" and "))
    assert low < 0.5 <= high
    rows = side_by_side_views.evidence_frame(study, "cut")
    assert (rows["collection_score_first_dropped"].dropna() < 0.5).all()
    assert gates(report)["side_by_side.errors"] is True


def test_queries_embedded_as_documents_are_named(book, prefixed, embedder, golden, tmp_path):
    sound = TeamRetriever(book.store, Prefixed(embedder).embed_queries)
    assert gates(study_of(sound, prefixed, golden, tmp_path)[1])["side_by_side.query_embedding"] is True
    wrong = TeamRetriever(book.store, Prefixed(embedder).embed_documents)
    study, report = study_of(wrong, prefixed, golden, tmp_path)
    assert study.causes["embedding"].title == "queries embedded as documents"
    assert gates(report)["side_by_side.query_embedding"] is False
    assert any("queries embedded as documents" in f for f in report.findings)


def test_another_model_is_named_when_no_embedding_explains_the_scores(book, collection, embedder, golden, tmp_path):
    other = TeamRetriever(book.store, lambda texts: embedder.embed_queries([t.upper()[::-1] for t in texts]))
    study, report = study_of(other, collection, golden, tmp_path)
    assert study.causes["embedding"].title == "another model or a transformed query"
    assert gates(report)["side_by_side.query_embedding"] is False


def test_another_model_is_named_from_results_without_ids_and_is_no_filter(book, collection, embedder, golden,
                                                                          tmp_path):
    # text, source and score only (team #3's backend): the chunks are found by their text; an unrelated query
    # embedding shares no chunk with the collection's top 5, yet its answers span the book: no filter
    other = TeamRetriever(book.store, lambda texts: embedder.embed_queries([t.upper()[::-1] for t in texts]),
                          ids=False)
    study, report = study_of(other, collection, golden, tmp_path)
    assert all(not r.ids for p in study.pairs for r in p.team.rows)
    assert all(p.overlap == 0.0 for p in study.pairs)
    assert study.causes["embedding"].title == "another model or a transformed query"
    assert len(study.scores) == 5 * len(study.pairs)  # every result's chunk found by its text
    assert gates(report)["side_by_side.query_embedding"] is False
    assert "filter" not in found(study) and gates(report)["side_by_side.sources"] is True
    assert "not a filter" in study.causes["filter"].summary


def test_a_transformed_query_without_ids_is_named_not_a_reranker(book, collection, embedder, golden, tmp_path):
    # a prefix the documents never had: most chunks are the collection's, in another order, matched by their text
    team = TeamRetriever(book.store, lambda texts: embedder.embed_queries([PREFIX + t for t in texts]), ids=False)
    study, report = study_of(team, collection, golden, tmp_path)
    assert study.causes["embedding"].title == "another model or a transformed query"
    assert gates(report)["side_by_side.query_embedding"] is False
    assert len(study.scores) == 5 * len(study.pairs)  # matched in the top 5 by text, or found by it
    order = study.causes["order"]
    assert order.found and "reranker or fusion" not in order.summary and "query embedding" in order.summary


def test_queries_embedded_as_documents_are_named_from_results_without_ids(book, prefixed, embedder, golden,
                                                                         tmp_path):
    wrong = TeamRetriever(book.store, Prefixed(embedder).embed_documents, ids=False)
    study, report = study_of(wrong, prefixed, golden, tmp_path)
    assert study.causes["embedding"].title == "queries embedded as documents"
    assert gates(report)["side_by_side.query_embedding"] is False


def test_the_same_chunks_reversed_are_named_a_reordering_not_a_fault(book, collection, embedder, golden, tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries, reorder=lambda pts: pts[::-1])
    study, report = study_of(team, collection, golden, tmp_path)
    assert "order" in found(study) and not study.causes["order"].fault
    assert all(p.overlap == 1.0 for p in study.pairs)
    assert gates(report) == dict.fromkeys(IDS, True)  # hit@5 is the same set of chunks
    assert any(p.rank_shifts and p.rank_shifts[0] == -4 for p in study.pairs)


def test_a_filter_to_one_module_is_named(book, collection, embedder, golden, tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries,
                         keep=lambda pts: [p for p in pts if "/module-04-vla/" in p.payload["source_url"]])
    study, report = study_of(team, collection, golden, tmp_path)
    assert "filter" in found(study)
    assert gates(report)["side_by_side.sources"] is False
    assert "module-04-vla/" in study.causes["filter"].summary
    assert gates(report)["side_by_side.hit_rate"] is False  # most golden pages are in other modules


def test_an_error_on_every_question_fails_the_errors_gate_and_is_never_an_empty_answer(book, collection, embedder,
                                                                                     golden, tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries, fail="http 503")
    study, report = study_of(team, collection, golden, tmp_path)
    g = gates(report)
    assert g["side_by_side.errors"] is False
    assert g["side_by_side.hit_rate"] is None and g["side_by_side.complete_answers"] is None
    cause = study.causes["errors"]
    assert cause.evidence[0]["error_kind"] == "http 503" and cause.evidence[0]["questions"] == len(study.pairs)
    assert "Service Unavailable" in cause.summary
    assert "cut" not in found(study)
    assert not any("nan" in f for f in report.findings)
    assert any("no question answered" in f for f in report.findings)


def test_results_without_text_name_the_key_the_collection_holds(book, collection, embedder, golden, tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries, reader=lambda p: (p.get("text", ""), p.get("source_url")))
    study, report = study_of(team, collection, golden, tmp_path)
    assert gates(report)["side_by_side.text_and_source"] is False
    summary = study.causes["missing"].summary
    assert "have no text" in summary and "payload key 'content'" in summary
    assert study.causes["missing"].evidence[0]["matched_in_collection_with_it"] == 5 * len(study.pairs)
    assert gates(report)["side_by_side.hit_rate"] is True  # the chunks are right; only their text is lost


def test_without_a_retriever_every_gate_is_not_applicable_with_the_reason(collection, golden, tmp_path):
    # no retriever: the profile's retriever is the collection itself
    study, report = study_of(open_retriever(None, collection_retriever=collection), collection, golden, tmp_path)
    assert gates(report) == dict.fromkeys(IDS, None)
    assert all("no retriever is configured" in g.detail for g in report.gates)


def test_without_a_golden_set_every_gate_is_not_applicable(book, collection, embedder, tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries)
    study, report = study_of(team, collection, load_golden_set(""), tmp_path)
    assert gates(report) == dict.fromkeys(IDS, None)
    assert "no golden set" in study.absent and team.asked == 0


def test_the_paired_test_is_certain_when_every_question_drops_the_same(golden):
    hit = Hit(rank=1, content="x", source_url="https://b.example/docs/elsewhere", score=0.9, chunk_id="1")

    def response(q: Any) -> Any:
        from retrieval_lib.models import SearchResponse, SearchResult
        r = SearchResult(point_id="2", source_url="https://b.example" + q.expected_url_patterns[0],
                         content="y", similarity_score=0.9, raw_score=0.9)
        return SearchResponse(query_text=q.query, results=[r], total_results=1, top_k=5, similarity_threshold=0,
                              collection="c", model="m", embed_ms=0, search_ms=0, execution_time_ms=0,
                              timestamp="2026-01-01T00:00:00Z")

    qs = list(golden.queries) + list(golden.extra_queries)
    # every question: the collection's top result is its golden page; the retriever's is elsewhere. A t-test on
    # differences without spread has no variance (ranx: nan); the drop is then certain, not "p = 1"
    study = side_by_side.compare_answers(golden, [Answer(query=q.query, top_k=5, hits=[hit]) for q in qs],
                                         [response(q) for q in qs], top_k=5)
    assert (study.team_hit_rate, study.collection_hit_rate, study.p_value) == (0.0, 1.0, 0.0)
    assert study.hit_rate_worse


def test_the_views_draw(book, collection, embedder, golden, tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries)
    study, _ = study_of(team, collection, golden, tmp_path)
    frame = side_by_side_views.queries_frame(study)
    assert list(frame["overlap@5"]) == [1.0] * len(study.pairs)
    assert set(side_by_side_views.causes_frame(study)["state"]) == {"not found"}
    assert side_by_side_views.short_label("x" * 80).endswith("…")
    import matplotlib.pyplot as plt
    for fig in (side_by_side_views.hits_figure(study), side_by_side_views.scores_figure(study)):
        fig.savefig(tmp_path / "f.png")
        plt.close(fig)


def test_the_result_records_its_tables_and_figures_and_prints_what_was_asked(book, collection, embedder, golden,
                                                                          tmp_path):
    team = TeamRetriever(book.store, embedder.embed_queries, keep=lambda pts: pts[:2])  # a cap: cut answers
    result = side_by_side.SideBySideResult(side_by_side.measure(team, collection, golden, top_k=5))
    report = NotebookReport("15_side_by_side", "side by side", tmp_path)
    result.record(report, show=False)
    assert str(result).splitlines() == ["retriever: a team's search function (test)",
                                        f"{len(result.study.pairs)} questions, {len(result.study.pairs)} answered "
                                        "by the retriever"]
    tables = result.tables()
    assert {"per_query", "causes", "evidence_cut"} <= set(tables)
    assert [name for name, _ in result.found_causes()] == [n for n in tables if n.startswith("evidence_")]
    assert (tmp_path / "figures" / "15_side_by_side_hits.png").is_file()
    assert (tmp_path / "tables" / "15_side_by_side_per_query.csv").is_file()
    assert gates(report)["side_by_side.complete_answers"] is False


def test_the_check_without_a_retriever_in_the_profile_judges_nothing_and_says_why(collection, tmp_path):
    from retrieval_lib.config import load_settings
    from retrieval_lib.workbook.report import NotebookRun

    ctx = NotebookRun("15_side_by_side", "side by side", tmp_path, settings=load_settings(env={}))
    ctx._retriever = collection  # the session's sample collection (its store is open, so locked, for the session)
    try:
        result = side_by_side.run(ctx, golden_set=GOLDEN, top_k=5, compare_alpha=0.05)
        result.record(ctx.report, show=False)
        assert gates(ctx.report) == dict.fromkeys(IDS, None)
        assert "no retriever is configured" in str(result) and result.tables()["per_query"].empty
    finally:
        ctx._retriever = None  # the session's collection: closing it here would close it for every later test
        ctx.close()
