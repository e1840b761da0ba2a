"""The online monitor on hand-built runs: clocks, each operator in both readings, errors."""

from __future__ import annotations

import pytest

from studio.causal import CausalMonitor, GuardDecision, MonitorError, parse_cpl
from studio.causal.monitor import Guard


def ev(lifeline, *, send=None, receive=None, to=None, frm=None, choice=None, **data):
    event = {"lifeline": lifeline, "data": data}
    if choice is not None:
        data["choice"] = choice
    if send is not None:
        event["message"] = {"id": send, "peer": to, "kind": "send"}
    if receive is not None:
        event["message"] = {"id": receive, "peer": frm, "kind": "receive"}
    return event


def run(lifelines, guards, events, **options):
    monitor = CausalMonitor(lifelines, guards, **options)
    decisions = [d for e in events for d in monitor.process(e)]
    return monitor, decisions


def values(decisions: list[GuardDecision]) -> list[tuple[bool, bool | None]]:
    return [(d.causal_value, d.sequential_value) for d in decisions]


def test_vector_clocks_after_each_event():
    monitor = CausalMonitor(("A", "B", "C"), {})
    steps = [
        (ev("A"), "A", (1, 0, 0)),
        (ev("A", send="m1", to="B"), "A", (2, 0, 0)),
        (ev("B"), "B", (0, 1, 0)),
        (ev("C", send="m2", to="B"), "C", (0, 0, 1)),
        (ev("B", receive="m2", frm="C"), "B", (0, 2, 1)),   # non-FIFO: m2 before m1
        (ev("B", receive="m1", frm="A"), "B", (2, 3, 1)),
        (ev("B", send="m3", to="A"), "B", (2, 4, 1)),
        (ev("A", receive="m3", frm="B"), "A", (3, 4, 1)),
    ]
    for event, lifeline, clock in steps:
        monitor.process(event)
        assert monitor.clock(lifeline) == clock
    assert monitor.clock("C") == (0, 0, 1)
    assert monitor.log_clock() == (3, 4, 1)
    assert monitor.in_transit == []


def test_at_reads_the_latest_visible_event_not_the_latest_in_the_log():
    guard = {"g": "@B x == 1"}
    _, decisions = run(("A", "B"), guard, [
        ev("B", x=1), ev("B", send="m", to="A"), ev("B", x=2),
        ev("A", receive="m", frm="B"), ev("A", choice="g")])
    assert values(decisions) == [(True, False)]
    assert decisions[0].disagrees
    assert decisions[0].causal_clock == (2, 2) and decisions[0].log_clock == (2, 3)


def test_remote_variables_are_undefined_until_something_is_visible():
    _, decisions = run(("A", "B"), {"g": "B.x != 5", "h": "@B true", "k": "!(B.x == 5)"}, [
        ev("B", x=1), ev("A", choice=["g", "h", "k"])])
    # Causally nothing of B is visible: the atom is false (not "different from 5").
    assert values(decisions) == [(False, True), (False, True), (True, True)]


def test_non_strictness_on_the_owners_own_lifeline():
    _, decisions = run(("A",), {"g": "@A x == 1 & A.x == 1 & P[A] x == 0"}, [
        ev("A", x=0), ev("A", x=1, choice="g")])
    assert values(decisions) == [(True, True)]


def test_previous_and_since_along_the_lifeline():
    guards = {"prev": "Y x == 1", "since": "x != 0 S x == 1", "first": "!Y true"}
    _, decisions = run(("A",), guards, [
        ev("A", x=1, choice=["prev", "since", "first"]),
        ev("A", x=2, choice=["prev", "since", "first"]),
        ev("A", x=0, choice=["prev", "since", "first"]),
        ev("A", x=3, choice=["prev", "since", "first"])])
    assert [d.causal_value for d in decisions] == [
        False, True, True,
        True, True, False,
        False, False, False,
        False, False, False]


def test_since_keeps_each_readings_own_history():
    # At A's second event B.x == 1 held in the log's reading one step earlier but never
    # causally, so the since continues only in the log's reading.
    guard = {"g": "x == 0 S B.x == 1"}
    _, decisions = run(("A", "B"), guard, [
        ev("B", x=1), ev("A", x=0, choice="g"), ev("B", x=2), ev("A", choice="g")])
    assert values(decisions) == [(False, True), (False, True)]


def test_causal_past_looks_through_relayed_messages():
    # C learns of B's event only through A.
    guard = {"g": "P[B] flag & P flag & !P[C] flag"}
    _, decisions = run(("A", "B", "C"), guard, [
        ev("B", flag=True), ev("B", flag=False), ev("B", send="m1", to="A"),
        ev("A", receive="m1", frm="B"), ev("A", send="m2", to="C"),
        ev("C", receive="m2", frm="A"), ev("C", choice="g")])
    assert values(decisions) == [(True, True)]


