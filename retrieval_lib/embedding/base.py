"""What every embedder shares: the :class:`Embedder` protocol, the providers' limits, and one bounded retry loop.

- :class:`Embedder`: what search, ingest and the checks use; they never ask which backend they got. Embedders that
  know more than "query" and "document" (Cohere's ``input_type``, Gemini's ``task_type``, a sentence-transformers
  model's prompts) also offer :attr:`RemoteEmbedder.input_types` and :meth:`RemoteEmbedder.embed_as`, which the
  embedding-contract check uses to name an input-type mistake.
- :data:`PROVIDERS`: per provider, the texts one request may carry, the default window, whether calls cost an API
  bill, and the input types it has (``plan``, the run cache and the docs read it from here).
- :class:`RemoteEmbedder`: the HTTP providers' common body. Each SDK's own retries are switched off and replaced by
  one loop: at most ``max_retries`` retries and ``retry_budget`` seconds of waiting per call, on 429, 5xx, timeouts
  and refused connections, honouring ``Retry-After`` (a wait that would pass the budget fails at once). Errors land
  on the package's tree: 401/403 -> :class:`AuthenticationError`, 429 -> :class:`RateLimitedError`, 5xx / timeout /
  refused -> :class:`EmbeddingUnavailableError`, anything unusable -> :class:`BadEmbeddingResponseError`. No message,
  ``repr`` or field ever holds the key: a subclass keeps it inside its SDK client only.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    EmbeddingError,
    EmbeddingUnavailableError,
    RateLimitedError,
)

__all__ = ["Embedder", "ProviderInfo", "PROVIDERS", "provider_info", "RemoteEmbedder", "Failure",
           "retry_after_seconds", "estimate_tokens", "http_failure", "transport_failure", "input_types_of",
           "embed_as", "request_size"]

log = logging.getLogger("retrieval_lib.embedding")


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


@dataclass(frozen=True)
class ProviderInfo:
    """What the workbook knows about a provider before building its embedder.

    ``batch``: texts per request (a local model: texts per encode batch; one call per call made);
    ``window``: tokens the default model reads; ``remote``: calls go to an API (and cost a bill);
    ``input_types``: the kinds of embedding it offers, the document type first, then the query type.
    """

    name: str
    batch: int
    window: int
    remote: bool
    input_types: tuple[str, ...]
    variables: tuple[str, ...]


PROVIDERS: dict[str, ProviderInfo] = {
    "local": ProviderInfo("local", 64, 256, False, ("document", "query"), ("EMBEDDING_MODEL",)),
    "sentence-transformers": ProviderInfo("sentence-transformers", 64, 512, False, ("document", "query"),
                                          ("EMBEDDING_MODEL",)),
    "e5": ProviderInfo("e5", 64, 512, False, ("passage", "query"), ("EMBEDDING_MODEL",)),
    "cohere": ProviderInfo("cohere", 96, 512, True,
                           ("search_document", "search_query", "classification", "clustering"),
                           ("COHERE_API_KEY", "COHERE_BASE_URL", "EMBEDDING_MODEL", "EMBEDDING_DIMENSIONS")),
    "openai": ProviderInfo("openai", 2048, 8191, True, ("none",),
                           ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EMBEDDING_MODEL", "EMBEDDING_DIMENSIONS")),
    "gemini": ProviderInfo("gemini", 100, 2048, True,
                           ("RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY", "SEMANTIC_SIMILARITY", "CLASSIFICATION",
                            "CLUSTERING"),
                           ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL", "EMBEDDING_MODEL",
                            "EMBEDDING_DIMENSIONS")),
}


def provider_info(provider: str) -> ProviderInfo:
    """The :class:`ProviderInfo` of ``provider`` (an unknown name: a local model's figures)."""
    return PROVIDERS.get(provider, PROVIDERS["local"])


def request_size(embedder: Any) -> int | None:
    """Texts one embed call of ``embedder`` should carry: a remote provider's request limit (its ``max_batch``:
    Cohere 96, Gemini 100, OpenAI 2,048), or None for a model on this machine, which takes any number in one call
    and batches inside. Search and ingest cut their texts at this size, so each provider batches at its own limit
    (and ``plan``, which counts calls at the same sizes, stays exact)."""
    size = getattr(embedder, "max_batch", None)
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def input_types_of(embedder: Any) -> tuple[str, ...]:
    """The input types ``embedder`` can embed under, document type first (``("document", "query")`` for one that
    only has :meth:`Embedder.embed_documents` and :meth:`Embedder.embed_queries`)."""
    types = getattr(embedder, "input_types", None)
    if isinstance(types, tuple) and types and callable(getattr(embedder, "embed_as", None)):
        return types
    return ("document", "query")


def embed_as(embedder: Any, texts: Sequence[str], input_type: str) -> list[list[float]]:
    """``texts`` embedded under ``input_type`` (one of :func:`input_types_of`)."""
    if callable(getattr(embedder, "embed_as", None)) and isinstance(getattr(embedder, "input_types", None), tuple):
        return embedder.embed_as(texts, input_type)
    return embedder.embed_queries(texts) if input_type == "query" else embedder.embed_documents(texts)


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` where no tokenizer is local: an estimate meant not to count short."""
    return max(math.ceil(len(text.split()) * 1.3), math.ceil(len(text) / 3))


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a ``Retry-After-Ms`` / ``Retry-After`` header asks for, in seconds (None: none, or not a number)."""
    if not headers:
        return None
    try:
        lowered = {str(k).lower(): v for k, v in dict(headers).items()}
    except (TypeError, ValueError):
        return None
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


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified: the error it becomes, and whether another attempt may help.

    ``final`` holds the whole message of a failure that must not be retried (a refused key, a bad request);
    otherwise ``detail`` says what happened and the loop decides whether to wait and try again.
    """

    kind: type[EmbeddingError]
    detail: str
    status: int | None = None
    wait: float | None = None
    final: str | None = None


def http_failure(status: int, headers: Any, *, label: str, key_variable: str, base_url_variable: str,
                 model: str) -> Failure:
    """The :class:`Failure` an HTTP status means, the same for every provider."""
    if status in (401, 498):
        return Failure(AuthenticationError, "", status,
                       final=f"{label} refused the API key (HTTP {status}): check {key_variable}")
    if status == 403:
        return Failure(AuthenticationError, "", status,
                       final=f"{label} key has no access to {model} (HTTP 403): check {key_variable}'s plan "
                             "or EMBEDDING_MODEL")
    if 200 <= status < 300:
        return Failure(BadEmbeddingResponseError, "", status,
                       final=f"{label} answered HTTP {status} with a body that is not valid embed JSON; check that "
                             f"{base_url_variable} points at a {label}-compatible embed API (a proxy may be rewriting "
                             "answers) and re-run")
    if status == 429:
        return Failure(RateLimitedError, "rate limited (HTTP 429)", status, retry_after_seconds(headers))
    if status >= 500 or status in (408, 409):
        return Failure(EmbeddingUnavailableError, f"server error (HTTP {status})", status,
                       retry_after_seconds(headers))
    return Failure(BadEmbeddingResponseError, "", status,
                   final=f"{label} rejected the embed request (HTTP {status}); check EMBEDDING_MODEL, "
                         "EMBEDDING_DIMENSIONS and the input")


def _class_names(err: BaseException) -> Iterator[str]:
    for cls in type(err).__mro__:
        yield f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def transport_failure(err: BaseException, timeout: float) -> Failure | None:
    """A timeout or a connection failure of any httpx flavour the SDKs use (httpx, httpx2), or None."""
    names = set(_class_names(err))
    cause = err.__cause__ or err.__context__
    if any(n.endswith((".TimeoutException", ".APITimeoutError")) for n in names) or isinstance(err, TimeoutError):
        return Failure(EmbeddingUnavailableError, f"no answer within {timeout:g} s")
    if (any(n.startswith(("httpx.", "httpx2.")) and n.endswith(".TransportError") for n in names)
            or any(n.endswith(".APIConnectionError") for n in names) or isinstance(err, OSError)):
        shown = type(cause).__name__ if cause is not None and any(
            n.endswith(".APIConnectionError") for n in names) else type(err).__name__
        if cause is not None and any(n.endswith(".TimeoutException") for n in _class_names(cause)):
            return Failure(EmbeddingUnavailableError, f"no answer within {timeout:g} s")
        return Failure(EmbeddingUnavailableError, f"connection failed ({shown})")
    return None


class RemoteEmbedder:
    """The common body of the HTTP providers (see the module). A subclass sets the class attributes, builds its SDK
    client, and implements :meth:`_request` (one SDK call, no retries) and :meth:`_classify` (an SDK error as a
    :class:`Failure`, or None to let it through)."""

    provider: str = "remote"
    label: ClassVar[str] = "remote"
    key_variable: ClassVar[str] = ""
    base_url_variable: ClassVar[str] = ""
    default_endpoint: ClassVar[str] = ""

    #: The input types this provider has, the document type first and the query type second.
    input_types: tuple[str, ...] = ("document", "query")
    dimension: int

    def __init__(self, model: str, *, base_url: str | None, timeout: float, max_retries: int, retry_budget: float,
                 backoff: float, sleep: Callable[[float], None], max_batch: int, max_tokens: int) -> None:
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.retry_budget = float(retry_budget)
        self.backoff = backoff
        self.max_batch = max_batch
        self.batch_size = max_batch
        self.max_tokens = max_tokens
        self._sleep = sleep
        self.calls = 0  # HTTP attempts made (retries included), for tests and reports
        self.texts = 0  # texts sent in those attempts
        self._count_lock = threading.Lock()  # 06 searches from many threads at once

    # ---- what a subclass provides -------------------------------------------------------------------------
    def _request(self, texts: list[str], input_type: str) -> list[list[float]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _classify(self, err: Exception) -> Failure | None:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- the shared part ----------------------------------------------------------------------------------
    @property
    def document_type(self) -> str:
        return self.input_types[0]

    @property
    def query_type(self) -> str:
        return self.input_types[1] if len(self.input_types) > 1 else self.input_types[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, dimension={self.dimension})"

    def _fail(self, cls: type[EmbeddingError], message: str, **fields: Any) -> EmbeddingError:
        return cls(message, provider=self.provider, model=self.model, **fields)

    def _bad(self, message: str) -> EmbeddingError:
        return self._fail(BadEmbeddingResponseError, message)

    def _check(self, vectors: Any, expected: int, dimension: int | None) -> list[list[float]]:
        """The vectors of one answer, checked: as many as texts, each of ``dimension`` (None: any, but all equal)."""
        if not isinstance(vectors, list) or len(vectors) != expected:
            got = len(vectors) if isinstance(vectors, list) else "no"
            raise self._bad(f"{self.label} returned {got} embeddings for {expected} texts; check that "
                            f"{self.base_url_variable} points at a {self.label}-compatible embed API and re-run")
        sizes = {len(v) if isinstance(v, list) else -1 for v in vectors}
        want = dimension if dimension is not None else next(iter(sizes), 0)
        for size in sizes:
            if size != want or size <= 0:
                raise self._bad(f"{self.label} returned {size}-dimensional vectors; {self.model} here gives {want}: "
                                f"check EMBEDDING_MODEL, EMBEDDING_DIMENSIONS and that {self.base_url_variable} "
                                "serves that model")
        try:
            return [[float(x) for x in v] for v in vectors]
        except (TypeError, ValueError):
            raise self._bad(f"{self.label} returned embeddings that are not lists of numbers") from None

    def _embed_batch(self, texts: list[str], input_type: str) -> list[list[float]]:
        deadline = time.monotonic() + self.retry_budget
        attempt = 0
        while True:
            attempt += 1
            with self._count_lock:
                self.calls += 1
                self.texts += len(texts)
            try:
                return self._request(texts, input_type)
            except EmbeddingError:
                raise
            except Exception as err:
                failure = self._classify(err) or transport_failure(err, self.timeout)
                if failure is None:
                    raise
            if failure.final is not None:
                raise self._fail(failure.kind, failure.final, status=failure.status) from None
            retries_left = attempt <= self.max_retries
            wait = failure.wait
            delay = wait if wait is not None else self.backoff * (2 ** (attempt - 1)) * (1 + random.random() * 0.2)
            if not retries_left or time.monotonic() + delay > deadline:
                why = "retries exhausted" if not retries_left else "the next wait would pass the retry budget"
                fields: dict[str, Any] = {"attempts": attempt, "status": failure.status}
                if failure.kind is RateLimitedError:
                    fields["retry_after"] = wait
                    advice = "wait and re-run, lower the query rate, or use a production key"
                else:
                    advice = f"check that {self.base_url or self.default_endpoint} is reachable and try again later"
                raise self._fail(failure.kind, f"{self.label} embed failed: {failure.detail} after {attempt} "
                                               f"attempt(s), {why}; {advice}", **fields) from None
            log.warning("%s embed %s; retry %d in %.2f s", self.provider, failure.detail, attempt, delay)
            self._sleep(delay)

    def _batches(self, texts: list[str]) -> Iterator[list[str]]:
        for start in range(0, len(texts), self.max_batch):
            yield texts[start:start + self.max_batch]

    def embed_as(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        """``texts`` embedded under ``input_type`` (one of :attr:`input_types`), in batches of the provider's limit."""
        if input_type not in self.input_types:
            raise ValueError(f"{self.provider} has no input type {input_type!r} ({', '.join(self.input_types)})")
        out: list[list[float]] = []
        for batch in self._batches(list(texts)):
            out.extend(self._embed_batch(batch, input_type))
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, self.query_type)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, self.document_type)

    def count_tokens(self, text: str) -> int:
        # No provider tokenizer offline: an estimate meant not to count short (docs/notebooks.md, "Chunk quality").
        return estimate_tokens(text)

    def close(self) -> None:  # pragma: no cover - subclasses close their clients
        pass
