"""Notebook 13's review of drafted queries in a real browser, and a review that survives a kernel restart.

JupyterLab (the project kernel, 127.0.0.1, a private token) serves a copy of notebook 13 whose ``golden_set`` and
``query_sets`` point at a copy of ``tests/browser/drafts/`` (files in the format ``draft`` writes); headless
Chromium opens it, runs all cells, and clicks accept, save edit (after typing a new question), answerable and
reject. The drafted files on disk must then hold those reviews; after "Restart Kernel and Run All Cells" the view,
built again from the files, must show them. Screenshots go to ``outputs/screenshots/review_*.png``.

Opt-in (``-m browser``, see conftest.py); every wait is bounded.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml
from jupyterlab_session import (
    RUN_TIMEOUT,
    chromium,
    menu,
    notebook_copy,
    open_notebook,
    running_lab,
    wait_run_finished,
)

from retrieval_lib.config import PROJECT_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

DRAFTS = Path(__file__).parent / "drafts"
SHOTS = PROJECT_ROOT / "outputs" / "screenshots"
EDITED = "How do sensor fusion techniques combine camera and lidar?"


@pytest.fixture
def lab(tmp_path):
    """(base URL with token, drafts folder): notebook 13 over a copy of the drafts, in JupyterLab."""
    drafts = tmp_path / "drafts"
    shutil.copytree(DRAFTS, drafts)
    notebook_copy(tmp_path, f"golden_set = {str(drafts / 'golden.yaml')!r}\n"
                            f"query_sets = {str(drafts / 'queries.yaml')!r}\n"
                            f"judgments = {str(tmp_path / 'judgments.yaml')!r}\nrun_dir = {str(tmp_path / 'run')!r}\n")
    with running_lab(tmp_path) as (base, token):
        yield base, token, drafts


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path / "chromium") as driver:
        yield driver


# --------------------------------------------------------------------------- what the page shows

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
    open_notebook(browser, base, token)
    menu(browser, "Run", "Run All Cells")
    first = wait_run_finished(browser)
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
    menu(browser, "Kernel", "Restart Kernel and Run All")
    WebDriverWait(browser, 60).until(ec.element_to_be_clickable((By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept"))).click()
    WebDriverWait(browser, RUN_TIMEOUT).until(ec.staleness_of(old))
    again = wait_run_finished(browser)
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
