"""Where the results are in a retriever's answer, and which key of a result is which workbook field.

Both are JMESPath expressions (``results: "results"``, ``fields: {content: "text", source_url: "metadata.url"}``).
When a profile gives neither, :func:`infer_mapping` reads them off one answer, the way payload roles are inferred
from a collection (it reuses :func:`~retrieval_lib.collection.infer_roles` on the list of results):

- **results**: the answer itself when it is a list; else the list of objects found in it, a known name first
  (``results``, ``hits``, ``documents``, ``chunks``, ``matches``, ``data``, ``items``...), else the longest;
- **content, source_url, source_file, title, chunk_id**: the payload-role rules (the longest text; URL-like
  values; a file-like key; known names, also nested under ``metadata``);
- **score**: a numeric key named ``score``, ``similarity``, ``relevance`` ... (top level, then ``metadata``);
- **distance** (lower is better): a numeric key named ``distance``, ``dist``, ``_distance`` ..., or a score whose
  values rise down the ranking; read once, as the similarity ``1 - distance``, which assumes a cosine distance
  (:func:`similarity_from_distance`; a value outside [0, 2] is none, and that result has no score: ranks stand in).
  A profile that maps ``score`` to a key named like a distance is read the same way, and says so (``notes``);
- a list of plain strings is a list of contents.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from retrieval_lib.collection import infer_roles
from retrieval_lib.collection.infer import CANDIDATES
from retrieval_lib.errors import ConfigurationError
from retrieval_lib.retrievers.spec import HIT_FIELDS, Hit

__all__ = ["ResultMapping", "NoResultsList", "infer_mapping", "infer_score", "empty_results",
           "similarity_from_distance", "score_order", "DISTANCE_NAMES", "COSINE_ASSUMED"]

#: Names a list of results goes by, most likely first.
LIST_NAMES = ("results", "hits", "documents", "docs", "chunks", "matches", "sources", "contexts", "passages",
              "items", "data", "records", "points", "output")
#: Names a result's score goes by.
SCORE_NAMES = ("score", "similarity", "similarity_score", "relevance", "relevance_score", "rerank_score",
               "_score", "cosine", "cosine_similarity")
#: Names a result's distance goes by (lower is better): read as a cosine distance.
DISTANCE_NAMES = ("distance", "_distance", "dist", "cosine_distance", "vector_distance")
#: What reading a distance assumes, said wherever a distance is read.
COSINE_ASSUMED = "read as similarity = 1 - distance, which assumes a cosine distance (1 - cosine)"
#: A cosine distance lies in [0, 2]; this much float noise past either end is still one.
_DISTANCE_SLACK = 1e-6
#: The payload roles that are also hit fields.
_ROLE_FIELDS = ("content", "source_url", "source_file", "title", "chunk_id")
#: Names seen in teams' search answers beyond the payload-role vocabulary (tried after it).
_MORE_NAMES = {"source_file": ("source_document", "source_doc", "document_path", "doc_name"),
               "source_url": ("page", "link_url"), "title": ("heading", "section")}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WEB = re.compile(r"^https?://\S+$")
#: Keys that name a result, never its text (a content rule that lands on one of them is wrong).
_ID_NAMES = ("id", "_id", "chunk_id", "point_id", "uuid", "doc_id", "document_id")
#: Names a result's text goes by in teams' search answers, beyond the payload-role vocabulary.
_MORE_CONTENT = ("snippet", "page_content", "chunk_text", "passage", "document")


class NoResultsList(ValueError):
    """The answer holds no list where the mapping looks for one (the message names the keys that are there)."""


def jmespath_of(dotted: str) -> str:
    """A dotted key path (``metadata.source url``) as a JMESPath expression, quoting keys that need it."""
    return ".".join(p if _IDENT.match(p) else json.dumps(p) for p in dotted.split("."))


def _keys_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return "keys " + ", ".join(map(str, list(value)[:12])) if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} {type(value[0]).__name__ if value else 'items'}"
    return f"a {type(value).__name__}"


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return " > ".join(value) or None
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value)) if value is not None else None
    except ValueError:
        return None


def similarity_from_distance(distance: float | None) -> float | None:
    """The similarity a cosine distance stands for (``1 - distance``), or None when ``distance`` is none or cannot be
    a cosine distance (outside [0, 2]: an L2 or another metric's distance): that result then has no score."""
    if distance is None or math.isnan(distance) or not -_DISTANCE_SLACK <= distance <= 2 + _DISTANCE_SLACK:
        return None
    return 1.0 - min(2.0, max(0.0, distance))


def _last_key(expr: str) -> str:
    """The last key of a key-only expression (``metadata.distance`` -> ``distance``), lowercased."""
    return expr.split("||")[0].strip().rsplit(".", 1)[-1].strip('"').lower()


def _is_false(value: Any) -> bool:
    """JMESPath's falsehood (what ``||`` skips): empty string, list, object, null, false; never 0."""
    return value is None or value is False or (isinstance(value, (str, list, dict)) and not value)


def _direct(node: Mapping[str, Any]) -> Any:
    """A Python function giving what JMESPath's interpreter gives for the parsed expression ``node``, when it is
    made only of keys (``text``, ``metadata.url``, ``a || b``, ``@``), else None (the interpreter then runs).

    A mapping reads 5 to 7 keys of every result of every answer: through the interpreter that was most of the
    adapter's own cost per question (benchmarks/bench_retriever.py); the expressions stay JMESPath, parsed by it.
    """
    kind, children = node.get("type"), node.get("children") or []
    if kind == "current":
        return lambda value: value
    if kind == "field":
        key = node["value"]
        return lambda value: value.get(key) if isinstance(value, dict) else None
    if kind in ("subexpression", "or_expression"):
        parts = [_direct(child) for child in children]
        if not parts or any(p is None for p in parts):
            return None
        if kind == "or_expression":
            left, right = parts

            def either(value: Any) -> Any:
                found = left(value)
                return right(value) if _is_false(found) else found
            return either

        def chain(value: Any) -> Any:
            for part in parts:
                value = part(value)
            return value
        return chain
    return None


@dataclass(frozen=True)
class ResultMapping:
    """A compiled ``results`` path and ``fields`` mapping (workbook name -> JMESPath inside one result).

    ``fields`` may map ``distance`` (lower is better) instead of ``score``: each result's score is then
    :func:`similarity_from_distance` of it. A ``score`` mapped to a key named like a distance (:data:`DISTANCE_NAMES`)
    is read as that distance, and ``notes`` says so (the probe prints it, and writes ``distance:`` in the profile).
    """

    results: str
    fields: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        score = self.fields.get("score")
        if score is not None and "distance" not in self.fields and _last_key(score) in DISTANCE_NAMES:
            moved = {("distance" if k == "score" else k): v for k, v in self.fields.items()}
            object.__setattr__(self, "fields", moved)
            object.__setattr__(self, "notes", (*self.notes, (
                f"distance: `{score}`, mapped as the score but named like a distance (lower is better): "
                f"{COSINE_ASSUMED}; write `distance: {score}` in the profile's fields to say so")))
        try:
            compiled = {"results": jmespath.compile(self.results)}
            compiled |= {name: jmespath.compile(expr) for name, expr in self.fields.items()}
        except JMESPathError as err:
            raise ConfigurationError(f"retriever: an invalid JMESPath expression ({err}); see docs/retrievers.md",
                                     variable="RETRIEVER_SPEC") from None
        object.__setattr__(self, "_compiled", compiled)
        # the same expressions as plain functions where they are only keys (JMESPath's parse, its semantics)
        getters = {name: _direct(expr.parsed) or expr.search for name, expr in compiled.items()}
        object.__setattr__(self, "_getters", getters)

    def result_list(self, answer: Any) -> list[Any]:
        """The list of results in ``answer``.

        Raises:
            NoResultsList: the path finds nothing, or not a list (the message names what is there).
        """
        found = self._getters["results"](answer)  # type: ignore[attr-defined]
        if isinstance(found, list):
            return found
        what = "nothing" if found is None else _keys_of(found)
        raise NoResultsList(f"results path {self.results!r} finds {what} in the answer, which holds "
                            f"{_keys_of(answer)}: set retriever.results to where the list is")

    def hits(self, answer: Any, top_k: int) -> list[Hit]:
        """The answer's results as :class:`Hit` s, at most ``top_k``, ranked as given."""
        out = []
        getters = [(name, self._getters[name]) for name in self.fields]  # type: ignore[attr-defined]
        for rank, item in enumerate(self.result_list(answer)[:top_k], start=1):
            values = {name: get(item) for name, get in getters}
            score = _number(values.get("score"))
            if score is None and "distance" in values:  # lower is better: converted once, here
                score = similarity_from_distance(_number(values["distance"]))
            out.append(Hit(rank=rank, content=_text(values.get("content")), source_url=_text(values.get("source_url")),
                           source_file=_text(values.get("source_file")), score=score,
                           chunk_id=_text(values.get("chunk_id")), title=_text(values.get("title"))))
        return out

    def describe(self) -> str:
        """One line: ``results at `results`; content=`text`, score=`score` ...``."""
        shown = ", ".join(f"{k}=`{v}`" for k, v in self.fields.items()) or "no fields"
        return f"results at `{self.results}`; {shown}"


def _lists(value: Any, path: str = "", depth: int = 0) -> list[tuple[str, list[Any]]]:
    """(JMESPath, list) of every list of objects or strings in ``value``, to depth 3."""
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, list):
        if value and (all(isinstance(v, Mapping) for v in value) or all(isinstance(v, str) for v in value)):
            found.append((path or "@", value))
    elif isinstance(value, Mapping) and depth < 3:
        for key, inner in value.items():
            found += _lists(inner, f"{path}.{jmespath_of(str(key))}" if path else jmespath_of(str(key)), depth + 1)
    return found


