"""Judgment files (load, validate, save atomically, stale detection) and the labelling session and widget."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import yaml
from fakes.embedders import FakeEmbedder

from retrieval_lib import VectorStore
from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.ingest import ingest
from retrieval_lib.ingest.pipeline import SAMPLE_BOOK
from retrieval_lib.judging.judgments import (
    Judgment,
    JudgmentFile,
    collection_hashes,
    load_judgments,
    qrels_text,
    query_id,
    save_judgments,
    split_stale,
    to_qrels,
)
from retrieval_lib.judging.labeling import Item, LabelingSession, LabelingWidget
from retrieval_lib.models import SearchResult
from retrieval_lib.search import Retriever

CLOCK = "2026-11-23T10:00:00+00:00"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def result(chunk_id: str, text: str, score: float = 0.5) -> SearchResult:
    return SearchResult(point_id=chunk_id, chunk_id=chunk_id, content=text, content_hash=sha(text),
                        similarity_score=score, raw_score=score, title="T", section_title="S",
                        source_file="a.md", source_url="https://x/docs/a")


def items() -> list[Item]:
    return [Item("q1", 1, result("a.md#0", "alpha")), Item("q1", 2, result("a.md#1", "beta")),
            Item("q2", 1, result("a.md#0", "alpha"))]


def session(tmp_path: Path, judge: str = "ann") -> LabelingSession:
    jf = load_judgments(tmp_path / "j.yaml", missing_ok=True)
    return LabelingSession(items(), jf, judge=judge, clock=lambda: CLOCK)


def entry(**over) -> dict:
    e = {"query": "q1", "chunk_id": "a.md#0", "content_hash": sha("alpha"), "grade": 2, "judge": "ann",
         "time": CLOCK}
    return {**e, **over}


def write(tmp_path: Path, entries: list, **top) -> Path:
    p = tmp_path / "j.yaml"
    p.write_text(yaml.safe_dump({"about": "test", "judge": "ann", **top, "judgments": entries}, sort_keys=False))
    return p


# --------------------------------------------------------------------------- files
def test_a_saved_file_loads_back_equal_and_reads_as_qrels(tmp_path):
    jf = JudgmentFile(path=tmp_path / "sub" / "j.yaml", judge="ann", about="read each chunk")
    jf.put(Judgment("q1", "a.md#0", sha("alpha"), 2, "ann", CLOCK, "defines it"))
    jf.put(Judgment("q1", "a.md#1", sha("beta"), 0, "bob", CLOCK))
    save_judgments(jf)
    back = load_judgments(jf.path)
    assert back.judgments == jf.judgments and back.about == "read each chunk" and back.judges() == ["ann", "bob"]
    assert to_qrels(back.judgments) == {"q1": {"a.md#0": 2, "a.md#1": 0}}
    assert qrels_text(back.judgments) == f"{query_id('q1')} 0 a.md#0 2\n{query_id('q1')} 0 a.md#1 0\n"
    assert jf.path.read_text().startswith("# Relevance judgments")


def test_two_judges_of_one_pair_give_the_lower_grade_as_qrel():
    js = [Judgment("q", "c", "h", 2, "ann", CLOCK), Judgment("q", "c", "h", 1, "bob", CLOCK)]
    assert to_qrels(js) == {"q": {"c": 1}}


def test_entries_without_a_judge_take_the_header_judge(tmp_path):
    e = entry()
    del e["judge"]
    assert load_judgments(write(tmp_path, [e])).judgments[0].judge == "ann"


@pytest.mark.parametrize("bad, key, line_of", [
    (entry(grade=3), "judgments[1].grade", "grade"),
    (entry(grade=True), "judgments[1].grade", "grade"),
    (entry(time="yesterday"), "judgments[1].time", "time"),
    (entry(colour="red"), "judgments[1].colour", "colour"),
    ({k: v for k, v in entry().items() if k != "content_hash"}, "judgments[1].content_hash", None),
    (entry(chunk_id=""), "judgments[1].chunk_id", "chunk_id"),
    (entry(), "judgments[1]", None),  # the same (judge, query, chunk) twice
])
def test_a_bad_entry_is_a_params_error_naming_its_line(tmp_path, bad, key, line_of):
    p = write(tmp_path, [entry(), bad])
    with pytest.raises(ParamsError) as err:
        load_judgments(p)
    assert err.value.key == key and err.value.path == str(p)
    lines = p.read_text().splitlines()
    second = [i + 1 for i, line in enumerate(lines) if line.startswith("- ")][1]
    expected = second if line_of is None else next(
        i + 1 for i, line in enumerate(lines) if i + 1 >= second and line.lstrip("- ").startswith(f"{line_of}:"))
    assert f"line {expected}" in str(err.value)


def test_a_misspelt_top_level_key_and_a_missing_file_are_params_errors(tmp_path):
    with pytest.raises(ParamsError, match="unknown key"):
        load_judgments(write(tmp_path, [], judgment=[]))
    with pytest.raises(ParamsError, match="does not exist"):
        load_judgments(tmp_path / "none.yaml")
    assert load_judgments(tmp_path / "none.yaml", missing_ok=True).judgments == []


def test_stale_judgments_are_split_off_with_the_reason():
    js = [Judgment("q", "a#0", sha("alpha"), 2, "ann", CLOCK), Judgment("q", "a#1", sha("beta"), 1, "ann", CLOCK),
          Judgment("q", "a#2", sha("gamma"), 0, "ann", CLOCK)]
    fresh, stale = split_stale(js, {"a#0": sha("alpha"), "a#1": sha("beta, edited")})
    assert fresh == js[:1] and [(s.judgment.chunk_id, s.reason) for s in stale] == [("a#1", "changed"),
                                                                                     ("a#2", "gone")]


def test_rechunking_the_sample_book_makes_judgments_stale(tmp_path):
    """Judge the top 3 of two queries on one chunking; after a re-chunk with another size they are stale."""
    emb = FakeEmbedder.hashed()
    queries = ["How do I simulate a lidar with noise?", "What is a quaternion and why use it?"]
    with VectorStore.in_memory() as a, VectorStore.in_memory() as b:
        ingest(a, emb, "book", SAMPLE_BOOK, max_tokens=200, progress=False)
        ingest(b, emb, "book", SAMPLE_BOOK, max_tokens=120, progress=False)
        jf = JudgmentFile(path=tmp_path / "j.yaml", judge="ann")
        for response in Retriever(a, emb, "book").search_many(queries, top_k=3):
            for r in response.results:
                jf.put(Judgment(response.query_text, r.chunk_id or "", r.content_hash or "", 2, "ann", CLOCK))
        save_judgments(jf)
        judged = load_judgments(jf.path).judgments
        fresh, stale = split_stale(judged, collection_hashes(a, "book"))
        assert len(fresh) == 6 and not stale
        fresh, stale = split_stale(judged, collection_hashes(b, "book"))
        # most chunks change with the size; a short section that fits either size keeps its text, and stays valid
        assert len(stale) >= len(judged) // 2 and {s.reason for s in stale} <= {"gone", "changed"}
        texts = {p.payload["chunk_id"]: p.payload["content"] for p in b.scroll("book")}
        assert all(sha(texts[j.chunk_id]) == j.content_hash for j in fresh)
        assert all(s.judgment.chunk_id not in texts or sha(texts[s.judgment.chunk_id]) != s.judgment.content_hash
                   for s in stale)
        # the judged view of the re-chunked collection uses none of them as if they still applied
        from retrieval_lib.checks.retrieval.judgments import evaluate_judged

        ev = evaluate_judged(Retriever(b, emb, "book"), queries, judged, top_k=3)
        assert len(ev.stale) == len(stale)
        assert sum(r.state == "judged" for r in ev.rows) == len(fresh)


# --------------------------------------------------------------------------- the session (no browser)
def test_each_grade_is_saved_at_once_and_progress_counts_it(tmp_path):
    s = session(tmp_path)
    assert s.progress_text == "0 of 3 judged" and s.current == items()[0]
    s.grade(2, note=" on topic ")
    on_disk = load_judgments(tmp_path / "j.yaml").judgments
    assert [(j.query, j.chunk_id, j.grade, j.judge, j.note, j.time) for j in on_disk] == [
        ("q1", "a.md#0", 2, "ann", "on topic", CLOCK)]
    assert s.progress == (1, 3) and s.current == items()[1]


def test_already_judged_pairs_are_skipped_unless_their_text_changed_or_another_judge_made_them(tmp_path):
    jf = JudgmentFile(path=tmp_path / "j.yaml")
    jf.put(Judgment("q1", "a.md#0", sha("alpha"), 2, "ann", CLOCK))   # same judge, same text: skipped
    jf.put(Judgment("q1", "a.md#1", sha("old beta"), 0, "ann", CLOCK))  # same judge, old text: judge again
    jf.put(Judgment("q2", "a.md#0", sha("alpha"), 1, "bob", CLOCK))    # another judge: still ann's to do
    save_judgments(jf)
    s = LabelingSession(items(), load_judgments(jf.path), judge="ann", clock=lambda: CLOCK)
    assert s.progress_text == "1 of 3 judged" and s.current == items()[1]
    s.grade(1)  # replaces the stale entry in place
    back = load_judgments(jf.path).judgments
    assert len(back) == 3 and back[1].content_hash == sha("beta") and back[1].grade == 1


def test_undo_takes_back_the_last_judgment_on_disk_and_shows_it_again(tmp_path):
    s = session(tmp_path)
    s.grade(2)
    s.grade(0)
    assert s.undo().grade == 0
    assert [j.chunk_id for j in load_judgments(tmp_path / "j.yaml").judgments] == ["a.md#0"]
    assert s.current == items()[1] and s.progress == (1, 3)
    assert s.undo().grade == 2 and s.current == items()[0] and s.progress == (0, 3)
    assert s.undo() is None
    assert load_judgments(tmp_path / "j.yaml").judgments == []


def test_undo_of_a_re_judgment_restores_the_earlier_grade(tmp_path):
    jf = JudgmentFile(path=tmp_path / "j.yaml")
    jf.put(Judgment("q1", "a.md#0", sha("old alpha"), 1, "ann", CLOCK))
    save_judgments(jf)
    s = LabelingSession(items(), load_judgments(jf.path), judge="ann", clock=lambda: CLOCK)
    s.grade(2)
    s.undo()
    assert [(j.grade, j.content_hash) for j in load_judgments(jf.path).judgments] == [(1, sha("old alpha"))]


def test_skip_puts_the_item_last_and_done_refuses_more_grades(tmp_path):
    s = session(tmp_path)
    s.skip()
    assert s.current == items()[1]
    s.grade(1)
    s.grade(1)
    assert s.current == items()[0]
    s.grade(2)
    assert s.done and s.progress_text == "3 of 3 judged"
    with pytest.raises(ValidationError, match="nothing to grade"):
        s.grade(1)


def test_bad_grades_and_a_nameless_judge_are_refused(tmp_path):
    nameless = session(tmp_path, judge=" ")
    with pytest.raises(ValidationError) as err:
        nameless.grade(2)
    assert err.value.field == "judge"
    s = session(tmp_path)
    for bad in (3, -1, "2", True):
        with pytest.raises(ValidationError):
            s.grade(bad)  # type: ignore[arg-type]
    assert not (tmp_path / "j.yaml").exists()


def test_a_crash_while_saving_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    s = session(tmp_path)
    s.grade(2)
    before = (tmp_path / "j.yaml").read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        s.grade(0)
    monkeypatch.undo()
    assert (tmp_path / "j.yaml").read_bytes() == before
    assert len(load_judgments(tmp_path / "j.yaml").judgments) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.yaml"]  # no temporary file left behind
    # the session did not count the lost judgment, and it can be made again
    assert s.progress == (1, 3) and s.current == items()[1]
    s.grade(0)
    assert [j.grade for j in load_judgments(tmp_path / "j.yaml").judgments] == [2, 0]


def test_a_crash_while_writing_the_temporary_file_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    s = session(tmp_path)
    s.grade(2)
    before = (tmp_path / "j.yaml").read_bytes()
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        s.grade(1)
    assert (tmp_path / "j.yaml").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.yaml"]


# --------------------------------------------------------------------------- the widget (no browser)
def test_the_widget_waits_for_a_judge_name_then_judges_as_that_judge(tmp_path):
    jf = JudgmentFile(path=tmp_path / "j.yaml")
    jf.put(Judgment("q1", "a.md#0", sha("alpha"), 2, "bob", CLOCK))
    view = LabelingWidget(LabelingSession(items(), jf, judge=""))
    assert all(b.disabled for b in view.buttons) and "enter your name" in view.status.value
    view.buttons[1].click()  # a disabled button's click still reaches the handler: nothing is saved
    assert not (tmp_path / "j.yaml").exists() and "not saved" in view.message.value
    view.judge.value = "bob"
    assert "1 of 3 judged" in view.status.value and not view.buttons[1].disabled
    view.judge.value = "ann"
    assert "0 of 3 judged" in view.status.value
    view.buttons[1].click()
    assert [(j.judge, j.grade) for j in load_judgments(tmp_path / "j.yaml").judgments] == [("bob", 2), ("ann", 1)]


def test_the_widget_buttons_and_keys_grade_skip_and_undo(tmp_path):
    view = LabelingWidget(session(tmp_path))
    assert "0 of 3 judged" in view.status.value and "beta" not in view.card.value and "alpha" in view.card.value
    view.buttons[2].click()
    assert [j.grade for j in load_judgments(tmp_path / "j.yaml").judgments] == [2]
    assert "1 of 3 judged" in view.status.value and "beta" in view.card.value
    view.keys.value = "0"
    assert view.keys.value == "" and [j.grade for j in load_judgments(tmp_path / "j.yaml").judgments] == [2, 0]
    view.keys.value = "u"
    assert [j.grade for j in load_judgments(tmp_path / "j.yaml").judgments] == [2]
    view.skip_button.click()
    assert view.session.current == items()[2]
    view.keys.value = "1"
    view.keys.value = "2"
    assert view.session.done and "Every result" in view.card.value and view.buttons[0].disabled
