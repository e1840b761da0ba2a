"""Every main page of the demo at a phone's width (390 px) and a laptop's (1280 px), in a real
Chromium: no page scrolls sideways (wide tables scroll inside their own box), "Sign out" stays
on screen, and JSON in the session timeline wraps between tokens, never one character a line.

With ``STUDIO_SCREENSHOTS=1`` the session page, the sessions list and the live page are saved at
both widths (docs/screenshots/*-390.png and *-1280.png)."""

from __future__ import annotations

import os

from django.core.management import call_command

from studio.audits.models import AuditRun
from studio.rules.models import Labeler, Rule
from studio.traces.models import TraceSession, Upload

from .conftest import sign_in
from .test_scenario import SHOTS, UNLABELLED_CONTROLS, _wait_for_text

WIDTHS = (390, 1280)

# The widest elements that stick out of the viewport: named in the failure, so that whoever
# breaks a page learns which element did it.
OVERFLOW = """
const width = window.innerWidth;
const seen = [];
for (const element of document.querySelectorAll('body *')) {
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.right <= width + 0.5) continue;
  // An element inside a box that scrolls by itself does not widen the page, unless it is
  // positioned against something outside that box: then the box does not clip it.
  const absolute = getComputedStyle(element).position === 'absolute';
  // Name the outermost element that sticks out, not each of its children.
  const parent = element.parentElement;
  if (!absolute && parent !== document.body && parent.getBoundingClientRect().right > width + 0.5) continue;
  let clipped = absolute ? null : false;
  for (let up = element.parentElement; clipped === false && up !== document.body; up = up.parentElement) {
    const overflow = getComputedStyle(up).overflowX;
    if (overflow === 'auto' || overflow === 'scroll' || overflow === 'hidden') { clipped = true; break; }
  }
  if (clipped === true) continue;
  const name = (parent && parent.className && typeof parent.className === 'string'
                ? '.' + parent.className.trim().split(/\\s+/)[0] + ' > ' : '')
    + element.tagName.toLowerCase() + (element.id ? '#' + element.id : '')
    + (element.className && typeof element.className === 'string'
       ? '.' + element.className.trim().split(/\\s+/).join('.') : '');
  seen.push(name + ' right=' + Math.round(box.right));
}
return {scrollWidth: document.documentElement.scrollWidth, innerWidth: width,
        culprits: seen.slice(0, 8)};
"""

# The narrowest cell of the session timeline that holds something, in CSS pixels.  A JSON
# output wrapped one character a line sat in a column 76 px wide at 1280 px; indented JSON
# wrapping between its tokens needs at least its longest token (about 15 characters).
NARROWEST_VALUE = """
let narrowest = null;
for (const cell of document.querySelectorAll('.timeline td')) {
  const box = cell.getBoundingClientRect();
  if (box.width === 0 || !cell.innerText.trim()) continue;
  if (narrowest === null || box.width < narrowest) narrowest = box.width;
}
return narrowest;
"""




