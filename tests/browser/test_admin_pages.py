"""The audit-log page and the guard-policy page in Chromium, as a compliance officer uses them:
filter the log and open an entry's details; change a rule set's guard policy, see a mistake
named beside its field, then see the policy saved.  Both pages are checked at a phone's width
(390 px) and a laptop's (1280 px): every control labelled, nothing refused by the
Content-Security-Policy, nothing scrolling sideways.  With ``STUDIO_SCREENSHOTS=1`` each is saved
as docs/screenshots/{audit-log,guard-policy}-{390,1280}.png."""

from __future__ import annotations

import os

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from studio.guard import services as guard_services
from studio.rules import services as rules
from studio.workspaces import services as ws
from studio.workspaces.actions import LogAction

from .conftest import save_whole_page, sign_in
from .test_scenario import SHOTS, UNLABELLED_CONTROLS, _wait_for_text
from .test_small_screens import OVERFLOW, WIDTHS

PASSWORD = "correct horse battery"


def _check_at_both_widths(browser, name: str) -> None:
    try:
        for width in WIDTHS:
            browser.set_window_size(width, 900)
            browser.refresh()
            assert browser.execute_script(UNLABELLED_CONTROLS) == [], (name, width)
            refused = [entry["message"] for entry in browser.get_log("browser")
                       if "Content Security Policy" in entry["message"]]
            assert refused == [], (name, width, refused)
            overflow = browser.execute_script(OVERFLOW)
            assert overflow["scrollWidth"] <= overflow["innerWidth"], (name, width, overflow)
            if os.environ.get("STUDIO_SCREENSHOTS"):
                save_whole_page(browser, SHOTS / f"{name}-{width}.png", width)
    finally:
        browser.set_window_size(1280, 900)


def test_filter_the_audit_log_and_read_an_entry(browser, live_server, transactional_db):
    ann = ws.create_user("ann", PASSWORD)
    bob = ws.create_user("bob")
    workspace = ws.create_workspace("Payments", owner=ann, slug="payments")
    ws.add_member(workspace, bob, "author", by=ann)
    token, _ = ws.create_token(workspace, "nightly upload", ["auditor"], by=ann)
    ws.record(workspace, token, LogAction.UPLOAD_CREATED, None, filename="night.jsonl",
              lines=1200)
    ws.record(workspace, bob, LogAction.RULE_SET_LIVE, None, ruleset="refunds")
    ws.record(workspace, ann, LogAction.GUARD_POLICY_SET, None, ruleset="refunds",
              policy={"threshold": 0.3, "horizon": 8, "interventions": {"refund-cap": "stop"}})
    sign_in(browser, live_server.url, "ann", PASSWORD)

    browser.get(live_server.url + "/w/payments/")
    browser.find_element(By.LINK_TEXT, "Audit log").click()
    _wait_for_text(browser, "main", "Guard policy changed")
    Select(browser.find_element(By.ID, "id_action")).select_by_visible_text("Rule set made live")
    browser.find_element(By.XPATH, "//button[text()='Show']").click()
    WebDriverWait(browser, 10).until(lambda b: "action=rule_set.live" in b.current_url)
    _wait_for_text(browser, "main", "Matching entries")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.log tbody tr")
    assert len(rows) == 1 and "bob" in rows[0].text and "Rule set made live" in rows[0].text
    assert "action=rule_set.live" in browser.current_url

    Select(browser.find_element(By.ID, "id_action")).select_by_index(0)
    Select(browser.find_element(By.ID, "id_who")).select_by_visible_text(
        f"token nightly upload (cs_{token.prefix}_…)")
    browser.find_element(By.XPATH, "//button[text()='Show']").click()
    # The new page, not the old one: "Log uploaded" is also an option of the action filter.
    WebDriverWait(browser, 10).until(lambda b: "who=token" in b.current_url)
    _wait_for_text(browser, "main", "Log uploaded")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.log tbody tr")
    assert len(rows) == 1
    rows[0].find_element(By.TAG_NAME, "summary").click()
    details = rows[0].find_element(By.CSS_SELECTOR, "dl.log-details").text
    assert "filename" in details and "night.jsonl" in details and "1200" in details
    link = browser.find_element(By.PARTIAL_LINK_TEXT, "as CSV").get_attribute("href")
    assert link.endswith(f"/w/payments/log/entries.csv?who=token%3A{token.pk}")

    # The whole log (more to see) for the screenshots.
    browser.find_element(By.LINK_TEXT, "Show everything").click()
    _wait_for_text(browser, "main", "Guard policy changed")
    browser.find_element(By.CSS_SELECTOR, "table.log tbody tr summary").click()
    _check_at_both_widths(browser, "audit-log")


def test_change_a_guard_policy_and_see_it_saved(browser, live_server, transactional_db):
    ann = ws.create_user("ann", PASSWORD)
    workspace = ws.create_workspace("Payments", owner=ann, slug="payments")
    cap = rules.create_rule(workspace, ann, "refund-cap", "G(!big_refund)")
    notify = rules.create_rule(workspace, ann, "answer-requests", "G(request -> F answer)")
    ruleset = rules.create_rule_set(workspace, ann, "refunds", rule_ids=[cap.id, notify.id])
    sign_in(browser, live_server.url, "ann", PASSWORD)

    browser.get(f"{live_server.url}/w/payments/rule-sets/{ruleset.id}/")
    browser.find_element(By.LINK_TEXT, "the guard policy of refunds").click()
    _wait_for_text(browser, "main", "Guard policy of refunds")
    threshold = browser.find_element(By.ID, "id_threshold")
    threshold.clear()
    threshold.send_keys("2")
    browser.find_element(By.XPATH, "//button[text()='Save the policy']").click()
    _wait_for_text(browser, "#threshold-error", "threshold must lie between 0 and 1")
    assert browser.find_element(By.ID, "id_threshold").get_attribute("value") == "2"

    threshold = browser.find_element(By.ID, "id_threshold")
    threshold.clear()
    threshold.send_keys("0.3")
    horizon = browser.find_element(By.ID, "id_horizon")
    horizon.clear()
    horizon.send_keys("8")
    # Rules are listed by name: answer-requests, then refund-cap.
    Select(browser.find_element(By.ID, "id_intervention_1")).select_by_visible_text(
        "ask a person to approve or deny (ask a person)")
    browser.find_element(By.XPATH, "//button[text()='Save the policy']").click()
    _wait_for_text(browser, ".messages", "is saved")
    now = browser.find_element(By.CSS_SELECTOR, ".policy-now").text
    assert "30% or more" in now and "8 steps" in now
    assert "refund-cap: ask a person to approve or deny (ask a person)" in now
    policy = guard_services.policy_of(ruleset)
    assert (policy.threshold, policy.horizon) == (0.3, 8)
    assert dict(policy.interventions) == {"refund-cap": "ask_human"}
    _check_at_both_widths(browser, "guard-policy")
