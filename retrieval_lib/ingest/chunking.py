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
repeated, admonition -> parts wrapped in their own ``:::`` fences, code ->
runs of whole lines, each part a complete fence). Continuation chunks of a
section start with its heading line labelled "(continued)".

Sizes are counted with ``count_tokens``; ingest passes the embedder's own
counter (MiniLM's wordpiece tokenizer, offline). With ``window_tokens`` (the
model's input window, title line included, special tokens excluded) no chunk
is longer than the window minus the title line that ingest embeds with it, so
the model reads every chunk whole. The only exceptions are things that cannot
be cut: one code line, one table row or a run of heading lines longer than the
window by themselves. Fragments (chunks under ``min_tokens``) are avoided where
the text allows: a lead-in joins the block it introduces (past ``max_tokens``
if need be, never past the window), and a short tail folds back into its
section's previous chunk.

This module is the entry point (the :class:`Chunk`, the argument checks); the
rest is in the modules :mod:`retrieval_lib.ingest` lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval_lib.embedding.base import SPECIAL_TOKENS
from retrieval_lib.errors import ValidationError
from retrieval_lib.ingest.blocks import parse_blocks, split_sections
from retrieval_lib.ingest.packing import Packer
from retrieval_lib.ingest.syntax import atx_heading, normalize_newlines
from retrieval_lib.ingest.units import Unit, render
from retrieval_lib.validation import whole_number

if TYPE_CHECKING:
    from retrieval_lib.embedding.providers import Embedder

__all__ = ["Chunk", "CHUNKER_VERSION", "SPECIAL_TOKENS", "default_count_tokens", "chunk_markdown", "model_window"]

#: Part of every file hash: a new version re-chunks (and re-embeds) every file on the next ingest.
CHUNKER_VERSION = "3"


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
    """About the tokens of ``text``: its word runs plus punctuation marks (enough to size chunks, no tokenizer)."""
    return len(_TOKEN.findall(text))


# A section with less own text than this is folded into the next one, so a
# heading followed straight by a subheading never becomes a chunk by itself.
_TINY_SECTION_TOKENS = 25
_MIN_MAX_TOKENS = 20
#: A chunk under this many tokens (heading line included) is a fragment, avoided where the text allows.
DEFAULT_MIN_TOKENS = 40


def model_window(embedder: Embedder) -> int:
    """Tokens of text an embedder reads per input: its ``max_tokens`` minus :data:`SPECIAL_TOKENS`."""
    return int(embedder.max_tokens) - SPECIAL_TOKENS


# --- entry point ------------------------------------------------------------


def _check_sizes(max_tokens: int, overlap_tokens: int, window_tokens: int | None, min_tokens: int) -> None:
    """Raise if the window sizes are unusable."""
    whole_number(max_tokens, "max_tokens", low=_MIN_MAX_TOKENS)
    whole_number(overlap_tokens, "overlap_tokens")
    whole_number(min_tokens, "min_tokens")
    if window_tokens is not None:
        whole_number(window_tokens, "window_tokens", low=2 * _MIN_MAX_TOKENS)
    if overlap_tokens >= max_tokens:
        raise ValidationError(f"overlap_tokens ({overlap_tokens}) must be smaller than max_tokens ({max_tokens})",
                              field="overlap_tokens")


def _continued(heading: str) -> str:
    """The heading line that starts a continuation chunk: ``## Title (continued)``."""
    hashes = heading.lstrip()[: len(heading.lstrip()) - len(heading.lstrip().lstrip("#"))]
    parsed = atx_heading(heading)
    return f"{hashes} {parsed[1]} (continued)" if parsed else heading


def chunk_markdown(
    body: str,
    *,
    title: str,
    max_tokens: int = 200,
    overlap_tokens: int = 40,
    count_tokens: Callable[[str], int] = default_count_tokens,
    window_tokens: int | None = None,
    min_tokens: int = DEFAULT_MIN_TOKENS,
) -> list[Chunk]:
    """Split a markdown body into heading-aware chunks of at most ``max_tokens``.

    Each chunk starts with its section's heading line and holds blocks of
    that one section. A section with under 25 tokens of its own text (say a
    heading followed straight by a subheading) is carried into the next
    section's first chunk. Continuation chunks of a section start with up to
    ``overlap_tokens`` of whole trailing sentences of the previous chunk's
    prose. A chunk exceeds the limit only around something that cannot be
    cut: one code line (code is cut only between lines), one table row with
    its header, an admonition with no room to split, or heading lines that
    fill the window by themselves.

    Args:
        body: Markdown without front matter.
        title: The document title, used as ``section_title`` for text under
            the H1 or before any heading.
        max_tokens: Largest chunk size, heading line included; >= 20.
        overlap_tokens: Largest overlap; >= 0 and < ``max_tokens``.
        count_tokens: Token counter used for every size decision.
        window_tokens: The model's input window in ``count_tokens`` units
            (special tokens excluded), or None. Every chunk then stays within
            ``window_tokens - count_tokens(title + "\n")``, the room left by
            the title line ingest embeds in front of it; ``max_tokens`` is
            lowered to that when larger, and a fragment may grow past
            ``max_tokens`` up to it.
        min_tokens: Size under which a chunk is a fragment, avoided where the
            text allows; 0 turns the avoidance off.

    Returns:
        Chunks in document order; empty when the body has no text.

    Raises:
        ValidationError: a size is not a whole number, ``max_tokens`` < 20, ``overlap_tokens`` < 0 or
            ``overlap_tokens`` >= ``max_tokens``, ``min_tokens`` < 0, ``window_tokens`` < 40
            (``field`` names the size).
    """
    _check_sizes(max_tokens, overlap_tokens, window_tokens, min_tokens)
    limit = max_tokens
    if window_tokens is not None:
        limit = max(window_tokens - count_tokens(f"{title}\n"), _MIN_MAX_TOKENS)
        max_tokens = min(max_tokens, limit)
        overlap_tokens = min(overlap_tokens, max_tokens - 1)
    sections = split_sections(normalize_newlines(body), title)

    headings: dict[int, Unit] = {}
    continued: dict[int, Unit] = {}
    section_units: list[list[Unit]] = []
    next_block = 0
    for index, section in enumerate(sections):
        if section.heading is not None:
            headings[index] = Unit("heading", section.heading, index, -1)
            continued[index] = Unit("heading", _continued(section.heading), index, -1)
        units: list[Unit] = []
        for kind, text in parse_blocks(section.lines):
            units.append(Unit(kind, text, index, next_block))
            next_block += 1
        section_units.append(units)

    # Whether any later section has text: only then can a tiny one merge forward.
    text_after = [False] * len(sections)
    seen_text = False
    for index in range(len(sections) - 1, -1, -1):
        text_after[index] = seen_text
        seen_text = seen_text or bool(section_units[index])

    packer = Packer(max_tokens, overlap_tokens, count_tokens, headings, limit=limit, min_tokens=min_tokens,
                    continued=continued)
    for index, units in enumerate(section_units):
        if index in headings:
            packer.add(headings[index])
        for unit in units:
            packer.add(unit)
        own_tokens = count_tokens(render(units)) if units else 0
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
