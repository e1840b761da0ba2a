"""Every page of the studio at a phone's width (390 px) and a laptop's (1280 px), in a real
Chromium: no page scrolls sideways (wide tables scroll inside their own box, long formulas wrap),
"Sign out" stays on screen, and JSON in the session timeline wraps between tokens, never one
character a line.

The pages are taken from the URL conf, so a new page is walked without being listed here: every
named route is visited with its arguments filled from the demo workspace, unless SKIPPED says
why not.  A few pages are also visited in a state a person reaches by acting on them (a
violation's witness, a version in review as its reviewer sees it, an English rule read, the
new-rule form after "Use reading").

With ``STUDIO_PAGE_SHOTS=DIR`` every page walked is saved there at both widths (to compare a
change's look before and after).  With ``STUDIO_SCREENSHOTS=1`` the session page, the sessions
list and the live page are saved at both widths (docs/screenshots/*-390.png and *-1280.png)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from studio.audits.models import AuditRun, ViolationRecord
from studio.audits.services import start_audit
from studio.rules import services as rule_services
from studio.rules.models import Labeler, Rule, RuleSet
from studio.traces.models import TraceSession, Upload
from studio.workspaces.invitations import invite
from studio.workspaces.models import Role
from studio.workspaces.services import create_token, create_webhook_secret

from .conftest import save_whole_page, sign_in
from .test_scenario import SHOTS, UNLABELLED_CONTROLS, _wait_for_text

WIDTHS = (390, 1280)

# Named routes that are not pages a person looks at, each with the reason it is not walked.
SKIPPED = {
    "healthz": "a JSON probe for the load balancer",
    "otlp-traces": "OTLP ingestion for agents (POST)",
    "logout": "POST only: signing out",
    # Forms' targets: they answer a POST with a redirect or with a page walked here.
    "formula_check": "POST only: the rule form's live check (its result is on the rules page)",
    "formalise": "POST only: its result is walked as the rules page's 'english' state",
    "rule_library": "POST only: adds a rule from the library",
    "upload_audit": "POST only: starts an audit of an upload",
    "upload_resume": "POST only: resumes a parse",
    "audit_start": "POST only: starts an audit",
    "session_correct_label": "POST only: corrects a step's label",
    "guard_model_learn": "POST only: learns the risk model again",
    "guard_predicate_add": "POST only: adds a domain predicate to a live rule set's model",
    "guard_predicate_remove": "POST only: removes a domain predicate from a rule set's model",
    "guard_answer": "POST only: approves or denies a guard's question",
    "member_roles": "POST only: changes a member's roles",
    "member_remove": "POST only: removes a member",
    "token_revoke": "POST only: revokes a token",
    "webhook_secret_revoke": "POST only: revokes a webhook secret",
    "llm_settings_remove": "POST only: forgets the LLM endpoint",
    "invitation_create": "POST only: invites a person (the members page shows the form)",
    "invitation_revoke": "POST only: revokes an invitation",
    # Downloads.
    "upload_errors": "a CSV download",
    "audit_csv": "a CSV download",
    "audit_violations_csv": "a CSV download",
    "audit_json": "a JSON download",
    "workspace_log_csv": "a CSV download of the audit log",
    # htmx fragments of pages walked here (they have no page around them).
    "upload_progress": "an htmx fragment of the upload page",
    "audit_progress": "an htmx fragment of the upload and report pages",
    "session_residual": "an htmx fragment of the session page",
    "live_rows": "an htmx fragment of the live page",
    "guard_model_progress": "an htmx fragment of the risk model page",
}
# Whole groups: Django's own admin (its own look, for the operator) and the JSON API.
SKIPPED_NAMESPACES = {"admin": "Django's admin site, for the operator", "api": "the JSON API"}

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

# Rule names in the session page's verdict lanes whose text runs past their cell, over the
# step cells beside it (the kept first column is narrow on a phone: its text must wrap).
LANES_OVERLAPPING = """
return [...document.querySelectorAll('.lanes th.lane-rule')]
  .filter(cell => cell.scrollWidth > cell.clientWidth + 1)
  .map(cell => cell.innerText.split('\\n')[0]);
"""


def _routes(resolver=None):
    """(name, route) for every named route of the URL conf, "namespace:name" inside one."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            for name, route in _routes(entry):
                yield (f"{entry.namespace}:{name}" if entry.namespace else name), route
        elif isinstance(entry, URLPattern) and entry.name:
            yield entry.name, entry


