"""``search --params P`` asks the profile's retriever; ``retriever --params P`` probes it and writes the mapping."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from team_endpoint import closed_port

from retrieval_lib.cli.main import main

FUNCTION = "tests/fixtures/team_function.py:search_similar_chunks"


@pytest.fixture
def profile(tmp_path, monkeypatch):
    monkeypatch.delenv("RETRIEVER_SPEC", raising=False)
    path = tmp_path / "team.yaml"
    path.write_text(f"profile: team\ngolden_set: ''\nretriever:\n  kind: python\n  function: {FUNCTION}\n",
                    encoding="utf-8")
    return path


def test_retriever_probes_prints_the_mapping_and_writes_it_into_a_profile(profile, tmp_path, capsys):
    out_path = tmp_path / "probed.yaml"
    assert main(["retriever", "--params", str(profile), "--question", "What is ROS 2?",
                 "--write-profile", str(out_path)]) == 0
    out = capsys.readouterr().out
    assert "mapping: results at `@`; content=`text`" in out and "source_url: `url`" in out
    written = yaml.safe_load(out_path.read_text())
    assert written["retriever"]["fields"] == {"content": "text", "source_url": "url", "title": "title",
                                              "score": "score"}
    assert written["retriever"]["function"] == FUNCTION and written["profile"] == "team"


def test_search_asks_the_profiles_retriever_and_prints_its_answer_under_the_workbooks_names(profile, capsys,
                                                                                          monkeypatch):
    assert main(["search", "--params", str(profile), "What is ROS 2?", "--top-k", "2", "--json"]) == 0
    assert "RETRIEVER_SPEC" not in os.environ  # the command read the profile without changing this process
    captured = capsys.readouterr()
    response = json.loads(captured.out)
    assert response["results"][0]["source_url"] == "/docs/module-01-ros2/what-is-ros2"
    assert response["results"][0]["raw_score"] == pytest.approx(0.75) and response["error"] is None
    assert "mapping inferred from this answer" in captured.err


def test_an_unreachable_retriever_exits_3_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RETRIEVER_SPEC", raising=False)
    path = tmp_path / "down.yaml"
    path.write_text(f"retriever:\n  kind: http\n  url: http://127.0.0.1:{closed_port()}/search\n  timeout_s: 2\n",
                    encoding="utf-8")
    assert main(["search", "--params", str(path), "What is ROS 2?"]) == 3
    assert "RETRIEVER_SPEC" not in os.environ
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: the retriever gave no answer: unreachable")
    assert main(["retriever", "--params", str(path)]) == 3
    assert "unreachable" in capsys.readouterr().err


def test_retriever_without_a_retriever_in_the_profile_exits_2_saying_what_to_add(tmp_path, capsys):
    path = tmp_path / "plain.yaml"
    path.write_text("profile: plain\n", encoding="utf-8")
    assert main(["retriever", "--params", str(path)]) == 2
    assert "names no `retriever:`" in capsys.readouterr().err


def test_retriever_help_has_examples_and_exit_codes(capsys):
    assert main(["retriever", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:\n  python -m retrieval_lib retriever" in out and "exit codes:" in out


def test_search_prints_no_score_for_a_retriever_that_gives_none(tmp_path, capsys, monkeypatch):
    # its results' order is all there is: the 1/rank stand-ins the gates set aside are not printed as scores
    monkeypatch.delenv("RETRIEVER_SPEC", raising=False)
    path = tmp_path / "ranks.yaml"
    function = FUNCTION.replace("search_similar_chunks", "ranked_only")
    path.write_text(f"profile: team\ngolden_set: ''\nretriever:\n  kind: python\n  function: {function}\n",
                    encoding="utf-8")
    assert main(["search", "--params", str(path), "What is ROS 2?", "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "\n1. /docs/module-01-ros2/what-is-ros2" in out and "1.000" not in out and "0.500" not in out


def test_search_prints_no_url_line_for_results_that_have_none(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RETRIEVER_SPEC", raising=False)
    path = tmp_path / "paths.yaml"
    function = FUNCTION.replace("search_similar_chunks", "by_path")
    path.write_text(f"profile: team\ngolden_set: ''\nretriever:\n  kind: python\n  function: {function}\n  fields:\n"
                    "    content: text\n    source_file: path\n    score: score\n", encoding="utf-8")
    assert main(["search", "--params", str(path), "What is ROS 2?", "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "module-01-ros2/what-is-ros2.md" in out and "None" not in out
