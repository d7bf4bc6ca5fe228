"""The mapping from a retriever's answer to the workbook's names: JMESPath, and its inference from one answer."""

from __future__ import annotations

import pytest

from retrieval_lib.errors import ConfigurationError
from retrieval_lib.retrievers import NoResultsList, ResultMapping, infer_mapping
from retrieval_lib.retrievers.mapping import jmespath_of


def test_the_post_search_backend_shape_is_read_without_a_mapping_written_by_hand():
    answer = {"results": [{"id": f"u{i}", "content": "Gazebo simulates robots with physics and sensors " * 3,
                           "score": 0.9 - i / 10, "source_document": f"docs/m2/gazebo-{i}.md",
                           "metadata": {"chapter": "Simulation"}, "chunk_index": i} for i in range(3)],
              "query": "gazebo", "search_time_ms": 12.5}
    results, fields, evidence = infer_mapping(answer)
    assert results == "results"
    assert fields["content"] == "content" and fields["score"] == "score" and fields["chunk_id"] == "id"
    assert fields["source_file"] == "source_document" and fields["title"] == "metadata.chapter"
    hits = ResultMapping(results, fields).hits(answer, 2)
    assert [h.chunk_id for h in hits] == ["u0", "u1"] and hits[1].score == pytest.approx(0.8)
    assert hits[0].title == "Simulation" and evidence[0].startswith("results: `results`, a list of 3 objects")


def test_the_function_backend_shape_a_bare_list_of_dicts():
    answer = [{"text": "ROS 2 nodes talk over topics and services, with QoS " * 2, "chapter": "ros2",
               "url": f"https://book.example/docs/ros2/p{i}", "score": 0.5, "title": f"Page {i}"} for i in range(3)]
    results, fields, _ = infer_mapping(answer)
    assert results == "@"
    assert fields == {"content": "text", "source_url": "url", "title": "title", "score": "score"}


def test_nested_lists_keys_that_need_quoting_and_scores_under_metadata():
    answer = {"data": {"matches": [{"page content": "A long enough text about humanoid robots walking." * 2,
                                    "metadata": {"source": f"docs/p{i}.md", "similarity": 0.7}}
                                   for i in range(3)]}}
    results, fields, _ = infer_mapping(answer)
    assert results == "data.matches"
    assert fields["content"] == '"page content"' and fields["score"] == "metadata.similarity"
    assert ResultMapping(results, fields).hits(answer, 5)[2].source_file == "docs/p2.md"
    assert jmespath_of("metadata.source url") == 'metadata."source url"'


def test_a_list_of_strings_is_a_list_of_contents_and_ranks_stand_in_for_scores():
    results, fields, evidence = infer_mapping({"documents": ["first passage", "second passage"]})
    assert (results, fields) == ("documents", {"content": "@"})
    hits = ResultMapping(results, fields).hits({"documents": ["first passage", "second passage"]}, 5)
    assert [h.content for h in hits] == ["first passage", "second passage"] and hits[0].score is None


def test_no_list_names_the_keys_that_are_there():
    with pytest.raises(NoResultsList, match="keys answer, sources_count"):
        infer_mapping({"answer": "ROS 2 is...", "sources_count": 0})
    with pytest.raises(NoResultsList, match="'hits' finds nothing"):
        ResultMapping("hits", {"content": "text"}).result_list({"results": []})


def test_an_invalid_jmespath_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="invalid JMESPath"):
        ResultMapping("results[", {})


def test_an_empty_text_key_stays_the_content_and_the_id_is_the_chunk_id():
    """A backend whose reader asks for a key the ingest never wrote answers `content: ""`: the mapping keeps
    `content` (so side by side names the empty text), never the longest strings left, the ids."""
    answer = {"results": [{"id": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "content": "",
                           "score": 0.7, "source_document": f"https://book.example/docs/p{i}"} for i in range(3)]}
    _, fields, evidence = infer_mapping(answer)
    assert fields["content"] == "content" and fields["chunk_id"] == "id"
    assert any("0 of 3 results hold text there" in e for e in evidence)


