"""Notebook 10's detectors: anti-hubs, hubs, off-topic files and the sampled interval.

Each detector is shown firing on a broken collection and staying quiet on the
sound sample book: an off-topic page (a recipe, a site generator's template page,
a changelog) added to a copy of the book is flagged; a planted generic chunk near
everything is found as a hub and breaks the skewness gate; anti-hubs are counted
exactly on a handmade collection whose neighbours are known; and a sampled pass
states an interval that holds the full pass's value.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from corpus import SAMPLE_COLLECTION
from qdrant_client import models

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import _offtopic as offtopic
from retrieval_lib.checks.collection import reachability
from retrieval_lib.errors import ValidationError
from retrieval_lib.ingest import prepare_documents
from retrieval_lib.workbook.report import NotebookReport

pytestmark = pytest.mark.timeout(900)  # the session's sample book is built by the first test

#: The demo profile's gate defaults (params/demo.yaml, "10 reachability").
GATES = {"max_antihub_share": 0.02, "max_nk_skewness": 1.5, "max_offtopic_files": 0}

OFF_TOPIC_PAGES = {
    "cooking.md": """---
title: Classic Margherita Pizza
---
# Classic Margherita Pizza

## Dough
Mix 500 g of flour, 325 ml of lukewarm water, 10 g of salt and 3 g of dry yeast. Knead for ten minutes until the
dough is smooth and elastic, then let it rise covered for at least eight hours at room temperature.

## Sauce
Crush a can of San Marzano tomatoes by hand, season with salt, a splash of olive oil and a few basil leaves.

## Baking
Preheat the oven with a pizza stone for an hour. Stretch the dough, spread the sauce thinly, add torn mozzarella and
bake for six to eight minutes until the crust is blistered. Finish with basil and a drizzle of olive oil.
""",
    "tutorial-intro.md": """---
title: Tutorial Intro
---
# Tutorial Intro

Let's discover **Docusaurus in less than 5 minutes**.

## Getting Started
Get started by **creating a new site**. You need Node.js version 18.0 or above.

## Generate a new site
Generate a new Docusaurus site using the **classic template**: run `npm init docusaurus@latest my-website classic`
in any terminal. The command also installs all the dependencies you need to run Docusaurus.

## Start your site
Run `npm run start` in `my-website`: it builds your website locally and serves it at http://localhost:3000/.
Open `docs/intro.md` (this page) and edit some lines: the site reloads automatically and displays your changes.
""",
    "changelog.md": """---
title: Changelog
---
# Changelog

## 2.4.1
- Fixed a crash in the theme switcher when local storage is disabled.
- Bumped the minimum Node.js version to 18.
- Updated the footer copyright year.

## 2.4.0
- Added a dark mode toggle to the navbar.
- Search plugin now indexes blog posts.
- Deprecated the `legacyRouter` option; it will be removed in 3.0.

## 2.3.2
- Security: upgraded webpack-dev-server.
- Fixed broken links in the sidebar of versioned docs.
""",
}


#: A block of site-building pages written for this test (no template sentence, so only their vectors can tell):
#: like a site generator's tutorial left in the docs, they resemble one another more than the book. Each is long
#: enough (over 40 words) not to be skipped as a stub.
_SITE = " Preview the change with the local development server, which reloads the browser on every save."
SITE_PAGES = {
    "site-howto/blog.md": ("Writing a Blog Entry", "Each blog entry is a markdown file in the blog folder whose name "
                           "starts with the publication date. Authors, tags and a summary go in the front matter; "
                           "the index page lists entries newest first and the feed is rebuilt on every build." + _SITE),
    "site-howto/navbar.md": ("Configuring the Navigation Bar", "The navigation bar is set in the site's config "
                             "file: add an item with a label and a link, choose left or right alignment, and add "
                             "a dropdown for external links. The logo and the colour mode switch sit there too."
                             + _SITE),
    "site-howto/deploy.md": ("Publishing the Website", "Run the build command to produce static HTML, CSS and "
                             "JavaScript in the build folder, then upload that folder to any static host or a "
                             "CDN. Set the base URL when the site is served from a sub-path of the domain." + _SITE),
    "site-howto/translate.md": ("Translating the Website", "Declare the locales in the config file, then copy "
                                "the markdown pages into the i18n folder of each locale and translate them. The "
                                "locale dropdown in the navigation bar switches the language of the whole site."
                                + _SITE),
    "site-howto/versions.md": ("Versioning the Documentation", "Snapshot the current docs as a numbered version "
                               "with the versioning command; older versions stay browsable and a version dropdown "
                               "lets readers switch. Edit the next version in the docs folder as usual." + _SITE),
    "site-howto/pages.md": ("Adding a Standalone Page", "A markdown or React file in the pages folder becomes a "
                            "page at its own URL, outside the docs sidebar. Use it for a landing page, a team "
                            "page or a contact form, styled with the site's CSS modules." + _SITE),
}


def _point(pid, vector, source_file, section="s", content="text"):
    return models.PointStruct(id=pid, vector=[float(x) for x in vector],
                              payload={"source_file": source_file, "section_title": section, "title": source_file,
                                       "content": content})


@pytest.fixture(scope="module")
def book_points(book):
    """Every point of the session's sample book, with its vector."""
    return list(book.store.scroll(SAMPLE_COLLECTION, with_payload=True, with_vectors=True, batch_size=1000))


