"""The one exception tree of retrieval_lib.

Every error the package raises on purpose derives from :class:`RetrievalError`.
Each class declares its structured attributes (papermill style: named keyword
arguments, set one by one, so a typo at a raise site is a ``TypeError``, never a
silently missing field), carries a message that says what went wrong and what to
do, and the exit code the command line uses for it. No error text ever contains
a secret: messages name the *variable* (``COHERE_API_KEY``), never its value.

::

    RetrievalError                      exit 1 (never raised directly)
    ├── ValidationError                 exit 2  bad query or argument (field)
    │   ├── ParamsError                 exit 2  a params/*.yaml file is invalid (path, key)
    │   └── RunsNotComparableError      exit 2  two runs asked different queries (only_baseline, only_candidate)
    ├── ConfigurationError              exit 2  missing/invalid setting (variable | option | path)
    ├── DocumentError                   exit 2  a source file that cannot be ingested (path)
    ├── ModelMismatchError              exit 2  embedder and collection disagree (dimensions, models)
    ├── CollectionNotFoundError         exit 2  no such collection (collection, available)
    ├── ReadOnlyError                   exit 2  a write to a collection the workbook did not build (collection)
    ├── VectorStoreError                exit 3  Qdrant failed (location)
    │   ├── StoreUnavailableError       exit 3  refused, timed out, unreachable
    │   └── StoreLockedError            exit 3  embedded folder held by another process
    ├── DatabaseUnavailableError        exit 3  the metadata database failed (location)
    ├── RetrieverError                  exit 3  a team's retriever gave no answer (kind, retriever)
    └── EmbeddingError                  exit 3  the embedding service failed (provider, model, status, attempts)
        ├── RateLimitedError            exit 3  429 after bounded retries (+ retry_after)
        ├── AuthenticationError         exit 2  401/403: the key is wrong or lacks access
        ├── EmbeddingUnavailableError   exit 3  5xx, timeout, connection refused (+ on a timeout: texts, tokens,
        │                                       timeout, batch_size)
        └── BadEmbeddingResponseError   exit 3  malformed body, wrong count or dimension
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = [
    "DatabaseUnavailableError",
    "RetrieverError",
    "RetrievalError",
    "ValidationError",
    "ParamsError",
    "RunsNotComparableError",
    "ConfigurationError",
    "DocumentError",
    "ModelMismatchError",
    "CollectionNotFoundError",
    "ReadOnlyError",
    "VectorStoreError",
    "StoreUnavailableError",
    "StoreLockedError",
    "EmbeddingError",
    "RateLimitedError",
    "AuthenticationError",
    "EmbeddingUnavailableError",
    "BadEmbeddingResponseError",
]

_JSON_TYPES = (str, int, float, bool, list, tuple, type(None))


class RetrievalError(Exception):
    """Root of every error retrieval_lib raises on purpose.

    Subclasses list their attribute names in ``field_names`` and set each one in
    their ``__init__``; :attr:`fields` and :meth:`to_dict` read them from there.
    """

    exit_code: ClassVar[int] = 1
    field_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def fields(self) -> dict[str, Any]:
        """The structured attributes, by name."""
        return {name: getattr(self, name) for name in self.field_names}

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle as cls(*args) by default, which keyword-only fields break.
        return (_rebuild, (type(self), self.message, self.fields))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: error type, message, exit code, structured fields."""
        safe = {k: v for k, v in self.fields.items() if isinstance(v, _JSON_TYPES)}
        return {"error": type(self).__name__, "message": self.message, "exit_code": self.exit_code, **safe}


def _rebuild(cls: type[RetrievalError], message: str, fields: dict[str, Any]) -> RetrievalError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.message = message
    for name, value in fields.items():
        setattr(err, name, value)
    return err


class ValidationError(RetrievalError, ValueError):
    """A query, argument or parameter is out of its allowed range.

    Attributes:
        field: the argument or parameter at fault (e.g. ``"top_k"``).
    """

    exit_code = 2
    field_names: ClassVar[tuple[str, ...]] = ("field",)

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class ParamsError(ValidationError):
    """A parameter file under ``params/`` cannot be used.

    Attributes:
        path: the file.
        key: the key at fault, or None when the whole file is (missing, not YAML).
        field: ``key``, or ``"params"`` for the whole file.
    """

    field_names = ("field", "path", "key")

    def __init__(self, message: str, *, path: str, key: str | None) -> None:
        super().__init__(message, field=key or "params")
        self.path = path
        self.key = key


class RunsNotComparableError(ValidationError):
    """Two runs cannot be compared: they asked different fixed query sets (``retrieval_lib compare``).

    Attributes:
        only_baseline: query texts the baseline asked and the candidate did not.
        only_candidate: query texts the candidate asked and the baseline did not.
        field: ``"candidate"``.
    """

    field_names = ("field", "only_baseline", "only_candidate")

    def __init__(self, message: str, *, only_baseline: Sequence[str] = (), only_candidate: Sequence[str] = ()) -> None:
        super().__init__(message, field="candidate")
        self.only_baseline = list(only_baseline)
        self.only_candidate = list(only_candidate)


class ConfigurationError(RetrievalError):
    """A setting is missing or invalid.

    Exactly one of the attributes names where the setting comes from (a name,
    never a value):

    Attributes:
        variable: an environment variable (``QDRANT_URL``), or None.
        option: a command-line option or argument (``--params``, ``docs_dir``), or None.
        path: a file or folder that is missing or unusable, or None.
    """

    exit_code = 2
    field_names = ("variable", "option", "path")

    def __init__(self, message: str, *, variable: str | None = None, option: str | None = None,
                 path: str | None = None) -> None:
        if (variable, option, path).count(None) != 2:
            raise TypeError("ConfigurationError needs exactly one of variable=, option= or path=")
        super().__init__(message)
        self.variable = variable
        self.option = option
        self.path = path


