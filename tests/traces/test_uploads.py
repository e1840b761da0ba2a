"""Uploads over HTTP: storing, parsing, loading, progress, errors, sessions and isolation."""

from __future__ import annotations

import csv
import io
import json
import logging

import pytest
from django.db import connection

from studio.traces import intake, loading
from studio.traces.models import Event, TraceSession, Upload, UploadError
from studio.workspaces.models import AuditLogEntry

from .data import data_file

pytestmark = pytest.mark.django_db


def jsonl(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def parsed(caller, response, status=201) -> dict:
    assert response.status_code == status, response.content
    upload = caller.get(f"uploads/{response.json()['id']}").json()
    return upload


def stored(upload_id) -> list[tuple]:
    return list(Event.objects.filter(upload_id=upload_id).order_by("session__external_id", "step")
                .values_list("session__external_id", "step", "input", "output"))


# ---------------------------------------------------------------------------------------------
# The shared logs, each through its importer

@pytest.mark.parametrize("name, format, sessions, events", [
    ("textworld.jsonl", "jsonl", 40, 985),
    ("agentdojo_groundtruth.jsonl", "jsonl", 123, 386),
    ("agentdojo_hijacked.jsonl", "jsonl", 20, 79),
    ("inspect_mock.jsonl", "jsonl", 3, 9),
])
def test_shared_logs_load_whole(auditor, name, format, sessions, events):
    upload = parsed(auditor, auditor.upload(data_file(name), format))
    assert upload["status"] == "parsed" and upload["percent"] == 100.0
    assert (upload["lines_total"], upload["lines_ok"], upload["lines_bad"]) == (events, events, 0)
    assert upload["events_stored"] == events
    page = auditor.get("sessions", upload=upload["id"], limit=1000).json()
    assert page["count"] == sessions
    assert sum(s["steps"] for s in page["items"]) == events
    assert Event.objects.filter(upload_id=upload["id"]).count() == events


def test_inspect_logs_load_as_the_reference_conversion(auditor, outsider):
    reference = parsed(auditor, auditor.upload(data_file("inspect_mock.jsonl"), "jsonl"))
    expected = stored(reference["id"])
    for path in sorted(data_file("inspect").iterdir()):
        # Each log into a workspace of its own (beta for the second): the same samples.
        caller = auditor if path.suffix == ".eval" else outsider
        if caller is auditor:
            Event.objects.filter(upload_id=reference["id"]).delete()
            TraceSession.objects.filter(workspace__slug="acme").delete()
        upload = parsed(caller, caller.upload(path, "inspect"))
        assert (upload["status"], upload["events_stored"], upload["lines_bad"]) == ("parsed", 9, 0)
        assert caller.get("sessions", upload=upload["id"]).json()["count"] == 3
        assert stored(upload["id"]) == expected


def test_the_same_samples_twice_are_reported_not_duplicated(auditor):
    first, second = sorted(data_file("inspect").iterdir())  # .eval, then .json: the same samples
    one = parsed(auditor, auditor.upload(first, "inspect"))
    two = parsed(auditor, auditor.upload(second, "inspect"))
    assert one["events_stored"] == 9
    assert (two["status"], two["events_stored"], two["lines_bad"]) == ("parsed", 0, 3)
    errors = auditor.get(f"uploads/{two['id']}/errors").json()
    assert errors["count"] == 9
    assert errors["items"][0]["reason"] == (
        f"session 'inspect/mock_tool_eval/France/e1' already has an event at step 0 (from upload "
        f"#{one['id']}); this line was not stored")
    assert Event.objects.count() == 9
    assert {s.steps for s in TraceSession.objects.all()} == {3}


# ---------------------------------------------------------------------------------------------
# Bad lines, progress and errors

BAD_LOG = jsonl({"session": "a", "output": "x"},
                "{oops",
                {"session": "a", "output": "y"},
                {"session": "b", "step": "z"},
                "",
                {"session": "b", "step": 4, "output": "w"},
                '{"session": "c", "output": "nul \\u0000"}',
                {"session": "a", "output": "z"})


def test_bad_lines_are_reported_by_number_and_nothing_else_is_lost(auditor):
    upload = parsed(auditor, auditor.upload(BAD_LOG, "jsonl"))
    assert (upload["lines_total"], upload["lines_ok"], upload["lines_bad"],
            upload["events_stored"]) == (7, 4, 3, 4)
    errors = auditor.get(f"uploads/{upload['id']}/errors").json()
    assert errors["count"] == 3
    assert [(e["line"], e["reason"]) for e in errors["items"]] == [
        (2, "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
        (4, "field 'step' must be a whole number, got a string"),
        (7, "contains the NUL character (\\u0000), which the database cannot store"),
    ]
    assert stored(upload["id"]) == [("a", 0, None, "x"), ("a", 1, None, "y"), ("a", 2, None, "z"),
                                    ("b", 4, None, "w")]
    assert dict(TraceSession.objects.values_list("external_id", "steps")) == {"a": 3, "b": 1}


def test_a_loaded_upload_logs_where_its_time_went(auditor, caplog):
    with caplog.at_level(logging.INFO, logger="studio.traces.loading"):
        upload = parsed(auditor, auditor.upload(jsonl({"session": "a", "input": "x"}, {"session": "a", "input": "x"}),
                                                "jsonl"))

    [record] = [r for r in caplog.records if hasattr(r, "phases")]
    assert record.getMessage().startswith(f"upload {upload['id']}: 2 events loaded in ")
    assert set(record.phases) == {"load_s", "finish_s", "commit_s"}
    assert all(seconds >= 0 for seconds in record.phases.values())


def test_text_the_database_cannot_hold_is_a_line_error(auditor):
    upload = parsed(auditor, auditor.upload(jsonl('{"session": "s", "output": "\\ud800"}',
                                                  '{"session": "s\\u0000", "input": "x"}',
                                                  '{"session": "s", "input": "a\\\\u0000"}',
                                                  # Postgres keeps offsets up to 15:59 only
                                                  {"session": "t", "input": "x",
                                                   "timestamp": "3771-09-12T13:54:21+17:45"}),
                                            "jsonl"))
    assert (upload["events_stored"], upload["lines_bad"]) == (2, 2)
    reasons = [e["reason"] for e in auditor.get(f"uploads/{upload['id']}/errors").json()["items"]]
    assert reasons == [
        "contains an unpaired UTF-16 surrogate (\\ud800-\\udfff), which cannot be stored",
        "contains the NUL character (\\u0000), which the database cannot store"]
    assert Event.objects.get(session__external_id="s").input == "a\\u0000"  # a backslash
    stamp = Event.objects.get(session__external_id="t").timestamp
    assert stamp.isoformat() == "3771-09-11T20:09:21+00:00"


def test_errors_are_paged_and_downloadable_as_csv(auditor):
    rows = [{"session": "s", "output": i} if i % 3 else f"=HYPERLINK(bad {i})" for i in range(30)]
    upload = parsed(auditor, auditor.upload(jsonl(*rows), "jsonl"))
    assert upload["lines_bad"] == 10
    page = auditor.get(f"uploads/{upload['id']}/errors", offset=8, limit=5).json()
    assert (page["count"], [e["line"] for e in page["items"]]) == (10, [25, 28])
    response = auditor.client.get(f"/api/w/acme/uploads/{upload['id']}/errors.csv")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="upload-{upload["id"]}-errors.csv"')
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert table[0] == ["line", "reason", "pointer"]  # the page's download is the same file
    assert [int(r[0]) for r in table[1:]] == list(range(1, 30, 3))
    assert table[1][1] == "not valid JSON (Expecting value at column 1)"


def _crash_after_four_batches(auditor, monkeypatch, rows) -> Upload:
    """Upload ``rows`` in batches of 100 with the worker dying after the fourth is written;
    the upload as the crash leaves it, the writer put back."""
    monkeypatch.setattr(loading, "BATCH_EVENTS", 100)
    written = []
    real_put = loading._Store.put

    def crash_after_the_fourth(store, batch):
        real_put(store, batch)
        written.append(batch.start)
        if len(written) == 4:
            raise KeyboardInterrupt("the worker dies")  # not caught by the service

    monkeypatch.setattr(loading._Store, "put", crash_after_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        auditor.upload(jsonl(*rows), "jsonl")
    monkeypatch.setattr(loading._Store, "put", real_put)
    upload = Upload.objects.get()
    assert (upload.status, upload.items_done, upload.events_stored) == ("parsing", 400, 400)
    return upload


def test_progress_resumes_after_a_crash_without_duplicates(auditor, monkeypatch):
    rows = [{"session": f"s{i % 7}", "output": i} for i in range(1000)]
    rows[500] = "broken"
    upload = _crash_after_four_batches(auditor, monkeypatch, rows)
    assert 0 < upload.percent < 99 and upload.bytes_read > 0
    assert auditor.get(f"uploads/{upload.pk}").json()["percent"] == upload.percent

    loading.parse_upload(upload.pk)  # the task delivered again
    upload.refresh_from_db()
    assert (upload.status, upload.attempts, upload.lines_total, upload.lines_bad,
            upload.events_stored) == ("parsed", 2, 1000, 1, 999)
    assert Event.objects.count() == 999 and UploadError.objects.get().line == 501
    steps = {s.external_id: s.steps for s in TraceSession.objects.all()}
    assert sum(steps.values()) == 999
    for session in TraceSession.objects.all():
        assert list(session.events.values_list("step", flat=True)) == list(range(session.steps))

    loading.parse_upload(upload.pk)  # and once more: a finished upload is left alone
    assert Event.objects.count() == 999 and Upload.objects.get().attempts == 2


def test_attempts_are_capped(auditor, monkeypatch, settings):
    settings.UPLOAD_MAX_ATTEMPTS = 1
    monkeypatch.setattr(loading, "_parse",
                        lambda upload, observe: (_ for _ in ()).throw(SystemExit))
    with pytest.raises(SystemExit):
        auditor.upload(jsonl({"session": "s", "input": "x"}), "jsonl")
    upload_id = Upload.objects.get().pk
    loading.parse_upload(upload_id)
    upload = Upload.objects.get()
    assert upload.status == "failed" and upload.error.startswith("gave up after 1 attempts")


# ---------------------------------------------------------------------------------------------
# The same file again; steps; clashes

def test_the_same_file_twice_adds_nothing(auditor):
    first = auditor.upload(BAD_LOG, "jsonl", name="one.jsonl")
    assert first.status_code == 201
    counts = (Upload.objects.count(), Event.objects.count(), UploadError.objects.count(),
              TraceSession.objects.count())
    again = auditor.upload(BAD_LOG, "jsonl", name="renamed.jsonl")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"] and again.json()["filename"] == "one.jsonl"
    assert (Upload.objects.count(), Event.objects.count(), UploadError.objects.count(),
            TraceSession.objects.count()) == counts
    other = auditor.upload(BAD_LOG, "openai")
    assert other.status_code == 409
    assert other.json()["detail"].startswith(f"this file was already uploaded to this workspace "
                                             f"as upload #{first.json()['id']} (format jsonl")
    assert AuditLogEntry.objects.filter(action="upload.created").count() == 1


def test_steps_continue_after_stored_steps_and_clashes_name_the_event(auditor):
    one = parsed(auditor, auditor.upload(jsonl({"session": "s", "output": 1},
                                               {"session": "s", "output": 2},
                                               {"session": "t", "step": 5, "event_id": "e5", "output": 5}),
                                         "jsonl"))
    two = parsed(auditor, auditor.upload(jsonl({"session": "s", "output": 3},
                                               {"session": "s", "step": 1, "output": "again"},
                                               {"session": "t", "event_id": "e5", "output": 5},
                                               {"session": "t", "output": "new"},
                                               {"session": "s", "step": 2, "output": "dup"}),
                                         "jsonl"))
    assert (two["events_stored"], two["lines_bad"]) == (2, 3)
    reasons = [e["reason"] for e in auditor.get(f"uploads/{two['id']}/errors").json()["items"]]
    assert reasons == [
        (f"session 's' already has an event at step 1 (from upload #{one['id']}); this line was "
         "not stored"),
        f"event id 'e5' is already stored (from upload #{one['id']}); this line was not stored",
        "session 's' has another event at step 2 (line 1)",
    ]
    assert [(s, step, out) for s, step, _, out in stored(two["id"])] == [("s", 2, 3),
                                                                        ("t", 7, "new")]
    assert dict(TraceSession.objects.values_list("external_id", "steps")) == {"s": 3, "t": 2}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the COPY paths are Postgres's")
@pytest.mark.parametrize("direct", [True, False])
def test_both_copy_paths_load_the_same(auditor, monkeypatch, direct):
    monkeypatch.setattr(loading, "DIRECT_COPY", direct)
    odd = "tab\there\nnew line\r\\N back\\slash \\. é 🙂"
    rows = [{"session": f"s{i % 3}\t{odd}", "input": {"k": [i, odd]}, "labels": ["p", odd],
             "timestamp": "2026-01-01T00:00:00+02:00",
             "message": {"id": f"m{i}{odd}", "peer": odd, "kind": "send"},
             "lifeline": odd, "event_id": f"id{i}", "output": odd, "env": {odd: odd}}
            for i in range(20)] + [{"session": "plain", "data": {}}]
    upload = parsed(auditor, auditor.upload(jsonl(*rows), "jsonl"))
    assert upload["events_stored"] == 21
    event = Event.objects.get(event_id="id4")
    assert (event.session.external_id, event.step, event.input, event.output, event.labels,
            event.lifeline, event.message_id, event.message_peer, event.message_kind,
            event.data) == (f"s1\t{odd}", 1, {"k": [4, odd]}, odd, ["p", odd], odd, f"m4{odd}",
                            odd, "send", {"env": {odd: odd}})
    assert event.timestamp.isoformat() == "2025-12-31T22:00:00+00:00"
    plain = Event.objects.get(session__external_id="plain")
    assert (plain.event_id, plain.timestamp, plain.labels, plain.input, plain.lifeline) == (
        None, None, None, None, "")


# ---------------------------------------------------------------------------------------------
# CSV, chat transcripts, OTLP through the API

CSV = (b"conv,turn,prompt,reply,tags\n"
       b"c1,0,hi,hello,greet\n"
       b"c1,1,pay,\"{\"\"tool\"\": \"\"pay\"\", \"\"args\"\": {}}\",pay|money\n"
       b"c2,,q,r,\n")


def test_csv_upload_with_a_mapping(auditor):
    options = {"session": "conv", "step": "turn", "input": "prompt", "output": "reply",
               "labels": "tags"}
    upload = parsed(auditor, auditor.upload(CSV, "csv", options, name="log.csv"))
    assert (upload["status"], upload["events_stored"], upload["options"]) == ("parsed", 3, options)
    assert Event.objects.get(step=1).output == {"tool": "pay", "args": {}}
    assert Event.objects.get(step=1).labels == ["pay", "money"]


def test_csv_mapping_errors_are_field_errors_and_store_nothing(auditor):
    response = auditor.upload(CSV, "csv", {"session": "conv", "output": "answer"})
    assert response.status_code == 400
    assert response.json() == {
        "detail": "column 'answer' is not in the file's header; the header has 'conv', 'turn', "
                  "'prompt', 'reply', 'tags'", "field": "options.output"}
    response = auditor.upload(CSV, "csv", {"step": "turn"})
    assert response.status_code == 400 and response.json()["field"] == "options.session"
    assert Upload.objects.count() == 0
    assert not list((intake.upload_root() / "incoming").iterdir())


@pytest.mark.parametrize("format, options, field, detail", [
    ("", "{}", "format", "the format is required: one of jsonl, csv, openai, otlp, inspect"),
    ("xml", "{}", "format", "unknown format 'xml'; formats are jsonl, csv, openai, otlp, inspect"),
    ("jsonl", "[1]", "options", "options must be a JSON object"),
    ("jsonl", "{", "options", None),
    ("jsonl", '{"x": 1}', "options.x", "JSONL logs take no options"),
])
def test_bad_format_or_options(auditor, format, options, field, detail):
    response = auditor.client.post("/api/w/acme/uploads", {
        "file": io.BytesIO(b'{"session": "s", "input": "x"}\n'), "format": format, "options": options})
    assert response.status_code == 400 and response.json()["field"] == field
    if detail:
        assert response.json()["detail"] == detail


def test_missing_file(auditor):
    response = auditor.client.post("/api/w/acme/uploads", {"format": "jsonl"})
    assert response.status_code == 400 and response.json()["field"] == "file"


def test_chat_transcripts_with_a_malformed_call(auditor):
    transcript = {"id": "conv", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "a", "arguments": "{bad"}},
            {"id": "2", "type": "function", "function": {"name": "b", "arguments": "{}"}}]},
        {"role": "assistant", "content": "done", "finish_reason": "stop"}]}
    upload = parsed(auditor, auditor.upload(jsonl(transcript), "openai"))
    assert (upload["events_stored"], upload["lines_bad"]) == (2, 1)
    error = auditor.get(f"uploads/{upload['id']}/errors").json()["items"][0]
    assert error["pointer"] == "/messages/1/tool_calls/0"
    assert error["reason"].startswith("message 1: tool call 'a': arguments are not valid JSON")
    events = auditor.get(f"sessions/{TraceSession.objects.get().pk}/events").json()["items"]
    assert [(e["step"], e["output"], e["data"]["role"]) for e in events] == [
        (1, {"tool": "b", "args": {}}, "assistant"), (2, "done", "assistant")]


