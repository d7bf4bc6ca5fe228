"""The seed-003 retrieval API: FastAPI over the library's retriever, joined with a metadata database.

- :mod:`.app`: :func:`create_app`, the application factory, and :class:`ServiceOptions`;
- :mod:`.routes`: ``POST /search`` and ``GET /health``; :mod:`.join` joins hits with rows;
- :mod:`.schemas`: the JSON read and written, and every request limit published in the OpenAPI schema;
- :mod:`.handlers` and :mod:`.errors`: the exception tree mapped onto 400/408/413/415/502/503, one error body;
- :mod:`.guard`: request ids, the body-size limit, the body read timeout and the query log (:mod:`.querylog`);
- :mod:`.batching`: concurrent searches embedded and searched together;
- :mod:`.health`: ``/health``'s probes, without paths;
- :mod:`.server` and :mod:`.protocol`: running it with uvicorn, with the header timeout and limits.

The metadata database is :mod:`retrieval_lib.stores.metadata`; checking ANY seed-003 service by its URL
(notebook 08) is :mod:`retrieval_lib.checks.service.api`. The family imports the core only (never ``checks`` or
``ingest``); the CLI wires it to ``ingest``.
"""

from retrieval_lib.service.app import ServiceOptions, create_app
from retrieval_lib.service.errors import (
    DatabaseUnavailableError,
    RequestTimeoutError,
    RequestTooLargeError,
    ServiceBusyError,
    UnsupportedMediaTypeError,
)
from retrieval_lib.service.server import serve

__all__ = ["create_app", "serve", "ServiceOptions", "DatabaseUnavailableError", "RequestTooLargeError",
           "RequestTimeoutError", "UnsupportedMediaTypeError", "ServiceBusyError"]
