"""One trace, one session (issue 28): spans that arrive at /v1/traces before the span naming
their trace's session are moved into it, their verdicts recomputed; a trace naming two
sessions is answered and shown, not split.  OTLP JSON posted over HTTP (Django's client), the
monitors checked against the pure monitor over the stored events."""

from __future__ import annotations

import io
import json

import pytest
from django.db import connection, connections  # noqa: F401 - connection: the skipif reads it
from django.test import Client

from studio.live.ingest import clear_caches, ingest
from studio.traces.erasure import erase_session
from studio.traces.formats.otlp_files import parse_otlp
from studio.traces.models import Event, TraceSession, TraceSessionLink
from tests.live.test_concurrency import race
from tests.live.test_services import offline, states_of

T1 = "0af7651916cd43dd8448eb211c80319c"
T2 = "4bf92f3577b34da6a3ce929d0e0e4736"
BASE = 1_760_000_000_000_000_000
MS = 1_000_000


def kv(key, value):
    return {"key": key, "value": {"stringValue": value}}


def tool_span(span_id, at, tool, args, *, trace=T1, session=None, parent=None):
    attrs = [kv("openinference.span.kind", "TOOL"), kv("tool.name", tool),
             kv("input.value", json.dumps(args)), kv("input.mime_type", "application/json")]
    if session:
        attrs.append(kv("session.id", session))
    out = {"traceId": trace, "spanId": span_id, "name": tool, "kind": 1,
           "startTimeUnixNano": str(BASE + at * MS), "endTimeUnixNano": str(BASE + at * MS + 5),
           "attributes": attrs}
    if parent:
        out["parentSpanId"] = parent
    return out


def root_span(span_id, at, *, trace=T1, session=None):
    attrs = [kv("openinference.span.kind", "AGENT"), kv("input.value", "ship my order")]
    if session:
        attrs.append(kv("session.id", session))
    return {"traceId": trace, "spanId": span_id, "name": "agent", "kind": 1,
            "startTimeUnixNano": str(BASE + at * MS), "endTimeUnixNano": str(BASE + 99 * MS),
            "attributes": attrs}


