"""Building MSCs from canonical events: structure, vector clocks, errors naming events."""

from __future__ import annotations

import pytest

from studio.causal import MscError, build_msc, causal_past


def ev(lifeline, *, send=None, receive=None, to=None, frm=None, step=None, ts=None, **data):
    event = {"session": "s", "lifeline": lifeline, "data": data}
    if step is not None:
        event["step"] = step
    if ts is not None:
        event["timestamp"] = ts
    if send is not None:
        event["message"] = {"id": send, "peer": to, "kind": "send"}
    if receive is not None:
        event["message"] = {"id": receive, "peer": frm, "kind": "receive"}
    return event


# A: a1 --m1--> B: b1 (receive), b2 --m2--> A (received at a3); m3 from B stays in transit.
EXAMPLE = [
    ev("A", x=1),                             # 0  a1
    ev("A", send="m1", to="B"),               # 1  a2
    ev("B", y=5),                             # 2  b1
    ev("B", receive="m1", frm="A"),           # 3  b2
    ev("B", send="m2", to="A"),               # 4  b3
    ev("A", x=2),                             # 5  a3
    ev("A", receive="m2", frm="B"),           # 6  a4
    ev("B", send="m3", to="A"),               # 7  b4
    ev("C", choice="g"),                      # 8  c1
]


def test_events_lifelines_positions_and_kinds():
    msc = build_msc(EXAMPLE)
    assert msc.lifelines == ("A", "B", "C")
    assert [e.position for e in msc.events] == [1, 2, 1, 2, 3, 3, 4, 4, 1]
    assert [e.kind for e in msc.events] == ["local", "send", "local", "receive", "send", "local",
                                            "receive", "send", "choice"]
    assert msc.events[1].partner == 3 and msc.events[3].partner == 1
    assert msc.events[4].partner == 6 and msc.events[7].partner is None
    assert msc.in_transit == [7]
    assert msc.choices == [8]
    assert msc.events[8].guards == ("g",)


def test_valuations_accumulate_the_lifelines_store():
    msc = build_msc(EXAMPLE)
    assert msc.events[0].valuation == {"x": 1}
    assert msc.events[1].valuation == {"x": 1}           # a send keeps the store
    assert msc.events[5].valuation == {"x": 2}
    assert msc.events[4].valuation == {"y": 5}
    assert msc.events[5].data == {"x": 2}


def test_vector_clocks_on_the_hand_example():
    msc = build_msc(EXAMPLE)
    clocks = [msc.vector_clock(i) for i in range(len(msc))]
    assert clocks == [
        (1, 0, 0),   # a1
        (2, 0, 0),   # a2
        (0, 1, 0),   # b1
        (2, 2, 0),   # b2 merges a2's clock
        (2, 3, 0),   # b3
        (3, 0, 0),   # a3: nothing of B yet
        (4, 3, 0),   # a4 merges b3's clock
        (2, 4, 0),   # b4
        (0, 0, 1),   # c1
    ]
    assert causal_past(msc, 6) == {0, 1, 2, 3, 4, 5, 6}
    assert causal_past(msc, 5) == {0, 1, 5}
    assert causal_past(msc, 7) == {0, 1, 2, 3, 4, 7}
    assert msc.latest_visible(6, "B") == 4 and msc.latest_visible(5, "B") is None
    assert msc.happens_before(1, 3) and not msc.happens_before(5, 4)


def test_flat_message_fields_as_stored_in_the_database():
    rows = [
        {"lifeline": "A", "message_id": "m", "message_peer": "B", "message_kind": "send",
         "data": {}},
        {"lifeline": "B", "message_id": "m", "message_peer": "A", "message_kind": "receive",
         "data": {}},
        {"lifeline": "B", "message_id": "", "message_peer": "", "message_kind": "", "data": {}},
    ]
    msc = build_msc(rows)
    assert [e.kind for e in msc.events] == ["send", "receive", "local"]
    assert msc.vector_clock(1) == (1, 1)


def test_a_receive_may_come_before_its_send_in_the_input():
    # The input order need not be causal; the MSC is the same and linearisation fixes the order.
    msc = build_msc([ev("B", receive="m", frm="A"), ev("A", send="m", to="B")])
    assert msc.vector_clock(0) == (1, 1)   # lifelines in order of appearance: B, A
    assert msc.linearisation() == [1, 0]
    assert not msc.is_log_order_causal()


def test_log_order_follows_timestamps_and_linearisation_follows_the_log_where_it_can():
    events = [ev("A", ts=5), ev("B", ts=1), ev("A", ts=7), ev("B", ts=6)]
    msc = build_msc(events)
    assert msc.log_order() == [1, 0, 3, 2]
    assert msc.linearisation() == [1, 0, 3, 2]
    assert msc.is_log_order_causal()


