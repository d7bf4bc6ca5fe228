"""Running the service: :func:`serve`, what ``python -m retrieval_lib serve`` does.

The service as a child process on a free loopback port (for notebook 08 and the tests) is
:mod:`retrieval_lib.checks.api.target`.
"""

from __future__ import annotations

from pathlib import Path

from retrieval_lib.config import Settings
from retrieval_lib.service.app import ServiceOptions, configured_metadata, create_app, open_retriever

__all__ = ["serve", "LOOPBACK"]

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
    try:
        metadata = configured_metadata(settings, retriever)  # None: a team's collection without DATABASE_URL
        app = create_app(settings, retriever=retriever, metadata=metadata, options=options, log_path=log_file)
        # access_log off: the query log already writes one line per request, without headers
        uvicorn.run(app, host=host, port=port, log_level="info", access_log=False, timeout_graceful_shutdown=5)
    finally:
        retriever.close()
