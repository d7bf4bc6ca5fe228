"""The book as the source of truth: its pages, and the collection's sources mapped onto them.

- :mod:`~retrieval_lib.book.routes`: the route rule (Docusaurus, MkDocs) and front matter, one rule shared with
  our ingest;
- :mod:`~retrieval_lib.book.pages`: a docs folder or a sitemap read into :class:`Page` objects;
- :mod:`~retrieval_lib.book.text`: words and word shingles, how chunks and pages are compared;
- :mod:`~retrieval_lib.book.mapping`: the collection's sources mapped onto pages through the payload roles;
- :mod:`~retrieval_lib.book.findings`: pages never ingested, sources gone, pages changed, thin ingest.

The family sits above ``collection`` (it reads a collection through a view) and below the checks, the workbook
and the command line. It never writes: neither the book folder nor the collection.
"""

from retrieval_lib.book.findings import (
    CHANGED_MAX_UNFOUND,
    FOUND_SHARE,
    PageComparison,
    changed_pages,
    compare_pages,
    gone_sources,
    missing_pages,
    thin_pages,
)
from retrieval_lib.book.mapping import (
    FIELDS,
    URL_FROM_FILE,
    BookChunks,
    BookMap,
    BookRoutes,
    SourceMatch,
    book_routes,
    map_sources,
    read_chunks,
    routes_of,
)
from retrieval_lib.book.pages import SAMPLE_DOCS, Book, Page, read_book, read_docs, read_sitemap, resolve_docs
from retrieval_lib.book.routes import docusaurus_route, mkdocs_route

__all__ = ["Book", "Page", "read_book", "read_docs", "read_sitemap", "resolve_docs", "SAMPLE_DOCS",
           "docusaurus_route", "mkdocs_route", "FIELDS", "BookChunks", "BookMap", "SourceMatch", "read_chunks",
           "map_sources", "BookRoutes", "routes_of", "book_routes", "FOUND_SHARE", "CHANGED_MAX_UNFOUND",
           "PageComparison", "compare_pages", "missing_pages", "gone_sources", "changed_pages", "thin_pages",
           "URL_FROM_FILE"]
