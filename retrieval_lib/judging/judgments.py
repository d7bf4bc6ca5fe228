"""Human relevance judgments: files under ``params/judgments/``, their validation, staleness and qrels.

A judgment file is YAML (data, diff-friendly: one entry per judged (query, chunk), appended in the
order they were made)::

    about: who judged and how (free text)
    judge: helper-judge         # the default judge of entries that name none
    judgments:
      - query: What is ROS2?
        chunk_id: module-01-ros2/what-is-ros2.md#0
        content_hash: 3f5c...    # sha256 of the chunk's text when it was judged
        grade: 2                 # 0 not relevant, 1 partly relevant, 2 relevant
        judge: helper-judge
        time: '2026-11-23T10:02:11+00:00'
        note: defines ROS 2 directly   # optional

A judgment names a chunk by ``chunk_id`` *and* the ``content_hash`` of the text the judge read. When the
collection changes (a re-chunk, an edited page) a judgment whose chunk is gone, or whose chunk now holds other
text, is **stale**: :func:`split_stale` lists it and it is never reused as if it still applied.

:func:`to_qrels` and :func:`qrels_text` give the judgments as TREC qrels (``qid 0 docid grade``), the form
pytrec_eval and ranx read. Files are written by :func:`save_judgments`, atomically (a temporary file in the
same folder, then ``os.replace``), so a crash mid-write leaves the previous file whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.files import write_text_atomic
from retrieval_lib.models import query_id
from retrieval_lib.params import read_yaml, resolve_path

__all__ = ["GRADES", "Judgment", "JudgmentFile", "StaleJudgment", "load_judgments", "save_judgments",
           "write_text_atomic", "split_stale", "collection_hashes", "query_id", "to_qrels", "qrels_text", "check_grade",
           "now_iso"]

#: The grades a judge gives, and what each means.
GRADES: dict[int, str] = {0: "not relevant", 1: "partly relevant", 2: "relevant"}
_REQUIRED = ("query", "chunk_id", "content_hash", "grade", "time")
_ENTRY_KEYS = frozenset(_REQUIRED) | {"judge", "note"}
#: An entry's text fields, checked in this order.
_TEXTS = ("query", "chunk_id", "content_hash", "judge", "note")
_TOP_KEYS = frozenset({"about", "judge", "judgments"})
_HEADER = ("# Relevance judgments (retrieval_lib.judging.judgments): one entry per judged (query, chunk).\n"
           "# grade: 0 not relevant, 1 partly relevant, 2 relevant. content_hash is the sha256 of the text the\n"
           "# judge read: when the chunk changes or disappears the judgment is reported stale, never reused.\n"
           "# Written by notebooks/13_judgments.ipynb on every judgment (atomic write); editable by hand.\n")


def now_iso() -> str:
    """The current UTC time, to the second, in ISO 8601 (what ``time`` holds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_grade(grade: Any) -> int:
    """``grade`` as an int of :data:`GRADES`.

    Raises:
        ValidationError: anything else (bools too: ``True`` is not a grade).
    """
    if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
        raise ValidationError(f"grade must be one of {sorted(GRADES)} (0 not relevant, 1 partly, 2 relevant); "
                              f"got {grade!r}", field="grade")
    return grade


@dataclass(frozen=True)
class Judgment:
    """One judge's grade of one chunk for one query."""

    query: str
    chunk_id: str
    content_hash: str
    grade: int
    judge: str
    time: str
    note: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """(judge, query, chunk_id): what a file holds at most once."""
        return (self.judge, self.query, self.chunk_id)

    def as_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"query": self.query, "chunk_id": self.chunk_id, "content_hash": self.content_hash,
                                 "grade": self.grade, "judge": self.judge, "time": self.time}
        if self.note:
            entry["note"] = self.note
        return entry


