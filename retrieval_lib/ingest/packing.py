"""Greedy packing of units into chunks, with the overlap between them.

Owns where chunk boundaries go: a unit joins the current chunk while the
rendered chunk stays within ``max_tokens``; otherwise the chunk is emitted and
the next one starts with its section's heading line (labelled "(continued)")
and up to ``overlap_tokens`` of the previous chunk's trailing sentences (never
after code). A unit too big even for a fresh chunk is cut by
:func:`retrieval_lib.ingest.units.split_unit` (or, for an admonition, by
packing its inside into parts here).

Fragments: a chunk under ``min_tokens`` (a lead-in sentence, a heading with a
line under it) is not emitted alone when it can be helped. The next block
joins it even past ``max_tokens`` while the chunk stays within ``limit`` (the
model's window); otherwise the next block is cut so its first part fills the
chunk; and a fragment left at the end of a section is folded into the
section's previous chunk when the two fit ``limit`` together.
"""

from __future__ import annotations

from collections.abc import Callable

from retrieval_lib.ingest.blocks import ADMONITION_CLOSE, parse_blocks
from retrieval_lib.ingest.units import PROSE_KINDS, Unit, render, sentence_spans, split_code, split_unit, word_spans

__all__ = ["Packer"]

# Below this many tokens of room, splitting an admonition's inside is pointless.
_MIN_ADMONITION_ROOM = 5
# Blocks too big for a fresh chunk that are cut at once, so their first part fills the current chunk.
_FILL_KINDS = PROSE_KINDS | {"code"}