def _attribute(key, value):
    return {"key": key, "value": {"stringValue": value}}


def test_otlp_files_go_through_the_otlp_decoder(auditor):
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "name": "execute_tool pay", "startTimeUnixNano": "1700000000000000000",
            "attributes": [_attribute("gen_ai.operation.name", "execute_tool"),
                           _attribute("gen_ai.tool.name", "pay"),
                           _attribute("gen_ai.tool.call.arguments", '{"amount": 5}')]}
    document = {"resourceSpans": [
        {"resource": {"attributes": [_attribute("service.name", "agent")]},
         "scopeSpans": [{"spans": [span, {**span, "traceId": "zz"}]}]}]}
    upload = parsed(auditor, auditor.upload(json.dumps(document, indent=1).encode(), "otlp"))
    assert (upload["status"], upload["events_stored"], upload["lines_bad"]) == ("parsed", 1, 1)
    event = Event.objects.get()
    assert (event.output, event.lifeline, event.event_id) == (
        {"tool": "pay", "args": {"amount": 5}}, "agent", "b7ad6b7169203331")
    error = auditor.get(f"uploads/{upload['id']}/errors").json()["items"][0]
    assert (error["line"], error["pointer"]) == (3, "/resourceSpans/0")
    assert "traceId" in error["reason"]
    # One export request per line, as the Collector's file exporter writes them.
    lines = parsed(auditor, auditor.upload(jsonl(document, {"resourceSpans": "x"}), "otlp"))
    assert (lines["events_stored"], lines["lines_bad"]) == (0, 2)


