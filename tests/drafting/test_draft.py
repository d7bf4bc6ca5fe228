"""Drafting a validation set from a collection: what is drafted, what is dropped and why, what a re-draft keeps.

Small handmade collections in qdrant-client's memory mode, with a hashed bag-of-words embedder (no model load):
the rules are about text, and the one search pass only has to rank by shared words.
"""

from __future__ import annotations

import hashlib

import pytest
import yaml
from fakes.embedders import FakeEmbedder, hashed_bag_of_words
from qdrant_client import models

from retrieval_lib.collection import CollectionView, PayloadRoles
from retrieval_lib.collection.boilerplate import HEADING_MAX_CHARS, is_placeholder, is_table_of_contents, stock_page
from retrieval_lib.drafting import draft_collection, write_draft
from retrieval_lib.drafting.language import detect_language, is_generic_heading, normalise_heading
from retrieval_lib.drafting.negatives import MIN_NEGATIVES, load_negatives
from retrieval_lib.errors import ParamsError, ReadOnlyError, ValidationError
from retrieval_lib.params import load_golden_set, load_query_sets, load_topics
from retrieval_lib.stores.qdrant import VectorStore

BODY = ("The controller reads the joint encoders every millisecond, compares each angle with the planned "
        "trajectory and sends a corrective torque to every motor so that the arm follows its path closely "
        "even when the payload changes during the motion.")


def _page(path: str, title: str, sections: list[tuple[str, str]]) -> list[dict]:
    """A page as a team's pipeline stores it: text with markdown headings, a URL, a title, an index."""
    chunks = [f"# {title}\n\n{BODY} {title.lower()} overview."]
    chunks += [f"## {h}\n\n{body}" for h, body in sections]
    url = f"https://book.example/docs/{path}"
    return [{"text": t, "url": url, "title": title, "chunk_index": i} for i, t in enumerate(chunks)]


def _book() -> list[dict]:
    own = lambda word: f"{BODY} This part is about {word} {word} {word} in particular."  # noqa: E731
    return (
        _page("control/pid", "PID Control", [("Tuning the Gains", own("gains")), ("Summary", own("recap")),
                                             ("Anti-Windup", "Clamp it.")])
        + _page("control/mpc", "Model Predictive Control", [("Prediction Horizon", own("horizon")),
                                                            ("Summary", own("review"))])
        + _page("sensing/lidar", "Lidar Sensors", [("Point Clouds", own("points")), ("Copied Section", BODY)])
        + _page("sensing/camera", "Camera Models", [("Pinhole Model", own("pinhole")), ("Copied Section", BODY)])
        + _page("sensing/todo", "Radar", [])[:0] + [
            {"text": "# Radar\n\nComing soon.", "url": "https://book.example/docs/sensing/radar", "title": "Radar",
             "chunk_index": 0}]
        + [{"text": "# Tutorial Intro\n\nLet's discover **Docusaurus in less than 5 minutes**. Get started by "
                    "creating a new site: npm init docusaurus@latest my-website classic. " + BODY,
            "url": "https://book.example/docs/tutorial-basics/intro", "title": "Tutorial Intro", "chunk_index": 0}]
        + [{"text": "## Contents\n\n- [PID](/docs/control/pid)\n- [MPC](/docs/control/mpc)\n- [Lidar](/l)\n"
                    "- [Camera](/c)", "url": "https://book.example/docs/index", "title": None, "chunk_index": 0}]
    )


ROLES = PayloadRoles.from_profile({"content": "text", "source_url": "url", "title": "title",
                                   "chunk_sequence": "chunk_index", "source_file": "url:url"})


@pytest.fixture
def emb():
    return FakeEmbedder(hashed_bag_of_words(64), dimension=64)


def _collection(rows: list[dict], emb) -> CollectionView:
    store = VectorStore.in_memory()
    store.create_collection("book", emb.dimension)
    vectors = emb.embed_documents([r["text"] for r in rows])
    store.upsert("book", [models.PointStruct(id=hashlib.md5(f"{r['url']}:{r['chunk_index']}".encode()).hexdigest(),
                                             vector=v, payload=r) for r, v in zip(rows, vectors)])
    return CollectionView(store, ROLES)


@pytest.fixture
def drafted(emb):
    view = _collection(_book(), emb)
    return draft_collection(view, "book", emb, per_file=5), view


def test_headings_become_queries_expecting_their_own_page(drafted):
    d, _ = drafted
    by = {k.query: k for k in d.known}
    assert by["Tuning the Gains"].expected == "/docs/control/pid" and by["Tuning the Gains"].kind == "heading"
    assert by["PID Control"].kind == "title" and by["Prediction Horizon"].expected == "/docs/control/mpc"
    # every real page got a query; the boilerplate pages none
    assert {k.page for k in d.known} == {"docs/control/pid", "docs/control/mpc", "docs/sensing/lidar",
                                         "docs/sensing/camera"}


