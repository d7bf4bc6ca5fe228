"""Shared fixtures: the real MiniLM embedder, the 13-doc book, the sample book, the proxy guard.

The data and helpers behind them live in modules of their own (``pythonpath = ["tests"]``):
``corpus`` (docs, payloads, ``fill_collection``), ``fakes.embedders`` (``FakeEmbedder``),
``fakes.proxies`` (the proxy guard), ``fakes.cohere_server`` and ``fakes.tcp`` (loopback servers).
``figure_line`` collects the figures the suite measures (fault cases, hostile inputs, load
throughput) for a summary section at the end of the run.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from corpus import DOCS, SAMPLE_COLLECTION, Book, fill_collection, make_payload
from fakes.proxies import clear_proxies
from warm_kernel import install as install_warm_kernel

# The suite never reaches a model hub (the machine it runs on has no internet): a load that would try fails at
# once, and every process the suite starts (the command line, kernels, servers) inherits the same switches.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite's notebook kernels (papermill's, the command line's, nbval's) start warm (tests/warm_kernel.py);
# WARM_KERNEL=0 starts them cold.
install_warm_kernel()


def pytest_collection_modifyitems(session, config, items) -> None:
    """Tests marked ``slow`` first, the rest in their order: with pytest-xdist (``make test-slow``, ``make test-all``),
    the workers start on the full runs that take a minute or more instead of ending the run waiting on one."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(optionalhook=True)  # without pytest-xdist (-p no:xdist, make test-browser) it is never called
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` as documented: a module marked ``xdist_group`` runs on one worker, so its costly module
    and session fixtures are built once (``make test``, ``make test-slow``).

    pytest 9.2 no longer sees the ``@group`` suffix pytest-xdist 3.8 appends to node ids, so its own loadgroup
    silently hands those tests out one by one (pytest-dev/pytest-xdist#1386) and each worker built the fixtures
    again. The scheduler runs where no test is collected, so it reads the mark from the module's source."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from pathlib import Path

    from xdist.scheduler import LoadScopeScheduling

    grouped: dict[str, bool] = {}

    def one_worker(module: str) -> bool:
        if module not in grouped:
            path = Path(config.rootpath, module)
            grouped[module] = path.is_file() and "pytest.mark.xdist_group(" in path.read_text(encoding="utf-8")
        return grouped[module]

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if one_worker(module) else nodeid

    return ModuleGroups(config, log)


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
def fill(embedder):
    """``fill(store, collection, embedder, docs=DOCS)``: create, embed and upsert. Some forty modules fill a store
    with the same docs and the session's MiniLM: its vectors are computed once a worker (:class:`_Seeded`); any other
    embedder (a fake that counts its calls, a provider) embeds every time."""
    once = _Seeded(embedder, {})

    def fill_(store: Any, collection: str, with_embedder: Any, docs: Any = DOCS,
              model_version: str | None = None) -> None:
        fill_collection(store, collection, once if with_embedder is embedder else with_embedder, docs,
                        model_version)

    return fill_


class _Seeded:
    """``embedder``, except that a document whose exact text ``known`` holds takes its vector from there; a text it
    embeds is kept there, so a worker embeds it once (the same text, the same vector: nothing a test compares
    depends on a vector's last digits)."""

    def __init__(self, embedder: Any, known: dict[str, list[float]]) -> None:
        self._embedder, self._known = embedder, known

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._known))
        fresh = dict(zip(missing, self._embedder.embed_documents(missing))) if missing else {}
        self._known.update(fresh)
        return [self._known[t] if t in self._known else fresh[t] for t in texts]


def _vectors_make_sample_stored(model: str) -> dict[str, list[float]]:
    """Text embedded -> vector, for every chunk that ``make sample`` (which ``make test`` runs first) stored in the
    project's ``.qdrant`` with ``model``; read from a copy, since the folder may be open elsewhere. Empty when there
    is no such store. The same model on the same machine: the vectors the fixture would compute, an ingest's
    embedding time (about 20 s a worker) saved."""
    import shutil
    import tempfile
    from pathlib import Path

    from retrieval_lib import VectorStore
    from retrieval_lib.collection.ours import embedded_text
    from retrieval_lib.config import PROJECT_ROOT
    from retrieval_lib.errors import RetrievalError

    source = PROJECT_ROOT / ".qdrant"
    if not (source / "collection").is_dir():
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            shutil.copytree(source, Path(tmp) / "store", ignore=shutil.ignore_patterns(".lock"))
            store = VectorStore.at_path(Path(tmp) / "store")
        except (OSError, RetrievalError):
            return {}
        try:
            known: dict[str, list[float]] = {}
            for info in store.client.get_collections().collections:
                for p in store.scroll(info.name, with_payload=True, with_vectors=True, batch_size=10_000):
                    if (p.payload or {}).get("model_version") == model and isinstance(p.vector, list):
                        known[embedded_text(p.payload)] = p.vector
            return known
        except RetrievalError:
            return {}
        finally:
            store.close()


class _Shared:
    """``embedder``, whose document vectors are kept in ``folder``, one file a batch of texts: a batch one xdist
    worker embedded, another reads (float32 stored as computed: the same vectors)."""

    def __init__(self, embedder: Any, folder: Any) -> None:
        self._embedder, self._folder = embedder, folder
        folder.mkdir(parents=True, exist_ok=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        import hashlib

        import numpy as np
        from filelock import FileLock

        key = hashlib.sha256("\x00".join([self._embedder.model, *texts]).encode("utf-8")).hexdigest()[:24]
        path = self._folder / f"{key}.npy"
        with FileLock(f"{path}.lock", timeout=600):
            if path.is_file():
                return np.load(path).tolist()
            vectors = self._embedder.embed_documents(texts)
            part = self._folder / f"{key}.part.npy"
            np.save(part, np.asarray(vectors, dtype=np.float32))
            os.replace(part, path)
            return vectors


@pytest.fixture(scope="session")
def shared_embedder(embedder, tmp_path_factory):
    """The real MiniLM embedder, each batch of documents embedded once by all the workers of a run
    (:class:`_Shared`): for a collection that several modules build (team #9's)."""
    base = tmp_path_factory.getbasetemp()
    # xdist workers' temporary folders are siblings in one folder of this run; without xdist the run is one process
    return _Shared(embedder, (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-vectors")


@pytest.fixture(scope="session")
def seeded_embedder(embedder):
    """The real MiniLM embedder, with the vectors ``make sample`` stored for the same texts (:class:`_Seeded`):
    for tests that ingest copies of the sample book."""
    return _Seeded(embedder, _vectors_make_sample_stored(embedder.model))


@pytest.fixture(scope="session")
def book(tmp_path_factory, seeded_embedder):
    """Build the sample collection (``corpus.SAMPLE_COLLECTION``) once per session: about 30 s on 2 idle cores, a
    few seconds where ``make sample`` left the same chunks' vectors in ``.qdrant``
    (:func:`_vectors_make_sample_stored`).

    The store stays open (and so locked) for the session; a test that needs a
    separate process to open it copies ``book.folder`` first.
    """
    from retrieval_lib import VectorStore
    from retrieval_lib.ingest import ingest

    folder = tmp_path_factory.mktemp("sample-book") / "store"
    store = VectorStore.at_path(folder)
    summary = ingest(store, seeded_embedder, SAMPLE_COLLECTION, progress=False)
    pts = list(store.scroll(SAMPLE_COLLECTION, with_payload=True))
    yield Book(store, folder, summary, pts)
    store.close()
