"""Markdown syntax primitives shared by the document reader, the MDX stripper and the chunker.

Owns the single definition of what opens and closes a fenced code block and
of the heading decorations (closing ``#`` run, ``{#custom-id}``) that are
removed from a heading's text. Internal to the package: the names are public
only so the sibling modules can import them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["FENCE_OPEN", "fence_opening", "closes_fence", "with_fence_state", "CLOSING_HASHES", "HEADING_ID"]

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

# An optional closing sequence of ``#`` (``## Title ##``).
CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
# A Docusaurus explicit heading id (``## Title {#custom-id}``).
HEADING_ID = re.compile(r"[ \t]*\{#[^}]*\}$")
