"""Parameter files: the one place that reads and validates ``params/*.yaml``.

Three kinds of file live under ``params/``, all data, never code:

- **profiles** (``params/demo.yaml``): papermill parameters for the notebooks.
  Every key must be a parameter some notebook declares (a misspelt key would
  otherwise be ignored and give a green report), and nothing may look like a
  secret, because papermill writes parameters into the executed notebook.
- **golden sets** (``params/golden/*.yaml``): known queries, the pages they must
  find, and out-of-domain negatives (seed 004).
- **query sets** (``params/query_sets/*.yaml``): named lists of queries, e.g.
  ``in_domain`` and ``out_of_domain``.
- **topics** (``topics.yaml``, written by ``draft``): topic phrases and the source prefix each should land in
  (notebook 03's module gate).

Drafted entries (``python -m retrieval_lib draft``, docs/drafting.md) carry ``origin: drafted`` or ``origin:
reviewed``, a ``draft_id``, and may be ``status: rejected`` (skipped by every loader) or, for a negative,
``answerable: true`` (the book does answer it: skipped as a negative). An entry without ``origin`` is hand-written
and counts as reviewed. Each loaded set says how many of its entries are drafted and how many reviewed
(:class:`Provenance`), so a gate computed on drafted data can say so.

Relative paths are taken from the current folder when the file is there, else
from the project root, so a kernel started in ``notebooks/`` finds
``params/golden/sample_book.yaml``. Every problem is a :class:`ParamsError`
naming the file and the key.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_lib.config import PROJECT_ROOT, secret_values
from retrieval_lib.errors import ParamsError
from retrieval_lib.validation import MAX_TOP_K

__all__ = [
    "Profile", "GoldenQuery", "NegativeQuery", "GoldenSet", "Provenance", "QuerySets", "Topic", "TopicSet",
    "resolve_path", "read_yaml", "load_profile", "check_declared", "load_golden_set", "load_query_sets",
    "load_topics", "ORIGINS",
    "RESERVED_KEYS",
    "NO_GOLDEN_SET",
]

#: Profile keys the runner itself uses (never passed to a notebook as such): the profile's name, and the
#: collection it validates with that collection's ``payload_fields`` (role -> payload key), which reach the
#: notebooks' kernels as QDRANT_COLLECTION_NAME and PAYLOAD_FIELDS; and the ``retriever`` that answers the
#: questions (docs/retrievers.md), which reaches them as RETRIEVER_SPEC (header values stay ``${ENV}`` references).
RESERVED_KEYS = frozenset({"profile", "collection", "payload_fields", "retriever"})
_SECRET_WORDS = ("api_key", "apikey", "api-key", "token", "secret", "password", "credential")
_ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as given when it exists or is absolute, else under the project root."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return PROJECT_ROOT / p


def read_yaml(path: str | os.PathLike[str], *, what: str = "parameter file") -> tuple[dict[str, Any], Path]:
    """Read a YAML file that holds a mapping; returns (data, resolved path).

    Raises:
        ParamsError: the file is missing, unreadable, not YAML, or not a mapping.
    """
    import yaml

    p = resolve_path(path)
    if not p.is_file():
        raise ParamsError(f"{what} {p} does not exist: check the path (relative paths start at the project root)",
                          path=str(p), key=None)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ParamsError(f"{what} {p.name} is not UTF-8 text", path=str(p), key=None) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "invalid syntax"
        raise ParamsError(f"{what} {p.name} is not valid YAML{where}: {problem}", path=str(p), key=None) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamsError(f"{what} {p.name} must hold a mapping (key: value lines) at the top level",
                          path=str(p), key=None)
    return {str(k): v for k, v in data.items()}, p


# --------------------------------------------------------------------------- profiles

@dataclass(frozen=True)
class Profile:
    """A validated profile: its parameters, its file, and its name."""

    values: dict[str, Any]
    path: Path

    @property
    def name(self) -> str:
        return str(self.values.get("profile") or self.path.stem)

    def environment(self) -> dict[str, str]:
        """The variables a run sets for its notebooks' kernels from this profile: the collection it names and
        that collection's payload fields (none when the profile names neither)."""
        env: dict[str, str] = {}
        if self.values.get("collection"):
            env["QDRANT_COLLECTION_NAME"] = str(self.values["collection"])
        if self.values.get("payload_fields"):
            env["PAYLOAD_FIELDS"] = json.dumps(self.values["payload_fields"])
        if self.values.get("retriever"):
            env["RETRIEVER_SPEC"] = json.dumps(self.values["retriever"])
        return env

    def for_notebook(self, declared: Iterable[str]) -> dict[str, Any]:
        """The parameters one notebook declares (papermill gets nothing else)."""
        names = set(declared)
        return {k: v for k, v in self.values.items() if k in names and k not in RESERVED_KEYS}


