"""Stability checks: does retrieval give the same answers every time, and how fast.

============================= ======================================================================================
``consistency`` (04)          does the same query always return the same ranking (repeats, a fresh client, a batch),
                              and do questions in other languages find what their English originals find
``latency`` (06)              how fast is one search, p50/p95/p99, one at a time and under a bounded concurrent load
============================= ======================================================================================

Each module is named like its notebook and has the one entry every check has, ``run(ctx, **params)``
(:mod:`retrieval_lib.workbook.check`). Both ask their questions of ``ctx.retriever``: the team's retriever when the
profile names one, and then they name it as what was measured.
"""

__all__: list[str] = []  # nothing is imported here: a notebook imports the check it runs
