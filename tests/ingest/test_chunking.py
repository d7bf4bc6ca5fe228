"""Tests for retrieval_lib.ingest.chunking: heading-aware token-window chunking."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from retrieval_lib.errors import ValidationError
from retrieval_lib.ingest.chunking import Chunk, chunk_markdown, default_count_tokens


def sentences(tag: str, count: int) -> str:
    """A paragraph of ``count`` distinct sentences of 9 tokens each."""
    return " ".join(f"The {tag} note {i} explains one robot detail." for i in range(count))


def body_after_heading(chunk: Chunk) -> str:
    """Chunk text without its first line when that line is a heading."""
    first, _, rest = chunk.text.partition("\n\n")
    return rest if first.startswith("#") else chunk.text


def is_heading_line(line: str) -> bool:
    return re.match(r"^#{1,6} ", line) is not None


# --- basics ---------------------------------------------------------------------------


def test_default_count_tokens_counts_words_and_punctuation() -> None:
    assert default_count_tokens("## Installing ROS 2") == 5
    assert default_count_tokens("a, b.") == 4
    assert default_count_tokens("   ") == 0


def test_empty_or_heading_only_body_gives_no_chunks() -> None:
    assert chunk_markdown("", title="T") == []
    assert chunk_markdown("# T\n\n## Empty\n\n### Also empty\n", title="T") == []


def test_chunks_carry_sequence_and_token_count() -> None:
    body = "## A\n\n" + sentences("alpha", 30)
    chunks = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=10)
    assert len(chunks) > 2
    assert [c.sequence for c in chunks] == list(range(len(chunks)))
    assert all(c.token_count == default_count_tokens(c.text) for c in chunks)
    assert all(c.text == c.text.rstrip() and c.text.strip() for c in chunks)


# --- headings -------------------------------------------------------------------------


def test_headings_give_section_title_and_heading_path() -> None:
    body = "\n\n".join(
        [
            "# Book Page",
            sentences("intro", 4),
            "## Installing ROS 2",
            sentences("install", 4),
            "### Adding the apt repository",
            sentences("apt", 4),
            "#### Keys",
            sentences("keys", 4),
            "## Testing",
            sentences("test", 4),
            "### Unit tests ###",
            sentences("unit", 4),
        ]
    )
    chunks = chunk_markdown(body, title="Doc Title", max_tokens=200)
    assert [(c.section_title, c.heading_path) for c in chunks] == [
        ("Doc Title", ()),
        ("Installing ROS 2", ("Installing ROS 2",)),
        ("Adding the apt repository", ("Installing ROS 2", "Adding the apt repository")),
        ("Keys", ("Installing ROS 2", "Adding the apt repository", "Keys")),
        ("Testing", ("Testing",)),
        ("Unit tests", ("Testing", "Unit tests")),
    ]
    assert chunks[0].text.startswith("# Book Page\n\nThe intro note 0")
    assert chunks[2].text.startswith("### Adding the apt repository\n\nThe apt note 0")


def test_text_before_any_heading_uses_the_document_title() -> None:
    chunks = chunk_markdown(sentences("lead", 4) + "\n\n## Next\n\n" + sentences("next", 4), title="Doc")
    assert chunks[0].section_title == "Doc"
    assert chunks[0].heading_path == ()
    assert chunks[0].text.startswith("The lead note 0")


def test_hash_lines_inside_code_are_not_headings() -> None:
    body = (
        "## Setup\n\n"
        + sentences("setup", 3)
        + "\n\n```bash\n# install the dependencies\npip install rclpy\n## not a heading either\n```\n\n"
        + sentences("after", 3)
    )
    chunks = chunk_markdown(body, title="T", max_tokens=200)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Setup",)
    assert "# install the dependencies\npip install rclpy\n## not a heading either" in chunks[0].text


def test_every_chunk_of_a_section_starts_with_its_heading_line() -> None:
    body = "## Long Section\n\n" + sentences("long", 40)
    chunks = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=10)
    assert len(chunks) > 3
    assert chunks[0].text.startswith("## Long Section\n\n")
    # Continuation chunks carry the same heading line, labelled as a continuation.
    assert all(c.text.startswith("## Long Section (continued)\n\n") for c in chunks[1:])
    assert all(c.heading_path == ("Long Section",) and c.section_title == "Long Section" for c in chunks)


# --- section merging --------------------------------------------------------------------


def test_tiny_heading_only_sections_merge_into_the_next_section() -> None:
    body = "# Title\n\n## Installing ROS 2\n\n### Adding the apt repository\n\n" + sentences("apt", 5)
    chunks = chunk_markdown(body, title="Title", max_tokens=200)
    assert len(chunks) == 1
    assert chunks[0].text.startswith("# Title\n\n## Installing ROS 2\n\n### Adding the apt repository\n\nThe apt")
    assert chunks[0].section_title == "Adding the apt repository"
    assert chunks[0].heading_path == ("Installing ROS 2", "Adding the apt repository")


def test_tiny_section_with_a_little_text_merges_forward() -> None:
    body = "## Note\n\nShort remark.\n\n## Details\n\n" + sentences("detail", 5)
    chunks = chunk_markdown(body, title="T", max_tokens=200)
    assert len(chunks) == 1
    assert chunks[0].text.startswith("## Note\n\nShort remark.\n\n## Details\n\n")
    assert chunks[0].section_title == "Details"


def test_no_chunk_is_only_headings_even_when_the_next_block_is_large() -> None:
    body = "## Outer\n\n### Inner\n\n" + sentences("inner", 30)
    chunks = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=10)
    for chunk in chunks:
        assert any(line.strip() and not is_heading_line(line) for line in chunk.text.split("\n"))
    assert chunks[0].text.startswith("## Outer\n\n### Inner\n\nThe inner note 0")


def test_real_sections_are_not_merged_across_headings() -> None:
    body = "## First\n\n" + sentences("first", 3) + "\n\n## Second\n\n" + sentences("second", 3)
    chunks = chunk_markdown(body, title="T", max_tokens=500)
    assert len(chunks) == 2
    assert "second" not in chunks[0].text
    assert "first" not in chunks[1].text
    assert chunks[1].text.startswith("## Second\n\n")


def test_trailing_sections_without_text_are_dropped() -> None:
    body = "## Kept\n\n" + sentences("kept", 4) + "\n\n## Empty At End\n"
    chunks = chunk_markdown(body, title="T")
    assert len(chunks) == 1
    assert "Empty At End" not in chunks[0].text


def test_last_tiny_section_with_text_still_becomes_a_chunk() -> None:
    body = "## Big\n\n" + sentences("big", 4) + "\n\n## Summary\n\nDone."
    chunks = chunk_markdown(body, title="T")
    assert chunks[-1].text == "## Summary\n\nDone."
    assert chunks[-1].section_title == "Summary"


# --- code blocks ------------------------------------------------------------------------


def test_code_block_stays_with_its_heading_and_intro() -> None:
    code = "```python\nimport rclpy\nrclpy.init()\nprint('ready')\n```"
    body = "## Publisher\n\nThe following script starts ROS 2.\n\n" + code + "\n\nRun it twice."
    chunks = chunk_markdown(body, title="T", max_tokens=200)
    assert len(chunks) == 1
    assert chunks[0].text == "## Publisher\n\nThe following script starts ROS 2.\n\n" + code + "\n\nRun it twice."


def fenced_parts(text: str) -> list[list[str]]:
    """The fenced code blocks of ``text`` as line lists (fence lines included); each must be closed."""
    parts: list[list[str]] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = re.match(r"^[ \t]*(`{3,}|~{3,})", line)
        if fence is None and match:
            fence = match.group(1)
            parts.append([line])
        elif fence is not None:
            parts[-1].append(line)
            if line.strip() == fence:
                fence = None
    assert fence is None, f"unclosed fence in chunk:\n{text}"
    return parts


def test_oversized_code_block_is_split_at_line_boundaries_into_whole_fences() -> None:
    code_lines = [f"value_{i} = compute({i}, scale=2.5)  # step {i}" for i in range(60)]
    code = "```python\n" + "\n".join(code_lines) + "\n```"
    body = "## Big Script\n\n" + sentences("before", 3) + "\n\n" + code + "\n\n" + sentences("after", 3)
    chunks = chunk_markdown(body, title="T", max_tokens=100, overlap_tokens=20)
    assert all(c.token_count <= 100 for c in chunks)
    code_chunks = [c for c in chunks if "compute(" in c.text]
    assert len(code_chunks) > 2
    # The intro stays with the start of the code; every part is a whole ```python fence.
    assert code_chunks[0].text.startswith("## Big Script\n\nThe before note 0")
    seen: list[str] = []
    for chunk in code_chunks:
        (part,) = fenced_parts(chunk.text)
        assert part[0] == "```python" and part[-1] == "```"
        seen.extend(part[1:-1])
    assert seen == code_lines  # every line whole, once, in order: no line cut, none repeated as overlap
    assert all(c.text.startswith("## Big Script (continued)\n\n") for c in chunks[1:])


def test_overlap_never_repeats_code() -> None:
    body = (
        "## Mixed\n\n"
        + sentences("one", 4)
        + "\n\n```bash\nros2 run demo talker\n```\n\n"
        + sentences("two", 8)
    )
    chunks = chunk_markdown(body, title="T", max_tokens=70, overlap_tokens=20)
    assert len(chunks) > 1
    assert sum("ros2 run demo talker" in c.text for c in chunks) == 1


def test_fence_nested_in_a_list_item_is_cut_only_between_lines() -> None:
    lines = [f"  echo line {i}" for i in range(40)]
    item_code = "  ```bash\n" + "\n".join(lines) + "\n  ```"
    body = "## Steps\n\n- First step is short.\n- Second step runs:\n\n" + item_code + "\n- Third step ends."
    chunks = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=10)
    assert all(c.token_count <= 60 for c in chunks)
    seen: list[str] = []
    for chunk in chunks:
        for part in fenced_parts(chunk.text):
            assert part[0] == "  ```bash" and part[-1] == "  ```"  # indentation kept, each part closed
            seen.extend(part[1:-1])
    assert seen == lines
    assert "- Second step runs:\n\n  ```bash\n  echo line 0" in chunks[0].text
    assert chunks[-1].text.endswith("  ```\n- Third step ends.")
    # A fence that fits stays whole inside its item.
    small = "## Steps\n\n- Run:\n\n  ```bash\n  echo hi\n  ```\n- Done."
    assert chunk_markdown(small, title="T")[0].text == small


# --- splitting and overlap ----------------------------------------------------------------


def test_long_paragraph_is_split_at_sentences_within_max_tokens() -> None:
    body = "## Section\n\n" + sentences("split", 40)
    chunks = chunk_markdown(body, title="T", max_tokens=80, overlap_tokens=0)
    assert len(chunks) > 3
    assert all(c.token_count <= 80 for c in chunks)
    for chunk in chunks:
        # Whole sentences only: every chunk body ends with a full stop.
        assert body_after_heading(chunk).endswith("detail.")
    rebuilt = " ".join(body_after_heading(c) for c in chunks)
    assert rebuilt == sentences("split", 40)


def test_sentence_longer_than_a_chunk_is_split_at_words() -> None:
    words = [f"w{i}" for i in range(300)]
    body = "## Run-on\n\n" + " ".join(words)
    chunks = chunk_markdown(body, title="T", max_tokens=50, overlap_tokens=0)
    assert all(c.token_count <= 50 for c in chunks)
    assert " ".join(body_after_heading(c) for c in chunks).split() == words


def test_following_chunks_start_with_the_previous_chunks_last_sentences() -> None:
    body = "## Overlap\n\n" + sentences("ov", 30)
    chunks = chunk_markdown(body, title="T", max_tokens=80, overlap_tokens=20)
    assert len(chunks) > 2
    for previous, current in zip(chunks, chunks[1:]):
        last_two = re.findall(r"The ov note \d+ explains one robot detail\.", previous.text)[-2:]
        # 20 tokens of overlap = two 9-token sentences.
        assert body_after_heading(current).startswith(" ".join(last_two))


def test_no_overlap_across_sections_or_when_disabled() -> None:
    body = "## One\n\n" + sentences("one", 12) + "\n\n## Two\n\n" + sentences("two", 12)
    with_overlap = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=20)
    second_section = [c for c in with_overlap if c.section_title == "Two"]
    assert second_section
    assert not any("The one note" in c.text for c in second_section)
    # Overlap does happen inside each section.
    assert sum("The two note" in c.text for c in second_section) > 1
    without = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=0)
    seen: list[str] = []
    for chunk in without:
        found = re.findall(r"The \w+ note \d+", chunk.text)
        assert not set(found) & set(seen)
        seen.extend(found)
    assert len(seen) == 24


def test_list_is_split_between_items() -> None:
    items = [f"- Item {i} names one robot part." for i in range(30)]
    body = "## Parts\n\n" + "\n".join(items)
    chunks = chunk_markdown(body, title="T", max_tokens=60, overlap_tokens=0)
    assert len(chunks) > 1
    assert all(c.token_count <= 60 for c in chunks)
    lines = [line for c in chunks for line in body_after_heading(c).split("\n")]
    assert lines == items


# --- tables and admonitions ----------------------------------------------------------------


TABLE_HEADER = "| Distribution | Release | End of life |\n|---|---|---|"


def test_table_is_kept_whole_when_it_fits() -> None:
    rows = "\n".join(f"| Distro {i} | May 202{i} | May 203{i} |" for i in range(4))
    table = TABLE_HEADER + "\n" + rows
    body = "## Releases\n\n" + sentences("pre", 5) + "\n\n" + table + "\n\n" + sentences("post", 5)
    chunks = chunk_markdown(body, title="T", max_tokens=120, overlap_tokens=0)
    assert sum(table in c.text for c in chunks) == 1
    assert sum("| Distro 0 |" in c.text for c in chunks) == 1


def test_oversized_table_is_split_by_rows_repeating_the_header() -> None:
    rows = [f"| Distro {i} | May 20{i:02d} | May 20{i + 5:02d} |" for i in range(30)]
    body = "## Releases\n\n" + TABLE_HEADER + "\n" + "\n".join(rows)
    chunks = chunk_markdown(body, title="T", max_tokens=100, overlap_tokens=20)
    assert len(chunks) > 1
    seen_rows: list[str] = []
    for chunk in chunks:
        assert chunk.token_count <= 100
        part = body_after_heading(chunk)
        assert part.startswith(TABLE_HEADER + "\n")
        seen_rows.extend(part.split("\n")[2:])
    assert seen_rows == rows


def test_split_table_after_prose_starts_with_the_prose_overlap() -> None:
    rows = [f"| Distro {i} | May 20{i:02d} | May 20{i + 5:02d} |" for i in range(30)]
    body = "## Releases\n\n" + sentences("lead", 6) + "\n\n" + TABLE_HEADER + "\n" + "\n".join(rows)
    chunks = chunk_markdown(body, title="T", max_tokens=100, overlap_tokens=20)
    first_table = next(c for c in chunks if TABLE_HEADER in c.text)
    assert first_table.text.startswith(
        "## Releases (continued)\n\n"
        "The lead note 4 explains one robot detail. The lead note 5 explains one robot detail.\n\n"
        + TABLE_HEADER
    )
    assert all(c.token_count <= 100 for c in chunks)


def test_admonition_is_kept_whole() -> None:
    admonition = ":::tip Choosing a distribution\nPick the newest LTS release.\n\nCheck vendor support first.\n:::"
    body = "## Choosing\n\n" + sentences("a", 6) + "\n\n" + admonition + "\n\n" + sentences("b", 6)
    chunks = chunk_markdown(body, title="T", max_tokens=70, overlap_tokens=10)
    assert len(chunks) > 1
    assert sum(admonition in c.text for c in chunks) == 1
    # Wherever the admonition starts, all of it is there.
    assert all(admonition in c.text for c in chunks if ":::tip" in c.text)


def test_heading_inside_admonition_does_not_split_it() -> None:
    admonition = ":::note\n## Not a section\nInside the note.\n:::"
    body = "## Real\n\n" + sentences("real", 3) + "\n\n" + admonition
    chunks = chunk_markdown(body, title="T")
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Real",)
    assert admonition in chunks[0].text


def test_oversized_admonition_parts_are_each_wrapped() -> None:
    admonition = ":::warning\n" + sentences("warn", 30) + "\n:::"
    chunks = chunk_markdown("## Careful\n\n" + admonition, title="T", max_tokens=80, overlap_tokens=0)
    assert len(chunks) > 1
    for chunk in chunks:
        part = body_after_heading(chunk)
        assert part.startswith(":::warning\n") and part.endswith("\n:::")
        assert chunk.token_count <= 80


# --- properties and arguments -----------------------------------------------------------------

WORD_INDEX = re.compile(r"[a-j]+(\d+)")


@st.composite
def word_documents(draw: st.DrawFn) -> tuple[str, int, int, int]:
    """A body of random paragraphs whose words are numbered in order."""
    count = draw(st.integers(min_value=1, max_value=300))
    parts: list[str] = []
    for index in range(count):
        stem = draw(st.text(alphabet="abcdefghij", min_size=1, max_size=6))
        mark = draw(st.sampled_from(["", "", "", "", ".", ",", "?", "!"]))
        parts.append(f"{stem}{index}{mark}")
        if index < count - 1 and draw(st.integers(0, 15)) == 0:
            parts.append("\n\n")
        elif index < count - 1:
            parts.append(" ")
    heading = draw(st.sampled_from(["", "## Notes\n\n", "# Title\n\nintro words here\n\n## Part\n\n"]))
    max_tokens = draw(st.integers(min_value=20, max_value=150))
    overlap = draw(st.integers(min_value=0, max_value=max_tokens - 1))
    return heading + "".join(parts), count, max_tokens, overlap


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word_documents())
def test_property_chunks_fit_and_keep_every_word_in_order(case: tuple[str, int, int, int]) -> None:
    body, count, max_tokens, overlap = case
    chunks = chunk_markdown(body, title="T", max_tokens=max_tokens, overlap_tokens=overlap)
    assert chunks
    last_seen = -1
    new_words: list[int] = []
    previous_words: list[int] = []
    for chunk in chunks:
        assert chunk.text.strip()
        assert chunk.token_count == default_count_tokens(chunk.text) <= max_tokens
        words = [int(n) for n in WORD_INDEX.findall(chunk.text)]
        if not words:
            # Only the H1 intro (merged forward) may end up without numbered words,
            # when the next section's first sentence does not fit beside it.
            assert chunk.text == "# Title\n\nintro words here"
            continue
        # Overlap + new text is one contiguous run of the original words.
        assert words == list(range(words[0], words[0] + len(words)))
        repeated = [w for w in words if w <= last_seen]
        if repeated:
            assert repeated == previous_words[-len(repeated):]
        new_words.extend(w for w in words if w > last_seen)
        last_seen = max(last_seen, words[-1])
        previous_words = words
    assert new_words == list(range(count))


def test_chunking_is_deterministic() -> None:
    body = (
        "# Page\n\n" + sentences("x", 20) + "\n\n## Table\n\n" + TABLE_HEADER + "\n| a | b | c |\n\n"
        ":::note\nA note.\n:::\n\n```python\nprint(1)\n```\n"
    )
    first = chunk_markdown(body, title="Page", max_tokens=50, overlap_tokens=15)
    second = chunk_markdown(body, title="Page", max_tokens=50, overlap_tokens=15)
    assert first == second
    assert len(first) > 1


def test_custom_token_counter_is_used_for_every_size() -> None:
    body = "## Chars\n\n" + sentences("c", 30)
    chunks = chunk_markdown(body, title="T", max_tokens=150, overlap_tokens=40, count_tokens=len)
    assert len(chunks) > 5
    assert all(c.token_count == len(c.text) <= 150 for c in chunks)


def test_crlf_body_is_handled() -> None:
    chunks = chunk_markdown("## A\r\n\r\n" + sentences("crlf", 4), title="T")
    assert chunks[0].heading_path == ("A",)
    assert "\r" not in chunks[0].text


@pytest.mark.parametrize(
    ("max_tokens", "overlap_tokens", "field"),
    [
        (19, 0, "max_tokens"),
        (0, 0, "max_tokens"),
        (100, 100, "overlap_tokens"),
        (100, 150, "overlap_tokens"),
        (100, -1, "overlap_tokens"),
    ],
)
def test_bad_sizes_raise_value_error(max_tokens: int, overlap_tokens: int, field: str) -> None:
    with pytest.raises(ValueError):
        chunk_markdown("text", title="T", max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    # A ValueError from the package's error tree, naming the argument at fault.
    with pytest.raises(ValidationError) as info:
        chunk_markdown("text", title="T", max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    assert info.value.field == field
    assert field in str(info.value)


def test_non_integer_sizes_raise_validation_error_naming_the_size() -> None:
    with pytest.raises(ValidationError) as info:
        chunk_markdown("text", title="T", max_tokens=100.0)  # type: ignore[arg-type]
    assert info.value.field == "max_tokens" and "whole number" in str(info.value)
    with pytest.raises(ValidationError) as info:
        chunk_markdown("text", title="T", max_tokens=100, overlap_tokens=True)  # type: ignore[arg-type]
    assert info.value.field == "overlap_tokens"


def test_decorated_headings_read_the_same_as_the_document_title() -> None:
    # One heading rule for sections and titles: closing hashes and {#id} are not part of the text.
    # A heading left with no text (only an id) is no heading: its line stays in the section.
    body = "\n\n".join(["## Setup {#setup}", sentences("setup", 4), "### {#only-an-id}", sentences("more", 4)])
    chunks = chunk_markdown(body, title="T", max_tokens=200)
    assert [(c.section_title, c.heading_path) for c in chunks] == [("Setup", ("Setup",))]
    assert chunks[0].text.startswith("## Setup {#setup}\n\nThe setup note 0")
    assert "### {#only-an-id}\n\nThe more note 0" in chunks[0].text


def test_nested_list_lines_are_sentence_cuts_when_an_item_is_too_big() -> None:
    # One top-level item too big for a chunk is cut at its nested items' lines (any list marker,
    # "3)" included), not mid-line, although no line ends a sentence.
    nested = "\n".join(f"    {i}) nested step {i} installs one robot package" for i in range(1, 40))
    chunks = chunk_markdown("## Steps\n\n- Parent item\n" + nested, title="T", max_tokens=60, overlap_tokens=0)
    assert len(chunks) > 1
    lines = [line.strip() for chunk in chunks for line in body_after_heading(chunk).split("\n")]
    assert lines[0] == "- Parent item"
    assert lines[1:] == [f"{i}) nested step {i} installs one robot package" for i in range(1, 40)]


# --- the model window (issue 16) ----------------------------------------------------------


def assert_fences_whole(chunk_text: str, source_lines: set[str]) -> None:
    """Every fence in the chunk is closed and holds only whole lines of the source."""
    for part in fenced_parts(chunk_text):
        assert all(line in source_lines for line in part[1:-1]), part


@st.composite
def markdown_documents(draw: st.DrawFn) -> tuple[str, str]:
    """A title and a body of headings, paragraphs, lists, code fences and tables, any of them long."""
    words = st.text(alphabet="abcdefghij", min_size=1, max_size=8)
    blocks: list[str] = []
    for n in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["heading", "paragraph", "list", "code", "table", "code_in_list"]))
        if kind == "heading":
            blocks.append("#" * draw(st.integers(1, 4)) + " " + " ".join(draw(st.lists(words, min_size=1, max_size=6))))
        elif kind == "paragraph":
            blocks.append(". ".join(" ".join(draw(st.lists(words, min_size=1, max_size=20)))
                                    for _ in range(draw(st.integers(1, 30)))) + ".")
        elif kind == "list":
            blocks.append("\n".join(f"- {' '.join(draw(st.lists(words, min_size=1, max_size=25)))}"
                                    for _ in range(draw(st.integers(1, 25)))))
        elif kind in ("code", "code_in_list"):
            indent = "  " if kind == "code_in_list" else ""
            lines = [f"{indent}x{n}_{i} = f({' '.join(draw(st.lists(words, max_size=8)))})"
                     for i in range(draw(st.integers(0, 80)))]
            fence = f"{indent}```python\n" + "\n".join(lines) + f"\n{indent}```"
            blocks.append(f"- step {n} runs:\n\n{fence}" if indent else fence)
        else:
            rows = [f"| {' '.join(draw(st.lists(words, min_size=1, max_size=4)))} | {i} |"
                    for i in range(draw(st.integers(1, 30)))]
            blocks.append("| name | n |\n|---|---|\n" + "\n".join(rows))
    title = " ".join(draw(st.lists(words, min_size=1, max_size=8)))
    return title, "\n\n".join(blocks)


#: Found by the property below on a fresh clone: two empty sections merged forward carried their headings in front
#: of a fence that no chunk could hold with them, and the whole fence went in, past the window.
_HEADINGS_BEFORE_A_FENCE = ("a", "# a a a\n\n# a a a a\n\n```python\n" + "".join(f"x2_{i} = f()\n" for i in range(9))
                            + "```")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown_documents(), st.integers(min_value=60, max_value=300), st.integers(min_value=20, max_value=300))
@example(_HEADINGS_BEFORE_A_FENCE, 60, 20)
def test_property_no_chunk_passes_the_window_and_no_fence_is_cut_mid_line(
    case: tuple[str, str], window: int, max_tokens: int
) -> None:
    title, body = case
    chunks = chunk_markdown(body, title=title, max_tokens=max_tokens, overlap_tokens=min(10, max_tokens - 1),
                            window_tokens=window)
    source_lines = set(body.split("\n"))
    for chunk in chunks:
        # Title line + chunk fit the window (every generated line is short enough to fit alone).
        assert default_count_tokens(f"{title}\n{chunk.text}") <= window, chunk.text
        assert_fences_whole(chunk.text, source_lines)


def test_the_sample_book_fits_minilms_window_with_every_fence_whole() -> None:
    from retrieval_lib.ingest import SAMPLE_BOOK
    from retrieval_lib.ingest.documents import discover_documents, is_stub, read_document

    window = 254  # MiniLM's 256 minus [CLS] and [SEP]
    checked = 0
    for path in discover_documents(SAMPLE_BOOK):
        doc = read_document(path, SAMPLE_BOOK)
        if is_stub(doc):
            continue
        source_lines = set(doc.body.split("\n"))
        for chunk in chunk_markdown(doc.body, title=doc.title, window_tokens=window):
            assert default_count_tokens(f"{doc.title}\n{chunk.text}") <= window, (doc.source_file, chunk.sequence)
            assert_fences_whole(chunk.text, source_lines)
            checked += 1
    assert checked > 300


def test_window_lowers_max_tokens_by_the_title_line() -> None:
    body = "## S\n\n" + sentences("w", 40)
    title = "A Title Of Ten Tokens Or So For The Page"
    chunks = chunk_markdown(body, title=title, max_tokens=200, overlap_tokens=0, window_tokens=100)
    room = 100 - default_count_tokens(title + "\n")
    assert max(c.token_count for c in chunks) <= room < 200


def test_a_lead_in_stays_with_the_list_it_introduces() -> None:
    items = "\n".join(f"- Tool {i} does one useful job for the robot workspace." for i in range(7))
    body = "## Tools\n\nMuch of the value lies in its shared tools:\n\n" + items + "\n\n" + sentences("after", 12)
    chunks = chunk_markdown(body, title="T", max_tokens=90, overlap_tokens=0, window_tokens=200)
    assert chunks[0].text.startswith("## Tools\n\nMuch of the value lies in its shared tools:\n\n- Tool 0")
    assert all(c.token_count >= 40 for c in chunks)
    # Without the avoidance, the lead-in is a fragment of its own.
    plain = chunk_markdown(body, title="T", max_tokens=90, overlap_tokens=0, min_tokens=0)
    assert plain[0].text == "## Tools\n\nMuch of the value lies in its shared tools:"


def test_a_short_tail_folds_back_into_its_sections_previous_chunk() -> None:
    code = "```bash\n" + "\n".join(f"echo step {i}" for i in range(23)) + "\n```"
    body = "## Run\n\n" + code + "\n\nDone."  # heading + code: 79 tokens, one short of the 80 below
    plain = chunk_markdown(body, title="T", max_tokens=80, overlap_tokens=0, min_tokens=0)
    assert [c.text for c in plain] == ["## Run\n\n" + code, "## Run (continued)\n\nDone."]
    folded = chunk_markdown(body, title="T", max_tokens=80, overlap_tokens=0, window_tokens=150)
    assert [c.text for c in folded] == [body]  # past max_tokens, within the window
