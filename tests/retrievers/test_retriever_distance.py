"""A retriever that answers a distance (lower is better): mapped as ``distance``, read once as 1 - distance (a cosine
distance), inferred by name or by scores that rise down the ranking, and said by the probe."""

from __future__ import annotations

import pytest
from team_endpoint import TeamEndpoint

from retrieval_lib.errors import ConfigurationError
from retrieval_lib.retrievers import AnsweringSearch, ResultMapping, infer_mapping, open_retriever, probe_retriever
from retrieval_lib.retrievers.as_search import NO_SCORE
from retrieval_lib.retrievers.mapping import similarity_from_distance
from retrieval_lib.retrievers.open import parse_spec

pytestmark = pytest.mark.usefixtures("no_proxies")

SITE = "https://book.example/docs"
TEXT = "ROS 2 is a middleware framework for robot software, with nodes, topics and services. "


def team12(query: str, top_k: int, distances=(0.222, 0.301, 0.35, 0.41, 0.47)):
    """Team #12's answer (FastAPI, LangChain-style): ``data.hits`` of page_content, metadata, distance = 1 - cos."""
    return {"data": {"hits": [{"page_content": f"{TEXT} part {i}", "distance": d,
                               "metadata": {"source": f"{SITE}/p{i}", "title": f"Page {i}", "chunk": i}}
                              for i, d in enumerate(distances[:top_k])]}}


def test_a_key_named_distance_is_inferred_as_a_distance_and_read_as_one_minus_it():
    answer = team12("q", 5)
    results, fields, evidence = infer_mapping(answer)
    assert results == "data.hits" and fields["distance"] == "distance" and "score" not in fields
    said = next(e for e in evidence if e.startswith("distance:"))
    assert "named like a distance" in said and "assumes a cosine distance" in said
    assert not any("not found" in e and "score" in e for e in evidence)
    hits = ResultMapping(results, fields).hits(answer, 5)
    assert [h.score for h in hits] == pytest.approx([0.778, 0.699, 0.65, 0.59, 0.53])


@pytest.mark.parametrize("name", ["dist", "_distance", "metadata.distance"])
def test_other_distance_names_are_distances_too(name):
    def item(i, d):
        key, *nest = reversed(name.split("."))
        return {"text": TEXT, **({nest[0]: {key: d}} if nest else {key: d})}

    _, fields, _ = infer_mapping({"results": [item(0, 0.1), item(1, 0.2)]})
    assert fields["distance"] == name and "score" not in fields


def test_a_score_that_rises_down_the_ranking_is_a_distance_and_one_that_falls_is_a_score():
    rising = {"results": [{"text": TEXT, "score": s} for s in (0.21, 0.30, 0.30, 0.44)]}
    _, fields, evidence = infer_mapping(rising)
    assert fields.get("distance") == "score" and "score" not in fields
    assert any("rise down the ranking (0.21, 0.3, 0.3, 0.44)" in e and "cosine" in e for e in evidence)
    falling = {"results": [{"text": TEXT, "score": s} for s in (0.8, 0.6, 0.6)]}
    assert infer_mapping(falling)[1].get("score") == "score"


def test_a_distance_that_cannot_be_cosine_gives_no_score_so_ranks_stand_in():
    answer = {"results": [{"text": TEXT, "_distance": d} for d in (4.5, 7.25)]}
    results, fields, evidence = infer_mapping(answer)
    assert any("outside [0, 2]" in e and "ranks stand in" in e for e in evidence)
    assert [h.score for h in ResultMapping(results, fields).hits(answer, 5)] == [None, None]
    assert similarity_from_distance(2.0) == pytest.approx(-1.0) and similarity_from_distance(-0.5) is None
    assert similarity_from_distance(float("nan")) is None and similarity_from_distance(-1e-9) == 1.0


