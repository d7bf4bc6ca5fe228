"""What the remote-embedder tests (OpenAI, Gemini) share: a recording sleep, the secret scan, the service's 502.

Time: no assertion depends on how fast the machine is. Retry waits are the delays the embedder asked for
(:class:`RecordingSleep` records them and really sleeps a few milliseconds at most); attempts are counted by the
fakes and by the embedder.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from typing import Any

from service_fixtures import BagOfWordsEmbedder, client_for, small_retriever, sqlite_db

__all__ = ["RecordingSleep", "assert_no_secret", "service_answers"]


class RecordingSleep:
    """Records every requested delay; really sleeps only a tiny bit."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        time.sleep(min(seconds, 0.005))


def assert_no_secret(secret: str, *objects: Any, logs: str = "") -> None:
    """``secret`` is in none of the objects' ``str``, ``repr``, ``to_dict``, fields or formatted traceback, nor in
    ``logs``."""
    assert secret not in logs, "secret leaked in the log"
    for obj in objects:
        texts = [str(obj), repr(obj)]
        if hasattr(obj, "to_dict"):
            texts.append(json.dumps(obj.to_dict(), default=str))
        if hasattr(obj, "fields"):
            texts.append(repr(obj.fields))
        if isinstance(obj, BaseException):
            texts.append("".join(traceback.format_exception(obj)))
        for text in texts:
            assert secret not in text, f"secret leaked in {type(obj).__name__}: {text[:300]!r}"


def service_answers(embedder: Any, fake: Any, behaviours: list[Any], tmp_path: Any, secret: str,
                    caplog: Any) -> list[tuple[int, str]]:
    """``(status, error type)`` of the HTTP service's ``/search`` with ``embedder`` embedding its queries, once
    per behaviour the fake plays for every request; the service must answer 200 before and after each."""
    docs = BagOfWordsEmbedder(model=embedder.model, dimension=embedder.dimension)
    retriever = small_retriever(embedder=docs)
    retriever.embedder = embedder
    out: list[tuple[int, str]] = []
    with caplog.at_level(logging.DEBUG), client_for(retriever, sqlite_db(tmp_path)) as s:
        assert s.client.post("/search", json={"query": "What is ROS 2?"}).status_code == 200
        for behaviour in behaviours:
            fake.always(behaviour)
            response = s.client.post("/search", json={"query": "What is ROS 2?"})
            fake.always(None)
            error = response.json().get("error") or {}
            out.append((response.status_code, str(error.get("type"))))
            assert secret not in response.text
            assert s.client.post("/search", json={"query": "What is ROS 2?"}).status_code == 200
        assert secret not in s.log.getvalue()
    assert secret not in caplog.text
    return out
