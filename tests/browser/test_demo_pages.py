"""The demo a newcomer sees, in a real Chromium: the TextWorld audit's report with the regex
labelers measured against the game's own record, the sessions list, the evidence report and the
live view.  Screenshots with ``STUDIO_SCREENSHOTS=1`` (see test_scenario.py)."""

from __future__ import annotations

from django.core.management import call_command
from selenium.webdriver.common.by import By

from studio.audits.models import AuditRun
from studio.traces.models import TraceSession

from .conftest import sign_in
from .test_scenario import _shot, _wait_for_text


def test_the_demo_report_sessions_evidence_and_live_pages(browser, live_server,
                                                          transactional_db, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    sign_in(browser, base, "ann", "demo-password")
    _wait_for_text(browser, "h1", "Demo")
    _shot(browser, "workspace")

    textworld = AuditRun.objects.get(upload__filename="textworld.jsonl")
    browser.get(f"{base}/w/demo/audits/{textworld.id}/")
    _wait_for_text(browser, "main", "Agreement with ground truth")
    # knife_needed: one refused "slice ... with knife" the regex counts as using the knife.
    agreement = browser.find_element(By.XPATH, "//h2[contains(., 'ground truth')]/following::table[1]")
    knife = agreement.find_element(By.XPATH, ".//tr[th[contains(., 'knife_needed')]]")
    assert "0.88" in knife.text and "1.00" in knife.text, knife.text
    _shot(browser, "demo-report")

    browser.get(f"{base}/w/demo/sessions/?run={textworld.id}&rule=stay_in_kitchen&verdict=violated")
    rows = browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")
    assert rows and all("violated" in row.text for row in rows)
    _shot(browser, "sessions")

    browser.get(f"{base}/w/demo/audits/{textworld.id}/evidence")
    _wait_for_text(browser, "main", "rob")  # the approver of every rule version
    _shot(browser, "evidence")

    browser.get(f"{base}/w/demo/labelers/")
    _wait_for_text(browser, "main", "use_knife")
    _shot(browser, "labelers")

    merge = TraceSession.objects.get(external_id="msc-merge-demo")
    browser.get(f"{base}/w/demo/sessions/{merge.id}/msc?event=9")
    _wait_for_text(browser, "main", "Committer")
    _shot(browser, "msc")

    browser.get(f"{base}/w/demo/live/")
    _wait_for_text(browser, "h1", "Live")
    _shot(browser, "live")
