"""Reading a parameter file and checking it against its pydantic model: the value types, and pydantic's errors as
one :class:`~retrieval_lib.errors.ParamsError` that names the file, the key (a dotted path) and what to do."""

from __future__ import annotations

import difflib
import functools
import os
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator, TypeAdapter
from pydantic import ValidationError as PydanticError

from retrieval_lib.config import PROJECT_ROOT, is_payload_fields
from retrieval_lib.errors import ParamsError
from retrieval_lib.validation import MAX_TOP_K


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


# --------------------------------------------------------------------------- values, and pydantic's errors in words

def _value(kind: str, check: typing.Callable[[Any], bool], convert: typing.Callable[[Any], Any] = lambda v: v) -> Any:
    """A validator that accepts what ``check`` accepts (converted) and otherwise says the value ``must be {kind}``
    (or ``kind`` itself when it starts with ``may``)."""
    says = kind if kind.startswith("may ") else f"must be {kind}"

    def checked(v: Any) -> Any:
        if not check(v):
            raise ValueError(says)
        return convert(v)
    return PlainValidator(checked)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _range(kind: str, low: float | None = None, high: float | None = None, above: float | None = None) -> str:
    if low is not None and high is not None:
        return f"{kind} from {low:g} to {high:g}"
    if low is not None:
        return f"{kind} of at least {low:g}"
    return f"{kind} above {above:g}" if above is not None else kind


def _whole(low: int | None = None, high: int | None = None) -> Any:
    return _value(_range("a whole number", low, high), lambda v: isinstance(v, int) and not isinstance(v, bool)
                  and (low is None or v >= low) and (high is None or v <= high))


def _number(low: float | None = None, high: float | None = None, *, above: float | None = None) -> Any:
    return _value(_range("a number", low, high, above), lambda v: _is_number(v) and (low is None or v >= low)
                  and (high is None or v <= high) and (above is None or v > above), float)


def _as_text(v: Any) -> bool:
    return (isinstance(v, str) and bool(v.strip())) or _is_number(v)


Share = Annotated[float, _number(0, 1)]              # a fraction (a score, a recall, a share of points)
Cosine = Annotated[float, _number(-1, 1)]
Number = Annotated[float, _number()]
Positive = Annotated[float, _number(above=0)]
NonNegative = Annotated[float, _number(0)]
Whole = Annotated[int, _whole()]
Count = Annotated[int, _whole(0)]                   # how many (0 allowed)
AtLeastOne = Annotated[int, _whole(1)]
TopK = Annotated[int, _whole(1, MAX_TOP_K)]
Percent = Annotated[float, _number(0, 100)]
Grade = Annotated[int, _whole(0, 2)]  # a judgment's grade: 0, 1 or 2
#: A name or an id: text, or a number read as its text.
Name = Annotated[str, _value("text", lambda v: isinstance(v, (str, int)) and not isinstance(v, bool), str)]
#: Non-empty text (a query, a phrase); a number is read as its text, as YAML gives ``1984`` as a number.
Text = Annotated[str, _value("non-empty text", _as_text, lambda v: str(v).strip())]
Patterns = Annotated[tuple[str, ...], _value(
    "a non-empty list of non-empty URL patterns",
    lambda v: isinstance(v, list) and bool(v) and all(isinstance(p, str) and p for p in v), tuple)]
PayloadFields = Annotated[dict[str, Any], _value("a mapping of role -> payload key (or a list of keys)",
                                                 is_payload_fields)]

#: The origins an entry may carry: ``drafted`` (written by ``draft``, nobody looked) or ``reviewed`` (a person
#: accepted or edited it). An entry without one is hand-written and counts as reviewed.
ORIGINS = ("drafted", "reviewed")
Origin = Annotated[str, _value(f"one of {', '.join(ORIGINS)}", lambda v: v in ORIGINS)]
Status = Annotated[str, _value("may only be rejected", lambda v: v == "rejected")]
Flag = Annotated[bool, _value("true or false", lambda v: isinstance(v, bool))]


