"""Reviewing drafted validation sets (issue 23): accept or reject an entry, edit its question, mark a negative
answerable. The widget over it is :mod:`retrieval_lib.judging.review_view`.

``python -m retrieval_lib draft --out DIR`` writes ``DIR/golden.yaml``, ``DIR/queries.yaml`` and
``DIR/topics.yaml`` (the contract: ``.helpers/draft_format.md``). Each drafted entry carries ``origin: drafted`` and
a stable ``draft_id``; an entry without ``origin`` is hand-written and is never shown here nor touched.

The entries a review sees:

========================  =============  =================================================
file, list                kind           the "expected page"
========================  =============  =================================================
golden.yaml ``queries``   ``query``      ``expected_url_patterns``
golden.yaml ``negatives`` ``negative``   (none: every result must score below max_score)
queries.yaml ``in_domain`` ``query``     ``source``
queries.yaml ``out_of_domain`` ``negative``  (none)
topics.yaml ``topics``    ``topic``      ``expected_prefix``
========================  =============  =================================================

Entries of the same kind with the same ``draft_id`` in several files (a heading drafted as a golden query and as an
in-domain query) are one :class:`ReviewItem`: a click changes each of them.

What a click writes, always with ``origin: reviewed`` (``draft_id`` is kept, so a re-draft recognises the entry):

- **accept**: the entry is right as it is; removes ``status`` (and ``answerable`` of a negative);
- **reject**: ``status: rejected``: every loader skips it, and a re-draft does not bring it back;
- **edit**: the question (``query``, or ``topic``) becomes the text given;
- **answerable** (negatives only): ``answerable: true``: the book does answer it, so it is no negative.

Each click re-reads the file from disk, changes that one entry (:func:`yaml_edit.edit_entry`: the rest of the file,
comments included, stays byte for byte), and writes it atomically (:func:`judgments.write_text_atomic`). A click
that changes nothing writes nothing. Two files are two writes: a crash between them leaves the first reviewed and
the second drafted, and the same click again completes it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.judging.judgments import write_text_atomic
from retrieval_lib.judging.yaml_edit import DROP, LOADER, edit_entry
from retrieval_lib.params import ORIGINS, read_yaml, resolve_path
from retrieval_lib.validation import validate_query

__all__ = ["DRAFT_FILES", "ReviewItem", "DraftReview", "open_review", "load_draft_entries"]

#: The files ``draft --out DIR`` writes that a review edits, and the lists each holds: (list, kind, text key).
DRAFT_FILES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "golden.yaml": (("queries", "query", "query"), ("negatives", "negative", "query")),
    "queries.yaml": (("in_domain", "query", "query"), ("out_of_domain", "negative", "query")),
    "topics.yaml": (("topics", "topic", "topic"),),
}
#: The longest question an edit accepts (a drafted question is a heading or a sentence).
MAX_QUESTION_CHARS = 500


@dataclass(frozen=True)
class DraftEntry:
    """One drafted entry as it stands in its file: ``entries[index]`` of list ``section`` of ``path``."""

    path: Path
    section: str
    index: int
    kind: str
    draft_id: str
    text: str
    expected: tuple[str, ...]
    origin: str
    rejected: bool
    answerable: bool
    drafted_from: str
    text_key: str

    @property
    def state(self) -> str:
        """``drafted``, or what the review made of it: ``rejected``, ``answerable`` or ``accepted``."""
        if self.rejected:
            return "rejected"
        if self.answerable:
            return "answerable"
        return "accepted" if self.origin == "reviewed" else "drafted"


@dataclass(frozen=True)
class ReviewItem:
    """What the reviewer sees once: the entries of one ``(kind, draft_id)`` across the drafted files."""

    kind: str
    draft_id: str
    entries: tuple[DraftEntry, ...]

    @property
    def text(self) -> str:
        return self.entries[0].text

    @property
    def expected(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for e in self.entries for p in e.expected))

    @property
    def drafted_from(self) -> str:
        return next((e.drafted_from for e in self.entries if e.drafted_from), "")

    @property
    def state(self) -> str:
        """The entries' state; ``mixed`` when a crash left them apart (the same click again fixes that)."""
        states = {e.state for e in self.entries}
        return states.pop() if len(states) == 1 else "mixed"

    @property
    def reviewed(self) -> bool:
        return all(e.origin == "reviewed" for e in self.entries)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.path.name for e in self.entries))


def _fail(path: Path, where: str, what: str, key: str) -> ParamsError:
    return ParamsError(f"drafted file {path}: {where}: {what}", path=str(path), key=key)


