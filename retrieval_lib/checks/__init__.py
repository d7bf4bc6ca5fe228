"""Checks: one module per question a notebook asks of a collection (or of a service).

Every check has the same two steps: a ``measure``-like function that reads the collection (or the service)
and returns a result object, and ``record(report, result, ...)``, which turns it into gates, findings, metrics
and figures on a :class:`~retrieval_lib.workbook.NotebookReport`. The registry
(:mod:`retrieval_lib.workbook.registry`) says which notebook calls which module.

===================== ===================================================================================
``holdings``          what the collection holds: payload keys, the mapping, the model, chunk lengths (00)
``query``             does a question bring back ranked chunks with full metadata; are top_k and the
                      similarity threshold honoured (01)
``scores``            where do in-domain and out-of-domain top-1 scores fall (02); ``thresholds``: which
                      threshold separates them
``coverage``          can every source file be reached by a query (03); ``topics``: do topic queries (the profile's
                      primary query, or a drafted topics file) land in their section
``consistency``       does the same query always return the same ranking (04); ``languages``: do questions in
                      other languages find what their English originals find
``golden``            do the golden queries find their pages, and do the negatives stay below the bar (05)
``latency``           how fast is one search, p50/p95, sequential and concurrent (06)
``health``            is every point's metadata complete, unique and from one model (07)
``api``               does a seed-003 retrieval API behave as its specification says (08; a sub-package)
``contract``          do the stored vectors still match what the configured embedder makes of their text (09);
                      ``contract_sample`` picks the points, ``contract_diagnosis`` names the cause
``reachability``      which chunks no other chunk retrieves, which crowd every answer (10); ``offtopic``:
                      which files are far from the rest; ``reach_report``: its tables, figures and gates
``ann``               does the HNSW index return what exact search would (11)
``chunks``            can the model read every chunk, and do fragments win (12)
``judged``            are the top results relevant, as a person judged them (13)
``book``              does the collection hold the book as it is now: pages never ingested, gone, changed, thin,
                      near-duplicate chunks (16)
``compare``           did retrieval get worse than a baseline run (14); ``compare_stats``: the paired tests;
                      ``compare_views``: its tables, figures and record
``side_by_side``      does the team's retriever (their chatbot's endpoint or function) retrieve what the
                      collection holds (15); ``side_by_side_pairs``: its pieces; ``side_by_side_causes``: the
                      named causes of a difference; ``side_by_side_views``: its tables and figures
===================== ===================================================================================

Every gate a check records is defined once in ``gates`` (its stable id, label, parameter and doc text;
``docs/gates.md`` is generated from it by ``gate_docs``).

Checks use the layers below them (search, stores, embedding, workbook, judging); nothing below imports a
check. Notebooks import them as ``from retrieval_lib.checks import coverage``.
"""

from retrieval_lib.checks import (
    ann,
    api,
    book,
    chunks,
    compare,
    compare_stats,
    compare_views,
    consistency,
    contract,
    contract_diagnosis,
    contract_sample,
    coverage,
    golden,
    health,
    holdings,
    judged,
    languages,
    latency,
    offtopic,
    query,
    reach_report,
    reachability,
    scores,
    side_by_side,
    side_by_side_causes,
    side_by_side_pairs,
    side_by_side_views,
    thresholds,
    topics,
)

__all__ = ["ann", "api", "book", "chunks", "compare", "compare_stats", "compare_views", "consistency", "contract",
           "contract_diagnosis", "contract_sample", "coverage", "golden", "health", "holdings", "judged", "languages",
           "latency",
           "offtopic", "query", "reach_report", "reachability", "scores", "thresholds", "topics",
           "side_by_side", "side_by_side_causes", "side_by_side_pairs", "side_by_side_views"]
