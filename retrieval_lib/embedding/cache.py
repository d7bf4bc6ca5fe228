"""A run's query embeddings, each embedded once, and a count of what was sent to the embedding service.

Notebooks of one run execute in separate kernels, so the cache is a file in the run folder,
``<run>/cache/query_embeddings.json``: ``{"format": 1, "entries": {key: vector}}``. A key is
the SHA-256 of provider, model, input type and text, so a vector is reused only for the exact
same request (a reduced dimension counts as another model: ``model/256``; the input type is the provider's own query
type, ``search_query`` for Cohere, ``RETRIEVAL_QUERY`` for Gemini); the file holds hashes and vectors, never a text, a
key or a setting. It is written
atomically (a temporary file, then ``os.replace``), merged with what another writer saved first,
and an unreadable file counts as empty (the queries are embedded again). Documents are never
cached: ingest embeds each chunk once by construction.

Checks that measure the embedding service itself must call it every time; they bypass the cache
*by name* (the registry's :attr:`~retrieval_lib.workbook.registry.NotebookSpec.bypass`), and the calls they
make are declared (see the dry run).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_lib.files import write_text_atomic

__all__ = ["QueryCache", "CachedEmbedder", "EmbedUsage", "query_key", "cache_file",
           "MAX_BATCH", "total_usage", "embedding_totals", "prefetch_run"]

#: Cohere's texts per embed call. Search and ingest cut at each embedder's own request limit
#: (:func:`retrieval_lib.embedding.base.request_size`) and each embedder batches to it inside; this only counts calls
#: of an embedder that does not count its own.
MAX_BATCH = 96
QUERY = "search_query"
CACHE_FORMAT = 1

def query_key(provider: str, model: str, input_type: str, text: str) -> str:
    """The cache key of one embed request for one text."""
    return hashlib.sha256("\x00".join((provider, model, input_type, text)).encode("utf-8")).hexdigest()


def cache_file(run_dir: str | os.PathLike[str]) -> Path:
    """Where a run keeps its query embeddings."""
    return Path(run_dir) / "cache" / "query_embeddings.json"


class QueryCache:
    """Query vectors by :func:`query_key`, in memory and (given a ``path``) in a run's cache file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else None
        self._entries: dict[str, list[float]] = self._read() if self.path else {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def _read(self) -> dict[str, list[float]]:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        entries = data.get("entries") if isinstance(data, dict) and data.get("format") == CACHE_FORMAT else None
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(v, list)}

    def get(self, key: str) -> list[float] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, items: dict[str, list[float]]) -> None:
        """Add vectors and (with a file) save them, merged with what is already on disk."""
        if not items:
            return
        with self._lock:
            self._entries.update(items)
            if self.path is None:
                return
            merged = {**self._read(), **self._entries}
            self._entries = merged
            write_text_atomic(self.path, json.dumps({"format": CACHE_FORMAT, "entries": merged}), fsync=False)


@dataclass
class EmbedUsage:
    """What a notebook (or a run) asked of the embedding service.

    ``calls``: requests made to the service (HTTP attempts for Cohere, retries included; model
    invocations for a local model). ``texts``: texts those requests carried. ``cached``: query
    texts answered from the run's cache instead. ``bypass``: why the cache was not used, if so.
    """

    calls: int = 0
    texts: int = 0
    cached: int = 0
    bypass: str | None = None