class Model(BaseModel):
    """What every parameter file's model shares: unknown keys refused, values never silently converted."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


_SAYS = {"string_type": "must be text", "list_type": "must be a list", "tuple_type": "must be a list",
         "dict_type": "must be a mapping (key: value lines)", "model_type": "must be a mapping (key: value lines)",
         "bool_type": "must be true or false", "int_type": "must be a whole number", "float_type": "must be a number"}


def _where(loc: Iterable[Any]) -> str:
    """``("queries", 2, "min_score")`` -> ``queries[2].min_score``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _unwrap(t: Any) -> Any:
    """The model or type inside ``Annotated``, ``X | None``, ``list[X]``, ``tuple[X, ...]`` and ``dict[str, X]``."""
    while True:
        origin, args = typing.get_origin(t), typing.get_args(t)
        if origin is Annotated:
            t = args[0]
        elif origin in (typing.Union, types.UnionType):
            t = next(a for a in args if a is not type(None))
        elif origin in (list, tuple):
            t = args[0]
        elif origin is dict:
            t = args[1]
        else:
            return t


def _allowed(model: Any, loc: tuple[Any, ...]) -> list[str]:
    """The keys the mapping at ``loc`` of ``model`` may hold."""
    t = _unwrap(model)
    for part in loc:
        if isinstance(part, str) and isinstance(t, type) and issubclass(t, BaseModel) and part in t.model_fields:
            t = _unwrap(t.model_fields[part].annotation)
    return sorted(t.model_fields) if isinstance(t, type) and issubclass(t, BaseModel) else []


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def params_error(err: PydanticError, model: Any, path: Path, *, noun: str = "key", hint: str = "") -> ParamsError:
    """One :class:`ParamsError` for pydantic's errors about ``path``: an unknown key first (with its closest allowed
    names), else the first error; it names the file, the key's dotted path, and what to do."""
    errors = err.errors()
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    if unknown:
        loc = tuple(unknown[0]["loc"])
        key, name = _where(loc), str(loc[-1])
        allowed = _allowed(model, loc[:-1])
        close = difflib.get_close_matches(name, allowed, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else \
            f"{'no notebook declares a parameter of that name' if noun == 'parameter' else 'not a key here'}" + \
            (f" (the keys here: {', '.join(allowed)})" if allowed and len(allowed) <= 12 else hint and f" {hint}")
        more = f" (and {len(unknown) - 1} more unknown: {', '.join(_where(e['loc']) for e in unknown[1:4])})" \
            if len(unknown) > 1 else ""
        return ParamsError(f"{path.name}: unknown {noun} {key!r}: {hint}{more}", path=str(path), key=key)
    first = errors[0]
    loc = tuple(first["loc"])
    key = _where(loc)
    if first["type"] == "missing":
        parent = _where(loc[:-1])
        return ParamsError(f"{path.name}: {parent + ' ' if parent else ''}needs a non-empty {str(loc[-1])!r}"
                           f"{hint and f'; {hint}'}", path=str(path), key=key)
    says = str(first["ctx"]["error"]) if first["type"] == "value_error" else _SAYS.get(first["type"], first["msg"])
    return ParamsError(f"{path.name}: {key} {says} (got {_shown(first.get('input'))}){hint and f'; {hint}'}",
                       path=str(path), key=key)


@functools.cache
def _adapter(shape: Any) -> TypeAdapter[Any]:
    return TypeAdapter(shape)


def validate(shape: Any, data: Any, path: Path, **how: str) -> Any:
    """``data`` validated as ``shape`` (a model, or a type of models); a :class:`ParamsError` when it is not."""
    try:
        return _adapter(shape).validate_python(data)
    except PydanticError as err:
        raise params_error(err, shape, path, **how) from None



# --------------------------------------------------------------------------- drafted and reviewed entries

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


class Entry(Model):
    """What a drafted entry of any file may carry (docs/drafting.md, "The file format")."""

    origin: Origin = "reviewed"
    draft_id: Name | None = None
    status: Status | None = None  # rejected: every loader skips it
    answerable: Flag = False  # a negative the book does answer: no negative

    @property
    def skipped(self) -> bool:
        return self.status == "rejected"


def carries_origins(items: Any) -> bool:
    return isinstance(items, list) and any(isinstance(i, dict) and ("origin" in i or "draft_id" in i) for i in items)
