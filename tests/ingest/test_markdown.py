"""Tests for retrieval_lib.ingest.documents: reading Docusaurus documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_lib.errors import DocumentError, ValidationError
from retrieval_lib.ingest.documents import (
    MarkdownDoc,
    discover_documents,
    docusaurus_route,
    is_stub,
    read_document,
    strip_mdx,
)

REAL_PARAGRAPH = (
    "ROS 2 is a middleware framework for building robot software. It lets independent "
    "processes exchange messages over topics, offers request-response services and "
    "long-running actions, and ships thousands of packages for perception, navigation, "
    "manipulation and control that run on Linux, Windows and macOS."
)


def write(root: Path, rel: str, content: str | bytes) -> Path:
    """Create ``root/rel`` with ``content`` (text is written as UTF-8)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


def doc_with_body(body: str) -> MarkdownDoc:
    return MarkdownDoc(source_file="x.md", front_matter={}, title="X", route="/docs/x", body=body)


# --- front matter and title ---------------------------------------------------


def test_front_matter_is_parsed_and_removed_from_body(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "guide.md",
        "---\ntitle: My Guide\nsidebar_position: 3\ntags: [a, b]\n---\n\n# Heading\n\nText.\n",
    )
    doc = read_document(path, tmp_path)
    assert doc.front_matter == {"title": "My Guide", "sidebar_position": 3, "tags": ["a", "b"]}
    assert doc.body == "# Heading\n\nText."
    assert "---" not in doc.body
    assert doc.source_file == "guide.md"


def test_missing_front_matter_gives_empty_dict(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "a.md", "# Alpha\n\nText.\n"), tmp_path)
    assert doc.front_matter == {}
    assert doc.body == "# Alpha\n\nText."


def test_front_matter_only_recognised_at_the_very_start(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "a.md", "\n---\ntitle: Not front matter\n---\n\nText.\n"), tmp_path)
    assert doc.front_matter == {}
    assert "title: Not front matter" in doc.body


def test_empty_front_matter_block_is_an_empty_dict(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "a.md", "---\n---\n# Alpha\n"), tmp_path)
    assert doc.front_matter == {}
    assert doc.title == "Alpha"


def test_title_comes_from_front_matter_first(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "a.md", "---\ntitle: From Front Matter\n---\n# From Heading\n"), tmp_path)
    assert doc.title == "From Front Matter"


def test_title_falls_back_to_first_h1_outside_code(tmp_path: Path) -> None:
    content = "```bash\n# not the title\n```\n\n## Second level\n\n# Real Title {#custom-id}\n"
    doc = read_document(write(tmp_path, "a.md", content), tmp_path)
    assert doc.title == "Real Title"


def test_title_skips_an_h1_with_no_text_and_drops_closing_hashes(tmp_path: Path) -> None:
    content = "# {#only-an-id}\n\n#\n\n#No space is not a heading\n\n# Real Title ##\n"
    doc = read_document(write(tmp_path, "a.md", content), tmp_path)
    assert doc.title == "Real Title"


def test_title_falls_back_to_stem_without_number_prefix(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, "sub/03-launch-files.md", "Only text, no heading.\n"), tmp_path)
    assert doc.title == "launch-files"


# --- routes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source_file", "front_matter", "expected"),
    [
        ("module-01-ros2/01-ros2-overview.md", {"id": "what-is-ros2"}, "/docs/module-01-ros2/what-is-ros2"),
        ("introduction/01-what-is-physical-ai.md", {"slug": "/intro"}, "/docs/intro"),
        (
            "module-02-simulation/02-gazebo-basics.md",
            {"slug": "gazebo-fundamentals"},
            "/docs/module-02-simulation/gazebo-fundamentals",
        ),
        ("02-guides/index.md", {}, "/docs/guides"),
        ("module-03-isaac/02-isaac-sim-setup.mdx", {}, "/docs/module-03-isaac/isaac-sim-setup"),
    ],
)
def test_route_examples_from_the_book(source_file: str, front_matter: dict, expected: str) -> None:
    assert docusaurus_route(source_file, front_matter) == expected


@pytest.mark.parametrize(
    ("source_file", "expected"),
    [
        ("01-intro.md", "/docs/intro"),
        ("1_intro.md", "/docs/intro"),
        ("02.intro.md", "/docs/intro"),
        ("10- spaced.md", "/docs/spaced"),
        ("03_guides/2.setup.md", "/docs/guides/setup"),
        ("01-a/02-b/03-c.md", "/docs/a/b/c"),
        ("module-01-ros2/notes.md", "/docs/module-01-ros2/notes"),
        ("01-.md", "/docs/01-"),
        ("2024.md", "/docs/2024"),
    ],
)
def test_route_strips_number_prefixes_only_when_something_remains(source_file: str, expected: str) -> None:
    assert docusaurus_route(source_file, {}) == expected


