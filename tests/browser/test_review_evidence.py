"""The review page with evidence, in a real Chromium on the demo: ann starts a new version of a
rule, keeps the review aids' violating trace as a test case in one click, and asks what the
version would change; the answer (sessions that change, the first differing step, both
witnesses) appears on the page before rob's approve button.  Screenshot with
``STUDIO_SCREENSHOTS=1`` (review-evidence.png)."""

from __future__ import annotations

from django.core.management import call_command
from selenium.webdriver.common.by import By

from studio.evidence.models import RuleCase
from studio.rules import services as rules
from studio.rules.models import Rule

from .conftest import sign_in
from .test_scenario import _shot, _wait_for_text




def test_cases_and_what_would_change_on_the_review_page(browser, live_server, transactional_db,
                                                        settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    rule = Rule.objects.get(workspace__slug="demo", name="take_then_examine")
    from django.contrib.auth import get_user_model

    ann = get_user_model().objects.get(username="ann")
    version = rules.new_version(rule, ann, "G(take -> F[1,2] examine)")

    sign_in(browser, base, "ann", "demo-password")
    browser.get(f"{base}/w/demo/rules/{rule.id}/?v={version.number}")
    _wait_for_text(browser, "#review-aids", "Keep as a test case")
    browser.find_element(By.CSS_SELECTOR,
                         "#review-aids button[name=which][value=violating]").click()
    _wait_for_text(browser, "#rule-cases", "passes all 1 test case")
    assert RuleCase.objects.filter(rule=rule).count() == 1
    browser.find_element(By.CSS_SELECTOR, "#version-impact button[type=submit]").click()
    _wait_for_text(browser, "#version-impact", "sessions would change")
    text = browser.find_element(By.ID, "version-impact").text
    assert "against approved version 1" in text
    assert "0 of" not in text.split("sessions would change")[0]  # the change shows
    assert "detected at step" in text  # a witness beside the link at the step
    _shot(browser, "review-evidence")
