"""Tokens and members in Chromium: a token's secret shown once, revoking after a confirmation
(htmx's hx-confirm under the strict CSP), and no console errors."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from studio.workspaces.models import ApiToken
from studio.workspaces.services import create_user, create_workspace

from .conftest import sign_in




def test_create_a_token_see_it_once_and_revoke_it_after_confirming(browser, live_server,
                                                                    transactional_db):
    ann = create_user("ann", "correct horse battery")
    create_workspace("Payments", owner=ann, slug="payments")
    sign_in(browser, live_server.url, "ann", "correct horse battery")
    browser.get_log("browser")  # drop earlier messages

    browser.get(live_server.url + "/w/payments/")
    browser.find_element(By.LINK_TEXT, "Tokens").click()
    browser.find_element(By.ID, "id_name").send_keys("ci job")
    browser.find_element(By.CSS_SELECTOR, "input[name=roles][value=auditor]").click()
    browser.find_element(By.XPATH, "//button[text()='Create token']").click()
    secret = browser.find_element(By.ID, "new-token").get_attribute("value")
    token = ApiToken.objects.get(name="ci job")
    assert secret.startswith(f"cs_{token.prefix}_")

    browser.get(live_server.url + "/w/payments/tokens/")
    assert secret not in browser.page_source
    browser.find_element(By.CSS_SELECTOR, "form[hx-confirm] button").click()
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    alert = browser.switch_to.alert
    assert "Revoke the token ci job?" in alert.text
    alert.accept()
    WebDriverWait(browser, 10).until(lambda b: "is revoked" in b.page_source)
    token.refresh_from_db()
    assert token.revoked_at is not None
    errors = [m for m in browser.get_log("browser") if m["level"] == "SEVERE"]
    assert not errors, errors


def test_dismissing_the_confirmation_removes_nobody(browser, live_server, transactional_db):
    ann = create_user("ann", "correct horse battery")
    bob = create_user("bob", "another long secret")
    workspace = create_workspace("Payments", owner=ann, slug="payments")
    from studio.workspaces.services import add_member

    add_member(workspace, bob, "auditor")
    sign_in(browser, live_server.url, "ann", "correct horse battery")

    browser.get(live_server.url + "/w/payments/members/")
    browser.find_element(By.XPATH, "//tr[th[starts-with(normalize-space(), 'bob')]]"
                                   "//form[@hx-confirm]//button").click()
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    browser.switch_to.alert.dismiss()
    assert workspace.memberships.filter(user=bob).exists()
