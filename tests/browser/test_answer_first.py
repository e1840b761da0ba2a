"""Pages that put the answer first (issue 26, item 4), in Chromium: a session page shows its
violations in sentences and the chosen witness above the per-rule lanes, the witness table
inside its box; the report says "not applicable: never triggered" beside the complied count of
a rule whose trigger no session shows.  Checked at 390 and 1280 px; with
``STUDIO_SCREENSHOTS=1`` saved as docs/screenshots/{session-answer-first,
report-never-triggered}-{390,1280}.png."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from studio.audits import services as audits
from studio.audits.models import ViolationRecord
from tests.audits.helpers import add_rule, add_sessions, make_team, make_upload

from .conftest import sign_in
from .test_admin_pages import _check_at_both_widths
from .test_scenario import _wait_for_text

PASSWORD = "answers first, please"
# The witness's labels are long: they must wrap inside the panel at 1280 px.
LONG = "tool_call:transfer_funds_to_an_external_account_without_a_second_signature"


def test_violations_before_lanes_and_a_rule_never_triggered(browser, live_server,
                                                            transactional_db):
    team = make_team("first")
    team.auditor.set_password(PASSWORD)
    team.auditor.save()
    add_rule(team, "answered", "G(request -> X answer)")
    add_rule(team, "refunds_approved", "G(refund -> F approve)")
    upload = make_upload(team)
    sessions = add_sessions(team, {
        "unanswered": [{"labels": ["request", LONG]}, {"labels": [LONG]}, {"labels": []}],
        "answered": [{"labels": ["request"]}, {"labels": ["answer"]}],
    }, upload=upload)
    audit = audits.start_audit(team.workspace, upload=upload, by=team.auditor)
    violation = ViolationRecord.objects.get(result__run=audit,
                                            result__session=sessions["unanswered"])
    base = live_server.url
    sign_in(browser, base, team.auditor.username, PASSWORD)

    browser.get(f"{base}/w/first/sessions/{sessions['unanswered'].id}/"
                f"?run={audit.id}&violation={violation.id}")
    _wait_for_text(browser, "#witness-heading", "Witness of a violation of answered")
    top = {heading: browser.find_element(By.ID, heading).location["y"]
           for heading in ("violations-heading", "witness-heading", "lanes-heading",
                           "timeline-heading")}
    assert (top["violations-heading"] < top["witness-heading"] < top["lanes-heading"]
            < top["timeline-heading"]), top
    panel = browser.find_element(By.CSS_SELECTOR, ".witness-panel")
    table = panel.find_element(By.TAG_NAME, "table")
    assert LONG in table.text
    assert (table.rect["x"] + table.rect["width"]
            <= panel.rect["x"] + panel.rect["width"] + 1), (table.rect, panel.rect)
    _check_at_both_widths(browser, "session-answer-first")

    browser.get(f"{base}/w/first/audits/{audit.id}/")
    _wait_for_text(browser, "#totals-heading", "Totals per rule")
    rows = {row.find_element(By.TAG_NAME, "th").text.split()[0]: row.text
            for row in browser.find_elements(By.CSS_SELECTOR, "#totals-heading ~ div tbody tr")}
    assert "not applicable: never triggered" in rows["refunds_approved"], rows
    assert "never triggered" not in rows["answered"], rows
    # The matrix's column says it too, above cells that read complied.
    headers = [" ".join(th.text.split())
               for th in browser.find_elements(By.CSS_SELECTOR, "table.matrix thead th")]
    assert [h for h in headers if "never triggered" in h] == [
        "refunds_approved v1 not applicable: never triggered"], headers
    _check_at_both_widths(browser, "report-never-triggered")
