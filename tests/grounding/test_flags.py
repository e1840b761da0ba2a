"""What a reading would flag on stored sessions, checked against the finite-trace evaluator,
and when it would never fire.  No database."""

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.grounding.flags import EVERY_SESSION, NEVER_FIRES, reading_flags, trigger_of
from studio.labeling import Labeling
from studio.logic.finite import holds
from studio.logic.parser import parse

LABEL = Labeling([]).label


def refund(amount):
    return {"output": {"tool": "issue_refund", "args": {"amount": amount}}, "data": {}}


def message(text="ok"):
    return {"output": text, "data": {"role": "assistant"}}


def approval():
    return {"output": {"tool": "get_approval", "args": {}}, "data": {}}


def test_flags_the_sessions_the_audit_would_flag_with_where():
    rule = parse("G !(tool_call:issue_refund & output.args.amount > 500 & "
                 "!O tool_call:get_approval)")
    sessions = [("big", [message(), refund(800)]), ("small", [refund(100)]),
                ("approved", [approval(), refund(900)])]
    [flags] = reading_flags([rule], sessions, LABEL)
    assert (flags.flagged, flags.sampled, flags.fired) == (1, 3, 2)
    assert [(e.session, e.step) for e in flags.examples] == [("big", 1)]
    assert flags.kind == "" and "1 of the 3 newest" in flags.summary


def test_a_reading_whose_trigger_never_occurs_says_it_would_never_fire():
    rule = parse("G !(tool_call:issue_refund & data.env.amount > 500)")
    sessions = [("a", [refund(800)]), ("b", [message()])]
    [flags] = reading_flags([rule], sessions, LABEL, describe=lambda f: f.text)
    assert flags.kind == NEVER_FIRES and flags.flagged == 0
    assert "never fire" in flags.note
    assert "it applies when data.env.amount > 500 & tool_call:issue_refund" in flags.note
    assert ("Taken apart: data.env.amount > 500: in no session; tool_call:issue_refund: in 1 "
            "session.") in flags.note


def test_a_reading_that_flags_every_session_says_so():
    [flags] = reading_flags([parse("F tool_call:escalate")], [("a", [message()]),
                                                               ("b", [refund(1)])], LABEL)
    assert flags.kind == EVERY_SESSION and flags.flagged == 2


def test_no_sessions_is_said_not_counted():
    [flags] = reading_flags([parse("G !a")], [], LABEL)
    assert flags.sampled == 0 and "upload a log" in flags.note


def test_triggers():
    assert trigger_of(parse("G (a & b -> O c)")) == parse("a & b")
    assert trigger_of(parse("G !(a & x > 5 & !O c)")) == parse("a & x > 5")
    assert trigger_of(parse("G !a")) == parse("a")
    assert trigger_of(parse("F a")) is None


ATOMS = ("a", "b", "c")
steps = st.lists(st.frozensets(st.sampled_from(ATOMS)), min_size=1, max_size=6)
RULES = [parse(t) for t in ("G (a -> F b)", "G !(a & !O b)", "G (a -> WX c)", "F c",
                            "G (a -> b U c)", "!a W b")]


@given(st.lists(steps, min_size=1, max_size=5))
@settings(max_examples=60, deadline=None)
def test_flagged_exactly_where_the_finite_trace_evaluator_says_violated(sessions):
    named = [(f"s{i}", [{"labels": sorted(letter), "data": {}} for letter in trace])
             for i, trace in enumerate(sessions)]
    found = reading_flags(RULES, named, examples=None)
    for rule, flags in zip(RULES, found):
        expected = {f"s{i}" for i, trace in enumerate(sessions)
                    if not holds(rule, [(letter, {}) for letter in trace])}
        assert set(flags.flagged_sessions) == expected, rule.text
