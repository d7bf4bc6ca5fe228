"""The page comparison's figures against its definitions, computed the slow way (Python sets of word tuples).

:func:`retrieval_lib.book.compare_pages` takes short cuts for speed (a chunk found whole in its page is not
shingled); whatever the short cut, ``judged``, ``stale`` and ``coverage`` must be those of the definitions in
:mod:`retrieval_lib.book.findings` and :mod:`retrieval_lib.book.text`:

- a chunk is *judged* when it has at least :data:`~retrieval_lib.book.text.SHINGLE` words, *stale* when fewer than
  :data:`~retrieval_lib.book.FOUND_SHARE` of its shingles are in the page;
- ``chunk_words`` counts the judged chunks' words, ``unfound_words`` those in no shingle of their chunk found in the
  page (word ``i`` of a chunk of ``L`` words is in its shingles ``max(0, i - 3) .. min(i, L - 4)``);
- coverage is ``|S(page) ∩ ∪ S(judged chunk)| / |S(page)|``.

Words here are what :func:`~retrieval_lib.book.text.clean` leaves, split on spaces: independent of the hashing.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from shapes import compare_chunked

from retrieval_lib.book import FOUND_SHARE, BookChunks, BookMap, Page, compare_pages, findings
from retrieval_lib.book.pages import Book
from retrieval_lib.book.text import SHINGLE, clean, clean_all, words

VOCAB = [f"w{i}" for i in range(40)] + ["ROS2", "ros2-control", "Gazebo", "don't", "naïve", "x"]


def _shingles(text: str | None) -> list[tuple[bytes, ...]]:
    w = clean(text).split()
    if len(w) < SHINGLE:
        return [tuple(w)] if w else []
    return [tuple(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)]


def _expected(body: str, contents: list[str | None]) -> tuple[int, int, float]:
    judged, stale, coverage, _, _ = _figures(body, contents)
    return judged, stale, coverage


def _figures(body: str, contents: list[str | None]) -> tuple[int, int, float, int, int]:
    """(judged, stale, coverage, chunk_words, unfound_words), the slow way."""
    page = set(_shingles(body))
    judged = stale = chunk_words = unfound = 0
    covered: set[tuple[bytes, ...]] = set()
    for c in contents:
        w = clean(c).split()
        if len(w) < SHINGLE:
            continue
        judged += 1
        sh = _shingles(c)
        hit = [s in page for s in sh]
        stale += sum(hit) / len(sh) < FOUND_SHARE
        chunk_words += len(w)
        # word i is in shingles i - 3 .. i (those the chunk has: the slice stops at its last)
        unfound += sum(not any(hit[max(0, i - SHINGLE + 1):i + 1]) for i in range(len(w)))
        covered |= set(sh)
    coverage = len(page & covered) / len(page) if page else 1.0
    return judged, stale, coverage, chunk_words, unfound


def _page(path: str, body: str, *, with_bytes: bool = True) -> Page:
    """A page as read_docs reads it (its cleaned bytes kept: chunks found whole by their bytes), or with its word
    hashes only (every chunk then shingled): both must give the figures of the definitions."""
    if with_bytes:
        return Page.of_text(path, f"/docs/{path[:-3]}", path, body)
    hashes = words([body]).hashes
    return Page(path, f"/docs/{path[:-3]}", path, int(hashes.size), hashes)


def _page_text(rng: random.Random, n: int) -> str:
    out = []
    for i in range(n):
        out.append(rng.choice(VOCAB))
        if i % 11 == 10:
            out.append(rng.choice([".\n\n", ", ", " [a link](https://x.org/y) ", " **", "\n- "]))
    return " ".join(out)


def _chunks(rng: random.Random, body: str) -> list[str | None]:
    """Chunks of every kind: exact cuts (anywhere, with overlap, cut mid-word), punctuation and case changed,
    edited, from another text, shorter than a shingle, empty, None."""
    out: list[str | None] = [None, "", "w1 w2", body[:0]]
    for _ in range(rng.randint(3, 12)):
        a = rng.randrange(max(1, len(body)))
        b = min(len(body), a + rng.randint(1, 400))
        piece = body[a:b]
        kind = rng.random()
        if kind < 0.35:
            out.append(piece)                                           # a cut of the raw text (maybe mid-word)
        elif kind < 0.5:
            out.append(piece.upper().replace(",", " ; ").replace("\n", "   "))  # marks and case of its own
        elif kind < 0.7:
            ws = piece.split()
            for k in range(0, len(ws), rng.randint(2, 6)):
                ws[k] = rng.choice(VOCAB) + "z"                            # edited after the ingest
            out.append(" ".join(ws))
        elif kind < 0.85:
            out.append(_page_text(rng, rng.randint(1, 60)))               # another page's text
        else:
            out.append(piece + " " + piece)                               # a run repeated: not a run of the page
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("with_bytes", [True, False], ids=["bytes", "hashes only"])
@pytest.mark.parametrize("seed", range(40))
def test_compare_pages_gives_the_figures_of_the_definitions(seed, with_bytes):
    rng = random.Random(seed)
    n_words = rng.choice([0, 1, 3, 4, 5, 30, 200, 900])
    body = _page_text(rng, n_words)
    if seed % 7 == 0:  # a page that repeats itself: a chunk's first shingle is found at several places
        body = body + "\n\n" + body
    contents = _chunks(rng, body)
    page = _page("p.md", body, with_bytes=with_bytes)
    book = Book([page], "mem", "docusaurus", "/docs")
    chunks = BookChunks([str(i) for i in range(len(contents))], ["p.md"] * len(contents), [None] * len(contents),
                        contents, [None] * len(contents))
    bmap = BookMap([], {"p.md": list(range(len(contents)))})
    got = compare_pages(book, bmap, chunks)
    judged, stale, coverage, chunk_words, unfound = _figures(body, contents)
    assert len(got) == 1
    c = got[0]
    assert (c.chunks, c.judged, c.stale) == (len(contents), judged, stale)
    assert (c.chunk_words, c.unfound_words) == (chunk_words, unfound)
    assert c.coverage == pytest.approx(coverage, abs=1e-12)


@pytest.mark.parametrize("batch_words", [1, 300, 1 << 17])
def test_pages_compared_in_batches_each_get_their_own_figures(batch_words, monkeypatch):
    """Many pages at once (one batch, several, a page each), some sharing text, some shorter than a shingle or
    empty: each page's figures are its own (a chunk is looked up in its page only)."""
    monkeypatch.setattr(findings, "BATCH_WORDS", batch_words)
    rng = random.Random(11)
    pages, all_contents, page_chunks, expected = [], [], {}, {}
    shared = _page_text(rng, 120)
    for k in range(25):
        body = rng.choice([shared, _page_text(rng, rng.choice([0, 2, 3, 4, 40, 300])), shared + " extra words"])
        path = f"p{k}.md"
        pages.append(_page(path, body, with_bytes=k % 5 != 0))  # a few pages without their bytes
        # chunks of this page, and of another page's text (found elsewhere in the book: stale here)
        contents = _chunks(rng, body) + [_page_text(rng, 30)]
        page_chunks[path] = list(range(len(all_contents), len(all_contents) + len(contents)))
        all_contents += contents
        expected[path] = (len(contents), *_figures(body, contents))
    n = len(all_contents)
    chunks = BookChunks([str(i) for i in range(n)], [None] * n, [None] * n, all_contents, [None] * n)
    got = compare_pages(Book(pages, "mem", "docusaurus", "/docs"), BookMap([], page_chunks), chunks)
    assert [c.page for c in got] == list(page_chunks)
    for c in got:
        chunks_n, judged, stale, coverage, chunk_words, unfound = expected[c.page]
        assert (c.chunks, c.judged, c.stale, c.chunk_words, c.unfound_words) == (chunks_n, judged, stale,
                                                                                chunk_words, unfound), c.page
        assert c.coverage == pytest.approx(coverage, abs=1e-12), c.page


