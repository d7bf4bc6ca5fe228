"""Heading-aware token-window chunking of a markdown body.

A chunk is what the retriever returns, so each one should stand on its own:
it starts with its section's heading line, never mixes two real sections,
keeps code fences, tables and admonitions whole where it can, and repeats a
little prose from the previous chunk of the same section (the overlap) so a
sentence cut at a boundary is still found with its context.

How it works: the body is cut into sections at ATX headings and each section
into blocks (paragraph, list, table, admonition, fenced code). Blocks are
packed greedily into chunks of at most ``max_tokens``. A block that does not
fit even in an empty chunk is split into smaller units (list -> items,
paragraph -> sentences -> words, table -> row groups with the header
repeated, admonition -> parts wrapped in their own ``:::`` fences); code is
never split and may exceed the limit on its own.

This module owns the packing; cutting the body into sections and blocks
lives in :mod:`retrieval_lib.ingest.blocks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .blocks import (
    ADMONITION_CLOSE,
    LIST_ITEM,
    TABLE_SEPARATOR,
    indent,
    parse_blocks,
    split_sections,
)
from .syntax import closes_fence, fence_opening

__all__ = ["Chunk", "default_count_tokens", "chunk_markdown"]


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document.

    Attributes:
        text: The chunk's markdown, starting with its heading line; never
            empty or whitespace-only.
        section_title: The heading of the section the chunk belongs to (the
            document title for text under the H1 or before any heading).
        heading_path: Headings from H2 down to the chunk's section, e.g.
            ``("Installing ROS 2", "Adding the apt repository")``.
        token_count: ``count_tokens(text)``.
        sequence: 0-based position within the document.
    """

    text: str
    section_title: str
    heading_path: tuple[str, ...]
    token_count: int
    sequence: int


_TOKEN = re.compile(r"\w+|[^\w\s]")


def default_count_tokens(text: str) -> int:
    """Approximate the token count of ``text``.

    Args:
        text: Any text.

    Returns:
        The number of word runs plus punctuation marks; close enough to a
        subword tokenizer for sizing chunks without loading one.
    """
    return len(_TOKEN.findall(text))


# A section with less own text than this is folded into the next one, so a
# heading followed straight by a subheading never becomes a chunk by itself.
_TINY_SECTION_TOKENS = 25
_MIN_MAX_TOKENS = 20
# Below this many tokens of room, splitting an admonition's inside is pointless.
_MIN_ADMONITION_ROOM = 5


# --- sentences and words ----------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]*_`]*(?=\s)")
# A line that starts a list item also starts a new "sentence" for splitting.
_LIST_LINE_START = re.compile(r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t])")
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


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text``."""
    cuts = {m.start() for m in _LIST_LINE_START.finditer(text)}
    for match in _SENTENCE_END.finditer(text):
        # Short window: enough for the longest abbreviation plus one character.
        if not _ABBREVIATION.search(text[max(0, match.start() - 8): match.start() + 1]):
            cuts.add(match.end())
    return _trimmed_spans(text, sorted(cuts))


def _word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the whitespace-separated words of ``text``."""
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


# --- packing ----------------------------------------------------------------

# Units whose text can be repeated as overlap and split into sentences.
_PROSE_KINDS = frozenset({"paragraph", "list", "item", "sentence", "word", "piece"})


@dataclass(frozen=True)
class _Unit:
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


def _render(units: list[_Unit]) -> str:
    """Join units into chunk text."""
    parts: list[str] = []
    previous: _Unit | None = None
    for unit in units:
        if previous is not None:
            same_block = unit.block >= 0 and unit.block == previous.block
            parts.append(unit.joiner if same_block else "\n\n")
        parts.append(unit.text)
        previous = unit
    return "".join(parts)


def _units_from_spans(parent: _Unit, kind: str, spans: list[tuple[int, int]]) -> list[_Unit]:
    """Sub-units of ``parent`` keeping the original whitespace between them."""
    units: list[_Unit] = []
    previous_end: int | None = None
    for start, end in spans:
        joiner = parent.joiner if previous_end is None else parent.text[previous_end:start]
        units.append(_Unit(kind, parent.text[start:end], parent.section, parent.block, joiner))
        previous_end = end
    return units


