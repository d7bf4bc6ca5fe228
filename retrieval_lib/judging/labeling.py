"""Labelling: going through a query set's top-k results and grading each one (notebook 13).

:class:`LabelingSession` is the logic, with no user interface and no waiting: a queue of (query, result)
pairs, the ones this judge already judged (of the same text) skipped, progress as "n of m", a grade that is
saved to the judgment file *before* the session moves on (atomic write, see :func:`judgments.save_judgments`),
skip, and undo of the last judgment. :class:`LabelingWidget` is a thin ipywidgets view over a session: buttons
for the grades, a key box (type 0, 1 or 2 to grade, s to skip, u to undo), the full chunk text. Displaying it
never blocks, so a headless run (papermill, nbval) goes straight on.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_lib.errors import ValidationError
from retrieval_lib.judging.judgments import GRADES, Judgment, JudgmentFile, check_grade, now_iso, save_judgments
from retrieval_lib.models import SearchResult

__all__ = ["Item", "LabelingSession", "LabelingWidget", "items_from_responses"]


@dataclass(frozen=True)
class Item:
    """One pair to judge: a query and the result at ``rank`` (1-based) of its top-k."""

    query: str
    rank: int
    result: SearchResult

    @property
    def chunk_id(self) -> str:
        return self.result.chunk_id or self.result.point_id

    @property
    def content_hash(self) -> str:
        return self.result.content_hash or ""


def items_from_responses(responses: Sequence[Any]) -> list[Item]:
    """The (query, result) pairs of search responses, query by query, in rank order."""
    return [Item(r.query_text, rank, res) for r in responses for rank, res in enumerate(r.results, 1)]


class LabelingSession:
    """Judge a queue of items as ``judge``; every grade is saved to ``judgments`` at once.

    Args:
        items: the pairs to judge, in the order to show them.
        judgments: the file grades go to (loaded with :func:`judgments.load_judgments`, ``missing_ok=True``).
        judge: who is judging (a name, kept in each entry); grading waits until there is one.
        clock: returns the ISO time stamped on a judgment (tests pass a fixed one).
    """

    def __init__(self, items: Sequence[Item], judgments: JudgmentFile, *, judge: str = "",
                 clock: Callable[[], str] = now_iso) -> None:
        self.items = list(items)
        self.file = judgments
        self.judge = (judge or "").strip()
        self._clock = clock
        self._history: list[tuple[Item, Judgment | None]] = []
        self._skipped: list[Item] = []

    def judged(self, item: Item) -> Judgment | None:
        """This judge's judgment of ``item``, when it is of the text shown now (else None: judge it again)."""
        j = self.file.get(self.judge, item.query, item.chunk_id)
        return j if j is not None and j.content_hash == item.content_hash else None

    @property
    def pending(self) -> list[Item]:
        """The items still to judge, skipped ones last."""
        todo = [it for it in self.items if self.judged(it) is None]
        return [it for it in todo if it not in self._skipped] + [it for it in self._skipped if it in todo]

    @property
    def current(self) -> Item | None:
        """The item to judge now, or None when every item is judged."""
        pending = self.pending
        return pending[0] if pending else None

    @property
    def progress(self) -> tuple[int, int]:
        """(judged, total) over the queue."""
        return len(self.items) - len(self.pending), len(self.items)

    @property
    def progress_text(self) -> str:
        done, total = self.progress
        return f"{done} of {total} judged"

    @property
    def done(self) -> bool:
        return self.current is None

    def grade(self, grade: int, note: str = "") -> Judgment:
        """Grade the current item, save the file, and move on; returns the judgment.

        Raises:
            ValidationError: no judge is named, the grade is not 0, 1 or 2, or nothing is left to judge.
            OSError: the file could not be written; the session and the file stay as they were.
        """
        if not self.judge:
            raise ValidationError("name the judge first (the judge box, or judge = \"alice\" in the parameters "
                                  "cell): every judgment records who made it", field="judge")
        grade = check_grade(grade)
        item = self.current
        if item is None:
            raise ValidationError("every item of the queue is judged; nothing to grade", field="grade")
        judgment = Judgment(query=item.query, chunk_id=item.chunk_id, content_hash=item.content_hash,
                            grade=grade, judge=self.judge, time=self._clock(), note=note.strip())
        previous = self.file.put(judgment)
        try:
            save_judgments(self.file)
        except BaseException:
            self._restore(judgment, previous)
            raise
        self._history.append((item, previous))
        if item in self._skipped:
            self._skipped.remove(item)
        return judgment

    def set_judge(self, judge: str) -> None:
        """Judge as ``judge`` from now on (the queue then skips what *that* judge has judged)."""
        self.judge = (judge or "").strip()
        self._history.clear()
        self._skipped.clear()

    def skip(self) -> Item | None:
        """Put the current item at the end of the queue; returns the new current item."""
        item = self.current
        if item is not None:
            if item in self._skipped:
                self._skipped.remove(item)
            self._skipped.append(item)
        return self.current

    def undo(self) -> Judgment | None:
        """Take back the last judgment of this session (the file is saved again); returns it, or None.

        The item becomes the current one again.
        """
        if not self._history:
            return None
        item, previous = self._history[-1]
        taken = self.file.get(self.judge, item.query, item.chunk_id)
        if taken is None:
            self._history.pop()
            return None
        self._restore(taken, previous)
        try:
            save_judgments(self.file)
        except BaseException:
            self.file.put(taken)
            raise
        self._history.pop()
        self._skipped = [it for it in self._skipped if it != item]
        # ahead of every other pending item
        self.items.remove(item)
        self.items.insert(0, item)
        return taken

    def _restore(self, judgment: Judgment, previous: Judgment | None) -> None:
        if previous is None:
            self.file.remove(judgment.key)
        else:
            self.file.put(previous)