def _copy_of_book(points, extra=()):
    store = VectorStore.in_memory()
    store.create_collection(SAMPLE_COLLECTION, len(points[0].vector))
    store.upsert(SAMPLE_COLLECTION, [models.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in points]
                 + list(extra))
    return store


def _record(report, study, off):
    reachability.Reachability(study, off, None, **GATES).record(report, show=False)


def test_the_sound_sample_book_passes_every_gate(book, tmp_path):
    study = reachability.measure(book.store, SAMPLE_COLLECTION, top_k=10)
    off = offtopic.measure_offtopic(study.table.files, study.table.titles, study.table.vectors)
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    _record(report, study, off)
    assert [g.passed for g in report.gates] == [True, True, True], report.summary()
    assert not study.sampled and study.antihub.exact
    assert study.occurrence.sum() == study.points * study.top_k  # every query returned k others
    assert off.judged and not off.candidates
    assert off.closest_z is not None and -off.max_z < off.closest_z < 0  # the margin the README's table reports
    assert len(study.hub_rows) < 0.05 * study.points


@pytest.mark.parametrize("page", sorted(OFF_TOPIC_PAGES))
def test_an_off_topic_page_added_to_the_book_is_flagged_with_its_nearest_file(book_points, embedder, tmp_path,
                                                                              page):
    (tmp_path / page).write_text(OFF_TOPIC_PAGES[page], encoding="utf-8")
    prepared, _, _ = prepare_documents(tmp_path, embedder)
    chunks = prepared[page]
    vectors = embedder.embed_documents([c.embed_text for c in chunks])
    store = _copy_of_book(book_points, [models.PointStruct(id=c.point_id, vector=list(v), payload=c.payload)
                                        for c, v in zip(chunks, vectors)])
    table = reachability.read_chunks(store, SAMPLE_COLLECTION)
    off = offtopic.measure_offtopic(table.files, table.titles, table.vectors)
    assert [f.path for f in off.candidates] == [page], offtopic.offtopic_frame(off).head(5).to_string()
    flagged = off.candidates[0]
    assert flagged.title == chunks[0].payload["title"] and flagged.nearest_file in {p.payload["source_file"]
                                                                                   for p in book_points}
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    _record(report, reachability.measure(store, SAMPLE_COLLECTION, top_k=10, table=table), off)
    gate = report.gates[2]
    assert not gate.passed and page in gate.detail and gate.parameter == "max_offtopic_files"


def test_a_block_of_similar_site_pages_left_in_the_book_is_flagged_as_one_group(book_points, embedder, tmp_path):
    """Six pages like each other and unlike the book: alone, each one's rest holds the five others (the old
    single-file rule flags at most a few); the group rule judges the block against the book without it."""
    for path, (title, body) in SITE_PAGES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"---\ntitle: {title}\n---\n# {title}\n\n{body}\n", encoding="utf-8")
    prepared, _, _ = prepare_documents(tmp_path, embedder)
    chunks = [c for items in prepared.values() for c in items]
    vectors = embedder.embed_documents([c.embed_text for c in chunks])
    store = _copy_of_book(book_points, [models.PointStruct(id=c.point_id, vector=list(v), payload=c.payload)
                                        for c, v in zip(chunks, vectors)])
    table = reachability.read_chunks(store, SAMPLE_COLLECTION)
    off = offtopic.measure_offtopic(table.files, table.titles, table.vectors, stock=table.stock)
    assert not off.stock_pages  # nothing here is a template's text: the vectors alone found them
    assert sorted(f.path for f in off.candidates) == sorted(SITE_PAGES), offtopic.offtopic_frame(off).head(8)
    assert len(off.groups) == 1 and sorted(off.groups[0].files) == sorted(SITE_PAGES)
    assert off.closest_z is not None and off.closest_z <= off.groups[0].z
    assert {f.group for f in off.candidates} == {0}
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    _record(report, reachability.measure(store, SAMPLE_COLLECTION, top_k=10, table=table), off)
    gate = report.gates[2]
    assert not gate.passed and gate.value == len(SITE_PAGES) and "a group of 6 files" in gate.detail