def _score_key(items: Sequence[Mapping[str, Any]], names: Sequence[str] = SCORE_NAMES) -> str | None:
    for nest in ("", "metadata."):
        for name in names:
            values = [(_nested(item, nest + name)) for item in items]
            if any(v is not None for v in values) and all(v is None or _number(v) is not None for v in values):
                return nest + name
    return None


def _nested(item: Mapping[str, Any], dotted: str) -> Any:
    value: Any = item
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def empty_results(answer: Any) -> bool:
    """Whether ``answer`` is an empty answer: an empty list, or an object whose lists under a known name
    (:data:`LIST_NAMES`, to depth 3: ``{"data": {"results": []}}``) are all empty, whatever other lists it holds
    (``{"results": [], "query_terms": [...]}``). Such an answer is a result (nothing matched), not a missing list;
    the mapping is inferred from the next answer that holds results, never from a list beside an empty one."""
    if isinstance(answer, list):
        return not answer
    named = _named_lists(answer)
    return bool(named) and not any(named)


def _named_lists(value: Any, depth: int = 0) -> list[list[Any]]:
    found: list[list[Any]] = []
    if isinstance(value, Mapping) and depth < 3:
        for key, inner in value.items():
            found += [inner] if isinstance(inner, list) and str(key).lower() in LIST_NAMES \
                else _named_lists(inner, depth + 1)
    return found


