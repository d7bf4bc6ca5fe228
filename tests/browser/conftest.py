"""The real-browser tests (JupyterLab + headless Chromium + Selenium): opt-in, never part of ``make test``.

Run them with ``pytest tests/browser -m browser -p no:xdist`` (Debian's ``chromium`` and ``chromium-driver`` must be
installed: ``apt-get install -y chromium chromium-driver``). Without ``-m browser`` they are skipped, so the default
suite's time does not grow.
"""

from __future__ import annotations

import pytest


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "browser: drives JupyterLab in headless Chromium (opt-in: -m browser)")


def pytest_collection_modifyitems(config, items) -> None:
    if "browser" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="a real-browser test: opt in with `pytest tests/browser -m browser`")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)
