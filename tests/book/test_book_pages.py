"""The book read as pages: one route rule with the ingest, MkDocs routes, stock pages, sitemaps, bad input."""

from __future__ import annotations

import http.server
import shutil
import threading

import pytest
from warm_cli import run_cli

from retrieval_lib.book import SAMPLE_DOCS, read_docs, read_sitemap, resolve_docs
from retrieval_lib.book.pages import parse_sitemap
from retrieval_lib.book.routes import docusaurus_route, mkdocs_route
from retrieval_lib.errors import ConfigurationError
from retrieval_lib.ingest import documents


def test_the_ingest_and_the_book_share_one_route_rule():
    assert documents.docusaurus_route is docusaurus_route
    assert documents.split_front_matter.__module__ == "retrieval_lib.book.routes"


@pytest.mark.parametrize("rel, expected", [
    ("index.md", "/"), ("README.md", "/"), ("guide/index.md", "/guide"), ("guide/README.md", "/guide"),
    ("guide/setup.md", "/guide/setup"), ("01-guide/02-setup.md", "/01-guide/02-setup"),
])
def test_mkdocs_routes_with_directory_urls(rel, expected):
    assert mkdocs_route(rel) == expected


def test_mkdocs_routes_without_directory_urls():
    assert mkdocs_route("guide/setup.md", use_directory_urls=False) == "/guide/setup.html"
    assert mkdocs_route("guide/index.md", use_directory_urls=False) == "/guide/index.html"


def test_the_sample_book_reads_as_31_pages_with_its_stub_flagged():
    book = read_docs(SAMPLE_DOCS)
    assert book.kind == "docusaurus" and book.route_base == "/docs" and len(book.pages) == 31 and not book.problems
    by_path = {p.path: p for p in book.pages}
    assert by_path["appendices/d-release-notes.md"].stock == "stub"
    overview = by_path["module-01-ros2/01-ros2-overview.md"]
    assert overview.route == "/docs/module-01-ros2/what-is-ros2" and overview.stock is None  # front matter
    assert overview.words > 300 and overview.title
    assert sum(p.stock is None for p in book.pages) == 30


def test_resolve_docs_finds_the_sample_book_from_the_package_not_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_docs("sample_book") == str(SAMPLE_DOCS)
    assert resolve_docs("retrieval_lib/sample_book/docs") == str(SAMPLE_DOCS)
    assert resolve_docs("") is None


def test_a_docusaurus_tutorial_page_is_stock_and_slug_front_matter_sets_the_route(tmp_path):
    docs = tmp_path / "docs"
    (docs / "tutorial-basics").mkdir(parents=True)
    (docs / "tutorial-basics" / "create-a-page.md").write_text(
        "# Create a Page\n\nAdd **Markdown or React** files to `src/pages` to create a **standalone page**.\n\n"
        "Docusaurus is a static site generator. " + "word " * 50, encoding="utf-8")
    (docs / "guide.mdx").write_text("---\nslug: /start/here\n---\n# Guide\n\n" + "real text " * 40, encoding="utf-8")
    book = read_docs(docs)
    by_path = {p.path: p for p in book.pages}
    assert by_path["tutorial-basics/create-a-page.md"].stock == "Docusaurus tutorial"
    assert by_path["guide.mdx"].route == "/docs/start/here" and by_path["guide.mdx"].stock is None


def test_an_mkdocs_site_is_recognised_by_its_config(tmp_path):
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nuse_directory_urls: false\n", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nhello", encoding="utf-8")
    (docs / "setup.md").write_text("# Setup\n\nhello", encoding="utf-8")
    book = read_docs(docs)
    assert book.kind == "mkdocs" and [p.route for p in book.pages] == ["/index.html", "/setup.html"]


def test_a_folder_without_markdown_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"holds no \.md or \.mdx page"):
        read_docs(tmp_path)
    with pytest.raises(ConfigurationError, match="is not a folder"):
        read_docs(tmp_path / "missing")


