"""Notebook 13's labelling widget in a real browser: one click saves one judgment, at once.

JupyterLab serves a copy of notebook 13 whose ``judgments`` points at a new file; headless Chromium runs all cells
and clicks "2 relevant" on the first result shown. The file must then hold exactly that judgment (the judge, grade
2, the query shown) and the widget's progress must move from "0 of m judged" to "1 of m judged". The shipped
judgments are never touched. Opt-in (``-m browser``); every wait is bounded.
"""

from __future__ import annotations

import time

import pytest
from jupyterlab_session import RUN_TIMEOUT, chromium, menu, notebook_copy, open_notebook, running_lab

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.judging.judgments import load_judgments

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

JUDGE = "browser-check"
#: the widget's progress line ("n of m judged"), not the notebook's markdown that mentions it
STATUS = "//div[contains(@class,'widget-html')]//b[contains(text(),' judged')]"


def test_one_click_in_jupyterlab_saves_one_judgment_of_the_result_shown(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    path = tmp_path / "judgments.yaml"
    notebook_copy(tmp_path, f"judgments = {str(path)!r}\njudge = {JUDGE!r}\nrun_dir = {str(tmp_path / 'run')!r}\n")
    with running_lab(tmp_path) as (base, token), chromium(tmp_path / "chromium") as driver:
        open_notebook(driver, base, token)
        menu(driver, "Run", "Run All Cells")
        button = WebDriverWait(driver, RUN_TIMEOUT).until(ec.element_to_be_clickable(
            (By.XPATH, "//button[contains(@class,'jupyter-button')][contains(normalize-space(.),'2 relevant')]")))
        before = driver.find_element(By.XPATH, STATUS).text
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        card = driver.find_element(By.XPATH, "//div[contains(@class,'widget-html')][.//pre]").text
        button.click()
        WebDriverWait(driver, 60).until(ec.presence_of_element_located(
            (By.XPATH, "//*[contains(text(),'saved: grade 2')]")))
        after = driver.find_element(By.XPATH, STATUS).text
        shots = PROJECT_ROOT / "outputs" / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        time.sleep(1)  # let the page settle before the picture (not an assertion)
        driver.save_screenshot(str(shots / "judging_one_click.png"))
    saved = load_judgments(path).judgments
    shown = card.split("Query:")[1].split("rank")[0].strip()
    assert before.startswith("0 of ") and after.startswith("1 of ")
    assert [(j.judge, j.grade, j.query) for j in saved] == [(JUDGE, 2, shown)]
    assert (PROJECT_ROOT / "params" / "judgments" / "sample_book.yaml").read_text(encoding="utf-8").count(JUDGE) == 0
