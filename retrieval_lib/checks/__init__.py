"""Checks: one module per question a notebook asks of a collection.

=============== ==============================================================
``query``       does a question bring back ranked chunks with full metadata; are top_k and threshold honoured
``scores``      where do in-domain and out-of-domain top-1 scores fall; which threshold separates them
``coverage``    can every source file be reached by a query; do topic queries land in their module
``consistency`` does the same query always return the same ranking
``golden``      do the golden queries find their pages, and do the negatives stay below the bar
``latency``     how fast is one search, p50/p95, sequential and concurrent
``health``      is every point's metadata complete, unique and from one model
=============== ==============================================================

Notebook 10: ``reachability`` (which chunks no other chunk retrieves, which crowd every answer), ``offtopic``
(which source files are far from the rest of the collection) and ``reach_report`` (its tables, figures and gates).

Notebook 09: ``contract`` (do the stored vectors still match what the configured embedder makes of their text;
``contract_sample`` picks the points, ``contract_diagnosis`` names the cause). Notebook 04 also uses ``languages``
(do questions in other languages find what their English originals find).

Checks use the core (:mod:`retrieval_lib.search`, :mod:`retrieval_lib.store`, ...); the core never
imports a check. Notebooks import them as ``from retrieval_lib.checks import coverage``.
"""

from . import (
    consistency,
    contract,
    coverage,
    golden,
    health,
    languages,
    latency,
    offtopic,
    query,
    reach_report,
    reachability,
    scores,
)

__all__ = ["consistency", "coverage", "golden", "health", "latency", "query", "scores",
           "offtopic", "reach_report", "reachability", "contract", "languages"]