def infer_mapping(answer: Any) -> tuple[str, dict[str, str], list[str]]:
    """The ``results`` path and ``fields`` that fit one answer, with one line of evidence per choice.

    Returns:
        (results JMESPath, workbook field -> JMESPath, evidence lines).

    Raises:
        NoResultsList: the answer holds no list of results (the message names the keys that are there).
    """
    candidates = _lists(answer)
    if not candidates:
        raise NoResultsList(f"no list of results in the answer, which holds {_keys_of(answer)}: set "
                            "retriever.results to the JMESPath of the list (docs/retrievers.md)")

    def preference(item: tuple[str, list[Any]]) -> tuple[int, int, int]:
        path, items = item
        last = path.rsplit(".", 1)[-1].strip('"').lower()
        named = LIST_NAMES.index(last) if last in LIST_NAMES else len(LIST_NAMES)
        return (0 if isinstance(items[0], Mapping) else 1, named, -len(items))

    path, items = min(candidates, key=preference)
    evidence = [f"results: `{path}`, a list of {len(items)} "
                + ("objects" if isinstance(items[0], Mapping) else "strings")
                + (f" (also lists at {', '.join(p for p, _ in candidates if p != path)})" if len(candidates) > 1
                   else "")]
    if isinstance(items[0], str):
        return path, {"content": "@"}, evidence + ["content: each result is a string"]
    roles = infer_roles(items)
    fields: dict[str, str] = {}
    for role in _ROLE_FIELDS:
        keys = roles.fields.get(role)
        if keys:
            fields[role] = " || ".join(jmespath_of(k) for k in keys)
            evidence.append(f"{role}: {roles.evidence.get(role, '`' + keys[0] + '`')}")
    _fix_content_and_id(items, fields, evidence)
    # one answer is a small sample: a source that is the same on every result is still the source here, and a
    # source whose value is a web address is the URL whatever its key is called (one result is "constant", so the
    # URL rule above does not see it)
    for role in ("source_url", "source_file", "title"):
        if role not in fields:
            for nest in ("", "metadata."):
                key = next((nest + n for n in _source_names(role, items[0], nest)
                            if nest + n not in _used(fields)), None)
                if key:
                    fields[role] = jmespath_of(key)
                    evidence.append(f"{role}: `{key}`, a known name for it (one value across this answer)")
                    break
    _score_or_distance(items, fields, evidence)
    missing = [f for f in HIT_FIELDS if f not in fields and f not in ("source_url", "source_file")
               and not (f == "score" and "distance" in fields)]
    if "source_url" not in fields and "source_file" not in fields:
        missing.insert(1, "source")
    if missing:
        evidence.append("not found: " + ", ".join(missing) + f" (a result holds {_keys_of(items[0])})")
    return path, fields, evidence


