"""Rule kinds (paper 003) and specification patterns (paper 000, Table 2): every one is run on a
satisfying and a violating session, through the finite-trace oracle and through the session
monitor, whose final verdict must agree and whose violations must sit at the expected steps."""

import inspect
import itertools
import subprocess
import sys

import pytest

from studio.logic.finite import holds
from studio.logic.formula import And, Atom, F, FBounded, G, Implies, Not, Or, X
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.patterns import (
    MAX_STEPS,
    PATTERNS,
    RULE_KINDS,
    absence,
    absence_between,
    at_most_once,
    bounded_response,
    constrained_response,
    existence,
    forbidden_text,
    ltl_formula,
    must_call_before,
    must_call_once,
    must_include_text,
    next_step_response,
    no_call,
    pattern,
    precedence,
    required_stop_reason,
    response,
    rule_from_kind,
    universality,
)
from studio.monitor import SATISFIED, VIOLATED, RuleSet, SessionMonitor

# ---------------------------------------------------------------------------------------------
# Helpers

def session(*steps) -> list[dict]:
    """Events from label lists: ``session(["a"], [], ["a", "b"])``; a dict is taken as is."""
    return [s if isinstance(s, dict) else {"labels": list(s)} for s in steps]


def oracle_trace(events: list[dict]) -> list[tuple[set, dict]]:
    return [(set(e.get("labels", ())), e) for e in events]


def monitor(formula, events, counting=None):
    m = SessionMonitor(RuleSet([("rule", formula, counting)]))
    for event in events:
        m.feed(event)
    (result,) = m.results()
    return result


def check(formula, events, satisfied: bool, violations=None):
    """Oracle and monitor agree on the verdict; ``violations`` lists ``(trigger, detected)``."""
    assert holds(formula, oracle_trace(events)) is satisfied
    result = monitor(formula, events)
    assert result.final == (SATISFIED if satisfied else VIOLATED)
    if violations is not None:
        assert [(v.trigger, v.detected) for v in result.violations] == violations
    return result


def call(tool):
    return "tool_call:" + tool


def stop(reason):
    return "stop_reason:" + reason


def says(text):
    return "text_contains:" + text


# ---------------------------------------------------------------------------------------------
# Rule kinds (paper 003)

def test_no_call_satisfied_when_the_tool_is_never_called():
    f = no_call("rm")
    assert f is G(Not(Atom("tool_call:rm")))
    check(f, session([call("ls")], [], [call("cat")]), True, [])


def test_no_call_violated_at_every_step_that_calls_the_tool():
    check(no_call("rm"), session([call("rm")], [call("ls")], [call("rm")]), False,
          [(0, 0), (2, 2)])


def test_must_call_before_satisfied_when_first_comes_first():
    f = must_call_before("auth", "pay")
    assert f.text == '!tool_call:pay W tool_call:auth'
    check(f, session([call("auth")], [], [call("pay")]), True)
    check(f, session([call("auth"), call("pay")]), True)  # the same step is allowed


def test_must_call_before_satisfied_when_neither_tool_is_called():
    # The weak until: a strong one would flag this session for never calling `auth`.
    check(must_call_before("auth", "pay"), session([call("ls")], []), True, [])
    check(must_call_before("auth", "pay"), session([], [call("auth")]), True, [])


def test_must_call_before_violated_when_then_comes_first():
    f = must_call_before("auth", "pay")
    result = check(f, session([call("ls")], [call("pay")], [call("auth")]), False, [(0, 1)])
    assert result.verdict == VIOLATED and result.first_verdict_step == 1


def test_must_call_before_reports_later_calls_after_a_satisfied_round():
    # The default counting for a rule that is not G (after_violation) keeps a met rule met:
    # `auth` then `pay` is no violation.  Counted after every verdict (TRAC_R, paper 000,
    # Algorithm 2, which was the default before counting became a choice), the restarted round
    # sees `pay` with no `auth` before it.
    events = session([call("auth")], [call("pay")])
    result = check(must_call_before("auth", "pay"), events, True, [])
    assert result.verdict == SATISFIED
    again = monitor(must_call_before("auth", "pay"), events, "every_verdict")
    assert [(v.trigger, v.detected) for v in again.violations] == [(1, 1)]


def test_must_call_once_satisfied_by_a_single_call():
    check(must_call_once("submit"), session([call("submit")], [], [call("ls")]), True, [])


def test_must_call_once_satisfied_by_a_single_call_at_the_last_step():
    a = Atom("tool_call:submit")
    events = session([], [call("ls")], [call("submit")])
    check(must_call_once("submit"), events, True, [])
    # Paper 003's formula read with our strong X fails exactly there; hence WX.
    literal = And(F(a), G(Implies(a, X(G(Not(a))))))
    assert not holds(literal, oracle_trace(events))


