"""Markdown syntax primitives shared by the document reader, the MDX stripper and the chunker.

Owns the single definition of line endings, of what opens and closes a fenced
code block, of an ATX heading (with the decorations removed from its text:
closing ``#`` run, ``{#custom-id}``) and of a list item marker. Internal to
the package: the names are public only so the sibling modules can import them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["normalize_newlines", "fence_opening", "closes_fence", "with_fence_state", "ATX_HEADING", "atx_heading",
           "LIST_MARKER"]


def normalize_newlines(text: str) -> str:
    """``text`` with CRLF and lone CR line endings turned into LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --- fences -----------------------------------------------------------------

# Any indentation is accepted so fences nested in list items are found too.
FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def fence_opening(line: str) -> str | None:
    """The fence string if ``line`` opens a fenced code block, else None."""
    match = FENCE_OPEN.match(line)
    if match is None:
        return None
    fence = match["fence"]
    # CommonMark: a backtick fence's info string may not contain backticks
    # (otherwise it is inline code such as ```x```).
    if fence[0] == "`" and "`" in match["info"]:
        return None
    return fence


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened with ``fence``."""
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def with_fence_state(lines: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each line with True when it belongs to a fenced code block (its fence lines included)."""
    fence: str | None = None
    for line in lines:
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
            yield line, True
            continue
        fence = fence_opening(line)
        yield line, fence is not None


# --- headings ---------------------------------------------------------------

# A whole ATX heading line, ``#`` to ``######`` and an optional text. MULTILINE
# so that ``ATX_HEADING.sub`` can drop every heading line of a body at once.
ATX_HEADING = re.compile(r"^ {0,3}(?P<hashes>#{1,6})(?:[ \t]+(?P<text>.*?))?[ \t]*$", re.MULTILINE)
# An optional closing sequence of ``#`` (``## Title ##``).
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
# A Docusaurus explicit heading id (``## Title {#custom-id}``).
_HEADING_ID = re.compile(r"[ \t]*\{#[^}]*\}$")


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) if ``line`` is an ATX heading with some text, else None.

    The text loses its closing ``#`` run and its ``{#custom-id}``; a heading
    left with no text (``#``, ``## {#id}``) counts as none.
    """
    match = ATX_HEADING.fullmatch(line)
    if match is None:
        return None
    text = _HEADING_ID.sub("", _CLOSING_HASHES.sub("", match["text"] or "")).strip()
    return (len(match["hashes"]), text) if text else None


# --- lists ------------------------------------------------------------------

# A bullet or an ordered-list number, as a pattern to build line rules from.
LIST_MARKER = r"(?:[-*+]|\d{1,9}[.)])"
