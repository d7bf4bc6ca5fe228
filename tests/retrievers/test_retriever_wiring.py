"""A profile's ``retriever:``: validated, carried to kernels without secrets, asked by a notebook's run, gated."""

from __future__ import annotations

import json

import pytest
from team_endpoint import TeamEndpoint, closed_port

from retrieval_lib.config import load_settings
from retrieval_lib.errors import ConfigurationError, ParamsError
from retrieval_lib.params import RESERVED_KEYS, load_profile
from retrieval_lib.retrievers import AnsweringSearch
from retrieval_lib.workbook.report import NotebookRun

pytestmark = pytest.mark.usefixtures("no_proxies")

SECRET = "sk-wired-5f4e3d2c1b0a"


def answer(query, top_k):
    return {"hits": [{"text": f"answer to {query} #{i}", "page_url": f"/docs/p{i}", "relevance": 1 - i / 10}
                     for i in range(top_k)]}


def test_a_profile_retriever_is_reserved_and_travels_as_json_with_references_not_values(tmp_path, monkeypatch):
    monkeypatch.setenv("TEAM_API_KEY", SECRET)
    path = tmp_path / "team.yaml"
    path.write_text("profile: team\nretriever:\n  kind: http\n  url: http://127.0.0.1:8000/search\n"
                    "  headers:\n    X-Api-Key: ${TEAM_API_KEY}\n", encoding="utf-8")
    profile = load_profile(path, declared=set(), secrets={SECRET})
    assert "retriever" in RESERVED_KEYS  # the runner hands a kernel no reserved key: it travels in RETRIEVER_SPEC
    env = profile.environment()
    assert json.loads(env["RETRIEVER_SPEC"])["headers"] == {"X-Api-Key": "${TEAM_API_KEY}"}
    assert SECRET not in json.dumps(env)
    assert load_settings(env=env).retriever["url"] == "http://127.0.0.1:8000/search"


def test_a_literal_key_in_a_profile_retriever_is_refused(tmp_path):
    path = tmp_path / "team.yaml"
    path.write_text(f"retriever:\n  kind: http\n  url: http://x/search\n  headers:\n    X-Api-Key: {SECRET}\n",
                    encoding="utf-8")
    with pytest.raises(ParamsError, match="looks like a secret"):
        load_profile(path, declared=set(), secrets=set())


def test_the_runner_refuses_an_invalid_retriever_naming_the_key(tmp_path):
    from retrieval_lib.workbook.runner import load_profile as runner_profile

    path = tmp_path / "team.yaml"
    path.write_text("retriever:\n  kind: http\n  method: PUT\n  url: http://127.0.0.1:1/s\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=r"retriever\.method") as info:
        runner_profile(path)
    assert info.value.key == "retriever.method"
    with pytest.raises(ConfigurationError, match="RETRIEVER_SPEC must be a JSON object"):
        load_settings(env={"RETRIEVER_SPEC": "[1]"})


def _run(tmp_path, spec):
    settings = load_settings(env={"RETRIEVER_SPEC": json.dumps(spec), "QDRANT_PATH": str(tmp_path / "none")})
    return NotebookRun("01_query", "Does a question bring back the right chunks?", tmp_path / "run",
                       settings=settings)


def test_a_notebook_run_asks_the_teams_retriever_and_gates_that_it_answered(tmp_path):
    with TeamEndpoint(answer) as ep:
        run = _run(tmp_path, {"kind": "http", "url": ep.url})
        assert isinstance(run.retriever, AnsweringSearch)
        responses = run.retriever.search_many(["What is ROS 2?", "Gazebo?"], top_k=3)
        assert [len(r.results) for r in responses] == [3, 3]
        assert responses[0].results[0].source_url == "/docs/p0" and responses[0].results[0].raw_score == 1.0
        assert "the chatbot's retriever: http POST" in run.describe()
        run.finish()
    gate = next(g for g in run.report.gates if g.id == "retriever.answered")
    assert gate.passed is True and "2 of 2 questions answered" in gate.detail
    saved = json.loads((tmp_path / "run" / "metrics" / "01_query.json").read_text())
    assert [g["passed"] for g in saved["gates"] if g.get("id") == "retriever.answered"] == [True]


def test_a_retriever_that_fails_fails_the_gate_with_the_count_and_the_first_error(tmp_path):
    run = _run(tmp_path, {"kind": "http", "url": f"http://127.0.0.1:{closed_port()}/search", "timeout_s": 2})
    responses = run.retriever.search_many(["What is ROS 2?", "Gazebo?"], top_k=3)
    assert all(r.error and r.results == [] for r in responses)  # an error, never an empty answer
    run.finish()
    gate = next(g for g in run.report.gates if g.id == "retriever.answered")
    assert gate.passed is False
    assert "0 of 2 questions answered" in gate.detail and "unreachable x2" in gate.detail
    assert "the first: unreachable" in gate.detail


def test_a_run_on_the_collection_records_no_retriever_gate(tmp_path):
    run = _run(tmp_path, {"kind": "collection"})
    run.finish()
    assert not [g for g in run.report.gates if g.id == "retriever.answered"]


def test_one_rule_says_whether_a_teams_retriever_is_configured():
    import dataclasses

    from retrieval_lib.retrievers import team_retriever

    http = {"kind": "http", "url": "http://127.0.0.1:9/search"}
    settings = dataclasses.replace(load_settings(env={}), retriever=http)
    assert team_retriever({}, None) is None and team_retriever({"retriever": None}) is None
    assert team_retriever(settings).url == http["url"]  # RETRIEVER_SPEC alone
    assert team_retriever({"profile": "x"}, settings).kind == "http"  # a profile without one: the environment's
    assert team_retriever({"retriever": {"kind": "collection"}}, settings) is None  # the profile's word decides
    assert team_retriever({"retriever": {"kind": "python", "function": "bot.py:search"}}, settings).kind == "python"
    with pytest.raises(ConfigurationError, match="url"):
        team_retriever({"retriever": {"kind": "http"}})