def test_must_call_once_violated_at_the_second_call():
    result = check(must_call_once("submit"),
                   session([call("submit")], [], [call("submit")], []), False, [(0, 2)])
    assert result.verdict == VIOLATED and result.first_verdict_step == 2


def test_must_call_once_violated_at_the_end_without_a_call():
    result = check(must_call_once("submit"), session([], [call("ls")]), False, [(0, 1)])
    assert result.violations[0].at_end


def test_required_stop_reason_satisfied_by_one_allowed_reason_among_several():
    f = required_stop_reason(["end_turn", "stop_sequence", "tool_use"])
    check(f, session([stop("max_tokens")], [stop("stop_sequence")]), True, [])
    check(f, session([], [stop("end_turn")]), True, [])


def test_required_stop_reason_violated_at_the_end_without_an_allowed_reason():
    f = required_stop_reason(["end_turn", "stop_sequence"])
    result = check(f, session([], [stop("max_tokens")]), False, [(0, 1)])
    assert result.violations[0].at_end


def test_forbidden_text_violated_at_each_step_with_the_text():
    f = forbidden_text("rm -rf /")
    check(f, session([says("ls -la")], []), True, [])
    check(f, session([], [says("rm -rf /")], [], [says("rm -rf /")]), False, [(1, 1), (3, 3)])


def test_must_include_text_needs_the_text_at_some_step():
    f = must_include_text('say "thanks"\n')
    check(f, session([], [says('say "thanks"\n')]), True, [])
    check(f, session([says("say thanks")], []), False, [(0, 1)])


def test_ltl_formula_with_a_past_operator():
    f = ltl_formula("G (tool_call:pay -> O tool_call:auth)")
    check(f, session([call("auth")], [], [call("pay")]), True, [])
    check(f, session([call("pay")], [call("auth")], [call("pay")]), False, [(0, 0)])


def test_ltl_formula_with_a_data_atom_reads_the_event():
    f = ltl_formula("G (output.args.amount <= 100)")
    def spend(amount):
        return {"labels": [call("pay")], "output": {"args": {"amount": amount}}}

    check(f, session(spend(50), spend(100)), True, [])
    check(f, session(spend(50), spend(500), spend(101)), False, [(1, 1), (2, 2)])
    # A missing path makes the data atom false, so G of it fails there.
    check(f, session(spend(50), []), False, [(1, 1)])


# ---------------------------------------------------------------------------------------------
# Patterns (paper 000, Table 2, and more)

def test_universality():
    assert universality("p") is G(Atom("p"))
    check(universality("p"), session(["p"], ["p", "q"]), True, [])
    check(universality("p"), session(["p"], [], ["p"], ["q"]), False, [(1, 1), (3, 3)])


def test_absence():
    check(absence("p"), session(["q"], []), True, [])
    check(absence("p"), session(["q"], ["p"]), False, [(1, 1)])


def test_existence():
    check(existence("p"), session([], ["p"], []), True, [])
    check(existence("p"), session([], ["q"]), False, [(0, 1)])


def test_response_answered_at_the_same_or_a_later_step():
    check(response("p", "q"), session(["p"], [], ["q"], ["p", "q"]), True, [])


def test_response_violated_by_the_obligation_that_gets_no_answer():
    result = check(response("p", "q"), session(["p"], ["q"], ["p"], []), False, [(2, 3)])
    assert result.violations[0].at_end


def test_absence_between():
    f = absence_between("p", "q", "r")
    check(f, session(["p"], ["q"], [], ["r"], ["p"]), True, [])


def test_absence_between_without_a_closing_r_allows_p():
    # The trigger needs F r: a q that is never closed constrains nothing.
    check(absence_between("p", "q", "r"), session(["q"], ["p"], []), True, [])


def test_absence_between_violated_when_r_closes_an_interval_with_p():
    f = absence_between("p", "q", "r")
    # Known only when r arrives: before that the interval might never close.
    check(f, session(["q"], [], ["p"], ["r"]), False, [(0, 3)])
    # p at the step of q counts; the second interval is the bad one.
    check(f, session(["q", "p"], ["r"]), False, [(0, 1)])
    check(f, session(["q"], ["r"], ["q"], ["p"], ["r"]), False, [(2, 4)])


def test_constrained_response():
    f = constrained_response("p", "q", "r")
    check(f, session(["p"], [], ["r"], ["q"]), True, [])
    check(f, session(["q"], ["p", "r"], ["q"]), True, [])


def test_constrained_response_violated_by_q_before_r_or_by_a_missing_r():
    f = constrained_response("p", "q", "r")
    check(f, session(["p"], ["q"], ["r"]), False, [(0, 1)])
    result = check(f, session(["p"], []), False, [(0, 1)])
    assert result.violations[0].at_end