# ---------------------------------------------------------------------------------------------
# Sessions and events

def test_sessions_filter_and_events_page_by_step(auditor):
    one = parsed(auditor, auditor.upload(jsonl(*[{"session": "alpha", "output": i}
                                                 for i in range(25)]), "jsonl"))
    parsed(auditor, auditor.upload(jsonl({"session": "beta-1", "input": "x"}, {"session": "beta-2", "input": "x"}), "jsonl"))
    assert auditor.get("sessions").json()["count"] == 3
    assert [s["external_id"] for s in auditor.get("sessions", q="BETA").json()["items"]] == [
        "beta-1", "beta-2"]
    only = auditor.get("sessions", upload=one["id"]).json()
    assert only["count"] == 1 and only["items"][0]["steps"] == 25
    session_id = only["items"][0]["id"]
    detail = auditor.get(f"sessions/{session_id}").json()
    assert (detail["external_id"], detail["first_step"], detail["last_step"]) == ("alpha", 0, 24)
    page = auditor.get(f"sessions/{session_id}/events", from_step=5, limit=10).json()
    assert [e["step"] for e in page["items"]] == list(range(5, 15)) and page["next_step"] == 15
    assert page["items"][0]["output"] == 5 and page["items"][0]["upload_id"] == one["id"]
    last = auditor.get(f"sessions/{session_id}/events", from_step=20, to_step=22).json()
    assert [e["step"] for e in last["items"]] == [20, 21, 22] and last["next_step"] is None


