"""Reviewing drafted validation sets (retrieval_lib.judging.review, yaml_edit, review_view): each click edits the right
entry, atomically, idempotently, and never a hand-written one. The fixtures keep to .helpers/draft_format.md."""

from __future__ import annotations

import difflib
import os

import pytest
import yaml

from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.judging import DraftReview, ReviewWidget, load_draft_entries, open_review
from retrieval_lib.judging.yaml_edit import DROP, edit_entry

GOLDEN = """\
# Drafted by python -m retrieval_lib draft (issue 23). Review in notebook 13.
name: book-drafted
top_k: 5
min_score: 0.5
required_passes: 2
queries:
  # hand-written, kept by the re-draft
  - query: What is ROS2?
    expected_url_patterns: [module-01-ros2/]
  - query: What is inverse kinematics?
    expected_url_patterns: [module-04-humanoid/02-kinematics.md]
    origin: drafted
    draft_id: 3f1c0a9b2e7d
    drafted_from: {kind: heading, chunk_id: "k#3", text: "Inverse kinematics"}   # kind: heading|title|lead
  - query: Gazebo plugins
    expected_url_patterns: [module-02-simulation/03-gazebo.md]
    origin: drafted
    draft_id: aa11bb22cc33
    drafted_from: {kind: title, chunk_id: "g#0", text: "Gazebo plugins"}
negatives:
  - query: What is the best pizza recipe?
    max_score: 0.5
    origin: drafted
    draft_id: 9a0b1c2d3e4f
  - query: How do I file my taxes?
    max_score: 0.5
"""

QUERIES = """\
# drafted query sets
in_domain:
  - What is a URDF file?
  - {query: "What is inverse kinematics?", origin: drafted, draft_id: 3f1c0a9b2e7d,
     source: module-04-humanoid/02-kinematics.md}
out_of_domain:
  - {query: "What is the best pizza recipe?", origin: drafted, draft_id: 9a0b1c2d3e4f}
  - Who won the 1998 World Cup?
"""

TOPICS = """\
topics:
  - topic: Gazebo simulation          # from the folder name
    expected_prefix: module-02-simulation/
    origin: drafted
    draft_id: 5e5e5e5e5e5e
"""


@pytest.fixture
def drafts(tmp_path):
    folder = tmp_path / "drafts"
    folder.mkdir()
    for name, text in (("golden.yaml", GOLDEN), ("queries.yaml", QUERIES), ("topics.yaml", TOPICS)):
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """(lines only in ``before``, lines only in ``after``)."""
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [x[2:] for x in diff if x.startswith("- ")], [x[2:] for x in diff if x.startswith("+ ")]


def entries(folder, name, section):
    return yaml.safe_load((folder / name).read_text())[section]


def test_the_review_sees_drafted_entries_only_one_item_per_draft_id(drafts):
    r = open_review(drafts / "golden.yaml", "params/query_sets/sample_book.yaml")
    assert [p.name for p in r.paths] == ["golden.yaml", "queries.yaml", "topics.yaml"]
    assert [(it.kind, it.text, it.files) for it in r.items] == [
        ("query", "What is inverse kinematics?", ("golden.yaml", "queries.yaml")),
        ("query", "Gazebo plugins", ("golden.yaml",)),
        ("negative", "What is the best pizza recipe?", ("golden.yaml", "queries.yaml")),
        ("topic", "Gazebo simulation", ("topics.yaml",)),
    ]
    assert r.items[0].drafted_from == "Inverse kinematics" and r.items[3].expected == ("module-02-simulation/",)
    assert r.progress == (0, 4) and "4 drafted entries" in r.summary()


def test_hand_written_parameters_give_nothing_to_review_in_one_line():
    r = open_review("params/golden/sample_book.yaml", "params/query_sets/sample_book.yaml")
    assert r.items == [] and r.paths == []
    assert r.summary().startswith("No drafted entries") and "\n" not in r.summary()


def test_accept_edits_only_that_entry_in_each_file_and_keeps_every_comment(drafts):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml"])
    it = r.accept("3f1c0a9b2e7d")
    assert it.state == "accepted" and it.reviewed
    golden = (drafts / "golden.yaml").read_text()
    assert changed_lines(GOLDEN, golden) == (["    origin: drafted"], ["    origin: reviewed"])
    # the other drafted entry with 'origin: drafted' (Gazebo) is untouched: only the first one changed
    assert golden.count("origin: drafted") == GOLDEN.count("origin: drafted") - 1
    queries = (drafts / "queries.yaml").read_text()
    assert changed_lines(QUERIES, queries) == (
        ['  - {query: "What is inverse kinematics?", origin: drafted, draft_id: 3f1c0a9b2e7d,'],
        ['  - {query: "What is inverse kinematics?", origin: reviewed, draft_id: 3f1c0a9b2e7d,'])
    assert entries(drafts, "golden.yaml", "queries")[1]["draft_id"] == "3f1c0a9b2e7d"  # draft_id kept