def test_precedence():
    f = precedence("p", "q")
    # Met by p at step 1 and, counted after each violation only (the default), met for good;
    # counted after every verdict the new round counts the q at step 2
    # (see test_must_call_before_reports_later_calls_after_a_satisfied_round).
    check(f, session([], ["p"], ["q"]), True, [])
    assert [(v.trigger, v.detected) for v in monitor(f, session([], ["p"], ["q"]),
                                                     "every_verdict").violations] == [(2, 2)]
    check(f, session(["p", "q"]), True, [])      # q at the step of p
    check(f, session([], ["r"]), True, [])       # neither
    check(f, session([], ["q"], ["p"]), False, [(0, 1)])


def test_at_most_once():
    f = at_most_once("p")
    check(f, session([], ["q"]), True, [])
    check(f, session([], ["p"]), True, [])       # once, at the last step
    check(f, session(["p"], [], ["p"], ["p"]), False, [(0, 2), (2, 3)])


def test_next_step_response():
    f = next_step_response("p", "q")
    check(f, session(["p"], ["q", "p"], ["q"]), True, [])
    # The step after 0 lacks q; p at the last step has no next step at all (strong X).
    result = check(f, session(["p"], [], ["p"]), False, [(0, 1), (2, 2)])
    assert [v.at_end for v in result.violations] == [False, True]


def test_bounded_response_within_k_steps():
    f = bounded_response("p", "q", 2)
    assert f is G(Implies(Atom("p"), FBounded(0, 2, Atom("q"))))
    check(f, session(["p"], [], ["q"]), True, [])
    check(f, session(["p", "q"], ["p"], [], ["q"]), True, [])


def test_bounded_response_late_answer_detected_at_the_last_step_of_the_window():
    f = bounded_response("p", "q", 2)
    # p at 1, window 1..3; q at 4 is too late, and the monitor knows it at step 1 + 2.
    check(f, session([], ["p"], [], [], ["q"]), False, [(1, 3)])


def test_bounded_response_session_ending_inside_the_window_is_a_violation():
    result = check(bounded_response("p", "q", 3), session([], ["p"], []), False, [(1, 2)])
    assert result.violations[0].at_end


def test_bounded_response_with_k_zero_is_an_immediate_answer():
    f = bounded_response("p", "q", 0)
    assert f is G(Implies(Atom("p"), Atom("q")))
    check(f, session(["p", "q"], []), True, [])
    check(f, session(["p"], ["q"]), False, [(0, 0)])


def test_patterns_accept_formulas_and_never_parse_strings():
    ask = Or(Atom("ask"), Atom("retry"))
    f = response(ask, "answer")
    check(f, session(["retry"], ["answer"]), True, [])
    check(f, session(["ask"], []), False, [(0, 1)])
    # A string is an atom name, even when it reads like a formula.
    assert universality("p & q") is G(Atom("p & q"))


# ---------------------------------------------------------------------------------------------
# Registries, text round trips and errors

EXAMPLES = {
    "no_call": {"tool": "send money"},
    "must_call_before": {"first": "auth", "then": "pay"},
    "must_call_once": {"tool": "submit"},
    "required_stop_reason": {"allowed": ["end_turn", "stop_sequence"]},
    "forbidden_text": {"text": 'drop "table"'},
    "must_include_text": {"text": "Thanks"},
    "ltl_formula": {"formula": "G (a -> F[0,3] b) & H !c"},
}

PATTERN_EXAMPLES = {
    "universality": {"p": "p"},
    "absence": {"p": "X"},
    "existence": {"p": And(Atom("p"), Atom("q"))},
    "response": {"p": "p", "q": "q"},
    "absence_between": {"p": "p", "q": "q", "r": "r"},
    "constrained_response": {"p": "p", "q": "q", "r": "r"},
    "precedence": {"p": "tool_call:auth", "q": "tool_call:pay"},
    "at_most_once": {"p": "p"},
    "next_step_response": {"p": "p", "q": "q"},
    "bounded_response": {"p": "p", "q": "q", "k": 5},
}


def test_registries_cover_every_kind_and_pattern():
    assert set(RULE_KINDS) == set(EXAMPLES)
    assert set(PATTERNS) == set(PATTERN_EXAMPLES)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_rule_from_kind_builds_the_kind_and_its_text_reparses(kind):
    f = rule_from_kind(kind, EXAMPLES[kind])
    assert f is RULE_KINDS[kind](**EXAMPLES[kind])
    assert parse(f.text) is f


