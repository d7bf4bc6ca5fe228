"""Notebook 13's review of drafted queries in a real browser, and a review that survives a kernel restart.

JupyterLab (the project kernel, 127.0.0.1, a private token) serves a copy of notebook 13 whose ``golden_set`` and
``query_sets`` point at a copy of ``tests/browser/drafts/`` (files in the format ``draft`` writes); headless
Chromium opens it, runs all cells, and clicks accept, save edit (after typing a new question), answerable and
reject. The drafted files on disk must then hold those reviews; after "Restart Kernel and Run All Cells" the view,
built again from the files, must show them. Screenshots go to ``outputs/screenshots/review_*.png``.

Opt-in (``-m browser``, see conftest.py); every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from retrieval_lib.config import PROJECT_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

NOTEBOOK = "13_judgments.ipynb"
DRAFTS = Path(__file__).parent / "drafts"
SHOTS = PROJECT_ROOT / "outputs" / "screenshots"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
EDITED = "How do sensor fusion techniques combine camera and lidar?"
RUN_TIMEOUT = 420  # seconds for one "run all" of notebook 13 (the model loads, 30 queries run)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout:.0f} s")


def _prepare(root: Path) -> Path:
    """The drafts and notebook 13 under ``root``, its parameters pointing at them; returns the drafts folder."""
    drafts = root / "drafts"
    shutil.copytree(DRAFTS, drafts)
    nb = json.loads((PROJECT_ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "".join(cell["source"]) + (
                f"\ngolden_set = {str(drafts / 'golden.yaml')!r}\nquery_sets = {str(drafts / 'queries.yaml')!r}"
                f"\njudgments = {str(root / 'judgments.yaml')!r}\nrun_dir = {str(root / 'run')!r}\n")
    nb["metadata"].pop("widgets", None)
    (root / "notebooks").mkdir()
    (root / "notebooks" / NOTEBOOK).write_text(json.dumps(nb), encoding="utf-8")
    return drafts


@pytest.fixture
def lab(tmp_path):
    """(base URL with token, drafts folder): JupyterLab on a copy of the store, stopped afterwards."""
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not Path(exe).exists():
            pytest.fail(f"{exe} is missing: apt-get install -y chromium chromium-driver")
    store = Path(os.environ.get("QDRANT_PATH") or PROJECT_ROOT / ".qdrant")
    if not store.is_dir():
        pytest.fail(f"no embedded store at {store}: build it with `make sample`")
    shutil.copytree(store, tmp_path / ".qdrant", ignore=shutil.ignore_patterns(".lock"))
    drafts = _prepare(tmp_path)
    port, token = _free_port(), secrets.token_hex(16)
    # every cell in the page (JupyterLab 4 renders only the cells in view by default): the test reads all prompts
    settings = tmp_path / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    news = tmp_path / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = {**os.environ, "QDRANT_PATH": str(tmp_path / ".qdrant"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings")}
    with open(tmp_path / "lab.log", "w") as log:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyter"), "lab", "--ip=127.0.0.1", f"--port={port}", "--no-browser",
             f"--ServerApp.root_dir={tmp_path}", f"--IdentityProvider.token={token}",
             "--KernelSpecManager.allowed_kernelspecs=retrieval-lib", "--KernelSpecManager.ensure_native_kernel=False",
             "--MappingKernelManager.default_kernel_name=retrieval-lib",
             *(["--allow-root"] if os.getuid() == 0 else [])],
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", 120)
        yield f"http://127.0.0.1:{port}", token, drafts
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1300", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


# --------------------------------------------------------------------------- what the page shows

def _menu(driver, menu: str, item: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    wait.until(ec.element_to_be_clickable(
        (By.XPATH, f"//li[contains(@class,'lm-MenuBar-item')][.//div[normalize-space()='{menu}']]"))).click()
    wait.until(ec.element_to_be_clickable(
        (By.XPATH, f"//li[contains(@class,'lm-Menu-item')][.//div[starts-with(normalize-space(),'{item}')]]"))).click()


def _prompts(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')).map(e => e.textContent)")


def _wait_run_finished(driver, cells: int) -> list[int]:
    """Wait (bounded) until every code cell shows an execution count and none runs; returns the counts."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        counts = [re.sub(r"\D", "", p) for p in _prompts(driver)]
        if len(counts) == cells and all(counts) and not any("*" in p for p in _prompts(driver)):
            return [int(c) for c in counts]
        time.sleep(1)
    raise TimeoutError(f"notebook 13 did not finish within {RUN_TIMEOUT} s: prompts {_prompts(driver)}")


def _text(driver, css: str) -> str:
    from selenium.webdriver.common.by import By

    return " | ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, css))


def _states(driver) -> list[tuple[str, str]]:
    """(question, state) of every row of the review table."""
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, "table.review-table tr.review-row")
    return [(r.find_elements(By.TAG_NAME, "td")[2].text, r.find_elements(By.TAG_NAME, "td")[4].text) for r in rows]


def _shot(driver, name: str) -> Path:
    from selenium.webdriver.common.by import By

    # the review cell from its code (and the one-line summary it prints) down to the table of entries
    card = driver.find_element(By.CSS_SELECTOR, ".review-progress")
    driver.execute_script("arguments[0].closest('.jp-Cell').scrollIntoView({block: 'start'});", card)
    time.sleep(1)  # let the scroll settle before the picture (not an assertion)
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    driver.save_screenshot(str(path))
    return path