def test_reject_adds_status_after_the_entry_and_loaders_data_stays_whole(drafts):
    r = DraftReview([drafts / "golden.yaml"])
    r.reject("aa11bb22cc33")
    text = (drafts / "golden.yaml").read_text()
    removed, added = changed_lines(GOLDEN, text)
    assert removed == ["    origin: drafted"] and added == ["    origin: reviewed", "    status: rejected"]
    item = entries(drafts, "golden.yaml", "queries")[2]
    assert item["status"] == "rejected" and item["origin"] == "reviewed" and item["query"] == "Gazebo plugins"
    assert r.item("aa11bb22cc33").state == "rejected"
    # accept after reject takes the status away again; the entry stays reviewed
    r.accept("aa11bb22cc33")
    item = entries(drafts, "golden.yaml", "queries")[2]
    assert "status" not in item and item["origin"] == "reviewed"


def test_edit_changes_the_question_keeps_draft_id_and_reaches_both_files(drafts):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml"])
    it = r.edit("3f1c0a9b2e7d", "  How does inverse kinematics work, step by step?  ")
    assert it.text == "How does inverse kinematics work, step by step?" and it.state == "accepted"
    g = entries(drafts, "golden.yaml", "queries")[1]
    q = entries(drafts, "queries.yaml", "in_domain")[1]
    assert g["query"] == q["query"] == "How does inverse kinematics work, step by step?"
    assert g["draft_id"] == q["draft_id"] == "3f1c0a9b2e7d" and g["origin"] == q["origin"] == "reviewed"
    # in the flow mapping the comma needs quotes; the plain block line does not
    assert "  - query: How does inverse kinematics work, step by step?" in (drafts / "golden.yaml").read_text()
    assert '{query: "How does inverse kinematics work, step by step?"' in (drafts / "queries.yaml").read_text()


@pytest.mark.parametrize("text", ["Qu'est-ce que la cinématique inverse ?", 'A "quoted" # not a comment: x',
                                  "yes", "- dash first", "ends with colon:"])
def test_an_edited_question_reads_back_exactly(drafts, text):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml"])
    r.edit("3f1c0a9b2e7d", text)
    assert entries(drafts, "golden.yaml", "queries")[1]["query"] == text
    assert entries(drafts, "queries.yaml", "in_domain")[1]["query"] == text
    assert (drafts / "golden.yaml").read_text().startswith("# Drafted by")  # comments kept
    assert r.comments_kept


@pytest.mark.parametrize("bad", ["", "   ", "x" * 501])
def test_an_empty_or_overlong_edit_is_refused_and_nothing_is_written(drafts, bad):
    r = DraftReview([drafts / "golden.yaml"])
    with pytest.raises(ValidationError):
        r.edit("3f1c0a9b2e7d", bad)
    assert (drafts / "golden.yaml").read_text() == GOLDEN


def test_mark_answerable_only_for_a_negative(drafts):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml"])
    it = r.mark_answerable("9a0b1c2d3e4f")
    assert it.state == "answerable"
    assert entries(drafts, "golden.yaml", "negatives")[0]["answerable"] is True
    assert entries(drafts, "queries.yaml", "out_of_domain")[0]["answerable"] is True
    with pytest.raises(ValidationError, match="only a negative"):
        r.mark_answerable("aa11bb22cc33")
    # accepting the negative after all takes 'answerable' away
    assert r.accept("9a0b1c2d3e4f").state == "accepted"
    assert "answerable" not in entries(drafts, "golden.yaml", "negatives")[0]


def test_every_click_is_idempotent_the_second_writes_nothing(drafts):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml", drafts / "topics.yaml"])
    for click in (lambda: r.reject("5e5e5e5e5e5e"), lambda: r.accept("3f1c0a9b2e7d"),
                  lambda: r.mark_answerable("9a0b1c2d3e4f"), lambda: r.edit("aa11bb22cc33", "Gazebo plugin API")):
        click()
        before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in r.paths}
        click()
        assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in r.paths} == before


def test_hand_written_entries_are_never_touched(drafts):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml", drafts / "topics.yaml"])
    r.accept("3f1c0a9b2e7d")
    r.reject("aa11bb22cc33")
    r.mark_answerable("9a0b1c2d3e4f")
    r.edit("5e5e5e5e5e5e", "Robot simulation in Gazebo")
    golden = yaml.safe_load((drafts / "golden.yaml").read_text())
    assert golden["queries"][0] == {"query": "What is ROS2?", "expected_url_patterns": ["module-01-ros2/"]}
    assert golden["negatives"][1] == {"query": "How do I file my taxes?", "max_score": 0.5}
    assert {k: golden[k] for k in ("name", "top_k", "min_score", "required_passes")} == {
        "name": "book-drafted", "top_k": 5, "min_score": 0.5, "required_passes": 2}
    queries = yaml.safe_load((drafts / "queries.yaml").read_text())
    assert queries["in_domain"][0] == "What is a URDF file?"
    assert queries["out_of_domain"][1] == "Who won the 1998 World Cup?"
    assert "# hand-written, kept by the re-draft" in (drafts / "golden.yaml").read_text()
    assert "# from the folder name" in (drafts / "topics.yaml").read_text()


