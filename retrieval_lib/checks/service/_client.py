"""Talking to ANY seed-003 service over HTTP, and reading the answer shapes such services use.

Seed 003 fixes the routes, fields and statuses, not the envelopes, so the readers
here accept the common shapes (see DESIGN.md, "Seed-003 services in the wild"):

- errors: ours ``{"error": {"type", "message", "status"}}``; flat
  ``{"error": "validation_error", "message": "..."}``; ``{"type", "message"}``;
- health: ours ``{"status", "dependencies": {name: {"reachable": bool, ...}}}``;
  flat ``{"status": "ok|degraded|error", "qdrant": true, "postgres": true}``;
- results: a list under ``results`` (also ``chunks``, ``matches``, ``data``), each
  result judged by seed 003's own field names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from retrieval_lib.errors import ConfigurationError

__all__ = ["Answer", "ApiClient", "error_view", "health_dependencies", "results_of", "ranking_of"]

_RESULT_KEYS = ("results", "chunks", "matches", "data")
_STATUS_WORDS = {"ok": True, "up": True, "healthy": True, "pass": True, "true": True,
                 "down": False, "error": False, "fail": False, "unavailable": False, "false": False}


@dataclass
class Answer:
    """One HTTP exchange: status (0 when no answer came), parsed JSON body (None if not JSON), wall time."""

    status: int
    body: Any
    ms: float

    @property
    def ok(self) -> bool:
        return self.status == 200


class ApiClient:
    """A small client for ``POST /search`` and ``GET /health`` at ``url``, the service's base URL (e.g.
    ``http://127.0.0.1:8000``); ``timeout``: seconds for one request; ``max_connections``: its pool's size."""

    def __init__(self, url: str, *, timeout: float = 30.0, max_connections: int = 100) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"api_url must be an http(s) URL (got {url[:60]!r})", option="api_url")
        self.url = url.rstrip("/")
        # trust_env=False: a loopback service must not be reached through a proxy from the environment
        loopback = "//127.0.0.1" in self.url or "//localhost" in self.url
        self._client = httpx.Client(base_url=self.url, timeout=timeout, trust_env=not loopback,
                                    limits=httpx.Limits(max_connections=max_connections,
                                                        max_keepalive_connections=max_connections))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> Answer:
        t0 = time.perf_counter()
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError:
            return Answer(0, None, (time.perf_counter() - t0) * 1000)
        ms = (time.perf_counter() - t0) * 1000
        try:
            body = response.json()
        except ValueError:
            body = None
        return Answer(response.status_code, body, ms)

    def search(self, body: Any = None, *, raw: bytes | None = None) -> Answer:
        """``POST /search`` with a JSON body, or ``raw`` bytes sent as ``application/json``."""
        if raw is not None:
            return self._send("POST", "/search", content=raw, headers={"content-type": "application/json"})
        return self._send("POST", "/search", json=body)

    def health(self) -> Answer:
        return self._send("GET", "/health")


def error_view(body: Any) -> dict[str, Any] | None:
    """``{"type", "message", "status"}`` from an error body of any common shape; None when it has no type+message.

    ``status`` is None when the body does not repeat it.
    """
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict):
        kind, message, status = inner.get("type") or inner.get("code"), inner.get("message"), inner.get("status")
    elif isinstance(inner, str):
        kind, message, status = inner, body.get("message") or body.get("detail"), body.get("status")
    else:
        kind, message, status = body.get("type"), body.get("message"), body.get("status")
    if not isinstance(kind, str) or not kind or not isinstance(message, str) or not message:
        return None
    return {"type": kind, "message": message, "status": status if isinstance(status, int) else None}


def _reachable(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        for key in ("reachable", "ok", "healthy", "up"):
            if isinstance(value.get(key), bool):
                return bool(value[key])
        status = value.get("status")
        return _STATUS_WORDS.get(str(status).lower()) if status is not None else None
    if isinstance(value, str):
        return _STATUS_WORDS.get(value.lower())
    return None


def health_dependencies(body: Any) -> dict[str, bool | None]:
    """Each dependency a health body names, with whether it is reachable (None when it does not say)."""
    if not isinstance(body, dict):
        return {}
    for key in ("dependencies", "checks", "services", "components"):
        named = body.get(key)
        if isinstance(named, dict) and named:
            return {str(name): _reachable(value) for name, value in named.items()}
    return {str(k): v for k, v in body.items() if isinstance(v, bool)}


def results_of(body: Any) -> list[dict[str, Any]] | None:
    """The list of results in a search answer, or None when the answer holds none."""
    if isinstance(body, dict):
        for key in _RESULT_KEYS:
            if isinstance(body.get(key), list):
                return [r for r in body[key] if isinstance(r, dict)]
    return None


def ranking_of(body: Any) -> list[tuple[str, float]]:
    """``(chunk_id, score)`` in answer order: what repeat and concurrency checks compare."""
    out: list[tuple[str, float]] = []
    for r in results_of(body) or []:
        score = r.get("score")
        out.append((str(r.get("chunk_id")), float(score) if isinstance(score, (int, float)) else float("nan")))
    return out
