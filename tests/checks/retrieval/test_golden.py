"""Golden-set evaluation (seed 004) and the full payload scan behind metadata completeness."""

from __future__ import annotations

import hashlib
import math

import pytest
import yaml
from fakes.embedders import FakeEmbedder
from qdrant_client import models

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.collection.collection_health import scan_payloads
from retrieval_lib.checks.retrieval.golden_set import evaluate_golden, load_golden_set, url_matches
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS

MODEL = "axis-embedder"
PAGES = ["/docs/intro", "/docs/introduction/setup", "/docs/m1/ik", "/docs/m1/arm", "/docs/m2/gazebo"]


AXES = {"intro": 0, "introduction": 1, "ik": 2, "arm": 3, "gazebo": 4, "pizza": 5}


def axis_vector(text: str) -> list[float]:
    """Each known query points straight at one page's vector: scores are exact and predictable."""
    v = [0.0] * 6
    if text.endswith("halfway"):  # cosine 0.8 with the arm page, 0.6 with the gazebo page
        v[3], v[4] = 0.8, 0.6
        return v
    v[AXES[text.split()[-1]]] = 1.0
    return v


def axis_embedder() -> FakeEmbedder:
    return FakeEmbedder(axis_vector, model=MODEL, dimension=6, max_tokens=512)


def payload(page: str, seq: int = 0, **override):
    content = f"content of {page} #{seq}"
    p = {"chunk_id": f"{page}#{seq}", "source_file": page.removeprefix("/docs/") + ".md",
         "source_url": "https://book.example" + page, "title": page, "section_title": "S", "content": content,
         "content_hash": hashlib.sha256(content.encode()).hexdigest(), "chunk_sequence": seq, "total_chunks": 1,
         "processing_timestamp": "2026-01-01T00:00:00+00:00", "token_count": 4, "model_version": MODEL}
    p.update(override)
    return {k: v for k, v in p.items() if v is not None}


@pytest.fixture()
def retriever():
    store = VectorStore.in_memory()
    store.create_collection("g", 6)
    axes = ["intro", "introduction", "ik", "arm", "gazebo"]
    store.upsert("g", [models.PointStruct(id=i + 1, vector=axis_vector(a), payload=payload(p))
                       for i, (a, p) in enumerate(zip(axes, PAGES))])
    yield Retriever(store, axis_embedder(), "g")
    store.close()


def golden_file(tmp_path, **data):
    base = {"top_k": 3, "min_score": 0.6, "required_passes": 2,
            "queries": [{"query": "about ik", "expected_url_patterns": ["/docs/m1/ik"]},
                        {"query": "about arm", "expected_url_patterns": ["/docs/m1"]},
                        {"query": "about gazebo", "expected_url_patterns": ["/docs/m1/arm"]}],
            "negatives": [{"query": "about pizza", "max_score": 0.5}]}
    base.update(data)
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


def test_patterns_match_whole_path_segments_not_spellings():
    assert url_matches("https://b/docs/intro", "/docs/intro")
    assert url_matches("https://b/docs/intro/more", "/docs/intro/")
    assert not url_matches("https://b/docs/introduction/setup", "/docs/intro")
    assert url_matches("https://b/docs/m1/ik", "https://b/docs/m1")


def test_seed_criteria_pass_with_enough_golden_hits_and_clean_negatives(retriever, tmp_path):
    report = evaluate_golden(retriever, load_golden_set(golden_file(tmp_path)), vector_count=5,
                             metadata_completeness=100.0)
    assert report.passed_queries == 2 and report.passed is True
    assert report.failed_queries == [{"query": "about gazebo", "reason": report.failed_queries[0]["reason"]}]
    assert "no expected page" in report.failed_queries[0]["reason"]
    assert report.negatives_passed == 1 and report.negatives_total == 1
    # hit@3: 2 of 3 queries have a relevant page in the top 3; MRR: ranks 1, 1, none
    assert math.isclose(report.hit_at_k, 2 / 3) and math.isclose(report.mrr, 2 / 3)


def test_negatives_are_never_counted_as_golden_passes(retriever, tmp_path):
    path = golden_file(tmp_path, required_passes=3, negatives=[{"query": "about pizza", "max_score": 0.5}])
    report = evaluate_golden(retriever, load_golden_set(path), vector_count=5, metadata_completeness=100.0)
    assert report.passed_queries == 2  # the clean negative does not lift this to 3
    assert report.passed is False