def test_chunks_found_whole_and_shingled_give_the_same_figures():
    """A chunk found whole in the page and the same chunk with its marks changed (so not found whole): same
    figures, shingled or not."""
    rng = random.Random(5)
    body = _page_text(rng, 500)
    whole = [body[i:i + 300] for i in range(0, len(body), 250)]
    marked = [c.replace(" ", " , ") for c in whole]
    book = Book([_page("p.md", body)], "mem", "docusaurus", "/docs")
    figures = []
    for contents in (whole, marked):
        chunks = BookChunks([str(i) for i in range(len(contents))], ["p.md"] * len(contents),
                            [None] * len(contents), list(contents), [None] * len(contents))
        c = compare_pages(book, BookMap([], {"p.md": list(range(len(contents)))}), chunks)[0]
        figures.append((c.judged, c.stale, round(c.coverage, 12), c.chunk_words, c.unfound_words))
    assert figures[0] == figures[1] == (len(whole), 0, figures[0][2], figures[0][3], figures[0][4])
    assert figures[0][2] > 0.95 and figures[0][3:] == _figures(body, list(whole))[3:]  # cut mid-word: a few unfound
    assert np.isfinite(figures[0][2])


def test_chunks_cut_at_words_are_found_whole_by_their_bytes(monkeypatch):
    """Chunks cut from the page's text at word boundaries (with overlap, up to the page's end) are found whole by
    their bytes, not shingled; the same chunks spaced otherwise, or edited, are not; the figures are those of the
    definitions either way."""
    found: list[int] = []
    real = findings._found_whole

    def spy(*args, **kw):
        exact, begin, span = real(*args, **kw)
        found.append(int(exact.sum()))
        return exact, begin, span

    monkeypatch.setattr(findings, "_found_whole", spy)
    rng = random.Random(8)
    body = _page_text(rng, 600)
    cuts = [m.start() for m in __import__("re").finditer(r"(?<=\s)w", body)]  # where a word of the page starts
    starts = cuts[::17]
    cut = [body[a:b] for a, b in zip(starts, starts[2:] + [len(body)])]  # each overlapping the next
    respaced = [" ".join(c.split()) if "  " in c or "\n" in c else c + "  " for c in cut]
    edited = [c.replace(" w", " qq", 3) for c in cut]  # a few words edited: not whole, still not stale
    book = Book([_page("p.md", body)], "mem", "docusaurus", "/docs")
    for contents in (cut, respaced, edited):
        found.clear()
        chunks = BookChunks([str(i) for i in range(len(contents))], ["p.md"] * len(contents),
                            [None] * len(contents), list(contents), [None] * len(contents))
        c = compare_pages(book, BookMap([], {"p.md": list(range(len(contents)))}), chunks)[0]
        judged, stale, coverage, chunk_words, unfound = _figures(body, contents)
        assert (c.judged, c.stale, c.chunk_words, c.unfound_words) == (judged, stale, chunk_words, unfound)
        assert c.coverage == pytest.approx(coverage, abs=1e-12)
        if contents is cut:  # found whole: every shingle found, counted without being hashed
            assert found == [len(cut)] and c.stale == 0 and c.coverage > 0.99 and c.unfound_words == 0 < chunk_words
        elif contents is edited:
            assert found == [0] and c.stale == 0 and 0 < c.unfound_share < 0.2


