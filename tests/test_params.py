"""The parameter files and the notebooks agree, and no profile carries a secret."""

from __future__ import annotations

import json

import papermill as pm
import pytest

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.errors import ParamsError
from retrieval_lib.params import load_golden_set, load_query_sets, load_topics
from retrieval_lib.workbook.runner import list_notebooks, load_profile

NOTEBOOKS = list_notebooks()
PROFILES = sorted((PROJECT_ROOT / "params").glob("*.yaml"))


def test_the_numbered_notebooks_exist():
    assert [nb.stem[:2] for nb in NOTEBOOKS] == [f"{n:02d}" for n in range(0, 17)]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_profile_loads_and_supplies_every_notebook_parameter(profile):
    params = load_profile(profile).values
    for nb in NOTEBOOKS:
        declared = set(pm.inspect_notebook(str(nb))) - {"run_dir"}
        missing = declared - set(params)
        assert not missing, f"{profile.name} lacks {sorted(missing)} for {nb.stem}"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_golden_sets_and_query_sets_named_by_profiles_are_valid(profile):
    params = load_profile(profile).values
    golden = load_golden_set(params["golden_set"])
    assert len(golden.queries) >= golden.required_passes >= 1 and golden.negatives
    sets = load_query_sets(params["query_sets"])
    assert sets["in_domain"] and sets["out_of_domain"]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_conventions(nb):
    data = json.loads(nb.read_text(encoding="utf-8"))
    assert data["metadata"]["kernelspec"]["name"] == "retrieval-lib"
    tagged = [c for c in data["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one parameters cell"
    source = "".join(tagged[0]["source"])
    assert 'run_dir = ""' in source
    assert data["cells"][0]["cell_type"] == "markdown" and "".join(data["cells"][0]["source"]).startswith("# ")
    code = "\n".join("".join(c["source"]) for c in data["cells"] if c["cell_type"] == "code")
    assert "sys.path" not in code and "os.chdir" not in code
    # one helper opens the run (report, retriever, saved whatever happens) and one call ends it
    assert "open_run(" in code and "run.finish()" in code
    assert "NotebookReport(" not in code and "report.save()" not in code and "Retriever.from_settings" not in code


# --------------------------------------------------------------------------- drafted files (docs/drafting.md)

def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOLDEN_DRAFT = """
name: b-drafted
top_k: 5
min_score: 0.4
required_passes: 3
queries:
  - {query: Tuning the Gains, expected_url_patterns: [/docs/pid], origin: drafted, draft_id: aaaaaaaaaaaa}
  - {query: "How do I tune PID gains?", expected_url_patterns: [/docs/pid], origin: reviewed, draft_id: bbbbbbbbbbbb}
  - {query: Anti-Windup, expected_url_patterns: [/docs/pid], origin: drafted, draft_id: cccccccccccc, status: rejected}
  - {query: Hand written, expected_url_patterns: [/docs/pid]}
negatives:
  - {query: "Best pizza?", origin: drafted, draft_id: dddddddddddd}
  - {query: "Best pasta?", origin: reviewed, draft_id: eeeeeeeeeeee, answerable: true}
"""


def test_a_drafted_golden_set_skips_rejected_and_answerable_entries_and_counts_origins(tmp_path):
    g = load_golden_set(_write(tmp_path, "g.yaml", GOLDEN_DRAFT))
    assert [q.query for q in g.queries] == ["Tuning the Gains", "How do I tune PID gains?", "Hand written"]
    assert (g.provenance.drafted, g.provenance.reviewed, g.marked) == (1, 2, True)
    assert [n.query for n in g.negatives] == ["Best pizza?"] and g.negatives_provenance.drafted == 1
    assert g.queries[0].draft_id == "aaaaaaaaaaaa" and g.queries[2].origin == "reviewed"
    assert g.required_passes == 3
    assert g.provenance.phrase() == "on 1 drafted, 2 reviewed queries"


def test_required_passes_shrinks_when_a_review_rejected_drafted_queries(tmp_path):
    text = GOLDEN_DRAFT.replace("required_passes: 3", "required_passes: 4")
    assert load_golden_set(_write(tmp_path, "g.yaml", text)).required_passes == 3
    hand = "queries:\n  - {query: a, expected_url_patterns: [/x]}\nrequired_passes: 2\n"
    with pytest.raises(ParamsError, match="required_passes"):  # a hand-written file is held to its own count
        load_golden_set(_write(tmp_path, "h.yaml", hand))


@pytest.mark.parametrize("bad, match", [
    ("origin: guessed", "origin must be one of drafted, reviewed"),
    ("status: maybe", "status may only be rejected"),
    ("answerable: perhaps", "answerable must be true or false"),
])
def test_a_bad_origin_status_or_answerable_is_a_params_error(tmp_path, bad, match):
    text = f"queries:\n  - {{query: a, expected_url_patterns: [/x], {bad}}}\n"
    with pytest.raises(ParamsError, match=match):
        load_golden_set(_write(tmp_path, "g.yaml", text))


def test_query_sets_read_drafted_mappings_beside_plain_strings(tmp_path):
    text = """
in_domain:
  - What is ROS 2?
  - {query: Tuning the Gains, origin: drafted, draft_id: a1, source: /docs/pid}
  - {query: Dropped one, origin: drafted, draft_id: a2, status: rejected}
out_of_domain:
  - {query: "Best pizza?", origin: drafted, draft_id: n1}
  - {query: "How do PID loops work?", origin: reviewed, draft_id: n2, answerable: true}
"""
    sets = load_query_sets(_write(tmp_path, "q.yaml", text), required=("in_domain", "out_of_domain"))
    assert sets["in_domain"] == ["What is ROS 2?", "Tuning the Gains"] and sets["out_of_domain"] == ["Best pizza?"]
    both = sets.provenance_of("in_domain", "out_of_domain")
    assert (both.drafted, both.reviewed, both.marked) == (2, 1, True)
    assert sets.sources["in_domain"] == {"Tuning the Gains": "/docs/pid"}
    plain = load_query_sets("params/query_sets/sample_book.yaml")
    assert not plain.provenance_of("in_domain").marked and isinstance(plain, dict)
    with pytest.raises(ParamsError, match="non-empty 'query'"):
        load_query_sets(_write(tmp_path, "bad.yaml", "in_domain:\n  - {origin: drafted}\n"))


def test_topics_come_from_a_file_or_from_the_primary_query(tmp_path):
    text = """
topics:
  - {topic: simulation, expected_prefix: module-02-simulation/, origin: drafted, draft_id: t1}
  - {topic: isaac, expected_prefix: module-03-isaac/, origin: drafted, draft_id: t2, status: rejected}
"""
    t = load_topics(_write(tmp_path, "t.yaml", text))
    assert [x.topic for x in t.topics] == ["simulation"] and t.provenance.drafted == 1 and t.marked
    one = load_topics("", primary_query="Gazebo simulation", primary_prefix="module-02-simulation/")
    assert one.topics[0].expected_prefix == "module-02-simulation/" and not one.marked and one.path is None
    with pytest.raises(ParamsError, match="every topic is rejected"):
        load_topics(_write(tmp_path, "r.yaml", text.replace("draft_id: t1}", "draft_id: t1, status: rejected}")))
    with pytest.raises(ParamsError, match="expected_prefix"):
        load_topics(_write(tmp_path, "x.yaml", "topics:\n  - {topic: a}\n"))
    with pytest.raises(ParamsError, match="no topics"):
        load_topics("", primary_query="", primary_prefix=None)


def test_a_profile_extends_another_and_overrides_only_what_it_names(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text("profile: base\ntop_k: 5\nrepeats: 3\n", encoding="utf-8")
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {base}\nprofile: child\nrepeats: 7\n", encoding="utf-8")
    values = load_profile(child).values
    assert values == {"profile": "child", "top_k": 5, "repeats": 7}  # "extends" never reaches a notebook
    base.write_text(f"extends: {child}\ntop_k: 5\n", encoding="utf-8")
    with pytest.raises(ParamsError, match="circle"):
        load_profile(child)


#: What the cloud profile sets differently from the demo: the seed's figures for Cohere embed v3 and its book, and
#: runs sized for a Cohere trial key (the values params/cloud.yaml held before it extended demo.yaml).
CLOUD_OWN = {"profile": "cloud", "candidate_threshold": 0.5, "golden_set": "params/golden/seed004.yaml",
             "primary_prefix": "/docs/module2-simulation", "repeats": 3, "latency_rounds": 1,
             "concurrent_queries": 20, "concurrency": 10, "min_points": 500, "api_repeats": 2,
             "api_concurrency": [10], "api_latency_rounds": 1, "api_max_overhead_ms": 200.0,
             "judgments": "params/judgments/cloud.yaml"}


def test_the_cloud_profile_extends_the_demo_and_names_only_what_differs():
    import yaml

    own = yaml.safe_load((PROJECT_ROOT / "params" / "cloud.yaml").read_text(encoding="utf-8"))
    assert own.pop("extends") == "params/demo.yaml"
    assert own == CLOUD_OWN  # nothing repeated that the demo already says
    demo, cloud = load_profile(PROJECT_ROOT / "params" / "demo.yaml").values, load_profile(
        PROJECT_ROOT / "params" / "cloud.yaml").values
    assert set(cloud) == set(demo)
    assert {k: v for k, v in cloud.items() if v != demo[k]} == CLOUD_OWN
