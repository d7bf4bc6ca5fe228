"""The one exception tree of retrieval_lib.

Every error the package raises on purpose derives from :class:`RetrievalError`.
Each carries structured fields, a message that says what went wrong and what to
do, and the exit code the command line uses for it. No error text ever contains
a secret: messages name the *variable* (``COHERE_API_KEY``), never its value.

::

    RetrievalError                      exit 1 (never raised directly)
    ├── ValidationError                 exit 2  bad query or parameter (field)
    ├── ConfigurationError              exit 2  missing/invalid setting (variable)
    ├── DocumentError                   exit 2  a source file that cannot be ingested (path)
    ├── ModelMismatchError              exit 2  embedder and collection disagree (dimensions, models)
    ├── CollectionNotFoundError         exit 2  no such collection (collection, available)
    ├── VectorStoreError                exit 3  Qdrant failed (location)
    │   ├── StoreUnavailableError       exit 3  refused, timed out, unreachable
    │   └── StoreLockedError            exit 3  embedded folder held by another process (path)
    └── EmbeddingError                  exit 3  the embedding service failed (provider, model)
        ├── RateLimitedError            exit 3  429 after bounded retries (attempts, retry_after)
        ├── AuthenticationError         exit 2  401/403: the key is wrong or lacks access
        ├── EmbeddingUnavailableError   exit 3  5xx, timeout, connection refused
        └── BadEmbeddingResponseError   exit 3  malformed body, wrong count or dimension
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "RetrievalError",
    "ValidationError",
    "ConfigurationError",
    "DocumentError",
    "ModelMismatchError",
    "CollectionNotFoundError",
    "VectorStoreError",
    "StoreUnavailableError",
    "StoreLockedError",
    "EmbeddingError",
    "RateLimitedError",
    "AuthenticationError",
    "EmbeddingUnavailableError",
    "BadEmbeddingResponseError",
]


class RetrievalError(Exception):
    """Root of every error retrieval_lib raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: error type, message, structured fields."""
        safe = {k: v for k, v in self.fields.items() if isinstance(v, (str, int, float, bool, list, tuple, type(None)))}
        return {"error": type(self).__name__, "message": self.message, "exit_code": self.exit_code, **safe}


class ValidationError(RetrievalError, ValueError):
    """A query or parameter is out of its allowed range. Fields: ``field``."""

    exit_code = 2

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, field=field)


class ConfigurationError(RetrievalError):
    """A setting is missing or invalid. Fields: ``variable`` (a name, never a value)."""

    exit_code = 2

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message, variable=variable)


class DocumentError(RetrievalError):
    """A source document cannot be ingested. Fields: ``path``."""

    exit_code = 2

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, path=path)


class ModelMismatchError(RetrievalError):
    """The configured embedder does not match the collection's vectors.

    Fields: ``collection_dimension``, ``embedder_dimension``, ``collection_model``
    (``model_version`` found in the payload, or None), ``configured_model``.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        collection_dimension: int | None,
        embedder_dimension: int | None,
        collection_model: str | None,
        configured_model: str,
    ) -> None:
        super().__init__(
            message,
            collection_dimension=collection_dimension,
            embedder_dimension=embedder_dimension,
            collection_model=collection_model,
            configured_model=configured_model,
        )


class CollectionNotFoundError(RetrievalError):
    """The configured collection does not exist. Fields: ``collection``, ``available``."""

    exit_code = 2

    def __init__(self, message: str, *, collection: str, available: Sequence[str]) -> None:
        super().__init__(message, collection=collection, available=list(available))


class VectorStoreError(RetrievalError):
    """Qdrant failed. Fields: ``location`` (URL without credentials, or folder)."""

    exit_code = 3

    def __init__(self, message: str, *, location: str) -> None:
        super().__init__(message, location=location)


class StoreUnavailableError(VectorStoreError):
    """Qdrant cannot be reached: connection refused, timed out, or unreachable."""


class StoreLockedError(VectorStoreError):
    """The embedded store folder is held by another process."""


class EmbeddingError(RetrievalError):
    """The embedding service failed. Fields: ``provider``, ``model``."""

    exit_code = 3

    def __init__(self, message: str, *, provider: str, model: str, **fields: Any) -> None:
        super().__init__(message, provider=provider, model=model, **fields)


class RateLimitedError(EmbeddingError):
    """Still rate limited (HTTP 429) after the bounded retries. Fields: ``attempts``, ``retry_after``."""


class AuthenticationError(EmbeddingError):
    """The API key was refused (401) or lacks access (403). Fields: ``status``."""

    exit_code = 2


class EmbeddingUnavailableError(EmbeddingError):
    """Server error, timeout or connection failure after the bounded retries."""


class BadEmbeddingResponseError(EmbeddingError):
    """The service answered, but not with the embeddings asked for."""
