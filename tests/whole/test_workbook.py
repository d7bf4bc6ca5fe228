"""The real notebooks through the batch runner, on a private copy of the sample collection.

The runner's kernels inherit the environment, so QDRANT_PATH points them at a
copy of the session's sample collection (the original stays locked by this
process). A golden set with deliberately wrong expectations must make the run
exit 1 with the failed gate named in index.html; the right one must pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import warm_cli
import yaml
from corpus import SAMPLE_COLLECTION

from retrieval_lib.config import PROJECT_ROOT

#: One worker runs this module (--dist loadgroup), so the demo run both tests read is made once.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("test_workbook")]


@pytest.fixture(scope="module")
def store_copy(book, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("workbook") / "store"
    shutil.copytree(book.folder, target, ignore=shutil.ignore_patterns(".lock"))
    return target


@pytest.fixture(scope="module")
def demo_run(store_copy, tmp_path_factory) -> Path:
    """Notebook 05 run with the demo profile on the sample collection: its run folder (both tests read it)."""
    good = run_cli(store_copy, PROJECT_ROOT / "params" / "demo.yaml", tmp_path_factory.mktemp("demo-run"), "05")
    assert good.returncode == 0, good.stderr[-2000:]
    return Path(good.stdout.strip().splitlines()[-1].removeprefix("report: ")).parent


def run_cli(store: Path, params: Path, out: Path, notebooks: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_"))}
    env.update(QDRANT_PATH=str(store), QDRANT_COLLECTION_NAME=SAMPLE_COLLECTION)
    return warm_cli.run_cli(["run", "--params", params, "--notebooks", notebooks, "--out", out, "-q"], env=env,
                            timeout=500)


def test_demo_golden_set_passes_and_a_wrong_expectation_fails_the_gate(store_copy, demo_run, tmp_path):
    demo = yaml.safe_load((PROJECT_ROOT / "params" / "demo.yaml").read_text())
    good_dir = demo_run
    assert json.loads((good_dir / "summary.json").read_text())["passed"] is True

    golden = yaml.safe_load((PROJECT_ROOT / demo["golden_set"]).read_text())
    for q in golden["queries"][::2]:  # every other golden query now "expects" a page it will not find
        q["expected_url_patterns"] = ["/docs/appendices/no-such-page"]
    wrong_golden = tmp_path / "wrong_golden.yaml"
    wrong_golden.write_text(yaml.safe_dump(golden), encoding="utf-8")
    params = tmp_path / "wrong.yaml"
    params.write_text(yaml.safe_dump({**demo, "profile": "wrong-golden", "golden_set": str(wrong_golden)}),
                      encoding="utf-8")

    bad = run_cli(store_copy, params, good_dir.parent, "05")  # the same --out: a folder of its own
    assert bad.returncode == 1, bad.stderr[-2000:]
    index_path = Path(bad.stdout.strip().splitlines()[-1].removeprefix("report: "))
    assert index_path.parent != good_dir  # two runs, two folders
    index = index_path.read_text()
    assert "golden queries pass</td><td><span class=\"fail\">FAIL</span>" in index
    summary = json.loads((index_path.parent / "summary.json").read_text())
    failed = [g["name"] for g in summary["gates"] if not g["passed"]]
    assert failed and all("golden" in name for name in failed)
    assert summary["status"] == "complete" and summary["passed"] is False


def run_compare(baseline: Path, candidate: Path) -> subprocess.CompletedProcess:
    return warm_cli.run_cli(["compare", baseline, candidate], timeout=500)


def test_ci_recipe_compare_against_the_committed_baseline_passes_and_catches_a_removed_module(store_copy, demo_run,
                                                                                               tmp_path):
    # the README's recipe "fail the build when retrieval regresses", on the sample book
    from retrieval_lib.stores.qdrant import VectorStore

    baseline = PROJECT_ROOT / "params" / "baselines" / "sample_book"
    demo = PROJECT_ROOT / "params" / "demo.yaml"
    same = run_compare(baseline, demo_run)
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-2000:]

    degraded = tmp_path / "degraded"  # the ROS 2 module's chunks removed from a copy of the collection
    shutil.copytree(store_copy, degraded, ignore=shutil.ignore_patterns(".lock"))
    with VectorStore.at_path(degraded) as store:
        gone = [p.id for p in store.scroll(SAMPLE_COLLECTION, with_payload=["source_file"])
                if str(p.payload["source_file"]).startswith("module-01-ros2/")]
        assert gone
        store.delete(SAMPLE_COLLECTION, gone)
    worse = run_cli(degraded, demo, tmp_path / "worse", "05")
    worse_dir = Path(worse.stdout.strip().splitlines()[-1].removeprefix("report: ")).parent
    result = run_compare(baseline, worse_dir)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "What is ROS2?" in result.stdout + result.stderr  # the worst queries are named
