"""The pieces a chunk is built from, and how an oversized piece is cut smaller.

A :class:`Unit` is a block of a section (paragraph, list, table, admonition,
code), a heading line, or a part of a block after splitting (list item,
sentence, word, piece, table row group, code part). :func:`render` joins units
into chunk text. :func:`split_unit` cuts a unit that does not fit: a list into
its items, prose into sentences and then words, a table into row groups that
repeat the header, a fenced code block at line boundaries into parts that are
each a whole fence (opening line repeated, closing line added), a list item
holding a fence around that fence, and a single overlong word in half. A code
line is never cut. Admonitions are cut by re-packing their inside, which is the
packer's job (:mod:`retrieval_lib.ingest.packing`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from retrieval_lib.ingest.blocks import LIST_ITEM, TABLE_SEPARATOR, indent
from retrieval_lib.ingest.syntax import LIST_MARKER, closes_fence, fence_opening, with_fence_state

__all__ = ["Unit", "PROSE_KINDS", "render", "sentence_spans", "word_spans", "split_unit"]

# Units whose text can be repeated as overlap and split into sentences.
PROSE_KINDS = frozenset({"paragraph", "list", "item", "sentence", "word", "piece"})


@dataclass(frozen=True)
class Unit:
    """A piece of a chunk: a block, or part of one after splitting.

    ``joiner`` is the text placed before this unit when the previous unit in
    the chunk comes from the same block (``block``); units of different
    blocks are separated by a blank line. Headings use block -1.
    """

    kind: str
    text: str
    section: int
    block: int
    joiner: str = "\n\n"


def render(units: list[Unit]) -> str:
    """Join units into chunk text."""
    parts: list[str] = []
    previous: Unit | None = None
    for unit in units:
        if previous is not None:
            same_block = unit.block >= 0 and unit.block == previous.block
            parts.append(unit.joiner if same_block else "\n\n")
        parts.append(unit.text)
        previous = unit
    return "".join(parts)


# --- sentences, words and list items ------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]*_`]*(?=\s)")
# A line that starts a list item also starts a new "sentence" for splitting.
_LIST_LINE_START = re.compile(rf"\n(?=[ \t]*{LIST_MARKER}[ \t])")
_ABBREVIATION = re.compile(r"(?:^|\W)(?:e\.g|i\.e|vs|cf|Dr|Mr|Mrs|Ms|St|Fig|Eq|approx)\.$", re.IGNORECASE)
_WORD = re.compile(r"\S+")


def _trimmed_spans(text: str, cuts: list[int]) -> list[tuple[int, int]]:
    """Spans between ``cuts`` with surrounding whitespace excluded, empties dropped."""
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in [*cuts, len(text)]:
        piece = text[start:cut]
        left = start + len(piece) - len(piece.lstrip())
        right = start + len(piece.rstrip())
        if right > left:
            spans.append((left, right))
        start = cut
    return spans


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text``."""
    cuts = {m.start() for m in _LIST_LINE_START.finditer(text)}
    for match in _SENTENCE_END.finditer(text):
        # Short window: enough for the longest abbreviation plus one character.
        if not _ABBREVIATION.search(text[max(0, match.start() - 8): match.start() + 1]):
            cuts.add(match.end())
    return _trimmed_spans(text, sorted(cuts))


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the whitespace-separated words of ``text``."""
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def _list_item_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the top-level items of a list block."""
    lines = text.split("\n")
    base = indent(lines[0])
    cuts: list[int] = []
    offset = 0
    for number, (line, in_code) in enumerate(with_fence_state(lines)):
        if not in_code and number > 0 and LIST_ITEM.match(line) and indent(line) <= base + 1:
            cuts.append(offset)
        offset += len(line) + 1
    return _trimmed_spans(text, cuts)


def _units_from_spans(parent: Unit, kind: str, spans: list[tuple[int, int]]) -> list[Unit]:
    """Sub-units of ``parent`` keeping the original whitespace between them."""
    units: list[Unit] = []
    previous_end: int | None = None
    for start, end in spans:
        joiner = parent.joiner if previous_end is None else parent.text[previous_end:start]
        units.append(Unit(kind, parent.text[start:end], parent.section, parent.block, joiner))
        previous_end = end
    return units


# --- splitting ------------------------------------------------------------------

def split_unit(
    unit: Unit,
    *,
    fits_beside: Callable[[Unit], bool],
    fits_fresh: Callable[[Unit], bool],
) -> list[Unit] | None:
    """Smaller units that together make ``unit``, or None if it cannot be split.

    Admonitions are not handled here (the packer re-packs their inside).

    Args:
        unit: The unit that does not fit.
        fits_beside: Whether a unit fits after what the current chunk holds.
        fits_fresh: Whether a unit fits in a new chunk holding only its heading.

    Returns:
        The parts in order, or None for headings, overlap, code of one line (or
        whose first line fits only a fresh chunk), a table that cannot be cut
        into two row groups, and a word that fits a fresh chunk.
    """
    kind, text = unit.kind, unit.text
    if kind in ("heading", "overlap", "admonition"):
        return None
    if kind == "code":
        return split_code(unit, fits_beside=fits_beside, fits_fresh=fits_fresh)
    if kind == "table":
        return _split_table(unit, fits_beside)
    if kind == "list":
        items = _list_item_spans(text)
        if len(items) > 1:
            return _units_from_spans(unit, "item", items)
        kind = "item"
    if kind == "item" and any(fence_opening(line) for line in text.split("\n")):
        # Cut around the nested fence; the fence itself is then cut only at line boundaries.
        return _split_around_fences(unit)
    if kind in ("paragraph", "item"):
        sentences = sentence_spans(text)
        if len(sentences) > 1:
            return _units_from_spans(unit, "sentence", sentences)
    if kind in ("paragraph", "item", "sentence"):
        words = word_spans(text)
        if len(words) > 1:
            return _units_from_spans(unit, "word", words)
    if len(text) > 1 and not fits_fresh(unit):
        # A single "word" longer than a chunk (a huge URL): cut it in half.
        # A word that would fit a fresh chunk stays whole: then it is the
        # headings carried in front of it that fill this one.
        middle = len(text) // 2
        return [
            Unit("piece", text[:middle], unit.section, unit.block, unit.joiner),
            Unit("piece", text[middle:], unit.section, unit.block, ""),
        ]
    return None


