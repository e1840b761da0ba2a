"""An invitation in Chromium: an admin invites by email on the Members page and copies the link;
the new person opens it signed out, chooses a username and password and lands signed in in the
workspace.  Both pages fit a phone (390 px) and a laptop (1280 px), with no console errors.

With ``STUDIO_SCREENSHOTS=1`` both pages are saved at both widths
(docs/screenshots/invite-*-390.png and *-1280.png)."""

from __future__ import annotations

import os

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from studio.workspaces.models import Membership
from studio.workspaces.services import create_user, create_workspace

from .conftest import save_whole_page, sign_in
from .test_scenario import SHOTS, UNLABELLED_CONTROLS
from .test_small_screens import OVERFLOW, WIDTHS


def _fits_every_width(browser, name: str) -> None:
    """No sideways scrolling, every control labelled, nothing refused by the CSP; with
    STUDIO_SCREENSHOTS set, a screenshot at each width."""
    try:
        for width in WIDTHS:
            browser.set_window_size(width, 900)
            found = browser.execute_script(OVERFLOW)
            assert found["scrollWidth"] <= found["innerWidth"], (name, width, found)
            assert browser.execute_script(UNLABELLED_CONTROLS) == [], (name, width)
            if os.environ.get("STUDIO_SCREENSHOTS"):
                save_whole_page(browser, SHOTS / f"{name}-{width}.png", width)
    finally:
        browser.set_window_size(1280, 900)
    # A refused form answers 422 on purpose, which Chromium logs as a failed load.
    refused = [m["message"] for m in browser.get_log("browser")
               if (m["level"] == "SEVERE" and "status of 422" not in m["message"])
               or "Content Security Policy" in m["message"]]
    assert refused == [], (name, refused)


def test_an_admin_invites_and_the_new_person_joins(browser, live_server, transactional_db):
    ann = create_user("ann", "correct horse battery")
    workspace = create_workspace("Payments", owner=ann, slug="payments")
    sign_in(browser, live_server.url, "ann", "correct horse battery")
    browser.get_log("browser")  # drop earlier messages

    browser.get(live_server.url + "/w/payments/")
    browser.find_element(By.LINK_TEXT, "Members").click()
    browser.find_element(By.ID, "id_email").send_keys("sam@example.com")
    browser.find_element(By.CSS_SELECTOR, "form[action$='/invitations/'] "
                                          "input[name=roles][value=auditor]").click()
    browser.find_element(By.XPATH, "//button[text()='Invite']").click()
    link = browser.find_element(By.ID, "invite-link").get_attribute("value")
    assert link.startswith(live_server.url + "/invitations/")
    assert "sam@example.com" in browser.find_element(By.CSS_SELECTOR, "table.invitations").text
    _fits_every_width(browser, "invite-members")

    # The new person has no account and no session: ann signs out first.
    browser.find_element(By.CSS_SELECTOR, ".signout button").click()
    WebDriverWait(browser, 10).until(lambda b: "/accounts/login/" in b.current_url)
    browser.get(link)
    assert not browser.find_elements(By.CSS_SELECTOR, ".signout")
    assert "Join Payments" in browser.find_element(By.TAG_NAME, "h1").text
    browser.find_element(By.ID, "id_username").send_keys("sam")
    browser.find_element(By.ID, "id_password1").send_keys("password")
    browser.find_element(By.ID, "id_password2").send_keys("password")
    browser.find_element(By.XPATH, "//button[text()='Create my account and join']").click()
    error = browser.find_element(By.ID, "password-error").text
    assert "too common" in error
    assert browser.find_element(By.ID, "id_username").get_attribute("value") == "sam"
    _fits_every_width(browser, "invite-join")

    browser.find_element(By.ID, "id_password1").send_keys("plum orchard 1977")
    browser.find_element(By.ID, "id_password2").send_keys("plum orchard 1977")
    browser.find_element(By.XPATH, "//button[text()='Create my account and join']").click()
    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith("/w/payments/"))
    assert "Welcome, sam" in browser.page_source
    assert browser.find_element(By.CSS_SELECTOR, ".signout span").text == "sam"
    assert set(Membership.objects.filter(workspace=workspace, user__username="sam")
               .values_list("role", flat=True)) == {"auditor"}

    # The link worked once.
    browser.get(link)
    assert "cannot be used" in browser.find_element(By.TAG_NAME, "h1").text
