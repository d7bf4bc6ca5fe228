"""Run comparison: did retrieval get worse between two runs, read from their run folders (never the collection).

============================= ======================================================================================
``compare`` (14)              did retrieval get worse than a baseline run, by more than noise (paired tests per
                              query, from :mod:`retrieval_lib.checks.statistics`); ``_views``: its tables, figure
                              and record
============================= ======================================================================================

Each module is named like its notebook and has the one entry every check has, ``run(ctx, **params)``
(:mod:`retrieval_lib.workbook.check`). Nothing is imported here: a notebook loads only the checks it runs
(``from retrieval_lib.checks.comparison import compare``).
"""

__all__: list[str] = []
