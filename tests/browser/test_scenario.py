"""The whole day of a compliance team in a real Chromium: an author writes a rule (with live
parse feedback), a reviewer approves it, an auditor uploads a real TextWorld log, audits it,
reads the report and opens a violation's witness.

With ``STUDIO_SCREENSHOTS=1`` the main pages are also saved as PNGs under docs/screenshots/
(docs/browser.md shows them): ``STUDIO_SCREENSHOTS=1 .venv/bin/python -m pytest tests/browser``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ready
from selenium.webdriver.support.ui import WebDriverWait

from studio.rules.models import Labeler, Rule, VersionStatus
from studio.workspaces.models import Role
from studio.workspaces.services import add_member, create_user, create_workspace

from .conftest import sign_in

REPO = Path(__file__).resolve().parents[2]
TEXTWORLD = REPO / "studio" / "web" / "demo" / "textworld.jsonl"
SHOTS = REPO / "docs" / "screenshots"
PASSWORD = {"ann": "ann writes rules 1", "rob": "rob reviews rules 1"}


UNLABELLED_CONTROLS = """
return [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
  .filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
               && !c.getAttribute('aria-labelledby'))
  .map(c => c.outerHTML.slice(0, 120));
"""


def _shot(browser, name: str) -> None:
    """Check the page a person is looking at - every control labelled, nothing refused by the
    Content-Security-Policy - and, with STUDIO_SCREENSHOTS set, keep a screenshot of it."""
    assert browser.execute_script(UNLABELLED_CONTROLS) == [], f"unlabelled controls on {name}"
    refused = [entry["message"] for entry in browser.get_log("browser")
               if "Content Security Policy" in entry["message"]]
    assert refused == [], f"{name}: {refused}"
    if os.environ.get("STUDIO_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, min(max(900, height), 2400))
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(str(SHOTS / f"{name}.png"))
        browser.set_window_size(1280, 900)




# Finding an element and then reading its text are two round trips; a navigation in between
# makes Chromium answer "Node ... does not belong to the document". One script does both.
READ_TEXT = "const found = document.querySelector(arguments[0]); return found && found.innerText;"


def _wait_for_text(browser, selector: str, text: str, seconds: float = 60) -> None:
    seen = []

    def shows_text(driver) -> bool:
        try:
            current = driver.execute_script(READ_TEXT, selector)
        except WebDriverException:  # the document is being replaced: look again
            return False
        seen[:] = [current]
        return current is not None and text in current

    try:
        WebDriverWait(browser, seconds).until(shows_text)
    except TimeoutException:
        pytest.fail(f"{selector} never showed {text!r} in {seconds} s; last seen: {seen!r}")


def _follow(browser, control) -> None:
    """Click a link or a form's button and wait until the next page has replaced this one, so
    nothing read afterwards comes from the page being left.  The page being left is marked in
    its window object (a new document starts without the mark): asking an element of it whether
    it went stale can itself fail in Chromium with the same "does not belong" error."""
    browser.execute_script("window.studioLeaving = true;")
    control.click()

    def arrived(driver) -> bool:
        try:
            return driver.execute_script(
                "return document.readyState !== 'loading' && !window.studioLeaving;")
        except WebDriverException:  # the document is being replaced: look again
            return False

    WebDriverWait(browser, 30).until(arrived)


@pytest.fixture
def kitchen(transactional_db, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    ann = create_user("ann", PASSWORD["ann"])
    rob = create_user("rob", PASSWORD["rob"])
    workspace = create_workspace("Kitchen", owner=ann, roles=(Role.AUTHOR, Role.AUDITOR))
    add_member(workspace, rob, Role.REVIEWER)
    Labeler.objects.create(workspace=workspace, atom="drop", kind="regex",
                           config={"path": "output", "pattern": r"^drop\b"})
    return workspace


def test_write_approve_upload_audit_and_open_a_witness(browser, live_server, kitchen, tmp_path):
    base = live_server.url
    browser.set_window_size(1280, 900)

    # 1. ann writes a rule; the editor answers as she types.
    sign_in(browser, base, "ann", PASSWORD["ann"])
    browser.get(base + "/w/kitchen/rules/")
    browser.find_element(By.ID, "id_name").send_keys("no_drop")
    formula = browser.find_element(By.ID, "id_formula")
    formula.send_keys("G(!drop")
    _wait_for_text(browser, "#formula-check", "column")  # the error position, live
    formula.send_keys(")")
    _wait_for_text(browser, "#formula-check", "Reads as")
    browser.find_element(By.ID, "id_description").send_keys("Never drop anything.")
    _shot(browser, "rule-editor")
    _follow(browser, browser.find_element(By.XPATH, "//button[normalize-space()='Create draft']"))
    _follow(browser,
            browser.find_element(By.XPATH, "//button[normalize-space()='Submit for review']"))
    rule = Rule.objects.get(name="no_drop")
    _wait_for_text(browser, "main", "another reviewer must approve")
    assert rule.versions.get().status == VersionStatus.IN_REVIEW

    # 2. rob, another person, approves it.
    sign_in(browser, base, "rob", PASSWORD["rob"])
    browser.get(f"{base}/w/kitchen/rules/{rule.id}/")
    browser.find_element(By.ID, "id_comment").send_keys("Matches the written policy.")
    _shot(browser, "rule-review")
    _follow(browser, browser.find_element(By.XPATH, "//button[normalize-space()='Approve']"))
    _wait_for_text(browser, "main", "Approved")
    assert rule.versions.get().status == VersionStatus.APPROVED

    # 3. ann uploads the TextWorld log and audits it.
    sign_in(browser, base, "ann", PASSWORD["ann"])
    browser.get(base + "/w/kitchen/uploads/")
    log = tmp_path / "textworld.jsonl"
    shutil.copyfile(TEXTWORLD, log)
    browser.find_element(By.ID, "id_file").send_keys(str(log))
    browser.find_element(By.CSS_SELECTOR, "[data-upload-button]").click()
    _wait_for_text(browser, "#upload-status", "arsed")  # "Parsed", polled by htmx
    # With an approved rule the form's default audits the file as it loads: once parsed, the
    # page (swapped in by htmx) already links that audit's report.
    _wait_for_text(browser, "#upload-audits", "Asked for with the upload")
    _shot(browser, "upload")
    # Audit it again by hand; wait for the next page's message before reading its links, or a
    # link of the page being left could be found and go stale.
    _follow(browser, WebDriverWait(browser, 30).until(ready.element_to_be_clickable(
        (By.XPATH, "//button[normalize-space()='Audit this upload']"))))
    _wait_for_text(browser, "ul.messages", "started")
    reports = browser.find_elements(By.LINK_TEXT, "Read the report")
    assert len(reports) == 2  # the audit on arrival and this one, newest first
    _follow(browser, reports[0])

    # 4. The report: rules by sessions; sessions that dropped something are violated.
    _wait_for_text(browser, "main", "no_drop")
    _shot(browser, "audit-report")
    _follow(browser, browser.find_element(By.LINK_TEXT, "sessions with a violation"))
    sessions = browser.find_elements(By.CSS_SELECTOR, "table.matrix tbody th a")
    names = [s.text for s in sessions]
    assert any("extra_drop" in name for name in names), names
    target = next(s for s in sessions if "extra_drop" in s.text)
    _follow(browser, target)

    # 5. The session: lanes, the timeline, and the violation's witness highlighted.
    _wait_for_text(browser, "main", "no_drop")
    violation = browser.find_element(By.CSS_SELECTOR, "a[href*='violation=']")
    _follow(browser, violation)
    witness_rows = WebDriverWait(browser, 10).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "tr.is-witness"))
    assert witness_rows
    assert any("drop" in row.text for row in witness_rows)
    _shot(browser, "session-witness")
    # No page of the scenario was blocked by the Content-Security-Policy.
    assert browser.execute_script("return typeof window.htmx") == "object"
