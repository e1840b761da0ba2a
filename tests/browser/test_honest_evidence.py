"""Honest evidence in Chromium (issue 26, item 3): an auditor finds only audits in the run
pickers, reads an audit's evidence report in the session page's words (the rule's exception
kept, no residual formula), and an impact check opened by its number says it is a check of a
draft, with no evidence report.  The pages are checked at a phone's width (390 px) and a
laptop's (1280 px); with ``STUDIO_SCREENSHOTS=1`` they are saved as
docs/screenshots/{evidence-witnesses,impact-check-run}-{390,1280}.png."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from studio.audits import services as audits
from studio.evidence import impact
from studio.rules import services as rules
from tests.audits.helpers import add_rule, add_sessions, make_team, make_upload

from .conftest import sign_in
from .test_admin_pages import _check_at_both_widths
from .test_scenario import _wait_for_text

PASSWORD = "audits only, please"
RULE = "G((request & !O waived) -> X answer)"


def test_pickers_offer_audits_and_the_evidence_reads_in_words(browser, live_server,
                                                               transactional_db):
    team = make_team("honest")
    team.auditor.set_password(PASSWORD)
    team.auditor.save()
    rule = add_rule(team, "answered", RULE).rule
    upload = make_upload(team)
    sessions = add_sessions(team, {
        "late-answer": [{"labels": ["request"]}, {"labels": []}, {"labels": ["answer"]}],
        "waived": [{"labels": ["waived"]}, {"labels": ["request"]}, {"labels": []}],
    }, upload=upload)
    draft = rules.new_version(rule, team.author, "G((request & !O waived) -> F answer)")
    audit = audits.start_audit(team.workspace, upload=upload, by=team.auditor)
    check = impact.start_impact(draft, team.reviewer, "upload", upload.id).run
    base = live_server.url
    sign_in(browser, base, team.auditor.username, PASSWORD)

    # The session page's picker: the audit only, and it is the one shown.
    browser.get(f"{base}/w/honest/sessions/{sessions['late-answer'].id}/")
    picker = Select(browser.find_element(By.ID, "id_run"))
    assert [o.get_attribute("value") for o in picker.options] == [str(audit.id)]
    assert "check of draft" not in browser.find_element(By.TAG_NAME, "main").text

    # The evidence report: the exception kept, what was still owed in words.
    browser.get(f"{base}/w/honest/audits/{audit.id}/evidence")
    _wait_for_text(browser, "main", "Violations and their witnesses")
    explanation = browser.find_element(By.CSS_SELECTOR, ".violation .explanation").text
    assert "with no step labelled waived at or before it" in explanation
    witness = browser.find_element(By.CSS_SELECTOR, ".violation table.witness").text
    assert "Still owed: the next step is labelled answer" in witness
    assert "Can no longer be met" in witness
    assert "false" not in witness and "X answer" not in witness
    _check_at_both_widths(browser, "evidence-witnesses")

    # The impact check, opened by its number, says what it is; it has no evidence report.
    browser.get(f"{base}/w/honest/sessions/{sessions['late-answer'].id}/?run={check.id}")
    notice = browser.find_element(By.CSS_SELECTOR, ".draft-check").text
    assert f"Run #{check.id} is a check of draft v2 of rule answered, not an audit" in notice
    _check_at_both_widths(browser, "impact-check-run")
    browser.get(f"{base}/w/honest/audits/{check.id}/evidence")
    _wait_for_text(browser, "main", f"No evidence report for run {check.id}")