def _split_table(unit: Unit, fits_beside: Callable[[Unit], bool]) -> list[Unit] | None:
    """Row groups that each fit, every one repeating the header rows."""
    lines = unit.text.split("\n")
    header_size = 2 if len(lines) > 1 and TABLE_SEPARATOR.match(lines[1]) else 1
    header, rows = lines[:header_size], lines[header_size:]
    if len(rows) < 2:
        return None
    groups: list[list[str]] = []
    current: list[str] = []
    for row in rows:
        candidate = Unit("table", "\n".join([*header, *current, row]), unit.section, unit.block)
        if current and not fits_beside(candidate):
            groups.append(current)
            current = []
        current.append(row)
    groups.append(current)
    if len(groups) < 2:
        return None
    return [Unit("table", "\n".join([*header, *group]), unit.section, unit.block) for group in groups]


# --- code -------------------------------------------------------------------------

def _fence_parts(unit: Unit) -> tuple[str, list[str], str | None, str]:
    """(opening line, inner lines, closing line or None, closing line for a part) of a code unit."""
    lines = unit.text.split("\n")
    opener = lines[0]
    fence = fence_opening(opener) or "```"
    closer = lines[-1] if len(lines) > 1 and closes_fence(lines[-1], fence) else None
    inner = lines[1:-1] if closer is not None else lines[1:]
    made = opener[: len(opener) - len(opener.lstrip(" \t"))] + fence
    return opener, inner, closer, made


def split_code(
    unit: Unit,
    *,
    fits_beside: Callable[[Unit], bool],
    fits_fresh: Callable[[Unit], bool],
) -> list[Unit] | None:
    """A fenced code block cut at a line boundary into a first part that fits and the rest.

    Each part is a whole fence: the opening line (with its info string) is
    repeated and a closing fence is added, so every part renders as code; no
    line is ever cut. The first part holds as many lines as fit after what
    the current chunk holds; the rest is one unit, cut again if it is still
    too big.

    Returns:
        ``[first, rest]``, or None when the block has fewer than two lines
        inside, or when not even one line fits beside the current chunk but
        one would fit a fresh chunk (the caller starts a new chunk and asks again).
    """
    opener, inner, closer, made = _fence_parts(unit)
    if len(inner) < 2:
        return None

    def part(lines: list[str], last: bool) -> Unit:
        end = (closer if last else made)
        text = "\n".join([opener, *lines] + ([end] if end is not None else []))
        return Unit("code", text, unit.section, unit.block, unit.joiner)

    low, high = 0, len(inner) - 1  # the largest k < len(inner) with part(inner[:k]) fitting
    while low < high:
        middle = (low + high + 1) // 2
        if fits_beside(part(inner[:middle], False)):
            low = middle
        else:
            high = middle - 1
    taken = low
    if taken == 0:
        if fits_fresh(part(inner[:1], False)):
            return None
        taken = 1  # one line too long for any chunk: it goes alone, over the limit, never cut
    return [part(inner[:taken], False), Unit("code", "\n".join([opener, *inner[taken:]] + ([closer] if closer
                                                                                              else [])),
                                                unit.section, unit.block, "\n\n")]


def _split_around_fences(unit: Unit) -> list[Unit] | None:
    """A list item holding a fence, cut into its text runs and its fences (kept as code units).

    The blank lines between runs become the joiners, so the parts render back to the item exactly.
    """
    runs: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line, in_code in with_fence_state(unit.text.split("\n")):
        opens = in_code and fence is None
        if opens:
            fence = fence_opening(line)
        elif in_code and fence is not None and closes_fence(line, fence):
            fence = None
            runs[-1][1].append(line)
            continue
        if opens or (not in_code and (not runs or runs[-1][0] == "code")):
            runs.append(("code" if opens else "item", [line]))
        else:
            runs[-1][1].append(line)
    units: list[Unit] = []
    blank = 0  # blank lines carried from the end of the previous run
    for kind, lines in runs:
        while kind == "item" and lines and not lines[0].strip():
            blank += 1
            lines = lines[1:]
        trailing = 0
        while kind == "item" and lines and not lines[-1].strip():
            trailing += 1
            lines = lines[:-1]
        if lines:
            joiner = unit.joiner if not units else "\n" * (blank + 1)
            units.append(Unit(kind, "\n".join(lines), unit.section, unit.block, joiner))
            blank = 0
        blank += trailing
    if len(units) == 1 and units[0].kind == "code":
        return units  # an item that is nothing but a fence: cut as code
    return units if len(units) > 1 else None
