"""The proxy guard: loopback fakes must be reached directly, never through a proxy.

httpx (inside the cohere SDK and qdrant-client) honours ``HTTP(S)_PROXY`` and
``ALL_PROXY``; on a machine that sets them, a request to ``127.0.0.1`` would go
to the proxy instead of the fake. In-process tests use the ``no_proxies`` fixture
(``conftest.py``, built on :func:`clear_proxies`); a child process gets an
environment passed through :func:`direct_env`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

__all__ = ["LOOPBACK_HOSTS", "PROXY_VARS", "clear_proxies", "direct_env"]

#: Every spelling of the proxy variables httpx reads.
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
#: ``NO_PROXY`` value that keeps the loopback fakes direct even if a proxy variable slips through.
LOOPBACK_HOSTS = "127.0.0.1,localhost"


def clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove the proxy variables from ``os.environ`` and set ``NO_PROXY`` for loopback, until the test ends.

    Args:
        monkeypatch: The test's monkeypatch fixture (it restores the environment afterwards).
    """
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", LOOPBACK_HOSTS)


def direct_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` for a child process that talks to loopback fakes.

    Args:
        env: The environment to start from (typically already stripped of the package's settings).

    Returns:
        ``env`` without the proxy variables and with ``NO_PROXY`` set to :data:`LOOPBACK_HOSTS`.
    """
    out = {k: v for k, v in env.items() if k not in PROXY_VARS}
    out["NO_PROXY"] = LOOPBACK_HOSTS
    return out
