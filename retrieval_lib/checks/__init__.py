"""Checks: one module per notebook, named like it, in the folder of its family.

================ ===================================================================================================
``collection``   the collection's own soundness, read from it: what it holds (00), health (07), the embedding
                 contract (09), reachability (10), ANN recall (11), chunk quality (12), the book (16)
``retrieval``    do questions bring back the right chunks: query (01), score distributions (02), source coverage
                 (03), the golden set (05), judgments (13), the chatbot's retriever side by side (15)
``stability``    the same answers every time, and how fast: consistency (04), latency (06)
``service``      does a retrieval API behave as seed 003 says (08)
``comparison``   did retrieval get worse than a baseline run (14)
================ ===================================================================================================

Every check keeps one contract (:mod:`retrieval_lib.workbook.check`): ``run(ctx, **params)`` returns a result that
records its gates, findings, metrics and figures and gives its tables. The registry
(:mod:`retrieval_lib.workbook.registry`) names each notebook's family, so its check is one hop away
(``NotebookSpec.module``), and ``python -m retrieval_lib check NAME`` runs it alone.

Every gate a check records is defined once in ``gates`` (its stable id, label, parameter and doc text;
``docs/gates.md`` is generated from it by ``gate_docs``). ``statistics``: the Wilson interval of a proportion, which
checks of several families put on their shares, and the paired tests of two runs over the same queries (14 and 15).

Checks use the layers below them (search, stores, embedding, workbook, judging); nothing below imports a check.
Nothing is imported here: a notebook loads only the check it runs
(``from retrieval_lib.checks.collection import chunk_quality``).
"""

__all__: list[str] = []
