"""Notebook 08 with a team's chatbot in the profile, and over a collection that names no page.

Teams #12 and #3 (the tour): with a ``retriever:`` in the profile, 08 took the chatbot for the library's in-process
search, so our own service "gave the library's chunk ids in its order" for 0 of 30 questions and the chatbot was
timed as "library in-process". 08 validates our seed-003 service over the collection against the library's own
search of that collection: the chatbot is never asked (notebook 15 compares it). Team #3's sources are document
ids (``appendices/a-glossary``), no URL and no Markdown path: the service can make no slug of them, so ``slug`` is
not judged, with the reason, rather than failed for a field the team never wrote.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from corpus import DOCS
from fastapi import FastAPI
from service_fixtures import COLLECTION, BagOfWordsEmbedder, serving, small_retriever
from shapes import build

from retrieval_lib import Retriever, VectorStore, load_settings
from retrieval_lib.checks.service import api
from retrieval_lib.checks.service._client import ApiClient
from retrieval_lib.checks.service._validate import record, unmade_slug, validate_service
from retrieval_lib.models import SearchResult
from retrieval_lib.service import create_app
from retrieval_lib.workbook.report import NotebookReport, NotebookRun

pytestmark = pytest.mark.usefixtures("no_proxies")

QUERIES = ["What is ROS 2?", "Gazebo simulation", "launch files"]


def _chatbot(asked: list[str]) -> FastAPI:
    """A team's chatbot endpoint (team #3's shape: a top-level list of text, source, score), counting questions."""
    app = FastAPI()

    @app.post("/ask_retrieval")
    def ask(body: dict[str, Any]) -> list[dict[str, Any]]:
        asked.append(str(body.get("question")))
        return [{"text": "something else entirely", "source": "elsewhere/page", "score": 0.1}]

    return app


def _golden(tmp_path: Any) -> str:
    path = tmp_path / "golden.yaml"
    path.write_text("name: t\nqueries:\n" + "".join(
        f"  - query: {q}\n    expected_url_patterns: [/docs/x]\n" for q in QUERIES), encoding="utf-8")
    return str(path)


def test_with_a_chatbot_in_the_profile_our_service_is_compared_with_the_librarys_own_search(tmp_path, monkeypatch):
    library = small_retriever()
    asked: list[str] = []
    served_app = create_app(load_settings(env={}), retriever=library, log_stream=io.StringIO())
    with serving(_chatbot(asked)) as chatbot_url, serving(served_app) as service_url:

        @contextmanager
        def ours(settings: Any, **_: Any) -> Iterator[Any]:  # our service, served in a thread (no child process)
            yield type("Svc", (), {"url": service_url, "startup_seconds": 0.5})()

        monkeypatch.setattr(api, "own_service", ours)
        spec = {"kind": "http", "url": chatbot_url + "/ask_retrieval", "body": {"question": "{query}"},
                "results": "@", "fields": {"content": "text", "source_file": "source", "score": "score"}}
        settings = load_settings(env={"RETRIEVER_SPEC": json.dumps(spec), "QDRANT_COLLECTION_NAME": COLLECTION})
        ctx = NotebookRun("08_api", "api", tmp_path / "run", settings=settings)
        ctx._retriever, ctx._store = library, library.store
        try:
            result = api.run(ctx, api_url="", golden_set=_golden(tmp_path), api_repeats=1, api_concurrency=(2,),
                             api_latency_rounds=1, api_max_overhead_ms=1000.0, metadata_table="chunks")
            result.record(ctx.report, show=False)
        finally:
            ctx._retriever = ctx._store = None
    gates = {g.id: g for g in ctx.report.gates}
    assert asked == []  # the chatbot is notebook 15's: 08 never asks it
    assert gates["api.golden_rankings"].passed is True, gates["api.golden_rankings"].detail
    assert f"{len(QUERIES)} of {len(QUERIES)} give the library's chunk ids" in gates["api.golden_rankings"].detail
    assert len(result.validation.library_ms) == len(QUERIES)  # the library timed in-process, not the chatbot
    assert any("notebook 15" in f and "not validated here" in f for f in ctx.report.findings)


def _doc_id_shape(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Team #3's payload: text, a document id as the source (no extension, no URL), the module."""
    return f * 100 + i, {"text": text, "source": doc["source_file"].removesuffix(".md"), "module": doc["title"]}


def _result(**fields: Any) -> SearchResult:
    return SearchResult(point_id="1", content="x", similarity_score=0.5, raw_score=0.5, **fields)


def test_a_slug_is_made_from_a_url_or_a_markdown_path_and_from_nothing_else():
    assert unmade_slug([_result(source_url="https://b.example/docs/a")]) is None
    assert unmade_slug([_result(source_file="docs/module-01/intro.md")]) is None
    assert unmade_slug([_result(source_file="appendices/a-glossary"),
                        _result(source_file="docs/module-01/intro.md")]) is None  # one page gives a route
    why = unmade_slug([_result(source_file="appendices/a-glossary")])
    assert why is not None and "'appendices/a-glossary'" in why and "no source URL" in why


def test_a_collection_of_document_ids_does_not_fail_the_slug_and_says_why(tmp_path):
    embedder = BagOfWordsEmbedder()
    store = VectorStore.in_memory()
    build(store, "theirs", _doc_id_shape, embedder.embed_documents([d["content"] for d in DOCS]))
    library = Retriever(store, embedder, "theirs")
    assert "source_file" in library.held_fields() and "source_url" not in library.held_fields()
    app = create_app(load_settings(env={}), retriever=library, log_stream=io.StringIO())
    with serving(app) as url, ApiClient(url) as client:
        v = validate_service(client, QUERIES, library=library, repeats=1, concurrency=(2,), latency_rounds=1)
    assert all(r.get("slug") in (None, "") for a in v.answers.values() for r in a.body["results"])
    report = NotebookReport("08_api", "test", tmp_path / "run")
    record(report, v, max_overhead_ms=1000)
    fields = next(g for g in report.gates if g.id == "api.fields")
    assert fields.passed is True and "slug not judged" in fields.detail
    assert any("'slug' not judged" in f and "Markdown" in f for f in report.findings)