def _demo_pages() -> dict[str, tuple[str, str]]:
    """Each main page of the demo workspace: its path and a text that shows it has loaded."""
    textworld = AuditRun.objects.get(upload__filename="textworld.jsonl")
    hijacked = AuditRun.objects.get(upload__filename="agentdojo_hijacked.jsonl")
    # A session whose steps carry tool calls and their JSON outputs: the widest timeline.
    session = (TraceSession.objects.filter(workspace__slug="demo", results__run=hijacked)
               .order_by("id").first())
    merge = TraceSession.objects.get(external_id="msc-merge-demo")
    rule = Rule.objects.filter(workspace__slug="demo").order_by("id").first()
    labeler = Labeler.objects.filter(workspace__slug="demo").order_by("id").first()
    upload = Upload.objects.get(workspace__slug="demo", filename="agentdojo_hijacked.jsonl")
    w = "/w/demo"
    return {
        "workspace": (f"{w}/", "Demo"),
        "rules": (f"{w}/rules/", rule.name),
        "rule": (f"{w}/rules/{rule.id}/", rule.name),
        "labelers": (f"{w}/labelers/", labeler.atom),
        "labeler": (f"{w}/labelers/{labeler.id}/", labeler.atom),
        "rule-sets": (f"{w}/rule-sets/", "Rule sets"),
        "uploads": (f"{w}/uploads/", "textworld.jsonl"),
        "upload": (f"{w}/uploads/{upload.id}/", upload.filename),
        "audits": (f"{w}/audits/", "textworld.jsonl"),
        "report": (f"{w}/audits/{textworld.id}/", "Agreement with ground truth"),
        "evidence": (f"{w}/audits/{textworld.id}/evidence", "rob"),
        "sessions-list": (f"{w}/sessions/", "newest run with results"),
        "session": (f"{w}/sessions/{session.id}/?run={hijacked.id}", session.external_id),
        "msc": (f"{w}/sessions/{merge.id}/msc?event=9", "Committer"),
        "live-page": (f"{w}/live/", "Live"),
        "members": (f"{w}/members/", "rob"),
        "tokens": (f"{w}/tokens/", "Tokens"),
        "webhook-secrets": (f"{w}/webhook-secrets/", "ebhook"),
    }


def test_no_page_scrolls_sideways_at_390_or_1280_px(browser, live_server, transactional_db,
                                                      settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    sign_in(browser, base, "ann", "demo-password")
    pages = _demo_pages()
    overflowing = []
    try:
        for width in WIDTHS:
            browser.set_window_size(width, 900)
            for name, (path, shows) in pages.items():
                browser.get(base + path)
                _wait_for_text(browser, "body", shows)
                found = browser.execute_script(OVERFLOW)
                if found["scrollWidth"] > found["innerWidth"]:
                    overflowing.append(f"{name} at {width} px: {found}")
                # "Sign out" stays within reach, however narrow the screen.
                box = browser.execute_script(
                    "return document.querySelector('.signout button').getBoundingClientRect()"
                    ".toJSON()")
                if not (0 <= box["left"] and box["right"] <= found["innerWidth"]):
                    overflowing.append(f"{name} at {width} px: Sign out at {box}")
                if name == "session":
                    # JSON outputs wrap between tokens: no timeline cell narrower than a few
                    # words (it was one character wide at 1280 px).
                    narrowest = browser.execute_script(NARROWEST_VALUE)
                    if narrowest < 120:
                        overflowing.append(f"session at {width} px: a cell {narrowest} px wide")
                    indented = browser.execute_script(
                        "return [...document.querySelectorAll('.timeline pre.json')]"
                        ".map(pre => pre.innerText)")
                    assert indented and all('\n  "' in text for text in indented), indented
    finally:
        browser.set_window_size(1280, 900)
    assert overflowing == [], "\n".join(overflowing)


def test_screenshots_at_a_phone_and_a_laptop_width(browser, live_server, transactional_db,
                                                   settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    base = live_server.url
    sign_in(browser, base, "ann", "demo-password")
    pages = _demo_pages()
    try:
        for width in WIDTHS:
            for name in ("session", "sessions-list", "live-page"):
                path, shows = pages[name]
                browser.set_window_size(width, 900)
                browser.get(base + path)
                _wait_for_text(browser, "body", shows)
                assert browser.execute_script(UNLABELLED_CONTROLS) == [], (name, width)
                refused = [entry["message"] for entry in browser.get_log("browser")
                           if "Content Security Policy" in entry["message"]]
                assert refused == [], (name, width, refused)
                if os.environ.get("STUDIO_SCREENSHOTS"):
                    height = browser.execute_script(
                        "return document.documentElement.scrollHeight")
                    browser.set_window_size(width, min(max(900, height), 2400))
                    browser.execute_script("window.scrollTo(0, 0)")
                    SHOTS.mkdir(parents=True, exist_ok=True)
                    browser.save_screenshot(str(SHOTS / f"{name}-{width}.png"))
    finally:
        browser.set_window_size(1280, 900)