def _card(item: Item) -> str:
    r = item.result
    e = html.escape
    return (f"<div><b>Query:</b> {e(item.query)} &nbsp; <b>rank</b> {item.rank} &nbsp; "
            f"<b>score</b> {r.similarity_score:.3f}</div>"
            f"<div><b>{e(r.title or '')}</b> › {e(r.section_title or '')}</div>"
            f"<div><small>{e(r.source_url or '')} ({e(r.source_file or '')}, {e(item.chunk_id)})</small></div>"
            f"<pre style='white-space: pre-wrap; max-height: 28em; overflow-y: auto; border: 1px solid #ccc; "
            f"padding: 0.5em'>{e(r.content or '')}</pre>")


class LabelingWidget:
    """An ipywidgets view of a :class:`LabelingSession` (``.view`` is the widget to display)."""

    def __init__(self, session: LabelingSession) -> None:
        import ipywidgets as w

        self.session = session
        self.judge = w.Text(value=session.judge, placeholder="your name", description="judge")
        self.judge.observe(self._on_judge, names="value")
        self.status = w.HTML()
        self.card = w.HTML()
        self.note = w.Text(placeholder="optional note", description="note")
        self.keys = w.Text(placeholder="type 0, 1 or 2 to grade; s skip; u undo", description="keys",
                           continuous_update=True)
        self.buttons = [w.Button(description=f"{g} {label}", tooltip=f"grade {g}: {label}",
                                 button_style=("danger", "warning", "success")[g]) for g, label in GRADES.items()]
        for g, button in zip(GRADES, self.buttons):
            button.on_click(lambda _b, g=g: self.on_grade(g))
        self.skip_button = w.Button(description="skip")
        self.undo_button = w.Button(description="undo last")
        self.skip_button.on_click(lambda _b: self.on_skip())
        self.undo_button.on_click(lambda _b: self.on_undo())
        self.keys.observe(self._on_key, names="value")
        self.message = w.HTML()
        grading = w.HBox([*self.buttons, self.skip_button, self.undo_button])
        self.view = w.VBox([self.judge, self.status, self.card, grading, w.HBox([self.note, self.keys]), self.message])
        self.refresh()

    def refresh(self) -> None:
        s = self.session
        item = s.current
        who = (f"as judge <b>{html.escape(s.judge)}</b>" if s.judge else
               "<span style='color: #b00'>enter your name as judge to start</span>")
        self.status.value = (f"<b>{html.escape(s.progress_text)}</b> {who} → saved to "
                             f"{html.escape(str(s.file.path.name))} on every grade")
        self.card.value = _card(item) if item else "<p>Every result of the queue is judged.</p>"
        for b in self.buttons:
            b.disabled = item is None or not s.judge

    def on_grade(self, grade: int) -> None:
        try:
            j = self.session.grade(grade, self.note.value)
        except (ValidationError, OSError) as err:
            self.message.value = f"<span style='color: #b00'>not saved: {html.escape(str(err))}</span>"
        else:
            self.note.value = ""
            self.message.value = f"saved: grade {j.grade} for {html.escape(j.chunk_id)}"
        self.refresh()

    def _on_judge(self, change: dict[str, Any]) -> None:
        self.session.set_judge(str(change.get("new") or ""))
        self.refresh()

    def on_skip(self) -> None:
        self.session.skip()
        self.refresh()

    def on_undo(self) -> None:
        taken = self.session.undo()
        self.message.value = f"undone: {html.escape(taken.chunk_id)}" if taken else "nothing to undo"
        self.refresh()

    def _on_key(self, change: dict[str, Any]) -> None:
        key = str(change.get("new") or "").strip().lower()
        if not key:
            return
        self.keys.value = ""
        if key in {"0", "1", "2"}:
            self.on_grade(int(key))
        elif key == "s":
            self.on_skip()
        elif key == "u":
            self.on_undo()
