"""``kind: http`` driven against a real loopback endpoint: a sound answer, its mapping inferred, and each fault."""

from __future__ import annotations

import logging

import pytest
from team_endpoint import TeamEndpoint, closed_port, search_results_shape

from retrieval_lib.retrievers import AnsweringSearch, open_retriever, probe_retriever

pytestmark = pytest.mark.usefixtures("no_proxies")

BOOK = [
    {"id": "c1", "content": "ROS 2 is the robot operating system: nodes, topics and services.", "score": 0.81,
     "source_document": "docs/module-01-ros2/what-is-ros2.md", "metadata": {"title": "What is ROS 2"},
     "chunk_index": 0},
    {"id": "c2", "content": "Gazebo simulates robots with physics, sensors and worlds.", "score": 0.52,
     "source_document": "docs/module-02-simulation/gazebo.md", "metadata": {"title": "Gazebo"}, "chunk_index": 3},
    {"id": "c3", "content": "Inverse kinematics finds joint angles for a target pose.", "score": 0.31,
     "source_document": "docs/module-01-ros2/kinematics.md", "metadata": {"title": "Kinematics"},
     "chunk_index": 1},
]
SECRET = "sk-team-0123456789abcdef"


def answer(query: str, top_k: int):
    return search_results_shape(BOOK[:top_k], query)


@pytest.fixture
def endpoint():
    with TeamEndpoint(answer) as ep:
        yield ep


def test_a_team_endpoint_answers_under_the_workbooks_names_with_the_mapping_inferred(endpoint):
    r = open_retriever({"kind": "http", "url": endpoint.url, "body": {"query": "{query}", "top_k": "{top_k}",
                                                                      "filters": {}}})
    try:
        a = r.ask("What is ROS 2?", 2)
    finally:
        r.close()
    assert a.ok and a.error is None
    assert [h.chunk_id for h in a.hits] == ["c1", "c2"]
    assert a.hits[0].content.startswith("ROS 2 is") and a.hits[0].score == pytest.approx(0.81)
    assert a.hits[0].source_file == "docs/module-01-ros2/what-is-ros2.md"
    assert a.hits[1].title == "Gazebo"  # nested under metadata
    assert endpoint.requests[0]["top_k"] == 2 and endpoint.requests[0]["query"] == "What is ROS 2?"
    assert r.mapping.results == "results" and r.mapping.fields["score"] == "score"


def test_the_body_template_puts_top_k_in_as_a_number_and_get_uses_the_query_string(endpoint):
    from retrieval_lib.retrievers.http import fill_template

    assert fill_template({"q": "{query}", "n": "{top_k}", "s": "k={top_k}", "f": [1]}, "hi", 4) == \
        {"q": "hi", "n": 4, "s": "k=4", "f": [1]}
    r = open_retriever({"kind": "http", "url": endpoint.url, "method": "get"})
    try:
        a = r.ask("Gazebo?", 1)
    finally:
        r.close()
    assert a.ok and len(a.hits) == 1
    assert endpoint.requests[-1]["method"] == "GET" and "query=Gazebo" in endpoint.requests[-1]["path"]


def test_probe_prints_the_mapping_with_evidence_and_a_spec_that_holds_it(endpoint):
    report = probe_retriever({"kind": "http", "url": endpoint.url}, "What is ROS 2?")
    assert report.ok, report.error
    assert report.results == "results"
    assert report.fields["content"] == "content" and report.fields["source_file"] == "source_document"
    assert report.fields["chunk_id"] == "id"
    assert any(line.startswith("content: `content`") for line in report.evidence), report.evidence
    assert report.spec["results"] == "results" and report.spec["kind"] == "http"
    text = "\n".join(report.lines())
    assert "mapping: results at `results`" in text


