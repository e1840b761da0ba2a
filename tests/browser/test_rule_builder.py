"""The rule builder in Chromium: from the rules page, an author builds "after issue_refund with
an amount over 500, escalate_to_human within 3 steps" from the pickers (htmx re-reads the rule
at every change, under the strict CSP) and creates it as a draft.

With ``STUDIO_SCREENSHOTS=1`` the filled builder is saved as docs/screenshots/rule-builder.png.
"""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from studio.live.ingest import ingest
from studio.rules.models import Rule
from studio.workspaces.models import Role
from studio.workspaces.services import create_user, create_workspace
from .conftest import sign_in
from tests.browser.test_scenario import PASSWORD, _follow, _shot, _wait_for_text

FORMULA = ("G (output.args.amount > 500 & tool_call:issue_refund -> "
           "F[0,3] tool_call:escalate_to_human)")
ENGLISH = ("Every time the agent calls issue_refund with an amount over 500, a call to "
           "escalate_to_human must happen within 3 steps: at that step or one of the next 3.")

WAIT_FOR_SETTLE = """
window.studioSettled = false;
document.body.addEventListener('htmx:afterSettle', () => { window.studioSettled = true; },
                               {once: true});
"""


def _changed(browser, act) -> None:
    """Do ``act`` (a change of a picker) and wait until htmx has swapped in the new builder."""
    browser.execute_script(WAIT_FOR_SETTLE)
    act()
    WebDriverWait(browser, 20).until(lambda b: b.execute_script("return window.studioSettled"))


def _choose(browser, element_id: str, value: str) -> None:
    _changed(browser, lambda: Select(browser.find_element(By.ID, element_id))
             .select_by_value(value))


def test_build_a_bounded_response_over_a_tool_argument_and_create_it(
        browser, live_server, transactional_db):
    ann = create_user("ann", PASSWORD["ann"])
    workspace = create_workspace("Payments", owner=ann, slug="payments",
                                 roles=(Role.AUTHOR, Role.AUDITOR))
    ingest(workspace, "s1", [
        {"event_id": "e0", "input": "I want my money back", "data": {"role": "user"}},
        {"event_id": "e1", "output": {"tool": "issue_refund", "args": {"amount": 900}}},
        {"event_id": "e2", "output": {"tool": "escalate_to_human",
                                      "args": {"reason": "large refund"}}},
        {"event_id": "e3", "output": {"tool": "issue_refund", "args": {"amount": 120}}},
    ])
    base = live_server.url
    browser.set_window_size(1280, 900)
    sign_in(browser, base, "ann", PASSWORD["ann"])
    browser.get_log("browser")  # drop earlier messages

    browser.get(base + "/w/payments/rules/")
    _follow(browser, browser.find_element(By.LINK_TEXT, "build the rule from a pattern"))
    _wait_for_text(browser, "#readback", "to read the rule")

    _choose(browser, "id_pattern", "bounded_response")
    for wanted in ("5", "3"):  # the number of steps (3 by default): typed, then read back
        steps = browser.find_element(By.ID, "id_n")
        _changed(browser, lambda: steps.send_keys(Keys.CONTROL, "a", Keys.NULL, wanted,
                                                  Keys.TAB))
        assert browser.find_element(By.ID, "id_n").get_attribute("value") == wanted
    _choose(browser, "id_p", "tool_call:issue_refund")
    # The first condition's field picker offers the tool's own arguments first.
    fields = Select(browser.find_element(By.ID, "id_p_path_0"))
    assert "output.args.amount" in [o.get_attribute("value") for o in fields.options]
    _choose(browser, "id_p_path_0", "output.args.amount")
    assert Select(browser.find_element(By.ID, "id_p_op_0")).first_selected_option \
        .get_attribute("value") == ">"
    value = browser.find_element(By.ID, "id_p_value_0")
    _changed(browser, lambda: value.send_keys("500", Keys.TAB))
    _choose(browser, "id_q", "tool_call:escalate_to_human")

    _wait_for_text(browser, "#built-english", ENGLISH)
    assert browser.find_element(By.ID, "built-formula").text == FORMULA
    assert browser.find_elements(By.CSS_SELECTOR, "#readback li.warning") == []
    browser.find_element(By.ID, "id_name").send_keys("escalate large refunds")
    _shot(browser, "rule-builder")  # every control labelled, nothing refused by the CSP

    _follow(browser, browser.find_element(By.XPATH,
                                          "//button[normalize-space()='Create this rule']"))
    _wait_for_text(browser, "ul.messages", "created as a draft")
    rule = Rule.objects.get(workspace=workspace)
    version = rule.versions.get()
    assert (rule.name, version.formula, version.english) == (
        "escalate large refunds", FORMULA, ENGLISH)
    assert browser.current_url.endswith(f"/w/payments/rules/{rule.id}/")
    errors = [m for m in browser.get_log("browser") if m["level"] == "SEVERE"]
    assert not errors, errors
