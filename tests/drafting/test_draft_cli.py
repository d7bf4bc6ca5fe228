"""``python -m retrieval_lib draft`` end to end: a team's collection on disk, the profile inspect would write,
the four files, a re-draft that embeds nothing again, and a bad option as a one-line error."""

from __future__ import annotations

import hashlib

import pytest
import yaml
from qdrant_client import models

from retrieval_lib.cli.main import main
from retrieval_lib.params import load_golden_set, load_query_sets
from retrieval_lib.stores.qdrant import VectorStore

#: One worker builds this module's fixtures (--dist loadgroup); two would build them twice.
pytestmark = pytest.mark.xdist_group("test_draft_cli")

TEXTS = {
    "module-1/kinematics": ("Forward Kinematics", "Forward kinematics chains the joint transforms of an arm from its "
                           "base to its gripper, so that the pose of the hand follows from the joint angles. Each "
                           "link gets a frame, and the homogeneous matrices are multiplied in order along the arm."),
    "module-1/dynamics": ("Rigid Body Dynamics", "The equations of motion of a manipulator relate joint torques to "
                          "accelerations through the mass matrix, the Coriolis terms and gravity. A controller that "
                          "knows them can cancel gravity and track a trajectory with small errors at high speed."),
    "module-2/lidar": ("Lidar Point Clouds", "A lidar sweeps laser pulses across the scene and measures their time "
                       "of flight, returning a cloud of points. Filtering removes the ground and the robot's own "
                       "body before the obstacles are clustered and handed to the local planner of the base."),
    "module-2/cameras": ("Stereo Cameras", "Two cameras a known distance apart see the same point at different "
                         "pixels; the disparity between the two images gives its depth. Calibration finds the "
                         "focal length, the baseline and the distortion before any depth can be trusted at all."),
}


@pytest.fixture(scope="module")
def team_store(tmp_path_factory, embedder):
    folder = tmp_path_factory.mktemp("team") / "store"
    store = VectorStore.at_path(folder)
    store.create_collection("their_book", embedder.dimension)
    rows = [{"text": f"# {title}\n\n## {title} in practice\n\n{body}", "url": f"https://t.example/docs/{path}",
             "title": title, "chunk_index": 0} for path, (title, body) in TEXTS.items()]
    vectors = embedder.embed_documents([r["text"] for r in rows])
    store.upsert("their_book", [models.PointStruct(id=hashlib.md5(r["url"].encode()).hexdigest(), vector=v, payload=r)
                                for r, v in zip(rows, vectors)])
    store.close()
    return folder


def test_draft_writes_the_files_from_a_profile_and_redrafts_from_its_cache(team_store, tmp_path, monkeypatch,
                                                                           capsys):
    monkeypatch.setenv("QDRANT_PATH", str(team_store))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    profile = tmp_path / "their_book.yaml"
    profile.write_text(yaml.safe_dump({"profile": "their_book", "collection": "their_book", "golden_set": "",
                                       "payload_fields": {"content": "text", "source_url": "url", "title": "title",
                                                          "chunk_sequence": "chunk_index",
                                                          "source_file": "url:url"}}))
    out = tmp_path / "draft"
    assert main(["draft", "--out", str(out), "--profile", str(profile), "--per-file", "2"]) == 0
    seen = capsys.readouterr()
    said = seen.out
    assert "known-item queries: 8 drafted for 4 of 4 files" in said and "language: English" in said
    # each stage says it has started, on stderr, so a long draft is not silent (and -q keeps it quiet)
    assert [line.split(" ")[1] for line in seen.err.splitlines() if line.startswith("…")] == \
        ["reading", "drafting", "searching"]
    golden = load_golden_set(out / "golden.yaml")
    assert golden.provenance.drafted == 8
    assert {q.expected_url_patterns for q in golden.queries if "Lidar" in q.query} == {("/docs/module-2/lidar",)}
    assert [q.query for q in golden.queries[:2]] == ["Rigid Body Dynamics", "Rigid Body Dynamics in practice"]
    assert load_query_sets(out / "queries.yaml", required=("in_domain", "out_of_domain"))
    # "module-1", "module-2" name no topic: no topics file, and the profile keeps 03's primary query
    assert "the section name 'module-1' says nothing about its topic" in said and not (out / "topics.yaml").exists()
    drafted = yaml.safe_load((out / "profile.yaml").read_text())
    assert drafted["payload_fields"]["content"] == "text" and drafted["golden_set"].endswith("golden.yaml")
    assert "topics" not in drafted
    # a re-draft asks the same questions: every one comes from DIR/cache, none is embedded again
    assert main(["draft", "--out", str(out), "--profile", str(profile), "--per-file", "2", "-q"]) == 0
    seen = capsys.readouterr()
    assert "embedding: 0 calls for 0 texts" in seen.out and "…" not in seen.err


def test_a_bad_per_file_is_a_one_line_error(tmp_path, capsys):
    assert main(["draft", "--out", str(tmp_path), "--per-file", "0"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --per-file must be 1 or more")