def document(*spans):
    return {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "shop")]},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def export(token, *spans):
    response = Client().post("/v1/traces", data=json.dumps(document(*spans)),
                             content_type="application/json",
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.content
    return response.json()


def stored(session: str) -> list[dict]:
    return list(Event.objects.filter(session__external_id=session).order_by("step").values(
        "step", "event_id", "input", "output", "data", "labels"))


def monitored(workspace, session: str) -> dict:
    """The session's monitors now (an empty delivery brings them up to date and answers)."""
    return states_of(ingest(workspace, session, []))


@pytest.mark.django_db
@pytest.mark.parametrize("fresh_process", [False, True])
def test_spans_before_the_naming_span_are_moved_into_its_session(workspace, token,
                                                                  fresh_process):
    # The tools end (and are exported) before the agent span that names the session.
    assert export(token, tool_span("1000000000000001", 10, "ship", {"order": 7}),
                  tool_span("1000000000000002", 20, "delete", {"order": 7})) == {}
    assert [e["event_id"] for e in stored(T1)] == ["1000000000000001", "1000000000000002"]
    assert monitored(workspace, T1)["pay_before_ship"][0] == "violated"
    link = TraceSessionLink.objects.get(trace_id=T1)
    assert (link.session, link.named) == (T1, False)
    if fresh_process:
        clear_caches()

    assert export(token, root_span("1000000000000000", 0, session="conv-x"),
                  tool_span("1000000000000003", 30, "pay", {"amount": 5})) == {}
    events = stored("conv-x")
    # The moved spans first, in the order they were stored, then the batch in time order.
    assert [e["event_id"] for e in events] == ["1000000000000001", "1000000000000002",
                                               "1000000000000000", "1000000000000003"]
    assert [e["step"] for e in events] == [0, 1, 2, 3]
    assert not TraceSession.objects.filter(external_id=T1).exists()  # no verdict left there
    link.refresh_from_db()
    assert (link.session, link.named, link.conflicts) == ("conv-x", True, [])
    session = TraceSession.objects.get(external_id="conv-x")
    assert session.steps == 4
    _, expected = offline(events)
    assert monitored(workspace, "conv-x") == expected
    assert expected["pay_before_ship"][0] == "violated" and expected["no_delete"][2] == 1

    # A later batch of the trace, naming nothing, finds the session.
    export(token, tool_span("1000000000000004", 40, "ship", {"order": 8}))
    assert [e["event_id"] for e in stored("conv-x")][-1] == "1000000000000004"
    assert not TraceSession.objects.filter(external_id=T1).exists()


@pytest.mark.django_db
def test_moved_spans_go_after_what_the_named_session_holds(workspace, token):
    export(token, root_span("2000000000000000", 0, trace=T2, session="conv-y"),
           tool_span("2000000000000001", 1, "pay", {"amount": 3}, trace=T2))
    export(token, tool_span("1000000000000001", 10, "ship", {"order": 7}))  # trace 1, unnamed
    export(token, root_span("1000000000000000", 0, session="conv-y"))
    assert [e["event_id"] for e in stored("conv-y")] == [
        "2000000000000000", "2000000000000001", "1000000000000001", "1000000000000000"]
    _, expected = offline(stored("conv-y"))
    assert monitored(workspace, "conv-y") == expected
    assert expected["pay_before_ship"][0] == "satisfied"  # pay came first, in trace 2


@pytest.mark.django_db
def test_a_trace_naming_two_sessions_is_answered_and_shown_not_split(workspace, token, owner):
    answer = export(token, root_span("1000000000000000", 0, session="conv-a"),
                    tool_span("1000000000000001", 10, "ship", {"order": 7}, session="conv-b"))
    assert answer["partialSuccess"]["rejectedSpans"] == "0"
    message = answer["partialSuccess"]["errorMessage"]
    assert "'conv-a'" in message and "'conv-b'" in message and T1 in message
    assert [e["event_id"] for e in stored("conv-a")] == ["1000000000000000", "1000000000000001"]
    assert not TraceSession.objects.filter(external_id__in=["conv-b", T1]).exists()
    assert TraceSessionLink.objects.get(trace_id=T1).conflicts == ["conv-b"]

    # A later batch naming the other session again: kept with its trace, answered again.
    again = export(token, tool_span("1000000000000002", 20, "pay", {"amount": 1},
                                    session="conv-b"))
    assert "'conv-b'" in again["partialSuccess"]["errorMessage"]
    assert len(stored("conv-a")) == 3
    assert TraceSessionLink.objects.get(trace_id=T1).conflicts == ["conv-b"]

    # The session's API answer and page name both sessions.
    session = TraceSession.objects.get(external_id="conv-a")
    client = Client()
    client.force_login(owner)
    detail = client.get(f"/api/w/{workspace.slug}/sessions/{session.pk}").json()
    assert len(detail["warnings"]) == 1
    assert "'conv-a'" in detail["warnings"][0] and "'conv-b'" in detail["warnings"][0]
    page = client.get(f"/w/{workspace.slug}/sessions/{session.pk}/").content.decode()
    assert "Traces that named two sessions" in page and "&#x27;conv-b&#x27;" in page


@pytest.mark.django_db
def test_a_session_with_no_conflict_has_no_warning(workspace, token, owner):
    export(token, root_span("1000000000000000", 0, session="conv-a"))
    client = Client()
    client.force_login(owner)
    session = TraceSession.objects.get(external_id="conv-a")
    assert client.get(f"/api/w/{workspace.slug}/sessions/{session.pk}").json()["warnings"] == []
    assert "Traces that named two sessions" not in client.get(
        f"/w/{workspace.slug}/sessions/{session.pk}/").content.decode()


@pytest.mark.django_db
def test_erasing_a_session_forgets_which_traces_went_to_it(workspace, token):
    """The trace's link names the session (maybe a person's conversation id): nothing of an
    erased session stays behind; the other session's link stays."""
    export(token, root_span("1000000000000000", 0, session="conv-erase"),
           tool_span("1000000000000001", 1, "ship", {"order": 7}))
    export(token, root_span("2000000000000000", 0, trace=T2, session="conv-keep"))
    assert set(TraceSessionLink.objects.values_list("session", flat=True)) == {
        "conv-erase", "conv-keep"}
    erase_session(TraceSession.objects.get(external_id="conv-erase"))
    assert list(TraceSessionLink.objects.values_list("session", flat=True)) == ["conv-keep"]
    assert not TraceSession.objects.filter(external_id="conv-erase").exists()


@pytest.mark.django_db
def test_a_trace_id_session_holding_other_events_keeps_them_in_a_new_row(workspace, token):
    # A span of another trace names, as its session, trace 1's id (odd, but possible).
    export(token, tool_span("2000000000000001", 1, "pay", {"amount": 3}, trace=T2, session=T1))
    export(token, tool_span("1000000000000001", 10, "ship", {"order": 7}))
    old = TraceSession.objects.get(external_id=T1)
    assert old.steps == 2
    export(token, root_span("1000000000000000", 0, session="conv-x"))
    left = TraceSession.objects.get(external_id=T1)
    assert left.pk != old.pk and left.steps == 1
    assert [e["event_id"] for e in stored(T1)] == ["2000000000000001"]
    assert [e["event_id"] for e in stored("conv-x")] == ["1000000000000001", "1000000000000000"]
    _, expected = offline(stored(T1))
    assert monitored(workspace, T1) == expected


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="needs Postgres row locks")
def test_two_batches_of_one_trace_at_once_end_in_one_session(workspace, token):
    """The unnamed batch and the naming batch of each trace race; whichever wins, every span
    of the trace ends in the named session and no trace-id session is left."""
    traces = [f"{n:032x}" for n in range(1, 7)]

    def send(i):
        trace = traces[i // 2]
        ids = [f"{i // 2 + 1:015x}{n}" for n in (1, 2, 3)]  # span ids are unique: event ids
        if i % 2:
            return export(token, root_span(ids[0], 0, trace=trace,
                                           session=f"conv-{trace[-2:]}"))
        return export(token, tool_span(ids[1], 10, "ship", {"order": i}, trace=trace),
                      tool_span(ids[2], 20, "pay", {"amount": i}, trace=trace))

    try:
        race(send, count=2 * len(traces))
    finally:
        connections.close_all()
    for trace in traces:
        events = stored(f"conv-{trace[-2:]}")
        assert sorted(e["data"]["span_id"][-1] for e in events) == ["1", "2", "3"]
        assert not TraceSession.objects.filter(external_id=trace).exists()
        clear_caches()
        _, expected = offline(events)
        assert monitored(workspace, f"conv-{trace[-2:]}") == expected


def test_a_file_keeps_each_trace_in_the_session_its_first_naming_span_names():
    lines = [document(tool_span("1000000000000001", 10, "ship", {"order": 7})),
             document(root_span("1000000000000000", 0, session="conv-x")),
             document(tool_span("1000000000000002", 20, "pay", {"amount": 1},
                                session="conv-z")),
             document(tool_span("2000000000000001", 1, "pay", {"amount": 3}, trace=T2))]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    items = list(parse_otlp(io.BytesIO(body)))
    events = [i for i in items if isinstance(i, dict)]
    errors = [i for i in items if not isinstance(i, dict)]
    assert [(e["event_id"], e["session"]) for e in events] == [
        ("1000000000000001", "conv-x"), ("1000000000000000", "conv-x"),
        ("1000000000000002", "conv-x"), ("2000000000000001", T2)]
    assert [(e.line, "'conv-x'" in e.reason and "'conv-z'" in e.reason) for e in errors] == [
        (3, True)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="needs Postgres row locks")
def test_a_naming_batch_waits_for_an_unnamed_batch_of_its_trace(workspace, token, monkeypatch):
    """The unnamed batch is slowed between choosing the trace-id session and storing in it; the
    naming batch, sent meanwhile, waits for it (the trace's row lock) and then moves its spans.
    Without the lock it would store beside it, and the trace would be split."""
    import threading
    import time

    from studio.live import otlp_sessions

    real_ingest = otlp_sessions.ingest
    chosen = threading.Event()

    def slow_ingest(workspace, session, *args, **kwargs):
        if session == T1:
            chosen.set()  # the trace-id session is chosen, the trace's row locked
            time.sleep(0.5)
        return real_ingest(workspace, session, *args, **kwargs)

    monkeypatch.setattr(otlp_sessions, "ingest", slow_ingest)
    errors = []

    def run(*spans):
        try:
            export(token, *spans)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    unnamed = threading.Thread(target=run, args=(
        tool_span("1000000000000001", 10, "ship", {"order": 7}),))
    naming = threading.Thread(target=run, args=(root_span("1000000000000000", 0,
                                                          session="conv-x"),))
    unnamed.start()
    assert chosen.wait(10)
    naming.start()
    unnamed.join(10)
    naming.join(10)
    assert not errors, errors
    assert [e["event_id"] for e in stored("conv-x")] == ["1000000000000001", "1000000000000000"]
    assert not TraceSession.objects.filter(external_id=T1).exists()