def test_a_negative_scoring_above_its_limit_fails_the_set(retriever, tmp_path):
    path = golden_file(tmp_path, negatives=[{"query": "about gazebo", "max_score": 0.5}])
    report = evaluate_golden(retriever, load_golden_set(path), vector_count=5, metadata_completeness=100.0)
    assert report.passed_queries == 2 and report.negatives_passed == 0 and report.passed is False


def test_an_expected_page_below_min_score_is_a_failure_with_its_reason(retriever, tmp_path):
    path = golden_file(tmp_path, min_score=0.9, required_passes=1,
                       queries=[{"query": "arm halfway", "expected_url_patterns": ["/docs/m1/arm"]}])
    report = evaluate_golden(retriever, load_golden_set(path), vector_count=5, metadata_completeness=100.0)
    outcome = report.outcomes[0]
    assert outcome.passed is False and report.passed is False
    assert outcome.first_relevant_rank == 1 and math.isclose(outcome.best_relevant_score, 0.8, abs_tol=1e-4)
    assert "< min_score 0.9" in outcome.reason
    relaxed = golden_file(tmp_path, min_score=0.75, required_passes=1,
                          queries=[{"query": "arm halfway", "expected_url_patterns": ["/docs/m1/arm"]}])
    assert evaluate_golden(retriever, load_golden_set(relaxed), vector_count=5,
                           metadata_completeness=100.0).passed is True


def test_ndcg_counts_every_matching_page_as_relevant(retriever, tmp_path):
    path = golden_file(tmp_path, required_passes=1,
                       queries=[{"query": "about ik", "expected_url_patterns": ["/docs/m1"]}])
    report = evaluate_golden(retriever, load_golden_set(path), vector_count=5, metadata_completeness=100.0)
    # relevant pages: /docs/m1/ik and /docs/m1/arm; only ik scores above 0, the rest tie at 0 and rank by id
    assert report.hit_at_k == 1.0 and report.mrr == 1.0
    assert 0.6 < report.ndcg_at_k <= 1.0


@pytest.mark.parametrize("change, field", [
    ({"top_k": 0}, "top_k"), ({"min_score": 1.5}, "min_score"), ({"queries": []}, "queries"),
    ({"required_passes": 9}, "required_passes"),
    ({"queries": [{"query": "x", "expected_url_patterns": []}]}, "queries"),
    ({"negatives": [{"query": "", "max_score": 0.5}]}, "negatives"),
])
def test_invalid_golden_files_name_the_field(tmp_path, change, field):
    with pytest.raises(ValidationError) as err:
        load_golden_set(golden_file(tmp_path, **change))
    assert err.value.field.startswith(field)


def test_payload_scan_reads_every_point_and_finds_gaps_duplicates_and_foreign_models():
    store = VectorStore.in_memory()
    store.create_collection("h", 6)
    points = [payload(f"/docs/p{i}", 0) for i in range(600)]  # more than one scroll page
    points[1] = payload("/docs/p1", 0, section_title=None, token_count=None)
    points[2] = payload("/docs/p2", 0, model_version="other-model")
    points[3] = {**payload("/docs/p3", 0), "content": points[4]["content"], "content_hash": points[4]["content_hash"]}
    store.upsert("h", [models.PointStruct(id=i + 1, vector=[1, 0, 0, 0, 0, 0], payload=p)
                       for i, p in enumerate(points)])
    scan = scan_payloads(store, "h", expected_model=MODEL, batch_size=128)
    assert scan.points == 600
    assert scan.field_present["section_title"] == 599 and scan.field_present["token_count"] == 599
    assert scan.complete_points == 599 and math.isclose(scan.metadata_completeness, 100 * 599 / 600)
    assert list(scan.duplicate_hashes.values()) == [2]
    assert scan.foreign_model_points == 1 and scan.model_versions["other-model"] == 1
    assert set(scan.field_present) == set(PAYLOAD_FIELDS)
    assert any("other than" in w for w in scan.warnings) and any("repeat" in w for w in scan.warnings)


def test_payload_scan_of_an_empty_collection_warns():
    store = VectorStore.in_memory()
    store.create_collection("e", 6)
    scan = scan_payloads(store, "e", expected_model=MODEL)
    assert scan.points == 0 and len(scan.warnings) == 1 and "is empty" in scan.warnings[0]
