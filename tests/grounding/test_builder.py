"""The rule builder: every pattern under every scope means, on finite sessions, what its plain
definition says; slots are events of the logs; English in plain words; one error class."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.grounding import builder, builder_form
from studio.grounding.builder import PATTERNS, SCOPES, BuildError, build
from studio.grounding.builder_form import builder_options
from studio.logic import patterns
from studio.logic.finite import holds
from studio.logic.formula import And, Atom, Compare
from studio.logic.parser import parse
from studio.logic.review import distinguishing_trace
from studio.logic.vocabulary import Vocabulary
from studio.monitor import compile_rule

ATOMS = ("a", "b", "c")


# ---------------------------------------------------------------------------------------------
# The plain definitions, written from the module's docstring (not from the formulas)

def segments(scope: str, trace: list[frozenset], start: str | None, end: str | None):
    """The parts of the trace a scope selects, as (first step, step after the last)."""
    n = len(trace)
    ends = [i for i in range(n) if end in trace[i]] if end else []

    def next_end(i):  # the first end at or after i, or None
        return next((j for j in ends if j >= i), None)

    if scope == "globally":
        return [(0, n)]
    if scope == "before":
        return [(0, ends[0])] if ends else []
    if scope == "after":
        firsts = [i for i in range(n) if start in trace[i]]
        return [(firsts[0], n)] if firsts else []
    out = []
    for i in range(n):
        if start in trace[i] and end not in trace[i]:
            j = next_end(i)
            if j is not None:
                out.append((i, j))
            elif scope == "after_until":
                out.append((i, n))
    return out


def pattern_holds(pattern: str, part: list[frozenset], p, q, r, n) -> bool:
    """The pattern on one part, read as a finite trace of its own (possibly empty)."""
    m = len(part)
    has = lambda atom, i: atom in part[i]  # noqa: E731
    ps = [i for i in range(m) if has(p, i)]
    if pattern == "absence":
        return not ps
    if pattern == "existence":
        return bool(ps)
    if pattern == "universality":
        return len(ps) == m
    if pattern == "response":
        return all(any(has(q, j) for j in range(i, m)) for i in ps)
    if pattern == "bounded_response":
        return all(any(has(q, j) for j in range(i, min(i + n, m - 1) + 1)) for i in ps)
    if pattern == "precedence":  # every q has a p at that step or before
        return all(any(has(p, j) for j in range(i + 1)) for i in range(m) if has(q, i))
    if pattern == "response_chain":
        return all(any(has(q, j) and any(has(r, k) for k in range(j + 1, m))
                       for j in range(i, m)) for i in ps)
    if pattern == "precedence_chain":
        return all(any(has(p, j) and has(q, k) for j in range(i + 1) for k in range(j + 1, i + 1))
                   for i in range(m) if has(r, i))
    if pattern == "at_most":
        return len(ps) <= n
    if pattern == "at_least":
        return len(ps) >= n
    if pattern == "exactly_once":
        return len(ps) == 1
    raise AssertionError(pattern)


def expected(pattern, scope, trace, slots, n) -> bool:
    return all(pattern_holds(pattern, trace[a:b], slots.get("p"), slots.get("q"),
                             slots.get("r"), n)
               for a, b in segments(scope, trace, slots.get("start"), slots.get("end")))


# ---------------------------------------------------------------------------------------------
# Every pattern under every scope

traces = st.lists(st.frozensets(st.sampled_from(ATOMS)), min_size=1, max_size=8)
PAIRS = [(p, s) for p in PATTERNS for s in SCOPES]


@pytest.mark.parametrize(("pattern", "scope"), PAIRS, ids=[f"{p}-{s}" for p, s in PAIRS])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_formula_means_the_plain_definition_on_finite_traces(pattern, scope, data):
    names = builder.slots_of(pattern, scope)
    slots = {name: data.draw(st.sampled_from(ATOMS), label=name) for name in names}
    spec = PATTERNS[pattern]
    n = None
    if spec.count == "steps":
        n = data.draw(st.integers(0, 3), label="n")
    elif spec.count == "times":
        n = data.draw(st.integers(1, 3), label="n")
    trace = data.draw(traces, label="trace")

    built = build(pattern, scope, slots, n)

    verdict = holds(built.formula, [(labels, {}) for labels in trace])
    assert verdict == expected(pattern, scope, trace, slots, n), built.text


@pytest.mark.parametrize(("pattern", "scope"), PAIRS, ids=[f"{p}-{s}" for p, s in PAIRS])
def test_the_formula_reads_back_compiles_and_its_english_is_plain(pattern, scope):
    slots = {name: {"atom": f"tool_call:tool_{name}"} for name in builder.slots_of(pattern, scope)}
    slots["p"] = {"atom": "tool_call:issue_refund",
                  "conditions": [{"path": "output.args.amount", "op": ">", "value": 500}]}
    n = {"steps": 3, "times": 2, None: None}[PATTERNS[pattern].count]

    built = build(pattern, scope, slots, n)

    assert parse(built.text) is built.formula
    compile_rule("built", built.formula)
    assert (built.pattern, built.scope) == (pattern, scope)
    text = built.english
    assert "the agent calls issue_refund with an amount over 500" in text.lower() or \
        "a call to issue_refund with an amount over 500" in text.lower()
    for forbidden in ("holds", "it is not the case", "tool_call:", "output.args", "->", "&"):
        assert forbidden not in text, text
    assert text[0].isupper() and text.endswith(".")


def test_globally_the_patterns_are_those_of_the_patterns_module():
    p, q = Atom("p"), Atom("q")
    assert build("absence", "globally", {"p": "p"}).formula is patterns.absence(p)
    assert build("existence", "globally", {"p": "p"}).formula is patterns.existence(p)
    assert build("universality", "globally", {"p": "p"}).formula is patterns.universality(p)
    assert build("response", "globally", {"p": "p", "q": "q"}).formula is \
        patterns.response(p, q)
    assert build("bounded_response", "globally", {"p": "p", "q": "q"}, 4).formula is \
        patterns.bounded_response(p, q, 4)
    assert build("precedence", "globally", {"p": "p", "q": "q"}).formula is \
        patterns.precedence(p, q)
    assert build("at_most", "globally", {"p": "p"}, 1).formula is patterns.at_most_once(p)
    assert build("exactly_once", "globally", {"p": "tool_call:x"}).formula is \
        patterns.must_call_once("x")


# ---------------------------------------------------------------------------------------------
# Events with conditions

REFUND = {"atom": "tool_call:issue_refund",
          "conditions": [{"path": "output.args.amount", "op": ">", "value": 500}]}


def _step(labels, amount=None):
    event = {"output": {"tool": "issue_refund", "args": {"amount": amount}}} if amount else {}
    return (frozenset(labels), event)


def test_an_event_is_its_atom_and_its_conditions():
    e = builder.event(REFUND)
    assert e.formula is And(Atom("tool_call:issue_refund"),
                            Compare(("path", "output.args.amount"), ">", ("const", 500)))
    assert builder.event("role:user").formula is Atom("role:user")
    only = builder.event({"conditions": [{"path": "data.status", "op": "==", "value": "ok"}]})
    assert only.formula.text == 'data.status == "ok"'


def test_the_bounded_response_over_a_tool_argument():
    built = build("bounded_response", "globally",
                  {"p": REFUND, "q": "tool_call:escalate_to_human"}, 3)

    assert built.text == ("G (output.args.amount > 500 & tool_call:issue_refund -> "
                          "F[0,3] tool_call:escalate_to_human)")
    assert built.english == (
        "Every time the agent calls issue_refund with an amount over 500, a call to "
        "escalate_to_human must happen within 3 steps: at that step or one of the next 3.")
    refund = {"tool_call:issue_refund"}
    late = [_step(refund, 900), _step(()), _step(()), _step(()),
            _step({"tool_call:escalate_to_human"})]
    small = [_step(refund, 20), _step(()), _step(()), _step(()), _step(())]
    in_time = [_step(refund, 900), _step(()), _step({"tool_call:escalate_to_human"})]
    assert not holds(built.formula, late)
    assert holds(built.formula, small)
    assert holds(built.formula, in_time)


@pytest.mark.parametrize(("slot", "words"), [
    ("role:user", "a user message"),
    ("role:assistant", "an assistant message"),
    ("mentions_competitor", "a step labelled mentions_competitor"),
    ("stop_reason:max_tokens", "a stop for the reason max_tokens"),
    ({"conditions": [{"path": "data.status", "op": "==", "value": "failed"}]},
     "a step with a status of “failed”"),
    ({"atom": "tool_call:pay", "conditions": [
        {"path": "output.args.approved", "op": "==", "value": False},
        {"path": "output.args.customer_id", "op": "!=", "value": None}]},
     "a call to pay with approved false and some customer id"),
])
def test_events_in_words(slot, words):
    assert build("absence", "globally", {"p": slot}).english == f"{words[0].upper()}" \
        f"{words[1:]} must never happen."


def test_the_scopes_in_words():
    slots = {"p": "tool_call:delete_account", "start": "role:user",
             "end": {"atom": "tool_call:verify_identity"}}
    assert build("absence", "between", slots).english == (
        "From each user message up to the next call to verify_identity (when one follows), "
        "a call to delete_account must never happen.")
    del slots["start"]
    assert build("absence", "before", slots).english == (
        "Before the first call to verify_identity (in sessions that have one), a call to "
        "delete_account must never happen.")
    assert build("precedence", "globally", {"p": "tool_call:verify_identity",
                                            "q": "tool_call:issue_refund"}).english == (
        "A call to issue_refund may only happen once a call to verify_identity has happened "
        "(at an earlier step or the same one).")
    assert build("at_most", "globally", {"p": "tool_call:retry"}, 3).english == (
        "A call to retry may happen at most 3 times in the session.")


# ---------------------------------------------------------------------------------------------
# Bad input: one exception, naming the field

@pytest.mark.parametrize(("args", "field"), [
    (("nope", "globally", {"p": "a"}), "pattern"),
    (("absence", "sometimes", {"p": "a"}), "scope"),
    (("absence", "globally", ["a"]), "slots"),
    (("absence", "globally", {}), "slots.p"),
    (("absence", "globally", {"p": "a", "q": "b"}), "slots.q"),
    (("absence", "before", {"p": "a"}), "slots.end"),
    (("absence", "globally", {"p": {"atom": " a"}}), "slots.p.atom"),
    (("absence", "globally", {"p": {"atom": 5}}), "slots.p.atom"),
    (("absence", "globally", {"p": {"atom": "a\u202e"}}), "slots.p.atom"),
    (("absence", "globally", {"p": {"colour": "red"}}), "slots.p.colour"),
    (("absence", "globally", {"p": {"conditions": []}}), "slots.p"),
    (("absence", "globally", {"p": {"conditions": [{"path": "Amount", "op": ">",
                                                    "value": 1}]}}),
     "slots.p.conditions[0].path"),
    (("absence", "globally", {"p": {"conditions": [{"path": "x", "op": "~", "value": 1}]}}),
     "slots.p.conditions[0].op"),
    (("absence", "globally", {"p": {"conditions": [{"path": "x", "op": ">", "value": True}]}}),
     "slots.p.conditions[0].value"),
    (("absence", "globally", {"p": {"conditions": [{"path": "x", "op": "==",
                                                    "value": float("nan")}]}}),
     "slots.p.conditions[0].value"),
    (("absence", "globally", {"p": {"conditions": [{"path": "x", "op": "==",
                                                    "value": [1]}]}}),
     "slots.p.conditions[0].value"),
    (("absence", "globally", {"p": {"conditions": [{"path": "x", "op": "=="}]}}),
     "slots.p.conditions[0].value"),
    (("absence", "globally", {"p": {"conditions": [{"path": "x", "op": "==",
                                                    "value": "a\u200bb"}]}}),
     "slots.p.conditions[0].value"),
    (("bounded_response", "globally", {"p": "a", "q": "b"}), "n"),
    (("bounded_response", "globally", {"p": "a", "q": "b"}, -1), "n"),
    (("bounded_response", "globally", {"p": "a", "q": "b"}, 10**6), "n"),
    (("at_most", "globally", {"p": "a"}, 0), "n"),
    (("at_most", "globally", {"p": "a"}, True), "n"),
    (("absence", "globally", {"p": "a"}, 3), "n"),
])
def test_bad_input_is_one_error_naming_the_field(args, field):
    with pytest.raises(BuildError) as caught:
        build(*args)
    assert caught.value.field == field
    assert caught.value.message


# ---------------------------------------------------------------------------------------------
# Values typed in a form, and the pickers' options

@pytest.mark.parametrize(("text", "types", "value"), [
    ("500", {"number"}, 500), ("500", {"string"}, "500"), ("12.5", (), 12.5),
    ('"500"', {"number"}, "500"), ("true", {"boolean"}, True), ("true", {"string"}, "true"),
    ("null", (), None), ("EUR", {"string"}, "EUR"), (" EUR ", (), "EUR"),
])
def test_typed_values_are_read_with_the_fields_types(text, types, value):
    got = builder_form.parse_value(text, types)
    assert got == value and type(got) is type(value)


def _vocabulary(with_evidence: bool) -> Vocabulary:
    rows = [("builtin", "tool_call:issue_refund", ""),
            ("builtin", "tool_call:escalate_to_human", ""),
            ("builtin", "role:user", ""), ("builtin", "stop_reason:end_turn", ""),
            ("label", "angry_customer", ""),
            ("path", "output.args.amount", "number"), ("path", "output.args.reason", "string"),
            ("path", "output.args", "object"), ("path", "data.channel", "string")]
    if with_evidence:
        rows = [
            ("builtin", "tool_call:issue_refund", "", "tool_call:issue_refund", 7, ()),
            ("builtin", "tool_call:escalate_to_human", "", "tool_call:escalate_to_human", 2, ()),
            ("builtin", "role:user", "", "role:user", 9, ()),
            ("builtin", "stop_reason:end_turn", "", "", 3, ()),
            ("label", "angry_customer", "", "role:user", 2, ()),
            ("path", "output.args.amount", "number", "tool_call:issue_refund", 7, (120, 900)),
            ("path", "output.args.reason", "string", "tool_call:escalate_to_human", 2,
             ("refund over limit",)),
            ("path", "output.args", "object", "tool_call:issue_refund", 7, ()),
            # the tool's own name, and a field only ever null: nothing to compare
            ("path", "output.tool", "string", "tool_call:issue_refund", 7, ("issue_refund",)),
            ("path", "input", "null", "tool_call:issue_refund", 7, ()),
            ("path", "output.note", "string", "tool_call:issue_refund", 1, ("manual",)),
            ("path", "data.channel", "string", "role:user", 9, ("web", "phone")),
        ]
    return Vocabulary.from_entries(rows, declared=["is_polite"])


def test_options_give_each_tool_its_own_arguments_with_examples():
    options = builder_options(_vocabulary(True))

    tools = {t["name"]: t for t in options["tools"]}
    refund = tools["issue_refund"]["arguments"]
    assert [(a["path"], a["examples"], a["ops"][0]) for a in refund] == [
        ("output.args.amount", [120, 900], ">"), ("output.note", ["manual"], "==")]
    assert [a["path"] for a in tools["escalate_to_human"]["arguments"]] == ["output.args.reason"]
    assert tools["escalate_to_human"]["arguments"][0]["ops"] == ["==", "!="]
    assert [r["atom"] for r in options["roles"]] == ["role:user"]
    assert [r["words"] for r in options["roles"]] == ["a user message"]
    assert {label["atom"] for label in options["labels"]} == {"angry_customer", "is_polite"}
    assert [o["atom"] for o in options["other_atoms"]] == ["stop_reason:end_turn"]
    assert [f["path"] for f in options["fields"]] == [
        "data.channel", "output.args.amount", "output.args.reason", "output.note", "output.tool"]
    assert options["evidence"] is True
    assert {p["name"] for p in options["patterns"]} == set(PATTERNS)
    assert [o["op"] for o in options["operators"]["number"]] == [">", ">=", "<", "<=", "==", "!="]


def test_options_without_evidence_offer_every_field_without_examples():
    options = builder_options(_vocabulary(False))

    assert all(t["arguments"] == [] for t in options["tools"])
    assert [(f["path"], f["examples"]) for f in options["fields"]] == [
        ("data.channel", []), ("output.args.amount", []), ("output.args.reason", [])]
    assert options["evidence"] is False


def test_the_builder_imports_no_django():
    out = subprocess.run([sys.executable, "-c", "import sys, studio.grounding.builder, "
                          "studio.grounding.builder_form; print('django' in sys.modules)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("text", [
    "G !(tool_call:issue_refund & output.args.amount > 500)",
    "G (tool_call:issue_refund & output.args.amount > 500 -> F[0,3] tool_call:escalate)",
    "G (tool_call:ship -> O tool_call:pay)",
    'G (tool_call:deploy & output.args.env == "prod" -> F tool_call:notify)',
])
def test_a_reading_prefills_the_builder_with_the_same_rule(text):
    from studio.grounding.builder_form import prefill

    query = prefill(parse(text))
    slots = {}
    for slot in ("p", "q"):
        if slot in query:
            conditions = []
            for path, op, value in zip(query.get(f"{slot}_path", []),
                                       query.get(f"{slot}_op", []),
                                       query.get(f"{slot}_value", [])):
                value = json.loads(value)
                conditions.append({"path": path, "op": op, "value": value})
            slots[slot] = {"atom": query[slot][0], "conditions": conditions}
    n = int(query["n"][0]) if "n" in query else None
    built = build(query["pattern"][0], "globally", slots, n)
    assert distinguishing_trace(built.formula, parse(text)) is None
