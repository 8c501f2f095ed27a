"""The HTML report of a failing submission, opened in headless Chromium (Debian's chromium and
chromium-driver, installed by .ci/run). Not skipped when they are missing: that is a failure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from grader import grading, registry
from grader.report import html
from tests.conftest import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1100,1600"]

pytestmark = pytest.mark.browser


@pytest.fixture
def browser(tmp_path):
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "install Debian's chromium and chromium-driver (see .ci/run)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    yield session
    session.quit()


def test_report_of_a_failing_submission_shows_score_diagnosis_and_heatmaps(browser, tmp_path):
    submission = ROOT / "tests" / "corpus" / "udl_attention" / "seed002.ipynb"
    result = grading.grade(submission, registry.get("udl_attention"))
    page = tmp_path / "report.html"
    page.write_text(html.render(result), encoding="utf-8")

    browser.get(page.as_uri())
    score = browser.find_element(By.ID, "score")
    assert score.is_displayed() and score.text == "Score: 6.667 / 10"
    diagnosis = browser.find_element(By.CSS_SELECTOR,
                                     '.diagnosis[data-diagnosis="transposed-weights"]')
    browser.execute_script("arguments[0].scrollIntoView()", diagnosis)
    assert diagnosis.is_displayed()
    assert diagnosis.text.startswith("Likely mistake (transposed-weights): Each head's attention")
    maps = browser.find_elements(By.CSS_SELECTOR, "svg.heatmap[role=img]")
    assert len(maps) == 2 and all(m.is_displayed() for m in maps)
    assert maps[0].size["width"] == 6 * 28 and maps[0].size["height"] == 8 * 28
    assert len(maps[1].find_elements(By.CSS_SELECTOR, "rect.mismatch")) == 48
    title = maps[1].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title == "your output"

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-seed002.png"
    browser.find_element(By.TAG_NAME, "body")
    assert browser.save_screenshot(str(shot))
    assert Path(shot).stat().st_size > 10_000