def test_clean_all_gives_the_bytes_of_clean_text_by_text():
    texts = [None, "", "plain words", "a [link](https://x.org/a) b", "<Tabs>\nx</Tabs>", "see https://x.org/y z",
             "import X from 'y';\ntext", "export const a = 1;\nmore", "naïve café ünïcode", "lone \ud800 surrogate",
             "ends with import", " starts with space", "a](b", "x < y", "ROS2-Control, DON'T!", "text\nimport\tX",
             "mid import x", "x\nexport y\nz", "a:/b c://d", "ü [ä](ö) <b>ß</b>", "](", "<", "://"]
    rng = random.Random(2)
    for _ in range(30):
        pick = [rng.choice(texts) for _ in range(rng.randint(0, 12))]
        data, lengths = clean_all(pick)
        assert data == b" ".join(clean(t) for t in pick)
        assert lengths.tolist() == [len(clean(t)) for t in pick]
        assert words(pick).count.tolist() == [len(clean(t).split()) for t in pick]


@pytest.mark.parametrize("repeats, cut", [(2, "first"), (2, "second"), (3, "overlapping"), (2, "whole")])
def test_a_page_that_repeats_itself_counts_each_shingle_once(repeats, cut):
    """A page's text two or three times over: its repeated shingles are one distinct shingle each, covered when
    any of its places is (coverage is over distinct shingles, however many places hold them)."""
    rng = random.Random(repeats)
    part = " ".join(rng.choice(VOCAB[:40]) + str(i) for i in range(60))  # 60 distinct words
    body = " ".join([part] * repeats)
    w = body.split()
    contents = {"first": [" ".join(w[:60])], "second": [" ".join(w[60:120])],
                "overlapping": [" ".join(w[30:100]), " ".join(w[90:170])], "whole": [body]}[cut]
    book = Book([_page("p.md", body)], "mem", "docusaurus", "/docs")
    chunks = BookChunks([str(i) for i in range(len(contents))], ["p.md"] * len(contents), [None] * len(contents),
                        list(contents), [None] * len(contents))
    c = compare_pages(book, BookMap([], {"p.md": list(range(len(contents)))}), chunks)[0]
    judged, stale, coverage, chunk_words, unfound = _figures(body, list(contents))
    assert (c.judged, c.stale) == (judged, stale) == (len(contents), 0)
    assert (c.chunk_words, c.unfound_words) == (chunk_words, unfound) and unfound == 0
    assert c.coverage == pytest.approx(coverage, abs=1e-12)
    assert coverage < 1.0 if cut in ("first", "second") else True  # the shingles across a seam are not covered


