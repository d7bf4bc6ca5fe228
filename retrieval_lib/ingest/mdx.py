"""Stripping MDX-only noise from a markdown body.

MDX files carry text that means nothing to a reader or an embedding model:
top-level ``import``/``export`` statements, JSX wrappers such as ``<Tabs>``
standing on their own lines, and ``<!-- -->`` / ``{/* */}`` comments.
:func:`strip_mdx` drops that noise in three passes but never touches fenced
code: both removal passes walk the lines through one fence-aware loop,
:func:`_rewrite_outside_fences`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from retrieval_lib.ingest.syntax import closes_fence, fence_opening

__all__ = ["strip_mdx"]


# --- MDX noise --------------------------------------------------------------

_IMPORT_LINE = re.compile(r"""^import\s+(?:(?:type\s+)?[\w$*{}\s,]+?\s+from\s+)?(['"])[^'"\n]+\1\s*;?\s*$""")
_IMPORT_MULTILINE_START = re.compile(r"^import\s+(?:type\s+)?(?:[\w$]+\s*,\s*)?\{[^}]*$")
_IMPORT_MULTILINE_END = re.compile(r"""^[^'"]*\}\s*from\s+(['"])[^'"\n]+\1\s*;?\s*$""")
_EXPORT_START = re.compile(r"^export\s+(?:default\b|const\b|let\b|var\b|function\b|async\s+function\b|class\b|\{|\*)")

# One JSX/HTML tag. The name must be followed by space, "/" or ">" so that
# autolinks such as <https://example.com> are not mistaken for tags.
_ATTRS = r"""(?:"[^"]*"|'[^']*'|\{(?:[^{}]|\{[^{}]*\})*\}|[^<>"'{}])*?"""
_TAG = rf"(?:</?[A-Za-z][\w.-]*(?=[\s/>]){_ATTRS}/?>|</?>)"
_TAG_ONLY_LINES = re.compile(rf"[ \t]*(?:{_TAG}\s*)+")
_TAG_UNCLOSED_START = re.compile(r"^[ \t]*<[A-Za-z][\w.-]*(?:\s[^<>]*)?$")
_MAX_TAG_LINES = 20

# Inline code spans are matched first so comments shown as code survive.
_COMMENT_TOKENS = re.compile(
    r"(?P<code>(`+)(?:.+?)(?<!`)\2(?!`))"
    r"|(?P<comment><!--.*?-->|\{/\*.*?\*/\})"
    r"|(?P<open><!--|\{/\*)",
    re.DOTALL,
)


def _strip_comments_in(text: str) -> tuple[str, bool]:
    """Remove complete comments from ``text``; report an unclosed opener."""
    pieces: list[str] = []
    last = 0
    unclosed = False
    for match in _COMMENT_TOKENS.finditer(text):
        if match["comment"] is not None:
            pieces.append(text[last:match.start()])
            last = match.end()
        elif match["open"] is not None:
            unclosed = True
            break
    pieces.append(text[last:])
    return "".join(pieces), unclosed


def _comment_replacement(lines: list[str], start: int) -> tuple[int, list[str]] | None:
    """Lines consumed and their replacement if comments start on ``lines[start]``."""
    line = lines[start]
    if "<!--" not in line and "{/*" not in line:
        return None
    # A comment opening a line is a block comment and may span blank lines
    # (CommonMark HTML block); an inline one ends with its paragraph.
    block_level = line.lstrip().startswith(("<!--", "{/*"))
    end = start
    buffer = line
    while True:
        cleaned, unclosed = _strip_comments_in(buffer)
        if not unclosed:
            break
        if end + 1 >= len(lines):
            return None  # never closed: leave the text as it is rather than lose it
        if not block_level and not lines[end + 1].strip():
            return None
        end += 1
        buffer += "\n" + lines[end]
    if cleaned == buffer:
        return None
    return end - start + 1, cleaned.split("\n")


# What a pass does at one line outside fences: None keeps the line, else
# (how many lines it consumes, what replaces them; None marks a removed line).
_Rewrite = Callable[[int], tuple[int, list[str | None]] | None]


def _rewrite_outside_fences(lines: Sequence[str | None], rewrite: _Rewrite) -> list[str | None]:
    """Apply ``rewrite`` at every line outside fenced code; fenced lines pass unchanged.

    A line an earlier pass removed (None) passes as None and leaves the fence
    state as it is. Lines that ``rewrite`` consumes are never read as fences.
    """
    out: list[str | None] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line is None:
            out.append(None)
            i += 1
            continue
        if fence is not None:
            out.append(line)
            if closes_fence(line, fence):
                fence = None
            i += 1
            continue
        fence = fence_opening(line)
        replaced = rewrite(i) if fence is None else None
        if replaced is None:
            out.append(line)
            i += 1
            continue
        consumed, new_lines = replaced
        out.extend(new_lines)
        i += consumed
    return out


def _remove_comments(lines: list[str]) -> list[str | None]:
    """Pass 1: drop comments outside fences; None marks a line that became empty."""

    def without_comments(i: int) -> tuple[int, list[str | None]] | None:
        replaced = _comment_replacement(lines, i)
        if replaced is None:
            return None
        consumed, new_lines = replaced
        return consumed, [new if new.strip() else None for new in new_lines]

    return _rewrite_outside_fences(lines, without_comments)


def _bracket_depth(text: str) -> int:
    """Net count of opening brackets, ignoring quoted strings (roughly)."""
    unquoted = re.sub(r"""(["'`])(?:\\.|(?!\1).)*\1""", "", text)
    return sum(unquoted.count(c) for c in "([{") - sum(unquoted.count(c) for c in ")]}")


def _esm_length(lines: list[str | None], start: int) -> int:
    """How many lines an ESM statement starting at ``start`` spans (0 if none)."""
    line = lines[start]
    if line is None:
        return 0
    if _IMPORT_LINE.match(line):
        return 1
    if _IMPORT_MULTILINE_START.match(line):
        for end in range(start + 1, len(lines)):
            candidate = lines[end]
            if candidate is None or not candidate.strip():
                return 0
            if _IMPORT_MULTILINE_END.match(candidate):
                return end - start + 1
        return 0
    if _EXPORT_START.match(line):
        # MDX ends an ESM block at a blank line; brackets tell us where a
        # multi-line export stops earlier.
        depth = 0
        end = start
        while end < len(lines):
            candidate = lines[end]
            if candidate is None or not candidate.strip():
                break
            depth += _bracket_depth(candidate)
            end += 1
            if depth <= 0:
                break
        return end - start
    return 0


def _jsx_length(lines: list[str | None], start: int) -> int:
    """How many lines a run of stand-alone JSX tags at ``start`` spans (0 if none)."""
    line = lines[start]
    if line is None or "<" not in line:
        return 0
    if _TAG_ONLY_LINES.fullmatch(line):
        return 1
    if not _TAG_UNCLOSED_START.match(line):
        return 0
    # A tag whose attributes continue on the following lines.
    for end in range(start + 1, min(len(lines), start + _MAX_TAG_LINES)):
        candidate = lines[end]
        if candidate is None or not candidate.strip():
            return 0
        if _TAG_ONLY_LINES.fullmatch("\n".join(kept for kept in lines[start:end + 1] if kept is not None)):
            return end - start + 1
    return 0


def _remove_esm_and_jsx(lines: list[str | None]) -> list[str | None]:
    """Pass 2: drop ESM statements and tag-only lines outside fences."""

    def without_esm_or_jsx(i: int) -> tuple[int, list[str | None]] | None:
        consumed = _esm_length(lines, i) or _jsx_length(lines, i)
        return (consumed, [None] * consumed) if consumed else None

    return _rewrite_outside_fences(lines, without_esm_or_jsx)


def _is_blank(line: str | None) -> bool:
    """Whether ``line`` was removed (None) or holds only whitespace."""
    return line is None or not line.strip()


def _collapse_removed(lines: list[str | None]) -> list[str]:
    """Pass 3: replace each blank run that held removed lines by one blank line.

    Removed lines never occur inside a fence, so code is untouched. Runs at
    the start or end of the text vanish entirely.
    """
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line is not None and line.strip():
            out.append(line)
            i += 1
            continue
        end = i
        while end < len(lines) and _is_blank(lines[end]):
            end += 1
        run = lines[i:end]
        if None not in run:
            out.extend(blank for blank in run if blank is not None)
        elif out and end < len(lines):
            # The removed tags/comments separated blocks; keep them separated.
            out.append("")
        i = end
    return out


def strip_mdx(text: str) -> str:
    """Drop MDX-only noise from markdown while leaving fenced code untouched.

    Removes top-level ``import``/``export`` statements, JSX or HTML tags that
    stand alone on their line(s) (the text between them stays), and
    ``<!-- -->`` / ``{/* */}`` comments. Inline tags inside prose stay.

    Args:
        text: Markdown or MDX source without front matter, LF line endings.

    Returns:
        The cleaned markdown. Lines inside ``` or ~~~ fences are unchanged.
    """
    lines = text.split("\n")
    cleaned = _remove_esm_and_jsx(_remove_comments(lines))
    return "\n".join(_collapse_removed(cleaned))