def _list_item_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the top-level items of a list block."""
    lines = text.split("\n")
    base = indent(lines[0])
    cuts: list[int] = []
    offset = 0
    fence: str | None = None
    for number, line in enumerate(lines):
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
        elif (opened := fence_opening(line)) is not None:
            fence = opened
        elif number > 0 and LIST_ITEM.match(line) and indent(line) <= base + 1:
            cuts.append(offset)
        offset += len(line) + 1
    return _trimmed_spans(text, cuts)


class _Packer:
    """Greedy packer of units into chunks of at most ``max_tokens``.

    Sections are fed in order; :meth:`finish` closes the current chunk at a
    section boundary. ``headings`` maps a section index to its heading unit,
    which starts every continuation chunk of that section.
    """

    def __init__(
        self,
        max_tokens: int,
        overlap_tokens: int,
        count_tokens: Callable[[str], int],
        headings: dict[int, _Unit],
    ) -> None:
        self._max = max_tokens
        self._overlap_max = overlap_tokens
        self._count = count_tokens
        self._headings = headings
        self._units: list[_Unit] = []
        # The overlap currently at the chunk's start, as (joiner, sentence)
        # pairs so it can be shortened from the front, and the (section,
        # block) it was taken from.
        self._overlap: list[tuple[str, str]] = []
        self._overlap_origin: tuple[int, int] = (0, -1)
        self.chunks: list[tuple[str, int]] = []

    # public to the module -------------------------------------------------

    def add(self, unit: _Unit) -> None:
        """Place ``unit``, splitting it (and its pieces) where needed."""
        pending = [unit]
        while pending:
            pieces = self._place(pending.pop())
            if pieces:
                pending.extend(reversed(pieces))

    def finish(self) -> None:
        """Close the current chunk (a section boundary)."""
        self._emit(self._units)
        self._units = []
        self._overlap = []

    # placement ------------------------------------------------------------

    def _fits(self, units: list[_Unit]) -> bool:
        return self._count(_render(units)) <= self._max

    def _fits_fresh(self, unit: _Unit) -> bool:
        """Whether ``unit`` fits in a new chunk holding only its heading line."""
        heading = self._headings.get(unit.section)
        return self._fits([heading, unit] if heading is not None else [unit])

    def _has_content(self) -> bool:
        return any(u.kind not in ("heading", "overlap") for u in self._units)

    def _place(self, unit: _Unit) -> list[_Unit] | None:
        """Put ``unit`` in the chunk, or return the pieces to place instead."""
        if self._fits([*self._units, unit]):
            self._units.append(unit)
            return None
        if self._has_content():
            # Prose too big even for a fresh chunk is split now, so its first
            # sentences fill this chunk instead of leaving it half empty.
            if unit.kind in _PROSE_KINDS and not self._fits_fresh(unit):
                pieces = self._split(unit)
                if pieces:
                    return pieces
            self._flush(next_unit=unit)
            return [unit]
        # Only headings and overlap so far. A whole block beats overlap, so
        # shorten the overlap before resorting to splitting the block.
        if self._shrink_overlap_for(unit):
            self._units.append(unit)
            return None
        pieces = self._split(unit)
        if pieces:
            return pieces
        # Unsplittable and too big (a long code block): alone, over the limit.
        self._set_overlap([])
        self._units.append(unit)
        return None

    def _shrink_overlap_for(self, unit: _Unit) -> bool:
        """Drop overlap sentences from the front until ``unit`` fits; restore if never."""
        if not self._overlap:
            return False
        saved = list(self._overlap)
        while self._overlap:
            self._set_overlap(self._overlap[1:])
            if self._fits([*self._units, unit]):
                return True
        self._set_overlap(saved)
        return False

    def _set_overlap(self, segments: list[tuple[str, str]]) -> None:
        """Make the overlap unit match ``segments``: rewrite, remove or put it back."""
        self._overlap = segments
        position = next((i for i, u in enumerate(self._units) if u.kind == "overlap"), None)
        if position is not None:
            del self._units[position]
        else:
            # Only called on a chunk without content yet: the overlap goes
            # right after the heading line(s).
            position = len(self._units)
        if segments:
            section, block = self._overlap_origin
            text = segments[0][1] + "".join(joiner + sentence for joiner, sentence in segments[1:])
            self._units.insert(position, _Unit("overlap", text, section, block))

    # flushing and overlap ---------------------------------------------------

    def _emit(self, units: list[_Unit]) -> None:
        content = [u for u in units if u.kind not in ("heading", "overlap")]
        if not content:
            return
        text = _render(units).rstrip()
        self.chunks.append((text, content[-1].section))

    def _flush(self, next_unit: _Unit) -> None:
        """Emit the chunk and start the next one for ``next_unit``'s section."""
        cut = len(self._units)
        while cut > 0 and self._units[cut - 1].kind == "heading":
            cut -= 1
        # Headings at the very end belong to what comes next, not to this chunk.
        emitted, carried = self._units[:cut], self._units[cut:]
        self._emit(emitted)
        self._units = list(carried)
        self._overlap = []
        if carried or next_unit.kind == "heading":
            return  # a new section starts: no repeated heading, no overlap
        heading = self._headings.get(next_unit.section)
        if heading is not None:
            self._units.append(heading)
        block, segments = self._overlap_from(emitted, next_unit.section)
        if segments:
            self._overlap_origin = (next_unit.section, block)
            self._set_overlap(segments)

    def _overlap_from(self, units: list[_Unit], section: int) -> tuple[int, list[tuple[str, str]]]:
        """The trailing sentences of the last prose in ``units`` worth <= overlap_tokens.

        Returns the source block and (joiner, sentence) pairs; no pairs when
        there is no prose of ``section``, overlap is off, or the last sentence
        alone is too long. When the chunk ended mid-sentence (a sentence split
        at words) it has no whole sentence at its end, so trailing words are
        used instead.
        """
        if self._overlap_max <= 0:
            return -1, []
        last = next(
            (i for i in range(len(units) - 1, -1, -1) if units[i].section == section and units[i].kind in _PROSE_KINDS),
            None,
        )
        if last is None:
            return -1, []
        block = units[last].block
        first = last
        while first > 0 and units[first - 1].block == block and units[first - 1].kind in (_PROSE_KINDS | {"overlap"}):
            first -= 1
        tail = _render(units[first: last + 1])
        candidates = [_sentence_spans(tail)]
        if units[last].kind in ("word", "piece"):
            candidates.append(_word_spans(tail))
        for spans in candidates:
            taken = 0
            while taken < len(spans) and self._count(tail[spans[-taken - 1][0]: spans[-1][1]]) <= self._overlap_max:
                taken += 1
            if taken:
                chosen = spans[-taken:]
                pairs = [("", tail[chosen[0][0]: chosen[0][1]])]
                pairs += [(tail[before[1]: start], tail[start:end]) for before, (start, end) in zip(chosen, chosen[1:])]
                return block, pairs
        return block, []

    # splitting ----------------------------------------------------------------

    def _split(self, unit: _Unit) -> list[_Unit] | None:
        """Smaller units that together make ``unit``, or None if it cannot be split."""
        kind, text = unit.kind, unit.text
        if kind in ("code", "heading", "overlap"):
            return None
        if kind == "table":
            return self._split_table(unit)
        if kind == "admonition":
            return self._split_admonition(unit)
        if kind == "list":
            items = _list_item_spans(text)
            if len(items) > 1:
                return _units_from_spans(unit, "item", items)
            kind = "item"
        if kind == "item" and any(fence_opening(line) for line in text.split("\n")):
            return None  # never cut inside a fence, even one nested in a list
        if kind in ("paragraph", "item"):
            sentences = _sentence_spans(text)
            if len(sentences) > 1:
                return _units_from_spans(unit, "sentence", sentences)
        if kind in ("paragraph", "item", "sentence"):
            words = _word_spans(text)
            if len(words) > 1:
                return _units_from_spans(unit, "word", words)
        if len(text) > 1 and not self._fits_fresh(unit):
            # A single "word" longer than a chunk (a huge URL): cut it in half.
            # A word that would fit a fresh chunk stays whole: then it is the
            # headings carried in front of it that fill this one.
            middle = len(text) // 2
            return [
                _Unit("piece", text[:middle], unit.section, unit.block, unit.joiner),
                _Unit("piece", text[middle:], unit.section, unit.block, ""),
            ]
        return None

    def _split_table(self, unit: _Unit) -> list[_Unit] | None:
        """Row groups that each fit, every one repeating the header rows."""
        lines = unit.text.split("\n")
        header_size = 2 if len(lines) > 1 and TABLE_SEPARATOR.match(lines[1]) else 1
        header, rows = lines[:header_size], lines[header_size:]
        if len(rows) < 2:
            return None
        groups: list[list[str]] = []
        current: list[str] = []
        for row in rows:
            candidate = _Unit("table", "\n".join([*header, *current, row]), unit.section, unit.block)
            if current and not self._fits([*self._units, candidate]):
                groups.append(current)
                current = []
            current.append(row)
        groups.append(current)
        if len(groups) < 2:
            return None
        return [_Unit("table", "\n".join([*header, *group]), unit.section, unit.block) for group in groups]

    def _split_admonition(self, unit: _Unit) -> list[_Unit] | None:
        """Parts of an admonition, each wrapped in the original ``:::`` lines."""
        lines = unit.text.split("\n")
        opener = lines[0]
        closer = lines[-1] if len(lines) > 1 and ADMONITION_CLOSE.match(lines[-1]) else None
        inner = lines[1:-1] if closer is not None else lines[1:]
        wrapper = _Unit("admonition", f"{opener}\n{closer or ''}", unit.section, unit.block)
        room = self._max - self._count(_render([*self._units, wrapper]))
        if room < _MIN_ADMONITION_ROOM:
            return None
        inner_packer = _Packer(room, 0, self._count, {})
        for number, (kind, text) in enumerate(parse_blocks(inner)):
            inner_packer.add(_Unit(kind, text, 0, number))
        inner_packer.finish()
        if len(inner_packer.chunks) < 2:
            return None
        suffix = f"\n{closer}" if closer is not None else ""
        return [
            _Unit("admonition", f"{opener}\n{text}{suffix}", unit.section, unit.block)
            for text, _ in inner_packer.chunks
        ]