def _argsort_reference(values: np.ndarray) -> np.ndarray:
    return np.argsort(values, kind="stable")


@pytest.mark.parametrize("case", ["random", "repeated", "same high bits", "empty", "one"])
def test_sort_order_is_a_sort_with_equal_values_in_position_order(case):
    """text.sort_order sorts hashes with their positions packed into the low bits: the order must be that of a
    stable argsort, also where two distinct values share their high bits (then it falls back to one)."""
    from retrieval_lib.book.text import sort_order

    rng = np.random.default_rng(3)
    values = {
        "random": rng.integers(0, 2**63, 5_000, dtype=np.int64).astype(np.uint64) * np.uint64(2),
        "repeated": np.repeat(rng.integers(0, 2**63, 50, dtype=np.int64).astype(np.uint64), 7)[rng.permutation(350)],
        # 4 values: two low bits hold the position, and 8 and 9 (also 12 and 13) differ only there
        "same high bits": np.array([9, 8, 13, 12], dtype=np.uint64),
        "empty": np.empty(0, dtype=np.uint64),
        "one": np.array([5], dtype=np.uint64),
    }[case]
    order, ordered = sort_order(values)
    assert order.tolist() == _argsort_reference(values).tolist()
    assert ordered.tolist() == sorted(values.tolist())


# --- a chunker that cut the raw file: the page's front matter in its first chunk ---

RELEASE = "---\ntitle: Release Notes\nsidebar_position: 4\n---\n\n# Release Notes\n\nComing soon.\n"


def test_drop_front_matter_drops_a_leading_yaml_mapping_only():
    from retrieval_lib.book.text import drop_front_matter

    assert drop_front_matter(RELEASE) == "\n# Release Notes\n\nComing soon.\n"
    assert drop_front_matter("\n\n" + RELEASE).strip() == "# Release Notes\n\nComing soon."  # a chunk's blank start
    assert drop_front_matter("---\ntitle: Release Notes\nsidebar_position: 4\n---") == ""  # front matter alone
    assert drop_front_matter("---\n---\n# Empty block") == "# Empty block"
    for kept in ("plain text", "---\n\nA rule, then prose.\n\n---\nmore", "---\ntitle: [unclosed\n---\nx",
                 "text\n---\ntitle: x\n---\n", "--- not a block", ""):
        assert drop_front_matter(kept) is kept, kept


def test_clean_all_strips_front_matter_only_when_asked():
    from retrieval_lib.book.text import drop_front_matter

    texts = [None, "", RELEASE, "  \n" + RELEASE, "---\ntitle: T\n---", "---\n\nA rule, then prose.\n\n---\nx",
             "- a list item", " starts with space", "a [link](https://x.org/a) b", "---\nid: x\n---\n<b>a</b> b",
             "plain words", "naïve café"]
    rng = random.Random(4)
    for _ in range(30):
        pick = [rng.choice(texts) for _ in range(rng.randint(0, 12))]
        data, lengths = clean_all(pick, strip_front_matter=True)
        expected = [clean(drop_front_matter(t)) if t else b"" for t in pick]
        assert data == b" ".join(expected)
        assert lengths.tolist() == list(map(len, expected))
        assert clean_all(pick)[0] == b" ".join(clean(t) for t in pick)  # pages: as they are