def test_messages_carry_views_not_just_clocks():
    # The Boolean view of B's event travels B -> A -> C; C evaluates @B without meeting B.
    guard = {"g": "@B (ok S start)"}
    _, decisions = run(("A", "B", "C"), guard, [
        ev("B", start=True, ok=True), ev("B", start=False), ev("B", send="m1", to="A"),
        ev("A", receive="m1", frm="B"), ev("A", send="m2", to="C"), ev("B", ok=False),
        ev("C", receive="m2", frm="A"), ev("C", choice="g")])
    assert values(decisions) == [(True, False)]


def test_comparisons_follow_the_rule_languages_kinds():
    guards = {"one": "x == 1", "truth": "x == true", "order": "x < 2", "text": 'y < "b"',
              "null": "z == null", "ne": "x != 1", "pair": "x == y"}
    names = list(guards)
    _, decisions = run(("A",), guards, [
        ev("A", x=True, y="a", z=None, choice=names), ev("A", x=1.0, y=1, choice=names)])
    assert [d.causal_value for d in decisions] == [
        False, True, False, True, True, True, False,
        True, False, True, False, True, False, True]


def test_guards_given_as_formulas_guards_or_mappings():
    formula = parse_cpl("x == 1")
    guards = [Guard("a", formula), Guard("b", formula, frozenset({"A"}))]
    _, decisions = run(("A",), guards, [ev("A", x=1, choice=["a", "b"])])
    assert values(decisions) == [(True, True), (True, True)]
    _, decisions = run(("A",), {"c": formula, "d": {"cpl": "x == 2", "owner": "A"}},
                       [ev("A", x=1, choice=["c", "d"])])
    assert values(decisions) == [(True, True), (False, False)]


def test_the_causal_only_monitor():
    _, decisions = run(("A", "B"), {"g": "@B x == 1"}, [ev("B", x=1), ev("A", choice="g")],
                       sequential=False)
    assert values(decisions) == [(False, None)] and not decisions[0].disagrees


def test_choices_naming_unknown_guards_are_recorded():
    monitor, decisions = run(("A",), {"g": "true"}, [ev("A", choice=["g", "nope"])])
    assert values(decisions) == [(True, True)]
    assert monitor.unknown_guards == [(0, "nope")]


def test_evaluate_now():
    monitor, _ = run(("A", "B"), {"g": "Y x == 1"}, [ev("A", x=1), ev("A", x=2)])
    assert monitor.evaluate_now("A", "g") == (True, True)
    with pytest.raises(LookupError):
        monitor.evaluate_now("B", "g")


@pytest.mark.parametrize(("events", "text"), [
    ([ev("Z")], "unknown lifeline 'Z'"),
    ([ev("A", receive="m", frm="B")], "receive before its send"),
    ([ev("B", send="m", to="A"), ev("A", receive="m", frm="B"), ev("A", receive="m", frm="B")],
     "received twice"),
    ([ev("B", send="m", to="A"), ev("B", send="m", to="A")], "sent twice"),
    ([ev("B", send="m", to="A"), ev("A", receive="m", frm="B"), ev("B", send="m", to="A")],
     "sent twice"),
    ([ev("B", send="m", to="B"), ev("A", receive="m", frm="B")], "received on 'A'"),
    ([ev("A", choice="owned")], "not owned by this lifeline"),
    ([ev("A", choice=7)], "must name a guard"),
])
def test_monitor_errors_name_the_event(events, text):
    monitor = CausalMonitor(("A", "B"), {"owned": {"cpl": "true", "owner": "B"}})
    with pytest.raises(MonitorError) as info:
        for event in events:
            monitor.process(event)
    assert text in str(info.value)
    assert info.value.index == len(events) - 1


def test_a_refused_event_changes_nothing():
    monitor = CausalMonitor(("A", "B"), {})
    monitor.process(ev("B", send="m", to="A"))
    with pytest.raises(MonitorError):
        monitor.process(ev("B", send="m", to="A"))
    assert monitor.clock("B") == (0, 1)


def test_guards_must_name_monitored_lifelines():
    with pytest.raises(ValueError, match="Tester"):
        CausalMonitor(("A",), {"g": "@Tester x"})
    with pytest.raises(ValueError, match="owned by unknown"):
        CausalMonitor(("A",), {"g": {"cpl": "x", "owner": "Q"}})
    with pytest.raises(ValueError, match="distinct"):
        CausalMonitor(("A", "A"), {})


def test_generated_code_only_embeds_constants_as_literals():
    nasty = 'x == "\\"); import os; os.system(\\"echo\\")"'
    monitor, decisions = run(("A",), {"g": nasty}, [ev("A", x='"); import os; os.system("echo")',
                                                        choice="g")])
    assert values(decisions) == [(True, True)]
    assert "import os" not in monitor.source.replace(repr('"); import os; os.system("echo")'), "")
