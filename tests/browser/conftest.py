"""A real headless Chromium (Debian's package) driven by Selenium against the live server.

Skipped, with the reason, where chromium or chromedriver is not installed; the README's test
command installs both.
"""

import shutil
import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="session")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromedriver are not installed (apt-get install -y chromium "
                    "chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="studio-chromium-")
    # The machine has no network beyond loopback: background services would only fail.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1280,900"):
        options.add_argument(flag)
    # Console messages are read back by the tests: a CSP violation must fail them.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def sign_in(browser, base: str, username: str, password: str) -> None:
    """Sign in through the sign-in page as a person would, as nobody else."""
    # Leave the old page first: a request of its still in flight would answer after the
    # cookies are gone and set its CSRF cookie again (Django renews it on every answer that
    # renders a token), so the sign-in form's token would no longer match.
    browser.get("about:blank")
    browser.delete_all_cookies()
    browser.get(base + "/accounts/login/")
    browser.find_element(By.ID, "id_username").send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    # Not the sign-in page's own heading: wait for the navigation to end somewhere else.
    WebDriverWait(browser, 10).until(lambda b: "/accounts/login/" not in b.current_url)


def save_whole_page(browser, path: Path, width: int) -> None:
    """The page from its top, as tall as it is (at most 4000 px), e.g. to compare a change's
    look before and after it."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, min(max(900, height), 4000))
    browser.execute_script("window.scrollTo(0, 0)")
    path.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(path))
    browser.set_window_size(width, 900)