def test_an_empty_first_answer_is_an_empty_result_and_the_mapping_waits_for_results():
    from retrieval_lib.retrievers.base import MappedRetriever
    from retrieval_lib.retrievers.mapping import empty_results
    from retrieval_lib.retrievers.spec import RetrieverSpec

    answers = iter([{"results": [], "query": "q1", "search_time_ms": 3},
                    {"results": [{"id": "a", "content": "Gazebo simulates robots with physics " * 2,
                                  "score": 0.8}], "query": "q2"}])

    class Scripted(MappedRetriever):
        def _call(self, query, top_k):
            return next(answers)

        def describe(self):
            return "scripted"

    r = Scripted(RetrieverSpec(kind="http", url="http://127.0.0.1:9/search"))
    first, second = r.ask("q1", 5), r.ask("q2", 5)
    assert first.error is None and first.hits == []
    assert second.error is None and second.hits[0].chunk_id == "a"
    assert empty_results([]) and empty_results({"hits": [], "took": 1})
    assert not empty_results({"took": 1}) and not empty_results({"results": [{"a": 1}]})


@pytest.mark.parametrize("empty", [
    {"results": [], "query_terms": ["zzz", "unrelated"]},  # a list of strings beside the empty results
    {"hits": [], "facets": [{"name": "topic", "count": 3}]},  # a list of objects beside them
    {"data": {"results": [], "total": 0}},  # under a wrapper
    {"hits": {"total": {"value": 0}, "hits": []}},  # Elasticsearch, nothing matched
])
def test_an_empty_result_list_is_an_empty_answer_whatever_lies_beside_it_and_never_the_mapping(empty):
    from retrieval_lib.retrievers.base import MappedRetriever
    from retrieval_lib.retrievers.mapping import empty_results
    from retrieval_lib.retrievers.spec import RetrieverSpec

    full = {"results": [{"id": "a", "content": "Gazebo simulates robots with physics " * 2, "score": 0.8}],
            "query_terms": ["gazebo"]}
    answers = iter([empty, full])

    class Scripted(MappedRetriever):
        def _call(self, query, top_k):
            return next(answers)

        def describe(self):
            return "scripted"

    assert empty_results(empty) and not empty_results(full)
    r = Scripted(RetrieverSpec(kind="http", url="http://127.0.0.1:9/search"))
    first, second = r.ask("q1", 5), r.ask("q2", 5)
    assert first.error is None and first.hits == []
    assert r.mapping.results == "results" and second.hits[0].chunk_id == "a"


def test_a_single_result_with_a_web_address_under_a_file_name_is_the_url():
    """One result makes every value "constant": the URL rule of payload roles cannot see it, so a web address
    under ``source_document`` must still be the URL (05 matches pages by URL), never a file."""
    answer = {"results": [{"id": "u1", "content": "Physical AI is intelligence embodied in machines " * 3,
                           "score": 0.76, "source_document": "https://book.example/docs/intro/01-physical-ai",
                           "metadata": {"title": "What Is Physical AI?"}}]}
    _, fields, _ = infer_mapping(answer)
    assert fields.get("source_url") == "source_document" and "source_file" not in fields
    single_path = {"results": [{"content": "Gazebo simulates robots with physics " * 3, "score": 0.5,
                                "source_document": "docs/m2/gazebo.md"}]}
    _, fields, _ = infer_mapping(single_path)
    assert fields.get("source_file") == "source_document" and "source_url" not in fields


@pytest.mark.parametrize("expr", ["text", "metadata.url", '"source url"', "metadata.\"x y\" || title", "a || b",
                                  "@", "metadata.deep.key", "results[0].text", "length(text)"])
def test_key_only_expressions_read_directly_give_what_the_jmespath_interpreter_gives(expr):
    import jmespath

    from retrieval_lib.retrievers.mapping import _direct

    values = [{"text": "t", "metadata": {"url": "/u", "x y": "", "deep": {"key": 0}}, "title": "T", "a": [], "b": 0,
               "source url": "s", "results": [{"text": "r"}]},
              {"text": None, "metadata": "not an object", "a": {}, "b": False, "title": None},
              {"metadata": {"x y": "xy", "deep": None}, "a": "", "b": "b"}, ["a list"], "a string", None]
    compiled = jmespath.compile(expr)
    read = _direct(compiled.parsed)
    for value in values:
        if expr == "length(text)" or expr.startswith("results["):
            assert read is None  # beyond keys: the interpreter answers
            continue
        assert read is not None and read(value) == compiled.search(value), (expr, value)
    mapping = ResultMapping("@", {"content": expr if read is not None else "text"})
    assert mapping.hits(values[:3], 3)[0].rank == 1