@pytest.mark.parametrize(
    ("source_file", "expected"),
    [
        ("index.md", "/docs"),
        ("README.md", "/docs"),
        ("guides/readme.mdx", "/docs/guides"),
        ("guides/Index.md", "/docs/guides"),
        ("01-tutorial/01-tutorial.md", "/docs/tutorial"),
        ("tutorial/tutorial.md", "/docs/tutorial"),
        ("01-a/02-b/index.md", "/docs/a/b"),
    ],
)
def test_index_readme_and_folder_named_files_take_the_folder_route(source_file: str, expected: str) -> None:
    assert docusaurus_route(source_file, {}) == expected


def test_index_file_ignores_id_but_honours_slug() -> None:
    assert docusaurus_route("guides/index.md", {"id": "overview"}) == "/docs/guides"
    assert docusaurus_route("guides/index.md", {"slug": "start"}) == "/docs/guides/start"


def test_id_replaces_file_name_but_keeps_folders() -> None:
    assert docusaurus_route("01-basics/03-nodes.md", {"id": "ros-nodes"}) == "/docs/basics/ros-nodes"


def test_absolute_slug_replaces_the_whole_path() -> None:
    assert docusaurus_route("a/b/c.md", {"slug": "/x/y/"}) == "/docs/x/y"
    assert docusaurus_route("a/b/c.md", {"slug": "/"}) == "/docs"


def test_relative_slug_keeps_the_folder() -> None:
    assert docusaurus_route("01-a/02-b/c.md", {"slug": "deep/page"}) == "/docs/a/b/deep/page"
    assert docusaurus_route("c.md", {"slug": "top"}) == "/docs/top"


def test_route_base_is_joined_with_single_slashes() -> None:
    assert docusaurus_route("01-intro.md", {}, route_base="/") == "/intro"
    assert docusaurus_route("index.md", {}, route_base="/") == "/"
    assert docusaurus_route("a/b.md", {}, route_base="/docs/") == "/docs/a/b"
    assert docusaurus_route("a/b.md", {"slug": "//x//y/"}, route_base="/handbook") == "/handbook/x/y"


@pytest.mark.parametrize("bad", ["", "/abs/x.md", "../x.md"])
def test_route_rejects_paths_outside_the_docs_root(bad: str) -> None:
    with pytest.raises(ValueError):
        docusaurus_route(bad, {})
    with pytest.raises(ValidationError) as info:
        docusaurus_route(bad, {})
    assert info.value.field == "source_file"


def test_route_rejects_non_text_slug() -> None:
    with pytest.raises(ValueError, match="slug"):
        docusaurus_route("a.md", {"slug": ["x"]})
    with pytest.raises(ValidationError, match="slug") as info:
        docusaurus_route("a.md", {"slug": ["x"]})
    assert info.value.field == "front_matter"


def test_read_document_computes_route_from_relative_path(tmp_path: Path) -> None:
    path = write(tmp_path, "module-03-isaac/02-isaac-sim-setup.mdx", "# Isaac Sim\n")
    doc = read_document(path, tmp_path)
    assert doc.source_file == "module-03-isaac/02-isaac-sim-setup.mdx"
    assert doc.route == "/docs/module-03-isaac/isaac-sim-setup"


def test_read_document_uses_route_base(tmp_path: Path) -> None:
    path = write(tmp_path, "introduction/01-what.md", "---\nslug: /intro\n---\n# What\n")
    assert read_document(path, tmp_path, route_base="/book").route == "/book/intro"


# --- encodings and errors -------------------------------------------------------


def test_utf8_bom_is_removed_and_front_matter_still_found(tmp_path: Path) -> None:
    content = b"\xef\xbb\xbf---\ntitle: With BOM\n---\n# Heading\n"
    doc = read_document(write(tmp_path, "bom.md", content), tmp_path)
    assert doc.front_matter == {"title": "With BOM"}
    assert doc.title == "With BOM"
    assert "\ufeff" not in doc.body


def test_crlf_line_endings_are_normalised(tmp_path: Path) -> None:
    content = b"---\r\ntitle: Windows\r\n---\r\n# Heading\r\n\r\nLine one.\r\nLine two.\r\n"
    doc = read_document(write(tmp_path, "crlf.md", content), tmp_path)
    assert doc.front_matter == {"title": "Windows"}
    assert "\r" not in doc.body
    assert doc.body == "# Heading\n\nLine one.\nLine two."


def test_non_utf8_file_raises_document_error_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "sub/latin1.md", "# Café\n".encode("latin-1"))
    with pytest.raises(DocumentError) as info:
        read_document(path, tmp_path)
    assert "sub/latin1.md" in str(info.value)
    assert "not valid UTF-8 (byte 5)" in str(info.value)
    assert info.value.path == "sub/latin1.md"


