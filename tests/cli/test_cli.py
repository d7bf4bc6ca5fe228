"""The command line, run as a real subprocess: exit codes, one-line errors, output.

Runs that load the MiniLM model take seconds each, so they are started together
(a few at a time) by a module fixture; every run gets its own copy of the
embedded store folder, because an embedded folder is locked per process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
import warm_cli
from fakes.proxies import direct_env

from retrieval_lib import VectorStore
from retrieval_lib.models import PAYLOAD_FIELDS

#: One worker runs this module (--dist loadgroup): its module fixture starts every CLI run at once, and
#: each worker that ran one of its tests would start them all again.
pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("test_cli")]

COLLECTION = "book_cli"
SECRET = "s3cr3t-CLI-4411"
_DROP_PREFIXES = ("QDRANT_", "COHERE_", "EMBEDDING_")
_DROP = {"QUERY_MAX_CHARS"}


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without this package's settings (and proxies), plus ``extra``.

    The empty values make the real environment win over any project ``.env``.
    """
    env = direct_env({k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES) and k not in _DROP})
    env.update({"QDRANT_URL": "", "QDRANT_API_KEY": "", "COHERE_API_KEY": "", "EMBEDDING_PROVIDER": "local",
                "EMBEDDING_MODEL": "", "HF_HUB_OFFLINE": "1"})
    env.update(extra)
    return env


def run_cli(args, env, cwd, timeout=60) -> subprocess.CompletedProcess:
    return warm_cli.run_cli(args, env=env, cwd=cwd, timeout=timeout)


def assert_one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip("\n").split("\n")
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture(scope="module")
def store_folder(tmp_path_factory, embedder, fill):
    folder = tmp_path_factory.mktemp("cli") / "store"
    with VectorStore.at_path(folder) as store:
        fill(store, COLLECTION, embedder)
    return folder


@pytest.fixture(scope="module")
def slow_runs(tmp_path_factory, store_folder):
    """Start every model-loading CLI run at once; ``slow_runs[name].result()`` is its CompletedProcess."""
    root = tmp_path_factory.mktemp("cli-runs")

    def own_copy(name):
        target = root / name
        shutil.copytree(store_folder, target)
        return target

    def case(name, args, **extra):
        env = clean_env(**{"QDRANT_PATH": str(own_copy(name)), "QDRANT_COLLECTION_NAME": COLLECTION, **extra})
        return name, lambda: run_cli(args, env, root)

    cases = dict([
        case("text", ["search", "How do I describe a robot's links and joints in XML?", "--top-k", "3"]),
        case("json", ["search", "launch several nodes", "--json", "--top-k", "20",
                      "--source-prefix", "module-01-ros2/", "--section", "Launch files"]),
        case("empty", ["search", "pizza dough", "--threshold", "0.99"]),
        case("blank", ["search", "   "]),
        case("unreachable", ["search", "x"], QDRANT_URL="http://127.0.0.1:9"),
    ])
    pool = ThreadPoolExecutor(max_workers=3)
    futures = {name: pool.submit(go) for name, go in cases.items()}
    yield futures
    pool.shutdown(wait=True)


# ----------------------------------------------------------------------------- search

def test_search_prints_ranked_results_and_exits_0(slow_runs):
    proc = slow_runs["text"].result()
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "3 results for" in proc.stdout
    listed = [line for line in proc.stdout.splitlines() if line[:3] in ("1. ", "2. ", "3. ")]
    assert len(listed) == 3
    assert "module-02-simulation/02-urdf.md" in listed[0]


def test_search_json_applies_prefix_and_section_and_carries_full_metadata(slow_runs):
    proc = slow_runs["json"].result()
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["query_text"] == "launch several nodes"
    assert data["filters"] == {"source_prefix": "module-01-ros2/", "section": "Launch files"}
    assert data["total_results"] == len(data["results"]) == 1
    result = data["results"][0]
    assert result["source_file"] == "module-01-ros2/05-launch-files.md"
    assert result["section_title"] == "Launch files"
    for name in (*PAYLOAD_FIELDS, "similarity_score"):
        assert result[name] is not None, name
    for name in ("embed_ms", "search_ms", "execution_time_ms", "timestamp", "warnings"):
        assert name in data


def test_empty_result_is_a_success(slow_runs):
    proc = slow_runs["empty"].result()
    assert proc.returncode == 0, proc.stderr
    assert "No results" in proc.stdout
    assert "Traceback" not in proc.stderr and "error:" not in proc.stderr


def test_blank_query_exits_2_with_one_line(slow_runs):
    proc = slow_runs["blank"].result()
    assert proc.returncode == 2
    assert "query" in assert_one_error_line(proc)
    assert proc.stdout == ""


def test_unreachable_qdrant_exits_3_with_one_line(slow_runs):
    proc = slow_runs["unreachable"].result()
    assert proc.returncode == 3
    assert "127.0.0.1:9" in assert_one_error_line(proc)


# ----------------------------------------------------------------------------- fast paths (no model load)

