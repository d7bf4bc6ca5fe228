"""The golden set on a collection whose pages are named by a source file only, no URL (team #3: ``source`` =
``module/page``).

Only the collection's ``source_url`` values were read as its pages, so every query had no relevant page: notebook
05 called a set drafted from this very collection "not applicable: it describes another book", while notebook 15
scored hit@5 0.967 on it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval_lib.checks.retrieval.golden_set import collection_pages, evaluate_golden, golden_absent
from retrieval_lib.models import SearchResponse, SearchResult
from retrieval_lib.params.sets import GoldenQuery, GoldenSet

FILES = {"module-01-ros2/03-urdf": 9, "module-02-simulation/01-why-simulate": 7, "appendices/a-glossary": 12}


class _Store:
    def __init__(self, urls: dict[str, int], files: dict[str, int]):
        self.values = {"source_url": urls, "source_file": files}

    def distinct_values(self, collection: str, key: str, limit: int = 100_000) -> dict[str, int]:
        return self.values.get(key, {})


class _Retriever:
    collection = "team3"

    def __init__(self, store: _Store):
        self.store = store

    def search_many(self, queries, top_k):
        def result(source: str, score: float) -> SearchResult:
            return SearchResult(point_id=source, source_file=source, content="text", similarity_score=score,
                                raw_score=score)

        answers = {"How is a robot described in URDF?": [result("module-01-ros2/03-urdf", 0.61)],
                   "Why simulate first?": [result("appendices/a-glossary", 0.52),
                                           result("module-02-simulation/01-why-simulate", 0.48)]}
        return [SearchResponse(query_text=q, results=answers.get(q, []), total_results=len(answers.get(q, [])),
                               top_k=top_k, similarity_threshold=0.0, collection="team3", model="m", embed_ms=0,
                               search_ms=0, execution_time_ms=0, timestamp=datetime.now(UTC)) for q in queries]


def test_a_collection_without_urls_names_its_pages_by_source_file():
    assert collection_pages(_Store({}, FILES), "team3") == list(FILES)
    urls = {"https://site/docs/ros2/urdf": 9}
    assert collection_pages(_Store(urls, FILES), "team3") == list(urls)  # URLs, where chunks have them


def test_a_golden_set_drafted_from_file_paths_is_judged_not_called_another_book():
    golden = GoldenSet(name="drafted", top_k=5, min_score=0.35, required_passes=2, queries=(
        GoldenQuery("How is a robot described in URDF?", ("module-01-ros2/03-urdf",), 0.35),
        GoldenQuery("Why simulate first?", ("module-02-simulation/01-why-simulate",), 0.35)))
    v = evaluate_golden(_Retriever(_Store({}, FILES)), golden, vector_count=28, metadata_completeness=100.0)
    assert golden_absent(v) is None
    assert [o.relevant_pages for o in v.outcomes] == [("module-01-ros2/03-urdf",),
                                                      ("module-02-simulation/01-why-simulate",)]
    assert v.passed and v.passed_queries == 2 and v.hit_at_k == 1.0 and v.mrr == 0.75
