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

Relative paths are taken from the current folder when the file is there, else
from the project root, so a kernel started in ``notebooks/`` finds
``params/golden/sample_book.yaml``. Every problem is a :class:`ParamsError`
naming the file and the key.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_lib.config import PROJECT_ROOT, secret_values
from retrieval_lib.errors import ParamsError
from retrieval_lib.validation import MAX_TOP_K

__all__ = [
    "Profile", "GoldenQuery", "NegativeQuery", "GoldenSet",
    "resolve_path", "read_yaml", "load_profile", "check_declared", "load_golden_set", "load_query_sets",
    "RESERVED_KEYS",
    "NO_GOLDEN_SET",
]

#: Profile keys the runner itself uses (never passed to a notebook as such): the profile's name, and the
#: collection it validates with that collection's ``payload_fields`` (role -> payload key), which reach the
#: notebooks' kernels as QDRANT_COLLECTION_NAME and PAYLOAD_FIELDS.
RESERVED_KEYS = frozenset({"profile", "collection", "payload_fields"})
_SECRET_WORDS = ("api_key", "apikey", "api-key", "token", "secret", "password", "credential")


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
        if any(word in leaf for word in _SECRET_WORDS):
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
    values, p = read_yaml(path, what="parameter file")
    _refuse_secrets(values, p, secret_values() if secrets is None else secrets)
    profile = Profile(values=values, path=p)
    if declared is not None:
        check_declared(profile, declared)
    return profile


# --------------------------------------------------------------------------- golden sets

@dataclass(frozen=True)
class GoldenQuery:
    """A known question and the page patterns a right answer matches."""

    query: str
    expected_url_patterns: tuple[str, ...]
    min_score: float


@dataclass(frozen=True)
class NegativeQuery:
    """An out-of-domain question: every result must score below ``max_score``."""

    query: str
    max_score: float


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
        patterns = item.get("expected_url_patterns")
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise ParamsError(f"{path.name}: {where}[{i}] needs a non-empty list 'expected_url_patterns'",
                              path=str(path), key=where)
        out.append(GoldenQuery(str(item["query"]).strip(), tuple(patterns),
                               _score(item.get("min_score", default_min), f"{where}[{i}].min_score", path)))
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
        raise ParamsError(f"{p.name}: a golden set needs at least one entry under 'queries'", path=str(p),
                          key="queries")
    required = data.get("required_passes", len(queries))
    if isinstance(required, bool) or not isinstance(required, int) or not 0 <= required <= len(queries):
        raise ParamsError(f"{p.name}: required_passes must be a whole number from 0 to {len(queries)}",
                          path=str(p), key="required_passes")
    negatives = []
    for i, item in enumerate(data.get("negatives") or []):
        if not isinstance(item, dict) or not str(item.get("query") or "").strip():
            raise ParamsError(f"{p.name}: negatives[{i}] needs a non-empty 'query'", path=str(p), key="negatives")
        negatives.append(NegativeQuery(str(item["query"]).strip(),
                                       _score(item.get("max_score", 0.5), f"negatives[{i}].max_score", p)))
    return GoldenSet(name=str(data.get("name") or p.stem), top_k=top_k, min_score=min_score,
                     required_passes=required, queries=queries,
                     extra_queries=_golden_queries(data.get("extra_queries"), min_score, "extra_queries", p),
                     negatives=tuple(negatives), path=p)


# --------------------------------------------------------------------------- query sets

def load_query_sets(path: str | os.PathLike[str], *, required: Iterable[str] = ()) -> dict[str, list[str]]:
    """Read a query-set file: named lists of non-empty query strings.

    Args:
        required: names that must be present and non-empty (e.g. ``("in_domain", "out_of_domain")``).

    Raises:
        ParamsError: a set that is not a list of non-empty strings, or a required set missing.
    """
    data, p = read_yaml(path, what="query-set file")
    sets: dict[str, list[str]] = {}
    for name, items in data.items():
        if not isinstance(items, list) or not all(isinstance(q, str) and q.strip() for q in items):
            raise ParamsError(f"{p.name}: {name!r} must be a list of non-empty query strings",
                              path=str(p), key=name)
        sets[name] = [q.strip() for q in items]
    for name in required:
        if not sets.get(name):
            raise ParamsError(f"{p.name}: needs a non-empty list {name!r} (sets there: {', '.join(sets) or 'none'})",
                              path=str(p), key=name)
    return sets
