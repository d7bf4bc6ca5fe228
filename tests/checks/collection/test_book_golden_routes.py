"""The book check's golden questions over a collection that names its pages by file path (team #9).

``book --docs`` read a golden set written with the site's routes (``/docs/module-01-ros2/...``) against the
collection's sources only, file paths here, and said "the golden set ... expects no page of this collection (it
describes another book)": the questions about gone sources were never asked. The book maps every file to its page,
and a pattern now names a source by its page's route, by notebook 05's rule (``golden_set.route_names``).

The collection is built here in team #9's shape (``text``, ``path``; no URL) from two folders of the sample book,
with the real MiniLM embedder; after the ingest the book loses one page (gone). No score is compared.
"""

from __future__ import annotations

import pytest
import yaml
from shapes import team9_book

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import book as check
from retrieval_lib.collection import CollectionView
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.report import NotebookReport

IK_FILE = "module-01-ros2/08-kinematics-and-inverse-kinematics.md"
DELETED = "module-02-simulation/05-unity-for-robotics.md"  # deleted from the book after the ingest
GATES = dict(changed_max_share=0.2, thin_min_coverage=0.6, max_missing_pages=0, max_gone_sources=0,
             max_near_duplicate_share=0.02)


@pytest.fixture(scope="module")
def team9(tmp_path_factory, embedder, shared_embedder):
    """Team #9's shape (uuid5 ids; ``text``, ``path``, ``chapter``, ``section``, ``source`` = "docs"), then the book
    as it is now (one page deleted) and a golden set in the site's routes."""
    root = tmp_path_factory.mktemp("team9-book")
    docs = team9_book(root, shared_embedder)
    (docs / DELETED).unlink()
    golden = root / "golden.yaml"
    golden.write_text(yaml.safe_dump({
        "name": "site routes", "top_k": 5, "min_score": 0.3, "required_passes": 1,
        "queries": [{"query": "What is inverse kinematics?",
                     "expected_url_patterns": ["/docs/module-01-ros2/kinematics-and-inverse-kinematics"]},
                    {"query": "How do I use Unity for robot simulation?",
                     "expected_url_patterns": ["/docs/module-02-simulation"]}]}), encoding="utf-8")
    store = VectorStore.at_path(root / "store")
    view = CollectionView(store)
    yield docs, view, Retriever(view, embedder, "team9"), golden
    store.close()


def test_route_patterns_over_file_paths_ask_the_golden_questions(team9, tmp_path):
    docs, view, retriever, golden = team9
    s = check.study(view, "team9", docs=str(docs), golden_set=str(golden), search=retriever)
    assert "golden_set" not in s.problems and s.golden is not None
    assert s.bmap is not None and [m.source for m in s.bmap.unmatched] == [DELETED]
    # the questions were asked for the gone source: the Unity question still finds its chunks
    assert s.retrieved is not None and len(s.retrieved.asked) == 2 and not s.retrieved.failed
    assert s.retrieved.by_source[DELETED] == ["How do I use Unity for robot simulation?"]
    # a mapped file is expected by the question whose pattern is its page's route
    ik = next(m for m in s.bmap.sources if m.source == IK_FILE)
    routes = check._routes(s.book, s.bmap)
    assert check._expected_by(s.golden, ik, (), routes) == ["What is inverse kinematics?"]
    assert check._expected_by(s.golden, ik, ()) == []  # by the source alone, nothing names it
    report = NotebookReport("16_book", "book", tmp_path)
    check.BookResult(s, **GATES, near_duplicate_cosine=0.98).record(report, show=False)
    gone = next(g for g in report.gates if g.id == "book.gone")
    assert gone.passed is False and "still in the top 5 of a golden or extra question" in gone.detail


def test_a_set_for_another_book_is_still_named_so(team9, tmp_path):
    docs, view, retriever, _ = team9
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"name": "other", "top_k": 5, "min_score": 0.3, "required_passes": 1,
                                     "queries": [{"query": "How do I sharpen a knife?",
                                                  "expected_url_patterns": ["/docs/cooking/knife-skills"]}]}),
                     encoding="utf-8")
    s = check.study(view, "team9", docs=str(docs), golden_set=str(other), search=retriever)
    assert "another book" in s.problems["golden_set"] and s.golden is None and s.retrieved is None
