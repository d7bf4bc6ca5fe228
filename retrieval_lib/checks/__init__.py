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

Checks use the core (:mod:`retrieval_lib.search`, :mod:`retrieval_lib.store`, ...); the core never
imports a check. Notebooks import them as ``from retrieval_lib.checks import coverage``.
"""

from . import consistency, coverage, golden, health, latency, query, scores

__all__ = ["consistency", "coverage", "golden", "health", "latency", "query", "scores"]
