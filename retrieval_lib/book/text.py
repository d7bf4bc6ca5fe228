"""Text as the book check compares it: words, then word shingles.

A chunk and its page are compared as words, not characters, so that what a chunker does to text does not read as
a change: Markdown marks, link targets, HTML/JSX tags and ``import`` lines are dropped on both sides, case is
folded, every ASCII punctuation mark reads as a space, and only words remain (:func:`clean`, :func:`words`). A text
is then a set of *shingles*, runs of :data:`SHINGLE` consecutive words, hashed to 64-bit integers; a chunk cut
mid-sentence, or overlapping its neighbour, still has nearly all its shingles in its page, and an edited sentence
loses its own.

Formulas (``S(x)`` the shingle set of ``x``):

- a chunk's share found in its page: ``|S(chunk) ∩ S(page)| / |S(chunk)|``;
- a page's share covered by its chunks: ``|S(page) ∩ ∪ S(chunk)| / |S(page)|``.

**Cost.** A 100,000-chunk collection holds about 12 million words, and its book as many again: words are never
Python objects here. :func:`words` lays a batch of texts out as one buffer and finds and hashes every word with a
few array operations (its bytes read eight at a time, masked, mixed). A chunk that is its page's cleaned text
from a word on, bytes for bytes, is recognised by one lookup of its first shingle and one comparison of its bytes
(:mod:`retrieval_lib.book.findings`): every shingle of it is then in the page, at those positions, and its words
are neither hashed nor shingled.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_lib.book.routes import split_front_matter
from retrieval_lib.errors import DocumentError

__all__ = ["SHINGLE", "clean", "clean_all", "drop_front_matter", "words", "words_at", "Words", "position_shingles",
           "shingles_of", "head_shingles", "keyed", "sort_order", "distinct", "found_in"]

#: Words per shingle: long enough that a shared shingle is the same sentence, short enough for a short chunk.
SHINGLE = 4
#: An MDX ``import`` statement (``import Tabs from '@theme/Tabs';``, ``import './x.css'``) and an ``export`` up to its
#: semicolon or line end: each ends where the statement does, so a chunk whose lines were folded into one (``" ".join(
#: text.split())``) keeps the words after it.
_IMPORT = re.compile(r"""^(?:(?:import\s+(?:[^\n'"]*?\s*\bfrom\s*)?(["'])[^"'\n]*\1;?|export\s[^\n;]*;?)[ \t]*)+""",
                     re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_URL = re.compile(r"https?://\S+")
#: The bytes :func:`_marked` looks for (``<``, ``](``, ``://``, a new line) and the words a line may start with.
_LT, _BRACKET, _COLON, _NEWLINE = (np.uint8(ord(c)) for c in "<]:\n")
_IMPORT_WORD, _EXPORT_WORD = (np.uint64(int.from_bytes(w, "little")) for w in (b"import", b"export"))
#: Every ASCII punctuation mark and whitespace byte read as a space, on UTF-8 bytes (a table lookup a byte; other
#: scripts' bytes are left as they are, on both sides alike). Words are then the runs of other bytes.
_SEPARATORS = string.punctuation.encode() + b"\t\n\r\x0b\x0c"
#: ... and ASCII upper case read as lower case, in the same pass.
_FOLD = bytes.maketrans(_SEPARATORS + string.ascii_uppercase.encode(),
                        b" " * len(_SEPARATORS) + string.ascii_lowercase.encode())
_SPACE = 32
#: The bytes a text may start with when it starts with front matter (:func:`drop_front_matter`): ``-`` and blank space.
_LEAD = np.zeros(256, dtype=bool)
_LEAD[[ord(c) for c in "- \t\n\r\x0b\x0c"]] = True
# odd 64-bit multipliers of a polynomial hash over word hashes, one per position in the shingle
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
                 dtype=np.uint64)
# a word's hash: its bytes eight at a time (each block mixed in), its length mixed in first; splitmix64's finaliser
_LENGTH = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
#: The low ``k`` bytes of a 64-bit integer, ``k`` = 0..8.
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def clean(text: str | None) -> bytes:
    """A Markdown text as UTF-8 bytes, ASCII lower case: link targets, tags, URLs and ``import`` lines dropped,
    every ASCII punctuation mark and whitespace byte read as a space (``ros2-control`` is ``ros2 control``). Its
    words are the runs of other bytes (:func:`words` finds them)."""
    if not text:
        return b""
    return _strip_marks(text).encode("utf-8", "replace").translate(_FOLD)


def _strip_marks(text: str) -> str:
    """``text`` with link targets, tags, URLs and ``import`` lines dropped: :func:`clean`'s part on text."""
    # each pattern runs only where its mark is in the text: most chunks hold none of them
    if "](" in text:
        text = _LINK.sub(r"\1", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "://" in text:
        text = _URL.sub(" ", text)
    if "import " in text or "export " in text:
        text = _IMPORT.sub("", text)
    return text


def drop_front_matter(text: str) -> str:
    """``text`` without the YAML front matter block it starts with (after blank space), if it starts with one.

    The block is what a page's front matter is (:func:`~retrieval_lib.book.routes.split_front_matter`, the rule the
    book reads its pages with): ``---`` lines around a YAML mapping. A page's text is read after its front matter,
    so a chunker that cut the raw file leaves in its first chunk words the page does not hold; without them the
    chunk is judged on its text (and a chunk of front matter alone has no words: neither found nor stale). A block
    that is not a mapping (a horizontal rule and the text under it) is not front matter and is kept.
    """
    head = text.lstrip()
    if not head.startswith("---"):
        return text
    try:
        _, body = split_front_matter(head, "")
    except DocumentError:  # not YAML, or not a mapping: a horizontal rule, not front matter
        return text
    return body if body is not head else text


def clean_all(texts: Sequence[str | None], *, strip_front_matter: bool = False) -> tuple[bytes, np.ndarray]:
    """``b" ".join(clean(t) for t in texts)`` and each cleaned text's length in bytes, made at once;
    ``strip_front_matter``: of each text after :func:`drop_front_matter` (chunks' texts: a chunker may have cut the
    raw file).

    The texts are joined and encoded once; the marks :func:`clean` acts on are looked for in the bytes
    (:func:`_marked`), and only the texts that hold one are cleaned alone, the others are folded with all the
    rest in one pass. The bytes are those of :func:`clean`, text by text (``tests/book/test_book_compare.py``).
    Front matter is looked for the same way: only a text whose first byte is ``-`` or blank space is read again.
    """
    strs = [t if t else "" for t in texts]
    data, lengths = _encoded(strs)
    changed = False
    if strip_front_matter and data:
        starts = (np.cumsum(lengths + 1) - (lengths + 1))[lengths > 0]
        for i in np.flatnonzero(lengths > 0)[_LEAD[np.frombuffer(data, dtype=np.uint8)[starts]]].tolist():
            body = drop_front_matter(strs[i])
            if body is not strs[i]:
                strs[i], changed = body, True
    for i in _marked(data, lengths):
        stripped = _strip_marks(strs[int(i)])
        if stripped != strs[int(i)]:
            strs[int(i)], changed = stripped, True
    if changed:
        data, lengths = _encoded(strs)
    return data.translate(_FOLD), lengths


def _encoded(strs: list[str]) -> tuple[bytes, np.ndarray]:
    """``" ".join(strs)`` as UTF-8 and each text's length in bytes."""
    joined = " ".join(strs)
    data = joined.encode("utf-8", "replace")
    if len(data) == len(joined):  # every character one byte: a text's bytes are as many as its characters
        return data, np.fromiter(map(len, strs), dtype=np.int64, count=len(strs))
    return data, np.fromiter((len(t.encode("utf-8", "replace")) for t in strs), dtype=np.int64, count=len(strs))


def _marked(data: bytes, lengths: np.ndarray) -> np.ndarray:
    """The texts (indexes) of ``data`` (texts of ``lengths`` bytes joined by spaces) that :func:`_strip_marks` may
    change: those holding ``](``, ``<`` or ``://``, or a line that starts with ``import`` or ``export`` (its
    ``import`` pattern acts on nothing else). A few array operations over the bytes: a multi-byte ``in`` test reads
    a text at about a nanosecond a character, four times over. A byte the bytes do not hold at all (a one-byte
    ``in``: a memchr) is not looked for."""
    b = np.frombuffer(data, dtype=np.uint8)
    if not b.size:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum(lengths + 1)  # past each text's space
    eight = np.ndarray((b.size,), dtype=np.uint64, buffer=data + bytes(8), strides=(1,))
    found = [np.flatnonzero(b == _LT)] if b"<" in data else []
    for first, mark in ((_BRACKET, b"]("), (_COLON, b"://")):
        if mark[:1] in data:
            at = np.flatnonzero(b == first)
            found.append(at[eight[at] & _MASKS[len(mark)] == int.from_bytes(mark, "little")])
    lines = ends - lengths - 1
    if b"\n" in data:
        lines = np.concatenate((lines, np.flatnonzero(b == _NEWLINE) + 1))
    lines = lines[lines < b.size]
    head = eight[lines] & _MASKS[6]
    found.append(lines[(head == _IMPORT_WORD) | (head == _EXPORT_WORD)])
    return np.unique(np.searchsorted(ends, np.concatenate(found), side="right"))


@dataclass
class Words:
    """Several texts' words as 64-bit hashes, text after text: text ``i``'s are
    ``hashes[first[i]:first[i] + count[i]]``."""

    hashes: np.ndarray
    count: np.ndarray
    #: each word's first byte in the buffer the words were read from (:func:`words_at` only; else None)
    starts: np.ndarray | None = None

    @property
    def first(self) -> np.ndarray:
        return np.cumsum(self.count) - self.count

    def __len__(self) -> int:
        return len(self.count)


def words(texts: Sequence[str | None] | Sequence[bytes], *, cleaned: bool = False) -> Words:
    """Every word of ``texts`` hashed (:func:`clean` first, unless ``cleaned``: then they are bytes it made).

    The texts are laid out as one buffer and every word (a run of bytes other than the space) is found and hashed
    at once: its bytes are read from the buffer eight at a time as 64-bit integers (one read for a word of up to 8
    bytes, the most of them), each block masked to the word and mixed into the hash with splitmix64's finaliser,
    the word's length mixed in first. No Python object is made per word.
    """
    if cleaned:
        raw: list[bytes] = list(texts)  # type: ignore[arg-type]
        lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
        joined = b" ".join(raw)
    else:
        joined, lengths = clean_all(texts)  # type: ignore[arg-type]
    found = words_at(joined, lengths)
    found.starts = None
    return found


def words_at(joined: bytes, lengths: np.ndarray) -> Words:
    """:func:`words` of cleaned texts already laid out as one buffer: ``joined`` (texts of ``lengths`` bytes, one
    space between two, as :func:`clean_all` makes it), with each word's first byte in it (:attr:`Words.starts`)."""
    n = len(lengths)
    offsets = np.cumsum(lengths + 1) - (lengths + 1)
    arr = np.frombuffer(joined, dtype=np.uint8)
    if not arr.size:
        return Words(np.empty(0, dtype=np.uint64), np.zeros(n, dtype=np.int64), np.empty(0, dtype=np.int64))
    letters = np.empty(arr.size + 2, dtype=bool)
    letters[0] = letters[-1] = False
    np.not_equal(arr, _SPACE, out=letters[1:-1])
    # a word starts at each edge of a row and ends at the row's other edge
    edges = np.flatnonzero(letters[1:] != letters[:-1]).reshape(-1, 2)
    starts = edges[:, 0]
    count = np.searchsorted(starts, offsets + lengths) - np.searchsorted(starts, offsets)
    if not starts.size:
        return Words(np.empty(0, dtype=np.uint64), count, starts)
    size = edges[:, 1] - starts
    # element i: the 8 bytes from byte i on (overlapping, unaligned reads of the padded buffer)
    eight = np.ndarray((arr.size,), dtype=np.uint64, buffer=joined + bytes(8), strides=(1,))
    with np.errstate(over="ignore"):
        # in place where it can be: a new array a word costs about as much as the operation on it
        h = eight[starts]
        h &= _MASKS[np.minimum(size, 8)]
        h ^= size.view(np.uint64) * _LENGTH  # sizes are positive: their bits are the same unsigned
        h = _mix(h)
        longer, block = np.flatnonzero(size > 8), 1
        while longer.size:
            rest = size[longer] - 8 * block
            h[longer] = _mix(h[longer] ^ (eight[starts[longer] + 8 * block] & _MASKS[np.minimum(rest, 8)]))
            longer, block = longer[rest > 8], block + 1
    return Words(h, count, starts)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection of 64-bit integers that spreads every bit), in place."""
    with np.errstate(over="ignore"):
        shifted = h >> np.uint64(30)
        h ^= shifted
        h *= _MIX1
        h ^= np.right_shift(h, np.uint64(27), out=shifted)
        h *= _MIX2
        h ^= np.right_shift(h, np.uint64(31), out=shifted)
    return h


def _rolling(ids: np.ndarray, k: int) -> np.ndarray:
    n = len(ids) - k + 1
    with np.errstate(over="ignore"):
        h = ids[:n] * _MULT[0]
        term = np.empty_like(h)
        for i in range(1, k):
            h += np.multiply(ids[i:i + n], _MULT[i], out=term)
    return h


def shingles_of(hashes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The :data:`SHINGLE`-word shingles of the runs ``hashes[starts[i]:starts[i] + lengths[i]]``, each at least
    :data:`SHINGLE` long: (hashes, index of the run each came from), in order."""
    if not starts.size:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    at = _rolling(hashes, SHINGLE)
    per = lengths - SHINGLE + 1
    owner = np.repeat(np.arange(starts.size), per)
    index = np.repeat(starts - (np.cumsum(per) - per), per) + np.arange(int(per.sum()))
    return at[index], owner


def head_shingles(hashes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The first shingle of each run starting at ``starts`` (each at least :data:`SHINGLE` words long): the
    value :func:`position_shingles` gives at that position, without shingling the rest."""
    with np.errstate(over="ignore"):
        h = hashes[starts] * _MULT[0]
        for i in range(1, SHINGLE):
            h = h + hashes[starts + i] * _MULT[i]
    return h


_OWNER = np.uint64(0xD1B54A32D192ED03)


def keyed(values: np.ndarray, owners: np.ndarray) -> np.ndarray:
    """``values`` made distinct by owner (a page): ``value + owner * K`` (mod 2**64), for one sorted lookup across
    several pages. For one owner it is a bijection, so equal keys are equal values of one owner; two owners' keys
    meet only as two 64-bit hashes do, by chance (the values are shingle hashes, already mixed: mixing again would
    spread nothing more, at three times the cost)."""
    with np.errstate(over="ignore"):
        return values + owners.astype(np.uint64) * _OWNER


def position_shingles(word_hashes: np.ndarray) -> np.ndarray:
    """One text's shingle at each word position, in text order (``len - SHINGLE + 1`` of them); a text shorter than
    a shingle is one shingle of all its words (none when it has no word)."""
    if word_hashes.size == 0:
        return np.empty(0, dtype=np.uint64)
    return _rolling(word_hashes, min(SHINGLE, len(word_hashes)))


_arange = np.zeros(0, dtype=np.uint64)


def _positions(n: int) -> np.ndarray:
    """``0 .. n - 1`` as 64-bit unsigned integers (a table grown as needed and kept: a fresh one costs more than
    the sort it serves)."""
    global _arange
    if _arange.size < n:
        _arange = np.arange(max(n, 2 * _arange.size, 1 << 16), dtype=np.uint64)
    return _arange[:n]


def sort_order(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, values[order])`` with ``values[order]`` sorted (equal values in position order), for 64-bit
    hashes (``uint64``).

    A sort of values is several times cheaper than an argsort (a vectorised sort of plain integers), so each value's
    low bits are replaced by its position, the result sorted and the positions read back. Two distinct values with
    equal high bits would then interleave by position: that is checked (equal high bits must mean equal values) and,
    should it happen, the order is taken from an argsort instead, so the result never depends on it.
    """
    n = values.size
    bits = max(1, (n - 1).bit_length())
    if bits > 32:  # would leave too few bits to sort by
        order = np.argsort(values, kind="stable")
        return order, values[order]
    low = np.uint64((1 << bits) - 1)
    packed = values & ~low
    packed |= _positions(n)
    packed.sort()
    order = (packed & low).view(np.int64)
    ordered = values[order]
    if n > 1:
        same_high = (packed[1:] ^ packed[:-1]) <= low
        if np.any(same_high & (ordered[1:] != ordered[:-1])):  # two hashes alike in their high bits: rare
            order = np.argsort(values, kind="stable")
            ordered = values[order]
    return order, ordered


def distinct(values: np.ndarray, *, ordered: bool = False) -> np.ndarray:
    """Sorted distinct values (a sort and a compare: cheaper than :func:`numpy.unique` on small arrays);
    ``ordered``: ``values`` are sorted already."""
    out = values if ordered else np.sort(values)
    if out.size < 2:
        return out
    keep = np.empty(out.size, dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def found_in(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """For each of ``values``, whether it is in ``sorted_set`` (sorted, distinct: :func:`distinct`): a binary
    search each, cheaper than :func:`numpy.isin`'s sort of both when the set is reused."""
    if sorted_set.size == 0:
        return np.zeros(values.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return sorted_set[at] == values