def test_a_site_generators_stock_page_is_named_by_its_text_whatever_its_vector():
    """Two template sentences (or the template's title and one) make a stock page, however the page marked them
    up; a book page that mentions the generator once is not one."""
    from retrieval_lib.collection.boilerplate import stock_page

    page = ("Add **Markdown or React** files to `src/pages` to create a **standalone page**. Docusaurus is a "
            "**static-site-generator**: it builds plain HTML.")
    assert stock_page("Create a Page", page) == "Docusaurus tutorial"
    assert stock_page("Anything", page) == "Docusaurus tutorial"  # two sentences, no title needed
    assert stock_page("Deploy our robot docs", "Our site is built with Docusaurus and deployed nightly.") is None
    vectors = np.eye(6)  # six files, each its own direction: no group is apart by its vectors
    files = [f"f{i}.md" for i in range(6)]
    marks = [None] * 5 + ["Docusaurus tutorial"]
    off = offtopic.measure_offtopic(files, files, vectors, stock=marks)
    assert [f.path for f in off.candidates] == ["f5.md"] and off.candidates[0].stock == "Docusaurus tutorial"


def test_a_planted_generic_chunk_near_everything_is_found_as_a_hub(book_points, tmp_path):
    vectors = np.array([p.vector for p in book_points])
    centre = vectors.mean(axis=0)
    hub = _point("00000000-0000-0000-0000-00000000beef", centre / np.linalg.norm(centre), "appendices/index.md",
                 "Index", "Index of every topic in the book")
    store = _copy_of_book(book_points, [hub])
    study = reachability.measure(store, SAMPLE_COLLECTION, top_k=10)
    planted = study.table.ids.index(hub.id)
    assert study.hub_rows[0] == planted, [study.table.files[r] for r in study.hub_rows[:5]]
    assert study.occurrence[planted] > 5 * study.top_k  # in five times as many top-10 lists as a chunk on average
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    off = offtopic.measure_offtopic(study.table.files, study.table.titles, study.table.vectors)
    _record(report, study, off)
    assert not report.gates[1].passed and report.gates[1].parameter == "max_nk_skewness", report.summary()
    # a sample finds it too: its hits among the sampled queries are far beyond a chunk at the threshold
    sampled = reachability.measure(store, SAMPLE_COLLECTION, top_k=10, max_full=100, sample_size=150, seed=3)
    assert sampled.sampled and sampled.hub_rows[:1] == [planted]
    assert sampled.skewness > GATES["max_nk_skewness"]


def _angles_store(degrees):
    store = VectorStore.in_memory()
    store.create_collection("angles", 2)
    store.upsert("angles", [_point(i + 1, (math.cos(math.radians(a)), math.sin(math.radians(a))), f"f{i}.md")
                            for i, a in enumerate(degrees)])
    return store


@pytest.mark.parametrize(("k", "expected"), [(1, [1, 2, 1, 1, 0]), (2, [1, 3, 4, 2, 0])])
def test_anti_hubs_are_counted_exactly_on_a_handmade_collection(k, expected):
    # unit vectors at 0, 10, 25, 45 and 90 degrees: the nearest neighbours follow from the angles alone
    # k=1: 0->10, 10->0, 25->10, 45->25, 90->45;  k=2: 0->{10,25}, 10->{0,25}, 25->{10,45}, 45->{25,10}, 90->{45,25}
    store = _angles_store([0, 10, 25, 45, 90])
    study = reachability.measure(store, "angles", top_k=k)
    assert study.occurrence.tolist() == expected
    assert study.antihub_rows == [4] and study.antihub.share == pytest.approx(0.2) and study.antihub.exact
    off = offtopic.measure_offtopic(study.table.files, study.table.titles, study.table.vectors)
    frame = reachability.Reachability(study, off, None, **GATES).tables()["antihubs"]
    assert frame["source_file"].tolist() == ["f4.md"]


