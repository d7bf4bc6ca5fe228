"""A golden set written with the site's routes, over a collection that names its pages by file path (team #9).

Team #9's ingest writes ``text`` and ``path`` (the file path under the docs folder,
``module-01-ros2/08-kinematics-and-inverse-kinematics.md``) and no URL at all; golden sets are written with the site's
routes (``/docs/module-01-ros2/kinematics-and-inverse-kinematics``). Patterns were compared with the sources alone,
so notebook 05 (and 15) called the set "another book" even where the profile named the book. Now, where the profile
names the book, a pattern matches a source whose page's route matches it (the book check's mapping); where it names
none, the set is not applicable with the reason naming ``book_docs``, never "another book".

The collection is built here in team #9's shape from two folders of the sample book, with the real MiniLM embedder.
Nothing below compares a score: only pages, ranks the model gets right by a wide margin, and verdicts.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from shapes import team9_book

from retrieval_lib import VectorStore
from retrieval_lib.book import book_routes
from retrieval_lib.checks.retrieval import golden_set as gs
from retrieval_lib.checks.retrieval import side_by_side
from retrieval_lib.collection import CollectionView
from retrieval_lib.params.sets import GoldenQuery, GoldenSet
from retrieval_lib.retrievers import Answer, Hit
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.report import NotebookReport

#: One worker builds this module's fixtures (--dist loadgroup); two would build them twice.
pytestmark = pytest.mark.xdist_group("test_golden_book_routes")

IK_FILE = "module-01-ros2/08-kinematics-and-inverse-kinematics.md"
IK_ROUTE = "/docs/module-01-ros2/kinematics-and-inverse-kinematics"
GAZEBO_FILE = "module-02-simulation/02-gazebo-basics.md"
GAZEBO_ROUTE = "/docs/module-02-simulation/gazebo-fundamentals"  # its front matter names it


def _team9(root: Path, embedder) -> tuple[Path, VectorStore]:
    """Team #9's shape (:func:`shapes.team9_book`) and its store, opened."""
    return team9_book(root, embedder), VectorStore.at_path(root / "store")


@pytest.fixture(scope="module")
def team9(tmp_path_factory, embedder, shared_embedder):
    docs, store = _team9(tmp_path_factory.mktemp("team9"), shared_embedder)
    view = CollectionView(store)
    yield docs, view, Retriever(view, embedder, "team9")
    store.close()


GOLDEN = GoldenSet(name="site routes", top_k=5, min_score=0.3, required_passes=2, queries=(
    GoldenQuery("What is inverse kinematics?", (IK_ROUTE,), 0.3),
    GoldenQuery("How do I start a Gazebo simulation world?", ("/module-02-simulation/gazebo-fundamentals",), 0.3)))


def _evaluate(retriever: Retriever, golden: GoldenSet = GOLDEN, **kw):
    return gs.evaluate_golden(retriever, golden, vector_count=0, metadata_completeness=100.0, **kw)


def _gates(v: gs.ValidationReport, tmp_path: Path) -> tuple[dict[str, bool | None], dict[str, str]]:
    scan = SimpleNamespace(metadata_completeness=100.0, points=1, complete_points=1, held=["content"])
    report = NotebookReport("05_golden_set", "golden", tmp_path)
    gs.GoldenSetCheck(GOLDEN, v, scan, min_metadata_completeness=0.0).record(report, show=False)
    golden_gates = [g for g in report.gates if g.id.startswith("golden.")]
    return {g.id: g.passed for g in golden_gates}, {g.id: g.detail for g in golden_gates}


def test_the_books_routes_put_each_file_on_its_page(team9):
    docs, view, _ = team9
    routes = book_routes(view, "team9", docs=str(docs), sitemap=None)
    assert routes.base == ("docs",)
    assert routes.route(IK_FILE) == IK_ROUTE and routes.route(GAZEBO_FILE) == GAZEBO_ROUTE
    assert routes.route("module-09-none/01-nothing.md") is None
    # a pattern with the route base and one without it name the page; a sibling spelling does not
    assert gs.route_names(routes, (IK_FILE,), IK_ROUTE)
    assert gs.route_names(routes, (IK_FILE,), "/module-01-ros2/kinematics-and-inverse-kinematics")
    assert not gs.route_names(routes, (IK_FILE,), "/docs/module-01-ros2/kinematics")
    assert not gs.route_names(None, (IK_FILE,), IK_ROUTE)
    # the routes are read from the sources alone: no text comes along (05 reads the book on every run that names it)
    from retrieval_lib.book import read_chunks

    sources = read_chunks(view, "team9", texts=False)
    assert set(sources.content) == {None} and IK_FILE in sources.source_file
    assert read_chunks(view, "team9").source_file == sources.source_file


