"""The seed-003 retrieval API: FastAPI over the library's retriever, joined with a metadata database.

- :mod:`.app`: :func:`create_app`, the application factory, and :class:`ServiceOptions`;
- :mod:`.routes`: ``POST /search`` and ``GET /health``; :mod:`.join` joins hits with rows;
- :mod:`.handlers` and :mod:`.errors`: the exception tree mapped onto 400/413/502/503, one error body;
- :mod:`.guard`: request ids, the body-size limit and the query log (:mod:`.querylog`);
- :mod:`.metadata`: table ``chunks`` in SQLite or PostgreSQL (SQLAlchemy Core);
- :mod:`.server`: running it with uvicorn, in this process or as a child process;
- :mod:`.client` and :mod:`.validate`: checking ANY seed-003 service by its URL (notebook 08);
  :mod:`.consistency`: metadata rows against vector points.

The family imports the core only (never ``checks`` or ``ingest``); the CLI wires it to ``ingest``.
"""

from retrieval_lib.service.app import ServiceOptions, create_app
from retrieval_lib.service.errors import DatabaseUnavailableError, RequestTooLargeError
from retrieval_lib.stores.metadata import MetadataDB

__all__ = ["create_app", "ServiceOptions", "MetadataDB", "DatabaseUnavailableError", "RequestTooLargeError"]
