"""Issue 23 in a real Chromium: on a workspace holding its own support log (and another log with
an `amount` of its own), the refund sentence reads the refund's own amount first, offers the
other field only with a warning, says how many stored sessions it would flag; picking the other
field rewrites the readings, which then say they would never fire.  Screenshots with
``STUDIO_SCREENSHOTS=1`` (grounding-choices.png, grounding-never-fires.png)."""

from __future__ import annotations

import json

import pytest
from django.core.files.base import ContentFile
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from studio.traces import intake, loading
from studio.traces import vocabulary
from studio.traces.models import Upload, UploadStatus
from studio.workspaces.models import Role
from studio.workspaces.services import create_user, create_workspace

from .conftest import sign_in
from .test_scenario import PASSWORD, _shot, _wait_for_text

REFUND = "Never promise a refund over 500 dollars without a manager's approval"


def _events():
    support, other = [], []
    for k, amount in enumerate((800, 120, 45, 60)):
        session = f"ticket-{k + 1}"
        support += [{"session": session, "step": 0, "role": "user", "input": "refund please"},
                    {"session": session, "step": 1, "role": "assistant",
                     "output": {"tool": "issue_refund",
                                "args": {"order_id": f"A-{k}", "amount": amount}}}]
    for k in range(3):
        other.append({"session": f"web-{k}", "step": 0,
                      "output": {"tool": "search_web", "args": {"query": "prices"}},
                      "env": {"placeholder_args": {"amount": 900 + k}}})
    return support, other


def _load(workspace, events, name):
    body = "".join(json.dumps(e) + "\n" for e in events).encode()
    upload, _ = intake.create_upload(workspace, ContentFile(body, name=name), "jsonl",
                                     filename=name)
    if Upload.objects.get(pk=upload.pk).status != UploadStatus.PARSED:
        loading.parse_upload(upload.pk)
    assert Upload.objects.get(pk=upload.pk).status == UploadStatus.PARSED


@pytest.fixture
def support(transactional_db, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    vocabulary.forget_stored()
    ann = create_user("ann", PASSWORD["ann"])
    workspace = create_workspace("Support", owner=ann, roles=(Role.AUTHOR, Role.AUDITOR))
    own, other = _events()
    _load(workspace, own, "support.jsonl")
    _load(workspace, other, "web.jsonl")
    yield workspace
    vocabulary.forget_stored()


def test_the_refund_sentence_grounds_on_the_refunds_own_amount(browser, live_server, support):
    base = live_server.url
    sign_in(browser, base, "ann", PASSWORD["ann"])
    browser.get(f"{base}/w/support/rules/")
    browser.find_element(By.ID, "id_english").send_keys(REFUND)
    browser.find_element(By.CSS_SELECTOR, "#english-heading ~ form button[type=submit]").click()
    _wait_for_text(browser, "#formalised", "Would flag")
    text = browser.find_element(By.ID, "formalised").text
    assert "Would flag 1 of the 7 newest stored sessions" in text
    assert "ticket-1" in text
    assert "placeholder" not in text.split("How your words were matched")[0]
    amount = next(s for s in browser.find_elements(By.CSS_SELECTOR, "select[name^='choice:']")
                  if "amount" in s.get_attribute("name"))
    options = [o.text for o in Select(amount).options]
    assert options[0].startswith("output.args.amount") and "800" in options[0]
    assert options[1].startswith("data.env.placeholder_args.amount")
    assert "never seen on issue_refund" in text or "Other candidates" in text
    assert "nothing in your logs produces this: add a labeler" in text
    _shot(browser, "grounding-choices")

    # the author picks the other log's field: every reading is rewritten, and says it never fires
    Select(amount).select_by_value("data.env.placeholder_args.amount")
    _wait_for_text(browser, "#formalised", "your choice")
    text = browser.find_element(By.ID, "formalised").text
    assert "never fire" in text and "Would flag 1 of" not in text
    _shot(browser, "grounding-never-fires")
