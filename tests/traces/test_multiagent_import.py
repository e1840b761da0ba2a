"""Multi-agent logs in: JSONL with lifelines and messages (nested or flat), and OTLP traces whose
spans belong to several services, where parent/child edges and span links between lifelines
become matched send/receive events - all the way to a session that reads as an MSC."""

from __future__ import annotations

import io
import json

import pytest

from studio.causal import MscError, build_msc
from studio.traces.formats import LineError, parse_jsonl, parse_otlp
from studio.traces.formats.otlp import decode_traces, events_from_otlp
from studio.traces.formats.otlp_messages import MessageLinker
from studio.traces.models import Event, TraceSession
from studio.web.message_chart_pages import EVENT_FIELDS, chart_msc

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT, CHECK, COMMIT, LOCAL = "00f067aa0ba902b7", "b7ad6b7169203331", "c1c2c3c4c5c6c7c8", \
    "d1d2d3d4d5d6d7d8"
SECOND = 1_000_000_000
T0 = 1_768_471_200 * SECOND   # 2026-01-15T10:00:00Z


def lines(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def split(items) -> tuple[list[dict], list[LineError]]:
    items = list(items)
    return ([i for i in items if isinstance(i, dict)],
            [i for i in items if isinstance(i, LineError)])


# ---------------------------------------------------------------------------------------------
# JSONL

def test_jsonl_messages_nested_or_flat_and_line_numbered_mistakes():
    content = lines(
        {"session": "s", "step": 0, "lifeline": "A", "input": "go", "output": "ask B",   # 1
         "message": {"id": "m1", "peer": "B", "kind": "send"}},
        {"session": "s", "step": 1, "lifeline": "B", "output": "got it",                 # 2
         "message_id": "m1", "message_peer": "A", "message_kind": "receive"},
        {"session": "s", "step": 2, "lifeline": "B", "message_id": "m2",                 # 3
         "message_kind": "shout"},
        {"session": "s", "step": 3, "lifeline": "B", "message_kind": "send"},            # 4
        {"session": "s", "step": 4, "lifeline": "B", "message": {"kind": "send"}},       # 5
        {"session": "s", "step": 5, "lifeline": "B", "message_id": "m3",                 # 6
         "message_kind": "send", "message": {"id": "m3", "kind": "send"}},
        {"session": "s", "step": 6, "lifeline": "B", "message_id": "m4"},                # 7
        {"session": "s", "step": 7, "lifeline": "B", "message_id": ["m5"],               # 8
         "message_kind": "send"},
        {"session": "s", "step": 8, "lifeline": "A", "message_id": None,                 # 9
         "message_peer": "", "message_kind": None, "output": "no message"},
        {"session": "s", "step": 9, "lifeline": "A", "message": {"id": "m6",             # 10
                                                                 "kind": "receive"}},
    )
    events, errors = split(parse_jsonl(io.BytesIO(content)))
    assert [(e.line, e.reason) for e in errors] == [
        (3, "field 'message_kind' must be 'send' or 'receive', got 'shout'"),
        (4, "field 'message_id' is required when the event sends or receives a message"),
        (5, "field 'message.id' is required"),
        (6, ("the message is given twice: use either 'message' {id, peer, kind} or the fields "
             "message_id, message_peer and message_kind")),
        (7, "field 'message_kind' is required with 'message_id': 'send' or 'receive'"),
        (8, "field 'message_id' must be a string, got an array"),
    ]
    assert [(e["line"], e["lifeline"], e["message"]) for e in events] == [
        (1, "A", {"id": "m1", "peer": "B", "kind": "send"}),
        (2, "B", {"id": "m1", "peer": "A", "kind": "receive"}),
        (9, "A", None),
        (10, "A", {"id": "m6", "peer": "", "kind": "receive"}),
    ]
    assert events[1]["data"] == {}  # the flat fields are the message, not free data
    assert events[2]["data"] == {}


def test_multiagent_jsonl_upload_stores_the_messages(person):
    content = lines(
        {"session": "s", "lifeline": "A", "output": "ask",
         "message": {"id": "m1", "peer": "B", "kind": "send"}},
        {"session": "s", "lifeline": "B", "message_id": "m1", "message_peer": "A",
         "message_kind": "receive"},
        {"session": "s", "lifeline": "B", "message_id": "m2", "message_kind": "bogus"},
    )
    response = person.upload(content, "jsonl", name="agents.jsonl")
    upload = person.get(f"uploads/{response.json()['id']}").json()
    assert (upload["events_stored"], upload["lines_bad"]) == (2, 1)
    error = person.get(f"uploads/{upload['id']}/errors").json()["items"][0]
    assert (error["line"], error["reason"]) == (
        3, "field 'message_kind' must be 'send' or 'receive', got 'bogus'")
    rows = list(Event.objects.order_by("step").values_list(
        "step", "lifeline", "message_id", "message_peer", "message_kind"))
    assert rows == [(0, "A", "m1", "B", "send"), (1, "B", "m1", "A", "receive")]


# ---------------------------------------------------------------------------------------------
# OTLP: spans of several services

def kv(key, value):
    return {"key": key, "value": {"stringValue": value}}


def span(span_id, start, name, *, parent=None, links=(), trace=TRACE, seconds=10):
    out = {"traceId": trace, "spanId": span_id, "name": name, "kind": 2,
           "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + seconds * SECOND),
           "attributes": [kv("gen_ai.conversation.id", "merge-1")]}
    if parent:
        out["parentSpanId"] = parent
    if links:
        out["links"] = [{"traceId": t, "spanId": s} for t, s in links]
    return out


def service(name, *spans):
    return {"resource": {"attributes": [kv("service.name", name)]},
            "scopeSpans": [{"scope": {"name": "agents"}, "spans": list(spans)}]}


def merge_trace() -> list[dict]:
    """The orchestrator calls the test runner (a child span in another service); the committer
    works on a span linked to the test runner's; the orchestrator also has a local child."""
    return [
        service("orchestrator", span(ROOT, T0, "propose"),
                span(LOCAL, T0 + 1 * SECOND, "prepare", parent=ROOT, seconds=1)),
        service("test-runner", span(CHECK, T0 + 2 * SECOND, "run checks", parent=ROOT)),
        service("committer", span(COMMIT, T0 + 20 * SECOND, "decide",
                                  links=[(TRACE, CHECK)])),
    ]


def summary(events) -> list[tuple]:
    return [(e["lifeline"], (e["message"] or {}).get("kind"), (e["message"] or {}).get("id"),
             e["data"].get("name") or e["data"].get("relation")) for e in events]


def test_cross_service_spans_become_matched_sends_and_receives():
    events, errors = events_from_otlp({"resourceSpans": merge_trace()})
    assert errors == []
    call, link = f"call:{ROOT}>{CHECK}", f"link:{CHECK}>{COMMIT}"
    assert summary(events) == [
        ("orchestrator", None, None, "propose"),
        ("orchestrator", None, None, "prepare"),        # same lifeline: no message
        ("orchestrator", "send", call, "call"),
        ("test-runner", "receive", call, "call"),
        ("test-runner", None, None, "run checks"),
        ("test-runner", "send", link, "link"),
        ("committer", "receive", link, "link"),
        ("committer", None, None, "decide"),
    ]
    send, receive = events[2], events[3]
    assert send["message"] == {"id": call, "peer": "test-runner", "kind": "send"}
    assert receive["message"] == {"id": call, "peer": "orchestrator", "kind": "receive"}
    assert send["session"] == receive["session"] == "merge-1"
    assert (send["event_id"], receive["event_id"]) == (f"{call}/send", f"{call}/receive")
    assert receive["data"] == {"relation": "call", "trace_id": TRACE, "from_span_id": ROOT,
                               "to_span_id": CHECK}
    # Just before the child span starts; the link's send while the linked span still runs.
    assert receive["timestamp"] == "2026-01-15T10:00:01.999999Z"
    assert send["timestamp"] == "2026-01-15T10:00:01.999998Z"
    assert events[5]["timestamp"] == "2026-01-15T10:00:12Z"      # the checks' span end
    assert events[7]["data"]["links"] == [{"trace_id": TRACE, "span_id": CHECK}]
    msc = build_msc(events)
    assert [(msc.events[i].kind, msc.events[i].partner) for i in (2, 3, 5, 6)] == [
        ("send", 3), ("receive", 2), ("send", 6), ("receive", 5)]
    assert msc.in_transit == [] and msc.is_log_order_causal()


def test_spans_across_documents_are_linked_when_the_second_arrives():
    # The Collector's file exporter: one export request per line; children end (and are
    # exported) before their parents.
    runner, orchestrator, committer = merge_trace()[1], merge_trace()[0], merge_trace()[2]
    content = lines({"resourceSpans": [runner]}, {"resourceSpans": [committer]},
                    {"resourceSpans": [orchestrator]})
    events, errors = split(parse_otlp(io.BytesIO(content)))
    assert errors == []
    assert summary(events) == [
        ("test-runner", None, None, "run checks"),                           # line 1
        ("test-runner", "send", f"link:{CHECK}>{COMMIT}", "link"),          # line 2
        ("committer", "receive", f"link:{CHECK}>{COMMIT}", "link"),
        ("committer", None, None, "decide"),
        ("orchestrator", None, None, "propose"),                             # line 3
        ("orchestrator", None, None, "prepare"),
        ("orchestrator", "send", f"call:{ROOT}>{CHECK}", "call"),
        ("test-runner", "receive", f"call:{ROOT}>{CHECK}", "call"),
    ]
    assert [e["line"] for e in events] == [1, 2, 2, 2, 3, 3, 3, 3]
    # In file order the receive comes after the span it started; the chart reads spans in
    # time order, which puts it back in place, and the session is a well-formed MSC.
    stored = [{"step": n, "lifeline": e["lifeline"], "timestamp": e["timestamp"],
               "input": e["input"], "output": e["output"], "data": e["data"],
               "message_id": e["message"]["id"] if e["message"] else "",
               "message_peer": e["message"]["peer"] if e["message"] else "",
               "message_kind": e["message"]["kind"] if e["message"] else "",
               "source": "upload", "upload__format": "otlp"} for n, e in enumerate(events)]
    with pytest.raises(MscError):  # in step order the test runner receives after the span
        chart_msc([dict(r, upload__format="jsonl") for r in stored])
    msc, steps = chart_msc(stored)
    receive = next(e for e in msc.events if e.kind == "receive" and e.lifeline == "test-runner")
    assert receive.position == 1 and steps[receive.index] == 7
    assert msc.events[receive.partner].lifeline == "orchestrator"

    # Live ingestion decodes each request on its own: edges within it only.
    assert [e["message"] for e in decode_traces({"resourceSpans": [runner]}).events] == [None]


def test_one_document_entry_at_a_time_is_linked_too():
    document = json.dumps({"resourceSpans": merge_trace()}, indent=1).encode()
    events, errors = split(parse_otlp(io.BytesIO(document)))
    assert errors == []
    kinds = [(e["lifeline"], e["message"]["kind"]) for e in events if e["message"]]
    assert sorted(kinds) == [("committer", "receive"), ("orchestrator", "send"),
                             ("test-runner", "receive"), ("test-runner", "send")]


def test_no_message_within_a_lifeline_between_sessions_or_to_an_unknown_span():
    linker = MessageLinker()
    # A span of another trace, in another session, linked to the orchestrator's root span.
    other_session = span(COMMIT, T0 + 5 * SECOND, "elsewhere", links=[(TRACE, ROOT)],
                         trace=OTHER_TRACE)
    other_session["attributes"] = [kv("gen_ai.conversation.id", "merge-2")]
    document = {"resourceSpans": [
        service("orchestrator", span(ROOT, T0, "propose"),
                span(LOCAL, T0 + SECOND, "prepare", parent=ROOT)),
        service("committer", other_session),
        service("test-runner", span(CHECK, T0, "orphan", parent="9999999999999999",
                                    links=[(OTHER_TRACE, "8888888888888888")])),
    ]}
    events, errors = events_from_otlp(document, linker)
    assert errors == [] and all(e["message"] is None for e in events)
    assert {e["session"] for e in events} == {"merge-1", "merge-2"}
    # A span seen again adds nothing.
    again, _ = events_from_otlp(document, linker)
    assert all(e["message"] is None for e in again)


def test_a_span_naming_another_session_stays_with_its_trace_and_is_reported():
    """One trace, one session (issue 28): the committer's span names merge-2, but its trace
    named merge-1 first, so it is kept there - its message from the orchestrator with it."""
    other_session = span(COMMIT, T0 + 5 * SECOND, "elsewhere", parent=ROOT)
    other_session["attributes"] = [kv("gen_ai.conversation.id", "merge-2")]
    events, errors = events_from_otlp({"resourceSpans": [
        service("orchestrator", span(ROOT, T0, "propose")), service("committer", other_session)]})
    assert {e["session"] for e in events} == {"merge-1"}
    assert [e["message"]["kind"] for e in events if e["message"]] == ["send", "receive"]
    assert errors == [f"the spans of trace {TRACE} name two sessions, 'merge-1' (named first: "
                      "every span of the trace is kept there) and 'merge-2'; give every span "
                      "of one trace the same session.id"]


def test_bad_links_reject_their_span_only():
    bad = span(CHECK, T0, "bad links")
    bad["links"] = [{"traceId": TRACE, "spanId": "xyz"}]
    worse = span(COMMIT, T0, "worse links")
    worse["links"] = {"traceId": TRACE}
    decoded = decode_traces({"resourceSpans": [service("a", bad, worse, span(ROOT, T0, "ok"))]})
    assert [e["data"]["name"] for e in decoded.events] == ["ok"]
    assert decoded.rejected_spans == 2
    assert "links[0].spanId must be 16 hex digits" in decoded.errors[0]
    assert "links must be an array" in decoded.errors[1]


@pytest.mark.django_db
def test_an_otlp_upload_of_several_services_charts_as_one_session(person):
    content = lines(*[{"resourceSpans": [entry]} for entry in reversed(merge_trace())])
    response = person.upload(content, "otlp", name="spans.jsonl")
    upload = person.get(f"uploads/{response.json()['id']}").json()
    assert (upload["status"], upload["events_stored"], upload["lines_bad"]) == ("parsed", 8, 0)
    session = TraceSession.objects.get(external_id="merge-1")
    rows = list(Event.objects.filter(session=session).order_by("step").values(*EVENT_FIELDS))
    msc, _ = chart_msc(rows)
    assert msc.lifelines == ("orchestrator", "test-runner", "committer")
    assert sorted((msc.events[i].lifeline, msc.events[msc.events[i].partner].lifeline)
                  for i in range(len(msc.events)) if msc.events[i].kind == "send") == [
        ("orchestrator", "test-runner"), ("test-runner", "committer")]
    assert msc.in_transit == []