class Demo:
    """The demo workspace's objects that fill the routes' arguments, and what the tests add to
    it so that each page has something in its tables: a token, a webhook secret, and a version
    waiting for review (written by ann, reviewed by rob)."""

    def __init__(self):
        self.textworld = AuditRun.objects.get(upload__filename="textworld.jsonl")
        self.hijacked = AuditRun.objects.get(upload__filename="agentdojo_hijacked.jsonl")
        # A session with a violation whose steps carry tool calls and their JSON outputs: the
        # widest timeline and a witness to open.
        self.violation = (ViolationRecord.objects.filter(result__run=self.hijacked)
                          .select_related("result").order_by("result__session_id", "id").first())
        self.session = self.violation.result.session
        self.merge = TraceSession.objects.get(external_id="msc-merge-demo")
        ann = get_user_model().objects.get(username="ann")
        ann.is_staff = True  # staff pages too (a new workspace)
        ann.save(update_fields=["is_staff"])
        workspace = self.session.workspace
        # The rule with the longest formula: the rule pages' widest content.
        rule = max(Rule.objects.filter(workspace=workspace).order_by("id"),
                   key=lambda rule: len(rule.versions.order_by("-number").first().formula))
        draft = rule_services.new_version(rule, ann)
        self.in_review = rule_services.submit_for_review(draft, ann, "walked by the phone test")
        self.rule = rule
        self.changed = self._audit_with_a_changed_rule(workspace, ann, rule)
        create_token(workspace, "phone test", [Role.AUDITOR], ann)
        create_webhook_secret(workspace, "demo agent", by=ann)
        # A pending invitation: the members page lists it, and its link's page is walked.
        _, invitation_token = invite(workspace, "new.person@example.com", [Role.AUTHOR], ann)
        self.arguments = {
            "slug": "demo", "rule_id": rule.id, "session_id": self.session.id,
            "labeler_id": Labeler.objects.filter(workspace=workspace).order_by("id").first().id,
            "rule_set_id": RuleSet.objects.filter(workspace=workspace).order_by("id").first().id,
            "upload_id": Upload.objects.get(workspace=workspace,
                                            filename="agentdojo_hijacked.jsonl").id,
            "audit_id": self.textworld.id, "username": "rob", "token": invitation_token}
        # Routes that need other arguments than the common ones, or a query to show anything.
        self.special = {
            "session": {"query": {"run": self.hijacked.id}},
            "session_msc": {"arguments": {"session_id": self.merge.id},
                            "query": {"event": 9}},
            "audit_compare": {"query": {"before": self.hijacked.id, "after": self.changed.id}},
            "version_impact": {"query": {"v": self.in_review.number}},
        }

    def _audit_with_a_changed_rule(self, workspace, ann, kept: Rule) -> AuditRun:
        """A second audit of the hijacked log after another rule got a stricter version: the
        run comparison then has sessions whose verdicts changed (its widest table)."""
        rob = get_user_model().objects.get(username="rob")
        stricter = next(rule for rule in self.hijacked.rule_set.rules.order_by("id")
                        if rule != kept)
        version = rule_services.new_version(stricter, ann, 'G !(output.tool == "send_money")')
        rule_services.approve(rule_services.submit_for_review(version, ann, "phone test"), rob)
        return start_audit(workspace, self.hijacked.rule_set, self.hijacked.upload, by=ann)

    def path(self, name: str, route: URLPattern) -> str:
        special = self.special.get(name, {})
        wanted = set(route.pattern.converters)
        unknown = wanted - set(self.arguments) - set(special.get("arguments", {}))
        assert not unknown, (f"route {name!r} needs {sorted(unknown)}: fill them in Demo or "
                             "say in SKIPPED why it is not a page")
        arguments = {key: self.arguments[key] for key in wanted if key in self.arguments}
        arguments.update(special.get("arguments", {}))
        path = reverse(name, kwargs=arguments)
        return path + ("?" + urlencode(special["query"]) if "query" in special else "")


def _visits(demo: Demo) -> list[tuple[str, str, str]]:
    """(name, path, user) of every page to walk: each route of the URL conf not skipped, then
    the states a person reaches by acting on a page."""
    visits = []
    routes = dict(_routes())
    stale = set(SKIPPED) - set(routes)
    assert not stale, f"SKIPPED names routes that no longer exist: {sorted(stale)}"
    for name, route in routes.items():
        namespace = name.split(":")[0] if ":" in name else None
        if name in SKIPPED or namespace in SKIPPED_NAMESPACES:
            continue
        visits.append((name, demo.path(name, route), "ann"))
    session = reverse("session", args=["demo", demo.session.id])
    rule = reverse("rule", args=["demo", demo.rule.id])
    visits += [
        # A violation's witness opened on the session page.
        ("session witness", f"{session}?run={demo.hijacked.id}&violation={demo.violation.id}",
         "ann"),
        # The rule page of a version in review, as its reviewer sees it: the review form.
        ("rule in review", f"{rule}?v={demo.in_review.number}", "rob"),
    ]
    return visits


ERROR_TITLES = ("Not found", "Not allowed", "Not accepted", "Server error")


