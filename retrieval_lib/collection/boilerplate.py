"""Text that is not the book: placeholders, tables of contents, and the stock pages of site generators.

One rule each, shared by whoever must recognise them (``ingest`` skips a placeholder page, ``draft`` never asks
a question whose answer is boilerplate; the off-topic check of notebook 10 may use :func:`stock_page`):

- :func:`is_placeholder`: a text that is essentially "Coming soon", "TODO", "Work in progress" ... (a few words
  around the marker at most), or too short; the one stub rule of the ingest, the book and notebook 10;
- :func:`is_table_of_contents`: a text titled "Contents" / "Table of contents", or made mostly of list lines that
  are links;
- :func:`stock_page`: a page a site generator's project template ships (Docusaurus' tutorial pages, MkDocs'
  welcome page, VitePress' examples, Sphinx's index tables), recognised by its title or by a sentence the
  template writes; returns which template, or None.

All three read text only, so they work on any collection's payloads, in any language for the markers listed.
"""

from __future__ import annotations

import re

__all__ = ["HEADING", "HEADING_MAX_CHARS", "PLACEHOLDER", "PLACEHOLDER_EXTRA_WORDS", "is_placeholder",
           "is_table_of_contents", "stock_page", "WORD"]

#: A word: letters or digits, with inner apostrophes (``don't``), in any script.
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: Placeholder markers ("Coming soon" ...), English, Spanish, German and French.
PLACEHOLDER = re.compile(
    r"\b(?:coming\s+soon|todo|tbd|to\s+be\s+(?:determined|written|added)|work\s+in\s+progress|wip"
    r"|under\s+construction|placeholder|content\s+coming|pr[oó]ximamente|en\s+construcci[oó]n"
    r"|demn[aä]chst|in\s+arbeit|bient[oô]t\s+disponible|en\s+construction)\b",
    re.IGNORECASE,
)
#: A placeholder page may say a little more ("This chapter is coming soon, check back later") and still be one.
PLACEHOLDER_EXTRA_WORDS = 12

#: The longest heading text read as a Markdown heading in a chunk's text, in characters. A chunker that folds
#: whitespace (``" ".join(text.split())``, as several teams' do) leaves a heading and its whole section on one
#: line: "## Setup Install the SDK first ..." is text, not a heading. (Headings are seldom half this long; a folded
#: chunk this short is a fragment by its length anyway.)
HEADING_MAX_CHARS = 120
#: A Markdown (ATX) heading line of a chunk's text: its marks (group 1) and its text (group 2), at most
#: :data:`HEADING_MAX_CHARS` long. The one rule for chunks read from a collection (fragments, placeholders, tables
#: of contents, drafted questions); the ingest parses whole files with its own (``ingest.syntax``).
HEADING = re.compile(rf"^ {{0,3}}(#{{1,6}})[ \t]+([^\n]{{1,{HEADING_MAX_CHARS}}}?)[ \t]*#*[ \t]*$", re.M)
#: An admonition's fence line (``:::note`` / ``:::``): markup, not words of the page.
_ADMONITION = re.compile(r"^[ \t]*:{3,}.*$", re.M)
_TOC_TITLE = re.compile(r"^\s*(?:#{1,6}\s*)?(?:table\s+of\s+contents|contents|toc|[ií]ndice|inhaltsverzeichnis"
                        r"|inhalt|table\s+des\s+mati[eè]res|sommaire)\s*:?\s*$", re.I | re.M)
_LIST_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK = re.compile(r"\[[^\]]+\]\([^)]+\)")

#: Titles and sentences of site generators' template pages (lower case), by template.
_STOCK: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Docusaurus tutorial": (
        ("tutorial intro", "create a page", "create a document", "create a blog post", "deploy your site",
         "congratulations!", "markdown features", "manage docs versions", "translate your site"),
        ("let's discover docusaurus in less than 5 minutes", "npm init docusaurus", "docusaurus.new",
         "add markdown or react files to src/pages to create a standalone page",
         "docusaurus creates a page for each blog post", "docusaurus is a static site generator",
         "you have just learned the basics of docusaurus", "docusaurus can manage multiple versions of your docs",
         "let's translate docs/intro.md to french", "docusaurus supports markdown features",
         "docusaurus supports markdown and a few additional features",
         "documents are groups of pages connected through")),
    "MkDocs welcome page": (("welcome to mkdocs",), ("for full documentation visit mkdocs.org",
                                                     "mkdocs new [dir-name]")),
    "VitePress examples": (("markdown extension examples", "runtime api examples"),
                           ("this page demonstrates some of the built-in markdown extensions provided by vitepress",
                            "this page demonstrates usage of some of the runtime apis provided by vitepress")),
    "Sphinx index": ((), ("indices and tables", "add your content using restructuredtext syntax")),
}


def is_placeholder(text: str, *, min_words: int = 0) -> bool:
    """True for a text with no real content yet: fewer than ``min_words`` words (headings and admonition fences
    aside), or little more than a placeholder marker ("Coming soon", "TODO", "Próximamente" ...; case-insensitive)."""
    body = _ADMONITION.sub("", HEADING.sub("", text or ""))
    words = WORD.findall(body)
    if not words or len(words) < min_words:
        return True
    if PLACEHOLDER.search(body):
        return len(WORD.findall(PLACEHOLDER.sub(" ", body))) < PLACEHOLDER_EXTRA_WORDS
    return False


def is_table_of_contents(text: str) -> bool:
    """True for a table of contents: a "Contents" heading or line, or a text whose non-empty lines are mostly
    (60 % or more, 4 or more lines) list items that are links."""
    if _TOC_TITLE.search(text or ""):
        return True
    lines = [ln for ln in (text or "").splitlines() if ln.strip() and not HEADING.match(ln)]
    links = sum(bool(_LIST_LINE.match(ln) and _LINK.search(ln)) for ln in lines)
    return links >= 4 and links >= 0.6 * len(lines)


_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MD_MARK = re.compile(r"[*`]+|(?<=\w)-(?=\w)")


def _plain(text: str) -> str:
    """Lower case, markdown links reduced to their text, emphasis and code marks dropped, ``static-site`` read
    as ``static site``, whitespace collapsed: a template's sentence matches however the page marked it up."""
    return " ".join(_MD_MARK.sub(lambda m: " " if m.group() == "-" else "", _MD_LINK.sub(r"\1", text.lower()))
                    .split())


def stock_page(title: str | None, text: str | None) -> str | None:
    """The site generator's template this page is a stock page of (``"Docusaurus tutorial"`` ...), or None.

    A page is stock when its title is one of the template's page titles and its text carries one of the
    template's sentences, or when its text carries two of them (a title alone is too common: "Create a page").
    """
    low_title = _plain(title or "")
    low = _plain(text or "")
    for name, (titles, sentences) in _STOCK_PLAIN.items():
        said = sum(s in low for s in sentences)
        if said >= 2 or (said and low_title in titles):
            return name
    return None


#: :data:`_STOCK` as :func:`_plain` reads it, once.
_STOCK_PLAIN = {name: (tuple(_plain(t) for t in titles), tuple(_plain(s) for s in sentences))
                for name, (titles, sentences) in _STOCK.items()}
