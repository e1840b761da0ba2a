"""Sign in through the real page in Chromium and land in the workspace."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from studio.workspaces.services import create_user, create_workspace


def test_sign_in_and_see_the_workspace_with_my_roles(browser, live_server, transactional_db):
    alice = create_user("alice", "correct horse battery")
    create_workspace("Payments", owner=alice)
    browser.delete_all_cookies()
    browser.get(live_server.url + "/")
    assert "/accounts/login/" in browser.current_url
    browser.find_element(By.ID, "id_username").send_keys("alice")
    browser.find_element(By.ID, "id_password").send_keys("correct horse battery")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 10).until(lambda b: "/accounts/login/" not in b.current_url)
    heading = browser.find_element(By.TAG_NAME, "h1")
    assert heading.text == "Payments"
    assert browser.current_url.endswith("/w/payments/")
    badges = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "main .badge")]
    assert badges == ["admin", "auditor", "author", "reviewer"]
    # The page loaded htmx under the strict policy (no CSP violation blocked it).
    assert browser.execute_script("return typeof window.htmx") == "object"
