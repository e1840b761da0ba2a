"""Violations and residuals in plain language (studio.monitor.explain), on the monitor's own
witnesses: the sentences name the right steps and what happened there, and a residual's reading
says "can no longer be met", "met" or "still owed" exactly when it is false, true or neither."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.wording import explain_rest
from studio.monitor import RuleSet, SessionMonitor
from studio.monitor.explain import explain_violation, residual_reading

from .strategies import formulas, traces

SEND = 'output.tool == "send_money"'
CHECKS = 'output.tool == "get_most_recent_transactions" | output.tool == "get_balance"'


def _violations(formula: str, events: list[dict], counting: str | None = None):
    monitor = SessionMonitor(RuleSet([("rule", formula, counting)]))
    for event in events:
        monitor.feed(event)
    return [v.to_json() for v in monitor.results()[0].violations]


def _tool(name: str) -> dict:
    return {"labels": [], "output": {"tool": name}, "data": {}}


def test_a_payment_before_any_check_names_the_payment_and_the_missing_checks():
    rule = f"!({SEND}) W ({CHECKS})"
    events = [_tool("get_iban"), _tool("send_money"), _tool("get_balance")]
    [v] = _violations(rule, events)
    assert explain_violation(rule, v["trigger"], v["detected"], v["at_end"], v["witness"]) == (
        "Step 1: the agent called send_money; no call to get_balance or "
        "get_most_recent_transactions happened before it.")


def test_a_repeated_payment_counted_after_a_violation_says_where_checking_restarted():
    rule = f"!({SEND}) W ({CHECKS})"
    events = [_tool("send_money"), _tool("get_iban"), _tool("send_money")]
    first, second = _violations(rule, events, "after_violation")
    text = explain_violation(rule, second["trigger"], second["detected"], second["at_end"],
                             second["witness"], "after_violation")
    assert text.startswith("Step 2: the agent called send_money;")
    assert "the rule was checked afresh from step 1" in text


def test_a_response_names_the_trigger_what_was_owed_and_the_step_that_broke_it():
    rule = "G(take -> X examine)"
    events = [{"labels": ["take"]}, {"labels": ["drop"]}]
    [v] = _violations(rule, events)
    assert explain_violation(rule, v["trigger"], v["detected"], v["at_end"], v["witness"]) == (
        "Step 0: the step was labelled take, so the rule then required: the next step is "
        "labelled examine. Step 1: no step labelled examine happened, so that can no longer "
        "be met.")


def test_an_obligation_the_end_of_the_session_leaves_unmet_says_the_session_ended():
    rule = "G(take -> X examine)"
    [v] = _violations(rule, [{"labels": []}, {"labels": ["take"]}])
    assert v["at_end"]
    text = explain_violation(rule, v["trigger"], v["detected"], v["at_end"], v["witness"])
    assert text == ("Step 1: the step was labelled take, so the rule then required: the next "
                    "step is labelled examine. The session ended at step 1 without that.")


def test_a_forbidden_step_says_what_happened_and_that_the_rule_never_allows_it():
    rule = 'G !(go & data.room == "kitchen")'
    events = [{"labels": ["go"], "data": {"room": "hall"}},
              {"labels": ["go"], "data": {"room": "kitchen"}}]
    [v] = _violations(rule, events)
    text = explain_violation(rule, v["trigger"], v["detected"], v["at_end"], v["witness"])
    assert text.startswith("Step 1: ") and text.endswith("which the rule never allows.")
    assert "the step was labelled go" in text and 'room (data.room) was "kitchen"' in text


def test_built_in_atoms_read_as_what_the_agent_did():
    for atom, words in (("tool_call:send_money", "the agent called send_money"),
                        ("stop_reason:max_tokens", "the agent stopped (max_tokens)"),
                        ("role:user", "the step was a user message"),
                        ("role:assistant", "the step was an assistant message")):
        rule = f'G !"{atom}"' if ":" in atom else f"G !{atom}"
        [v] = _violations(rule, [{"labels": [atom]}])
        assert explain_violation(rule, 0, 0, False, v["witness"]) == (
            f"Step 0: {words}, which the rule never allows.")


def test_residual_readings_replace_the_jargon():
    assert residual_reading("false", since=4) == "can no longer be met (since step 4)"
    assert residual_reading("true") == "met, nothing more is required"
    assert residual_reading("F[0,3] use_knife") == (
        "still owed: one of the steps 0 to 3 steps after the next step is labelled use_knife "
        "(at a step the session reaches).")
    assert residual_reading("examine") == "still owed: the next step is labelled examine."
    assert residual_reading("G !tool_call:delete") == (
        "still owed: from the next step on, never: the agent calls delete.")


def test_a_residual_is_read_from_the_next_step_not_the_first():
    # The rule "G !drop" reads "Never: ..."; what a session still owes after a step starts at
    # the next one.
    assert explain_rest("G !drop") == "From the next step on, never: a step is labelled drop."
    assert explain_rest("X examine").startswith(
        "The step after the next one is labelled examine")


@settings(max_examples=300, deadline=None)
@given(formulas(3), traces, st.sampled_from([None, "first", "every_verdict"]))
def test_every_violation_the_monitor_finds_gets_a_sentence_naming_its_detection_step(
        f, trace, counting):
    if counting is None and f.op != "G":
        counting = "after_violation"
    try:
        violations = _violations(f.text, trace, counting)
    except ValueError:  # a counting the rule does not allow
        return
    for v in violations:
        text = explain_violation(f.text, v["trigger"], v["detected"], v["at_end"],
                                 v["witness"], counting)
        assert re.search(rf"\bstep {v['detected']}\b", text, re.IGNORECASE), text
        assert text.endswith(".") and "Residual" not in text


@settings(max_examples=200, deadline=None)
@given(formulas(3))
def test_a_residual_reading_says_met_or_no_longer_exactly_for_the_constants(f):
    reading = residual_reading(f.text, since=2)
    assert reading.startswith("can no longer be met") == (f is fm.FALSE)
    assert (reading == "met, nothing more is required") == (f is fm.TRUE)
    if f not in (fm.TRUE, fm.FALSE):
        assert reading.startswith("still owed: ")


def test_a_violation_keeps_the_exception_of_the_rule_condition():
    # "Whenever a refund is made with no approval before it, it must be escalated": the
    # sentence names the exception, not every refund.
    rule = "G((refund & !O approve) -> X escalate)"
    [v] = _violations(rule, [{"labels": ["start"]}, {"labels": ["refund"]},
                             {"labels": ["other"]}])
    assert explain_violation(rule, v["trigger"], v["detected"], v["at_end"], v["witness"]) == (
        "Step 1: the step was labelled refund with no step labelled approve at or before it, "
        "so the rule then required: the next step is labelled escalate. Step 2: no step "
        "labelled escalate happened, so that can no longer be met.")


def test_a_violation_keeps_an_unless_written_as_an_alternative():
    # "... escalated next, unless approved before": the same exception, written in the
    # consequence, which the residual after the trigger no longer shows.
    rule = "G(refund -> (X escalate | O approve))"
    [v] = _violations(rule, [{"labels": ["refund"]}, {"labels": ["other"]}])
    text = explain_violation(rule, v["trigger"], v["detected"], v["at_end"], v["witness"])
    assert text.startswith("Step 0: the step was labelled refund with no step labelled "
                           "approve at or before it, so the rule then required:")
    # A plain condition reads as before: nothing is added.
    plain = "G(take -> X examine)"
    [v] = _violations(plain, [{"labels": ["take"]}, {"labels": ["drop"]}])
    assert "with no" not in explain_violation(plain, v["trigger"], v["detected"], v["at_end"],
                                              v["witness"])
