"""The collection's own checks: what it holds and whether it is sound, read from the collection itself.

============================= ======================================================================================
``collection`` (00)           what the collection holds: payload keys, the mapping, the model, chunk lengths (no gate)
``collection_health`` (07)    is every point's metadata complete, unique and from one model; ``scan_payloads`` and
                              ``record_completeness`` also serve notebooks 05 and 13
``embedding_contract`` (09)   do the stored vectors still match what the configured embedder makes of their text;
                              ``_contract_sample`` picks the points, ``_contract_diagnosis`` names the cause
``reachability`` (10)         which chunks no other chunk retrieves, which crowd every answer, which files are
                              off-topic; ``_offtopic`` judges the files, ``_reach_report`` holds its result and views
``ann_recall`` (11)           does the HNSW index return what exact search would, also under a filter
``chunk_quality`` (12)        can the model read every chunk, and do fragments win top-1
``book`` (16)                 does the collection hold the book as it is now: pages never ingested, gone, changed,
                              thin; ``_near_duplicates`` finds near-duplicate chunks in 10's neighbour lists
============================= ======================================================================================

Each module is named like its notebook and has the one entry every check has, ``run(ctx, **params)``
(:mod:`retrieval_lib.workbook.check`). When only a team's retriever is configured, these checks are not applicable:
they read the collection itself.
"""

__all__: list[str] = []  # nothing is imported here: a notebook imports the check it runs
