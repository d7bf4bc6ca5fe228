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


# --------------------------------------------------------------------------- one schema per file, errors in words

def test_a_misspelt_nested_key_in_a_golden_set_is_named_with_its_closest_match(tmp_path):
    text = "queries:\n  - {query: a, expected_url_pattern: [/x]}\n"
    with pytest.raises(ParamsError) as err:
        load_golden_set(_write(tmp_path, "g.yaml", text))
    assert err.value.key == "queries[0].expected_url_pattern" and err.value.path.endswith("g.yaml")
    assert "did you mean 'expected_url_patterns'" in str(err.value)
    with pytest.raises(ParamsError, match="did you mean 'min_score'") as err:  # a top-level one: never ignored
        load_golden_set(_write(tmp_path, "g2.yaml", "min_scroe: 0.3\n" + text.replace("pattern:", "patterns:")))
    assert err.value.key == "min_scroe"


def test_a_misspelt_nested_key_in_a_topics_file_or_a_query_set_is_named_with_its_closest_match(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_topics(_write(tmp_path, "t.yaml", "topics:\n  - {topic: a, expected_prefx: b/}\n"))
    assert err.value.key == "topics[0].expected_prefx" and "did you mean 'expected_prefix'" in str(err.value)
    with pytest.raises(ParamsError) as err:
        load_query_sets(_write(tmp_path, "q.yaml", "in_domain:\n  - a\n  - {query: b, sorce: /x}\n"))
    assert err.value.key == "in_domain[1].sorce" and "did you mean 'source'" in str(err.value)


@pytest.mark.parametrize("text, key, says", [
    ("queries:\n  - {query: a, expected_url_patterns: [/x], min_score: high}\n", "queries[0].min_score",
     "must be a number from 0 to 1 (got 'high')"),
    ("top_k: 5.0\nqueries:\n  - {query: a, expected_url_patterns: [/x]}\n", "top_k",
     "must be a whole number from 1 to 20 (got 5.0)"),
    ("queries:\n  - {query: a, expected_url_patterns: /x}\n", "queries[0].expected_url_patterns",
     "must be a non-empty list"),
    ("queries:\n  - {query: a, expected_url_patterns: [/x]}\nnegatives:\n  - {query: b, max_score: true}\n",
     "negatives[0].max_score", "must be a number from 0 to 1 (got True)"),
])
def test_a_value_of_the_wrong_type_is_named_with_its_key_path(tmp_path, text, key, says):
    with pytest.raises(ParamsError) as err:
        load_golden_set(_write(tmp_path, "g.yaml", text))
    assert err.value.key == key and f"g.yaml: {key} {says}" in str(err.value)


def test_a_key_no_schema_has_is_refused_not_ignored(tmp_path):
    hand = "queries:\n  - {query: a, expected_url_patterns: [/x], colour: red}\n"
    with pytest.raises(ParamsError, match=r"unknown key 'queries\[0\]\.colour'") as err:
        load_golden_set(_write(tmp_path, "g.yaml", hand))
    assert "did you mean" not in str(err.value) and "expected_url_patterns" in str(err.value)  # the keys it may hold
    with pytest.raises(ParamsError, match="unknown key 'colour'"):
        load_topics(_write(tmp_path, "t.yaml", "colour: red\ntopics:\n  - {topic: a, expected_prefix: b/}\n"))
    with pytest.raises(ParamsError, match=r"in_domain\[0\]\.colour"):
        load_query_sets(_write(tmp_path, "q.yaml", "in_domain:\n  - {query: a, colour: red}\n"))


def test_a_profile_value_of_the_wrong_type_is_named_in_the_file_that_gives_it(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_profile(_write(tmp_path, "p.yaml", "extends: params/demo.yaml\ntop_k: five\n"))
    assert err.value.key == "top_k" and err.value.path.endswith("p.yaml")
    assert "p.yaml: top_k must be a whole number from 1 to 20 (got 'five')" in str(err.value)
    base = _write(tmp_path, "base.yaml", "max_antihub_share: 2\n")
    with pytest.raises(ParamsError) as err:  # inherited: the base file is the one to fix
        load_profile(_write(tmp_path, "child.yaml", f"extends: {base}\nprofile: child\n"))
    assert err.value.path == str(base) and "max_antihub_share must be a number from 0 to 1" in str(err.value)
    for text, key in [("api_concurrency: [10, 0]\n", "api_concurrency[1]"), ("queries: What is ROS2?\n", "queries"),
                      ("payload_fields: {content: 3}\n", "payload_fields"), ("repeats: true\n", "repeats")]:
        with pytest.raises(ParamsError) as err:
            load_profile(_write(tmp_path, "p.yaml", text))
        assert err.value.key == key, text


def test_a_misspelt_profile_key_is_named_with_its_closest_parameters(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_profile(_write(tmp_path, "p.yaml", "profile: x\nmax_antihub_shares: 0.1\nreach_topk: 3\n"))
    assert err.value.key == "max_antihub_shares" and err.value.exit_code == 2
    assert "unknown parameter 'max_antihub_shares': did you mean 'max_antihub_share'" in str(err.value)
    assert "1 more unknown: reach_topk" in str(err.value)


# --------------------------------------------------------------------------- each default written once

def _cell_values(nb):
    import ast

    return {k: ast.literal_eval(v["default"]) for k, v in pm.inspect_notebook(str(nb)).items() if k != "run_dir"}


def test_the_parameters_model_the_default_profile_and_the_registry_name_the_same_keys():
    from retrieval_lib.params import DEFAULT_PROFILE, RESERVED_KEYS, NotebookParameters
    from retrieval_lib.workbook import NOTEBOOKS as RECORDS

    fields = set(NotebookParameters.model_fields)
    assert set(load_profile(DEFAULT_PROFILE).values) == fields | {"profile"}
    assert {p for spec in RECORDS for p in spec.params} - {"run_dir"} == fields
    assert not fields & RESERVED_KEYS
    NotebookParameters.model_validate({k: v for k, v in load_profile(DEFAULT_PROFILE).values.items()
                                       if k != "profile"})  # every default has the declared type


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebooks_parameters_cell_holds_the_default_profiles_values(nb):
    # papermill needs literals in the cell (and nbval runs them): they mirror params/demo.yaml, never differ from it
    demo = load_profile(PROJECT_ROOT / "params" / "demo.yaml").values
    cell = _cell_values(nb)
    assert cell == {k: demo[k] for k in cell}


def test_a_profile_names_what_it_changes_and_the_rest_is_the_default_profiles(tmp_path):
    profile = load_profile(_write(tmp_path, "p.yaml", "profile: mine\ntop_k: 3\n"))
    assert profile.values == {"profile": "mine", "top_k": 3}  # what the file says, as papermill will get it
    full = profile.with_defaults()
    demo = load_profile(PROJECT_ROOT / "params" / "demo.yaml").values
    assert full["top_k"] == 3 and full["repeats"] == demo["repeats"] and set(full) == set(demo)
