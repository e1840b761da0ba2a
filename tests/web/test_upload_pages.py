"""Log upload pages through real requests: the form, parsing progress, line errors and their CSV,
duplicates and every refusal a person can cause, starting an audit and watching its progress.

Parsing and audit batches are enqueued on commit and run in-process (no broker in tests), so a
request that should run them is made inside ``django_capture_on_commit_callbacks(execute=True)``.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.loader import render_to_string
from django.test import Client
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape

from studio.audits.models import AuditRun, SessionResult
from studio.audits.services import start_audit
from studio.exports import spreadsheet_safe
from studio.rules import services as rules
from studio.rules.models import Rule
from studio.traces import loading
from studio.traces.formats.examples import GUIDES
from studio.traces.models import Upload, UploadError, UploadStatus
from studio.workspaces.access import actor
from studio.workspaces.models import Role
from studio.workspaces.services import add_member, create_user, create_workspace

# Four lines, the second not JSON: three events in two sessions, one line error.
LOG = (b'{"session": "s1", "labels": ["pay"], "output": "paid"}\n'
       b"{oops\n"
       b'{"session": "s1", "labels": ["ship"]}\n'
       b'{"session": "s2", "labels": ["ship"]}\n')
BAD_JSON = "not valid JSON (Expecting property name enclosed in double quotes at column 2)"


@pytest.fixture
def team(db, tmp_path, settings):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    auditor = create_user("aud")  # auditor and author: uploads, audits and writes rules
    reviewer = create_user("rev")  # reviewer only: no uploads, no audits
    outsider = create_user("eve")
    workspace = create_workspace("Payments", owner=auditor, roles=(Role.AUDITOR, Role.AUTHOR))
    add_member(workspace, reviewer, Role.REVIEWER)
    elsewhere = create_workspace("Elsewhere", owner=outsider)

    def client_for(user, **options):
        client = Client(**options)
        client.force_login(user)
        return client

    return {"ws": workspace, "elsewhere": elsewhere, "users": (auditor, reviewer, outsider),
            "auditor": client_for(auditor), "reviewer": client_for(reviewer),
            "outsider": client_for(outsider), "client_for": client_for}


@pytest.fixture
def post_upload(team, django_capture_on_commit_callbacks):
    """POST the upload form as the auditor; parsing runs unless ``parse=False``."""

    def post(content: bytes, name: str = "log.jsonl", format: str = "jsonl", parse=True,
             client=None, **fields):
        body = {"file": SimpleUploadedFile(name, content), "format": format, **fields}
        with django_capture_on_commit_callbacks(execute=parse):
            return (client or team["auditor"]).post("/w/payments/uploads/", body)

    return post


def approve_rule(team, name: str = "pay_before_ship", formula: str = "!ship W pay") -> Rule:
    auditor, reviewer, _ = team["users"]
    rule = rules.create_rule(team["ws"], auditor, name, formula)
    version = rule.versions.get()
    rules.submit_for_review(version, auditor, "warnings known")
    rules.approve(version, reviewer)
    return rule


def text(response) -> str:
    return response.content.decode()


# ---------------------------------------------------------------------------------------------
# Uploading and parsing

def test_an_upload_through_the_form_is_parsed_listed_and_reports_its_bad_line(team, post_upload):
    form = team["auditor"].get("/w/payments/uploads/")
    page = text(form)
    assert form.status_code == 200
    assert 'enctype="multipart/form-data"' in page and "data-drop-zone" in page
    assert '<option value="jsonl" selected>' in page
    assert '<label for="id_file">' in page and '<label for="id_format">' in page
    assert "No logs uploaded yet." in page

    response = post_upload(LOG)
    upload = Upload.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/w/payments/uploads/{upload.pk}/"
    assert (upload.status, upload.lines_total, upload.lines_ok, upload.lines_bad,
            upload.events_stored) == ("parsed", 4, 3, 1, 3)
    assert upload.uploaded_by == team["users"][0]

    detail = team["auditor"].get(response["Location"])
    page = text(detail)
    assert "log.jsonl uploaded as upload #" in page  # the success message
    assert "3 of 4 lines imported, 1 not imported; 3 events stored." in page
    assert f"<td>2</td><td>{BAD_JSON}</td>" in page
    assert f'href="/w/payments/uploads/{upload.pk}/errors.csv"' in page
    assert "Download all 1 as CSV" in page
    assert 'hx-trigger="every 1s"' not in page  # parsed: nothing to poll
    assert "style=" not in page and "<script>" not in page  # the CSP allows neither
    assert "'unsafe-inline'" not in detail["Content-Security-Policy"]

    listing = text(team["auditor"].get("/w/payments/uploads/"))
    row = re.search(r"<tr>\s*<td><a href=\"/w/payments/uploads/\d+/\">log.jsonl</a>.*?</tr>",
                    listing, re.DOTALL)
    assert row is not None
    assert 'upload-status-parsed">Parsed<' in row.group(0)
    cells = re.findall(r"<td>(.*?)</td>", row.group(0), re.DOTALL)
    assert cells[1:3] == ["jsonl", f"{len(LOG)}\xa0bytes"]
    assert cells[4] == "3" and ">1</a>" in cells[5] and cells[6] == "3" and cells[7] == "aud"


def test_the_form_shows_each_format_with_an_example_that_uploads_as_shown(team, post_upload):
    page = text(team["auditor"].get("/w/payments/uploads/"))
    names = {"jsonl": "log.jsonl", "csv": "log.csv", "openai": "chat.jsonl",
             "otlp": "traces.json", "inspect": "eval.json"}
    csv_mapping = {"csv_session": "session", "csv_step": "step", "csv_input": "input",
                   "csv_output": "output", "csv_labels": "labels"}
    for key, guide in GUIDES.items():
        shown = re.search(rf'<details id="format-{key}"><summary>(.*?)</summary>(.*?)</details>',
                          page, re.DOTALL)
        assert shown is not None, key
        assert escape(guide.example) in shown.group(2) and escape(guide.description) in (
            shown.group(2))
        # What the page shows is what an upload accepts: the example, uploaded as it stands.
        post_upload(guide.example.encode(), name=names[key], format=key,
                    **(csv_mapping if key == "csv" else {}))
        upload = Upload.objects.get(filename=names[key])
        assert (upload.status, upload.lines_bad) == ("parsed", 0), key
        assert upload.events_stored >= 1, key


def test_a_csv_upload_takes_its_column_mapping_from_the_form(team, post_upload):
    content = b"conv,turn,reply,tags\nc1,0,hello,greet\nc1,1,bye,leave;done\n"
    response = post_upload(content, name="chat.csv", format="csv", csv_session="conv",
                           csv_step="turn", csv_output="reply", csv_labels="tags")
    assert response.status_code == 302
    upload = Upload.objects.get()
    assert upload.options == {"session": "conv", "step": "turn", "output": "reply",
                              "labels": "tags"}
    assert (upload.status, upload.events_stored, upload.lines_bad) == ("parsed", 2, 0)
    assert "Every line was imported." in text(team["auditor"].get(response["Location"]))


def test_the_progress_partial_polls_while_parsing_and_stops_when_done(team, post_upload):
    post_upload(LOG, parse=False)  # the parse task is never run: the upload waits
    upload = Upload.objects.get()
    base = f"/w/payments/uploads/{upload.pk}/progress"
    page = text(team["auditor"].get(f"/w/payments/uploads/{upload.pk}/"))
    assert "Waiting for a worker to start parsing." in page
    assert f'hx-get="{base}?shown=received" hx-trigger="every 1s" hx-swap="outerHTML"' in page
    assert f'<a href="/w/payments/uploads/{upload.pk}/">Refresh</a>' in page  # in <noscript>
    assert 'aria-label="Parsing progress"' in page and 'id="upload-status" role="status"' in page
    assert "can be audited once it is parsed" in page

    Upload.objects.filter(pk=upload.pk).update(status=UploadStatus.PARSING,
                                               bytes_read=upload.size // 2, lines_total=2)
    halfway = Upload.objects.get().percent
    assert 49 < halfway < 51
    partial = text(team["auditor"].get(base, {"shown": "received"}, HTTP_HX_REQUEST="true"))
    assert f'<progress id="upload-progress-bar" max="100" value="{halfway}"' in partial
    assert f'hx-get="{base}?shown=parsing" hx-trigger="every 1s"' in partial
    # The status changed since the poller's last answer: announced out of band, once.
    assert 'id="upload-status" hx-swap-oob="innerHTML"' in partial
    assert "Parsing: 2 lines read so far." in partial
    again = text(team["auditor"].get(base, {"shown": "parsing"}, HTTP_HX_REQUEST="true"))
    assert "hx-swap-oob" not in again and "<html" not in again

    Upload.objects.filter(pk=upload.pk).update(bytes_read=0, lines_total=0)  # as it was
    loading.parse_upload(upload.pk)
    done = text(team["auditor"].get(base, {"shown": "parsing"}, HTTP_HX_REQUEST="true"))
    assert "hx-trigger" not in done  # polling stops
    assert 'value="100.0"' in done
    assert "3 of 4 lines imported" in done
    # Parsing just finished: the line errors and the audit section come in out of band.
    assert '<section id="upload-errors" aria-labelledby="errors-heading" hx-swap-oob="true">' \
        in done
    assert BAD_JSON in done
    assert '<section id="upload-audits" aria-labelledby="audits-heading" hx-swap-oob="true">' \
        in done


def test_the_errors_csv_streams_every_error_and_disarms_formulas(team, post_upload):
    post_upload(LOG)
    upload = Upload.objects.get()
    UploadError.objects.bulk_create(
        [UploadError(upload=upload, line=10, reason="=HYPERLINK(\"http://x\")", pointer="=1+1"),
         UploadError(upload=upload, line=11, reason="+cmd", pointer="/samples/2"),
         UploadError(upload=upload, line=12, reason="-2", pointer="@SUM(A1)"),
         UploadError(upload=upload, line=13, reason="@me", pointer="")]
        + [UploadError(upload=upload, line=100 + i, reason=f"bad {i}") for i in range(2100)])
    response = team["auditor"].get(f"/w/payments/uploads/{upload.pk}/errors.csv")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="upload-{upload.pk}-errors.csv"')
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert table[0] == ["line", "reason", "pointer"]
    assert table[1] == ["2", BAD_JSON, ""]
    assert table[2:6] == [["10", "'=HYPERLINK(\"http://x\")", "'=1+1"],
                          ["11", "'+cmd", "/samples/2"],
                          ["12", "'-2", "'@SUM(A1)"],
                          ["13", "'@me", ""]]
    assert len(table) == 1 + 5 + 2100 and table[-1] == ["2199", "bad 2099", ""]
    # The page shows the first 50 and says how many there are.
    page = text(team["auditor"].get(f"/w/payments/uploads/{upload.pk}/"))
    assert "The first 50 of 2105 lines that were not imported" in page
    assert "Download all 2105 as CSV" in page and "bad 44" in page and "bad 45" not in page


def test_spreadsheet_safe_quotes_only_what_a_spreadsheet_would_run():
    assert [spreadsheet_safe(v) for v in ("=1", "+1", "-1", "@x", "\tx", "a=1", "", None, 7)] \
        == ["'=1", "'+1", "'-1", "'@x", "'\tx", "a=1", "", "", 7]


# ---------------------------------------------------------------------------------------------
# What a person can get wrong

def test_the_same_file_twice_adds_nothing_and_links_to_the_first(team, post_upload):
    post_upload(LOG)
    first = Upload.objects.get()
    again = post_upload(LOG, name="renamed.jsonl")
    assert again.status_code == 302 and again["Location"] == "/w/payments/uploads/"
    assert Upload.objects.count() == 1
    page = text(team["auditor"].get(again["Location"]))
    assert (f'This file was already uploaded to this workspace as <a href="/w/payments/uploads/'
            f'{first.pk}/">upload #{first.pk} (log.jsonl)</a>') in page
    assert "nothing was added" in page
    # The same bytes as another format would be a different import: refused, with the reason.
    other = post_upload(LOG, format="openai")
    assert other.status_code == 409
    assert f"already uploaded to this workspace as upload #{first.pk}" in text(other)
    assert Upload.objects.count() == 1


def test_wrong_empty_and_oversized_files_are_refused_with_a_reason(team, post_upload, settings):
    empty = post_upload(b"", name="nothing.jsonl")
    assert empty.status_code == 400
    assert "nothing.jsonl is empty: there is nothing to import." in text(empty)
    assert 'aria-invalid="true"' in text(empty)

    no_file = team["auditor"].post("/w/payments/uploads/", {"format": "jsonl"})
    assert no_file.status_code == 400 and "Choose a log file to upload." in text(no_file)

    unknown = post_upload(LOG, format="yaml")
    assert unknown.status_code == 400 and "Choose one of the formats: jsonl, csv" in text(unknown)

    csv_without_session = post_upload(b"a,b\n1,2\n", name="t.csv", format="csv")
    assert csv_without_session.status_code == 400
    assert "needs the name of the column that holds the session" in text(csv_without_session)
    missing_column = post_upload(b"a,b\n1,2\n", name="t.csv", format="csv", csv_session="conv")
    page = text(missing_column)
    assert missing_column.status_code == 400
    assert "column &#x27;conv&#x27; is not in the file&#x27;s header" in page
    assert 'id="csv_session-error"' in page
    assert 'value="conv"' in page  # what was typed is kept

    settings.MAX_REQUEST_BYTES = 300
    too_big = post_upload(b'{"session": "s"}\n' * 40)
    assert too_big.status_code == 413
    assert "uploads are limited to 300\xa0bytes" in text(too_big)
    assert Upload.objects.count() == 0

    # A log in the wrong format is read, every line reported, and the page asks about it.
    settings.MAX_REQUEST_BYTES = 20 * 1024 * 1024
    wrong = post_upload(b"conv,reply\nc1,hello\n", name="chat.csv", format="jsonl")
    page = text(team["auditor"].get(wrong["Location"]))
    assert "No line of this file could be read as JSON Lines" in page
    assert "Was the format right?" in page


def test_an_oversized_upload_is_refused_before_its_body_is_read(team, settings):
    settings.MAX_REQUEST_BYTES = 300
    strict = team["client_for"](team["users"][0], enforce_csrf_checks=True)
    body = {"file": SimpleUploadedFile("big.jsonl", b"x" * 1000), "format": "jsonl"}
    response = strict.post("/w/payments/uploads/", body)
    assert response.status_code == 413
    # A request of allowed size still needs the CSRF token.
    settings.MAX_REQUEST_BYTES = 20 * 1024 * 1024
    body = {"file": SimpleUploadedFile("ok.jsonl", LOG), "format": "jsonl"}
    assert strict.post("/w/payments/uploads/", body).status_code == 403
    assert Upload.objects.count() == 0


def test_members_without_the_auditor_role_see_why_and_are_refused(team, post_upload):
    page = text(team["reviewer"].get("/w/payments/uploads/"))
    assert "data-upload-form" not in page
    assert "Only members with the auditor role upload logs and run audits" in page
    assert "your roles here are: reviewer" in page
    refused = post_upload(LOG, client=team["reviewer"])
    assert refused.status_code == 403 and "Only members with the auditor role" in text(refused)
    assert Upload.objects.count() == 0

    post_upload(LOG)
    upload = Upload.objects.get()
    approve_rule(team)
    detail = text(team["reviewer"].get(f"/w/payments/uploads/{upload.pk}/"))
    assert "Audit this upload" not in detail and "Only members with the auditor role" in detail
    audit = team["reviewer"].post(f"/w/payments/uploads/{upload.pk}/audit")
    assert audit.status_code == 403 and "Only members with the auditor role" in text(audit)
    assert AuditRun.objects.count() == 0


def test_outsiders_and_other_workspaces_objects_get_404(team, post_upload):
    post_upload(LOG)
    upload = Upload.objects.get()
    run = AuditRun.objects.create(workspace=team["ws"], upload=upload)
    urls = ["/w/payments/uploads/", f"/w/payments/uploads/{upload.pk}/",
            f"/w/payments/uploads/{upload.pk}/progress",
            f"/w/payments/uploads/{upload.pk}/errors.csv",
            f"/w/payments/audits/{run.pk}/progress"]
    for url in urls:
        assert team["outsider"].get(url).status_code == 404, url
    assert team["outsider"].post(f"/w/payments/uploads/{upload.pk}/audit").status_code == 404
    assert team["outsider"].post("/w/payments/uploads/", {"format": "jsonl"}).status_code == 404
    # The outsider's own workspace does not reach another workspace's upload or run.
    for url in urls[1:]:
        assert team["outsider"].get(url.replace("payments", "elsewhere")).status_code == 404, url
    # Signed out: to the sign-in page.
    assert Client().get(urls[1])["Location"].startswith("/accounts/login/")
    assert team["auditor"].delete(urls[1]).status_code == 405
    assert team["auditor"].get(f"/w/payments/uploads/{upload.pk}/audit").status_code == 405


# ---------------------------------------------------------------------------------------------
# Audits

def test_an_auditor_starts_an_audit_from_the_upload_page_and_watches_it(
        team, post_upload, django_capture_on_commit_callbacks):
    post_upload(LOG)
    upload = Upload.objects.get()
    rule = approve_rule(team)
    rule_set = rules.create_rule_set(team["ws"], team["users"][0], "shipping",
                                     rule_ids=[rule.pk])
    page = text(team["auditor"].get(f"/w/payments/uploads/{upload.pk}/"))
    assert f'action="/w/payments/uploads/{upload.pk}/audit"' in page
    assert f'<option value="{rule_set.pk}">Rule set shipping</option>' in page
    assert "Not audited yet." in page

    with django_capture_on_commit_callbacks(execute=True):
        response = team["auditor"].post(f"/w/payments/uploads/{upload.pk}/audit",
                                        {"rule_set": str(rule_set.pk)})
    assert response.status_code == 302
    assert response["Location"] == f"/w/payments/uploads/{upload.pk}/"
    run = AuditRun.objects.get()
    assert (run.upload, run.rule_set, run.status, run.sessions_total, run.sessions_done) == (
        upload, rule_set, "done", 2, 2)
    verdicts = dict(SessionResult.objects.filter(run=run)
                    .values_list("session__external_id", "final"))
    assert verdicts == {"s1": "satisfied", "s2": "violated"}  # s2 ships before paying

    page = text(team["auditor"].get(response["Location"]))
    assert (f"Audit #{run.pk} of log.jsonl with rule set &#x27;shipping&#x27; started."
            in page)
    assert f"<h3>Audit #{run.pk}</h3>" in page
    assert 'run-status-done">Done</span>\n2 sessions audited.' in page
    assert f'<progress max="2" value="2" aria-label="Audit #{run.pk} progress">' in page
    assert "Sessions: 2 of 2 (100%)." in page
    assert f"/w/payments/audits/{run.pk}/progress" not in page  # done: no polling
    try:
        report = reverse("audit", args=["payments", run.pk])
    except NoReverseMatch:  # the report page is not there yet
        assert "Read the report" not in page
    else:
        assert f'<a href="{report}">Read the report</a>' in page

    # Without a rule set: every approved rule.
    with django_capture_on_commit_callbacks(execute=True):
        team["auditor"].post(f"/w/payments/uploads/{upload.pk}/audit", {"rule_set": ""})
    assert AuditRun.objects.filter(rule_set=None, status="done").count() == 1


def test_the_audit_progress_partial_polls_while_queued_or_running(team, post_upload,
                                                                  django_capture_on_commit_callbacks):
    post_upload(LOG)
    upload = Upload.objects.get()
    approve_rule(team)
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        run = start_audit(team["ws"], upload=upload, by=actor_of(team))
    url = f"/w/payments/audits/{run.pk}/progress"

    queued = text(team["auditor"].get(url, {"shown": "queued"}, HTTP_HX_REQUEST="true"))
    assert f'hx-get="{url}?shown=queued" hx-trigger="every 1s" hx-swap="outerHTML"' in queued
    assert "Sessions: 0 of 2 (0%)." in queued and "Batches: 0 of 1." in queued
    assert "hx-swap-oob" not in queued and "<html" not in queued

    AuditRun.objects.filter(pk=run.pk).update(status="running", sessions_done=1)
    running = text(team["auditor"].get(url, {"shown": "queued"}, HTTP_HX_REQUEST="true"))
    assert f'<progress max="2" value="1" aria-label="Audit #{run.pk} progress">50%' in running
    assert f'<span id="audit-{run.pk}-status" hx-swap-oob="innerHTML">' in running
    assert "1 of 2 sessions audited." in running

    AuditRun.objects.filter(pk=run.pk).update(status="queued", sessions_done=0)
    for callback in enqueued:
        callback()  # the batches run now
    run.refresh_from_db()
    assert run.status == "done"
    done = text(team["auditor"].get(url, {"shown": "running"}, HTTP_HX_REQUEST="true"))
    assert "hx-trigger" not in done and "Sessions: 2 of 2 (100%)." in done
    assert "2 sessions audited." in done  # the announced status

    failed = AuditRun.objects.create(workspace=team["ws"], upload=upload, status="failed",
                                     error="batch 0 failed after 3 attempts: boom")
    page = text(team["auditor"].get(f"/w/payments/audits/{failed.pk}/progress"))
    assert "batch 0 failed after 3 attempts: boom" in page and "hx-trigger" not in page

    # Other pages include the partial with just `run` and `slug`.
    included = render_to_string("traces/_audit_progress.html", {"run": run, "slug": "payments"})
    assert f'<p id="audit-{run.pk}-status" role="status">' in included
    assert f'id="audit-{run.pk}-bar"' in included and "2 sessions audited." in included


def actor_of(team):
    class Request:
        user = team["users"][0]

    return actor(Request)


def test_audit_refusals_are_explained(team, post_upload):
    post_upload(LOG)
    upload = Upload.objects.get()
    page = text(team["auditor"].get(f"/w/payments/uploads/{upload.pk}/"))
    assert "No rule has an approved version yet" in page and 'href="/w/payments/rules/"' in page
    response = team["auditor"].post(f"/w/payments/uploads/{upload.pk}/audit", follow=True)
    page = text(response)
    assert "Workspace &#x27;payments&#x27; has no approved rule versions: only approved rule " \
           "versions audit." in page
    assert '<a href="/w/payments/rules/">See the rules</a>' in page

    approve_rule(team)
    Upload.objects.filter(pk=upload.pk).update(status=UploadStatus.PARSING)
    page = text(team["auditor"].post(f"/w/payments/uploads/{upload.pk}/audit", follow=True))
    assert (f"Upload {upload.pk} (log.jsonl) is still being parsed; audit it once it is parsed"
            in page)
    Upload.objects.filter(pk=upload.pk).update(status=UploadStatus.PARSED)
    page = text(team["auditor"].post(f"/w/payments/uploads/{upload.pk}/audit",
                                     {"rule_set": "999999"}, follow=True))
    assert "That rule set no longer exists" in page
    assert AuditRun.objects.count() == 0


# ---------------------------------------------------------------------------------------------
# Audit as it loads

def test_the_form_offers_an_audit_as_the_log_loads_once_a_rule_is_approved(team, post_upload):
    page = text(team["auditor"].get("/w/payments/uploads/"))
    assert 'name="audit" value="none"' in page and 'id="id_audit"' not in page  # no rules yet
    rule = approve_rule(team)
    page = text(team["auditor"].get("/w/payments/uploads/"))
    assert '<label for="id_audit">Audit as it loads</label>' in page
    assert '<option value="all" selected>' in page  # the default: audit

    response = post_upload(LOG, audit="all")
    upload = Upload.objects.get()
    assert response["Location"] == f"/w/payments/uploads/{upload.pk}/"
    run = upload.audit_run
    assert run is not None and run.status == "done"
    assert {(r.session.external_id, r.verdict)
            for r in SessionResult.objects.filter(run=run)} == {("s1", "satisfied"),
                                                                ("s2", "violated")}
    assert list(run.rule_versions.all()) == [rule.versions.get()]
    detail = text(team["auditor"].get(response["Location"]))
    assert f"Audit #{run.pk}" in detail and "Read the report" in detail
    assert "Asked for with the upload and run as it loaded" in detail


@pytest.mark.parametrize("value", ["12345", "²", "9" * 30])
def test_a_rule_set_gone_from_the_form_is_a_field_error(team, post_upload, value):
    approve_rule(team)
    response = post_upload(LOG, audit=value)
    assert response.status_code == 400
    page = text(response)
    assert 'id="audit-error"' in page and "that rule set no longer exists" in page
    assert not Upload.objects.exists()
