"""A golden set written against the site's routes, on a site served under a base path.

Teams deploy the book to GitHub Pages, under ``/<repository>/``: team #2's chunks hold
``https://zohaibalam5.github.io/Physical-AI-Book-Course/docs/module-04-vla/...``. A golden set written as the site's
routes (``/docs/module-04-vla/...``) matched none of them: notebook 05 called the sample book's own questions "not
applicable: it describes another book" on a collection of the sample book.
"""

from __future__ import annotations

from test_golden_file_pages import _Retriever, _Store

from retrieval_lib.checks.retrieval.golden_set import evaluate_golden, golden_absent, site_base, url_matches
from retrieval_lib.params.sets import GoldenQuery, GoldenSet

SITE = "https://zohaibalam5.github.io/Physical-AI-Book-Course/docs"
URLS = [f"{SITE}/module-01-ros2/urdf", f"{SITE}/module-02-simulation/why-simulate", f"{SITE}/glossary"]


def test_the_sites_base_path_is_the_segments_every_page_shares():
    assert site_base(URLS) == ("Physical-AI-Book-Course", "docs")
    assert site_base(["https://b.example/docs/a", "https://b.example/blog/b"]) == ()
    assert site_base(["module-01-ros2/03-urdf", "appendices/a-glossary"]) == ()  # files: no site


def test_a_route_pattern_matches_the_page_under_the_base_path_and_nothing_else():
    base = site_base(URLS)
    assert url_matches(URLS[0], "/docs/module-01-ros2/urdf", base)
    assert url_matches(URLS[0], "/module-01-ros2/urdf", base)  # the page's own path
    assert url_matches(URLS[0], "/Physical-AI-Book-Course/docs/module-01-ros2/urdf", base)
    assert not url_matches(URLS[0], "/docs/module-01-ros2/urdf")  # without the base: as before
    assert not url_matches(URLS[0], "/urdf", base)  # a page's name alone is not its route
    assert not url_matches(URLS[1], "/docs/module-01-ros2", base)


def test_the_sample_books_questions_are_judged_on_its_collection_under_a_base_path():
    class _UrlRetriever(_Retriever):
        def search_many(self, queries, top_k):
            responses = super().search_many(queries, top_k)
            pages = {"module-01-ros2/03-urdf": URLS[0], "module-02-simulation/01-why-simulate": URLS[1],
                     "appendices/a-glossary": URLS[2]}
            return [response.model_copy(update={"results": [r.model_copy(update={
                "source_url": pages[r.source_file], "source_file": pages[r.source_file].split("/docs/")[1]})
                for r in response.results]}) for response in responses]

    golden = GoldenSet(name="sample", top_k=5, min_score=0.35, required_passes=2, queries=(
        GoldenQuery("How is a robot described in URDF?", ("/docs/module-01-ros2/urdf",), 0.35),
        GoldenQuery("Why simulate first?", ("/docs/module-02-simulation/why-simulate",), 0.35)))
    store = _Store({u: 3 for u in URLS}, {})
    v = evaluate_golden(_UrlRetriever(store), golden, vector_count=9, metadata_completeness=100.0)
    assert golden_absent(v) is None
    assert [o.relevant_pages for o in v.outcomes] == [(URLS[0],), (URLS[1],)]
    assert v.passed and v.hit_at_k == 1.0