@pytest.mark.parametrize("name", sorted(PATTERN_EXAMPLES))
def test_pattern_builds_the_pattern_and_its_text_reparses(name):
    f = pattern(name, **PATTERN_EXAMPLES[name])
    assert f is PATTERNS[name](**PATTERN_EXAMPLES[name])
    assert parse(f.text) is f


def test_bounded_response_text_reparses_at_the_largest_bound():
    f = bounded_response("p", "q", MAX_STEPS)
    assert parse(f.text) is f


@pytest.mark.parametrize("kind, params, message", [
    ("foo", {}, "unknown rule kind 'foo'; known kinds: no_call, must_call_before"),
    ("must_call_before", {"then": "pay"},
     "must_call_before needs parameter 'first' (a tool name)"),
    ("must_call_before", {},
     "must_call_before needs parameters 'first' (a tool name) and 'then' (a tool name)"),
    ("no_call", {"tool": "rm", "name": "x"},
     "no_call does not take parameter 'name'; it takes 'tool'"),
    ("no_call", {"tool": 3}, "no_call parameter 'tool' must be a tool name"),
    ("no_call", {"tool": ""}, "no_call parameter 'tool' must be a tool name"),
    ("required_stop_reason", {"allowed": "end_turn"},
     "required_stop_reason parameter 'allowed' must be a list of stop reasons"),
    ("required_stop_reason", {"allowed": ["end_turn", None]},
     "required_stop_reason parameter 'allowed' must be a list of stop reasons"),
    ("required_stop_reason", {"allowed": []},
     "required_stop_reason parameter 'allowed' must name at least one stop reason"),
    ("forbidden_text", {"text": None}, "forbidden_text parameter 'text' must be a text"),
    ("ltl_formula", {"formula": 5},
     "ltl_formula parameter 'formula' must be the text of an LTL formula"),
    ("no_call", ["rm"], "the parameters of no_call must be a mapping"),
])
def test_rule_from_kind_errors_name_the_kind_and_the_parameter(kind, params, message):
    with pytest.raises(ValueError) as caught:
        rule_from_kind(kind, params)
    assert str(caught.value).startswith(message)


def test_ltl_formula_syntax_errors_keep_their_position():
    with pytest.raises(FormulaSyntaxError) as caught:
        rule_from_kind("ltl_formula", {"formula": "G (a ->"})
    assert caught.value.line == 1 and caught.value.column == 8


@pytest.mark.parametrize("name, args, message", [
    ("foo", {}, "unknown pattern 'foo'; known patterns: universality, absence"),
    ("response", {"p": "a"}, "response needs parameter 'q' (an atom name or a formula)"),
    ("response", {"p": None, "q": "b"},
     "response parameter 'p' must be an atom name or a formula"),
    ("bounded_response", {"p": "a", "q": "b"},
     "bounded_response needs parameter 'k' (a whole number of steps"),
    ("bounded_response", {"p": "a", "q": "b", "k": -1},
     "bounded_response parameter 'k' must be a whole number of steps from 0 to 10000"),
    ("bounded_response", {"p": "a", "q": "b", "k": 1.5}, "bounded_response parameter 'k'"),
    ("bounded_response", {"p": "a", "q": "b", "k": True}, "bounded_response parameter 'k'"),
    ("bounded_response", {"p": "a", "q": "b", "k": MAX_STEPS + 1},
     "bounded_response parameter 'k'"),
    ("absence", {"p": "a", "x": "b"}, "absence does not take parameter 'x'; it takes 'p'"),
])
def test_pattern_errors_name_the_pattern_and_the_parameter(name, args, message):
    with pytest.raises(ValueError) as caught:
        pattern(name, **args)
    assert str(caught.value).startswith(message)


def test_importing_patterns_loads_no_django():
    code = ("import sys, studio.logic.patterns\n"
            "print('django' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def _all_sessions(atoms, max_length):
    subsets = [list(c) for n in range(len(atoms) + 1) for c in itertools.combinations(atoms, n)]
    for length in range(1, max_length + 1):
        for steps in itertools.product(subsets, repeat=length):
            yield session(*steps)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_monitor_agrees_with_the_oracle_on_every_short_session(name):
    args = {"p": "p", "q": "q", "r": "r", "k": 1}
    make = PATTERNS[name]
    f = make(**{a: args[a] for a in inspect.signature(make).parameters})
    ruleset = RuleSet([("rule", f)])
    for events in _all_sessions(["p", "q", "r"], 4):
        m = SessionMonitor(ruleset)
        for event in events:
            m.feed(event)
        (result,) = m.results()
        expected = holds(f, oracle_trace(events))
        assert result.final == (SATISFIED if expected else VIOLATED), events
        # A violated session always reports a violation (the converse fails: see above).
        if not expected:
            assert result.violations, events
