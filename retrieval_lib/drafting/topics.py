"""Topic queries: a book's top-level folders (or URL sections) are its topics.

The pages' keys are split into path segments; the segments every page shares (``docs/``) are the site's, not a
topic. The next segment groups the pages into sections: each section with at least :data:`MIN_PAGES` pages
becomes a topic phrase with the prefix its results should carry (``module-02-simulation/`` -> "simulation").

The phrase is the folder name without its numbering and the words that only number a part of a book ("module",
"part", "chapter", "Kapitel" ...). A section whose name says nothing (``introduction``, ``appendices``, a bare
number) is left out, with the reason; so is a book with fewer than two sections (every result lands in the one
section, so the gate would prove nothing).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval_lib.drafting.known_items import Dropped, draft_id
from retrieval_lib.drafting.language import is_generic_heading
from retrieval_lib.drafting.pages import Page

__all__ = ["TopicDraft", "draft_topics"]

#: A section needs this many pages to be a topic.
MIN_PAGES = 2
_NUMBERING_WORDS = frozenset("module modul part parte teil chapter chap cap capitulo capítulo kapitel section "
                             "sección abschnitt unit unidad einheit week semana woche lesson lección lektion "
                             "chapitre partie docs doc".split())
_VAGUE = frozenset("appendices appendix anhang apéndices apendices annexes misc other others general resources "
                   "blog extras extra reference tutorial tutorials assets images img static".split())


@dataclass(frozen=True)
class TopicDraft:
    """A drafted topic: its phrase, the prefix its results should start with, and the section's pages."""

    topic: str
    expected_prefix: str
    pages: int
    folder: str

    @property
    def draft_id(self) -> str:
        return draft_id("topic", self.expected_prefix, self.topic)


def _phrase(folder: str) -> str:
    words = [w for w in re.split(r"[-_.\s]+", folder) if w]
    kept = [w for w in words if not w.isdigit() and w.lower() not in _NUMBERING_WORDS
            and not re.fullmatch(r"\d+[a-z]?|[a-z]\d*", w.lower())]
    return " ".join(kept)


def draft_topics(pages: Sequence[Page]) -> tuple[list[TopicDraft], list[Dropped]]:
    """Topics from the pages' top-level sections (module docstring); returns (kept, dropped)."""
    parts = [p.key.strip("/").split("/") for p in pages]
    if not parts:
        return [], [Dropped("", "", "topic", "no pages: nothing to group")]
    common = 0
    while all(len(x) > common + 1 for x in parts) and len({x[common] for x in parts}) == 1:
        common += 1
    sections = Counter(x[common] for x in parts if len(x) > common + 1)  # a page at the top is in no section
    lead = "/".join(parts[0][:common])
    lead = f"{lead}/" if lead else ""
    if len(sections) < 2:
        return [], [Dropped(", ".join(sections) or "(none)", "", "topic",
                            f"{len(sections)} top-level section(s): a topic gate needs two or more sections, or every "
                            "result lands in the one section")]
    kept, dropped = [], []
    for folder, n in sorted(sections.items()):
        prefix = f"{lead}{folder}/"
        phrase = _phrase(folder)
        if n < MIN_PAGES:
            dropped.append(Dropped(folder, prefix, "topic", f"only {n} page in this section"))
        elif not phrase or phrase.lower() in _VAGUE or is_generic_heading(phrase):
            dropped.append(Dropped(folder, prefix, "topic",
                                   f"the section name {folder!r} says nothing about its topic"))
        else:
            kept.append(TopicDraft(phrase, prefix, n, folder))
    return kept, dropped