def _walk(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield f"{prefix}{k}", v
            yield from _walk(v, f"{prefix}{k}.")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _walk(v, f"{prefix}[{i}].") if isinstance(v, (dict, list)) else iter([(f"{prefix}[{i}]", v)])


def _refuse_secrets(values: Mapping[str, Any], path: Path, secrets: set[str]) -> None:
    for key, value in _walk(values):
        leaf = key.rsplit(".", 1)[-1].lower()
        # a retriever's header or env value written as a ${ENV_NAME} reference names a secret, never holds one
        reference = isinstance(value, str) and _ENV_REFERENCE.search(value) is not None
        if any(word in leaf for word in _SECRET_WORDS) and not reference:
            raise ParamsError(
                f"{path.name} has a parameter {key!r} that looks like a secret; papermill would write it into the "
                "executed notebook. Put secrets in the environment or .env instead",
                path=str(path), key=key,
            )
        if isinstance(value, str) and value.strip() and value.strip() in secrets:
            raise ParamsError(
                f"{path.name} parameter {key!r} holds an API key; put secrets in the environment or .env instead",
                path=str(path), key=key,
            )


def check_declared(profile: Profile, declared: Iterable[str]) -> None:
    """Refuse a profile key that no notebook declares, naming the closest declared names.

    Args:
        declared: every parameter name the workbook's notebooks declare.

    Raises:
        ParamsError: an unknown key (a typo would otherwise be silently ignored).
    """
    known = set(declared) | RESERVED_KEYS
    unknown = sorted(k for k in profile.values if k not in known)
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else \
        "no notebook declares a parameter of that name (see each notebook's parameters cell)"
    more = f" (and {len(unknown) - 1} more unknown: {', '.join(unknown[1:4])})" if len(unknown) > 1 else ""
    raise ParamsError(f"{profile.path.name}: unknown parameter {key!r}: {hint}{more}",
                      path=str(profile.path), key=key)


def load_profile(path: str | os.PathLike[str], *, declared: Iterable[str] | None = None,
                 secrets: set[str] | None = None) -> Profile:
    """Read a profile, refuse secrets and (when ``declared`` is given) unknown keys.

    Args:
        path: the YAML profile.
        declared: parameter names the notebooks declare; None skips the unknown-key check.
        secrets: values that must never appear; default: the API keys that
            :func:`~retrieval_lib.config.load_settings` sees (environment and ``.env``).

    Raises:
        ParamsError: missing or invalid file, a secret, or an unknown key.
    """
    values, p = _read_extended(path, ())
    _refuse_secrets(values, p, secret_values() if secrets is None else secrets)
    profile = Profile(values=values, path=p)
    if declared is not None:
        check_declared(profile, declared)
    return profile


def _read_extended(path: str | os.PathLike[str], seen: tuple[Path, ...]) -> tuple[dict[str, Any], Path]:
    """A profile's values over those of the profile its ``extends`` key names (a path like ``golden_set``'s:
    relative to the project root), recursively; ``extends`` itself never reaches a notebook.

    Raises:
        ParamsError: the file cannot be read, or profiles extend each other in a circle.
    """
    values, p = read_yaml(path, what="parameter file")
    base = values.pop("extends", None)
    if base is None:
        return values, p
    if not isinstance(base, str) or not base.strip():
        raise ParamsError(f"{p.name}: 'extends' must name a profile file (got {base!r})", path=str(p), key="extends")
    if p in seen:
        raise ParamsError(f"{p.name}: profiles extend each other in a circle ({' -> '.join(x.name for x in seen)})",
                          path=str(p), key="extends")
    inherited, _ = _read_extended(resolve_path(base), (*seen, p))
    return {**inherited, **values}, p


# --------------------------------------------------------------------------- drafted and reviewed entries

#: The origins an entry may carry: ``drafted`` (written by ``draft``, nobody looked) or ``reviewed`` (a person
#: accepted or edited it). An entry without one is hand-written and counts as reviewed.
ORIGINS = ("drafted", "reviewed")
_STATUSES = ("rejected",)


@dataclass(frozen=True)
class Provenance:
    """How many entries of a set are drafted and how many reviewed (hand-written ones count as reviewed).

    Attributes:
        marked: the data carries origins at all (some entry has ``origin`` or ``draft_id``): only then does a
            gate say "on N drafted, M reviewed queries"; a hand-written file says nothing of the sort.
    """

    drafted: int = 0
    reviewed: int = 0
    marked: bool = False

    def __add__(self, other: Provenance) -> Provenance:
        return Provenance(self.drafted + other.drafted, self.reviewed + other.reviewed, self.marked or other.marked)

    @property
    def total(self) -> int:
        return self.drafted + self.reviewed

    def phrase(self, noun: str = "queries") -> str:
        """``on 64 drafted, 0 reviewed queries``."""
        return f"on {self.drafted} drafted, {self.reviewed} reviewed {noun}"

    def as_dict(self) -> dict[str, int]:
        return {"drafted": self.drafted, "reviewed": self.reviewed}

    @classmethod
    def of(cls, entries: Iterable[Any], *, marked: bool) -> Provenance:
        """Count ``entries`` (anything with an ``origin`` attribute)."""
        origins = [getattr(e, "origin", "reviewed") for e in entries]
        return cls(sum(o == "drafted" for o in origins), sum(o != "drafted" for o in origins), marked)


def _entry_marks(item: Mapping[str, Any], where: str, path: Path) -> tuple[str, str | None, bool]:
    """(origin, draft_id, skipped) of one mapping entry: skipped when ``status: rejected``.

    Raises:
        ParamsError: an unknown origin or status, or a draft_id that is not text.
    """
    origin = item.get("origin", "reviewed")
    if origin not in ORIGINS:
        raise ParamsError(f"{path.name}: {where}.origin must be one of {', '.join(ORIGINS)} (got {origin!r})",
                          path=str(path), key=f"{where}.origin")
    draft_id = item.get("draft_id")
    if draft_id is not None and not isinstance(draft_id, str | int):
        raise ParamsError(f"{path.name}: {where}.draft_id must be text", path=str(path), key=f"{where}.draft_id")
    status = item.get("status")
    if status is not None and status not in _STATUSES:
        raise ParamsError(f"{path.name}: {where}.status may only be {', '.join(_STATUSES)} (got {status!r})",
                          path=str(path), key=f"{where}.status")
    answerable = item.get("answerable", False)
    if not isinstance(answerable, bool):
        raise ParamsError(f"{path.name}: {where}.answerable must be true or false", path=str(path),
                          key=f"{where}.answerable")
    return str(origin), None if draft_id is None else str(draft_id), status == "rejected"


def _carries_origins(items: Any) -> bool:
    return isinstance(items, list) and any(isinstance(i, dict) and ("origin" in i or "draft_id" in i) for i in items)


# --------------------------------------------------------------------------- golden sets

@dataclass(frozen=True)
class GoldenQuery:
    """A known question and the page patterns a right answer matches."""

    query: str
    expected_url_patterns: tuple[str, ...]
    min_score: float
    origin: str = "reviewed"
    draft_id: str | None = None


@dataclass(frozen=True)
class NegativeQuery:
    """An out-of-domain question: every result must score below ``max_score``."""

    query: str
    max_score: float
    origin: str = "reviewed"
    draft_id: str | None = None


@dataclass(frozen=True)
class GoldenSet:
    """A validated golden set (seed 004)."""

    name: str
    top_k: int
    min_score: float
    required_passes: int
    queries: tuple[GoldenQuery, ...]
    extra_queries: tuple[GoldenQuery, ...] = ()
    negatives: tuple[NegativeQuery, ...] = ()
    path: Path | None = None
    #: the file carries origins (drafted or reviewed entries, docs/drafting.md)
    marked: bool = False

    @property
    def provenance(self) -> Provenance:
        """Drafted and reviewed golden queries (``queries`` only: what the golden gate counts)."""
        return Provenance.of(self.queries, marked=self.marked)

    @property
    def negatives_provenance(self) -> Provenance:
        """Drafted and reviewed negatives."""
        return Provenance.of(self.negatives, marked=self.marked)

    @property
    def absent(self) -> bool:
        """True for :data:`NO_GOLDEN_SET`: the profile names none for this book (its gates are not applicable)."""
        return self.path is None and not (self.queries or self.extra_queries or self.negatives)


#: No golden set for this book (``golden_set: ""`` in a profile).
NO_GOLDEN_SET = GoldenSet(name="", top_k=5, min_score=0.6, required_passes=0, queries=())


def _score(value: Any, where: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= float(value) <= 1:
        raise ParamsError(f"{path.name}: {where} must be a number from 0 to 1", path=str(path), key=where)
    return float(value)


def _golden_queries(items: Any, default_min: float, where: str, path: Path) -> tuple[GoldenQuery, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ParamsError(f"{path.name}: {where} must be a list", path=str(path), key=where)
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not str(item.get("query") or "").strip():
            raise ParamsError(f"{path.name}: {where}[{i}] needs a non-empty 'query'", path=str(path), key=where)
        origin, draft_id, rejected = _entry_marks(item, f"{where}[{i}]", path)
        if rejected:
            continue
        patterns = item.get("expected_url_patterns")
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise ParamsError(f"{path.name}: {where}[{i}] needs a non-empty list 'expected_url_patterns'",
                              path=str(path), key=where)
        out.append(GoldenQuery(str(item["query"]).strip(), tuple(patterns),
                               _score(item.get("min_score", default_min), f"{where}[{i}].min_score", path),
                               origin=origin, draft_id=draft_id))
    return tuple(out)


def load_golden_set(path: str | os.PathLike[str] | None) -> GoldenSet:
    """Read and check a golden-set file (see :mod:`retrieval_lib.checks.golden` for its layout).

    An empty ``path`` means the book has none yet: :data:`NO_GOLDEN_SET`, whose gates are not applicable.

    Raises:
        ParamsError: a field is missing or out of range (the message names it).
    """
    if path is None or not str(path).strip():
        return NO_GOLDEN_SET
    data, p = read_yaml(path, what="golden set")
    top_k = data.get("top_k", 5)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ParamsError(f"{p.name}: top_k must be a whole number from 1 to {MAX_TOP_K}", path=str(p), key="top_k")
    min_score = _score(data.get("min_score", 0.6), "min_score", p)
    queries = _golden_queries(data.get("queries"), min_score, "queries", p)
    if not queries:
        raise ParamsError(f"{p.name}: a golden set needs at least one entry under 'queries' that is not rejected",
                          path=str(p), key="queries")
    required = data.get("required_passes", len(queries))
    if isinstance(required, bool) or not isinstance(required, int) or required < 0:
        raise ParamsError(f"{p.name}: required_passes must be a whole number from 0 to {len(queries)}",
                          path=str(p), key="required_passes")
    if required > len(queries):
        if not _carries_origins(data.get("queries")):
            raise ParamsError(f"{p.name}: required_passes must be a whole number from 0 to {len(queries)}",
                              path=str(p), key="required_passes")
        # a review rejected drafted queries after the count was written: the bar cannot exceed what is left
        required = len(queries)
    negatives = []
    listed = data.get("negatives") or []
    if not isinstance(listed, list):
        raise ParamsError(f"{p.name}: negatives must be a list", path=str(p), key="negatives")
    for i, item in enumerate(listed):
        if not isinstance(item, dict) or not str(item.get("query") or "").strip():
            raise ParamsError(f"{p.name}: negatives[{i}] needs a non-empty 'query'", path=str(p), key="negatives")
        origin, draft_id, rejected = _entry_marks(item, f"negatives[{i}]", p)
        if rejected or item.get("answerable") is True:  # a negative the book does answer is no negative
            continue
        negatives.append(NegativeQuery(str(item["query"]).strip(),
                                       _score(item.get("max_score", 0.5), f"negatives[{i}].max_score", p),
                                       origin=origin, draft_id=draft_id))
    marked = any(_carries_origins(data.get(k)) for k in ("queries", "extra_queries", "negatives"))
    return GoldenSet(name=str(data.get("name") or p.stem), top_k=top_k, min_score=min_score,
                     required_passes=required, queries=queries,
                     extra_queries=_golden_queries(data.get("extra_queries"), min_score, "extra_queries", p),
                     negatives=tuple(negatives), path=p, marked=marked)


# --------------------------------------------------------------------------- query sets

class QuerySets(dict[str, list[str]]):
    """Named lists of query strings (a plain ``dict``), with what each set's entries are.

    Attributes:
        provenance: per set, its drafted and reviewed queries (:class:`Provenance`).
        sources: per set, query -> the expected source a drafted entry names (``source``), where it names one.
    """

    def __init__(self, sets: Mapping[str, list[str]], provenance: Mapping[str, Provenance],
                 sources: Mapping[str, Mapping[str, str]]) -> None:
        super().__init__(sets)
        self.provenance = dict(provenance)
        self.sources = {k: dict(v) for k, v in sources.items()}

    def provenance_of(self, *names: str) -> Provenance:
        """The sets ``names`` together."""
        total = Provenance()
        for name in names:
            total = total + self.provenance.get(name, Provenance())
        return total


def _query_item(item: Any, name: str, i: int, path: Path) -> tuple[str, str, str | None] | None:
    """(query, origin, source) of one query-set item; None when it is skipped (rejected, or an answerable
    out-of-domain query)."""
    if isinstance(item, str):
        if not item.strip():
            raise ParamsError(f"{path.name}: {name!r} must be a list of non-empty query strings",
                              path=str(path), key=name)
        return item.strip(), "reviewed", None
    if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
        raise ParamsError(f"{path.name}: {name!r} must be a list of non-empty query strings (or mappings with a "
                          f"non-empty 'query'); item {i} is not", path=str(path), key=name)
    origin, _, rejected = _entry_marks(item, f"{name}[{i}]", path)
    if rejected or (item.get("answerable") is True and name == "out_of_domain"):
        return None
    source = item.get("source")
    return item["query"].strip(), origin, str(source) if source else None


def load_query_sets(path: str | os.PathLike[str], *, required: Iterable[str] = ()) -> QuerySets:
    """Read a query-set file: named lists of non-empty query strings.

    An item is a string (hand-written) or a mapping ``{query, origin, draft_id, source, status, answerable}`` (a
    drafted file, docs/drafting.md); ``status: rejected`` items are skipped, and so are ``out_of_domain`` items
    marked ``answerable: true``.

    Args:
        required: names that must be present and non-empty (e.g. ``("in_domain", "out_of_domain")``).

    Raises:
        ParamsError: a set that is not a list of non-empty strings or query mappings, a bad origin or status, or a
            required set missing.
    """
    data, p = read_yaml(path, what="query-set file")
    sets: dict[str, list[str]] = {}
    provenance: dict[str, Provenance] = {}
    sources: dict[str, dict[str, str]] = {}
    for name, items in data.items():
        if not isinstance(items, list):
            raise ParamsError(f"{p.name}: {name!r} must be a list of non-empty query strings",
                              path=str(p), key=name)
        kept = [q for i, item in enumerate(items) if (q := _query_item(item, name, i, p)) is not None]
        sets[name] = [q for q, _, _ in kept]
        drafted = sum(o == "drafted" for _, o, _ in kept)
        provenance[name] = Provenance(drafted, len(kept) - drafted, _carries_origins(items))
        sources[name] = {q: s for q, _, s in kept if s}
    for name in required:
        if not sets.get(name):
            raise ParamsError(f"{p.name}: needs a non-empty list {name!r} (sets there: {', '.join(sets) or 'none'})",
                              path=str(p), key=name)
    return QuerySets(sets, provenance, sources)


# --------------------------------------------------------------------------- topics

@dataclass(frozen=True)
class Topic:
    """A topic phrase and the source prefix its results should come from (notebook 03's module gate)."""

    topic: str
    expected_prefix: str
    origin: str = "reviewed"
    draft_id: str | None = None


@dataclass(frozen=True)
class TopicSet:
    """The topics 03 asks, and whether they came from a file (``path``) or the profile's one ``primary_query``."""

    topics: tuple[Topic, ...]
    path: Path | None = None
    marked: bool = False

    @property
    def provenance(self) -> Provenance:
        return Provenance.of(self.topics, marked=self.marked)


def load_topics(path: str | os.PathLike[str] | None, *, primary_query: str | None = None,
                primary_prefix: str | None = None) -> TopicSet:
    """Read a topics file (``topics: [{topic, expected_prefix, origin, draft_id, status}]``, written by ``draft``).

    With no ``path`` (empty), the profile's one ``primary_query`` / ``primary_prefix`` is the only topic, as
    hand-written (reviewed).

    Raises:
        ParamsError: the file is missing or malformed, or it leaves no topic (every one rejected), or neither a
            file nor a primary query is given.
    """
    if path is None or not str(path).strip():
        if not (primary_query or "").strip() or primary_prefix is None:
            raise ParamsError("no topics: give a topics file, or primary_query and primary_prefix", path="",
                              key="topics")
        return TopicSet((Topic(str(primary_query).strip(), str(primary_prefix)),))
    data, p = read_yaml(path, what="topics file")
    items = data.get("topics")
    if not isinstance(items, list):
        raise ParamsError(f"{p.name}: needs a list 'topics' of {{topic, expected_prefix}} entries", path=str(p),
                          key="topics")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not str(item.get("topic") or "").strip() \
                or not isinstance(item.get("expected_prefix"), str) or not item["expected_prefix"].strip():
            raise ParamsError(f"{p.name}: topics[{i}] needs a non-empty 'topic' and 'expected_prefix'",
                              path=str(p), key="topics")
        origin, draft_id, rejected = _entry_marks(item, f"topics[{i}]", p)
        if not rejected:
            out.append(Topic(str(item["topic"]).strip(), item["expected_prefix"].strip(), origin, draft_id))
    if not out:
        raise ParamsError(f"{p.name}: every topic is rejected; draft again or write one", path=str(p), key="topics")
    return TopicSet(tuple(out), path=p, marked=_carries_origins(items))