def test_uploads_list_newest_first(auditor):
    parsed(auditor, auditor.upload(jsonl({"session": "a", "input": "x"}), "jsonl"))
    parsed(auditor, auditor.upload(jsonl({"session": "b", "input": "x"}), "jsonl"))
    page = auditor.get("uploads").json()
    assert page["count"] == 2 and page["items"][0]["id"] > page["items"][1]["id"]
    assert auditor.get("uploads", status="failed").json()["count"] == 0


# ---------------------------------------------------------------------------------------------
# Who may do what; limits

def test_uploading_needs_the_auditor_role(author, person):
    response = author.upload(jsonl({"session": "s", "input": "x"}), "jsonl")
    assert response.status_code == 403
    assert response.json()["detail"] == "this needs the auditor role in workspace 'acme'"
    response = person.upload(jsonl({"session": "s", "input": "x"}), "jsonl")
    assert response.status_code == 201
    assert parsed(person, response)["uploaded_by"] == "owner-acme"


def test_an_outsider_gets_404_on_every_route(auditor, outsider):
    upload = parsed(auditor, auditor.upload(BAD_LOG, "jsonl"))
    session = TraceSession.objects.filter(workspace__slug="acme").first()
    own = parsed(outsider, outsider.upload(jsonl({"session": "mine", "input": "x"}), "jsonl"))
    assert own["status"] == "parsed"
    reads = ["uploads", f"uploads/{upload['id']}", f"uploads/{upload['id']}/errors",
             f"uploads/{upload['id']}/errors.csv", "sessions", f"sessions/{session.pk}",
             f"sessions/{session.pk}/events"]
    for path in reads:
        response = outsider.get(path, slug="acme")
        assert response.status_code == 404, path
        assert response.json() == {"detail": "not found"}
    assert outsider.upload(jsonl({"session": "x", "input": "x"}), "jsonl", slug="acme").status_code == 404
    # Naming acme's objects from the outsider's own workspace finds nothing either.
    for path in reads[1:4] + reads[5:]:
        assert outsider.get(path).status_code == 404, path
    assert outsider.get("sessions", upload=upload["id"]).status_code == 404
    assert auditor.client.get("/api/w/nowhere/uploads").status_code == 404