# --- entry point ------------------------------------------------------------


def _check_sizes(max_tokens: int, overlap_tokens: int) -> None:
    """Raise if the window sizes are unusable."""
    for name, value in (("max_tokens", max_tokens), ("overlap_tokens", overlap_tokens)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if max_tokens < _MIN_MAX_TOKENS:
        raise ValueError(f"max_tokens must be >= {_MIN_MAX_TOKENS}, got {max_tokens}")
    if overlap_tokens < 0:
        raise ValueError(f"overlap_tokens must be >= 0, got {overlap_tokens}")
    if overlap_tokens >= max_tokens:
        raise ValueError(f"overlap_tokens ({overlap_tokens}) must be smaller than max_tokens ({max_tokens})")


def chunk_markdown(
    body: str,
    *,
    title: str,
    max_tokens: int = 200,
    overlap_tokens: int = 40,
    count_tokens: Callable[[str], int] = default_count_tokens,
) -> list[Chunk]:
    """Split a markdown body into heading-aware chunks of at most ``max_tokens``.

    Each chunk starts with its section's heading line and holds blocks of
    that one section. A section with under 25 tokens of its own text (say a
    heading followed straight by a subheading) is carried into the next
    section's first chunk. Continuation chunks of a section start with up to
    ``overlap_tokens`` of whole trailing sentences of the previous chunk's
    prose. A chunk exceeds the limit only around something that cannot be
    cut: a code block (never cut), one table row with its header, an
    admonition with no room to split, or heading lines that fill the window
    by themselves.

    Args:
        body: Markdown without front matter.
        title: The document title, used as ``section_title`` for text under
            the H1 or before any heading.
        max_tokens: Largest chunk size, heading line included; >= 20.
        overlap_tokens: Largest overlap; >= 0 and < ``max_tokens``.
        count_tokens: Token counter used for every size decision.

    Returns:
        Chunks in document order; empty when the body has no text.

    Raises:
        ValueError: ``max_tokens`` < 20, ``overlap_tokens`` < 0 or
            ``overlap_tokens`` >= ``max_tokens``.
        TypeError: A size is not an int.
    """
    _check_sizes(max_tokens, overlap_tokens)
    sections = split_sections(body.replace("\r\n", "\n").replace("\r", "\n"), title)

    headings: dict[int, _Unit] = {}
    section_units: list[list[_Unit]] = []
    next_block = 0
    for index, section in enumerate(sections):
        if section.heading is not None:
            headings[index] = _Unit("heading", section.heading, index, -1)
        units: list[_Unit] = []
        for kind, text in parse_blocks(section.lines):
            units.append(_Unit(kind, text, index, next_block))
            next_block += 1
        section_units.append(units)

    # Whether any later section has text: only then can a tiny one merge forward.
    text_after = [False] * len(sections)
    seen_text = False
    for index in range(len(sections) - 1, -1, -1):
        text_after[index] = seen_text
        seen_text = seen_text or bool(section_units[index])

    packer = _Packer(max_tokens, overlap_tokens, count_tokens, headings)
    for index, units in enumerate(section_units):
        if index in headings:
            packer.add(headings[index])
        for unit in units:
            packer.add(unit)
        own_tokens = count_tokens(_render(units)) if units else 0
        if own_tokens < _TINY_SECTION_TOKENS and text_after[index]:
            continue  # merged forward: the next section's first chunk carries it
        packer.finish()
    packer.finish()

    return [
        Chunk(
            text=text,
            section_title=sections[section].title,
            heading_path=sections[section].path,
            token_count=count_tokens(text),
            sequence=sequence,
        )
        for sequence, (text, section) in enumerate(packer.chunks)
    ]