def test_a_profile_maps_distance_by_name_and_a_score_mapped_to_a_distance_key_is_read_as_one_with_a_note():
    spec = parse_spec({"kind": "http", "url": "http://127.0.0.1:9/s", "results": "data.hits",
                       "fields": {"content": "page_content", "distance": "distance"}})
    assert spec.fields["distance"] == "distance"
    with pytest.raises(ConfigurationError, match="the names are .*distance"):
        parse_spec({"kind": "http", "url": "http://127.0.0.1:9/s", "fields": {"similarity": "s"}})
    mapping = ResultMapping("data.hits", {"score": "distance", "content": "page_content"})
    assert mapping.fields == {"distance": "distance", "content": "page_content"}
    assert "write `distance: distance`" in mapping.notes[0] and "cosine" in mapping.notes[0]
    assert mapping.hits(team12("q", 1), 1)[0].score == pytest.approx(0.778)
    both = ResultMapping("data.hits", {"score": "metadata.chunk", "distance": "distance"})  # a score wins
    assert both.hits(team12("q", 2), 2)[1].score == 1.0


def test_the_probe_of_team_12s_endpoint_says_it_read_a_distance_and_why(monkeypatch):
    monkeypatch.setenv("TEAM12_KEY", "k-0123456789")
    with TeamEndpoint(team12) as ep:
        spec = {"kind": "http", "url": ep.url, "method": "GET", "headers": {"X-API-Key": "${TEAM12_KEY}"}}
        report = probe_retriever(spec, "What is ROS 2?")
        assert report.ok, report.error
        assert report.spec["fields"]["distance"] == "distance" and "score" not in report.spec["fields"]
        text = "\n".join(report.lines())
        assert "distance: `distance`, a number named like a distance" in text and "assumes a cosine distance" in text
        assert "#1 https://book.example/docs/p0  distance 0.222 -> score 0.778" in text
        # the profile of the tour (`score: distance`) is read as the distance, and the probe writes it so
        mapped = probe_retriever({**spec, "results": "data.hits",
                                  "fields": {"content": "page_content", "score": "distance"}}, "What is ROS 2?")
        assert mapped.spec["fields"] == {"content": "page_content", "distance": "distance"}
        assert any("mapped as the score but named like a distance" in e for e in mapped.evidence)
        # a score under another name whose values rise down the ranking: the probe writes it as a distance
        rising = probe_retriever({**spec, "results": "data.hits",
                                  "fields": {"content": "page_content", "score": "metadata.chunk"}}, "q")
        assert rising.spec["fields"]["distance"] == "metadata.chunk"
        assert any("rises down the ranking (0, 1, 2, 3)" in e for e in rising.evidence)
        # the tour's other profile maps no score at all: the probe adds the distance the answer holds
        unmapped = probe_retriever({**spec, "results": "data.hits", "fields": {"content": "page_content"}}, "q")
        assert unmapped.spec["fields"] == {"content": "page_content", "distance": "distance"}
        assert any(e.startswith("distance: `distance`, a number named like a distance") and "added" in e
                   for e in unmapped.evidence)
        assert unmapped.hits[0]["score"] == pytest.approx(0.778)


def test_a_distance_retriever_answers_the_notebooks_similarities_and_its_threshold_drops_the_far_ones():
    with TeamEndpoint(team12) as ep:
        r = open_retriever({"kind": "http", "url": ep.url, "method": "GET"})
        try:
            search = AnsweringSearch(r)
            response = search.search("What is ROS 2?", top_k=5, similarity_threshold=0.6)
        finally:
            r.close()
    assert [round(x.similarity_score, 3) for x in response.results] == [0.778, 0.699, 0.65]
    assert NO_SCORE not in response.warnings and "2 result(s) scored below 0.6" in " ".join(response.warnings)


def test_a_profiles_distance_is_never_overridden_by_an_inferred_score():
    def answer(query, top_k):
        return {"results": [{"text": f"{TEXT} {i}", "score": 9 - i, "dist": d} for i, d in enumerate((0.2, 0.5))]}

    with TeamEndpoint(answer) as ep:
        r = open_retriever({"kind": "http", "url": ep.url, "fields": {"distance": "dist"}})
        try:
            hits = r.ask("q", 2).hits
        finally:
            r.close()
    assert "score" not in r.mapping.fields and [h.score for h in hits] == pytest.approx([0.8, 0.5])
