"""Plain words in every reading (issue 23, part 5): ``studio.logic.wording.explain`` speaks of the
workspace's own events - "the agent calls issue_refund", "a step labelled contains_card_number",
"amount (output.args.amount) is over 500" - never of formulas ("tool_call:X holds", "it is not
the case that"), and it stays exact: negations are pushed inward by LTLf equivalences that the
finite-trace oracle checks here, strict "before" is kept apart from "at this step or an earlier
one", and a next step that must exist from one that may not.  No database.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings

from studio.logic import formula as fm
from studio.logic.finite import evaluate
from studio.logic.formula import Formula
from studio.logic.parser import parse
from studio.logic.progression import nnf
from studio.logic.wording import (
    IMPOSSIBLE,
    NOTHING_REQUIRED,
    _tidy,
    clause,
    explain,
    explain_rest,
    happened,
    noun,
    push_negation,
)
from tests.logic.strategies import events, formulas, to_trace

# Typical rules, by shape, with their English (each checked by hand against the semantics).
READINGS = [
    # Never
    ("G !tool_call:delete_account",
     "Never: the agent calls delete_account."),
    ('G !"stop_reason:max_tokens"',
     "Never: the agent stops (max_tokens)."),
    ("G !(tool_call:send_email & contains_card_number)",
     "Never: the agent calls send_email and the step is labelled contains_card_number."),
    # An invariant reads from its normal form: as G(refund & amount > 500 -> O approval).
    ("G !(tool_call:issue_refund & output.args.amount > 500 & !O manager_approval)",
     "Whenever the agent calls issue_refund with amount (output.args.amount) over 500, a step "
     "labelled manager_approval must have happened at this step or an earlier one."),
    ("G !(role:assistant & contains_card_number)",
     "Never: a step is an assistant message and it is labelled contains_card_number."),
    # Response (strong and weak next: what the end of the session does to them)
    ("G (tool_call:issue_refund -> F tool_call:notify_customer)",
     "Whenever the agent calls issue_refund, the agent must call notify_customer at this "
     "step or a later one."),
    ("G (role:user -> F role:assistant)",
     "Whenever a step is a user message, this step or a later one must be an assistant "
     "message."),
    ("G (tool_call:take -> X tool_call:examine)",
     "Whenever the agent calls take, the agent must call examine at the next step (the "
     "session must not end before it)."),
    ("G (tool_call:take -> WX tool_call:examine)",
     "Whenever the agent calls take, the agent must call examine at the next step (if the "
     "session reaches it)."),
    # Precedence: strict "before", "at this step or an earlier one", the step before
    ("!tool_call:send_money W tool_call:verify_identity",
     "No call to send_money before the first call to verify_identity (and none at all if "
     "that never happens)."),
    ("!tool_call:send_money W (tool_call:verify_identity & !tool_call:send_money)",
     "No call to send_money before the first step where the agent calls verify_identity "
     "and the agent does not call send_money (and none at all if that never happens)."),
    ("G (tool_call:send_money -> O tool_call:get_balance)",
     "Whenever the agent calls send_money, a call to get_balance must have happened at "
     "this step or an earlier one."),
    ("G (tool_call:send_money -> Y tool_call:get_balance)",
     "Whenever the agent calls send_money, a call to get_balance must have happened at "
     "the previous step (there must be one)."),
    ("!tool_call:ship U tool_call:pay",
     "No call to ship before the first call to pay, and a call to pay must happen at some "
     "step."),
    # Bounded response
    ("G (tool_call:escalate -> F[1,3] tool_call:notify_manager)",
     "Whenever the agent calls escalate, the agent must call notify_manager within 1 to 3 "
     "steps after this step (at a step the session reaches)."),
    ("G (tool_call:escalate -> F[2,2] tool_call:notify_manager)",
     "Whenever the agent calls escalate, the agent must call notify_manager exactly 2 "
     "steps after this step (the session must not end before it)."),
    ("G (tool_call:lock -> G[1,3] !tool_call:transfer)",
     "Whenever the agent calls lock, no call to transfer may happen 1 to 3 steps after "
     "this step."),
    # Until, since, release
    ("G (tool_call:open_ticket -> (!tool_call:close_ticket U tool_call:resolve))",
     "Whenever the agent calls open_ticket, from this step on, no call to close_ticket "
     "before the first call to resolve, and a call to resolve must happen at this step or "
     "a later one."),
    ("G (tool_call:refund -> (tool_call:refund_pending S tool_call:approve))",
     "Whenever the agent calls refund, the agent calls approve at this step or an earlier "
     "one, and the agent calls refund_pending at every step after that up to and "
     "including this step."),
    ("tool_call:resolve R !tool_call:close_ticket",
     "At every step up to and including the first call to resolve (at every step if there "
     "is none): the agent does not call close_ticket."),
    # At most once
    ("G (tool_call:issue_refund -> WX G !tool_call:issue_refund)",
     "Whenever the agent calls issue_refund, no call to issue_refund may happen at any "
     "later step."),
    ("G !(tool_call:issue_refund & Y O tool_call:issue_refund)",
     "Never: the agent calls issue_refund when a call to issue_refund has happened before "
     "this step."),
    # Data comparisons (a missing value makes a comparison false: `!=` says so when denied)
    ("G (output.args.amount > 10000 -> O tool_call:manager_approval)",
     "Whenever amount (output.args.amount) is over 10000, a call to manager_approval must "
     "have happened at this step or an earlier one."),
    ('G (output.tool == "send_money" -> data.status == "verified")',
     "Whenever the agent calls send_money (output.tool), status (data.status) must be "
     '"verified".'),
    ("G (data.retries <= 3)",
     "Retries (data.retries) is at most 3 at every step."),
    ('G (data.currency != "USD" -> F tool_call:convert)',
     'Whenever currency (data.currency) differs from "USD", the agent must call convert '
     "at this step or a later one."),
    # prev
    ("G (data.balance < prev(data.balance) -> F tool_call:alert)",
     "Whenever balance (data.balance) is under the previous step's balance "
     "(data.balance), the agent must call alert at this step or a later one."),
    ("G !(data.balance == prev(data.balance) & tool_call:withdraw)",
     "Never: the agent calls withdraw and balance (data.balance) equals the previous "
     "step's balance (data.balance)."),
    # Nested negation, pushed inward
    ("!F tool_call:delete_account",
     "Never: the agent calls delete_account."),
    ("!(tool_call:a U tool_call:b)",
     "No call to b before the first step where the agent does not call a and the agent "
     "does not call b (and none at all if that never happens)."),
    ("!G (tool_call:a -> F tool_call:b)",
     "At some step: both the agent calls a and (from this step on, never: the agent calls "
     "b)."),
    ("G !(tool_call:pay & !(tool_call:verify | O tool_call:verify))",
     "Whenever the agent calls pay, either the agent calls verify or (the agent calls verify "
     "at this step or an earlier one)."),
    ("G (tool_call:pay -> !O tool_call:cancel)",
     "Never: the agent calls pay when the agent calls cancel at this step or an earlier one."),
    ("!(data.amount != 5)",
     "Amount (data.amount) equals 5 or is missing."),
    ("!(tool_call:a <-> X tool_call:b)",
     "Either the agent calls a or the agent calls b at the second step (the session must "
     "not end before it), but not both."),
    ("!(tool_call:a S tool_call:b)",
     "Either (no call to b has happened at the first step or any earlier step) or (at the "
     "first step or an earlier step: (neither the agent calls a nor the agent calls b), "
     "and at every step after that up to and including the first step: the agent does not "
     "call b)."),]

JARGON = re.compile(r"it is not the case|\bholds?\b|\b(?:tool_call|stop_reason|role):")


def names_in(f: Formula) -> list[str]:
    """What the English must name: each tool, stop reason, label and data path."""
    names = []
    for g in f.subformulas():
        if g.op == "atom":
            prefix, _, rest = g.name.partition(":")
            if prefix == "role" and rest:
                names.append(f"{rest} message" if rest in ("user", "assistant", "system")
                             else "tool result" if rest == "tool" else rest)
            elif prefix in ("tool_call", "stop_reason") and rest:
                names.append(rest)
            else:
                names.append(fm.quote_atom(g.name))
        elif g.op == "cmp":
            names += [v for kind, v in (g.payload.left, g.payload.right)
                      if kind in ("path", "prev")]
    return names


CONSTANT = (explain("true"), explain("false"))


def assert_plain(f: Formula, text: str) -> None:
    assert not JARGON.search(text), text
    assert text.count("(") == text.count(")"), text
    assert text.endswith("."), text
    # A formula equivalent to true or false says so; one with a part that is (`q W !q`, valid)
    # says "nothing is required" or "something impossible happens" there, and the atoms of that
    # part need not be named.
    if text in CONSTANT or NOTHING_REQUIRED in text or IMPOSSIBLE in text:
        return
    for name in names_in(f):
        assert name in text, (name, text)


def test_the_table_covers_every_shape():
    assert len(READINGS) >= 25
    ops = {g.op for f, _ in READINGS for g in parse(f).subformulas()}
    assert {"G", "F", "X", "WX", "U", "W", "R", "S", "Y", "O", "F[]", "G[]", "cmp", "not",
            "iff"} <= ops


@pytest.mark.parametrize(("text", "english"), READINGS)
def test_typical_rules_read_in_plain_words(text, english):
    f = parse(text)
    assert explain(f) == english
    assert_plain(f, english)


def test_the_example_of_the_issue():
    english = explain("G !(data.amount > 500 & tool_call:issue_refund & !O manager_approval)")
    # Read from its normal form (issue 25): the same sentence as G(... -> O manager_approval).
    assert english == ("Whenever the agent calls issue_refund with amount (data.amount) over "
                       "500, a step labelled manager_approval must have happened at this step "
                       "or an earlier one.")


def test_before_and_at_this_step_or_earlier_are_told_apart():
    assert "before this step" in explain("G (tool_call:pay -> Y O tool_call:check)")
    assert "at this step or an earlier one" in explain("G (tool_call:pay -> O tool_call:check)")
    assert "at the previous step (there must be one)" in explain(
        "G (tool_call:pay -> Y tool_call:check)")
    # W: before the first q (q itself may come with p); if q never comes, p never may.
    assert "before the first call to pay (and none at all if that never happens)" in explain(
        "!tool_call:ship W tool_call:pay")
    # U: the same, and q must come.
    assert "a call to pay must happen" in explain("!tool_call:ship U tool_call:pay")


def test_strong_and_weak_next_say_what_the_end_of_the_session_does():
    assert "(the session must not end before it)" in explain("X tool_call:a")
    assert "(if the session reaches it)" in explain("WX tool_call:a")
    # !X a is WX !a: met by a session that ends at once.
    assert explain("!X tool_call:a") == ("At the second step (if the session reaches it): the "
                                         "agent does not call a.")
    assert "within 1 to 3 steps after this step (at a step the session reaches)" in explain(
        "G (tool_call:a -> F[1,3] tool_call:b)")


def test_residuals_read_from_the_next_step():
    assert explain_rest("G !tool_call:delete") == (
        "From the next step on, never: the agent calls delete.")
    assert explain_rest("tool_call:examine") == "The agent calls examine at the next step."
    assert explain_rest("examine") == "The next step is labelled examine."
    assert explain_rest("!tool_call:ship W tool_call:pay") == (
        "From the next step on, no call to ship before the first call to pay (and none at all "
        "if that never happens).")


@pytest.mark.parametrize(("atom", "present", "past", "as_noun"), [
    ("tool_call:send_money", "the agent calls send_money", "the agent called send_money",
     "a call to send_money"),
    ("stop_reason:end_turn", "the agent stops (end_turn)", "the agent stopped (end_turn)",
     "a stop (end_turn)"),
    ("role:user", "the step is a user message", "the step was a user message",
     "a user message"),
    ("role:assistant", "the step is an assistant message", "the step was an assistant message",
     "an assistant message"),
    ("role:tool", "the step is a tool result", "the step was a tool result", "a tool result"),
    ("contains_card_number", "the step is labelled contains_card_number",
     "the step was labelled contains_card_number", "a step labelled contains_card_number"),
    ("output.args.amount > 500", "amount (output.args.amount) is over 500",
     "amount (output.args.amount) was over 500",
     "a step where amount (output.args.amount) is over 500"),
    ('output.tool == "send_money"', "the agent calls send_money (output.tool)",
     "the agent called send_money", "a call to send_money"),
])
def test_atoms_read_the_same_in_rules_and_in_reports(atom, present, past, as_noun):
    f = parse(atom if ">" in atom or "==" in atom else fm.quote_atom(atom))
    assert clause(f) == present
    assert happened(f) == past
    assert noun(f) == as_noun


def test_a_call_reads_with_its_arguments():
    assert clause("tool_call:issue_refund & output.args.amount > 500") == (
        "the agent calls issue_refund with amount (output.args.amount) over 500")
    assert clause("!(tool_call:issue_refund & output.args.amount > 500)") == (
        "the agent does not call issue_refund with amount (output.args.amount) over 500")
    assert clause("prev(data.balance) > data.balance") == (
        "the previous step's balance (data.balance) is over balance (data.balance)")


def test_nested_negation_never_says_it_is_not_the_case():
    assert clause("!(a & b)") == "not both the step is labelled a and the step is labelled b"
    assert clause("!(a | b)") == "neither the step is labelled a nor the step is labelled b"
    assert clause("!(x > 5)") == "x is not over 5"
    # x != 1 is false when x is missing, so its denial says so.
    assert clause("!(data.x != 1)") == "x (data.x) equals 1 or is missing"


# ---------------------------------------------------------------------------------------------
# Random formulas

# The strategies' atoms p q r, renamed to the built-in atoms of the canonical event.
BUILT_IN = {"p": "tool_call:issue_refund", "q": "role:user", "r": "stop_reason:end_turn"}


def renamed(f: Formula) -> Formula:
    if f.op == "atom":
        return fm.Atom(BUILT_IN.get(f.name, f.name))
    if not f.args:
        return f
    return fm.rebuild(f, tuple(renamed(a) for a in f.args))


@settings(max_examples=400, deadline=None)
@given(formulas(6))
def test_explain_never_raises_and_never_speaks_in_formulas(f):
    for g in (f, renamed(f)):
        # The English reads `X false` as false, `WX true` as true (_tidy): it names what an
        # equivalent formula reads.
        said = _tidy(g)
        if said in (fm.TRUE, fm.FALSE):
            continue
        assert_plain(said, explain(g))
        assert_plain(said, explain_rest(g))


@settings(max_examples=300, deadline=None)
@given(formulas(5), events(max_size=6))
def test_tidying_keeps_the_meaning(f, evts):
    tidy = _tidy(f)
    assert evaluate(tidy, to_trace(evts)) == evaluate(f, to_trace(evts))
    assert nnf(tidy).empty_value == nnf(f).empty_value


@settings(max_examples=400, deadline=None)
@given(formulas(4), events(max_size=6))
def test_pushed_negations_are_equivalent(f, evts):
    """What the English says of ``!g`` is what it says of ``push_negation(g)``: the two agree at
    every step of every trace (the finite-trace oracle), and a future operator's dual flips its
    value on the empty rest of a session (a strong obligation becomes a weak one and back)."""
    for g in f.subformulas():
        if g.op in ("true", "false", "atom", "cmp", "not", "iff"):
            continue
        pushed = push_negation(g)
        assert evaluate(pushed, to_trace(evts)) == evaluate(fm.Not(g), to_trace(evts)), g.text
        if g.op in fm.FUTURE_OPS:
            assert pushed.empty_value != g.empty_value, g.text
