"""Running the service: :func:`serve`, what ``python -m retrieval_lib serve`` does.

The service as a child process on a free loopback port (for notebook 08 and the tests) is
:mod:`retrieval_lib.checks.service._target`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrieval_lib.config import Settings
from retrieval_lib.service.app import ServiceOptions, configured_metadata, create_app, open_retriever
from retrieval_lib.service.protocol import guarded_protocol

__all__ = ["serve", "uvicorn_config", "LOOPBACK"]

LOOPBACK = "127.0.0.1"


def serve(settings: Settings, *, host: str = LOOPBACK, port: int = 8000, log_file: str | Path | None = None,
          options: ServiceOptions | None = None) -> None:
    """Load the model, open the store and database, and serve until interrupted (uvicorn).

    The dependencies are opened before uvicorn starts, so a bad setting or a locked
    store is reported as one line by the command line, not as a server traceback.

    Raises:
        ConfigurationError, StoreLockedError: the service cannot be built.
    """
    import uvicorn

    options = options or ServiceOptions()
    retriever = open_retriever(settings, options)
    if retriever.embedder.provider == "local":
        import torch

        # Concurrency comes from requests running in parallel threads; torch's own intra-op threads on top of
        # them only fight for the cores (measured on 2 busy cores: a call from the main thread with 2 intra-op
        # threads took ~450 ms against ~20 ms, and one intra-op thread raised the service's throughput at 100
        # concurrent requests from 0.70x to 0.85x of the library's).
        torch.set_num_threads(1)
    metadata = None
    try:
        metadata = configured_metadata(settings, retriever)  # None: a team's collection without DATABASE_URL
        app = create_app(settings, retriever=retriever, metadata=metadata, options=options, log_path=log_file)
        uvicorn.Server(uvicorn_config(app, host=host, port=port, options=options)).run()
    finally:
        if metadata is not None:  # opened here, so the app leaves it open: closed once the server has stopped
            metadata.close()
        retriever.close()


def uvicorn_config(app: Any, *, host: str = LOOPBACK, port: int = 8000, options: ServiceOptions | None = None,
                   log_level: str = "info") -> Any:
    """uvicorn's configuration for the service: every limit of ``options`` that is the server's to enforce.

    uvicorn's own settings where it has them (keep-alive, concurrency, graceful shutdown, h11's header
    limit); the header read timeout and header size limit through :func:`~.protocol.guarded_protocol`.
    """
    import uvicorn

    options = options or ServiceOptions()
    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level,
        access_log=False,  # the query log already writes one line per request, without headers
        http=guarded_protocol(options.header_timeout, options.max_header_bytes),
        timeout_keep_alive=options.keep_alive,
        limit_concurrency=options.max_connections,
        timeout_graceful_shutdown=options.shutdown_timeout,
        h11_max_incomplete_event_size=options.max_header_bytes,
    )