def test_an_oversized_upload_is_refused_with_413(auditor, settings):
    settings.MAX_REQUEST_BYTES = 4096
    response = auditor.upload(b"x" * 5000, "jsonl")
    assert response.status_code == 413
    assert response.json()["detail"].startswith("the request body is ")
    assert response.json()["detail"].endswith("uploads are limited to 4096 bytes (0.00390625 MiB)")
    assert Upload.objects.count() == 0


def test_parsing_waits_for_the_commit(auditor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = auditor.client.post("/api/w/acme/uploads", {
            "file": io.BytesIO(b'{"session": "s", "input": "x"}\n'), "format": "jsonl"})
    assert response.status_code == 201 and response.json()["status"] == "received"
    assert len(callbacks) == 1 and Event.objects.count() == 0
    callbacks[0]()
    assert Upload.objects.get().status == "parsed" and Event.objects.count() == 1


# ---------------------------------------------------------------------------------------------
# Outside a test transaction, as in a worker: Postgres writes batches on a thread of its own

@pytest.fixture(params=["here", "child"])
def parsed_in(request, settings):
    """Where a threaded load parses: in the loading process, or in a child process (as a big
    file is)."""
    settings.PARSE_PROCESS_MIN_BYTES = 0 if request.param == "child" else 10**12
    return request.param


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is Postgres's")
@pytest.mark.django_db(transaction=True)
def test_batches_written_on_a_thread_in_order(auditor, monkeypatch, parsed_in):
    monkeypatch.setattr(loading, "BATCH_EVENTS", 50)
    threads = set()
    real_put = loading._Store.put

    def put(store, batch):
        import threading

        threads.add(threading.current_thread().name)
        real_put(store, batch)

    monkeypatch.setattr(loading._Store, "put", put)
    first = parsed(auditor, auditor.upload(jsonl({"session": "s1", "step": 3, "input": "x"}), "jsonl"))
    rows = [{"session": f"s{i % 4}", "output": i} for i in range(400)] + [
        {"session": "s1", "step": 3, "input": "x"}, "bad"]
    upload = parsed(auditor, auditor.upload(jsonl(*rows), "jsonl"))
    assert threads == {f"upload-{first['id']}-writer", f"upload-{upload['id']}-writer"}
    assert (upload["status"], upload["lines_total"], upload["lines_bad"],
            upload["events_stored"]) == ("parsed", 402, 2, 400)
    assert [e["line"] for e in auditor.get(f"uploads/{upload['id']}/errors").json()["items"]] == [
        401, 402]
    # s1's step-less events came after its stored step 3, in file order.
    assert list(Event.objects.filter(session__external_id="s1", upload_id=upload["id"])
                .values_list("step", flat=True)) == list(range(4, 104))

    def fail_on_the_third(store, batch):
        if batch.start >= 100:
            raise RuntimeError("disk full")
        real_put(store, batch)

    monkeypatch.setattr(loading._Store, "put", fail_on_the_third)
    failed = parsed(auditor, auditor.upload(jsonl(*[{"session": "f", "input": "x"}] * 300), "jsonl"))
    assert failed["status"] == "failed" and failed["events_stored"] == 100
    assert failed["error"] == ("parsing stopped on an internal error (RuntimeError); the events "
                               "loaded before it are kept")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is Postgres's")
@pytest.mark.django_db(transaction=True)
def test_a_threaded_load_resumes_after_a_crash_without_duplicates(auditor, monkeypatch,
                                                                   parsed_in):
    rows = [{"session": f"s{i % 7}", "output": i, "event_id": f"e{i}"} for i in range(1000)]
    rows[500] = "broken"
    upload = _crash_after_four_batches(auditor, monkeypatch, rows)
    loading.parse_upload(upload.pk)  # the task delivered again
    upload.refresh_from_db()
    assert (upload.status, upload.lines_total, upload.lines_bad, upload.events_stored) == (
        "parsed", 1000, 1, 999)
    assert UploadError.objects.get().line == 501
    assert sorted(Event.objects.values_list("event_id", flat=True)) == sorted(
        f"e{i}" for i in range(1000) if i != 500)
    for session in TraceSession.objects.all():
        assert list(session.events.values_list("step", flat=True)) == list(range(session.steps))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is Postgres's")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("when", ["at once", "after the first batch"])
def test_when_the_parsing_process_dies_the_load_parses_on_and_loses_nothing(
        auditor, monkeypatch, settings, when):
    from studio.traces.parsing import ParseProcess

    settings.PARSE_PROCESS_MIN_BYTES = 0
    monkeypatch.setattr(loading, "BATCH_EVENTS", 50)
    killed = []

    class Dying(ParseProcess):
        def __iter__(self):
            batches = super().__iter__()
            if when == "after the first batch":
                yield next(batches)
            self._child.kill()
            killed.append(self._child.wait())
            self._child.stdout.read()  # what it wrote before dying is lost with it
            yield from batches

    monkeypatch.setattr(loading, "ParseProcess", Dying)
    # More than the pipe holds after the first batch, so the child is still at work when killed.
    rows = [{"session": f"s{i % 3}", "output": "x" * 5000, "event_id": f"e{i}"}
            for i in range(300)]
    upload = parsed(auditor, auditor.upload(jsonl(*rows), "jsonl"))
    assert killed == [-9]
    assert (upload["status"], upload["lines_total"], upload["lines_bad"],
            upload["events_stored"]) == ("parsed", 300, 0, 300)
    assert sorted(Event.objects.values_list("event_id", flat=True)) == sorted(
        f"e{i}" for i in range(300))
    for session in TraceSession.objects.all():
        assert list(session.events.values_list("step", flat=True)) == list(range(session.steps))


# ---------------------------------------------------------------------------------------------
# A parse task the broker lost

def test_an_upload_whose_parse_task_was_lost_is_requeued_once_per_stall(
        auditor, monkeypatch, django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    monkeypatch.setattr(intake, "enqueue_parse", lambda upload_id: None)  # the message is lost
    response = auditor.upload(jsonl({"session": "s", "input": "a"}, {"session": "s", "input": "x"}), "jsonl")
    upload = Upload.objects.get(pk=response.json()["id"])
    assert upload.status == "received"
    recent = auditor.upload(jsonl({"session": "t", "input": "b"}), "jsonl", name="other.jsonl")
    Upload.objects.filter(pk=upload.pk).update(created_at=timezone.now() - timedelta(hours=1))
    monkeypatch.undo()

    assert intake.requeue_stalled_uploads(stall_seconds=600) == [upload.pk]
    assert intake.requeue_stalled_uploads(stall_seconds=600) == []  # once per stall period
    upload.refresh_from_db()
    assert (upload.status, upload.events_stored) == ("parsed", 2)
    assert Upload.objects.get(pk=recent.json()["id"]).status == "received"  # not stalled yet


def test_an_empty_file_is_refused_and_stored_nowhere(auditor):
    response = auditor.upload(b"", "jsonl", name="nothing.jsonl")
    assert response.status_code == 422
    assert "nothing.jsonl is empty" in response.json()["detail"]
    assert not Upload.objects.exists()