class DocumentError(RetrievalError):
    """A source document cannot be ingested.

    Attributes:
        path: the document, relative to the docs folder where known.
    """

    exit_code = 2
    field_names = ("path",)

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ModelMismatchError(RetrievalError):
    """The configured embedder does not match the collection's vectors.

    Attributes:
        collection_dimension: the collection's vector size (None when unknown).
        embedder_dimension: the configured embedder's output size.
        collection_model: a ``model_version`` found in the payload, or None.
        configured_model: the configured embedder's model.
    """

    exit_code = 2
    field_names = ("collection_dimension", "embedder_dimension", "collection_model", "configured_model")

    def __init__(self, message: str, *, collection_dimension: int | None, embedder_dimension: int | None,
                 collection_model: str | None, configured_model: str) -> None:
        super().__init__(message)
        self.collection_dimension = collection_dimension
        self.embedder_dimension = embedder_dimension
        self.collection_model = collection_model
        self.configured_model = configured_model


class CollectionNotFoundError(RetrievalError):
    """The configured collection does not exist.

    Attributes:
        collection: the name asked for.
        available: the collections the store does hold.
    """

    exit_code = 2
    field_names = ("collection", "available")

    def __init__(self, message: str, *, collection: str, available: Sequence[str]) -> None:
        super().__init__(message)
        self.collection = collection
        self.available = list(available)


class ReadOnlyError(RetrievalError):
    """A write was asked of a collection the workbook reads but did not build (points, the collection itself,
    or its payload indexes). The workbook never changes a team's collection.

    Attributes:
        collection: the collection, when known.
    """

    exit_code = 2
    field_names = ("collection",)

    def __init__(self, message: str, *, collection: str | None = None) -> None:
        super().__init__(message)
        self.collection = collection


class _LocatedError(RetrievalError):
    """A dependency at a known place failed (the common body of the two below).

    Attributes:
        location: the URL without credentials, or the embedded folder (Qdrant) or SQLite file (the database).
    """

    exit_code = 3
    field_names: ClassVar[tuple[str, ...]] = ("location",)

    def __init__(self, message: str, *, location: str) -> None:
        super().__init__(message)
        self.location = location


class VectorStoreError(_LocatedError):
    """Qdrant failed."""


class StoreUnavailableError(VectorStoreError):
    """Qdrant cannot be reached: connection refused, timed out, or unreachable."""


class StoreLockedError(VectorStoreError):
    """The embedded store folder is held by another process (``location`` is the folder)."""


class DatabaseUnavailableError(_LocatedError):
    """The metadata database cannot be reached or answered with an error."""


class RetrieverError(RetrievalError):
    """A team's retriever (a profile's ``retriever:``: an HTTP endpoint or a Python function) gave no answer.

    Attributes:
        kind: the fault (``unreachable``, ``timeout``, ``http 500``, ``not json``, ``no results list``,
            ``raised ValueError``, ``exited 3``...).
        retriever: the retriever, described without secrets (``http POST http://127.0.0.1:8000/search``).
    """

    exit_code = 3
    field_names = ("kind", "retriever")

    def __init__(self, message: str, *, kind: str, retriever: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.retriever = retriever


class EmbeddingError(RetrievalError):
    """The embedding service failed.

    Attributes:
        provider: ``"cohere"`` or ``"local"``.
        model: the model asked for.
        status: the HTTP status of the last answer, or None (timeout, refused).
        attempts: HTTP attempts made, or None where not counted.
    """

    exit_code = 3
    field_names: ClassVar[tuple[str, ...]] = ("provider", "model", "status", "attempts")

    def __init__(self, message: str, *, provider: str, model: str, status: int | None = None,
                 attempts: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status = status
        self.attempts = attempts


class RateLimitedError(EmbeddingError):
    """Still rate limited (HTTP 429) after the bounded retries.

    Attributes:
        retry_after: the seconds the service last asked to wait, or None.
    """

    field_names = EmbeddingError.field_names + ("retry_after",)

    def __init__(self, message: str, *, provider: str, model: str, status: int | None = None,
                 attempts: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, provider=provider, model=model, status=status, attempts=attempts)
        self.retry_after = retry_after


class AuthenticationError(EmbeddingError):
    """The API key was refused (401) or lacks access (403); ``status`` says which."""

    exit_code = 2


class EmbeddingUnavailableError(EmbeddingError):
    """Server error, timeout or connection failure after the bounded retries.

    When the service took the request but did not answer within ``EMBEDDING_TIMEOUT`` (``timeout`` is set; at a
    server that is not the vendor's own, after halving the batch down to one text), the error says what was sent:

    Attributes:
        texts: texts the last request carried, or None (not a timeout).
        tokens: about how many tokens they hold (a rough estimate), or None.
        timeout: the seconds one request may take (``EMBEDDING_TIMEOUT``), or None.
        batch_size: texts per request when it failed (``EMBEDDING_BATCH_SIZE``, or what halving left), or None.
    """

    field_names = EmbeddingError.field_names + ("texts", "tokens", "timeout", "batch_size")

    def __init__(self, message: str, *, provider: str, model: str, status: int | None = None,
                 attempts: int | None = None, texts: int | None = None, tokens: int | None = None,
                 timeout: float | None = None, batch_size: int | None = None) -> None:
        super().__init__(message, provider=provider, model=model, status=status, attempts=attempts)
        self.texts = texts
        self.tokens = tokens
        self.timeout = timeout
        self.batch_size = batch_size


class BadEmbeddingResponseError(EmbeddingError):
    """The service answered, but not with the embeddings asked for."""