@pytest.mark.parametrize(("mode", "kind"), [("500", "http 500"), ("404", "http 404"), ("html", "not json")])
def test_a_failing_endpoint_is_an_error_answer_on_every_question_never_an_empty_one(mode, kind):
    with TeamEndpoint(answer, mode=mode) as ep:
        r = open_retriever({"kind": "http", "url": ep.url, "timeout_s": 5})
        try:
            answers = r.ask_many(["What is ROS 2?", "Gazebo?"], 5)
        finally:
            r.close()
    assert [a.error_kind for a in answers] == [kind, kind]
    assert all(a.hits == [] and a.error and "\n" not in a.error for a in answers)
    if mode == "html":
        assert "text/html" in answers[0].error


def test_an_unreachable_endpoint_says_so():
    r = open_retriever({"kind": "http", "url": f"http://127.0.0.1:{closed_port()}/search", "timeout_s": 3})
    try:
        a = r.ask("What is ROS 2?", 5)
    finally:
        r.close()
    assert a.error_kind == "unreachable" and "127.0.0.1" in a.error


def test_a_hanging_endpoint_times_out():
    # the hang (10 s, the endpoint's longest; closing it ends the wait) outlasts the 0.5 s timeout however slow
    # the machine: with a 3 s hang, a timeout delayed past it would get an answer. Cut at the 0.5 s, not waited out:
    with TeamEndpoint(answer, mode="hang", hang_s=10) as ep:
        r = open_retriever({"kind": "http", "url": ep.url, "timeout_s": 0.5})
        try:
            a = r.ask("What is ROS 2?", 5)
        finally:
            r.close()
    assert a.error_kind == "timeout" and "0.5 s" in a.error and a.elapsed_ms < 8000


def test_a_mapping_that_finds_no_list_names_the_keys_that_are_there():
    with TeamEndpoint(lambda q, k: {"answer": "ROS 2 is...", "took_ms": 3}) as ep:
        r = open_retriever({"kind": "http", "url": ep.url})
        try:
            a = r.ask("What is ROS 2?", 5)
        finally:
            r.close()
        assert a.error_kind == "no results list" and "answer, took_ms" in a.error
        given = open_retriever({"kind": "http", "url": ep.url, "results": "data.hits", "fields": {"content": "t"}})
        try:
            b = given.ask("What is ROS 2?", 5)
        finally:
            given.close()
    assert b.error_kind == "no results list" and "data.hits" in b.error and "answer, took_ms" in b.error


