"""An impact check (a draft audited beside the approved version) is never shown as an audit
(issue 26, item 3): absent from every run picker, from every default run, from the upload
page's audits and the audits lists; labelled "check of draft vN" where it is opened by its
number; and no evidence report claims approved versions for it.  Real HTTP, tasks run
in-process after commit."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from studio.audits import services as audits
from studio.evidence import impact
from studio.rules import services as rules
from tests.audits.helpers import add_rule, add_sessions, make_team, make_upload

pytestmark = pytest.mark.django_db

LABEL = "check of draft v2 of rule answered"


@pytest.fixture
def team(django_capture_on_commit_callbacks):
    team = make_team("drafts")
    team.rule = add_rule(team, "answered", "G(request -> F answer)").rule
    team.upload = make_upload(team)
    team.sessions = add_sessions(team, {
        "late-answer": [{"labels": ["request"]}, {"labels": []}, {"labels": ["answer"]}],
        "never": [{"labels": ["request"]}],
    }, upload=team.upload)
    draft = rules.new_version(team.rule, team.author, "G(request -> X answer)")
    with django_capture_on_commit_callbacks(execute=True):
        team.audit = audits.start_audit(team.workspace, upload=team.upload, by=team.auditor)
    # The newest run, done and with results for every session: the one any default would take.
    with django_capture_on_commit_callbacks(execute=True):
        team.check = impact.start_impact(draft, team.reviewer, "upload", team.upload.id).run
    team.check.refresh_from_db()
    assert team.check.status == "done" and team.check.created_at >= team.audit.created_at
    return team


def client(user):
    c = Client()
    c.force_login(user)
    return c


def options(page: str, select_id: str) -> list[tuple[int, str]]:
    """The (value, text) of each option of the select ``select_id`` in ``page``."""
    body = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', page, re.S).group(1)
    return [(int(v), text) for v, text in re.findall(r'<option value="(\d+)"[^>]*>([^<]*)<', body)]


def test_an_impact_run_is_absent_from_every_picker_and_default(team):
    c = client(team.auditor)
    session = team.sessions["late-answer"]
    slug, audit, check = "drafts", team.audit.id, team.check.id
    pages = {
        "sessions": (f"/w/{slug}/sessions/", "id_run"),
        "session": (f"/w/{slug}/sessions/{session.id}/", "id_run"),
        "chart": (f"/w/{slug}/sessions/{session.id}/msc", "id_run"),
        "compare before": (f"/w/{slug}/audits/compare", "cmp-before"),
        "compare after": (f"/w/{slug}/audits/compare", "cmp-after"),
    }
    for name, (url, select_id) in pages.items():
        page = c.get(url).content.decode()
        offered = [value for value, _ in options(page, select_id)]
        assert offered == [audit], name
        assert "check of draft" not in page, name
    # The default run of the sessions list, the session page and the message chart.
    assert f"Verdicts of audit run #{audit}" in c.get(f"/w/{slug}/sessions/").content.decode()
    assert f'name="run" value="{audit}"' in c.get(
        f"/w/{slug}/sessions/{session.id}/").content.decode()
    assert f"in audit run #{audit}" in c.get(
        f"/w/{slug}/sessions/{session.id}/msc").content.decode()
    # The upload page's audits and the audits list, the page and the API's.
    upload_page = c.get(f"/w/{slug}/uploads/{team.upload.id}/").content.decode()
    # Not "#{check}" anywhere: the upload's own number may be the same ("upload #64").
    assert f"Audit #{audit}" in upload_page and f"/audits/{check}/" not in upload_page
    assert f"Audit #{check}" not in upload_page and "check of draft" not in upload_page
    audits_page = c.get(f"/w/{slug}/audits/").content.decode()
    assert f"/audits/{audit}/" in audits_page and f"/audits/{check}/" not in audits_page
    listed = c.get(f"/api/w/{slug}/audits").json()
    assert [(r["id"], r["kind"]) for r in listed] == [(audit, "audit")]


def test_an_impact_run_opened_by_number_says_it_is_a_check_of_a_draft(team):
    c = client(team.auditor)
    session = team.sessions["late-answer"]
    slug, check = "drafts", team.check.id
    for url, select_id in [(f"/w/{slug}/sessions/?run={check}", "id_run"),
                           (f"/w/{slug}/sessions/{session.id}/?run={check}", "id_run"),
                           (f"/w/{slug}/sessions/{session.id}/msc?run={check}", "id_run"),
                           (f"/w/{slug}/audits/compare?before={team.audit.id}&after={check}",
                            "cmp-after")]:
        page = c.get(url).content.decode()
        assert f"Run #{check} is a {LABEL}, not an audit" in page, url
        chosen = dict(options(page, select_id))[check]
        assert LABEL in chosen, url
    report = c.get(f"/w/{slug}/audits/{check}/").content.decode()
    assert f"Run {check}: {LABEL}" in report
    assert f"/audits/{check}/evidence" not in report
    # Its versions are a draft beside the approved one, never "the approved versions".
    assert "beside the rule’s approved version" in report
    assert "approved version" not in (report.replace("beside the rule’s approved version", "")
                                      .replace("unapproved version", ""))
    exported = c.get(f"/w/{slug}/audits/{check}/report.json")
    exported = json.loads(b"".join(exported.streaming_content))
    assert exported["impact_check"] == LABEL
    answer = c.get(f"/api/w/{slug}/audits/{check}").json()
    assert answer["kind"] == "impact_check"
    assert answer["checks_draft"] == {"rule": "answered", "number": 2}


def test_no_evidence_report_claims_approved_versions_for_an_impact_run(team):
    c = client(team.auditor)
    refused = c.get(f"/w/drafts/audits/{team.check.id}/evidence")
    page = refused.content.decode()
    assert refused.status_code == 404
    assert f"No evidence report for run {team.check.id}" in page and LABEL in page
    assert "Evidence report:" not in page and "the approved versions of" not in page
    # The audit's own report is still there.
    assert c.get(f"/w/drafts/audits/{team.audit.id}/evidence").status_code == 200
    # Outsiders learn nothing about either.
    assert client(team.outsider).get(
        f"/w/drafts/audits/{team.check.id}/evidence").status_code == 404
