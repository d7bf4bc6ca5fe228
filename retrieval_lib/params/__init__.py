"""Parameter files: the one place that reads and validates ``params/*.yaml``.

Four kinds of file, all data, never code, each described by a pydantic model (``extra="forbid"``: a misspelt key
is refused with its closest allowed name, never ignored):

- **profiles** (``params/demo.yaml``): papermill parameters for the notebooks. :class:`NotebookParameters` declares
  every parameter a notebook of the workbook takes and its type; its default is the value the default profile
  (:data:`DEFAULT_PROFILE`, ``params/demo.yaml``) gives, the one place a default is written (the notebooks'
  parameters cells hold the same literals, because papermill and nbval need them; a test holds them equal). A
  profile names what it changes (``extends:`` another profile to inherit its values). Nothing in a profile may look
  like a secret, because papermill writes parameters into the executed notebook.
- **golden sets** (``params/golden/*.yaml``): known queries, the pages they must find, and out-of-domain negatives
  (seed 004).
- **query sets** (``params/query_sets/*.yaml``): named lists of queries, e.g. ``in_domain`` and ``out_of_domain``.
- **topics** (``topics.yaml``, written by ``draft``): topic phrases and the source prefix each should land in
  (notebook 03's module gate).

Drafted entries (``python -m retrieval_lib draft``, docs/drafting.md) carry ``origin: drafted`` or ``origin:
reviewed``, a ``draft_id``, and may be ``status: rejected`` (skipped by every loader) or, for a negative,
``answerable: true`` (the book does answer it: skipped as a negative). An entry without ``origin`` is hand-written
and counts as reviewed. Each loaded set says how many of its entries are drafted and how many reviewed
(:class:`Provenance`), so a gate computed on drafted data can say so.

Relative paths are taken from the current folder when the file is there, else from the project root, so a kernel
started in ``notebooks/`` finds ``params/golden/sample_book.yaml``. Every problem is a :class:`ParamsError` naming
the file, the key (a dotted path such as ``queries[2].min_score``) and what to do.
"""

from retrieval_lib.params._schema import ORIGINS, Provenance, read_yaml, resolve_path
from retrieval_lib.params.profiles import (
    DEFAULT_PROFILE,
    PATH_PARAMETERS,
    RESERVED_KEYS,
    NotebookParameters,
    Profile,
    anchored,
    check_parameters,
    load_profile,
)
from retrieval_lib.params.sets import (
    GoldenQuery,
    GoldenSet,
    NegativeQuery,
    QuerySets,
    Topic,
    TopicSet,
    load_golden_set,
    load_query_sets,
    load_topics,
)

__all__ = [
    "Profile", "NotebookParameters", "GoldenQuery", "NegativeQuery", "GoldenSet", "Provenance", "QuerySets", "Topic",
    "TopicSet", "resolve_path", "read_yaml", "load_profile", "check_parameters", "load_golden_set", "load_query_sets",
    "load_topics",
    "ORIGINS", "RESERVED_KEYS", "DEFAULT_PROFILE", "PATH_PARAMETERS", "anchored",
]