def test_generic_headings_are_qualified_by_their_page_title(drafted):
    d, _ = drafted
    queries = {k.query for k in d.known}
    assert "PID Control: Summary" in queries and "Model Predictive Control: Summary" in queries
    assert "Summary" not in queries


def test_fragments_duplicates_and_boilerplate_are_dropped_with_the_reason(drafted):
    d, _ = drafted
    why = {(x.page, x.text): x.reason for x in d.dropped}
    assert why[("docs/control/pid", "Anti-Windup")].startswith("fragment: 2 words")
    assert why[("docs/sensing/lidar", "Copied Section")].startswith("duplicate: the same text is stored under "
                                                                    "docs/sensing/camera")
    assert "Docusaurus tutorial stock page" in why[("docs/tutorial-basics/intro", "Tutorial Intro")]
    assert "placeholder" in why[("docs/sensing/radar", "Radar")]
    assert why[("docs/index", "docs/index")] == "boilerplate: a table of contents"


def test_a_title_several_pages_share_is_asked_of_none_of_them(emb):
    """A pipeline that titles pages by file name calls every index.md "Index": the title names no one page, so it
    is dropped for all six (not kept for the first and failed by 02), each with the reason."""
    own = lambda word: f"{BODY} This part is about {word} {word} {word} in particular."  # noqa: E731
    rows = [row for i, part in enumerate(["control", "sensing", "planning", "vision", "hands", "legs"])
            for row in _page(f"{part}/index", "Index", [(f"{part.title()} Basics", own(part))])]
    d = draft_collection(_collection(rows + _page("control/pid", "PID Control", []), emb), "book", emb, per_file=5)
    queries = {k.query for k in d.known}
    assert "Index" not in queries and "PID Control" in queries
    why = [x for x in d.dropped if x.text == "Index"]
    assert len(why) == 6 and {x.reason for x in why} == {"a title 6 pages share: it names none of them"}
    assert {f"{p.title()} Basics" for p in ("control", "legs")} <= queries  # their headings are still asked


def test_per_file_caps_the_queries_of_a_page(emb):
    view = _collection(_book(), emb)
    d = draft_collection(view, "book", emb, per_file=1)
    pages = [k.page for k in d.known]
    assert len(pages) == len(set(pages)) == 4
    with pytest.raises(ValidationError):
        draft_collection(view, "book", emb, per_file=0)


def test_topics_come_from_top_level_sections_with_their_prefix(drafted):
    d, _ = drafted
    assert {(t.topic, t.expected_prefix) for t in d.topics} == {("control", "docs/control/"),
                                                               ("sensing", "docs/sensing/")}
    assert any("only 1 page" in x.reason for x in d.topics_dropped)  # tutorial-basics


def test_negatives_are_kept_only_below_the_in_domain_median(drafted):
    d, _ = drafted
    assert len(d.negatives) >= MIN_NEGATIVES and d.median is not None
    for n in d.negatives:
        assert n.kept == (n.best_score is None or n.best_score < d.median), n


def test_a_negative_the_book_answers_is_dropped(emb):
    # a cooking page in the book: the shipped cooking questions score above the book's median and are dropped
    recipe = ("What is the best pizza recipe? The best pizza recipe uses a slow dough, tomato, basil and "
              "mozzarella, baked in the hottest oven you have for six to eight minutes. " * 2)
    rows = _book() + [{"text": f"# The Best Pizza Recipe\n\n{recipe}", "url": "https://book.example/docs/food/pizza",
                       "title": "The Best Pizza Recipe", "chunk_index": 0}]
    d = draft_collection(_collection(rows, emb), "book", emb)
    pizza = next(n for n in d.negatives if "pizza" in n.query)
    assert not pizza.kept and "the book answers it" in pizza.reason


def test_drafting_only_reads(drafted):
    _, view = drafted
    with pytest.raises(ReadOnlyError):
        view.upsert("book", [])


# --------------------------------------------------------------------------- the files, and a re-draft

