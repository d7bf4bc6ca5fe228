"""What answers a question: the collection itself, a team's HTTP endpoint, or a team's Python function.

A profile's ``retriever:`` mapping (:class:`RetrieverSpec`) picks the kind; :func:`open_retriever` builds it; every
kind answers with :class:`Answer` s of :class:`Hit` s under the workbook's names (content, source_url, source_file,
score, chunk_id, title). A team's answer is mapped by JMESPath (``results``, ``fields``), inferred from the first
answer when the profile gives none (:func:`infer_mapping`, :func:`probe_retriever`). :func:`team_retriever` is the
one rule for whether a team's retriever is configured. :class:`AnsweringSearch` gives the query notebooks ``search``
/ ``search_many`` over any of them. docs/retrievers.md has the details.

- :mod:`~retrieval_lib.retrievers.spec`: the spec, Hit, Answer, ``${ENV}`` expansion and redaction;
- :mod:`~retrieval_lib.retrievers.mapping`: the JMESPath mapping and its inference;
- :mod:`~retrieval_lib.retrievers.http`, :mod:`~retrieval_lib.retrievers.child` (+ ``_shim.py``, standard library
  only, run by path in the child), :mod:`~retrieval_lib.retrievers.collection`: the three kinds;
- :mod:`~retrieval_lib.retrievers.as_search`: answers as SearchResponses; :mod:`~retrieval_lib.retrievers.open`:
  building and probing.
"""

from retrieval_lib.retrievers.as_search import AnsweringSearch
from retrieval_lib.retrievers.base import QuestionRetriever, TalliedRetriever, Tally
from retrieval_lib.retrievers.collection import CollectionRetriever
from retrieval_lib.retrievers.mapping import NoResultsList, ResultMapping, infer_mapping
from retrieval_lib.retrievers.open import ProbeReport, open_retriever, parse_spec, probe_retriever, team_retriever
from retrieval_lib.retrievers.spec import Answer, Hit, RetrieverSpec

__all__ = ["RetrieverSpec", "Hit", "Answer", "QuestionRetriever", "open_retriever", "parse_spec", "infer_mapping",
           "probe_retriever", "ProbeReport", "ResultMapping", "NoResultsList", "CollectionRetriever", "AnsweringSearch",
           "Tally", "TalliedRetriever", "team_retriever"]
