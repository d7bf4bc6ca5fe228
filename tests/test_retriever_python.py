"""``kind: python`` driven through the real shim in a child process: a sound function and each fault."""

from __future__ import annotations

import subprocess
import sys

import pytest

from retrieval_lib.retrievers import open_retriever, probe_retriever
from retrieval_lib.retrievers.child import SHIM

TEAM = "tests/fixtures/team_function.py"
SECRET = "team-secret-9f8e7d6c5b4a"
QUESTIONS = ["What is Gazebo?", "What is ROS 2?"]


def ask(function: str, questions=QUESTIONS, top_k: int = 3, **spec):
    r = open_retriever({"kind": "python", "function": f"{TEAM}:{function}", **spec})
    try:
        return r, r.ask_many(questions, top_k)
    finally:
        r.close()


def test_a_teams_function_answers_under_the_workbooks_names_its_top_k_found_by_name():
    r, answers = ask("search_similar_chunks", top_k=2)
    assert [a.error for a in answers] == [None, None]
    assert r.top_k_arg == "limit"
    assert [len(a.hits) for a in answers] == [2, 2]
    first = answers[1].hits[0]
    assert first.source_url == "/docs/module-01-ros2/what-is-ros2" and first.score == pytest.approx(0.75)
    assert first.content.startswith("ROS 2 is") and first.title == "What is ROS 2"


def test_prints_in_the_teams_module_and_function_do_not_corrupt_the_answers():
    _, answers = ask("noisy_search")
    assert all(a.ok and len(a.hits) == 3 for a in answers)


def test_dataclasses_and_lists_of_strings_are_made_json_safe_and_mapped():
    r, answers = ask("returns_dataclasses")
    assert r.top_k_arg == "n_results" and r.mapping.results == "matches"
    assert answers[0].hits[0].score is not None and answers[0].hits[0].content
    _, strings = ask("returns_strings", top_k=2)
    assert strings[0].hits[0].content and strings[0].hits[0].source_url is None


def test_a_function_that_raises_answers_each_question_with_the_exception_in_one_line():
    _, answers = ask("raises")
    assert [a.error_kind for a in answers] == ["raised ValueError", "raised ValueError"]
    assert "collection 'book' not found" in answers[0].error and "second line" not in answers[0].error


def test_a_function_that_hangs_is_stopped_by_the_timeout_and_the_next_question_gets_a_new_child():
    _, answers = ask("hangs", timeout_s=1.0)
    assert [a.error_kind for a in answers] == ["timeout", "timeout"]
    assert all(a.elapsed_ms < 20_000 for a in answers)


def test_sys_exit_ends_the_child_and_names_the_exit_code_and_a_crash_spares_the_next_question():
    _, answers = ask("exits")
    assert answers[0].error_kind == "exited 3" and "giving up" in answers[0].error
    _, crash = ask("crashes_on_gazebo")
    assert crash[0].error_kind == "exited 7"
    assert crash[1].ok and crash[1].hits  # a new child answered the next question


def test_an_answer_with_no_list_names_the_keys_that_are_there():
    _, answers = ask("no_list")
    assert answers[0].error_kind == "no results list" and "answer, count" in answers[0].error


def test_a_function_that_cannot_be_imported_fails_every_question_once_without_restarting():
    r, answers = ask("not_there")
    assert [a.error_kind for a in answers] == ["import failed", "import failed"]
    assert "not_there" in answers[0].error


def test_env_secrets_reach_the_child_and_are_redacted_from_what_it_says(monkeypatch):
    monkeypatch.setenv("TEAM_KEY_SOURCE", SECRET)
    r, answers = ask("leaks_env", env={"TEAM_KEY": "${TEAM_KEY_SOURCE}"})
    assert answers[0].error_kind == "raised RuntimeError" and "***" in answers[0].error
    for text in (answers[0].error, r.describe(), repr(r), repr(r.spec), answers[0].model_dump_json()):
        assert SECRET not in text


def test_probe_infers_the_mapping_from_one_call():
    report = probe_retriever({"kind": "python", "function": f"{TEAM}:search_similar_chunks"}, "What is ROS 2?")
    assert report.ok and report.results == "@"
    assert report.fields == {"content": "text", "source_url": "url", "title": "title", "score": "score"}
    assert report.spec["fields"]["content"] == "text"


def test_the_shim_needs_only_the_standard_library():
    # -I -S: no site-packages, no user paths; the shim must still import and answer
    out = subprocess.run([sys.executable, "-I", "-S", "-c",
                          f"import runpy; runpy.run_path({str(SHIM)!r}, run_name='not_main'); print('ok')"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
