"""Exports that stand as evidence, through real requests: the violations CSV (a row per
violation with its rule version's number, counting, steps, witness steps and explanation, the
same bytes from the page and the API, neutralised cells), rule version numbers beside their ids
in the JSON answers, and the evidence report's logs (each upload's SHA-256, only the uploads the
run read) and labelers (only those of atoms the audited rules read)."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from studio.audits.models import AuditRun, GroundTruth, ViolationRecord
from studio.rules import services as rules
from tests.audits.helpers import add_labeler, add_sessions
from tests.web.test_report_pages import Tables, client_for, table_after

pytestmark = pytest.mark.django_db

FIRST = {
    "a": [{"labels": ["request"], "input": "customer asks", "output": "looking"},
          {"labels": ["answer"], "output": "here you go"},
          {"labels": ["request"], "input": "one more thing?", "output": {"tool": "search"}},
          {"labels": []}],
    # A session id a spreadsheet would run, behind a blank.
    ' =HYPERLINK("http://evil.example","x")': [{"labels": ["delete", "logout"]}],
}
SECOND = {"b": [{"labels": ["delete"], "input": "clean up"}, {"labels": ["logout"]}]}


def stored_upload(team, name: str, content: bytes):
    from studio.traces.models import Upload, UploadStatus

    return Upload.objects.create(workspace=team.workspace, uploaded_by=team.auditor,
                                 filename=name, format="jsonl", size=len(content),
                                 sha256=hashlib.sha256(content).hexdigest(),
                                 status=UploadStatus.PARSED)


def approved(team, name: str, formula: str, english: str):
    rule = rules.create_rule(team.workspace, team.author, name, formula, english=english)
    version = rules.submit_for_review(rule.versions.get(), team.author, "warnings known")
    return rules.approve(version, team.reviewer, "checked")


@pytest.fixture
def world(team):
    respond = approved(team, "respond", "G(request -> F answer)", "Every request is answered.")
    # respond is audited at version 2: numbers and ids differ.
    second = rules.new_version(respond.rule, team.author, "G(request -> F answer)")
    second = rules.submit_for_review(second, team.author, "warnings known")
    team.respond = rules.approve(second, team.reviewer, "same rule, reviewed again")
    team.no_delete = approved(team, "no_delete", "G !delete", "Never delete anything.")
    team.logs_out = approved(team, "logs_out", "F logout", "The session ends with a logout.")
    # A labeler of an atom a rule reads, and one of an atom no audited rule reads.
    add_labeler(team, "answer", "regex", {"path": "output", "pattern": "here you go"})
    add_labeler(team, "refund_talk", "regex", {"path": "input", "pattern": "refund"})
    team.first = stored_upload(team, "first.jsonl", b"first file")
    team.second = stored_upload(team, "second.jsonl", b"second file")
    add_sessions(team, FIRST, upload=team.first)
    add_sessions(team, SECOND, upload=team.second)
    return team


def start(team, capture, upload=None) -> AuditRun:
    with capture(execute=True):
        response = client_for(team.auditor).post(
            "/w/acme/audits/", {"rule_set": "", "upload": upload.id if upload else ""})
    assert response.status_code == 302
    run = AuditRun.objects.order_by("-id").first()
    assert run.status == "done"
    return run


@pytest.fixture
def run(world, django_capture_on_commit_callbacks) -> AuditRun:
    return start(world, django_capture_on_commit_callbacks)


def read_csv(response) -> list[list[str]]:
    assert response.status_code == 200 and response.streaming
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text, newline="")))


# ---------------------------------------------------------------------------------------------
# The violations CSV

def test_the_violations_csv_has_a_row_per_violation(world, run):
    client = client_for(world.author)
    report_page = client.get(f"/w/acme/audits/{run.id}/").content.decode()
    assert f'href="/w/acme/audits/{run.id}/violations.csv"' in report_page
    response = client.get(f"/w/acme/audits/{run.id}/violations.csv")
    assert response["Content-Type"].startswith("text/csv")
    assert (response["Content-Disposition"]
            == f'attachment; filename="audit-{run.id}-violations.csv"')
    table = read_csv(response)
    assert table[0] == ["session_id", "session", "rule", "rule_version", "rule_version_id",
                        "counting", "trigger_step", "detected_step", "at_end", "witness_steps",
                        "explanation"]
    rows = table[1:]
    assert len(rows) == ViolationRecord.objects.filter(result__run=run).count() == 4
    by_key = {(row[1], row[2]): row for row in rows}
    # a: the request at step 2 is never answered; the session never logs out.
    respond = by_key[("a", "respond")]
    assert respond[3:9] == ["2", str(world.respond.id), "per_instance", "2", "3", "true"]
    assert respond[9] == "2"  # the witness recorded step 2 (F answer owed from there)
    assert respond[10].startswith("Step 2: the step was labelled request")
    assert "ended at step 3" in respond[10]
    logs_out = by_key[("a", "logs_out")]
    assert logs_out[3:9] == ["1", str(world.logs_out.id), "after_violation", "0", "3", "true"]
    assert "logout" in logs_out[10] and "ended at step 3" in logs_out[10]
    # b: a delete at step 0, found at once.
    no_delete = by_key[("b", "no_delete")]
    assert no_delete[3:10] == ["1", str(world.no_delete.id), "per_instance", "0", "0", "false",
                               "0"]
    assert no_delete[10] == "Step 0: the step was labelled delete, which the rule never allows."
    # The session id that is a formula reaches the spreadsheet as text.
    injected = [row for row in rows if "HYPERLINK" in row[1]]
    assert [row[1] for row in injected] == ["' =HYPERLINK(\"http://evil.example\",\"x\")"]
    # Ordered by session, then rule.
    assert [(row[1], row[2]) for row in rows][:2] == [("a", "logs_out"), ("a", "respond")]
    # The API answers the same bytes.
    api = client.get(f"/api/w/acme/audits/{run.id}/violations.csv")
    assert api.status_code == 200 and api["Content-Type"].startswith("text/csv")
    assert b"".join(api.streaming_content) == b"".join(
        client.get(f"/w/acme/audits/{run.id}/violations.csv").streaming_content)


def test_outsiders_get_404_for_the_violations_csv(world, run):
    outsider = client_for(world.outsider)
    assert outsider.get(f"/w/acme/audits/{run.id}/violations.csv").status_code == 404
    assert outsider.get(f"/api/w/acme/audits/{run.id}/violations.csv").status_code == 404
    assert outsider.get(f"/w/other-acme/audits/{run.id}/violations.csv").status_code == 404


# ---------------------------------------------------------------------------------------------
# Version numbers in JSON

def test_json_answers_give_the_version_number_beside_its_id(world, run):
    client = client_for(world.author)
    GroundTruth.objects.create(workspace=world.workspace, session="a", rule="respond",
                               violated=True, imported_at=timezone.now())
    number_and_id = (2, world.respond.id)
    document = client.get(f"/api/w/acme/audits/{run.id}/report.json").json()
    respond = next(r for r in document["rules"] if r["rule"] == "respond")
    assert (respond["rule_version"], respond["rule_version_id"]) == number_and_id
    exported = b"".join(client.get(f"/w/acme/audits/{run.id}/report.json").streaming_content)
    truth = json.loads(exported)["ground_truth"]
    assert [(t["rule"], t["rule_version"], t["rule_version_id"]) for t in truth] == [
        ("respond", *number_and_id)]
    results = client.get(f"/api/w/acme/audits/{run.id}/results?rule=respond").json()["items"]
    assert {(r["rule_version"], r["rule_version_id"]) for r in results} == {number_and_id}
    session_a = next(r["session_id"] for r in results if r["session"] == "a")
    lanes = client.get(f"/api/w/acme/audits/{run.id}/sessions/{session_a}").json()["rules"]
    lane = next(lane for lane in lanes if lane["rule"] == "respond")
    assert (lane["rule_version"], lane["rule_version_id"]) == number_and_id
    audit = client.get(f"/api/w/acme/audits/{run.id}").json()
    assert {(v["rule"], v["number"], v["id"]) for v in audit["rule_versions"]} >= {
        ("respond", *number_and_id)}
    out = io.StringIO()
    call_command("labeling_quality", str(run.id), "--format", "json", stdout=out)
    quality = json.loads(out.getvalue())["rules"]
    assert [(q["rule_version"], q["rule_version_id"]) for q in quality] == [number_and_id]


# ---------------------------------------------------------------------------------------------
# The evidence report

def test_the_evidence_report_gives_each_logs_sha256(world, run,
                                                    django_capture_on_commit_callbacks):
    page = client_for(world.author).get(f"/w/acme/audits/{run.id}/evidence").content.decode()
    logs = table_after(page, "logs-heading")
    assert logs[0] == ["File", "Upload", "Uploaded (UTC)", "By", "Size (bytes)", "SHA-256"]
    assert {(row[0], row[-1]) for row in logs[1:]} == {
        ("first.jsonl", hashlib.sha256(b"first file").hexdigest()),
        ("second.jsonl", hashlib.sha256(b"second file").hexdigest())}
    # A run over one upload covers that upload only.
    only_second = start(world, django_capture_on_commit_callbacks, upload=world.second)
    page = client_for(world.author).get(
        f"/w/acme/audits/{only_second.id}/evidence").content.decode()
    logs = table_after(page, "logs-heading")
    assert [(row[0], row[-1]) for row in logs[1:]] == [
        ("second.jsonl", hashlib.sha256(b"second file").hexdigest())]
    assert hashlib.sha256(b"first file").hexdigest() not in page


def test_the_evidence_report_lists_only_the_labelers_the_rules_read(world, run):
    assert {d["atom"] for d in run.labelers} == {"answer", "refund_talk"}  # both were enabled
    page = client_for(world.author).get(f"/w/acme/audits/{run.id}/evidence").content.decode()
    labelers = table_after(page, "labelers-heading")
    assert [row[0] for row in labelers[1:]] == ["answer"]
    assert "refund_talk" not in page
    # Each violation says in a sentence what happened.
    assert "Step 0: the step was labelled delete, which the rule never allows." in page
    witness = Tables(page[page.index("respond (version 2) in session a"):]).tables[0]
    assert witness[1][0] == "2"
