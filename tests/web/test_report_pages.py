"""Audit pages through real requests: starting a run, its progress, the rules x sessions matrix
and totals against the stored results, precision/recall/F1 against hand-computed figures, the CSV
and JSON exports, the printable evidence report, ground-truth uploads with bad lines, and 404 for
everyone outside the workspace."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Count, Q, Sum
from django.test import Client
from django.utils import timezone
from django.utils.text import capfirst

from studio.audits.models import AuditRun, GroundTruth, LabelCorrection, SessionResult
from studio.audits.verdicts import session_verdict_q
from studio.monitor.explain import residual_reading
from studio.rules import services as rules
from studio.traces.models import Event
from studio.workspaces.models import AuditLogEntry
from tests.audits.helpers import add_sessions

pytestmark = pytest.mark.django_db

SESSIONS = {
    "a": [{"labels": ["request"], "input": "customer asks", "output": "looking"},
          {"labels": ["answer"], "output": "here you go"},
          {"labels": ["request"], "input": "one more thing?", "output": {"tool": "search"}},
          {"labels": []}],
    "b": [{"labels": ["delete"], "input": "clean up", "output": {"tool": "rm", "args": {"f": 1}}},
          {"labels": ["logout"]}],
    "=cmd|' /C calc'!A0": [{"labels": ["logout"]}],
}


class Tables(HTMLParser):
    """Every table of a page as rows of cell texts (whitespace collapsed)."""

    def __init__(self, html: str):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_after(html: str, heading_id: str) -> list[list[str]]:
    """The first table after the element with ``id=heading_id``."""
    return Tables(html[html.index(f'id="{heading_id}"'):]).tables[0]


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def team(team):
    for name, formula, english in [
            ("respond", "G(request -> F answer)", "Every request is answered."),
            ("no_delete", "G !delete", "Never delete anything."),
            ("logs_out", "F logout", "The session ends with a logout.")]:
        rule = rules.create_rule(team.workspace, team.author, name, formula, english=english)
        version = rules.submit_for_review(rule.versions.get(), team.author, "warnings known")
        rules.approve(version, team.reviewer, f"checked {name} against the policy")
    add_sessions(team, SESSIONS)
    return team


@pytest.fixture
def run(team, django_capture_on_commit_callbacks) -> AuditRun:
    """A finished audit started through the page (its tasks run in-process on commit)."""
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(team.auditor).post("/w/acme/audits/", {"rule_set": "",
                                                                     "upload": ""})
    run = AuditRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/w/acme/audits/{run.id}/"
    run.refresh_from_db()
    assert run.status == "done"
    return run


def assert_no_inline_code(html: str) -> None:
    """The pages run under a CSP without 'unsafe-inline': no style attributes, no inline
    scripts, no event-handler attributes."""
    assert not re.search(r"\sstyle\s*=", html)
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert not re.search(r"\son[a-z]+\s*=", html)


# ---------------------------------------------------------------------------------------------
# Runs and the report

def test_the_list_shows_runs_and_only_auditors_get_the_form(team, run):
    page = client_for(team.auditor).get("/w/acme/audits/").content.decode()
    assert "Run an audit" in page and f"Audit {run.id}" in page
    runs = table_after(page, "runs-heading")
    # a: respond, logs_out; b: no_delete: 3 violations in 2 sessions
    assert runs[1][5:] == ["Done", "100.0% 3 of 3 sessions", "3 in 2 sessions"]
    assert_no_inline_code(page)
    author_page = client_for(team.author).get("/w/acme/audits/").content.decode()
    assert "Run an audit" not in author_page and "Only members with the auditor role" in (
        author_page)
    assert client_for(team.author).post("/w/acme/audits/").status_code == 403
    assert client_for(team.author).post("/w/acme/audits/start").status_code == 403
    assert AuditRun.objects.count() == 1


def test_starting_errors_are_explained(team):
    auditor = client_for(team.auditor)
    from studio.rules.models import RuleSet

    empty = RuleSet.objects.create(workspace=team.workspace, name="empty set")
    response = auditor.post("/w/acme/audits/start", {"rule_set": str(empty.id)})
    assert response.status_code == 400
    assert "rule set &#x27;empty set&#x27; has no approved rule versions" in (
        response.content.decode())
    response = auditor.post("/w/acme/audits/start", {"rule_set": "999999"})
    assert response.status_code == 400 and "does not exist" in response.content.decode()
    response = auditor.post("/w/acme/audits/start", {"rule_set": "x; drop"})
    assert response.status_code == 400 and "choose a rule set" in response.content.decode()
    assert not AuditRun.objects.exists()


def test_the_matrix_and_totals_equal_the_stored_results(team, run):
    page = client_for(team.author).get(f"/w/acme/audits/{run.id}/").content.decode()
    assert_no_inline_code(page)
    totals = table_after(page, "totals-heading")
    stored = {row["rule_version__rule__name"]: row for row in SessionResult.objects.filter(
        run=run).values("rule_version__rule__name").annotate(
            sessions=Count("id"), violated=Count("id", filter=session_verdict_q("violated")),
            satisfied=Count("id", filter=session_verdict_q("satisfied")),
            pending=Count("id", filter=session_verdict_q("pending")),
            final_violated=Count("id", filter=Q(final="violated")),
            violations=Sum("violation_count"))}
    body = totals[2:]
    assert [row[0].split()[0] for row in body] == ["logs_out", "no_delete", "respond"]
    for row in body:
        expected = stored[row[0].split()[0]]
        assert row[1:] == [str(expected[k]) for k in ("sessions", "violated", "satisfied",
                                                      "pending", "final_violated",
                                                      "violations")]
    matrix = table_after(page, "matrix-heading")
    assert matrix[0] == ["Session", "Steps", "logs_out v1", "no_delete v1", "respond v1"]
    cells = {row[0]: row[1:] for row in matrix[1:]}
    assert set(cells) == set(SESSIONS)
    # The rule's one verdict in words, never "complied" beside a violation.
    assert cells["a"] == ["4", "✗ violated 1 violation", "✓ complied no violations",
                          "✗ violated 1 violation"]
    assert cells["b"][2] == "✗ violated 1 violation"
    # Each cell equals its stored result.
    for result in SessionResult.objects.filter(run=run).select_related("session",
                                                                       "rule_version__rule"):
        column = ["logs_out", "no_delete", "respond"].index(result.rule_version.rule.name)
        cell = cells[result.session.external_id][column + 1]
        words = {"violated": "✗ violated", "satisfied": "✓ complied"}[result.session_verdict]
        assert cell.startswith(words)
        assert (f"{result.violation_count} violation" in cell if result.violation_count
                else "no violations" in cell)
    # Only the sessions with a violation, on request.
    only = client_for(team.author).get(f"/w/acme/audits/{run.id}/?show=violated")
    rows = table_after(only.content.decode(), "matrix-heading")[1:]
    assert {row[0] for row in rows} == {"a", "b"}


def test_the_matrix_is_paged(team, run, monkeypatch):
    from studio.audits import views

    monkeypatch.setattr(views, "SESSIONS_PER_PAGE", 2)
    client = client_for(team.auditor)
    first = table_after(client.get(f"/w/acme/audits/{run.id}/").content.decode(),
                        "matrix-heading")[1:]
    second_page = client.get(f"/w/acme/audits/{run.id}/?page=2").content.decode()
    second = table_after(second_page, "matrix-heading")[1:]
    assert len(first) == 2 and len(second) == 1
    assert {r[0] for r in first} | {r[0] for r in second} == set(SESSIONS)
    assert "Page 2 of 2 (3 in all)" in second_page
    assert client.get(f"/w/acme/audits/{run.id}/?page=junk").status_code == 200


def test_precision_recall_and_f1_equal_a_hand_computed_example(team, run):
    # respond: a found violated, truly violated (TP); b found satisfied but truly violated
    # (FN); the third satisfied and truly satisfied (TN): precision 1/1, recall 1/2, F1 2/3.
    # no_delete: b found violated but labelled not violated (FP), a not violated (TN):
    # precision 0/1, recall undefined, F1 0.  logs_out has no labels.  A label of a session
    # outside the run is counted apart.
    for session, rule, violated in [("a", "respond", True), ("b", "respond", True),
                                    ("=cmd|' /C calc'!A0", "respond", False),
                                    ("b", "no_delete", False), ("a", "no_delete", False),
                                    ("not-audited", "respond", True)]:
        GroundTruth.objects.create(workspace=team.workspace, session=session, rule=rule,
                                   violated=violated, imported_at=run.created_at)
    page = client_for(team.auditor).get(f"/w/acme/audits/{run.id}/").content.decode()
    agreement = table_after(page, "agreement-heading")
    assert agreement[1:] == [
        ["no_delete", "2 of 3", "0", "1", "0", "1", "0.00", "—", "0.00", "0"],
        ["respond", "3 of 3", "1", "0", "1", "1", "1.00", "0.50", "0.67", "1"],
        # Summed counts: precision 1/2, recall 1/2, F1 2/4.  Means over rules: precision
        # (0 + 1)/2, recall 0.5 (respond only: no_delete's is undefined), F1 (0 + 2/3)/2.
        ["Overall (micro-average)", "5 of 6", "1", "1", "1", "2", "0.50", "0.50", "0.50", "1"],
        ["Mean over rules (macro-average)", "", "", "", "", "", "0.50", "0.50", "0.33", ""],
    ]
    matrix = {row[0]: row[1:] for row in table_after(page, "matrix-heading")[1:]}
    assert matrix["b"][2] == "✗ violated 1 violation label: complied (disagrees)"
    assert matrix["a"][3].endswith("label: violated")
    exported = json.loads(b"".join(client_for(team.auditor).get(
        f"/w/acme/audits/{run.id}/report.json").streaming_content))
    respond = next(q for q in exported["ground_truth"] if q["rule"] == "respond")
    assert (respond["tp"], respond["fn"], respond["tn"], respond["fp"]) == (1, 1, 1, 0)
    assert respond["precision"] == 1.0 and respond["recall"] == 0.5
    assert respond["f1"] == pytest.approx(2 / 3)
    overall = exported["ground_truth_overall"]
    assert overall["micro"]["f1"] == 0.5 and overall["macro"]["f1"] == pytest.approx(1 / 3)
    assert (overall["macro"]["recall"], overall["macro"]["recall_rules"]) == (0.5, 1)


def test_csv_and_json_exports(team, run):
    client = client_for(team.author)
    response = client.get(f"/w/acme/audits/{run.id}/report.csv")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="audit-{run.id}.csv"'
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    # Per rule: its one verdict in the session, the LTLf verdict at the end, the violations.
    assert table[0] == ["session_id", "session", "steps",
                        "logs_out verdict", "logs_out final", "logs_out violations",
                        "no_delete verdict", "no_delete final", "no_delete violations",
                        "respond verdict", "respond final", "respond violations"]
    rows = {row[1]: row for row in table[1:]}
    assert rows["a"][2:] == ["4", "violated", "violated", "1", "complied", "complied", "0",
                             "violated", "violated", "1"]
    # The formula-injection guard: the session id cannot run in a spreadsheet.
    assert "'=cmd|' /C calc'!A0" in rows and "=cmd|' /C calc'!A0" not in rows
    # The same bytes as the API's export.
    api = client.get(f"/api/w/acme/audits/{run.id}/report.csv")
    assert b"".join(api.streaming_content) == b"".join(
        client.get(f"/w/acme/audits/{run.id}/report.csv").streaming_content)

    response = client.get(f"/w/acme/audits/{run.id}/report.json")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Disposition"] == f'attachment; filename="audit-{run.id}.json"'
    document = json.loads(b"".join(response.streaming_content))
    api_document = client.get(f"/api/w/acme/audits/{run.id}/report.json").json()
    for key in ("audit", "status", "sessions_total", "sessions_done", "rules", "sessions"):
        assert document[key] == api_document[key], key
    assert document["ground_truth"] == []
    sessions = {s["session"]: s for s in document["sessions"]}
    assert sessions["b"]["final"] == ["complied", "violated", "complied"]
    assert sessions["b"]["final_was"] == ["satisfied", "violated", "satisfied"]
    assert sessions["b"]["violations"] == [0, 1, 0]


def test_the_evidence_report_names_the_approver_and_shows_witnesses(team, run):
    response = client_for(team.author).get(f"/w/acme/audits/{run.id}/evidence")
    page = response.content.decode()
    assert response.status_code == 200
    assert_no_inline_code(page)
    assert f"Evidence report: audit {run.id}" in page
    approval = AuditLogEntry.objects.get(action="rule_version.approved",
                                         details__rule="respond")
    assert (f"reviewer-acme, {approval.at:%Y-%m-%d %H:%M:%S} UTC, with the comment "
            "“checked respond against the policy”") in page
    assert "Every request is answered." in page and "G(request -&gt; F answer)" in page
    assert "Written by</dt><dd>author-acme" in page
    assert "Started by</dt><dd>auditor-acme" in page
    assert "Reads</dt><dd><code>answer</code>, <code>request</code></dd>" in page
    # The witnesses: the respond violation of session a, triggered at step 2 and left
    # unanswered at the end, shows step 2's input and output, labels and what the rule still
    # required, in the session page's words (residual_reading), never the residual formula.
    assert "Triggered at step 2, detected at step 3: the session ended with the obligation " \
           "unmet" in page
    witness = Tables(page[page.index("Violation 2: respond"):]).tables[0]
    assert witness[1] == ["2", "one more thing?", '{"tool": "search"}',
                          "request, tool_call:search",
                          capfirst(residual_reading("F answer", since=2))]
    no_delete = Tables(page[page.index("no_delete (version 1) in session b"):]).tables[0]
    step, given, taken, labels, reading = no_delete[1]
    assert (step, given, labels) == ("0", "clean up", "delete, tool_call:rm")
    assert reading == capfirst(residual_reading("false", since=0))
    assert "Can no longer be met" in reading
    witnesses = page[page.index("Violations and their witnesses"):]
    assert "F answer" not in witnesses and ">false<" not in witnesses
    assert json.loads(taken) == {"tool": "rm", "args": {"f": 1}}
    assert "Every violation found (3) is listed." in page
    assert "css/reports.css" in page  # which holds the print layout


def test_the_evidence_report_says_when_it_lists_only_some_violations(team, run, monkeypatch):
    from studio.audits import report

    monkeypatch.setattr(report, "EVIDENCE_VIOLATIONS", 2)
    page = client_for(team.auditor).get(f"/w/acme/audits/{run.id}/evidence").content.decode()
    assert "This report lists the first 2 of 3 violations" in page
    assert "Violation 3:" not in page


def test_a_running_audit_shows_its_progress_and_polls(team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):  # its tasks never ran
        client_for(team.auditor).post("/w/acme/audits/")
    run = AuditRun.objects.get()
    client = client_for(team.author)
    page = client.get(f"/w/acme/audits/{run.id}/").content.decode()
    assert "Waiting for a worker" in page and "Sessions: 0 of 3" in page
    assert 'hx-trigger="every 2s"' in page and f'href="/w/acme/audits/{run.id}/">Refresh' in page
    assert "matrix-heading" not in page
    assert_no_inline_code(page)
    part = client.get(f"/w/acme/audits/{run.id}/?part=progress", HTTP_HX_REQUEST="true")
    assert part.status_code == 204 and "HX-Refresh" not in part
    AuditRun.objects.filter(pk=run.pk).update(status="done")
    done = client.get(f"/w/acme/audits/{run.id}/?part=progress", HTTP_HX_REQUEST="true")
    assert done.status_code == 204 and done["HX-Refresh"] == "true"


def test_a_failed_audit_says_why(team, run):
    AuditRun.objects.filter(pk=run.pk).update(status="failed", error="batch 0 failed: boom")
    page = client_for(team.auditor).get(f"/w/acme/audits/{run.id}/").content.decode()
    assert "This audit failed: batch 0 failed: boom" in page


# ---------------------------------------------------------------------------------------------
# Ground truth

def upload(client, name: str, content: bytes, format: str = "auto"):
    return client.post("/w/acme/ground-truth/", {
        "file": SimpleUploadedFile(name, content), "format": format})


def test_a_bad_line_is_reported_with_its_number_and_the_rest_is_stored(team):
    client = client_for(team.auditor)
    content = (b'{"session": "a", "rule": "respond", "violated": true}\n'
               b'{"session": "b", "rule": "respond", "violated": "maybe"}\n'
               b'\n'
               b'{"session": "b", "rule": "no_delete", "violated": true, "note": "rm -rf"}\n'
               b'not json\n'
               b'{"session": "a", "rule": "respond", "violated": true}\n'
               b'{"session": "a", "rule": "respond", "violated": false}\n'
               b'{"rule": "respond", "violated": false}\n'
               b'{"session": "c", "rule": "unknown_rule", "violated": false}\n')
    response = upload(client, "labels.jsonl", content)
    page = response.content.decode()
    assert response.status_code == 200
    assert_no_inline_code(page)
    errors = Tables(page[page.index("could not be read"):]).tables[0][1:]
    assert errors == [
        ["2", 'violated must be true or false, not "maybe"'],
        ["5", "not valid JSON (Expecting value at column 1)"],
        ["7", ("session 'a', rule 'respond' was labelled differently on line 1; that line is "
               "kept")],
        ["8", "session is missing or empty"],
    ]
    assert "labels.jsonl: 3 labels read" in page
    assert "1 line repeated an earlier line of the file and changed nothing (line 6)" in page
    assert "No rule of this workspace is named unknown_rule" in page
    stored = {(g.session, g.rule): g.violated for g in GroundTruth.objects.all()}
    assert stored == {("a", "respond"): True, ("b", "no_delete"): True,
                      ("c", "unknown_rule"): False}
    assert GroundTruth.objects.get(session="b").note == "rm -rf"
    assert AuditLogEntry.objects.filter(action="ground_truth.imported").count() == 1

    # A CSV file corrects a label; the list shows it.
    csv_file = b"session,rule,violated\na,respond,false\nb,no_delete,yes\nx,respond,perhaps\n"
    response = upload(client, "fix.csv", csv_file)
    page = response.content.decode()
    assert "0 new, 1 changed, 1 already stored as given" in page
    assert Tables(page[page.index("could not be read"):]).tables[0][1] == [
        "4", "violated must be true or false, not 'perhaps'"]
    assert GroundTruth.objects.get(session="a").violated is False
    listed = client.get("/w/acme/ground-truth/?rule=respond").content.decode()
    rows = table_after(listed, "labels-heading")
    assert rows[1] == ["no_delete", "1", "1", "0"]
    labels = Tables(listed[listed.index("Showing the labels of rule respond"):]).tables[0]
    assert labels[1][:3] == ["a", "respond", "not violated"]
    refused = client.get("/w/acme/ground-truth/?rule=a%00b")  # at the boundary, naming it
    assert refused.status_code == 422
    assert "<code>rule</code> must not contain NUL" in refused.content.decode()


def test_ground_truth_uploads_that_cannot_be_used_are_explained(team):
    client = client_for(team.auditor)
    response = client.post("/w/acme/ground-truth/", {})
    assert response.status_code == 400 and "choose a JSONL or CSV file" in (
        response.content.decode())
    response = upload(client, "empty.jsonl", b"")
    assert response.status_code == 400 and "empty.jsonl is empty" in response.content.decode()
    response = upload(client, "labels.csv", b"session,verdict\na,yes\n")
    assert "missing: rule, violated" in response.content.decode()
    response = upload(client, "labels.txt", b'{"session": "a"}', format="xml")
    assert response.status_code == 400 and "unknown format" in response.content.decode()
    response = upload(client, "latin1.csv", b"session,rule,violated\n\xe9t\xe9,r,true\n")
    assert "not UTF-8 text" in response.content.decode()
    assert not GroundTruth.objects.exists()
    # Only auditors load labels; everyone in the workspace reads them.
    author = client_for(team.author)
    assert upload(author, "labels.jsonl", b'{"session": "a", "rule": "r", "violated": true}'
                  ).status_code == 403
    assert "Only members with the auditor role" in author.get(
        "/w/acme/ground-truth/").content.decode()


# ---------------------------------------------------------------------------------------------
# Isolation

def test_outsiders_and_other_workspaces_get_404(team, run):
    outsider = client_for(team.outsider)
    for path in ["/w/acme/audits/", f"/w/acme/audits/{run.id}/",
                 f"/w/acme/audits/{run.id}/report.csv", f"/w/acme/audits/{run.id}/report.json",
                 f"/w/acme/audits/{run.id}/evidence", "/w/acme/ground-truth/"]:
        assert outsider.get(path).status_code == 404, path
    assert outsider.post("/w/acme/audits/").status_code == 404
    assert outsider.post("/w/acme/audits/start").status_code == 404
    assert upload(outsider, "x.jsonl", b'{"session": "a", "rule": "r", "violated": true}'
                  ).status_code == 404
    # The outsider's own workspace does not reach acme's run either.
    for suffix in ["", "report.csv", "report.json", "evidence"]:
        assert outsider.get(f"/w/other-acme/audits/{run.id}/{suffix}").status_code == 404
    assert outsider.get("/w/other-acme/audits/").status_code == 200
    assert Client().get(f"/w/acme/audits/{run.id}/").status_code == 302  # sign in first
    assert client_for(team.auditor).delete(f"/w/acme/audits/{run.id}/").status_code == 405
    assert not GroundTruth.objects.exists()


def test_a_rule_that_never_applied_is_not_a_clean_complied(team,
                                                            django_capture_on_commit_callbacks):
    """``G(refund -> F approve)``: no session labels a refund, so the rule complied everywhere
    only because it never applied; the page says so beside the count and report.json carries
    ``never_triggered``.  ``respond``'s request happens in session a, ``no_delete`` is violated,
    ``logs_out`` has no trigger and the ban ``G !refund`` applies at every step: none of them is
    marked."""
    for name, formula in [("refunds_approved", "G(refund -> F approve)"),
                          ("no_refund", "G !refund")]:  # a ban kept is a clean complied
        rule = rules.create_rule(team.workspace, team.author, name, formula, english=name)
        version = rules.submit_for_review(rule.versions.get(), team.author, "warnings known")
        rules.approve(version, team.reviewer, f"checked {name} against the policy")
    with django_capture_on_commit_callbacks(execute=True):
        client_for(team.auditor).post("/w/acme/audits/", {"rule_set": "", "upload": ""})
    run = AuditRun.objects.get()
    client = client_for(team.auditor)
    page = client.get(f"/w/acme/audits/{run.id}/").content.decode()
    totals = {row[0].split()[0]: row for row in table_after(page, "totals-heading")[2:]}
    assert totals["refunds_approved"][3] == "3 not applicable: never triggered"
    for name in ("respond", "no_delete", "logs_out", "no_refund"):
        assert "never triggered" not in " ".join(totals[name]), name
    document = json.loads(b"".join(
        client.get(f"/w/acme/audits/{run.id}/report.json").streaming_content))
    api_document = client.get(f"/api/w/acme/audits/{run.id}/report.json").json()
    for found in (document, api_document):
        assert {r["rule"]: r["never_triggered"] for r in found["rules"]} == {
            "logs_out": False, "no_delete": False, "no_refund": False,
            "refunds_approved": True, "respond": False}
    # A person marking a refund at a step is a trigger: the next audit, which labels with the
    # correction, finds the rule applied.  The first run's report still describes the labels
    # its verdicts were computed from.
    LabelCorrection.objects.create(workspace=team.workspace, atom="refund", value=True,
                                   event=Event.objects.filter(session__external_id="b").first(),
                                   corrected_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        client_for(team.auditor).post("/w/acme/audits/", {"rule_set": "", "upload": ""})
    again = AuditRun.objects.exclude(id=run.id).get()
    page = client.get(f"/w/acme/audits/{again.id}/").content.decode()
    assert "never triggered" not in " ".join(
        " ".join(row) for row in table_after(page, "totals-heading"))
    page = client.get(f"/w/acme/audits/{run.id}/").content.decode()
    assert "never triggered" in " ".join(
        " ".join(row) for row in table_after(page, "totals-heading"))


def approve_rules(team, named: list[tuple[str, str]]) -> None:
    for name, formula in named:
        rule = rules.create_rule(team.workspace, team.author, name, formula, english=name)
        version = rules.submit_for_review(rule.versions.get(), team.author, "warnings known")
        rules.approve(version, team.reviewer, f"checked {name} against the policy")


def marks(client, run) -> dict[str, str]:
    """Per rule, what the totals table says beside its complied count ("" for nothing)."""
    page = client.get(f"/w/acme/audits/{run.id}/").content.decode()
    rows = {row[0].split()[0]: row[3] for row in table_after(page, "totals-heading")[2:]}
    return {name: cell.partition(" ")[2] for name, cell in rows.items()}


# Rules whose condition the audit computes (a labeler, a built-in atom, a comparison), each
# with whether it held on some step of SESSIONS, worked out by hand: the labeler matches
# "refund" / "asks" in an event's text, session b calls the tool rm with args.f = 1.
COMPUTED = [
    ("refund_said_approved", "G(refund_said -> F approve)", False),
    ("asked_answered", "G(asked -> F answer)", True),
    ("refund_tool_approved", "G(tool_call:refund -> F approve)", False),
    ("rm_then_logout", "G(tool_call:rm -> F logout)", True),
    ("big_f_approved", "G(output.args.f > 5 -> F approve)", False),
    ("any_f_then_logout", "G(output.args.f >= 1 -> F logout)", True),
    ("asked_and_rm", "G(asked & tool_call:rm -> F approve)", False),  # never together
    ("no_unapproved_refund", "G !(refund_said & !O approve)", False),  # a ban with exception
]


def test_a_condition_computed_at_audit_time_is_seen(team, django_capture_on_commit_callbacks):
    """A rule whose condition a labeler computes, a built-in atom or a comparison: the audit
    records whether it held, so one that never held is "not applicable: never triggered" and
    one that held is a plain complied (before, both were a plain complied)."""
    rules.create_labeler(team.workspace, team.author, "refund_said", "regex",
                         {"path": "output", "pattern": "refund"})
    rules.create_labeler(team.workspace, team.author, "asked", "regex",
                         {"path": "input", "pattern": "asks"})
    approve_rules(team, [(name, formula) for name, formula, _ in COMPUTED])
    with django_capture_on_commit_callbacks(execute=True):
        client_for(team.auditor).post("/w/acme/audits/", {"rule_set": "", "upload": ""})
    run = AuditRun.objects.get()
    client = client_for(team.auditor)
    found = marks(client, run)
    for name, _, held in COMPUTED:
        assert found[name] == ("" if held else "not applicable: never triggered"), name
    assert found["respond"] == found["logs_out"] == ""
    document = client.get(f"/api/w/acme/audits/{run.id}/report.json").json()
    by_rule = {r["rule"]: r for r in document["rules"]}
    for name, _, held in COMPUTED:
        assert by_rule[name]["complied"] == by_rule[name]["sessions"] == 3, name
        assert (by_rule[name]["never_triggered"], by_rule[name]["trigger_unknown"]) == (
            not held, False), name
    # What each result recorded, session by session: the labeler's atom held in session a.
    recorded = dict(SessionResult.objects.filter(
        run=run, rule_version__rule__name="asked_answered").values_list(
            "session__external_id", "triggered"))
    assert recorded == {"a": True, "b": False, "=cmd|' /C calc'!A0": False}
    assert set(SessionResult.objects.filter(
        run=run, rule_version__rule__name="no_delete").values_list("triggered", flat=True)
               ) == {None}  # a ban applies at every step: no condition


def test_results_stored_before_conditions_were_recorded_say_they_could_not_tell(
        team, django_capture_on_commit_callbacks):
    """An audit whose results did not record whether the condition held (stored by an
    earlier version): a condition a labeler computes cannot be told from what is stored, so
    the report says "could not tell whether it applied", never a plain complied; a raw atom no
    event carries still reads "never triggered"."""
    rules.create_labeler(team.workspace, team.author, "refund_said", "regex",
                         {"path": "output", "pattern": "refund"})
    approve_rules(team, [("refund_said_approved", "G(refund_said -> F approve)"),
                         ("refunds_approved", "G(refund -> F approve)"),
                         ("big_f_approved", "G(output.args.f > 5 -> F approve)")])
    with django_capture_on_commit_callbacks(execute=True):
        client_for(team.auditor).post("/w/acme/audits/", {"rule_set": "", "upload": ""})
    run = AuditRun.objects.get()
    SessionResult.objects.filter(run=run).update(triggered=None)
    client = client_for(team.auditor)
    found = marks(client, run)
    assert found["refund_said_approved"] == "could not tell whether it applied"
    assert found["big_f_approved"] == "could not tell whether it applied"
    assert found["refunds_approved"] == "not applicable: never triggered"
    assert found["respond"] == ""  # its request is labelled on a stored event
    matrix = client.get(f"/w/acme/audits/{run.id}/").content.decode()
    header = re.search(r'<th scope="col">refund_said_approved (.*?)</th>', matrix).group(1)
    assert "could not tell whether it applied" in header  # the matrix column says it too
    document = client.get(f"/api/w/acme/audits/{run.id}/report.json").json()
    unknown = {r["rule"]: (r["never_triggered"], r["trigger_unknown"])
               for r in document["rules"]}
    assert unknown["refund_said_approved"] == unknown["big_f_approved"] == (False, True)
    assert unknown["refunds_approved"] == (True, False)
    assert unknown["respond"] == unknown["no_delete"] == (False, False)
