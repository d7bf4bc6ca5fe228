"""Notebook 08's checks of a seed-003 retrieval API, ours or any team's, by its URL.

- :mod:`~retrieval_lib.checks.api.target`: the service under test (:class:`ApiTarget`), ours started as a
  child process on a loopback port;
- :mod:`~retrieval_lib.checks.api.client`: an HTTP client that reads the common answer shapes;
- :mod:`~retrieval_lib.checks.api.validate`: fields, statuses, rankings and latency against the library's;
- :mod:`~retrieval_lib.checks.api.consistency`: metadata rows against vector points.
"""

from retrieval_lib.checks.api import client, consistency, target, validate
from retrieval_lib.checks.api.client import ApiClient
from retrieval_lib.checks.api.target import ApiTarget, own_service

__all__ = ["client", "consistency", "target", "validate", "ApiTarget", "ApiClient", "own_service"]
