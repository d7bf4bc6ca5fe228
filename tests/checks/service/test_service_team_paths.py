"""The service over a team's collection that holds file paths and no URL: the slug is the file's route.

Shape #7 of shared/REAL_COLLECTIONS.md: ``content``, ``chunk_id`` and ``metadata{file_path, chapter,
section_header, content_hash}``, no URL. Seed 003 asks every result for a ``slug`` (the page's route); the file
path gives it by the Docusaurus rule our ingest uses (number prefixes, ``index.md``). Where a collection holds
neither a URL nor a path, notebook 08's field gate does not judge ``slug`` and says why.
"""

from __future__ import annotations

import pytest
from corpus import DOCS
from service_fixtures import BagOfWordsEmbedder, client_for, sqlite_db
from shapes import build, openai_nested_metadata

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.book.routes import route_of_stored_path
from retrieval_lib.checks.service._validate import ApiValidation, unheld_fields
from retrieval_lib.models import SEED003_FIELDS


@pytest.mark.parametrize("stored, route", [
    ("docs/module-01-ros2/01-ros2-overview.md", "/docs/module-01-ros2/ros2-overview"),
    ("./docs/module-01-ros2/01-ros2-overview.md", "/docs/module-01-ros2/ros2-overview"),
    ("/home/ci/book/docs/module-02-simulation/index.md", "/docs/module-02-simulation"),
    ("module-03-isaac/02-nav2.mdx", "/docs/module-03-isaac/nav2"),
    ("C:\\book\\docs\\intro\\README.md", "/docs/intro"),
    ("book/docs/tutorials/docs/01-a.md", "/docs/a"),  # the last docs folder is the docs root
])
def test_a_stored_file_path_gives_its_docusaurus_route(stored, route):
    assert route_of_stored_path(stored) == route


@pytest.mark.parametrize("stored", [None, "", "   ", "docs/image.png", "docs", "../outside.md"])
def test_a_path_that_names_no_page_gives_no_route(stored):
    assert route_of_stored_path(stored) is None


def test_the_service_answers_a_path_only_collection_with_slugs_from_the_paths(tmp_path):
    embedder = BagOfWordsEmbedder()
    store = VectorStore.in_memory()
    build(store, "theirs", openai_nested_metadata, embedder.embed_documents([d["content"] for d in DOCS]))
    retriever = Retriever(store, embedder, "theirs")
    with client_for(retriever, sqlite_db(tmp_path)) as served:
        answer = served.client.post("/search", json={"query": "How does Gazebo simulate robots?"})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert results
    for r in results:
        assert all(r.get(f) not in (None, "") for f in SEED003_FIELDS), r
        assert r["slug"] == route_of_stored_path(r["source_path"])
    assert results[0]["slug"] == "/docs/module-02-simulation/gazebo-basics"
    assert unheld_fields(retriever.held_fields()) == {}


def test_a_field_the_collection_cannot_give_is_not_judged_and_says_why():
    held = ["content", "title", "chunk_sequence"]  # no URL and no file path
    unheld = unheld_fields(held)
    assert set(unheld) == {"slug", "source_path"}
    assert "no source_url and no source_file" in unheld["slug"]
    ok = type("A", (), {"ok": True, "status": 200,
                        "body": {"results": [{"chunk_id": "1", "snippet": "x", "title": "t", "score": 0.5}]}})()
    v = ApiValidation(url="http://127.0.0.1:1", health=ok, dependencies={}, answers={"q": ok}, library=None,
                      top_k={}, errors={}, unstable=[], concurrent=[], unheld=unheld)
    assert v.missing_fields() == []
    v_all = ApiValidation(url="http://127.0.0.1:1", health=ok, dependencies={}, answers={"q": ok}, library=None,
                          top_k={}, errors={}, unstable=[], concurrent=[])
    assert v_all.missing_fields() == ["q: slug", "q: source_path"]