def _compare_files(tmp_path, files: dict[str, str], chunks_of: dict[str, list[str]]):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return compare_chunked(tmp_path, chunks_of)


def test_a_chunk_that_holds_its_pages_front_matter_is_not_stale(tmp_path):
    """Team #3's shape (the raw file cut in 1,000-character windows): an untouched one-chunk page whose chunk is
    its file, front matter included, is found, not changed; team #2's (cut at headings): the front matter alone is
    a chunk, which has no words to judge (neither found nor stale) and covers nothing."""
    rng = random.Random(6)
    body = "# Gazebo\n\n" + _page_text(rng, 300)
    gazebo = "---\ntitle: Gazebo basics\nsidebar_position: 2\ndescription: Worlds, models and plugins\n---\n" + body
    files = {"appendices/d-release-notes.md": RELEASE, "m/gazebo.md": gazebo}
    windows = [gazebo[i:i + 1000] for i in range(0, len(gazebo), 850)]
    got = _compare_files(tmp_path, files, {"appendices/d-release-notes.md": [RELEASE], "m/gazebo.md": windows})
    notes, page = got["appendices/d-release-notes.md"], got["m/gazebo.md"]
    assert (notes.chunks, notes.judged, notes.stale, notes.coverage) == (1, 1, 0, 1.0)
    assert (page.judged, page.stale) == (len(windows), 0) and page.coverage > 0.99

    by_heading = ["---\ntitle: Release Notes\nsidebar_position: 4\n---", "# Release Notes\n\nComing soon."]
    got = _compare_files(tmp_path, files, {"appendices/d-release-notes.md": by_heading})
    notes = got["appendices/d-release-notes.md"]
    assert (notes.chunks, notes.judged, notes.stale, notes.coverage) == (2, 1, 0, 1.0)


def test_an_edited_front_matter_is_no_change_and_an_edited_text_still_is(tmp_path):
    """Chunks cut at headings (the front matter a chunk of its own) of a page whose front matter was edited since:
    no chunk is stale; of a page whose text was rewritten: its text's chunk is."""
    rng = random.Random(9)
    body = "# Launch files\n\n" + _page_text(rng, 200)
    old = ["---\ntitle: Launch files (draft)\nsidebar_position: 5\nkeywords: [ros2, launch, xml]\n---", body]
    new = "---\ntitle: Launch files\nsidebar_position: 7\n---\n" + body
    rewritten = "---\ntitle: Launch files\n---\n# Launch files\n\n" + _page_text(random.Random(10), 200)
    got = _compare_files(tmp_path, {"p.md": new}, {"p.md": old})
    assert (got["p.md"].chunks, got["p.md"].judged, got["p.md"].stale) == (2, 1, 0)
    got = _compare_files(tmp_path, {"p.md": rewritten}, {"p.md": old})
    assert (got["p.md"].chunks, got["p.md"].judged, got["p.md"].stale) == (2, 1, 1)


def test_a_chunk_folded_into_one_line_keeps_its_words_after_an_mdx_import(tmp_path):
    # teams #6, #7 and #12 fold a chunk's whitespace (" ".join(text.split())): an .mdx page's imports then share
    # one line with the text, and dropping "the import line" dropped the whole chunk (a false "thin ingest")
    assert clean("import Tabs from '@theme/Tabs'; import X from \"y\" # Installing Isaac Sim") == clean(
        "# Installing Isaac Sim").rjust(len(clean("import Tabs from '@theme/Tabs'; import X from \"y\" # Installing "
                                                  "Isaac Sim")))
    assert clean("export const meta = {a: 1}; more words").split() == [b"more", b"words"]
    rng = random.Random(7)
    page = ("import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n# Setup\n\n"
            + _page_text(rng, 400))
    folded = " ".join(page.split())
    half = len(folded) // 2
    got = _compare_files(tmp_path, {"m/setup.mdx": page}, {"m/setup.mdx": [folded[:half + 40], folded[half:]]})
    assert (got["m/setup.mdx"].stale, round(got["m/setup.mdx"].coverage, 2)) == (0, 1.0)