def score_order(values: Sequence[float | None]) -> str | None:
    """``"rises"`` when ``values`` (in rank order) never fall and end higher than they start (a distance: lower is
    better), ``"falls"`` for the mirror (a similarity), None when there are fewer than two numbers or they are
    all equal or go both ways."""
    numbers = [v for v in values if v is not None]
    if len(numbers) < 2 or numbers[0] == numbers[-1]:
        return None
    pairs = list(zip(numbers, numbers[1:]))
    if all(a <= b for a, b in pairs):
        return "rises"
    return "falls" if all(a >= b for a, b in pairs) else None


def _shown(values: Sequence[float | None]) -> str:
    numbers = [v for v in values if v is not None]
    return ", ".join(f"{v:.3g}" for v in numbers[:4]) + (" ..." if len(numbers) > 4 else "")


def infer_score(items: Sequence[Any]) -> tuple[dict[str, str], list[str]]:
    """The ``score`` or ``distance`` field that fits ``items`` (one answer's results), with its evidence: ({}, [...])
    when none does or the results are not objects. What a probe adds to a profile that maps neither."""
    fields: dict[str, str] = {}
    evidence: list[str] = []
    if items and all(isinstance(item, Mapping) for item in items):
        _score_or_distance(items, fields, evidence)
    return fields, evidence