def _clustered_store(points=600, dim=64, clusters=20, seed=1):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    vectors = centres[rng.integers(0, clusters, points)] + 1.2 * rng.normal(size=(points, dim))
    store = VectorStore.in_memory()
    store.create_collection("clustered", dim)
    store.upsert("clustered", [_point(i + 1, v / np.linalg.norm(v), f"f{i % 30}.md") for i, v in enumerate(vectors)])
    return store


def test_a_sampled_pass_states_an_interval_that_holds_the_full_value():
    store = _clustered_store()
    full = reachability.measure(store, "clustered", top_k=10)
    assert 0.005 < full.antihub.share < 0.2  # a collection with anti-hubs to estimate
    for seed in (0, 1):
        sampled = reachability.measure(store, "clustered", top_k=10, max_full=500, sample_size=300, seed=seed)
        est = sampled.antihub
        assert sampled.sampled and est.judged == 300 and not est.exact
        assert est.low <= full.antihub.share <= est.high, (seed, est, full.antihub.share)
        assert est.high - est.low < 0.12
        assert set(sampled.antihub_rows) == set(full.antihub_rows) & set(int(r) for r in sampled.query_rows)
        assert "95% interval" in est.text()
    same = reachability.measure(store, "clustered", top_k=10, max_full=500, sample_size=300, seed=0)
    assert same.query_rows.tolist() == reachability.measure(store, "clustered", top_k=10, max_full=500,
                                                             sample_size=300, seed=0).query_rows.tolist()


def test_bad_parameters_are_refused_with_the_field_named():
    store = _angles_store([0, 10, 25])
    with pytest.raises(ValidationError) as err:
        reachability.measure(store, "angles", top_k=3)
    assert err.value.field == "top_k"
    with pytest.raises(ValidationError) as err:
        reachability.measure(store, "angles", top_k=0)
    assert err.value.field == "top_k"
    with pytest.raises(ValidationError) as err:
        offtopic.measure_offtopic(["a"], ["t"], np.ones((1, 2)), max_z=0)
    assert err.value.field == "offtopic_max_z"