def _settled(browser, name: str) -> None:
    """Wait until the page has loaded and its htmx loads (e.g. "What would change") are in."""
    def done(driver) -> bool:
        try:
            return driver.execute_script(
                "return document.readyState === 'complete'"
                " && !document.querySelector('.htmx-request')")
        except WebDriverException:
            return False
    time.sleep(0.2)  # htmx's "load" triggers start just after the page is complete
    try:
        WebDriverWait(browser, 60).until(done)
    except TimeoutException:
        raise AssertionError(f"{name} never finished loading") from None
    title = browser.title
    assert not title.startswith(ERROR_TITLES), f"{name} answered {title!r}"


def _read_english(browser, base: str) -> None:
    """The rules page after an English rule was read: its readings and the mapping table."""
    browser.get(base + "/w/demo/rules/")
    _settled(browser, "rules")
    box = browser.find_element(By.ID, "id_english")
    box.send_keys("Never send money after reading a web page")
    box.find_element(By.XPATH, "ancestor::form//button[@type='submit']").click()
    _wait_for_text(browser, "#formalised", "How your words were matched")


def _use_reading(browser, base: str) -> None:
    """The new-rule form filled from the first reading ("Use reading 1")."""
    link = browser.find_element(By.CSS_SELECTOR, "#formalised a.button[href*='#new-rule']")
    browser.get(link.get_attribute("href"))
    _settled(browser, "use reading")


def _check_page(browser, name: str, width: int, overflowing: list[str]) -> None:
    found = browser.execute_script(OVERFLOW)
    if os.environ.get("STUDIO_PAGE_SHOTS"):
        save_whole_page(browser, Path(os.environ["STUDIO_PAGE_SHOTS"]) / f"{name}-{width}.png",
                         width)
    if found["scrollWidth"] > found["innerWidth"]:
        overflowing.append(f"{name} at {width} px: {found}")
    # "Sign out" stays within reach, however narrow the screen.
    box = browser.execute_script(
        "return document.querySelector('.signout button').getBoundingClientRect().toJSON()")
    if not (0 <= box["left"] and box["right"] <= found["innerWidth"]):
        overflowing.append(f"{name} at {width} px: Sign out at {box}")


def _walk(browser, base: str, demo: Demo, width: int, overflowing: list[str],
          names: set[str] | None = None) -> list[str]:
    walked = []
    browser.set_window_size(width, 900)
    user = None
    for name, path, who in sorted(_visits(demo), key=lambda visit: visit[2]):
        if names is not None and name not in names:
            continue
        if who != user:
            sign_in(browser, base, who, "demo-password")
            browser.set_window_size(width, 900)
            user = who
        browser.get(base + path)
        _settled(browser, name)
        _check_page(browser, name, width, overflowing)
        walked.append(name)
        if name == "session":
            # JSON outputs wrap between tokens: no timeline cell narrower than a few words (it
            # was one character wide at 1280 px).
            narrowest = browser.execute_script(NARROWEST_VALUE)
            if narrowest < 120:
                overflowing.append(f"session at {width} px: a cell {narrowest} px wide")
            indented = browser.execute_script(
                "return [...document.querySelectorAll('.timeline pre.json')]"
                ".map(pre => pre.innerText)")
            assert indented and all('\n  "' in text for text in indented), indented
        if name in ("session", "session witness"):
            overlapping = browser.execute_script(LANES_OVERLAPPING)
            if overlapping:
                overflowing.append(f"{name} at {width} px: lanes {overlapping} run over "
                                   "their steps")
    if names is None:
        sign_in(browser, base, "ann", "demo-password")
        browser.set_window_size(width, 900)
        for name, act in (("rules after reading English", _read_english),
                          ("new rule from a reading", _use_reading)):
            act(browser, base)
            _check_page(browser, name, width, overflowing)
            walked.append(name)
    return walked


def test_no_page_scrolls_sideways_at_390_or_1280_px(browser, live_server, transactional_db,
                                                      settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    demo = Demo()
    overflowing = []
    try:
        for width in WIDTHS:
            walked = _walk(browser, live_server.url, demo, width, overflowing)
    finally:
        browser.set_window_size(1280, 900)
    # The walk reached the states named in issue 26 as scrolling sideways on phones.
    for state in ("rule in review", "rules after reading English", "new rule from a reading",
                  "audit_compare", "session witness", "guard_model", "ground_truth"):
        assert state in walked, state
    assert overflowing == [], "\n".join(overflowing)


def test_screenshots_at_a_phone_and_a_laptop_width(browser, live_server, transactional_db,
                                                   settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo", verbosity=0)
    demo = Demo()
    base = live_server.url
    sign_in(browser, base, "ann", "demo-password")
    visits = {name: path for name, path, _ in _visits(demo)}
    try:
        for width in WIDTHS:
            for name in ("session", "sessions", "live"):
                browser.set_window_size(width, 900)
                browser.get(base + visits[name])
                _settled(browser, name)
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
                    shot = {"sessions": "sessions-list", "live": "live-page"}.get(name, name)
                    browser.save_screenshot(str(SHOTS / f"{shot}-{width}.png"))
    finally:
        browser.set_window_size(1280, 900)
