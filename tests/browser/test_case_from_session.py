"""Two issue-26 flows in Chromium on the demo: ann takes a rule's test case from a stored session
she names (an unknown name is refused beside the field, with what she typed kept), and the Logs
page shows what each format looks like.  Both pages fit a phone (390 px) and a laptop (1280 px).

With ``STUDIO_SCREENSHOTS=1`` both are saved at both widths
(docs/screenshots/case-from-session-*.png and upload-formats-*.png)."""

from __future__ import annotations

from django.core.management import call_command
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from studio.evidence.models import RuleCase
from studio.rules.models import Rule
from studio.traces.formats.examples import GUIDES
from studio.traces.models import TraceSession

from .conftest import sign_in
from .test_invitation import _fits_every_width


def test_a_case_from_a_session_named_and_the_formats_shown(browser, live_server,
                                                           transactional_db, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    rule = Rule.objects.get(workspace__slug="demo", name="take_then_examine")
    name = (TraceSession.objects.filter(workspace__slug="demo", steps__gte=3)
            .order_by("id").first().external_id)
    sign_in(browser, base, "ann", "demo-password")
    browser.get_log("browser")  # drop earlier messages

    browser.get(f"{base}/w/demo/rules/{rule.id}/cases")
    browser.find_element(By.XPATH, "//summary[text()='Add a test case']").click()
    browser.find_element(By.ID, "case-session").send_keys(name + "-nope")
    browser.find_element(By.NAME, "to_step").send_keys("2")
    browser.find_element(By.CSS_SELECTOR, "button[value=from_session]").click()
    error = browser.find_element(By.ID, "case-session-error").text
    assert "no session named" in error and name + "-nope" in error
    field = browser.find_element(By.ID, "case-session")
    assert field.get_attribute("value") == name + "-nope"
    assert field.get_attribute("aria-invalid") == "true"
    assert browser.find_element(By.NAME, "to_step").get_attribute("value") == "2"
    _fits_every_width(browser, "case-from-session")

    field.clear()
    field.send_keys(name)
    browser.find_element(By.CSS_SELECTOR, "button[value=from_session]").click()
    # Taken, the form sends ann back to the rule's page.
    WebDriverWait(browser, 10).until(lambda b: "/cases" not in b.current_url)
    assert "Test case taken from the session." in browser.find_element(By.TAG_NAME, "body").text
    case = RuleCase.objects.get(rule=rule, source__kind="session")
    assert case.source["session"] == name and len(case.steps) == 3

    browser.get(f"{base}/w/demo/uploads/")
    for key, guide in GUIDES.items():
        shown = browser.find_element(By.ID, f"format-{key}")
        shown.find_element(By.TAG_NAME, "summary").click()
        example = shown.find_element(By.CSS_SELECTOR, "pre.format-example").text
        assert example.split("\n")[0] == guide.example.split("\n")[0], key
    _fits_every_width(browser, "upload-formats")