def _score_or_distance(items: Sequence[Mapping[str, Any]], fields: dict[str, str],
                       evidence: list[str]) -> None:
    """Map ``score`` (higher is better) or ``distance`` (lower is better), with the evidence for the choice: a
    number named like a score is a score unless its values rise down the ranking; else one named like a distance
    is a distance; else ranks stand in."""
    key = _score_key(items)
    values = [_number(_nested(item, key)) for item in items] if key else []
    if key and score_order(values) != "rises":
        fields["score"] = jmespath_of(key)
        evidence.append(f"score: `{key}`, a number under a known name")
        return
    if key:
        fields["distance"] = jmespath_of(key)
        evidence.append(f"distance: `{key}` is named like a score, but its values rise down the ranking "
                        f"({_shown(values)}): a distance, lower is better; {COSINE_ASSUMED}")
    else:
        key = _score_key(items, DISTANCE_NAMES)
        if not key:
            evidence.append("score: none of " + ", ".join(SCORE_NAMES[:4]) + "... or " + ", ".join(DISTANCE_NAMES[:3])
                            + "... holds a number: ranks stand in (the gates that read a score are not applicable)")
            return
        values = [_number(_nested(item, key)) for item in items]
        fields["distance"] = jmespath_of(key)
        order = score_order(values)
        evidence.append(f"distance: `{key}`, a number named like a distance (lower is better"
                        + (f"; its values rise down the ranking: {_shown(values)}" if order == "rises" else
                           f"; yet its values fall down the ranking: {_shown(values)}, check it" if order == "falls"
                           else "") + f"): {COSINE_ASSUMED}")
    if any(v is not None and similarity_from_distance(v) is None for v in values):
        evidence.append(f"distance: values outside [0, 2] ({_shown(values)}) are no cosine distance: those results "
                        "have no score, ranks stand in (the gates that read a score are not applicable)")


def _used(fields: Mapping[str, str]) -> set[str]:
    return {part.strip().strip('"') for expr in fields.values() for part in expr.split("||")}


def _fix_content_and_id(items: Sequence[Mapping[str, Any]], fields: dict[str, str], evidence: list[str]) -> None:
    """The text is under a text name even when a reader leaves it empty; an id is the chunk's id, never its text.

    The payload-role rule takes the longest strings for the content. In a search answer whose text key is empty
    (a backend that reads a payload key the ingest never wrote), the longest strings are the ids: mapping them as
    the content would hide the fault that side by side names ("results whose text is empty").
    """
    chosen = fields.get("content", "").split("||")[0].strip().strip('"')
    if chosen.rsplit(".", 1)[-1].lower() in _ID_NAMES or not chosen:
        named = next((n for n in CANDIDATES["content"] + _MORE_CONTENT if n in items[0]), None)
        if named:
            fields["content"] = jmespath_of(named)
            evidence[:] = [e for e in evidence if not e.startswith("content:")]
            filled = sum(1 for item in items if _text(item.get(named)))
            evidence.append(f"content: `{named}`, the known name for a result's text ({filled} of {len(items)} "
                            "results hold text there)")
        elif chosen:
            fields.pop("content")
            evidence[:] = [e for e in evidence if not e.startswith("content:")]
    if "chunk_id" not in fields:
        key = next((n for n in _ID_NAMES if isinstance(items[0].get(n), (str, int))
                    and not isinstance(items[0].get(n), bool) and n not in _used(fields)), None)
        if key:
            fields["chunk_id"] = jmespath_of(key)
            evidence.append(f"chunk_id: `{key}`, a result's id")


def _source_names(role: str, item: Mapping[str, Any], nest: str) -> list[str]:
    """The keys of ``item`` (under ``nest``) that may hold ``role`` by their name and value: a known name of the
    role, except that a web address is always the URL (``source_document: https://...`` is no file) and never a
    file."""
    def value(name: str) -> str | None:
        v = _nested(item, nest + name)
        return v if isinstance(v, str) else None

    names = [n for n in CANDIDATES[role] + _MORE_NAMES[role] if value(n) is not None]
    if role == "source_file":
        return [n for n in names if not _WEB.match(value(n) or "")]
    if role == "source_url":
        names += [n for n in CANDIDATES["source_file"] + _MORE_NAMES["source_file"]
                  if _WEB.match(value(n) or "") and n not in names]
    return names
