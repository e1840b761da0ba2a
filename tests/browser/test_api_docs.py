"""/api/docs opens in a browser: Swagger UI from the studio's own static files (no CDN, which
not every network reaches) under the strict Content-Security-Policy, listing the operations."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def test_the_api_docs_render_the_operations_under_the_strict_policy(browser, live_server,
                                                                    transactional_db):
    browser.get_log("browser")  # forget earlier pages' messages
    browser.get(live_server.url + "/api/docs")
    WebDriverWait(browser, 20).until(
        lambda b: len(b.find_elements(By.CSS_SELECTOR, ".opblock")) > 20)
    summaries = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")]
    assert "/api/w/{slug}/rules" in summaries
    assert "/api/w/{slug}/live/sessions/{session_id}/events" in summaries
    problems = [m["message"] for m in browser.get_log("browser")
                if "Content Security Policy" in m["message"] or m["level"] == "SEVERE"]
    assert not problems, problems