def test_header_secrets_are_sent_but_appear_in_no_error_describe_repr_or_log(monkeypatch, caplog):
    monkeypatch.setenv("TEAM_SEARCH_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    spec = {"kind": "http", "headers": {"Authorization": "Bearer ${TEAM_SEARCH_KEY}"}}
    with TeamEndpoint(answer, mode="echo_auth_401") as ep:
        r = open_retriever({**spec, "url": ep.url})
        try:
            a = r.ask("What is ROS 2?", 5)
            shown = [a.error or "", r.describe(), repr(r), repr(r.spec), a.model_dump_json(),
                     repr(AnsweringSearch(r).search("What is ROS 2?"))]
        finally:
            r.close()
        assert ep.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"  # it was sent
    assert a.error_kind == "http 401" and "***" in a.error
    for text in [*shown, caplog.text]:
        assert SECRET not in text
    assert "${TEAM_SEARCH_KEY}" in repr(r.spec)  # the spec keeps the reference, never the value


def test_a_redirect_to_another_origin_carries_none_of_the_specs_headers(monkeypatch):
    # httpx drops Authorization on such a redirect; an X-API-Key would have followed the answer anywhere
    monkeypatch.setenv("TEAM_SEARCH_KEY", SECRET)
    spec = {"kind": "http", "headers": {"X-API-Key": "${TEAM_SEARCH_KEY}", "X-Tenant": "book"}}
    with TeamEndpoint(answer) as elsewhere, TeamEndpoint(answer, mode="redirect") as home:
        home.redirect_to = elsewhere.url
        r = open_retriever({**spec, "url": home.url})
        try:
            a = r.ask("What is ROS 2?", 2)
        finally:
            r.close()
        assert a.ok and len(a.hits) == 2  # the redirect was followed
        assert home.requests[0]["headers"]["x-api-key"] == SECRET
        sent_there = elsewhere.requests[0]["headers"]
        assert "x-api-key" not in sent_there and "x-tenant" not in sent_there


def test_a_literal_credential_in_a_header_is_refused_with_what_to_write():
    from retrieval_lib.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"\$\{MY_API_KEY\}"):
        open_retriever({"kind": "http", "url": "http://127.0.0.1:1/s", "headers": {"X-Api-Key": "abc123"}})
    with pytest.raises(ConfigurationError, match="url"):
        open_retriever({"kind": "http"})
    with pytest.raises(ConfigurationError, match="send the key in a header"):
        open_retriever({"kind": "http", "url": "http://127.0.0.1:1/s?key=${MY_API_KEY}"})
    for url, named in [("http://127.0.0.1:1/s?q=x&api_key=sk-live-123", "query parameter 'api_key'"),
                       ("http://admin:hunter2pw@127.0.0.1:1/s", "a password"),
                       ("http://127.0.0.1:1/api/search?code=abc123", "query parameter 'code'")]:
        with pytest.raises(ConfigurationError, match=named) as refused:  # a key written out in the URL
            open_retriever({"kind": "http", "url": url})
        assert "sk-live-123" not in str(refused.value) and "hunter2pw" not in str(refused.value)
    open_retriever({"kind": "http", "url": "http://127.0.0.1:1/s?index=book&keyword=x"}).close()
    with pytest.raises(ConfigurationError, match="unknown field"):
        open_retriever({"kind": "http", "url": "http://127.0.0.1:1/s", "fields": {"text": "x"}})


def test_answers_read_as_search_responses_with_errors_kept_apart_from_empty_answers(endpoint):
    r = open_retriever({"kind": "http", "url": endpoint.url})
    down = open_retriever({"kind": "http", "url": f"http://127.0.0.1:{closed_port()}/search", "timeout_s": 2})
    try:
        ok = AnsweringSearch(r).search_many(["What is ROS 2?"], top_k=3, similarity_threshold=0.4)[0]
        bad = AnsweringSearch(down).search("What is ROS 2?")
    finally:
        r.close()
        down.close()
    assert [x.chunk_id for x in ok.results] == ["c1", "c2"]  # c3 (0.31) dropped by the threshold, and said
    assert any("below 0.4" in w for w in ok.warnings) and ok.error is None
    assert ok.results[0].raw_score == pytest.approx(0.81) and ok.results[0].source_file.endswith("what-is-ros2.md")
    assert bad.error and bad.error.startswith("unreachable") and bad.results == []


def test_a_probe_answered_empty_asks_the_next_question_and_says_so_and_stops_after_its_tries():
    def thresholded(query: str, top_k: int):  # a chatbot whose threshold empties every answer but one
        return search_results_shape(BOOK[:top_k] if "ROS" in query else [], query)

    with TeamEndpoint(thresholded) as ep:
        report = probe_retriever({"kind": "http", "url": ep.url}, "What is this book about?",
                                 more=["What is Gazebo?", "What is ROS 2?", "never asked"])
        asked = [r["query"] for r in ep.requests]
        assert report.ok and report.question == "What is ROS 2?" and report.results == "results"
        assert report.evidence[0].startswith("2 question(s) answered with no results first")
        assert asked == ["What is this book about?", "What is Gazebo?", "What is ROS 2?"]
        empty = probe_retriever({"kind": "http", "url": ep.url}, "a", more=["b", "c", "d", "e", "f"])
    assert not empty.ok and empty.error_kind == "empty answer" and "all 4 questions tried" in empty.error
    assert "a similarity threshold or a filter" in empty.error and empty.question == "a"