def load_draft_entries(path: str | os.PathLike[str]) -> list[DraftEntry]:
    """The drafted entries of one drafted file (hand-written entries are left out).

    The kind of file comes from its name (see :data:`DRAFT_FILES`); another name is read as a golden set.

    Raises:
        ParamsError: the file is missing or not YAML, a list is not a list, or a drafted entry (one with
            ``origin`` or ``draft_id``) lacks its ``draft_id`` or question, has an ``origin`` other than
            drafted/reviewed, a ``status`` other than rejected, or repeats a ``draft_id`` of its list. The message
            names the file, the entry and what to fix.
    """
    data, p = _read(path)
    out: list[DraftEntry] = []
    for section, kind, text_key in DRAFT_FILES.get(p.name, DRAFT_FILES["golden.yaml"]):
        items = data.get(section)
        if items is None:
            continue
        if not isinstance(items, list):
            raise _fail(p, section, f"'{section}' must be a list of entries", section)
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not ({"origin", "draft_id"} & set(item)):
                continue  # hand-written: not ours to review
            where, key = f"{section}[{i}] ({str(item.get(text_key) or '')[:60]!r})", f"{section}[{i}]"
            draft_id = item.get("draft_id")
            if not isinstance(draft_id, str | int) or isinstance(draft_id, bool) or not str(draft_id).strip():
                raise _fail(p, where, "a drafted entry needs its 'draft_id' (re-run draft, or remove 'origin' to "
                                      "make the entry hand-written)", f"{key}.draft_id")
            draft_id = str(draft_id).strip()
            if draft_id in seen:
                raise _fail(p, where, f"draft_id {draft_id} repeats {section}[{seen[draft_id]}]; keep one of the "
                                      "two entries", f"{key}.draft_id")
            seen[draft_id] = i
            origin = item.get("origin", "drafted")
            if origin not in ORIGINS:
                raise _fail(p, where, f"origin must be 'drafted' or 'reviewed' (got {origin!r})", f"{key}.origin")
            status = item.get("status")
            if status not in (None, "rejected"):
                raise _fail(p, where, f"status can only be 'rejected' (got {status!r}); remove it to keep the entry",
                            f"{key}.status")
            text = item.get(text_key)
            if not isinstance(text, str) or not text.strip():
                raise _fail(p, where, f"needs a non-empty '{text_key}'", f"{key}.{text_key}")
            if kind == "query":
                raw = item.get("expected_url_patterns", item.get("source"))
            else:
                raw = item.get("expected_prefix")
            expected = tuple(str(x) for x in (raw if isinstance(raw, list) else [raw] if raw else []))
            source = item.get("drafted_from")
            out.append(DraftEntry(
                path=p, section=section, index=i, kind=kind, draft_id=draft_id, text=text.strip(), expected=expected,
                origin=str(origin), rejected=status == "rejected", answerable=item.get("answerable") is True,
                drafted_from=str(source.get("text") or "") if isinstance(source, dict) else "", text_key=text_key))
    return out


def _read(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Path]:
    """The file's mapping, read by libyaml when it can (a click re-reads the files); a file that fails is read again
    by :func:`read_yaml`, whose error names the file, the line and the problem."""
    import yaml

    p = resolve_path(path)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=LOADER)  # a safe loader
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}, p
    return read_yaml(p, what="drafted file")


def _holds_drafts(path: Path) -> bool:
    try:
        data, _ = _read(path)
    except ParamsError:
        return False
    return any(isinstance(item, dict) and {"origin", "draft_id"} & set(item)
               for items in data.values() if isinstance(items, list) for item in items)


