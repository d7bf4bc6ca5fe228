"""Sources mapped onto pages: file paths in every form, URLs through routes, the base path, nothing dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_lib.book import URL_FROM_FILE, BookChunks, map_sources, read_docs


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("site") / "docs"
    pages = {
        "index.md": "# Home\n\nwelcome",
        "01-basics/index.md": "# Basics\n\nthe basics",
        "01-basics/02-nodes.md": "# Nodes\n\nnodes",
        "01-basics/03-topics.mdx": "---\nslug: messages\n---\n# Topics\n\ntopics",
        "guide/README.md": "# Guide\n\nguide",
        "guide/setup.md": "---\nid: install\n---\n# Setup\n\nsetup",
    }
    for rel, text in pages.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text, encoding="utf-8")
    return docs


def chunks(files=(), urls=()) -> BookChunks:
    files, urls = list(files), list(urls)
    n = max(len(files), len(urls))
    files += [None] * (n - len(files))
    urls += [None] * (n - len(urls))
    return BookChunks([str(i) for i in range(n)], files, urls, [""] * n, list(range(n)))


def test_file_paths_map_relative_absolute_and_under_a_docs_prefix(site):
    book = read_docs(site)
    m = map_sources(book, chunks(files=["01-basics/02-nodes.md", f"{site}/guide/setup.md",
                                        "docs/01-basics/03-topics.mdx", "gone/page.md"]))
    got = {s.source: s.page for s in m.sources}
    assert got == {"01-basics/02-nodes.md": "01-basics/02-nodes.md", f"{site}/guide/setup.md": "guide/setup.md",
                   "docs/01-basics/03-topics.mdx": "01-basics/03-topics.mdx", "gone/page.md": None}
    assert [s.source for s in m.unmatched] == ["gone/page.md"]
    assert m.counts() == {"file path": 1, "file path under a prefix": 2, "no page": 1}


def test_urls_map_through_docusaurus_routes_with_an_inferred_base_path(site):
    book = read_docs(site)
    urls = ["https://x.example/docs/basics/nodes/", "https://x.example/docs/basics/messages",
            "https://x.example/docs/guide/install", "https://x.example/docs/guide", "https://x.example/docs/basics",
            "https://x.example/docs/", "https://x.example/docs/basics/removed"]
    m = map_sources(book, chunks(urls=urls))
    got = {s.source: s.page for s in m.sources}
    assert got == {urls[0]: "01-basics/02-nodes.md", urls[1]: "01-basics/03-topics.mdx",
                   urls[2]: "guide/setup.md", urls[3]: "guide/README.md", urls[4]: "01-basics/index.md",
                   urls[5]: "index.md", urls[6]: None}
    assert m.base_path == "/docs" and m.base_origin.startswith("inferred from 5 of 5")


def test_urls_built_from_file_names_map_too_and_another_base_path_is_not_matched(site):
    book = read_docs(site)
    urls = ["https://x.example/docs/01-basics/02-nodes", "https://x.example/docs/guide/setup",
            "https://x.example/blog/guide/setup"]
    m = map_sources(book, chunks(urls=urls))
    got = {s.source: (s.page, s.how, s.hint) for s in m.sources}
    # their pages are found, and said to be at other routes: the site serves neither URL (a chatbot citing them
    # links to nothing)
    assert got[urls[0]] == ("01-basics/02-nodes.md", URL_FROM_FILE,
                            "served at /docs/basics/nodes")
    assert got[urls[1]] == ("guide/setup.md", URL_FROM_FILE,
                            "served at /docs/guide/install")
    assert got[urls[2]][0] is None and "under /blog" in got[urls[2]][2]


def test_urls_built_from_file_paths_without_the_front_matter_find_their_page_at_another_route(site):
    # Docusaurus drops the number prefixes, as the team did, but its front matter's slug and id move the page:
    # the pages were ingested (never "missing"), their chunks are not "gone", and the URLs are not the site's
    book = read_docs(site)
    urls = ["https://x.example/docs/basics/topics", "https://x.example/docs/basics/messages",
            "https://x.example/docs/basics/removed"]
    m = map_sources(book, chunks(urls=urls))
    got = {s.source: (s.page, s.how, s.hint) for s in m.sources}
    assert got[urls[0]] == ("01-basics/03-topics.mdx", URL_FROM_FILE,
                            "served at /docs/basics/messages")
    assert got[urls[1]] == ("01-basics/03-topics.mdx", "URL route", "")
    assert got[urls[2]] == (None, "no page", "")
    assert m.base_path == "/docs" and [s.source for s in m.unmatched] == [urls[2]]


def test_an_absolute_slug_read_as_a_relative_one_finds_its_page(tmp_path):
    # "slug: /faq" serves the page at /docs/faq; a team that reads it as relative links to /docs/guide/faq
    docs = tmp_path / "docs"
    (docs / "02-guide").mkdir(parents=True)
    (docs / "02-guide" / "01-faq.md").write_text("---\nslug: /faq\n---\n# FAQ\n\nquestions", encoding="utf-8")
    (docs / "02-guide" / "02-tips.md").write_text("# Tips\n\ntips", encoding="utf-8")
    book = read_docs(docs)
    urls = ["https://x.example/docs/guide/faq", "https://x.example/docs/guide/tips", "https://x.example/blog/faq",
            "https://x.example/docs/faq"]
    m = map_sources(book, chunks(urls=urls))
    got = {s.source: (s.page, s.how, s.hint) for s in m.sources}
    assert m.base_path == "/docs"
    assert got[urls[0]] == ("02-guide/01-faq.md", URL_FROM_FILE, "served at /docs/faq")
    assert got[urls[1]] == ("02-guide/02-tips.md", "URL route", "")
    assert got[urls[3]] == ("02-guide/01-faq.md", "URL route", "")
    # under another base path it is still another site's page, not this one
    assert got[urls[2]][0] is None and "under /blog" in got[urls[2]][2]


def test_a_given_base_url_that_matches_no_source_is_a_problem_not_a_list_of_gone_pages(site):
    book = read_docs(site)
    m = map_sources(book, chunks(urls=["https://x.example/docs/basics/nodes"]), base_url="https://other.example")
    assert m.problem and "matches none of the collection's 1 source URLs" in m.problem
    ok = map_sources(book, chunks(urls=["https://x.example/docs/basics/nodes"]), base_url="https://x.example",
                     route_base="/docs")
    assert ok.problem is None and ok.sources[0].page == "01-basics/02-nodes.md" and ok.base_origin == "given"


def test_a_chunk_without_any_source_is_counted_not_dropped(site):
    m = map_sources(read_docs(site), chunks(files=["01-basics/02-nodes.md", None]))
    assert m.no_source == 1 and sum(s.chunks for s in m.sources) == 1


def test_file_name_urls_match_a_sitemap_by_dropping_number_prefixes_and_say_so(tmp_path):
    from retrieval_lib.book import read_sitemap

    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                       "<url><loc>https://x.example/docs/basics/nodes/</loc></url>"
                       "<url><loc>https://x.example/docs/basics/topics</loc></url></urlset>", encoding="utf-8")
    urls = ["https://x.example/docs/01-basics/02-nodes", "https://x.example/docs/basics/topics",
            "https://x.example/docs/01-basics/09-gone"]
    m = map_sources(read_sitemap(sitemap), chunks(urls=urls))
    got = {s.source: (s.page, s.how) for s in m.sources}
    assert got == {urls[0]: ("/docs/basics/nodes", "URL route, number prefixes dropped"),
                   urls[1]: ("/docs/basics/topics", "URL route"), urls[2]: (None, "no page")}


def test_site_relative_urls_are_routes_and_a_file_beside_an_unserved_url_does_not_hide_it(site):
    # team #2's ingest writes page_url "/01-basics/02-nodes" (the file path, no address, no /docs) beside the file
    # name: a chatbot citing it links to nothing, whether or not the file path also names the page
    book = read_docs(site)
    alone = map_sources(book, chunks(urls=["/01-basics/02-nodes", "/guide/setup", "/basics/nodes/",
                                           "/guide/setup.md"]))
    got = {s.source: (s.page, s.how, s.hint) for s in alone.sources}
    assert got["/01-basics/02-nodes"] == ("01-basics/02-nodes.md", URL_FROM_FILE, "served at /docs/basics/nodes")
    assert got["/guide/setup"] == ("guide/setup.md", URL_FROM_FILE, "served at /docs/guide/install")
    assert got["/basics/nodes/"] == ("01-basics/02-nodes.md", "URL route", "")
    assert got["/guide/setup.md"] == ("guide/setup.md", "file path", "")  # a file's extension: a file path

    both = map_sources(book, chunks(files=["01-basics/02-nodes.md", "guide/README.md"],
                                    urls=["/01-basics/02-nodes", "https://x.example/docs/guide"]))
    got = {s.source: (s.page, s.how, s.hint, s.url) for s in both.sources}
    assert got["01-basics/02-nodes.md"] == ("01-basics/02-nodes.md", URL_FROM_FILE, "served at /docs/basics/nodes",
                                            "/01-basics/02-nodes")
    assert got["guide/README.md"] == ("guide/README.md", "file path", "", "https://x.example/docs/guide")


def test_a_sitemaps_percent_encoded_urls_are_the_pages_the_sources_name(tmp_path):
    # a non-ASCII slug or a space is percent-encoded in a sitemap: the page, not a page never ingested beside a
    # source gone
    from retrieval_lib.book import read_sitemap

    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                       "<url><loc>https://x.example/docs/%C3%A9t%C3%A9</loc></url>"
                       "<url><loc>https://x.example/docs/guide/my%20page</loc></url></urlset>", encoding="utf-8")
    book = read_sitemap(sitemap)
    assert [(p.route, p.title) for p in book.pages] == [("/docs/guide/my page", "my page"), ("/docs/été", "été")]
    urls = ["https://x.example/docs/%C3%A9t%C3%A9", "https://x.example/docs/guide/my%20page"]
    m = map_sources(book, chunks(urls=urls))
    assert {s.source: s.page for s in m.sources} == {urls[0]: "/docs/été", urls[1]: "/docs/guide/my page"}


@pytest.mark.parametrize("rel, route", [
    ("blog/2021-11-release.md", "/docs/blog/2021-11-release"),  # a date keeps its digits, as Docusaurus serves it
    ("7.0-upgrade.md", "/docs/7.0-upgrade"),  # a version too
    ("03 - Setup/01--install.md", "/docs/Setup/install"),
])
def test_docusaurus_drops_a_number_prefix_but_not_a_date_or_a_version(tmp_path, rel, route):
    docs = tmp_path / "docs"
    (docs / rel).parent.mkdir(parents=True, exist_ok=True)
    (docs / rel).write_text("# Page\n\n" + "words of the page " * 20, encoding="utf-8")
    (page,) = read_docs(docs).pages
    assert page.route == route
    assert map_sources(read_docs(docs), chunks(urls=[f"https://x.example{route}"])).sources[0].how == "URL route"