class CachedEmbedder:
    """An :class:`~retrieval_lib.embedding.providers.Embedder` that embeds each distinct query once per cache.

    Args:
        inner: the real embedder.
        cache: the run's :class:`QueryCache`; None embeds every query (nothing is remembered).
        bypass: the reason this embedder must measure the service (the registry's ``bypass``):
            every query is then sent, and nothing is read from or written to the cache.
    """

    def __init__(self, inner: Any, cache: QueryCache | None = None, *, bypass: str | None = None) -> None:
        self.inner = inner
        self.cache = None if bypass else cache
        self.bypass = bypass
        self.provider = inner.provider
        self.model = inner.model
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        native = getattr(inner, "native_dimension", None)
        #: the model as the cache keys it: a reduced dimension is another model's vectors
        self._key_model = self.model if not native or native == self.dimension else f"{self.model}/{self.dimension}"
        self._query_type = str(getattr(inner, "query_type", QUERY)) if hasattr(inner, "embed_as") else QUERY
        self._lock = threading.Lock()
        self._asked = 0  # query texts asked for through the cache
        self._sent_queries = 0  # of those, texts sent to the service
        # an inner embedder that counts its own requests (ours do: HTTP attempts, retries included) is read;
        # another one is counted here, one call per MAX_BATCH texts
        self._inner_counts = all(isinstance(getattr(inner, n, None), int) for n in ("calls", "texts"))
        self._own_calls = 0
        self._own_texts = 0

    def __repr__(self) -> str:
        return repr(self.inner)

    def __getattr__(self, name: str) -> Any:
        # what only some embedders have (input_types, embed_as, max_batch, native_dimension, dimensions_offered,
        # normalised, close): the inner embedder's. Documents, and every embed_as, are never cached.
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _send(self, texts: list[str], documents: bool) -> list[list[float]]:
        if not texts:
            return []
        vectors = self.inner.embed_documents(texts) if documents else self.inner.embed_queries(texts)
        if not self._inner_counts:
            with self._lock:
                self._own_calls += math.ceil(len(texts) / MAX_BATCH)
                self._own_texts += len(texts)
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        if self.cache is None:
            return self._send(texts, documents=False)
        with self._lock:
            self._asked += len(texts)
        self.prefetch(texts)
        keys = [query_key(self.provider, self._key_model, self._query_type, t) for t in texts]
        found = [self.cache.get(k) for k in keys]
        return [list(v) for v in found if v is not None]

    def prefetch(self, texts: Iterable[str]) -> int:
        """Embed every distinct query not yet cached, in as few calls as the service allows; returns how many."""
        if self.cache is None:
            return 0
        keys = {t: query_key(self.provider, self._key_model, self._query_type, t) for t in texts}
        todo = [t for t, k in keys.items() if self.cache.get(k) is None]
        if todo:
            vectors = self._send(todo, documents=False)
            self.cache.put({keys[t]: v for t, v in zip(todo, vectors)})
            with self._lock:
                self._sent_queries += len(todo)
        return len(todo)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._send(list(texts), documents=True)

    def count_tokens(self, text: str) -> int:
        return int(self.inner.count_tokens(text))

    @property
    def tokens_estimated(self) -> bool:
        return bool(getattr(self.inner, "tokens_estimated", False))

    def usage(self) -> EmbedUsage:
        """Calls and texts sent so far by this embedder, and texts answered from the cache."""
        with self._lock:
            calls, texts = ((self.inner.calls, self.inner.texts) if self._inner_counts
                            else (self._own_calls, self._own_texts))
            cached = max(0, self._asked - self._sent_queries)
            return EmbedUsage(calls=calls, texts=texts, cached=cached, bypass=self.bypass)


def total_usage(usages: Iterable[EmbedUsage]) -> EmbedUsage:
    """The sum of several usages (a notebook that reopened its retriever, or a whole run)."""
    out = EmbedUsage()
    for u in usages:
        out.calls += u.calls
        out.texts += u.texts
        out.cached += u.cached
        out.bypass = out.bypass or u.bypass
    return out


def embedding_totals(outcomes: Sequence[Any], prefetch: dict[str, Any] | None = None) -> dict[str, Any]:
    """The embed calls and texts the run made: its prefetch and each notebook's ``embed_*`` metrics, and the sum."""
    fields = {"calls": "embed_calls", "texts": "embed_texts", "cached": "embed_texts_cached"}
    each = {o.notebook: {k: int(o.metrics.get(m) or 0) for k, m in fields.items()}
            for o in outcomes if "embed_calls" in o.metrics}
    total = {k: sum(n[k] for n in each.values()) for k in fields}
    if prefetch:
        total["calls"] += int(prefetch.get("calls") or 0)
        total["texts"] += int(prefetch.get("texts") or 0)
    return {**total, "prefetch": prefetch, "notebooks": each}


def prefetch_run(hook: Callable[[dict[str, Any], list[Path], Any], Sequence[str]], params: dict[str, Any],
              selected: list[Path], run_dir: Path, *, progress: bool = True) -> dict[str, Any]:
    """Embed a run's planned queries into its cache before its notebooks run (the runner's prefetch step).

    ``hook(params, notebooks, settings)`` names the queries (:func:`retrieval_lib.cli.commands.plan.prefetch_queries`).
    Returns ``{"queries", "calls", "texts", "seconds"}`` and, when it failed, ``"error"``: a failure is recorded,
    not raised, and each notebook then embeds its own queries (and meets the same error where it belongs).
    """
    import sys
    import time

    from retrieval_lib.config import load_settings
    from retrieval_lib.embedding.providers import make_embedder
    from retrieval_lib.errors import RetrievalError

    out: dict[str, Any] = {"queries": 0, "calls": 0, "texts": 0}
    embedder = None
    t0 = time.perf_counter()
    try:
        settings = load_settings()
        texts = list(dict.fromkeys(hook(params, selected, settings)))
        out["queries"] = len(texts)
        if texts:
            if progress:
                print(f"prefetch: embedding the run's {len(texts)} distinct queries once", file=sys.stderr)
            embedder = CachedEmbedder(make_embedder(settings), QueryCache(cache_file(run_dir)))
            embedder.prefetch(texts)
    except RetrievalError as err:  # the notebooks meet the same problem and report it where it belongs
        out["error"] = f"{type(err).__name__}: {err}"
        if progress:
            print(f"prefetch failed ({out['error']}); each notebook embeds its own queries", file=sys.stderr)
    if embedder is not None:
        usage = embedder.usage()
        out["calls"], out["texts"] = usage.calls, usage.texts
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out