@dataclass
class JudgmentFile:
    """The judgments of one file, in file order, with the line each entry starts on (0 when not from a file)."""

    path: Path
    judgments: list[Judgment] = field(default_factory=list)
    about: str = ""
    judge: str = ""
    lines: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def get(self, judge: str, query: str, chunk_id: str) -> Judgment | None:
        """The judgment of ``chunk_id`` for ``query`` by ``judge``, or None."""
        return next((j for j in self.judgments if j.key == (judge, query, chunk_id)), None)

    def put(self, judgment: Judgment) -> Judgment | None:
        """Add ``judgment``, replacing (in place) the same judge's earlier one of that pair; returns the earlier."""
        for i, j in enumerate(self.judgments):
            if j.key == judgment.key:
                self.judgments[i] = judgment
                return j
        self.judgments.append(judgment)
        return None

    def remove(self, key: tuple[str, str, str]) -> Judgment | None:
        """Remove the judgment with ``key`` (judge, query, chunk_id); returns it, or None when absent."""
        for i, j in enumerate(self.judgments):
            if j.key == key:
                return self.judgments.pop(i)
        return None

    def judges(self) -> list[str]:
        """The judges of this file, in order of first appearance."""
        return list(dict.fromkeys(j.judge for j in self.judgments))

    def text(self) -> str:
        """The file's YAML text (header comment, ``about``, ``judge``, then the entries in order)."""
        import yaml

        body: dict[str, Any] = {"about": self.about, "judge": self.judge,
                                "judgments": [j.as_entry() for j in self.judgments]}
        return _HEADER + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=110,
                                        default_flow_style=False)


def _entry_lines(text: str) -> list[dict[str, int]]:
    """For each item of the top-level ``judgments`` list: its line (key ``""``) and each key's line, 1-based."""
    import yaml

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    out: list[dict[str, int]] = []
    if not isinstance(root, yaml.MappingNode):
        return out
    for key, value in root.value:
        if key.value == "judgments" and isinstance(value, yaml.SequenceNode):
            for item in value.value:
                lines = {"": item.start_mark.line + 1}
                if isinstance(item, yaml.MappingNode):
                    lines.update({str(k.value): v.start_mark.line + 1 for k, v in item.value})
                out.append(lines)
    return out


