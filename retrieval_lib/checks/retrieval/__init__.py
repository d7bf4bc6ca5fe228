"""Retrieval quality checks: do the questions bring back the right chunks.

============================= ======================================================================================
``query`` (01)                does a question bring back ranked chunks with full metadata; are top_k and the
                              similarity threshold honoured
``score_distributions`` (02)  where do in-domain and out-of-domain top-1 scores fall; ``_thresholds``: which threshold
                              separates them, and how sure that is
``source_coverage`` (03)      can every source file be reached by a query; ``_topics``: do topic queries (the
                              profile's primary query, or a drafted topics file) land in their section
``golden_set`` (05)           do the golden queries find their pages, and do the negatives stay below the bar
``judgments`` (13)            are the top results relevant, as a person judged them
``side_by_side`` (15)         does the team's retriever (their chatbot's endpoint or function) retrieve what the
                              collection holds; ``_pairs``: its pieces, ``_causes``: the named causes of a
                              difference, ``_views``: its tables and figures (it compares the team's retriever with
                              the collection's own search: with no collection, every gate is not applicable)
============================= ======================================================================================

Each module is named like its notebook and has the one entry every check has, ``run(ctx, **params)``
(:mod:`retrieval_lib.workbook.check`). They ask their questions of ``ctx.retriever`` (the team's retriever when the
profile names one) and read the collection for what the answers are judged against (its pages, its chunks' texts):
with only a team's retriever configured they are not applicable. ``query`` and ``score_distributions`` judge the
answers alone: they run on a team's retriever too.
"""

__all__: list[str] = []  # nothing is imported here: a notebook imports the check it runs
