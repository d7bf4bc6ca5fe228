"""The service's checks: does a retrieval API (ours, or a team's by its URL) behave as seed 003 says, over HTTP.

============================= ======================================================================================
``api`` (08)                  does a seed-003 retrieval API behave as its specification says; ``_target``: the
                              service under test (ours started on a loopback port), ``_client``: an HTTP client
                              that reads the common answer shapes, ``_validate``: fields, statuses, rankings and
                              latency, ``_consistency``: metadata rows against vector points
============================= ======================================================================================

Each module is named like its notebook and has the one entry every check has, ``run(ctx, **params)``
(:mod:`retrieval_lib.workbook.check`). Nothing is imported here: a notebook loads only the checks it runs
(``from retrieval_lib.checks.service import api``).
"""

__all__: list[str] = []