def test_lifelines_can_be_given_and_may_be_idle():
    msc = build_msc([ev("A")], lifelines=["Z", "A"])
    assert msc.lifelines == ("Z", "A")
    assert msc.vector_clock(0) == (0, 1)


def problem(events) -> MscError:
    with pytest.raises(MscError) as info:
        build_msc(events)
    return info.value


def test_receive_without_its_send_names_the_event():
    err = problem([ev("A", step=0), ev("B", receive="m9", frm="A", step=1)])
    assert (err.index, err.step, err.lifeline, err.message_id) == (1, 1, "B", "m9")
    assert "receive without its send" in err.message
    assert "event 1" in str(err) and "'B'" in str(err) and "'m9'" in str(err)


def test_duplicate_send_and_receive():
    err = problem([ev("A", send="m", to="B"), ev("A", send="m", to="B"),
                   ev("B", receive="m", frm="A")])
    assert err.index == 1 and "sent twice" in err.message and "event 0" in err.message
    err = problem([ev("A", send="m", to="B"), ev("B", receive="m", frm="A"),
                   ev("B", receive="m", frm="A")])
    assert err.index == 2 and "received twice" in err.message


def test_peers_must_agree_with_the_matched_event():
    err = problem([ev("A", send="m", to="C"), ev("B", receive="m", frm="A")])
    assert err.index == 1 and "sent (event 0) to 'C'" in err.message
    err = problem([ev("A", send="m", to="B"), ev("B", receive="m", frm="C")])
    assert err.index == 1 and "names sender 'C'" in err.message


def test_causal_cycle_is_reported_with_its_events():
    # A receives m1 then sends m2; B receives m2 then sends m1: each waits for the other.
    err = problem([ev("A", receive="m1", frm="B"), ev("A", send="m2", to="B"),
                   ev("B", receive="m2", frm="A"), ev("B", send="m1", to="A")])
    assert err.index == 0 and err.lifeline == "A" and err.message_id == "m1"
    assert err.message.startswith("causal cycle: event 0 on A (receive m1) -> event 1 on A "
                                  "(send m2) -> event 2 on B (receive m2) -> event 3 on B "
                                  "(send m1) -> event 0")


def test_self_message_received_before_it_is_sent_is_a_cycle():
    err = problem([ev("A", receive="m", frm="A"), ev("A", send="m", to="A")])
    assert "causal cycle" in err.message


def test_a_lifeline_going_backwards_in_steps_or_time():
    err = problem([ev("A", step=5), ev("B", step=2), ev("A", step=3)])
    assert err.index == 2 and err.step == 3 and "goes backwards" in err.message
    assert "step 3 comes after step 5 (event 0)" in err.message
    err = problem([ev("A", ts="2026-01-01T10:00:05Z"), ev("A", ts="2026-01-01T10:00:04+00:00")])
    assert err.index == 1 and "goes backwards" in err.message and "timestamp" in err.message
    # Other lifelines may be earlier: only each lifeline's own order matters.
    build_msc([ev("A", ts=10), ev("B", ts=3)])


def test_steps_are_unique_and_sessions_single():
    err = problem([ev("A", step=1), ev("B", step=1)])
    assert err.index == 1 and "also the step of event 0" in err.message
    events = [ev("A"), dict(ev("B"), session="other")]
    err = problem(events)
    assert err.index == 1 and "several sessions" in err.message


def test_malformed_events():
    assert "no lifeline" in problem([{"data": {}}]).message
    assert "kind must be" in problem([{"lifeline": "A", "message": {"id": "m",
                                                                   "kind": "sent"}}]).message
    assert "no id" in problem([{"lifeline": "A", "message": {"kind": "send"}}]).message
    assert "choice" in problem([{"lifeline": "A", "data": {"choice": 3}}]).message
    err = problem([{"lifeline": "A", "data": {"choice": "g"},
                   "message": {"id": "m", "peer": "B", "kind": "send"}}])
    assert "cannot also send or receive" in err.message
    assert "bad timestamp" in problem([ev("A", ts="yesterday")]).message


def test_every_problem_is_listed():
    err = problem([ev("B", receive="x", frm="A"), ev("B", receive="y", frm="A")])
    assert [p.index for p in err.problems] == [0, 1]
    assert "and 1 more problem" in str(err)


def test_timestamps_as_datetimes_strings_or_numbers():
    from datetime import UTC, datetime, timedelta
    start = datetime(2026, 1, 15, 10, tzinfo=UTC)
    events = [ev("A", ts=start + timedelta(seconds=5)), ev("B", ts="2026-01-15T10:00:01Z"),
              ev("C", ts=start.timestamp() + 3)]
    assert build_msc(events).log_order() == [1, 2, 0]
    # Without a timestamp on every event the log order is the input order.
    assert build_msc(events + [ev("A")]).log_order() == [0, 1, 2, 3]