def test_invalid_yaml_front_matter_raises_document_error(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.md", "---\ntitle: [unclosed\nid: x\n---\n# Body\n")
    with pytest.raises(DocumentError) as info:
        read_document(path, tmp_path)
    message = str(info.value)
    assert message.startswith("bad.md: invalid YAML front matter")
    assert info.value.path == "bad.md"


def test_front_matter_that_is_not_a_mapping_raises_document_error(tmp_path: Path) -> None:
    path = write(tmp_path, "list.md", "---\n- a\n- b\n---\n# Body\n")
    with pytest.raises(DocumentError, match="list.md: front matter must be a mapping"):
        read_document(path, tmp_path)


def test_missing_file_raises_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="gone.md: cannot be read"):
        read_document(tmp_path / "gone.md", tmp_path)


def test_non_text_slug_in_file_raises_document_error(tmp_path: Path) -> None:
    path = write(tmp_path, "s.md", "---\nslug: {a: 1}\n---\n# S\n")
    with pytest.raises(DocumentError, match="s.md: front matter 'slug'"):
        read_document(path, tmp_path)


def test_file_outside_docs_root_is_a_value_error(tmp_path: Path) -> None:
    path = write(tmp_path, "outside.md", "# X\n")
    with pytest.raises(ValueError):
        read_document(path, tmp_path / "docs")
    with pytest.raises(ValidationError) as info:
        read_document(path, tmp_path / "docs")
    assert info.value.field == "path"


# --- MDX stripping ----------------------------------------------------------------


def test_mdx_imports_and_exports_are_removed() -> None:
    text = (
        "import Tabs from '@theme/Tabs';\n"
        'import "./styles.css";\n'
        "import {\n  Alpha,\n  Beta,\n} from './components';\n"
        "export const meta = {level: 1};\n"
        "\n# Title\n\nimport the package before use.\n"
    )
    cleaned = strip_mdx(text)
    assert cleaned == "# Title\n\nimport the package before use.\n"


def test_standalone_jsx_tags_are_removed_but_their_text_kept() -> None:
    text = (
        "Intro.\n\n"
        "<Tabs>\n"
        '  <TabItem value="pip" label="pip install">\n\n'
        "Install with pip.\n\n"
        "  </TabItem>\n"
        "  <TabItem\n"
        '    value="conda"\n'
        '    label="conda">\n\n'
        "Install with conda.\n\n"
        "  </TabItem>\n"
        "</Tabs>\n\n"
        '<Foo bar="x" />\n'
        "Outro with <kbd>Ctrl</kbd> inline and <https://example.com>.\n"
    )
    cleaned = strip_mdx(text)
    assert "<Tabs>" not in cleaned and "TabItem" not in cleaned and "<Foo" not in cleaned
    assert "Install with pip." in cleaned and "Install with conda." in cleaned
    assert "Outro with <kbd>Ctrl</kbd> inline and <https://example.com>." in cleaned
    assert cleaned.startswith("Intro.\n\nInstall with pip.\n\nInstall with conda.")


def test_comments_are_removed_outside_code() -> None:
    text = (
        "Keep this. <!-- inline note --> And this.\n\n"
        "<!--\nA block comment\n\nover several lines\n-->\n\n"
        "{/* an MDX comment */}\n\n"
        "Shown as code: `<!-- literal -->`.\n"
    )
    cleaned = strip_mdx(text)
    assert "inline note" not in cleaned
    assert "block comment" not in cleaned and "several lines" not in cleaned
    assert "MDX comment" not in cleaned
    assert "Keep this.  And this." in cleaned
    assert "`<!-- literal -->`" in cleaned


def test_code_blocks_are_never_changed() -> None:
    code = (
        "```xml\n"
        '<robot name="x">\n'
        "  <!-- keep this comment -->\n"
        '  <link name="base"/>\n'
        "</robot>\n"
        "```\n"
        "~~~js\n"
        "import React from 'react';\n"
        "export default function X() {}\n"
        "<Tabs>\n"
        "~~~\n"
    )
    text = "import Tabs from '@theme/Tabs';\n\n# Title\n\n" + code
    cleaned = strip_mdx(text)
    assert code.rstrip("\n") in cleaned
    assert not cleaned.startswith("import")


def test_indented_fence_inside_list_is_protected() -> None:
    text = "- step one:\n\n  ```html\n  <div>\n  </div>\n  ```\n"
    assert strip_mdx(text) == text


def test_read_document_strips_mdx_from_body(tmp_path: Path) -> None:
    content = "---\ntitle: T\n---\nimport Tabs from '@theme/Tabs';\n\n# T\n\n<Tabs>\nText.\n</Tabs>\n"
    doc = read_document(write(tmp_path, "t.mdx", content), tmp_path)
    assert doc.body == "# T\n\nText."


# --- stubs ---------------------------------------------------------------------------


def test_coming_soon_page_is_a_stub() -> None:
    assert is_stub(doc_with_body("# Release Notes\n\nComing soon."))
    assert is_stub(doc_with_body("# Release Notes\n\nThis chapter is COMING SOON, check back later."), min_words=1)


@pytest.mark.parametrize("phrase", ["TODO", "TBD", "Work in progress", "Under construction"])
def test_placeholder_phrases_are_stubs_even_with_a_low_word_threshold(phrase: str) -> None:
    assert is_stub(doc_with_body(f"# Page\n\n:::note\n{phrase}\n:::"), min_words=1)


def test_empty_document_is_a_stub() -> None:
    assert is_stub(doc_with_body(""))
    assert is_stub(doc_with_body(""), min_words=0)


def test_short_document_is_a_stub_and_headings_do_not_count() -> None:
    headings = "\n\n".join(f"## Heading number {i} with several words" for i in range(10))
    assert is_stub(doc_with_body(headings + "\n\nA few words only."))


def test_real_paragraph_is_not_a_stub() -> None:
    doc = doc_with_body("# What Is ROS 2?\n\n" + REAL_PARAGRAPH)
    assert not is_stub(doc)


def test_real_paragraph_mentioning_todo_is_not_a_stub() -> None:
    doc = doc_with_body("# Tasks\n\n" + REAL_PARAGRAPH + " Keep a TODO list of open issues.")
    assert not is_stub(doc)


def test_heading_lines_of_every_form_are_not_counted_as_words() -> None:
    headings = "# Title ##\n## {#id}\n###\n###### Deep heading words here\n"
    body = headings + " ".join(f"word{i}" for i in range(30))
    assert not is_stub(doc_with_body(body), min_words=30)
    assert is_stub(doc_with_body(body), min_words=31)
    # Seven hashes are no heading, so those words count.
    assert not is_stub(doc_with_body("####### one two\n" + " ".join(f"w{i}" for i in range(29))), min_words=31)


def test_min_words_threshold_is_respected() -> None:
    doc = doc_with_body("# Counting\n\n" + " ".join(f"word{i}" for i in range(30)))
    assert not is_stub(doc, min_words=30)
    assert is_stub(doc, min_words=31)
    assert is_stub(doc)  # 30 words is below the default of 40


def test_the_ingest_the_book_and_notebook_10_call_the_same_pages_stubs(tmp_path: Path) -> None:
    # one rule (collection.boilerplate.is_placeholder): the ingest skips, notebook 16 lists and notebook 10 sets apart
    # the same pages, admonition fences aside
    from retrieval_lib.book.pages import read_docs
    from retrieval_lib.checks.collection._offtopic import is_stub as offtopic_stub

    title = " ".join(f"word{i}" for i in range(45))  # an admonition's title: markup, not the page's words
    pages = {"fenced.md": f"# A\n\n:::note {title}\nComing soon.\n:::\n",
             "short.md": "# B\n\nA few words only.\n", "real.md": "# C\n\n" + REAL_PARAGRAPH + "\n",
             "todo.md": "# D\n\n" + REAL_PARAGRAPH + " Keep a TODO list.\n"}
    for name, text in pages.items():
        write(tmp_path, name, text)
    ingest = {p.name for p in discover_documents(tmp_path) if is_stub(read_document(p, tmp_path))}
    book = {page.path for page in read_docs(tmp_path).pages if page.stock == "stub"}
    chunks = {name for name, text in pages.items() if offtopic_stub([text])}
    assert ingest == book == chunks == {"fenced.md", "short.md"}


def test_negative_min_words_is_rejected() -> None:
    with pytest.raises(ValueError):
        is_stub(doc_with_body("text"), min_words=-1)
    with pytest.raises(ValidationError) as info:
        is_stub(doc_with_body("text"), min_words=-1)
    assert info.value.field == "min_words"


# --- discovery -----------------------------------------------------------------------


def test_discover_documents_sorts_and_skips_partials(tmp_path: Path) -> None:
    for rel in [
        "b/02-second.md",
        "b/01-first.mdx",
        "a.md",
        "b/_partial.md",
        "b/_category_.json",
        "_shared/snippet.md",
        ".hidden/x.md",
        "node_modules/pkg/readme.md",
        "b/c/deep.md",
        "b/image.png",
        "b/notes.txt",
    ]:
        write(tmp_path, rel, "# x\n")
    found = discover_documents(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a.md",
        "b/01-first.mdx",
        "b/02-second.md",
        "b/c/deep.md",
    ]
    assert all(p.is_file() for p in found)


def test_discover_documents_requires_a_directory(tmp_path: Path) -> None:
    with pytest.raises(DocumentError):
        discover_documents(tmp_path / "missing")
