"""One fake embedder for every test that must not load a model, or must watch or perturb a real one.

:class:`FakeEmbedder` implements :class:`retrieval_lib.embedding.providers.Embedder`. Its vectors come from
exactly one source:

- ``vectors=``, a function of the text: :func:`hashed_bag_of_words`, :func:`char_stats`,
  :func:`constant`, :func:`lookup`, or a test's own;
- ``inner=``, a real embedder it wraps (provider, model, dimension and token counts are the
  inner one's unless given).

Every call is recorded, thread-safely: ``query_calls``/``document_calls`` (and ``calls``, their
sum), ``query_texts``/``document_texts``, and ``peak``, the most query batches in flight at once.
Options make it misbehave on purpose: ``query_noise`` (Gaussian noise on query vectors, seeded),
``query_delay`` (seconds slept per query batch), ``failing_query`` (a text whose batch raises
``EmbeddingError``) and ``kill_on_document_call`` (document batch n and later raise :class:`Killed`).

The configurations the suite uses:

=================================================  ==================================================
``FakeEmbedder.hashed()``                          hashed bag of words, 64 dims, L2-normalised (ingest)
``FakeEmbedder.hashed(kill_on_document_call=n)``   ... that dies on document batch n (a killed ingest)
``FakeEmbedder.tiny()``                            4 dims from character statistics (store faults)
``FakeEmbedder.fixed(v)``                          every text becomes ``v`` (scores chosen exactly)
``FakeEmbedder.table({text: v})``                  a lookup table (exact cosines)
``FakeEmbedder.like_cohere_fake()``                the loopback Cohere fake's vectors, without the server
``FakeEmbedder(inner=e)``                          counts what reaches the real embedder ``e``
``FakeEmbedder(inner=e, query_noise=s, seed=k)``   an unstable backend
``FakeEmbedder(inner=e, failing_query=t)``         an outage for one query
``FakeEmbedder(inner=e, query_delay=s)``           a slow backend, with its concurrency measured
=================================================  ==================================================
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrieval_lib.embedding.providers import Embedder
from retrieval_lib.errors import EmbeddingError

__all__ = ["FakeEmbedder", "Killed", "VectorFn", "char_stats", "constant", "hashed_bag_of_words", "lookup"]

#: Maps one text to its vector.
VectorFn = Callable[[str], list[float]]

_WORD = re.compile(r"\w+")


class Killed(RuntimeError):
    """Stands in for a process killed midway (raised by ``kill_on_document_call``)."""


# --------------------------------------------------------------------------- vector functions

def hashed_bag_of_words(dimension: int) -> VectorFn:
    """Hashed bag-of-words vectors, L2-normalised; coordinate 0 is always set, so never the zero vector.

    Texts sharing words are close; the same text always gives the same vector.

    Args:
        dimension: Vector size, at least 2.
    """
    def vector(text: str) -> list[float]:
        v = [0.0] * dimension
        v[0] = 1.0
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
            v[1 + h % (dimension - 1)] += 1.0
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v]

    return vector


def char_stats(text: str) -> list[float]:
    """A deterministic, never-zero 4-dimensional vector from the text's characters (no meaning at all)."""
    codes = [ord(c) for c in text] or [0]
    return [1.0 + sum(codes) % 7, 1.0 + len(codes) % 5, 1.0 + codes[0] % 3, 1.0]


def constant(vector: Sequence[float]) -> VectorFn:
    """Every text becomes ``vector``: a test controls scores exactly."""
    fixed = [float(x) for x in vector]
    return lambda text: list(fixed)


def lookup(table: Mapping[str, Sequence[float]]) -> VectorFn:
    """Each known text maps to its vector; an unknown text is a ``KeyError`` (a test bug, said loudly)."""
    copied = {k: [float(x) for x in v] for k, v in table.items()}
    return lambda text: list(copied[text])


def _count_words(text: str) -> int:
    return len(text.split())


# --------------------------------------------------------------------------- the fake