def test_a_reviewed_entry_stays_reviewed_whatever_the_next_click(drafts):
    r = DraftReview([drafts / "golden.yaml", drafts / "queries.yaml"])
    seen = []
    for click in ("accept", "reject", "edit", "answerable", "accept"):
        if click == "edit":
            r.edit("9a0b1c2d3e4f", "What is the best pizza dough?")
        elif click == "answerable":
            r.mark_answerable("9a0b1c2d3e4f")
        else:
            getattr(r, click)("9a0b1c2d3e4f")
        seen.append(entries(drafts, "golden.yaml", "negatives")[0]["origin"])
    assert seen == ["reviewed"] * 5
    assert DraftReview(r.paths).item("9a0b1c2d3e4f").reviewed  # read back from disk, as after a kernel restart


def test_a_crash_at_the_rename_leaves_the_old_file_whole_and_the_click_can_be_made_again(drafts, monkeypatch):
    r = DraftReview([drafts / "golden.yaml"])

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        r.reject("aa11bb22cc33")
    monkeypatch.undo()
    assert (drafts / "golden.yaml").read_text() == GOLDEN
    assert sorted(p.name for p in drafts.iterdir()) == ["golden.yaml", "queries.yaml", "topics.yaml"]  # no temp
    assert DraftReview([drafts / "golden.yaml"]).item("aa11bb22cc33").state == "drafted"
    assert r.reject("aa11bb22cc33").state == "rejected"


def test_the_widget_shows_the_crash_and_keeps_the_entry(drafts, monkeypatch):
    view = ReviewWidget(DraftReview([drafts / "golden.yaml"]))
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError("disk gone")))
    view.on_accept()
    monkeypatch.undo()
    assert "not saved: disk gone" in view.message.value and view.current.text == "What is inverse kinematics?"
    assert (drafts / "golden.yaml").read_text() == GOLDEN


def test_the_widget_clicks_save_and_move_on_to_the_next_drafted_entry(drafts):
    view = ReviewWidget(open_review(drafts / "golden.yaml"))
    assert view.current.text == "What is inverse kinematics?" and view.answerable.disabled
    view.on_accept()
    assert "saved: accepted" in view.message.value and view.current.text == "Gazebo plugins"
    view.question.value = "Gazebo plugin API"
    view.on_edit()
    assert view.current.kind == "negative" and not view.answerable.disabled
    view.on_answerable()
    view.on_reject()  # the topic
    assert "4 of 4 reviewed" in view.status.value
    assert [it.state for it in view.review.items] == ["accepted", "accepted", "answerable", "rejected"]
    assert entries(drafts, "golden.yaml", "queries")[2]["query"] == "Gazebo plugin API"
    assert view.table.value.count("review-row") == 4 and ">rejected<" in view.table.value


def test_a_malformed_drafted_file_names_the_file_the_entry_and_the_fix(drafts):
    path = drafts / "golden.yaml"
    path.write_text(GOLDEN.replace("    draft_id: aa11bb22cc33\n", ""))
    with pytest.raises(ParamsError, match=r"golden.yaml: queries\[2\] \('Gazebo plugins'\): a drafted entry needs "
                                          r"its 'draft_id'") as err:
        load_draft_entries(path)
    assert err.value.path == str(path) and err.value.key == "queries[2].draft_id"
    path.write_text(GOLDEN.replace("origin: drafted\n    draft_id: aa11", "origin: draft\n    draft_id: aa11"))
    with pytest.raises(ParamsError, match="origin must be 'drafted' or 'reviewed'"):
        load_draft_entries(path)
    path.write_text(GOLDEN.replace("draft_id: aa11bb22cc33", "draft_id: 3f1c0a9b2e7d"))
    with pytest.raises(ParamsError, match=r"repeats queries\[1\]"):
        load_draft_entries(path)
    path.write_text("queries: [\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_draft_entries(path)


def test_an_entry_gone_since_the_view_loaded_is_an_error_not_a_silent_no_op(drafts):
    r = DraftReview([drafts / "topics.yaml"])
    (drafts / "topics.yaml").write_text("topics: []\n")
    with pytest.raises(ValidationError, match="gone"):
        r.accept("5e5e5e5e5e5e")
    assert r.items == []


def test_yaml_edit_drops_a_first_key_and_falls_back_only_when_it_must():
    text = "# keep\nitems:\n  - status: rejected\n    query: q\n  - {status: rejected, query: r}\n"
    out = edit_entry(text, "items", 0, {"status": DROP})
    assert out.comments_kept and yaml.safe_load(out.text)["items"][0] == {"query": "q"}
    out = edit_entry(out.text, "items", 1, {"status": DROP})
    assert yaml.safe_load(out.text)["items"] == [{"query": "q"}, {"query": "r"}] and out.text.startswith("# keep\n")
    assert not edit_entry(out.text, "items", 1, {"status": DROP}).changed
    with pytest.raises(LookupError):
        edit_entry(text, "items", 5, {"status": DROP})