def _click(driver, css: str, saved: str, question: str) -> None:
    """Click a review button while the view shows ``question``; wait (bounded) for "saved: <saved>"."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    box = driver.find_element(By.CSS_SELECTOR, ".review-question input")
    assert box.get_attribute("value") == question
    button = WebDriverWait(driver, 60).until(ec.element_to_be_clickable((By.CSS_SELECTOR, f"button.{css}")))
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
    button.click()
    WebDriverWait(driver, 60).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".review-saved"),
                                                                     f"saved: {saved}"))


def _on_disk(drafts: Path) -> dict[str, dict]:
    golden = yaml.safe_load((drafts / "golden.yaml").read_text())
    queries = yaml.safe_load((drafts / "queries.yaml").read_text())
    topics = yaml.safe_load((drafts / "topics.yaml").read_text())
    return {"ik": golden["queries"][0], "ik_set": queries["in_domain"][0], "fusion": golden["queries"][1],
            "arm": golden["queries"][2], "pizza": golden["negatives"][0], "pizza_set": queries["out_of_domain"][0],
            "topic": topics["topics"][0]}


# --------------------------------------------------------------------------- the test

def test_a_review_in_jupyterlab_is_saved_at_once_and_survives_a_kernel_restart(lab, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    base, token, drafts = lab
    pristine = _on_disk(drafts)
    assert {e.get("origin") for k, e in pristine.items() if k != "arm"} == {"drafted"}
    browser.get(f"{base}/lab/tree/notebooks/{NOTEBOOK}?token={token}")
    WebDriverWait(browser, 120).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")))
    WebDriverWait(browser, 120).until(ec.presence_of_element_located(
        (By.XPATH, "//*[contains(@class,'jp-Notebook-ExecutionIndicator') or contains(@class,'jp-KernelStatus')]")))
    nb = json.loads((PROJECT_ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    cells = sum(c["cell_type"] == "code" for c in nb["cells"])
    WebDriverWait(browser, 60).until(lambda d: len(_prompts(d)) == cells)
    time.sleep(5)  # let the kernel connect before Run All (a run queued earlier is sometimes dropped)
    _menu(browser, "Run", "Run All Cells")
    first = _wait_run_finished(browser, cells)
    WebDriverWait(browser, 60).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".review-progress"),
                                                                      "0 of 4 reviewed"))
    assert [s for _, s in _states(browser)] == ["drafted"] * 4
    shots = [_shot(browser, "review_1_drafted.png")]

    _click(browser, "review-accept", "accepted", "Inverse kinematics")
    box = browser.find_element(By.CSS_SELECTOR, ".review-question input")
    assert box.get_attribute("value") == "Sensor fusion"
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(EDITED)
    WebDriverWait(browser, 30).until(lambda d: box.get_attribute("value") == EDITED)
    _click(browser, "review-edit", "edited", EDITED)
    _click(browser, "review-answerable", "marked answerable", "What is the best pizza recipe?")
    _click(browser, "review-reject", "rejected", "Simulation")
    WebDriverWait(browser, 30).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".review-progress"),
                                                                      "4 of 4 reviewed"))
    shots.append(_shot(browser, "review_2_reviewed.png"))

    # every click is on disk already, before any restart
    disk = _on_disk(drafts)
    assert disk["ik"]["origin"] == disk["ik_set"]["origin"] == "reviewed" and "status" not in disk["ik"]
    assert disk["fusion"]["query"] == EDITED and disk["fusion"]["origin"] == "reviewed"
    assert disk["fusion"]["draft_id"] == pristine["fusion"]["draft_id"]
    assert disk["pizza"]["answerable"] is True and disk["pizza_set"]["answerable"] is True
    assert disk["topic"]["status"] == "rejected" and disk["topic"]["origin"] == "reviewed"
    assert disk["arm"] == pristine["arm"]  # the hand-written entry is untouched
    assert "# hand-written: never shown" in (drafts / "golden.yaml").read_text()

    old = browser.find_element(By.CSS_SELECTOR, ".review-progress")
    _menu(browser, "Kernel", "Restart Kernel and Run All")
    WebDriverWait(browser, 60).until(ec.element_to_be_clickable((By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept"))).click()
    WebDriverWait(browser, RUN_TIMEOUT).until(ec.staleness_of(old))
    again = _wait_run_finished(browser, cells)
    WebDriverWait(browser, 60).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".review-progress"),
                                                                      "4 of 4 reviewed"))
    states = _states(browser)
    shots.append(_shot(browser, "review_3_after_restart.png"))
    # a fresh kernel counts executions from 1 again: the same numbers as the first run, not a continuation
    assert again == first
    assert states == [("Inverse kinematics", "accepted"), (EDITED, "accepted"),
                      ("What is the best pizza recipe?", "answerable"), ("Simulation", "rejected")]
    assert "0 of" not in _text(browser, ".review-progress")
    assert _on_disk(drafts) == disk  # re-running wrote nothing
    assert all(p.stat().st_size > 10_000 for p in shots)
