"""What the remote-embedder tests (Cohere, OpenAI, Gemini) share: a recording sleep, a clock moved only by the waits
asked for, the timeouts httpx enforced, the secret scan, the service's 502.

Time: no assertion depends on how fast the machine is. Retry waits are the delays the embedder asked for
(:class:`RecordingSleep` records them and really sleeps a few milliseconds at most); the retry budget is spent on a
:class:`FakeClock`; a timeout is the value httpx enforced on each request (:func:`record_sent_timeouts`); attempts
are counted by the fakes and by the embedder.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from typing import Any

from service_fixtures import BagOfWordsEmbedder, client_for, small_retriever, sqlite_db

__all__ = ["FakeClock", "RecordingSleep", "assert_no_secret", "record_sent_timeouts", "service_answers", "uniform"]


class RecordingSleep:
    """Records every requested delay; really sleeps only a tiny bit."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        time.sleep(min(seconds, 0.005))


class FakeClock:
    """Stands in for the ``time`` module of the shared retry loop (``retrieval_lib.embedding.base``): ``monotonic()``
    moves only by :meth:`sleep`, which records each wait in ``delays``. The retry budget is then spent by exactly
    the waits asked for, however long the requests themselves take on a busy machine."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.delays: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def uniform(seconds: float) -> dict[str, float]:
    """An httpx timeout of ``seconds`` for every phase (connect, read, write, pool), as the SDKs pass one number."""
    return {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}


def record_sent(monkeypatch: Any, keep: Any = None) -> list[Any]:
    """What ``keep(request)`` says of each request this process sends from now on, in order (default: ``(url,
    timeout)``, the timeout httpx enforced on it, ``request.extensions["timeout"]``), for both flavours the SDKs
    use: ``httpx`` (cohere, google-genai, qdrant-client) and ``httpx2`` (openai)."""
    import httpx

    keep = keep or (lambda request: (str(request.url), request.extensions.get("timeout")))
    seen: list[Any] = []
    flavours = [httpx]
    try:
        import httpx2

        flavours.append(httpx2)
    except ImportError:  # pragma: no cover - pinned through openai
        pass
    for flavour in flavours:
        send = flavour.Client.send

        def recording_send(self: Any, request: Any, *args: Any, _send: Any = send, **kwargs: Any) -> Any:
            seen.append(keep(request))
            return _send(self, request, *args, **kwargs)

        monkeypatch.setattr(flavour.Client, "send", recording_send)
    return seen


def record_sent_timeouts(monkeypatch: Any) -> list[Any]:
    """The timeout httpx enforced on each request this process sends from now on, in order."""
    return record_sent(monkeypatch, lambda request: request.extensions.get("timeout"))


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