class FakeEmbedder:
    """A configurable :class:`~retrieval_lib.embedding.Embedder` that records every call (see the module docstring).

    Args:
        vectors: Function of the text giving its vector; exactly one of ``vectors`` and ``inner``.
        inner: A real embedder whose vectors are used (and perturbed by the options).
        provider: Defaults to ``inner.provider``, else ``"test"``.
        model: Defaults to ``inner.model``, else ``"fake"``.
        dimension: Defaults to ``inner.dimension``; required with ``vectors``.
        max_tokens: The chunk window ingest reads; defaults to ``inner``'s, else 512 (ingest's default).
        count_tokens: Token counter; defaults to ``inner.count_tokens``, else words split on white space.
        query_noise: Standard deviation of Gaussian noise added to every query coordinate.
        seed: Seed of that noise.
        query_delay: Seconds slept in every query batch (before its vectors are made).
        failing_query: A query text whose batch raises ``EmbeddingError`` ("simulated outage").
        kill_on_document_call: Document batch number (1-based) from which every document batch raises
            :class:`Killed`.

    Raises:
        ValueError: Not exactly one of ``vectors``/``inner``, or ``vectors`` without ``dimension``.
    """

    def __init__(
        self,
        vectors: VectorFn | None = None,
        *,
        inner: Embedder | None = None,
        provider: str | None = None,
        model: str | None = None,
        dimension: int | None = None,
        max_tokens: int | None = None,
        count_tokens: Callable[[str], int] | None = None,
        query_noise: float = 0.0,
        seed: int = 0,
        query_delay: float = 0.0,
        failing_query: str | None = None,
        kill_on_document_call: int | None = None,
    ) -> None:
        if inner is not None and vectors is None:
            self._embed_queries, self._embed_documents = inner.embed_queries, inner.embed_documents
            dimension = inner.dimension if dimension is None else dimension
            count_tokens = count_tokens or inner.count_tokens
        elif vectors is not None and inner is None:
            if dimension is None:
                raise ValueError("vectors= needs dimension=")
            vector_of = vectors

            def batch(texts: Sequence[str]) -> list[list[float]]:
                return [list(vector_of(t)) for t in texts]

            self._embed_queries = self._embed_documents = batch
        else:
            raise ValueError("give exactly one of vectors= and inner=")
        self.inner = inner
        self.provider: str = provider or (inner.provider if inner is not None else "test")
        self.model: str = model or (inner.model if inner is not None else "fake")
        self.dimension: int = dimension
        self.max_tokens: int = max_tokens or int(getattr(inner, "max_tokens", 512))
        self._count_tokens = count_tokens or _count_words
        self.query_noise = query_noise
        self.query_delay = query_delay
        self.failing_query = failing_query
        self.kill_on_document_call = kill_on_document_call
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.query_calls = 0
        self.document_calls = 0
        self.query_texts: list[str] = []
        self.document_texts: list[str] = []
        self.running = 0
        self.peak = 0

    # ---- the configurations the suite uses ----------------------------------------------------------
    @classmethod
    def hashed(cls, model: str = "hash-bow-v1", dimension: int = 64, max_tokens: int = 256,
               **options: Any) -> FakeEmbedder:
        """Hashed bag of words, counting tokens as ingest's default counter does."""
        from retrieval_lib.ingest.chunking import default_count_tokens

        return cls(hashed_bag_of_words(dimension), model=model, dimension=dimension, max_tokens=max_tokens,
                   count_tokens=default_count_tokens, **options)

    @classmethod
    def tiny(cls, **options: Any) -> FakeEmbedder:
        """Four dimensions from character statistics (:func:`char_stats`): for tests where vectors do not matter."""
        return cls(char_stats, model="tiny-4", dimension=4, **options)

    @classmethod
    def fixed(cls, vector: Sequence[float], **options: Any) -> FakeEmbedder:
        """Every text (query or document) becomes ``vector``."""
        return cls(constant(vector), provider="fixed", model="fixed-model", dimension=len(vector), **options)

    @classmethod
    def table(cls, table: Mapping[str, Sequence[float]], **options: Any) -> FakeEmbedder:
        """Each known text maps to its vector in ``table`` (all of one length)."""
        dimension = len(next(iter(table.values())))
        return cls(lookup(table), provider="table", model="table-model", dimension=dimension, **options)

    @classmethod
    def like_cohere_fake(cls, model: str = "bow-64", dimension: int = 64, input_type: str = "search_document",
                         **options: Any) -> FakeEmbedder:
        """The loopback fakes' vectors for ``input_type`` (``fakes.loopback.embed_text``), no server."""
        from fakes.loopback import embed_text

        def vector(text: str) -> list[float]:
            return embed_text(text, model=model, input_type=input_type, dim=dimension)

        return cls(vector, model=model, dimension=dimension, **options)

    # ---- the Embedder protocol ----------------------------------------------------------------------
    @property
    def calls(self) -> int:
        """Query and document batches asked for so far."""
        return self.query_calls + self.document_calls

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` as queries, after the configured delay, failure and noise."""
        texts = list(texts)
        with self._lock:
            self.query_calls += 1
            self.query_texts.extend(texts)
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            if self.failing_query is not None and self.failing_query in texts:
                raise EmbeddingError("simulated outage", provider=self.provider, model=self.model)
            if self.query_delay:
                time.sleep(self.query_delay)
            vectors = self._embed_queries(texts)
            if self.query_noise:
                with self._lock:  # one seeded stream, whatever the threads
                    vectors = [[x + self._rng.gauss(0, self.query_noise) for x in v] for v in vectors]
            return vectors
        finally:
            with self._lock:
                self.running -= 1

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts`` as documents; raises :class:`Killed` from batch ``kill_on_document_call`` on."""
        texts = list(texts)
        with self._lock:
            self.document_calls += 1
            if self.kill_on_document_call is not None and self.document_calls >= self.kill_on_document_call:
                raise Killed(f"killed during embed call {self.document_calls}")
            self.document_texts.extend(texts)
        return self._embed_documents(texts)

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` by the configured counter."""
        return self._count_tokens(text)

    # ---- for tests ----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every recorded call and text (the options stay)."""
        with self._lock:
            self.query_calls = self.document_calls = 0
            self.query_texts.clear()
            self.document_texts.clear()

    def __repr__(self) -> str:
        return f"FakeEmbedder(provider={self.provider!r}, model={self.model!r}, dimension={self.dimension})"