def test_few_files_are_not_judged_off_topic():
    off = offtopic.measure_offtopic(["a.md", "b.md"], ["A", "B"], np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert not off.judged and not off.candidates and "not judged" in off.rule


def test_reach_command_prints_json_and_exits_1_on_a_failed_gate(tmp_path, monkeypatch, capsys):
    from retrieval_lib.cli.main import main

    folder = tmp_path / "store"
    source = _clustered_store(points=300)
    with VectorStore.at_path(folder) as store:
        store.create_collection("clustered", 64)
        store.upsert("clustered", [models.PointStruct(id=p.id, vector=p.vector, payload=p.payload)
                                   for p in source.scroll("clustered", with_vectors=True, batch_size=1000)])
    for name, value in {"QDRANT_PATH": str(folder), "QDRANT_COLLECTION_NAME": "clustered", "QDRANT_URL": "",
                        "QDRANT_API_KEY": "", "QDRANT_ENGINE": ""}.items():
        monkeypatch.setenv(name, value)
    lenient, strict = tmp_path / "lenient.yaml", tmp_path / "strict.yaml"
    # the check reads every parameter of notebook 10 from the profile: these two change the gates only
    lenient.write_text("extends: params/demo.yaml\nmax_antihub_share: 0.5\nmax_nk_skewness: 10.0\n"
                       "max_offtopic_files: 30\nofftopic_max_z: 3.5\n")
    strict.write_text("extends: params/demo.yaml\nmax_antihub_share: 0.5\nmax_nk_skewness: 0.0\n"
                      "max_offtopic_files: 30\nofftopic_max_z: 3.5\n")
    assert main(["reach", "--json", "--no-questions", "--quiet", "--params", str(lenient)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["metrics"]["chunks_as_queries"] == out["metrics"]["points"] == 300
    assert [g["parameter"] for g in out["gates"]] == ["max_antihub_share", "max_nk_skewness", "max_offtopic_files"]
    assert out["metrics"]["reach_top_k"] == 10 and len(out["antihubs"]) == out["metrics"]["antihubs"]
    assert "antihubs_unreached_by_questions" not in out  # no questions asked
    assert main(["reach", "--no-questions", "--quiet", "--params", str(strict), "--sample", "100"]) == 1
    text = capsys.readouterr().out
    assert "[FAIL] no hubs crowd the answers" in text and "95% interval" in text
    # the older options set the profile's parameters: --sample N samples N chunks (reach_max_full at most N)
    assert main(["reach", "--json", "--no-questions", "--quiet", "--params", str(lenient), "--sample", "100",
                 "--top-k", "5", "--seed", "3", "--reverse-depth", "7"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["chunks_as_queries"] == 100 and out["metrics"]["reach_top_k"] == 5
    assert any("100 of 300 chunks sampled as queries (seed 3)" in f for f in out["findings"])
    assert main(["reach", "--no-questions", "--params", str(tmp_path / "missing.yaml")]) == 2


def test_the_check_is_not_applicable_when_only_a_teams_retriever_is_configured(tmp_path):
    class OnlyRetriever:  # what a NotebookRun says when the profile names a retriever and no collection opens
        def collection_absent(self):
            return "only the chatbot's retriever is configured"

    params = dict(golden_set=None, coverage_top_k=5, headings_per_file=6, reach_top_k=10, reach_max_full=5000,
                  reach_sample_size=1000, reach_seed=0, reach_reverse_depth=50, max_offtopic_files=0,
                  offtopic_max_z=4.0, max_antihub_share=0.02, max_nk_skewness=1.5)
    result = reachability.run(OnlyRetriever(), **params)
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    result.record(report, show=False)
    assert [(g.id, g.passed) for g in report.gates] == [("reach.antihubs", None), ("reach.hubs", None),
                                                        ("reach.offtopic", None)]
    assert result.tables() == {} and "only the chatbot's retriever" in str(result)


def test_the_result_records_the_notebooks_figures_and_tables(tmp_path):
    store = _clustered_store(points=120)
    study = reachability.measure(store, "clustered", top_k=5)
    off = offtopic.measure_offtopic(study.table.files, study.table.titles, study.table.vectors)
    result = reachability.Reachability(study, off, None, **GATES)
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    result.record(report, show=False)
    assert list(result.tables()) == ["antihubs", "hubs", "file_distances", "per_file"]
    assert report.tables == [f"tables/10_reachability_{n}.csv" for n in result.tables()]
    assert report.figures == ["figures/10_reachability_occurrence_histogram.png",
                              "figures/10_reachability_per_file.png"]
    assert "120 chunks; 120 used as queries (every chunk), top 5 each" in str(result)


# --- stubs: a placeholder page is listed apart, not judged off-topic ---

#: The sample book's release-notes stub, as a chunker that cut the raw file keeps it (front matter included).
RELEASE_NOTES = "---\ntitle: Release Notes\nsidebar_position: 4\n---\n\n# Release Notes\n\nComing soon.\n"


def test_a_stub_is_read_by_the_rule_notebook_16_reads_a_page_by():
    from retrieval_lib.book import read_docs
    from retrieval_lib.book.pages import SAMPLE_DOCS

    page = next(p for p in read_docs(SAMPLE_DOCS).pages if p.path == "appendices/d-release-notes.md")
    raw = (SAMPLE_DOCS / page.path).read_text(encoding="utf-8")
    assert page.stock == "stub" and offtopic.is_stub([raw])  # the same page, the same verdict
    assert offtopic.is_stub([RELEASE_NOTES])
    assert offtopic.is_stub(["---\ntitle: Release Notes\n---", "# Release Notes\n\nComing soon."])  # cut at headings
    assert offtopic.is_stub(["## Setup\n\nTODO: write this section."])
    real = "# Gazebo\n\n" + " ".join(f"word{i}" for i in range(60))
    assert not offtopic.is_stub([real]) and not offtopic.is_stub([real[:200], real[150:]])
    assert not offtopic.is_stub(["", "  \n"]) and not offtopic.is_stub([])  # no text: nothing known, no stub


def test_a_file_is_read_for_a_stub_only_while_its_text_is_short():
    store = VectorStore.in_memory()
    store.create_collection("stubs", 3)
    rng = np.random.default_rng(0)
    points = [_point(1, rng.normal(size=3), "notes.md", "", RELEASE_NOTES),
              _point(2, rng.normal(size=3), "blank.md", "", "")]  # no content: not known to be a stub
    # a long file made of short chunks, each a placeholder: past STUB_MAX_CHARS it is no stub (and is not kept)
    todo = "TODO. " * 50
    points += [_point(10 + i, rng.normal(size=3), "long.md", "", todo)
               for i in range(offtopic.STUB_MAX_CHARS // len(todo) + 1)]
    points += [_point(100 + i, rng.normal(size=3), "book.md", "", " ".join(f"w{j}" for j in range(80)))
               for i in range(3)]
    store.upsert("stubs", points)
    assert reachability.read_chunks(store, "stubs").stubs == {"notes.md"}


def test_a_stub_page_in_the_collection_is_listed_apart_and_passes_the_off_topic_gate(book_points, embedder,
                                                                                     tmp_path):
    """Tours A and B: a one-chunk "Coming soon." page lies far from the book (z about -6) and failed "no off-topic
    files" with "remove the listed pages"; it is a stub, as notebook 16 names it: listed apart, not judged, and the
    book's files are judged as they were without it."""
    path = "appendices/d-release-notes.md"
    stub = _point("00000000-0000-0000-0000-0000000057b0", embedder.embed_documents([RELEASE_NOTES])[0], path, "",
                  RELEASE_NOTES)
    store = _copy_of_book(book_points, [stub])
    table = reachability.read_chunks(store, SAMPLE_COLLECTION)
    assert table.stubs == {path}
    by_vectors = offtopic.measure_offtopic(table.files, table.titles, table.vectors, stock=table.stock)
    assert [f.path for f in by_vectors.candidates] == [path]  # what its vector alone says: far from the book
    off = offtopic.measure_offtopic(table.files, table.titles, table.vectors, stock=table.stock, stubs=table.stubs)
    assert not off.candidates and [f.path for f in off.stubs] == [path] and not off.stubs[0].offtopic
    sound = offtopic.measure_offtopic(*(np.asarray(x)[np.asarray(table.files) != path] for x in
                                        (table.files, table.titles, table.vectors)))
    assert off.closest_z == pytest.approx(sound.closest_z) and off.rule == sound.rule  # the book judged without it
    frame = offtopic.offtopic_frame(off)
    assert frame.iloc[0]["source_file"] == path and frame.iloc[0]["stock_page"] == "stub"
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    _record(report, reachability.measure(store, SAMPLE_COLLECTION, top_k=10, table=table), off)
    gate = report.gates[2]
    assert gate.passed and gate.value == 0
    assert f"1 stub (a placeholder page) listed apart, not judged: {path}" in gate.detail


def test_a_stock_page_stays_a_candidate_when_it_is_short():
    vectors = np.eye(7)
    files = [f"f{i}.md" for i in range(7)]
    marks = [None] * 6 + ["Docusaurus tutorial"]
    off = offtopic.measure_offtopic(files, files, vectors, stock=marks, stubs={"f5.md", "f6.md"})
    assert [f.path for f in off.candidates] == ["f6.md"] and [f.path for f in off.stubs] == ["f5.md"]
    assert "not judged by vectors: 6 files" in off.rule  # the stub is not among the files (no spread here)


def test_a_hub_without_a_section_is_named_by_its_file_alone(tmp_path):
    """Notebook 10's hub finding read "file.md §" for a chunk that names no section."""
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(80, 16)) + 0.3
    store = VectorStore.in_memory()
    store.create_collection("hubs", 16)
    centre = vectors.mean(axis=0)
    store.upsert("hubs", [_point(i + 1, v / np.linalg.norm(v), f"f{i % 8}.md", f"Part {i}")
                          for i, v in enumerate(vectors)]
                 + [_point(999, centre / np.linalg.norm(centre), "index.md", ""),
                    _point(998, (centre + 0.05) / np.linalg.norm(centre + 0.05), "glossary.md", "Terms")])
    study = reachability.measure(store, "hubs", top_k=5)
    hubs = {study.table.files[r] for r in study.hub_rows}
    assert {"index.md", "glossary.md"} <= hubs
    off = offtopic.measure_offtopic(study.table.files, study.table.titles, study.table.vectors)
    report = NotebookReport("10_reachability", "t", run_dir=tmp_path)
    _record(report, study, off)
    finding = next(f for f in report.findings if f.startswith("N_k skewness"))
    assert "index.md" in finding and "index.md §" not in finding and "glossary.md §Terms" in finding