@pytest.mark.parametrize("args", [
    ["search", "x", "--top-k", "abc"],
    ["search", "x", "--threshold", "high"],
    ["search"],
    ["frobnicate"],
])
def test_usage_errors_exit_2_with_one_line(args, tmp_path):
    proc = run_cli(args, clean_env(QDRANT_PATH=str(tmp_path / "unused")), tmp_path)
    assert proc.returncode == 2
    assert_one_error_line(proc)


def test_a_bare_call_lists_the_commands_and_exit_codes(tmp_path):
    proc = run_cli([], clean_env(QDRANT_PATH=str(tmp_path / "unused")), tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: ")
    for command in ("search", "stats", "ingest", "run"):
        assert f"\n    {command} " in proc.stdout
    assert "exit codes:" in proc.stdout


@pytest.mark.parametrize("extra, variable", [
    ({"EMBEDDING_PROVIDER": "cohere"}, "COHERE_API_KEY"),
    ({"QUERY_MAX_CHARS": "many-" + SECRET}, "QUERY_MAX_CHARS"),
    ({"EMBEDDING_PROVIDER": "magic-" + SECRET}, "EMBEDDING_PROVIDER"),
    ({"QDRANT_URL": "ftp://" + SECRET + "@host"}, "QDRANT_URL"),
])
def test_configuration_errors_exit_2_naming_the_variable_not_the_value(extra, variable, tmp_path):
    proc = run_cli(["search", "ROS 2"], clean_env(QDRANT_PATH=str(tmp_path / "unused"), **extra), tmp_path)
    assert proc.returncode == 2
    line = assert_one_error_line(proc)
    assert variable in line
    assert SECRET not in proc.stderr + proc.stdout


def test_unreachable_qdrant_error_never_shows_credentials(tmp_path):
    env = clean_env(QDRANT_URL=f"http://user:pw-{SECRET}@127.0.0.1:9/?api_key=q-{SECRET}",
                    QDRANT_API_KEY="k-" + SECRET, QDRANT_COLLECTION_NAME=COLLECTION)
    proc = run_cli(["stats"], env, tmp_path)
    assert proc.returncode == 3
    assert "127.0.0.1:9" in assert_one_error_line(proc)
    assert SECRET not in proc.stderr + proc.stdout


def test_unusable_qdrant_path_exits_2_naming_the_variable(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    proc = run_cli(["stats"], clean_env(QDRANT_PATH=str(not_a_folder / "store")), tmp_path)
    assert proc.returncode == 2
    assert "QDRANT_PATH" in assert_one_error_line(proc)


def test_stats_json_reports_the_collection(store_folder, tmp_path, book_docs):
    folder = tmp_path / "store"
    shutil.copytree(store_folder, folder)
    proc = run_cli(["stats", "--json"], clean_env(QDRANT_PATH=str(folder), QDRANT_COLLECTION_NAME=COLLECTION),
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert stats["collection"] == COLLECTION
    assert stats["vector_count"] == stats["points_count"] == len(book_docs)
    assert stats["dimensions"] == 384
    assert stats["distance"].lower() == "cosine"
    assert stats["location"] == str(folder)


def test_stats_text_lists_the_figures(store_folder, tmp_path, book_docs):
    folder = tmp_path / "store"
    shutil.copytree(store_folder, folder)
    proc = run_cli(["stats"], clean_env(QDRANT_PATH=str(folder), QDRANT_COLLECTION_NAME=COLLECTION), tmp_path)
    assert proc.returncode == 0, proc.stderr
    table, _, per_file = proc.stdout.partition("\n\npoints per source file:\n")
    rows = {line[:16].strip(): line[16:].strip() for line in table.splitlines()}  # "label (padded)  value"
    assert rows["points"] == str(len(book_docs))
    assert rows["dimension"] == "384"
    assert rows["source files"] == str(len({d["source_file"] for d in book_docs}))
    assert sum(int(line.split()[0]) for line in per_file.splitlines()) == len(book_docs)


def test_stats_on_missing_collection_exits_2_listing_the_existing_ones(store_folder, tmp_path):
    folder = tmp_path / "store"
    shutil.copytree(store_folder, folder)
    proc = run_cli(["stats"], clean_env(QDRANT_PATH=str(folder), QDRANT_COLLECTION_NAME="nope"), tmp_path)
    assert proc.returncode == 2
    line = assert_one_error_line(proc)
    assert "nope" in line and COLLECTION in line


def test_locked_embedded_folder_exits_3_with_one_line(store_folder, tmp_path):
    folder = tmp_path / "store"
    shutil.copytree(store_folder, folder)
    env = clean_env(QDRANT_PATH=str(folder), QDRANT_COLLECTION_NAME=COLLECTION)
    with VectorStore.at_path(folder):  # this process holds the folder while the CLI tries to open it
        proc = run_cli(["stats"], env, tmp_path)
    assert proc.returncode == 3
    assert "in use" in assert_one_error_line(proc)


@pytest.mark.parametrize("flags", [["--header-timeout", "0"], ["--body-timeout", "-1"], ["--max-connections", "0"],
                                   ["--shutdown-timeout", "-2"]])
def test_serve_refuses_a_limit_that_cannot_hold_before_anything_starts(flags, capsys):
    from retrieval_lib.cli.main import main

    assert main(["serve", *flags]) == 2
    err = capsys.readouterr().err
    assert flags[0] in err and "must be" in err