class Packer:
    """Greedy packer of units into chunks of at most ``max_tokens``.

    Sections are fed in order; :meth:`finish` closes the current chunk at a
    section boundary. ``headings`` maps a section index to its heading unit;
    ``continued`` (default: ``headings``) to the heading unit that starts
    every continuation chunk of that section. ``limit`` (default and at least
    ``max_tokens``) is the hard ceiling a fragment may grow to; ``min_tokens``
    (0: off) the size under which a chunk is a fragment. The result is
    :attr:`chunks`: (text, section index of its last content unit) pairs.
    """

    def __init__(
        self,
        max_tokens: int,
        overlap_tokens: int,
        count_tokens: Callable[[str], int],
        headings: dict[int, Unit],
        *,
        limit: int | None = None,
        min_tokens: int = 0,
        continued: dict[int, Unit] | None = None,
    ) -> None:
        self._max = max_tokens
        self._limit = max(limit or max_tokens, max_tokens)
        self._min = min_tokens
        self._overlap_max = overlap_tokens
        self._count = count_tokens
        self._headings = headings
        self._continued = headings if continued is None else continued
        self._units: list[Unit] = []
        # The units of the last emitted chunk, so a fragment can be folded into it.
        self._last_emitted: list[Unit] = []
        # The overlap currently at the chunk's start, as (joiner, sentence)
        # pairs so it can be shortened from the front, and the (section,
        # block) it was taken from.
        self._overlap: list[tuple[str, str]] = []
        self._overlap_origin: tuple[int, int] = (0, -1)
        self.chunks: list[tuple[str, int]] = []

    # public to the package --------------------------------------------------

    def add(self, unit: Unit) -> None:
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

    def _fits(self, units: list[Unit], limit: int | None = None) -> bool:
        return self._count(render(units)) <= (self._max if limit is None else limit)

    def _fits_beside(self, unit: Unit) -> bool:
        """Whether ``unit`` fits after what the current chunk holds."""
        return self._fits([*self._units, unit])

    def _fits_fresh(self, unit: Unit) -> bool:
        """Whether ``unit`` fits in a new chunk holding only its (continuation) heading line."""
        heading = self._continued.get(unit.section)
        return self._fits([heading, unit] if heading is not None else [unit])

    def _has_content(self) -> bool:
        return any(u.kind not in ("heading", "overlap") for u in self._units)

    def _is_fragment(self, units: list[Unit]) -> bool:
        return self._count(render(units)) < self._min

    def _place(self, unit: Unit) -> list[Unit] | None:
        """Put ``unit`` in the chunk, or return the pieces to place instead."""
        if self._fits_beside(unit):
            self._units.append(unit)
            return None
        if self._has_content():
            if unit.kind != "heading" and self._is_fragment(self._units):
                # A fragment takes the next block whole while the model still reads all of it,
                # else the block's first part: a lead-in never ends up alone.
                if self._fits([*self._units, unit], self._limit):
                    self._units.append(unit)
                    return None
                pieces = self._split(unit)
                if pieces:
                    return pieces
            # Prose or code too big even for a fresh chunk is split now, so its
            # first part fills this chunk instead of leaving it half empty.
            elif unit.kind in _FILL_KINDS and not self._fits_fresh(unit):
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
        if self._overlap:
            # The block is cut against a chunk without overlap rather than kept whole past the limit.
            self._set_overlap([])
            if self._fits_beside(unit):
                self._units.append(unit)
                return None
            pieces = self._split(unit)
            if pieces:
                return pieces
        if unit.kind == "code":
            # Headings carried from sections merged forward leave no room for one line under max_tokens, and they
            # cannot be emitted alone: the fence's first line goes with them (over max_tokens, within the limit
            # unless that line alone passes it), and the rest follows in chunks of their own.
            pieces = split_code(unit, fits_beside=self._fits_beside, fits_fresh=lambda part: False)
            if pieces:
                first, *rest = pieces
                self._units.append(first)
                return rest
        # Unsplittable and too big (a code line, a table row longer than a chunk): alone, over the limit.
        self._units.append(unit)
        return None

    def _shrink_overlap_for(self, unit: Unit) -> bool:
        """Drop overlap sentences from the front until ``unit`` fits; restore if never."""
        if not self._overlap:
            return False
        saved = list(self._overlap)
        while self._overlap:
            self._set_overlap(self._overlap[1:])
            if self._fits_beside(unit):
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
            self._units.insert(position, Unit("overlap", text, section, block))

    # flushing and overlap ---------------------------------------------------

    def _emit(self, units: list[Unit]) -> None:
        content = [u for u in units if u.kind not in ("heading", "overlap")]
        if not content:
            return
        if self._is_fragment(units) and self.chunks and self._last_emitted:
            # A fragment at the end of a section goes back into the section's previous chunk if both fit.
            section = self.chunks[-1][1]
            merged = [*self._last_emitted, *content]
            if all(u.section == section for u in content) and self._fits(merged, self._limit):
                self.chunks[-1] = (render(merged).rstrip(), section)
                self._last_emitted = merged
                return
        self.chunks.append((render(units).rstrip(), content[-1].section))
        self._last_emitted = list(units)

    def _flush(self, next_unit: Unit) -> None:
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
        heading = self._continued.get(next_unit.section)
        if heading is not None:
            self._units.append(heading)
        block, segments = self._overlap_from(emitted, next_unit.section)
        if segments:
            self._overlap_origin = (next_unit.section, block)
            self._set_overlap(segments)

    def _overlap_from(self, units: list[Unit], section: int) -> tuple[int, list[tuple[str, str]]]:
        """The trailing sentences of the last prose in ``units`` worth <= overlap_tokens.

        Returns the source block and (joiner, sentence) pairs; no pairs when
        there is no prose of ``section``, overlap is off, or the last sentence
        alone is too long. When the chunk ended mid-sentence (a sentence split
        at words) it has no whole sentence at its end, so trailing words are
        used instead.
        """
        content = [u for u in units if u.kind not in ("heading", "overlap")]
        if self._overlap_max <= 0 or (content and content[-1].kind == "code"):
            return -1, []  # after code, the next chunk starts with the code's continuation, not old prose
        last = next(
            (i for i in range(len(units) - 1, -1, -1) if units[i].section == section and units[i].kind in PROSE_KINDS),
            None,
        )
        if last is None:
            return -1, []
        block = units[last].block
        first = last
        while first > 0 and units[first - 1].block == block and units[first - 1].kind in (PROSE_KINDS | {"overlap"}):
            first -= 1
        tail = render(units[first: last + 1])
        candidates = [sentence_spans(tail)]
        if units[last].kind in ("word", "piece"):
            candidates.append(word_spans(tail))
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

    def _split(self, unit: Unit) -> list[Unit] | None:
        """Smaller units that together make ``unit``, or None if it cannot be split."""
        if unit.kind == "admonition":
            return self._split_admonition(unit)
        return split_unit(unit, fits_beside=self._fits_beside, fits_fresh=self._fits_fresh)

    def _split_admonition(self, unit: Unit) -> list[Unit] | None:
        """Parts of an admonition, each wrapped in the original ``:::`` lines."""
        lines = unit.text.split("\n")
        opener = lines[0]
        closer = lines[-1] if len(lines) > 1 and ADMONITION_CLOSE.match(lines[-1]) else None
        inner = lines[1:-1] if closer is not None else lines[1:]
        wrapper = Unit("admonition", f"{opener}\n{closer or ''}", unit.section, unit.block)
        room = self._max - self._count(render([*self._units, wrapper]))
        if room < _MIN_ADMONITION_ROOM:
            return None
        inner_packer = Packer(room, 0, self._count, {})
        for number, (kind, text) in enumerate(parse_blocks(inner)):
            inner_packer.add(Unit(kind, text, 0, number))
        inner_packer.finish()
        if len(inner_packer.chunks) < 2:
            return None
        suffix = f"\n{closer}" if closer is not None else ""
        return [
            Unit("admonition", f"{opener}\n{text}{suffix}", unit.section, unit.block)
            for text, _ in inner_packer.chunks
        ]
