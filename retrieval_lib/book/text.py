"""Text as the book check compares it: words, then word shingles.

A chunk and its page are compared as words, not characters, so that what a chunker does to text does not read as
a change: Markdown marks, link targets, HTML/JSX tags and ``import`` lines are dropped on both sides, case is
folded, and only words remain (:func:`words_of`). A chunk is then a set of *shingles*, runs of
:data:`SHINGLE` consecutive words, hashed to 64-bit integers (:func:`shingles`); a chunk cut mid-sentence, or
overlapping its neighbour, still has nearly all its shingles in its page, and an edited sentence loses its own.

Formulas (``S(x)`` the shingle set of ``x``):

- a chunk's share found in its page: ``|S(chunk) ∩ S(page)| / |S(chunk)|``;
- a page's share covered by its chunks: ``|S(page) ∩ ∪ S(chunk)| / |S(page)|``.
"""

from __future__ import annotations

import re
import string

import numpy as np

__all__ = ["SHINGLE", "words_of", "shingles", "runs", "distinct", "found_in", "found_share"]

#: Words per shingle: long enough that a shared shingle is the same sentence, short enough for a short chunk.
SHINGLE = 4
_IMPORT = re.compile(r"^(?:import|export)\s.*$", re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_URL = re.compile(r"https?://\S+")
#: Every ASCII punctuation mark read as a space, on UTF-8 bytes (a table lookup a byte; other scripts' bytes are
#: left as they are, on both sides alike).
_PUNCTUATION = bytes.maketrans(string.punctuation.encode(), b" " * len(string.punctuation))
# odd 64-bit multipliers of a polynomial hash over word ids, one per position in the shingle
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
                 dtype=np.uint64)


def words_of(text: str | None) -> list[bytes]:
    """The words of a Markdown text as UTF-8 bytes, ASCII lower case: link targets, tags, URLs and ``import``
    lines dropped, every ASCII punctuation mark read as a space (``ros2-control`` is ``ros2 control``)."""
    if not text:
        return []
    # each pattern runs only where its mark is in the text: most chunks hold none of them
    if "](" in text:
        text = _LINK.sub(r"\1", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "://" in text:
        text = _URL.sub(" ", text)
    if "import " in text or "export " in text:
        text = _IMPORT.sub("", text)
    return text.encode("utf-8", "replace").lower().translate(_PUNCTUATION).split()


def _hashes(words: list[bytes]) -> np.ndarray:
    return np.fromiter(map(hash, words), dtype=np.int64, count=len(words)).view(np.uint64)


def _rolling(ids: np.ndarray, k: int) -> np.ndarray:
    n = len(ids) - k + 1
    with np.errstate(over="ignore"):
        h = ids[:n] * _MULT[0]
        for i in range(1, k):
            h = h + ids[i:i + n] * _MULT[i]
    return h


def runs(texts: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """The :data:`SHINGLE`-word shingles of several word lists at once: (hashes, index of the list each came
    from), in order; a list shorter than a shingle gives none (its words are too few to judge)."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    total = int(lengths.sum())
    if total < SHINGLE:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    ids = np.fromiter(map(hash, (w for t in texts for w in t)), dtype=np.int64, count=total).view(np.uint64)
    h = _rolling(ids, SHINGLE)
    owner = np.repeat(np.arange(len(texts)), lengths)[: len(h)]
    valid = np.ones(len(h), dtype=bool)
    ends = np.cumsum(lengths)
    for back in range(1, SHINGLE):  # the last SHINGLE-1 starts of each list run into the next one
        at = ends - back
        valid[at[(at >= 0) & (at < len(h))]] = False
    return h[valid], owner[valid]


def shingles(words: list[bytes], *, unique: bool = True) -> np.ndarray:
    """The 64-bit hashes of a word list's :data:`SHINGLE`-word runs (sorted and distinct unless ``unique`` is
    False: then in text order, one per position); a text shorter than a shingle is one shingle of all its words
    (none when it has no word). Hashes are only comparable within one process (Python's ``hash`` of a word)."""
    if not words:
        return np.empty(0, dtype=np.uint64)
    h = _rolling(_hashes(words), min(SHINGLE, len(words)))
    return distinct(h) if unique else h


def distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort and a compare: cheaper than :func:`numpy.unique` on small arrays)."""
    ordered = np.sort(values)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def found_in(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """For each of ``values``, whether it is in ``sorted_set`` (sorted, distinct: :func:`shingles`): a binary
    search each, cheaper than :func:`numpy.isin`'s sort of both when the set is reused."""
    if sorted_set.size == 0:
        return np.zeros(values.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return sorted_set[at] == values


def found_share(part: np.ndarray, whole: np.ndarray) -> float:
    """``|part ∩ whole| / |part|`` of a shingle array and a sorted, distinct one (1.0 for an empty ``part``)."""
    if part.size == 0:
        return 1.0
    return float(found_in(part, whole).mean())