class DraftReview:
    """The review of the drafted files ``paths``: the items, and the clicks that change them on disk.

    ``items`` is re-read from disk after every click, so it always shows what the files hold.
    """

    def __init__(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        self.paths = [resolve_path(p) for p in paths]
        self.items: list[ReviewItem] = []
        self.comments_kept = True
        self.reload()

    def reload(self) -> None:
        """Read the files again."""
        groups: dict[tuple[str, str], list[DraftEntry]] = {}
        for path in self.paths:
            for e in load_draft_entries(path):
                groups.setdefault((e.kind, e.draft_id), []).append(e)
        self.items = [ReviewItem(kind, draft_id, tuple(entries)) for (kind, draft_id), entries in groups.items()]

    @property
    def folder(self) -> Path | None:
        return self.paths[0].parent if self.paths else None

    @property
    def progress(self) -> tuple[int, int]:
        """(reviewed, total) items."""
        return sum(1 for it in self.items if it.reviewed), len(self.items)

    def counts(self) -> dict[str, int]:
        """How many items are in each state."""
        return dict(Counter(it.state for it in self.items))

    def summary(self) -> str:
        """One line: what there is to review, or that there is nothing."""
        if not self.items:
            return ("No drafted entries in the golden set or the query sets: nothing to review "
                    "(python -m retrieval_lib draft --out DIR drafts them).")
        done, total = self.progress
        states = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        files = ", ".join(p.name for p in self.paths)
        return (f"{total} drafted entries in {self.folder} ({files}): {done} reviewed, {total - done} to review "
                f"({states})")

    def item(self, draft_id: str, kind: str | None = None) -> ReviewItem:
        """The item with ``draft_id`` (and ``kind``, when two kinds share it).

        Raises:
            ValidationError: no such item (the files changed since they were read: run the cell again).
        """
        found = [it for it in self.items if it.draft_id == draft_id and kind in (None, it.kind)]
        if not found:
            raise ValidationError(f"no drafted entry with draft_id {draft_id!r} in {self.folder} (did a re-draft "
                                  "replace it? run the cell again to reload)", field="draft_id")
        return found[0]

    def accept(self, draft_id: str, kind: str | None = None) -> ReviewItem:
        """The entry is right: ``origin: reviewed``, no ``status`` (and no ``answerable``)."""
        return self._apply(self.item(draft_id, kind), {"origin": "reviewed", "status": DROP, "answerable": DROP})

    def reject(self, draft_id: str, kind: str | None = None) -> ReviewItem:
        """The entry is wrong (its expected page, or the question): ``origin: reviewed``, ``status: rejected``."""
        return self._apply(self.item(draft_id, kind), {"origin": "reviewed", "status": "rejected"})

    def edit(self, draft_id: str, text: str, kind: str | None = None) -> ReviewItem:
        """Replace the question (a topic's phrase) with ``text``: ``origin: reviewed``; status is unchanged.

        Raises:
            ValidationError: ``text`` is empty, or longer than :data:`MAX_QUESTION_CHARS`.
        """
        it = self.item(draft_id, kind)
        new = validate_query(text, MAX_QUESTION_CHARS)
        return self._apply(it, {"origin": "reviewed"}, text=new)

    def mark_answerable(self, draft_id: str, kind: str | None = None) -> ReviewItem:
        """A negative the book does answer: ``origin: reviewed``, ``answerable: true`` (no longer a negative).

        Raises:
            ValidationError: the item is not a negative.
        """
        it = self.item(draft_id, kind)
        if it.kind != "negative":
            raise ValidationError(f"only a negative can be marked answerable; {it.text!r} is a {it.kind}",
                                  field="answerable")
        return self._apply(it, {"origin": "reviewed", "answerable": True, "status": DROP})

    def _apply(self, item: ReviewItem, changes: dict[str, Any], *, text: str | None = None) -> ReviewItem:
        for entry in item.entries:
            # the file as it is now (a re-draft, a hand edit or another kernel may have changed it)
            current = {(e.section, e.draft_id): e for e in load_draft_entries(entry.path)}
            now = current.get((entry.section, entry.draft_id))
            if now is None:
                self.reload()
                raise ValidationError(f"{entry.path.name}: the entry {entry.draft_id} is gone from "
                                      f"'{entry.section}' (the file changed); the view is reloaded", field="draft_id")
            wanted = dict(changes)
            if text is not None:
                wanted[now.text_key] = text
            if now.kind != "negative":
                wanted.pop("answerable", None)
            before = now.path.read_text(encoding="utf-8")
            result = edit_entry(before, now.section, now.index, wanted)
            if result.changed:
                write_text_atomic(now.path, result.text)
                self.comments_kept = self.comments_kept and result.comments_kept
        self.reload()
        return self.item(item.draft_id, item.kind)


def open_review(golden_set: str | os.PathLike[str] | None = None,
                query_sets: str | os.PathLike[str] | None = None,
                extra: Sequence[str | os.PathLike[str]] = ()) -> DraftReview:
    """The review of the drafted files a notebook's parameters point at (nothing to review when they are
    hand-written).

    A parameter file that holds drafted entries names a draft folder; its contract files (``golden.yaml``,
    ``queries.yaml``, ``topics.yaml``, those that exist) are reviewed, as is the named file itself.

    Args:
        golden_set, query_sets: the notebook's parameters (empty or hand-written: nothing from them).
        extra: more drafted files to review.
    """
    paths: list[Path] = []
    for given in (golden_set, query_sets, *extra):
        if given is None or not str(given).strip():
            continue
        p = resolve_path(given)
        if not p.is_file() or not _holds_drafts(p):
            continue
        for candidate in (*(p.parent / name for name in DRAFT_FILES), p):
            if candidate.is_file() and candidate.resolve() not in {q.resolve() for q in paths}:
                paths.append(candidate)
    return DraftReview(paths)
