"""Shared fixtures: the real MiniLM embedder, the 13-doc book, the sample book, the proxy guard.

The data and helpers behind them live in modules of their own (``pythonpath = ["tests"]``):
``corpus`` (docs, payloads, ``fill_collection``), ``fakes.embedders`` (``FakeEmbedder``),
``fakes.proxies`` (the proxy guard), ``fakes.cohere_server`` and ``fakes.tcp`` (loopback servers).
``figure_line`` collects the figures the suite measures (fault cases, hostile inputs, load
throughput) for a summary section at the end of the run.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus import DOCS, SAMPLE_COLLECTION, Book, fill_collection, make_payload
from fakes.proxies import clear_proxies

#: Figures the suite measured (fault cases run, hostile inputs tried, load throughput), printed
#: in their own section at the end of the run by :func:`pytest_terminal_summary`.
_FIGURES: list[str] = []


@pytest.fixture(scope="session")
def figure_line():
    """``figure_line(text)`` adds a line to the "figures measured by the suite" summary section."""
    return _FIGURES.append


def pytest_terminal_summary(terminalreporter):
    if _FIGURES:
        terminalreporter.section("figures measured by the suite")
        for line in _FIGURES:
            terminalreporter.write_line(line)


@pytest.fixture(scope="module")
def no_proxies():
    """Loopback fakes are reached directly: the proxy variables are cleared while the module runs.

    A module that talks to a loopback server in process uses it for every test
    (``pytestmark = pytest.mark.usefixtures("no_proxies")``), and a module-scoped fixture that
    does so names it as an argument. Child processes get ``fakes.proxies.direct_env`` instead.
    """
    with pytest.MonkeyPatch.context() as mp:
        clear_proxies(mp)
        yield


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, loaded once per session."""
    from retrieval_lib.embedding import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture(scope="session")
def book_docs() -> list[dict[str, Any]]:
    """A fresh copy of :data:`corpus.DOCS`."""
    return [dict(d) for d in DOCS]


@pytest.fixture(scope="session")
def payload_for():
    """``payload_for(doc, model_version, **overrides)``: a realistic full payload."""
    return make_payload


@pytest.fixture(scope="session")
def fill():
    """``fill(store, collection, embedder, docs=DOCS)``: create, embed and upsert."""
    return fill_collection


@pytest.fixture(scope="session")
def book(tmp_path_factory, embedder):
    """Build the sample collection (``corpus.SAMPLE_COLLECTION``) once per session (about 30 s on 2 idle cores).

    The store stays open (and so locked) for the session; a test that needs a
    separate process to open it copies ``book.folder`` first.
    """
    from retrieval_lib import VectorStore
    from retrieval_lib.ingest import ingest

    folder = tmp_path_factory.mktemp("sample-book") / "store"
    store = VectorStore.at_path(folder)
    summary = ingest(store, embedder, SAMPLE_COLLECTION, progress=False)
    pts = list(store.scroll(SAMPLE_COLLECTION, with_payload=True))
    yield Book(store, folder, summary, pts)
    store.close()