def test_the_files_follow_the_contract_and_load(drafted, tmp_path):
    d, _ = drafted
    files = write_draft(d, tmp_path / "draft", base={"collection": "book", "candidate_threshold": 0.4,
                                                     "golden_set": ""})
    golden = load_golden_set(files["golden"])
    assert golden.marked and golden.provenance.drafted == len(d.known) and golden.provenance.reviewed == 0
    assert golden.min_score == 0.4 and golden.required_passes == -(-8 * len(d.known) // 10)
    raw = yaml.safe_load(files["golden"].read_text())
    assert all(q["origin"] == "drafted" and len(q["draft_id"]) == 12 and q["drafted_from"]["kind"] in
               ("title", "heading", "lead") for q in raw["queries"])
    sets = load_query_sets(files["queries"], required=("in_domain", "out_of_domain"))
    assert sets.provenance_of("in_domain").drafted == len(d.known)
    assert sets.sources["in_domain"]["Tuning the Gains"] == "/docs/control/pid"
    assert load_topics(files["topics"]).provenance.drafted == 2
    profile = yaml.safe_load(files["profile"].read_text())
    assert profile["collection"] == "book" and profile["candidate_threshold"] == 0.4
    assert profile["golden_set"].endswith("golden.yaml") and profile["topics"].endswith("topics.yaml")


def test_a_redraft_never_overwrites_reviewed_or_rejected_entries(drafted, tmp_path):
    d, _ = drafted
    out = tmp_path / "draft"
    files = write_draft(d, out)
    raw = yaml.safe_load(files["golden"].read_text())
    # a person reviews: edits one question, rejects another, marks a negative answerable
    raw["queries"][0].update(query="How do I tune PID gains?", origin="reviewed")
    raw["queries"][1]["status"] = "rejected"
    raw["negatives"][0].update(origin="reviewed", answerable=True)
    edited, rejected = raw["queries"][0], raw["queries"][1]
    files["golden"].write_text(yaml.safe_dump(raw, allow_unicode=True))
    write_draft(d, out)
    again = yaml.safe_load(files["golden"].read_text())
    ids = [q["draft_id"] for q in again["queries"]]
    assert len(ids) == len(set(ids)) == len(raw["queries"])  # nothing added twice
    assert edited in again["queries"] and rejected in again["queries"]
    assert again["negatives"][0]["answerable"] is True
    golden = load_golden_set(files["golden"])
    assert golden.provenance.reviewed == 1 and golden.provenance.drafted == len(ids) - 2  # rejected skipped
    assert "How do I tune PID gains?" in [q.query for q in golden.queries]
    assert raw["negatives"][0]["query"] not in [n.query for n in golden.negatives]  # answerable: not a negative


def test_a_book_whose_chunker_folds_whitespace_is_drafted_like_one_that_keeps_lines(emb):
    # " ".join(text.split()), as several teams' chunkers do: "## Heading" and its whole section on one line
    folded = [dict(r, text=" ".join(r["text"].split())) for r in _book()]
    d = draft_collection(_collection(folded, emb), "book", emb, per_file=5)
    # every real page still gets a query (its title); the boilerplate pages still none
    assert {k.page for k in d.known} == {"docs/control/pid", "docs/control/mpc", "docs/sensing/lidar",
                                         "docs/sensing/camera"}
    assert {k.query for k in d.known if k.kind == "title"} >= {"PID Control", "Model Predictive Control"}
    # a section on its heading's line is never asked as a heading
    assert all(len(k.source_text) <= HEADING_MAX_CHARS for k in d.known)


# --------------------------------------------------------------------------- the rules on their own

def test_boilerplate_rules():
    assert is_placeholder("# Title\n\nComing soon!") and is_placeholder("## Próximamente")
    assert not is_placeholder(f"## Control {BODY}")  # a section folded onto its heading's line is text
    assert not is_placeholder(BODY)
    assert is_table_of_contents("## Table of contents\n\n- a\n- b")
    assert is_table_of_contents("- [A](a)\n- [B](b)\n- [C](c)\n- [D](d)\nSee also.")
    assert not is_table_of_contents(BODY)
    assert stock_page("Create a Page", "Add Markdown or React files to src/pages to create a standalone page")
    assert stock_page("Create a page", "How to create a page for your robot dashboard") is None


def test_generic_headings_in_several_languages():
    for h in ("Introduction", "2.1 Summary", "Exercises:", "Introducción", "Zusammenfassung", "**Übungen**"):
        assert is_generic_heading(h), h
    assert not is_generic_heading("Inverse Kinematics")
    assert normalise_heading("## Chapter 3: [Joint](x) Limits {#limits} (continued)") == "Joint Limits"


def test_the_book_language_is_read_from_its_text():
    assert detect_language([BODY * 3]).code == "en"
    es = "El robot lee los sensores y calcula la trayectoria para que el brazo siga su camino con precisión."
    assert detect_language([es * 3]).code == "es"
    assert detect_language(["x = 1\ny = 2\nprint(x + y)"]).code == "unknown"


def test_shipped_negatives_exist_in_each_listed_language_and_fall_back_to_english():
    es, lang = load_negatives("es")
    assert lang == "es" and len(es) >= MIN_NEGATIVES and es[0].query.startswith("¿")
    assert len({n.topic for n in es}) >= 20  # unrelated topics, not forty cooking questions
    ja, lang = load_negatives("ja")
    assert lang == "en" and ja[0].query == "What is the best pizza recipe?"


def test_a_bad_negatives_file_is_a_params_error(tmp_path):
    bad = tmp_path / "n.yaml"
    bad.write_text("languages: [en]\nnegatives:\n  - {en: one}\n")
    with pytest.raises(ParamsError, match="fewer than 40"):
        load_negatives("en", bad)
