"""The service's error contract: the exception tree mapped onto HTTP statuses, one body for all.

Every error answer, whatever raised it, is::

    {"error": {"type": "<exception class name>", "message": "<what went wrong, what to do>", "status": N}}

========================================================  ======
what                                                      status
========================================================  ======
:class:`~retrieval_lib.errors.ValidationError` (bad query, ``top_k``, threshold, JSON, field types,
unknown fields)                                                400
:class:`RequestTooLargeError` (body over the size limit, refused before parsing)   413
:class:`UnsupportedMediaTypeError` (a body whose Content-Type is not JSON)         415
:class:`RequestTimeoutError` (the body did not arrive within the read timeout)     408
:class:`~retrieval_lib.errors.EmbeddingError` and subclasses (Cohere 5xx, timeout,
rate limit after the bounded retries, refused key, bad response)                502
:class:`~retrieval_lib.errors.VectorStoreError`, :class:`DatabaseUnavailableError`,
:class:`~retrieval_lib.errors.CollectionNotFoundError`, ``ModelMismatchError``,
``ConfigurationError`` (the service cannot serve with what it was given)        503
:class:`ServiceBusyError` (the micro-batching queue is full)                     503
anything else: a bug                                                            500
========================================================  ======

A 500 keeps the schema and says only "internal error" with the request id:
no traceback and no exception text (which could hold a secret) leave the process.
"""

from __future__ import annotations

from typing import Any, ClassVar

from retrieval_lib.errors import (
    CollectionNotFoundError,
    ConfigurationError,
    DatabaseUnavailableError,
    EmbeddingError,
    ModelMismatchError,
    RetrievalError,
    ValidationError,
    VectorStoreError,
)

__all__ = ["RequestTooLargeError", "UnsupportedMediaTypeError", "RequestTimeoutError", "ServiceBusyError",
           "DatabaseUnavailableError", "status_for", "error_body", "INTERNAL_ERROR"]

#: The ``type`` of an unexpected failure (a bug).
INTERNAL_ERROR = "InternalError"


class RequestTooLargeError(ValidationError):
    """A request body over the service's size limit, refused before it is parsed.

    Attributes:
        limit: the largest body accepted, in bytes.
        field: ``"body"``.
    """

    field_names: ClassVar[tuple[str, ...]] = ("field", "limit")

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message, field="body")
        self.limit = limit


class UnsupportedMediaTypeError(ValidationError):
    """A request body sent with a Content-Type other than JSON (``application/json`` or ``*/*+json``).

    Attributes:
        content_type: what the request said (None when it said nothing).
    """

    field_names: ClassVar[tuple[str, ...]] = ("field", "content_type")

    def __init__(self, message: str, *, content_type: str | None) -> None:
        super().__init__(message, field="content-type")
        self.content_type = content_type


class RequestTimeoutError(ValidationError):
    """A request body that stopped arriving: nothing came for longer than the read timeout.

    Attributes:
        timeout: the read timeout, in seconds.
    """

    field_names: ClassVar[tuple[str, ...]] = ("field", "timeout")

    def __init__(self, message: str, *, timeout: float) -> None:
        super().__init__(message, field="body")
        self.timeout = timeout


class ServiceBusyError(RetrievalError):
    """More queries waiting to be embedded than the service queues; retry shortly.

    Attributes:
        limit: the most queries queued.
    """

    field_names: ClassVar[tuple[str, ...]] = ("limit",)

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


#: Each status and the errors that get it, the first match wins (see the module table).
_STATUSES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
    (RequestTooLargeError, 413), (UnsupportedMediaTypeError, 415), (RequestTimeoutError, 408), (ValidationError, 400),
    (EmbeddingError, 502),
    ((ServiceBusyError, VectorStoreError, DatabaseUnavailableError, CollectionNotFoundError, ModelMismatchError,
      ConfigurationError), 503),
)


def status_for(err: BaseException) -> int:
    """The HTTP status for an exception (see the module table); 500 for anything else."""
    return next((status for kinds, status in _STATUSES if isinstance(err, kinds)), 500)


def error_body(kind: str, message: str, status: int) -> dict[str, Any]:
    """The one error body: ``{"error": {"type", "message", "status"}}``."""
    return {"error": {"type": kind, "message": message, "status": status}}