def _text(value: Any, name: str, where: str, path: Path, key: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ParamsError(f"{path.name} {where}: {name} must be a non-empty string (got {value!r})",
                          path=str(path), key=key)
    return value.strip() if name != "note" else value


def load_judgments(path: str | os.PathLike[str], *, missing_ok: bool = False) -> JudgmentFile:
    """Read and validate a judgment file.

    Args:
        path: the YAML file (relative paths start at the current folder, else the project root).
        missing_ok: return an empty file (to be created on the first save) when ``path`` does not exist.

    Raises:
        ParamsError: the file is missing (unless ``missing_ok``), not YAML, has an unknown key, or an entry
            lacks a field, has a grade outside 0/1/2, a time that is not ISO 8601, or repeats a (judge, query,
            chunk_id) of an earlier entry. The message names the line.
    """
    p = resolve_path(path)
    if missing_ok and not p.exists():
        return JudgmentFile(path=p)
    data, p = read_yaml(p, what="judgment file")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ParamsError(f"{p.name}: unknown key(s) {', '.join(unknown)}; a judgment file holds "
                          f"{', '.join(sorted(_TOP_KEYS))}", path=str(p), key=unknown[0])
    about = _text(data.get("about"), "about", "header", p, "about", required=False)
    default_judge = _text(data.get("judge"), "judge", "header", p, "judge", required=False).strip()
    items = data.get("judgments") or []
    if not isinstance(items, list):
        raise ParamsError(f"{p.name}: 'judgments' must be a list of entries", path=str(p), key="judgments")
    lines = _entry_lines(p.read_text(encoding="utf-8"))
    jf = JudgmentFile(path=p, about=about, judge=default_judge)
    for i, item in enumerate(items):
        at = lines[i] if i < len(lines) else {"": 0}
        jf_key = f"judgments[{i}]"
        if not isinstance(item, dict):
            raise ParamsError(f"{p.name} line {at['']}: entry {i + 1} must be a mapping (query:, chunk_id:, ...)",
                              path=str(p), key=jf_key)
        bad = sorted(set(map(str, item)) - _ENTRY_KEYS)
        missing = [k for k in _REQUIRED if k not in item]
        if bad or missing:
            what = f"unknown key {bad[0]!r}" if bad else f"missing {', '.join(missing)}"
            raise ParamsError(f"{p.name} line {at.get(bad[0], at['']) if bad else at['']}: entry {i + 1} has {what}; "
                              f"an entry holds {', '.join(_REQUIRED)} and optionally judge, note",
                              path=str(p), key=f"{jf_key}.{(bad or missing)[0]}")

        def where(name: str, at: dict[str, int] = at, i: int = i) -> str:
            return f"line {at.get(name, at[''])} (entry {i + 1})"

        try:
            grade = check_grade(item["grade"])
        except ValidationError as err:
            raise ParamsError(f"{p.name} {where('grade')}: {err.message}", path=str(p), key=f"{jf_key}.grade") from None
        stamp = item["time"]
        if isinstance(stamp, datetime):
            stamp = stamp.isoformat()
        try:
            datetime.fromisoformat(str(stamp))
        except ValueError:
            raise ParamsError(f"{p.name} {where('time')}: time {stamp!r} is not ISO 8601 "
                              "(e.g. 2026-11-23T10:02:11+00:00)", path=str(p), key=f"{jf_key}.time") from None
        given = {**item, "judge": item.get("judge", default_judge) or default_judge}
        j = Judgment(**{name: _text(given.get(name), name, where(name), p, f"{jf_key}.{name}", required=name != "note")
                        for name in _TEXTS}, grade=grade, time=str(stamp))
        if j.key in jf.lines:
            raise ParamsError(f"{p.name} {where('')}: judge {j.judge!r} already judged chunk {j.chunk_id!r} for "
                              f"{j.query!r} at line {jf.lines[j.key]}; keep one of the two entries",
                              path=str(p), key=jf_key)
        jf.judgments.append(j)
        jf.lines[j.key] = at[""]
    return jf


def save_judgments(jf: JudgmentFile) -> Path:
    """Write ``jf`` to its path atomically (see :func:`write_text_atomic`); returns the path."""
    return write_text_atomic(jf.path, jf.text())


# --------------------------------------------------------------------------- staleness

@dataclass(frozen=True)
class StaleJudgment:
    """A judgment that no longer applies: its chunk is ``"gone"``, or its text ``"changed"`` since it was judged."""

    judgment: Judgment
    reason: str


def collection_hashes(store: Any, collection: str) -> dict[str, str]:
    """``chunk_id -> content_hash`` of every point of the collection (a paged scroll of two payload fields)."""
    out: dict[str, str] = {}
    for point in store.scroll(collection, with_payload=["chunk_id", "content_hash"]):
        payload = point.payload or {}
        if payload.get("chunk_id"):
            out[str(payload["chunk_id"])] = str(payload.get("content_hash") or "")
    return out


def split_stale(judgments: Iterable[Judgment],
                current: Mapping[str, str]) -> tuple[list[Judgment], list[StaleJudgment]]:
    """Split judgments into (still valid, stale) against ``current`` (``chunk_id -> content_hash``)."""
    fresh: list[Judgment] = []
    stale: list[StaleJudgment] = []
    for j in judgments:
        if j.chunk_id not in current:
            stale.append(StaleJudgment(j, "gone"))
        elif current[j.chunk_id] != j.content_hash:
            stale.append(StaleJudgment(j, "changed"))
        else:
            fresh.append(j)
    return fresh, stale


# --------------------------------------------------------------------------- qrels

def to_qrels(judgments: Iterable[Judgment], *, ids: bool = False) -> dict[str, dict[str, int]]:
    """Judgments as qrels ``{query: {chunk_id: grade}}`` (keyed by :func:`query_id` when ``ids``).

    A pair graded by several judges gets the lowest grade (the conservative reading). Pass fresh judgments
    (see :func:`split_stale`): a stale grade is about text the collection no longer holds.
    """
    qrels: dict[str, dict[str, int]] = {}
    for j in judgments:
        q = query_id(j.query) if ids else j.query
        row = qrels.setdefault(q, {})
        row[j.chunk_id] = min(j.grade, row.get(j.chunk_id, j.grade))
    return qrels


def qrels_text(judgments: Iterable[Judgment]) -> str:
    """TREC qrels lines ``qid 0 chunk_id grade`` (qid from :func:`query_id`), sorted; what trec_eval reads."""
    qrels = to_qrels(judgments, ids=True)
    return "".join(f"{q} 0 {doc} {grade}\n" for q in sorted(qrels) for doc, grade in sorted(qrels[q].items()))

