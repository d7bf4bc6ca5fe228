"""A retriever's ``${NAME}`` references are read where the settings are read: the team's ``.env``, then the
environment.

Team #12 kept its chatbot's key in its ``.env``, where the workbook's own messages tell teams to put secrets. Only
the environment was read: every question went out with an empty ``X-API-Key`` and came back 401, with nothing to
say that the reference had expanded to nothing.
"""

from __future__ import annotations

import pytest
from team_endpoint import TeamEndpoint, search_results_shape

from retrieval_lib.config import DOTENV_VARIABLE
from retrieval_lib.errors import ConfigurationError
from retrieval_lib.retrievers import open_retriever

KEY = "team-key-0123456789abcdef"
SPEC = {"kind": "http", "headers": {"X-API-Key": "${TEAM_CHATBOT_KEY}"}}


def _answer(query: str, top_k: int):
    return search_results_shape([{"id": "c1", "content": "ROS 2 is middleware.", "score": 0.5,
                                  "source_document": "docs/ros2.md", "metadata": {}, "chunk_index": 0}], query)


def test_a_key_in_the_teams_dotenv_is_sent(tmp_path, monkeypatch):
    monkeypatch.delenv("TEAM_CHATBOT_KEY", raising=False)
    monkeypatch.delenv(DOTENV_VARIABLE, raising=False)
    (tmp_path / ".env").write_text(f"TEAM_CHATBOT_KEY={KEY}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the team runs the workbook from its own folder, its .env there
    with TeamEndpoint(_answer) as ep:
        r = open_retriever({**SPEC, "url": ep.url})
        try:
            a = r.ask("What is ROS 2?", 1)
        finally:
            r.close()
        assert ep.requests[0]["headers"]["x-api-key"] == KEY
    assert a.ok and KEY not in repr(r) and KEY not in repr(r.spec)


def test_a_reference_set_nowhere_is_named_before_any_question(tmp_path, monkeypatch):
    monkeypatch.delenv("TEAM_CHATBOT_KEY", raising=False)
    monkeypatch.delenv(DOTENV_VARIABLE, raising=False)
    (tmp_path / ".env").write_text("OTHER=1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with TeamEndpoint(_answer) as ep:
        with pytest.raises(ConfigurationError, match=r"X-API-Key names \$\{TEAM_CHATBOT_KEY\}.*set TEAM_CHATBOT_KEY") \
                as caught:
            open_retriever({**SPEC, "url": ep.url})
        assert not ep.requests  # nothing was asked with an empty key
    assert caught.value.variable == "TEAM_CHATBOT_KEY"
