"""Verdicts a compliance officer reads, in a real Chromium on the demo: the Sessions list opens
on the newest run with results and shows one verdict per rule in words; a violation is explained
in a sentence, with what the rule still required in English and the formula one click away.
One word for each verdict (complied, violated, open) on the report, the sessions list and a
finished session, at a laptop's and a phone's width.  Screenshots with ``STUDIO_SCREENSHOTS=1``
(verdict-badges.png, violation-explained.png, verdict-words-*-1280.png and -390.png)."""

from __future__ import annotations

import os
import re

from django.core.management import call_command
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from studio.audits.models import AuditRun, SessionResult, ViolationRecord

from .conftest import save_whole_page, sign_in
from .test_scenario import SHOTS, UNLABELLED_CONTROLS, _shot, _wait_for_text

OLD_WORDS = re.compile(r"\b(satisfied|pending)\b", re.IGNORECASE)


def test_verdict_badges_and_a_violation_explained(browser, live_server, transactional_db,
                                                  settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    browser.delete_all_cookies()
    browser.get(base + "/accounts/login/")
    browser.find_element(By.ID, "id_username").send_keys("ann")
    browser.find_element(By.ID, "id_password").send_keys("demo-password")
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    WebDriverWait(browser, 10).until(lambda b: "/accounts/login/" not in b.current_url)

    hijacked = AuditRun.objects.get(upload__filename="agentdojo_hijacked.jsonl")
    browser.get(f"{base}/w/demo/sessions/")
    _wait_for_text(browser, "#run-shown", f"audit run #{hijacked.id} (the newest run with results")
    rows = browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")
    assert rows
    for row in rows:  # never complied beside a counted violation, never pending for a log
        for cell in row.find_elements(By.TAG_NAME, "td")[2:]:
            assert not ("violation" in cell.text and "complied" in cell.text), cell.text
            assert "… open" not in cell.text, cell.text
    assert any("✗ violated" in row.text for row in rows)
    _shot(browser, "verdict-badges")

    found = ViolationRecord.objects.filter(
        result__run=hijacked, result__rule_version__rule__name="look_before_paying")
    violation = found.order_by("result__session_id", "detected").first()
    browser.get(f"{base}/w/demo/sessions/{violation.result.session_id}/"
                f"?run={hijacked.id}&violation={violation.id}")
    _wait_for_text(browser, "#witness-heading", "Witness of a violation of look_before_paying")
    explanation = browser.find_element(By.CSS_SELECTOR, ".witness-panel .explanation").text
    assert explanation.startswith(f"Step {violation.detected}: the agent called send_money; no "
                                  "call to "), explanation
    panel = browser.find_element(By.ID, "residual-panel").text
    assert "violation detected at this step" in panel
    assert "can no longer be met (since step" in panel
    # The formula is one click away, not in the way.
    formula = browser.find_element(By.CSS_SELECTOR, "#residual-panel details code")
    assert not formula.is_displayed()
    browser.find_element(By.CSS_SELECTOR, "#residual-panel details summary").click()
    assert formula.is_displayed()
    _shot(browser, "violation-explained")


def test_one_word_for_each_verdict_at_a_laptop_and_a_phone_width(browser, live_server,
                                                                 transactional_db, settings,
                                                                 tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    sign_in(browser, base, "ann", "demo-password")
    run = AuditRun.objects.get(upload__filename="agentdojo_hijacked.jsonl")
    # A finished session in which every rule complied: its last step owes nothing.
    violated = set(SessionResult.objects.filter(run=run, violation_count__gt=0)
                   .values_list("session_id", flat=True))
    clean = (SessionResult.objects.filter(run=run, final="satisfied")
             .exclude(session_id__in=violated).select_related("session").first().session)
    last = clean.events.order_by("-step").values_list("step", flat=True).first()
    visits = {"report": f"/w/demo/audits/{run.id}/",
              "sessions": f"/w/demo/sessions/?run={run.id}",
              "session": f"/w/demo/sessions/{clean.id}/?run={run.id}&step={last}"}
    try:
        for width in (1280, 390):
            for name, path in visits.items():
                browser.set_window_size(width, 900)
                browser.get(base + path)
                WebDriverWait(browser, 10).until(
                    lambda b: b.execute_script("return document.readyState") == "complete")
                text = browser.find_element(By.TAG_NAME, "main").text
                assert not OLD_WORDS.search(text), (name, width, OLD_WORDS.search(text))
                assert "complied" in text, (name, width)
                assert "still owed" not in text or name != "session", (name, width)
                assert browser.execute_script(UNLABELLED_CONTROLS) == [], (name, width)
                if os.environ.get("STUDIO_SCREENSHOTS"):
                    save_whole_page(browser, SHOTS / f"verdict-words-{name}-{width}.png", width)
            panel = browser.find_element(By.ID, "residual-panel").text
            assert "complied, nothing owed" in panel, panel
    finally:
        browser.set_window_size(1280, 900)
