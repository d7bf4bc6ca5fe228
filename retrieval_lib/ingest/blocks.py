"""Cutting a markdown body into sections and block-level units for the chunker.

Owns the block grammar the chunker relies on: sections at ATX headings
(outside code fences and admonitions), and within a section the blocks a
chunk keeps whole where it can: fenced code, ``:::`` admonitions, tables,
lists and paragraphs. Fences, headings and list markers themselves are
defined in :mod:`retrieval_lib.ingest.syntax`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from retrieval_lib.ingest.syntax import LIST_MARKER, atx_heading, closes_fence, fence_opening, with_fence_state

__all__ = ["ADMONITION_CLOSE", "LIST_ITEM", "TABLE_SEPARATOR", "indent", "parse_blocks", "split_sections"]


# --- markdown structure -----------------------------------------------------

_ADMONITION_OPEN = re.compile(r"^[ \t]*:{3,}[A-Za-z]")
ADMONITION_CLOSE = re.compile(r"^[ \t]*:{3,}[ \t]*$")
_TABLE_LINE = re.compile(r"^[ \t]*\|")
TABLE_SEPARATOR = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
LIST_ITEM = re.compile(rf"^[ \t]*{LIST_MARKER}(?:[ \t]+|$)")


def _fence_end(lines: list[str], start: int) -> int:
    """Index after the fence opened at ``lines[start]`` (end of text if unclosed)."""
    fence = fence_opening(lines[start]) or "```"
    for index in range(start + 1, len(lines)):
        if closes_fence(lines[index], fence):
            return index + 1
    return len(lines)


def indent(line: str) -> int:
    """Width of the leading whitespace, a tab counting as four columns."""
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


# --- sections and blocks ----------------------------------------------------

@dataclass
class Section:
    """One heading's stretch of the body: its heading line (None before the
    first heading), section title, H2-down heading path and raw lines."""

    heading: str | None
    title: str
    path: tuple[str, ...]
    lines: list[str] = field(default_factory=list)


def split_sections(body: str, title: str) -> list[Section]:
    """Cut ``body`` at ATX headings outside code fences and admonitions."""
    sections = [Section(None, title, ())]
    stack: list[tuple[int, str]] = []
    admonition_depth = 0
    for line, in_code in with_fence_state(body.split("\n")):
        current = sections[-1].lines
        if in_code:
            current.append(line)
            continue
        if _ADMONITION_OPEN.match(line):
            admonition_depth += 1
        elif ADMONITION_CLOSE.match(line) and admonition_depth:
            admonition_depth -= 1
        heading = atx_heading(line) if admonition_depth == 0 else None
        if heading is None:
            current.append(line)
            continue
        level, text = heading
        if level == 1:
            # The H1 is the page title; its text belongs to no subsection.
            stack = []
            sections.append(Section(line.rstrip(), title, ()))
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        sections.append(Section(line.rstrip(), text, tuple(t for _, t in stack)))
    return sections


def _admonition_end(lines: list[str], start: int) -> int:
    """Index after the admonition opened at ``lines[start]``, nesting respected."""
    depth = 0
    index = start
    while index < len(lines):
        line = lines[index]
        if index > start and fence_opening(line) is not None:
            index = _fence_end(lines, index)
            continue
        if _ADMONITION_OPEN.match(line):
            depth += 1
        elif ADMONITION_CLOSE.match(line):
            depth -= 1
            if depth <= 0:
                return index + 1
        index += 1
    return len(lines)


def _list_end(lines: list[str], start: int) -> int:
    """Index after the list group starting at ``lines[start]``."""
    base = indent(lines[start])
    index = start + 1
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            following = index
            while following < len(lines) and not lines[following].strip():
                following += 1
            # A blank line ends the list unless another item or an indented
            # continuation follows.
            if following < len(lines) and (LIST_ITEM.match(lines[following]) or indent(lines[following]) > base):
                index = following
                continue
            break
        if fence_opening(line) is not None:
            if indent(line) > base:
                index = _fence_end(lines, index)
                continue
            break
        if LIST_ITEM.match(line) or indent(line) > base:
            index += 1
            continue
        if _TABLE_LINE.match(line) or _ADMONITION_OPEN.match(line) or ADMONITION_CLOSE.match(line):
            break
        index += 1  # lazy continuation of the last item
    return index


def _starts_block(line: str) -> bool:
    """Whether ``line`` interrupts a paragraph."""
    return bool(
        fence_opening(line) is not None
        or _ADMONITION_OPEN.match(line)
        or ADMONITION_CLOSE.match(line)
        or _TABLE_LINE.match(line)
        or LIST_ITEM.match(line)
    )


def parse_blocks(lines: list[str]) -> list[tuple[str, str]]:
    """Cut section lines into (kind, text) blocks.

    Kinds: ``code``, ``admonition``, ``table``, ``list``, ``paragraph``.
    Trailing whitespace is stripped from every line except inside code.
    """
    blocks: list[tuple[str, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if fence_opening(line) is not None:
            kind, end = "code", _fence_end(lines, index)
        elif _ADMONITION_OPEN.match(line):
            kind, end = "admonition", _admonition_end(lines, index)
        elif _TABLE_LINE.match(line):
            kind, end = "table", index + 1
            while end < len(lines) and _TABLE_LINE.match(lines[end]):
                end += 1
        elif LIST_ITEM.match(line):
            kind, end = "list", _list_end(lines, index)
        else:
            kind, end = "paragraph", index + 1
            while end < len(lines) and lines[end].strip() and not _starts_block(lines[end]):
                end += 1
        chunk_lines = lines[index:end]
        if kind != "code":
            chunk_lines = [line.rstrip() for line in chunk_lines]
        blocks.append((kind, "\n".join(chunk_lines).rstrip()))
        index = end
    return blocks
