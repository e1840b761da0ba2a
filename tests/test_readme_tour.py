"""The README's tour, over HTTP, with the rule and the log the README shows (read from it, so the
README cannot drift from what the studio does): an author writes the rule, a reviewer approves it,
the log is uploaded with an audit on arrival, and the verdicts are the ones the README promises."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from studio.workspaces import services as ws
from studio.workspaces.models import Role

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _readme_rule() -> tuple[str, str]:
    name = re.search(r"^name:\s+(\S+)$", README, re.MULTILINE).group(1)
    formula = re.search(r"^formula:\s+(.+)$", README, re.MULTILINE).group(1)
    return name, formula


def _readme_log() -> bytes:
    block = re.search(r"## The log format.*?```json\n(.*?)```", README, re.DOTALL).group(1)
    return block.encode()


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_tour_gives_the_verdicts_the_readme_promises(db, settings, tmp_path,
                                                          django_capture_on_commit_callbacks):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    ann, rob = ws.create_user("ann"), ws.create_user("rob")
    workspace = ws.create_workspace("Tour", slug="tour", owner=ann,
                                    roles=(Role.AUTHOR, Role.AUDITOR, Role.ADMIN))
    ws.add_member(workspace, rob, Role.REVIEWER)
    as_ann, as_rob = _client(ann), _client(rob)
    name, formula = _readme_rule()
    # The demo's AgentDojo logs show `output.tool`; a log of this workspace must too, or the rule
    # has an unknown_path warning to acknowledge before it can be submitted.
    with django_capture_on_commit_callbacks(execute=True):
        earlier = as_ann.post("/api/w/tour/uploads", {
            "file": SimpleUploadedFile(
                "earlier.jsonl", b'{"session": "earlier", "output": {"tool": "get_balance"}}\n'),
            "format": "jsonl"})
    assert earlier.status_code == 201, earlier.content

    # 2. ann writes the rule and submits it; 3. rob approves it.
    created = as_ann.post("/api/w/tour/rules", {"name": name, "formula": formula},
                          content_type="application/json")
    assert created.status_code == 201, created.content
    rule = created.json()["id"]
    submitted = as_ann.post(f"/api/w/tour/rules/{rule}/versions/1/submit", {},
                            content_type="application/json")
    assert submitted.status_code == 200, submitted.content
    approved = as_rob.post(f"/api/w/tour/rules/{rule}/versions/1/approve", {},
                           content_type="application/json")
    assert approved.status_code == 200, approved.content

    # 4. ann uploads the README's log, audited as it loads.
    with django_capture_on_commit_callbacks(execute=True):
        uploaded = as_ann.post("/api/w/tour/uploads", {
            "file": SimpleUploadedFile("payments.jsonl", _readme_log()),
            "format": "jsonl", "audit": "true"})
    assert uploaded.status_code == 201, uploaded.content
    upload = as_ann.get(f"/api/w/tour/uploads/{uploaded.json()['id']}").json()
    assert upload["status"] == "parsed", upload
    run = upload["audit_run"]
    assert run, upload

    # 5. The verdicts: careful complied, hasty violated.
    results = as_ann.get(f"/api/w/tour/audits/{run}/results").json()
    verdicts = {item["session"]: item["session_verdict"] for item in results["items"]}
    assert verdicts == {"careful": "complied", "hasty": "violated"}, results
    for page in (f"/w/tour/audits/{run}/", "/w/tour/sessions/"):
        text = as_ann.get(page).content.decode()
        assert "complied" in text and "violated" in text, page
