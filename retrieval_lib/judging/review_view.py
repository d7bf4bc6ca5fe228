"""The review view of notebook 13: an ipywidgets form over a :class:`~retrieval_lib.judging.review.DraftReview`.

One drafted entry at a time (its question in an editable box, its expected page, what it was drafted from, its
state), buttons that each save at once (accept, reject, save edit, answerable), previous / next, and a table of
every entry with its state. After a click the view moves on to the next entry still drafted. Displaying it never
blocks, so a headless run goes straight on. The buttons carry CSS classes (``review-accept``, ...) that the
browser test finds them by.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from retrieval_lib.errors import RetrievalError
from retrieval_lib.judging.review import DraftReview, ReviewItem

__all__ = ["ReviewWidget"]

_KIND = {"query": "known-item query", "negative": "out-of-domain negative", "topic": "topic"}
_COLOUR = {"drafted": "#777", "accepted": "#080", "rejected": "#b00", "answerable": "#b60", "mixed": "#b0b"}


def _state(state: str) -> str:
    return f"<span class='review-state' style='color: {_COLOUR.get(state, '#000')}'><b>{state}</b></span>"


def _card(it: ReviewItem) -> str:
    e = html.escape
    expected = ", ".join(f"<code>{e(p)}</code>" for p in it.expected) or "<i>none</i>"
    what = {"query": "expected page", "negative": "expected page", "topic": "expected prefix"}[it.kind]
    origin = f" &nbsp; drafted from: <i>{e(it.drafted_from)}</i>" if it.drafted_from else ""
    return (f"<div class='review-card'><b>{e(_KIND[it.kind])}</b> · {_state(it.state)} · draft_id "
            f"<code>{e(it.draft_id)}</code> · in {e(', '.join(it.files))}</div>"
            f"<div><b>{what}:</b> {expected}{origin}</div>")


def _table(items: list[ReviewItem], current: int) -> str:
    e = html.escape
    rows = "".join(
        f"<tr class='review-row' data-draft-id='{e(it.draft_id)}'><td>{'▶' if i == current else ''}{i + 1}</td>"
        f"<td>{e(it.kind)}</td><td>{e(it.text)}</td><td>{e(', '.join(it.expected))}</td><td>{_state(it.state)}</td>"
        "</tr>" for i, it in enumerate(items))
    return ("<div style='max-height: 22em; overflow-y: auto'><table class='review-table'>"
            "<tr><th>#</th><th>kind</th><th>question</th><th>expected</th><th>state</th></tr>"
            f"{rows}</table></div>")


class ReviewWidget:
    """An ipywidgets view of a :class:`DraftReview` (``.view`` is the widget to display)."""

    def __init__(self, review: DraftReview) -> None:
        import ipywidgets as w

        self.review = review
        self.index = self._next_drafted(-1)
        self.status = w.HTML()
        self.card = w.HTML()
        self.question = w.Text(description="question", layout=w.Layout(width="48em"))
        self.question.add_class("review-question")
        self.message = w.HTML()
        self.table = w.HTML()

        def button(label: str, css: str, style: str, tip: str, act: Callable[[], object]) -> w.Button:
            b = w.Button(description=label, button_style=style, tooltip=tip)
            b.add_class(css)
            b.on_click(lambda _b: act())
            return b

        self.accept = button("accept", "review-accept", "success", "the question and its expected page are right",
                             self.on_accept)
        self.reject = button("reject", "review-reject", "danger", "a wrong expected page or question: skip it",
                             self.on_reject)
        self.save_edit = button("save edit", "review-edit", "info", "save the question as typed above", self.on_edit)
        self.answerable = button("answerable", "review-answerable", "warning",
                                 "the book does answer this negative: it is no negative", self.on_answerable)
        self.previous = button("◀ previous", "review-previous", "", "the entry before", lambda: self.move(-1))
        self.next = button("next ▶", "review-next", "", "the entry after", lambda: self.move(1))
        actions = w.HBox([self.accept, self.reject, self.save_edit, self.answerable, self.previous, self.next])
        self.view = w.VBox([self.status, self.card, self.question, actions, self.message, self.table])
        self.refresh()

    @property
    def current(self) -> ReviewItem | None:
        items = self.review.items
        return items[self.index] if 0 <= self.index < len(items) else None

    def _next_drafted(self, after: int) -> int:
        items = self.review.items
        for step in range(1, len(items) + 1):
            i = (after + step) % len(items)
            if not items[i].reviewed:
                return i
        return min(max(after, 0), len(items) - 1) if items else -1

    def refresh(self) -> None:
        r = self.review
        done, total = r.progress
        folder = html.escape(str(r.folder)) if r.folder else ""
        self.status.value = (f"<b class='review-progress'>{done} of {total} reviewed</b> in {folder} → every click "
                             "saves the entry at once (origin: reviewed)")
        it = self.current
        self.card.value = _card(it) if it else "<p>Nothing drafted to review.</p>"
        self.question.value = it.text if it else ""
        for b in (self.accept, self.reject, self.save_edit):
            b.disabled = it is None
        self.answerable.disabled = it is None or it.kind != "negative"
        self.table.value = _table(r.items, self.index)

    def move(self, step: int) -> None:
        if self.review.items:
            self.index = (self.index + step) % len(self.review.items)
        self.message.value = ""
        self.refresh()

    def _act(self, verb: str, action: Callable[[str, str], ReviewItem]) -> None:
        it = self.current
        if it is None:
            return
        try:
            done = action(it.draft_id, it.kind)
        except (RetrievalError, OSError) as err:
            self.message.value = f"<span style='color: #b00'>not saved: {html.escape(str(err))}</span>"
        else:
            note = "" if self.review.comments_kept else " (the file's comments could not be kept)"
            self.message.value = (f"<span class='review-saved'>saved: {verb} {html.escape(done.text)!r} in "
                                  f"{html.escape(', '.join(done.files))}{note}</span>")
            self.index = self._next_drafted(self.index)
        self.refresh()

    def on_accept(self) -> None:
        self._act("accepted", lambda d, k: self.review.accept(d, k))

    def on_reject(self) -> None:
        self._act("rejected", lambda d, k: self.review.reject(d, k))

    def on_edit(self) -> None:
        self._act("edited", lambda d, k: self.review.edit(d, self.question.value, k))

    def on_answerable(self) -> None:
        self._act("marked answerable", lambda d, k: self.review.mark_answerable(d, k))