def test_an_unreadable_page_stays_a_page_with_its_reason(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS / "introduction", docs / "introduction")
    (docs / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve text".encode("latin-1"))
    (docs / "bad-yaml.md").write_text("---\ntitle: [unclosed\n---\n# Bad\n", encoding="utf-8")
    book = read_docs(docs)
    by_path = {p.path: p for p in book.pages}
    assert "not valid UTF-8" in (by_path["latin1.md"].problem or "")
    assert "invalid YAML front matter" in (by_path["bad-yaml.md"].problem or "")
    assert not by_path["latin1.md"].has_text and by_path["latin1.md"].route == "/docs/latin1"
    assert len(book.problems) == 2 and all("\n" not in line for line in book.problems)
    assert by_path["introduction/01-what-is-physical-ai.md"].has_text


SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://book.example/docs/intro/</loc></url>
  <url><loc>https://book.example/docs/guide/setup</loc></url>
  <url><loc>https://book.example/docs/guide/setup</loc></url>
</urlset>"""


def test_a_sitemap_file_gives_routes_without_text(tmp_path):
    path = tmp_path / "sitemap.xml"
    path.write_bytes(SITEMAP)
    book = read_sitemap(path)
    assert book.kind == "sitemap" and not book.has_text
    assert [p.route for p in book.pages] == ["/docs/guide/setup", "/docs/intro"]


@pytest.mark.parametrize("data, reason", [
    (b"<html><body>not a sitemap", "is not XML"),
    (b"<html><body/></html>", "not a sitemap"),
    (b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>x</loc></sitemap>'
     b"</sitemapindex>", "is a sitemap index"),
])
def test_a_sitemap_that_is_not_one_is_a_clear_error(data, reason):
    with pytest.raises(ConfigurationError, match=reason):
        parse_sitemap(data, "s.xml")


class _Sitemap(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = SITEMAP if self.path == "/sitemap.xml" else b"no"
        self.send_response(200 if self.path == "/sitemap.xml" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_sitemap_url_is_fetched_once_on_loopback_and_an_unreachable_one_is_a_clear_error(no_proxies):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Sitemap)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert len(read_sitemap(f"{base}/sitemap.xml", timeout=5).pages) == 2
        with pytest.raises(ConfigurationError, match="answered HTTP 404"):
            read_sitemap(f"{base}/other.xml", timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ConfigurationError, match="is unreachable"):
        read_sitemap(f"{base}/sitemap.xml", timeout=2)


def test_a_docs_folder_named_on_the_command_line_that_is_not_there_is_an_error(tmp_path):
    """A typo in ``book --docs`` is refused with one line and exit 2 (a profile's missing folder is a not-applicable
    finding instead: the run goes on)."""

    from retrieval_lib.config import PROJECT_ROOT

    proc = run_cli(["book", "--docs", tmp_path / "nope"], timeout=120, cwd=PROJECT_ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no such folder" in proc.stderr


@pytest.mark.parametrize("batch_chars", [1, 5_000])
def test_pages_hashed_in_batches_read_as_pages_hashed_one_by_one(batch_chars, monkeypatch):
    """The words of several pages are hashed in one call (pages.BATCH_CHARS at a time): each page's words, count
    and stock mark (and cleaned text) are those of its text alone."""
    from retrieval_lib.book import pages as pages_module
    from retrieval_lib.book.text import clean, words

    whole = read_docs(SAMPLE_DOCS)
    monkeypatch.setattr(pages_module, "BATCH_CHARS", batch_chars)
    batched = read_docs(SAMPLE_DOCS)
    assert [(p.path, p.route, p.title, p.words, p.stock) for p in batched.pages] == \
        [(p.path, p.route, p.title, p.words, p.stock) for p in whole.pages]
    for page in batched.pages:
        text = (SAMPLE_DOCS / page.path).read_text(encoding="utf-8")
        body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text
        assert page.hashes.tolist() == words([body]).hashes.tolist(), page.path
        # its cleaned text, and where each of its words starts in the buffer it shares with the pages read with it
        # (a chunk is found whole by these bytes)
        assert page.cleaned == clean(body), page.path
        begin, end = page.text_span
        assert all(begin <= s < end for s in page.word_starts.tolist())
        assert [page.text_bytes[s:].split(b" ", 1)[0] for s in page.word_starts.tolist()] == page.cleaned.split()


def test_a_symlinked_folder_is_read_as_the_site_generators_read_it_and_a_loop_once(tmp_path):
    docs, shared = tmp_path / "docs", tmp_path / "elsewhere" / "shared"
    shared.mkdir(parents=True)
    docs.mkdir()
    (shared / "page.md").write_text("# Shared\n\n" + "shared words " * 30, encoding="utf-8")
    (docs / "intro.md").write_text("# Intro\n\n" + "intro words " * 30, encoding="utf-8")
    (docs / "shared").symlink_to(shared, target_is_directory=True)
    (shared / "loop").symlink_to(docs, target_is_directory=True)  # back up to the docs folder: read once
    assert [p.route for p in read_docs(docs).pages] == ["/docs/intro", "/docs/shared/page"]
    assert [p.name for p in documents.discover_documents(docs)] == ["intro.md", "page.md"]


def test_a_page_with_lone_carriage_returns_reads_as_the_ingest_reads_it(tmp_path):
    (tmp_path / "cr.md").write_bytes(b"---\rtitle: Lone CR\r---\r# Heading\r" + b"body words " * 30)
    (page,) = read_docs(tmp_path).pages
    doc = documents.read_document(tmp_path / "cr.md", tmp_path)
    assert page.title == doc.title == "Lone CR"