def test_route_patterns_over_file_paths_are_judged_with_the_book(team9, tmp_path):
    docs, view, retriever = team9
    routes, problem = gs.profile_routes(view, "team9", book_docs=str(docs), book_sitemap="")
    assert problem == "" and routes is not None
    v = _evaluate(retriever, routes=routes)
    assert gs.golden_absent(v) is None
    assert [o.relevant_pages for o in v.outcomes] == [(IK_FILE,), (GAZEBO_FILE,)]
    # the result chunks of the expected file count as relevant: ranks, hit@k, MRR and passes
    assert all(o.first_relevant_rank is not None and o.passed for o in v.outcomes), [o.reason for o in v.outcomes]
    assert v.outcomes[0].first_relevant_rank == 1 and v.hit_at_k == 1.0 and v.mrr > 0.5 and v.passed
    gates, _ = _gates(v, tmp_path)
    assert gates == {"golden.passes": True, "golden.negatives": True}


def test_without_the_book_it_is_not_applicable_and_names_book_docs(team9, tmp_path):
    _, view, retriever = team9
    assert gs.profile_routes(view, "team9", book_docs="", book_sitemap="") == (None, "")
    v = _evaluate(retriever)
    reason = gs.golden_absent(v)
    assert reason is not None and "another book" not in reason
    assert "book_docs" in reason and IK_ROUTE in reason and "file path" in reason
    assert [o.relevant_pages for o in v.outcomes] == [(), ()] and v.hit_at_k == 0.0
    gates, details = _gates(v, tmp_path)
    assert gates == {"golden.passes": None, "golden.negatives": None}
    assert all("book_docs" in d for d in details.values())


def test_a_book_that_cannot_be_read_is_said_not_hidden(team9, tmp_path):
    _, view, retriever = team9
    routes, problem = gs.profile_routes(view, "team9", book_docs=str(tmp_path / "no-such-docs"), book_sitemap="")
    assert routes is None and problem
    reason = gs.golden_absent(_evaluate(retriever, book_problem=problem))
    assert reason is not None and "could not be read" in reason and "another book" not in reason


def test_a_set_for_another_book_is_still_another_book_with_the_routes(team9):
    docs, view, retriever = team9
    routes = book_routes(view, "team9", docs=str(docs), sitemap=None)
    other = GoldenSet(name="other", top_k=5, min_score=0.3, required_passes=1, queries=(
        GoldenQuery("What is inverse kinematics?", ("/docs/module-07-cooking/knife-skills",), 0.3),))
    reason = gs.golden_absent(_evaluate(retriever, other, routes=routes))
    assert reason is not None and "another book" in reason and "routes" in reason


def test_side_by_side_reads_the_patterns_through_the_same_routes(team9):
    docs, view, retriever = team9
    routes = book_routes(view, "team9", docs=str(docs), sitemap=None)
    texts = [q.query for q in GOLDEN.queries]
    responses = retriever.search_many(texts, top_k=5)
    # the team's chatbot answers with the file path, as its payload holds it
    answers = [Answer(query=t, top_k=5, hits=[Hit(rank=i, content=r.content, source_file=r.source_file,
                                                   score=r.similarity_score)
                                               for i, r in enumerate(resp.results, 1)])
               for t, resp in zip(texts, responses)]
    with_book = side_by_side.compare_answers(GOLDEN, answers, responses, top_k=5, routes=routes)
    assert with_book.team_hit_rate == 1.0 and with_book.collection_hit_rate == 1.0
    without = side_by_side.compare_answers(GOLDEN, answers, responses, top_k=5)
    assert without.team_hit_rate == 0.0 and without.collection_hit_rate == 0.0
