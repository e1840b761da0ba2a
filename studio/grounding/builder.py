"""Rules from the specification patterns and their scopes, each slot an event of the logs.

For what English cannot say (or says ambiguously), an author picks a pattern, a scope and, for
each slot, an event of the workspace's own vocabulary: a tool call with conditions on its own
arguments, a role, a label, or conditions on any field.  ``build`` turns the choice into a
formula of the rule language and reads it back in plain English; what the form's pickers offer
is ``studio.grounding.builder_form``.  Pure Python: no Django.

Events
------
An event slot is ``{"atom": "tool_call:issue_refund", "conditions": [{"path":
"output.args.amount", "op": ">", "value": 500}]}``: an atom (a built-in atom such as
``tool_call:NAME`` or ``role:user``, or a label), conditions on the event's fields, or both
(a plain string is the atom alone).  It holds at a step where the atom holds and every
condition does: ``tool_call:issue_refund & output.args.amount > 500``.

Patterns (each on the part of the session its scope selects; steps are numbered from 0)
--------
* ``absence`` p: no step has p.  ``existence`` p: some step has p.  ``universality`` p: every
  step has p.
* ``response`` p, q: every step with p has q at that step or a later one.
* ``bounded_response`` p, q, n: every step t with p has q at one of the steps t .. t + n (that
  exist: a session or scope that ends first leaves p unanswered).
* ``precedence`` p, q: no step has q before the first step with p (q at that step is allowed;
  with no p there is no q).
* ``response_chain`` p, q, r (p then q then r): every step with p has q at that step or later,
  and r at a step strictly after that q.
* ``precedence_chain`` p, q, r: r occurs only at steps i for which p held at some step j and q
  at some step k with j < k <= i (r needs p and then, strictly later, q; it may share q's step).
* ``at_most`` p, n / ``at_least`` p, n: p holds at no more / no fewer than n steps.
  ``exactly_once`` p: at exactly one step.

Every pattern is defined once, on a whole session: the six of ``studio.logic.patterns`` are
used as they are there, the others are defined here in the same style.  A scope reads the
same formula on its part of the session (``within``).

Scopes (after Dwyer, Avrunin and Corbett 1999 and paper 000 Table 2, on finite sessions)
------
* ``globally``: the whole session.
* ``before`` R (slot ``end``): the steps before the first R.  A session in which R never
  occurs has no such part, and nothing is required of it (as in Dwyer et al.: ``F R -> ...``);
  R at the first step makes the part empty, where only existence-like patterns (existence,
  at least, exactly once, the response chain's obligations) fail.
* ``after`` Q (slot ``start``): from the first Q (that step included) to the end of the
  session.  A session without Q is not constrained.
* ``between`` Q and R: every step where Q holds and R does not, with R at a later step, opens
  a part that runs from that step up to (not including) the next R.  A Q never followed by R
  opens nothing (the part must be closed).  As in Dwyer's formulas, each such Q opens its own
  part: a second Q before the same R opens a shorter part ending at that R, so what a pattern
  requires to happen (existence, at least n) must also happen after the last Q before R.
* ``after_until`` Q until R: as ``between``, but a part not closed by R runs to the end of the
  session (and must satisfy the pattern there).

A part is read as a finite trace of its own: ``G`` is vacuous at its end, ``F`` and ``U`` fail
there, the next step of its last step does not exist (strong ``X`` fails, ``WX`` holds).

Bad input raises ``BuildError(message, field)``, ``field`` naming what is at fault:
``pattern``, ``scope``, ``n``, ``slots``, ``slots.p``, ``slots.p.atom``,
``slots.p.conditions[0].path`` / ``.op`` / ``.value``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from studio.logic import patterns
from studio.logic.formula import (
    BARE_NAME,
    COMPARISONS,
    KEYWORDS,
    WX,
    And,
    Atom,
    Compare,
    F,
    FBounded,
    Formula,
    G,
    Iff,
    Implies,
    Not,
    Or,
    U,
    W,
    X,
)
from studio.logic.parser import FormulaSyntaxError, parse

# Counts and bounds: bounded response up to the patterns' own limit; counts stay small, the
# formula of "at most n" nests n operators.
MAX_STEPS = patterns.MAX_STEPS
MAX_COUNT = 20
MAX_CONDITIONS = 10
MAX_ATOM = 200
MAX_TEXT_VALUE = 500

EVENT_SLOTS = ("p", "q", "r", "start", "end")


class BuildError(ValueError):
    """A choice the builder cannot make into a rule; ``field`` names the part at fault."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Built:
    """A built rule: its formula (and the formula's text), the English reading, and the
    pattern and scope it was built from."""

    formula: Formula
    text: str
    english: str
    pattern: str
    scope: str


# ---------------------------------------------------------------------------------------------
# Patterns, defined once on a whole session

def response_chain(p: Formula, q: Formula, r: Formula) -> Formula:
    """``G (p -> F (q & X F r))``: every p is followed by q (at that step or later) and then,
    at a strictly later step, by r.  An obligation left open at the end is a violation."""
    return G(Implies(p, F(And(q, X(F(r))))))


def precedence_chain(p: Formula, q: Formula, r: Formula) -> Formula:
    """``!r W (p & !r & X (!r W q))``: no r until q has occurred strictly after a p.

    Equivalently, with j the first p and k the first q after it (k > j), no step before k has
    r; a session without such a k has no r at all.  r at the step of that q is allowed."""
    return W(Not(r), And(p, Not(r), X(W(Not(r), q))))


def at_most(p: Formula, n: int) -> Formula:
    """``G (p -> WX at_most(n - 1))`` down to ``at_most(0) = G !p``: p holds at no more than
    ``n`` steps; violated at the step where it holds for the ``n + 1``-th time.  ``at_most(p,
    1)`` is ``patterns.at_most_once``."""
    if n == 0:
        return patterns.absence(p)
    if n == 1:
        return patterns.at_most_once(p)
    return G(Implies(p, WX(at_most(p, n - 1))))


def at_least(p: Formula, n: int) -> Formula:
    """``F (p & X at_least(n - 1))`` down to ``at_least(1) = F p``: p holds at ``n`` or more
    distinct steps (known only when the ``n``-th arrives; failed at the end without it)."""
    if n <= 1:
        return patterns.existence(p)
    return F(And(p, X(at_least(p, n - 1))))


def exactly_once(p: Formula) -> Formula:
    """``F p & G (p -> WX G !p)``: p holds at exactly one step (the shape of
    ``patterns.must_call_once``, for any event)."""
    return And(patterns.existence(p), patterns.at_most_once(p))


@dataclass(frozen=True)
class PatternSpec:
    name: str
    label: str
    slots: tuple[str, ...]
    count: str | None          # "steps" (a bound), "times" (a count) or None
    make: Callable[..., Formula]
    slot_help: Mapping[str, str]


_P_ONLY = {"p": "the event"}

PATTERNS: dict[str, PatternSpec] = {spec.name: spec for spec in (
    PatternSpec("absence", "Never", ("p",), None,
                lambda p, q=None, r=None, n=None: patterns.absence(p), _P_ONLY),
    PatternSpec("existence", "At least once", ("p",), None,
                lambda p, q=None, r=None, n=None: patterns.existence(p), _P_ONLY),
    PatternSpec("universality", "At every step", ("p",), None,
                lambda p, q=None, r=None, n=None: patterns.universality(p), _P_ONLY),
    PatternSpec("response", "Every time ... then eventually ...", ("p", "q"), None,
                lambda p, q, r=None, n=None: patterns.response(p, q),
                {"p": "every time this happens", "q": "this must follow"}),
    PatternSpec("bounded_response", "Every time ... then within N steps ...", ("p", "q"),
                "steps", lambda p, q, r=None, n=0: patterns.bounded_response(p, q, n),
                {"p": "every time this happens", "q": "this must follow within N steps"}),
    PatternSpec("precedence", "Only after ...", ("p", "q"), None,
                lambda p, q, r=None, n=None: patterns.precedence(p, q),
                {"p": "this must happen first", "q": "before this may happen"}),
    PatternSpec("response_chain", "Every time ... then ... and then ...", ("p", "q", "r"),
                None, lambda p, q, r, n=None: response_chain(p, q, r),
                {"p": "every time this happens", "q": "this must follow",
                 "r": "and after it, this"}),
    PatternSpec("precedence_chain", "Only after ... and then ...", ("p", "q", "r"), None,
                lambda p, q, r, n=None: precedence_chain(p, q, r),
                {"p": "this must happen first", "q": "then this",
                 "r": "before this may happen"}),
    PatternSpec("at_most", "At most N times", ("p",), "times",
                lambda p, q=None, r=None, n=1: at_most(p, n), _P_ONLY),
    PatternSpec("at_least", "At least N times", ("p",), "times",
                lambda p, q=None, r=None, n=1: at_least(p, n), _P_ONLY),
    PatternSpec("exactly_once", "Exactly once", ("p",), None,
                lambda p, q=None, r=None, n=None: exactly_once(p), _P_ONLY),
)}


@dataclass(frozen=True)
class ScopeSpec:
    name: str
    label: str
    slots: tuple[str, ...]
    slot_help: Mapping[str, str]


SCOPES: dict[str, ScopeSpec] = {spec.name: spec for spec in (
    ScopeSpec("globally", "In the whole session", (), {}),
    ScopeSpec("before", "Before the first ...", ("end",), {"end": "before the first"}),
    ScopeSpec("after", "From the first ... on", ("start",), {"start": "from the first"}),
    ScopeSpec("between", "From each ... up to the next ...", ("start", "end"),
              {"start": "from each", "end": "up to the next (when one follows)"}),
    ScopeSpec("after_until", "From each ... until the next ... or the end",
              ("start", "end"), {"start": "from each", "end": "until the next (or the end)"}),
)}


# ---------------------------------------------------------------------------------------------
# Reading a formula within a part of the session that ends at the next `end`

def _empty(f: Formula) -> bool:
    """The truth of ``f`` on an empty remainder (classical negation; LTLf's conventions for
    the temporal operators)."""
    op = f.op
    if op in ("true", "WX", "G", "W", "R", "G[]"):
        return True
    if op == "not":
        return not _empty(f.args[0])
    if op == "and":
        return all(_empty(a) for a in f.args)
    if op == "or":
        return any(_empty(a) for a in f.args)
    if op == "implies":
        return (not _empty(f.args[0])) or _empty(f.args[1])
    if op == "iff":
        return _empty(f.args[0]) == _empty(f.args[1])
    return False  # false, atoms, comparisons, X, F, U, F[]


def within(f: Formula, end: Formula) -> Formula:
    """``f`` read on the part of the session from the current step up to (not including) the
    first step at or after it where ``end`` holds, or to the end of the session when there is
    none: that part is a finite trace of its own.  At a step where ``end`` holds the part is
    empty and the result has ``f``'s value on an empty trace (true for ``G``, false for ``F``).

    ``G a`` becomes ``a W end``, ``F a`` becomes ``!end U (!end & a)``, ``X a`` becomes
    ``X (!end & a)``, ``WX a`` becomes ``WX (end | a)``, until and weak until stop at ``end``
    likewise, and ``F[0,k] a`` becomes ``F[0,k] a & (!end U (!end & a))`` (an ``a`` within
    ``k`` steps, and one before the part ends: together, one within both).  Past operators
    and other bounds are refused (no pattern uses them)."""
    return _within(f, end, inside=False)


def _at_end(f: Formula, end: Formula, value: bool) -> Formula:
    """``f`` within the part at steps inside it, and ``value`` at a step where ``end``
    holds."""
    if _empty(f) == value:
        return _within(f, end, inside=False)
    inner = _within(f, end, inside=True)
    return Or(end, inner) if value else And(Not(end), inner)


def _within(f: Formula, end: Formula, inside: bool) -> Formula:
    # ``inside``: the result is only ever read at steps where ``end`` does not hold.
    op, args = f.op, f.args
    if op in ("true", "false"):
        return f
    if op in ("atom", "cmp"):
        return f if inside else And(Not(end), f)
    if op == "not":
        return Not(_within(args[0], end, inside))
    if op in ("and", "or"):
        parts = [_within(a, end, inside) for a in args]
        return And(*parts) if op == "and" else Or(*parts)
    if op in ("implies", "iff"):
        a, b = (_within(x, end, inside) for x in args)
        return Implies(a, b) if op == "implies" else Iff(a, b)
    if op == "G":
        return W(_within(args[0], end, inside=True), end)
    if op == "F":
        return U(Not(end), _at_end(args[0], end, False))
    if op == "U":
        return U(_at_end(args[0], end, False), _at_end(args[1], end, False))
    if op == "W":
        return W(_within(args[0], end, inside=True), _at_end(args[1], end, True))
    if op == "R":  # a R b: b up to and including the first a
        return _within(W(args[1], And(args[0], args[1])), end, inside)
    if op == "X":
        nxt = X(_at_end(args[0], end, False))
        return nxt if inside else And(Not(end), nxt)
    if op == "WX":
        nxt = WX(_at_end(args[0], end, True))
        return nxt if inside else Or(end, nxt)
    if op == "F[]" and f.payload[0] == 0:
        a = args[0]
        return And(FBounded(0, f.payload[1], _within(a, end, inside=True)),
                   U(Not(end), _at_end(a, end, False)))
    raise ValueError(f"{f.text}: {op} cannot be read within a scope")


def scoped(formula: Formula, scope: str, start: Formula | None = None,
           end: Formula | None = None) -> Formula:
    """A pattern's whole-session ``formula`` under ``scope`` (see the module's docstring):

    * globally: ``formula``;
    * before R: ``F R -> within(formula, R)``;
    * after Q: ``!Q W (Q & formula)`` (from the first Q on);
    * between Q and R: ``G ((Q & !R & F R) -> within(formula, R))``;
    * after Q until R: ``G ((Q & !R) -> within(formula, R))``.
    """
    if scope == "globally":
        return formula
    if scope == "before":
        return Implies(F(end), within(formula, end))
    if scope == "after":
        return W(Not(start), And(start, formula))
    if scope == "between":
        return G(Implies(And(start, Not(end), F(end)), within(formula, end)))
    if scope == "after_until":
        return G(Implies(And(start, Not(end)), within(formula, end)))
    raise ValueError(f"unknown scope {scope!r}")


# ---------------------------------------------------------------------------------------------
# Events

_NUMBER_TYPES = (int, float)


def _check_written(f: Formula, message: str, field: str) -> None:
    """Whether the rule language can write ``f`` and read it back (the parser refuses some
    characters in quoted text: NUL, bidirectional controls, zero-width characters)."""
    try:
        back = parse(f.text)
    except FormulaSyntaxError as exc:
        raise BuildError(f"{message}: {exc.message}", field) from None
    if back is not f:  # pragma: no cover - printing then parsing gives the same formula
        raise BuildError(f"{message}: it does not read back as written", field)


def _atom(value: Any, field: str) -> Formula:
    if not isinstance(value, str) or not value.strip():
        raise BuildError("an event's atom must be a non-empty name, such as "
                         "tool_call:issue_refund, role:user or a label", field)
    if value != value.strip():
        raise BuildError("an atom name has no spaces around it", field)
    if len(value) > MAX_ATOM:
        raise BuildError(f"an atom name has at most {MAX_ATOM} characters", field)
    atom = Atom(value)
    _check_written(atom, f"the atom {value!r} cannot be written in a rule", field)
    return atom


def check_value(value: Any, op: str, field: str) -> Any:
    """A condition's constant: a number (finite), a text, true/false or null; order (< <= >
    >=) only for numbers and texts, as rules compare."""
    if isinstance(value, bool) or value is None:
        if op not in ("==", "!="):
            shown = "null" if value is None else json.dumps(value)
            raise BuildError(f"{shown} has no order: compare it with == or !=", field)
        return value
    if isinstance(value, _NUMBER_TYPES):
        if not math.isfinite(value):
            raise BuildError("a number in a condition must be finite", field)
        return value
    if isinstance(value, str):
        if len(value) > MAX_TEXT_VALUE:
            raise BuildError(f"a text in a condition has at most {MAX_TEXT_VALUE} characters",
                             field)
        return value
    raise BuildError("a condition's value must be a number, a text, true, false or null "
                     f"(got {type(value).__name__})", field)


def _condition(raw: Any, field: str) -> Formula:
    if not isinstance(raw, Mapping):
        raise BuildError('a condition is {"path": ..., "op": ..., "value": ...}', field)
    unknown = sorted(str(k) for k in raw if k not in ("path", "op", "value"))
    if unknown:
        raise BuildError(f"a condition has no {unknown[0]!r}; it has path, op and value",
                         f"{field}.{unknown[0]}")
    path = raw.get("path")
    if not isinstance(path, str) or not path:
        raise BuildError("a condition needs the path of a field, such as output.args.amount",
                         f"{field}.path")
    if not BARE_NAME.fullmatch(path) or path in KEYWORDS or len(path) > MAX_ATOM:
        raise BuildError(f"{path[:60]!r} is not a field path a rule can read (lower-case "
                         "names joined by dots, such as output.args.amount)", f"{field}.path")
    op = raw.get("op")
    if op not in COMPARISONS:
        raise BuildError(f"a condition compares with one of {' '.join(COMPARISONS)}",
                         f"{field}.op")
    if "value" not in raw:
        raise BuildError("a condition needs the value to compare with", f"{field}.value")
    value = check_value(raw["value"], op, f"{field}.value")
    condition = Compare(("path", path), op, ("const", value))
    _check_written(condition, "this value cannot be written in a rule", f"{field}.value")
    return condition


@dataclass(frozen=True)
class Event:
    """One slot's event: its atom (or None), its conditions as ``(path, op, value)``, and its
    formula."""

    atom: str | None
    conditions: tuple[tuple[str, str, Any], ...]
    formula: Formula


def event(raw: Any, field: str = "slots.p") -> Event:
    """The event a slot names (see the module's docstring); ``BuildError`` naming the part of
    the slot at fault."""
    if isinstance(raw, str):
        raw = {"atom": raw}
    if not isinstance(raw, Mapping):
        raise BuildError('an event is an atom name or {"atom": ..., "conditions": [...]}',
                         field)
    unknown = sorted(str(k) for k in raw if k not in ("atom", "conditions"))
    if unknown:
        raise BuildError(f"an event has no {unknown[0]!r}; it has atom and conditions",
                         f"{field}.{unknown[0]}")
    atom_name = raw.get("atom")
    if atom_name == "":
        atom_name = None
    conditions = raw.get("conditions") or []
    if not isinstance(conditions, (list, tuple)):
        raise BuildError("conditions are a list", f"{field}.conditions")
    if len(conditions) > MAX_CONDITIONS:
        raise BuildError(f"an event has at most {MAX_CONDITIONS} conditions",
                         f"{field}.conditions")
    if atom_name is None and not conditions:
        raise BuildError("choose an event: a tool, a role or a label, conditions on its "
                         "fields, or both", field)
    parts = [] if atom_name is None else [_atom(atom_name, f"{field}.atom")]
    read = []
    for index, raw_condition in enumerate(conditions):
        where = f"{field}.conditions[{index}]"
        parts.append(_condition(raw_condition, where))
        read.append((raw_condition["path"], raw_condition["op"], raw_condition["value"]))
    formula = And(*parts)
    if formula.op == "false":
        raise BuildError("these conditions contradict each other: no step can meet them",
                         f"{field}.conditions")
    return Event(atom_name, tuple(read), formula)


# ---------------------------------------------------------------------------------------------
# English

_OP_WORDS = {">": "over", ">=": "of at least", "<": "under", "<=": "of at most",
             "==": "of", "!=": "other than"}
_ROLE_NOUNS = {"user": "a user message", "assistant": "an assistant message",
               "tool": "a tool result", "system": "a system message"}
_ROLE_CLAUSES = {"user": "the user writes", "assistant": "the assistant writes"}


def field_words(path: str) -> str:
    """A field's name in words: the last part of its path that is not a list index, with
    underscores as spaces (``output.args.customer_id`` -> ``customer id``)."""
    parts = [p for p in path.split(".") if not p.isdigit()]
    name = parts[-1] if parts else path
    return name.replace("_", " ").strip() or path


def _article(words: str) -> str:
    first = words[:1].lower()
    if first in "aeio" or (first == "u" and words[1:2].lower() in ("n", "m")):
        return "an"
    return "a"


def value_words(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"“{value}”"
    return json.dumps(value)


def condition_words(path: str, op: str, value: Any) -> str:
    """``an amount over 500``, ``a currency of “EUR”``, ``approved true``, ``no note``."""
    name = field_words(path)
    if value is None:
        return f"no {name}" if op == "==" else f"some {name}"
    if isinstance(value, bool):
        return f"{name} {'not ' if op == '!=' else ''}{value_words(value)}"
    return f"{_article(name)} {name} {_OP_WORDS[op]} {value_words(value)}"


@dataclass(frozen=True)
class EventWords:
    """An event in words: a noun phrase (``a call to issue_refund with an amount over 500``)
    and a clause (``the agent calls issue_refund with an amount over 500``)."""

    noun: str
    clause: str


def event_words(e: Event) -> EventWords:
    with_ = ""
    if e.conditions:
        with_ = " with " + " and ".join(condition_words(*c) for c in e.conditions)
    atom = e.atom
    if atom is None:
        return EventWords(f"a step{with_}", f"a step has{with_[len(' with'):]}")
    if atom.startswith("tool_call:"):
        tool = atom[len("tool_call:"):]
        return EventWords(f"a call to {tool}{with_}", f"the agent calls {tool}{with_}")
    if atom.startswith("role:"):
        role = atom[len("role:"):]
        noun = _ROLE_NOUNS.get(role, f"a message from the role {role}") + with_
        clause = _ROLE_CLAUSES.get(role) if not with_ else None
        return EventWords(noun, clause or f"there is {noun}")
    if atom.startswith("stop_reason:"):
        reason = atom[len("stop_reason:"):]
        noun = f"a stop for the reason {reason}{with_}"
        return EventWords(noun, f"the agent stops for the reason {reason}{with_}")
    if atom.startswith("text_contains:"):
        text = atom[len("text_contains:"):]
        noun = f"a step whose text contains “{text}”" + with_
        return EventWords(noun, f"there is {noun}")
    noun = f"a step labelled {atom}{with_}"
    return EventWords(noun, f"a step is labelled {atom}{with_}" if not with_
                      else f"there is {noun}")


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _every(noun: str) -> str:
    # "every step must be a step with ..." reads "every step must be one with ..."
    return "one " + noun[len("a step "):] if noun.startswith("a step ") else noun


def _body(pattern: str, w: Mapping[str, EventWords], n: int | None) -> str:
    p, q, r = w.get("p"), w.get("q"), w.get("r")
    if pattern == "absence":
        return f"{p.noun} must never happen"
    if pattern == "existence":
        return f"{p.noun} must happen at least once"
    if pattern == "universality":
        return f"every step must be {_every(p.noun)}"
    if pattern == "response":
        return f"every time {p.clause}, {q.noun} must follow, at that step or a later one"
    if pattern == "bounded_response":
        if n == 0:
            return f"every time {p.clause}, {q.noun} must happen at that same step"
        if n == 1:
            return f"every time {p.clause}, {q.noun} must happen at that step or the next one"
        return (f"every time {p.clause}, {q.noun} must happen within {n} steps: at that "
                f"step or one of the next {n}")
    if pattern == "precedence":
        return (f"{q.noun} may only happen once {p.noun} has happened (at an earlier step "
                "or the same one)")
    if pattern == "response_chain":
        return (f"every time {p.clause}, {q.noun} must follow (at that step or a later one) "
                f"and, at a later step still, {r.noun}")
    if pattern == "precedence_chain":
        return (f"{r.noun} may only happen once {p.noun} has happened and, at a later step, "
                f"{q.noun} (the last may share its step)")
    if pattern == "at_most":
        return f"{p.noun} may happen at most {_times(n)}"
    if pattern == "at_least":
        return f"{p.noun} must happen at least {_times(n)}"
    if pattern == "exactly_once":
        return f"{p.noun} must happen exactly once"
    raise ValueError(pattern)  # pragma: no cover - checked by build


_COUNTS = ("existence", "at_least", "at_most", "exactly_once")


def english(pattern: str, scope: str, words: Mapping[str, EventWords],
            n: int | None = None) -> str:
    """The rule in plain words, about the workspace's events."""
    body = _body(pattern, words, n)
    start, end = words.get("start"), words.get("end")
    if scope == "globally":
        text = body + (" in the session" if pattern in _COUNTS else "")
    elif scope == "before":
        text = f"before the first {_bare(end.noun)} (in sessions that have one), {body}"
    elif scope == "after":
        text = f"from the first {_bare(start.noun)} on (in sessions that have one), {body}"
    elif scope == "between":
        text = (f"from each {_bare(start.noun)} up to the next {_bare(end.noun)} (when one "
                f"follows), {body}")
    else:
        text = (f"from each {_bare(start.noun)} until the next {_bare(end.noun)}, or to the "
                f"end of the session if none follows, {body}")
    return text[0].upper() + text[1:] + "."


def _bare(noun: str) -> str:
    """A noun phrase without its indefinite article: "the first call to ..."."""
    for article in ("a ", "an "):
        if noun.startswith(article):
            return noun[len(article):]
    return noun


# ---------------------------------------------------------------------------------------------
# Building

def _count(pattern: PatternSpec, n: Any) -> int | None:
    if pattern.count is None:
        if n is not None:
            raise BuildError(f"{pattern.name} takes no number", "n")
        return None
    low, high = (0, MAX_STEPS) if pattern.count == "steps" else (1, MAX_COUNT)
    what = "steps" if pattern.count == "steps" else "times"
    if n is None:
        raise BuildError(f"{pattern.name} needs a number of {what}", "n")
    if isinstance(n, bool) or not isinstance(n, int) or not low <= n <= high:
        raise BuildError(f"the number of {what} is a whole number from {low} to {high}", "n")
    return n


def slots_of(pattern: str, scope: str) -> tuple[str, ...]:
    """The event slots a pattern under a scope takes, in order."""
    return PATTERNS[pattern].slots + SCOPES[scope].slots


def build(pattern: str, scope: str, slots: Mapping[str, Any], n: int | None = None) -> Built:
    """The rule of ``pattern`` under ``scope`` with each slot's event (see the module's
    docstring); ``n`` is the bound of ``bounded_response`` (0 to ``MAX_STEPS``) or the count
    of ``at_most``/``at_least`` (1 to ``MAX_COUNT``), and None for the others."""
    spec = PATTERNS.get(pattern) if isinstance(pattern, str) else None
    if spec is None:
        raise BuildError(f"unknown pattern {str(pattern)[:60]!r}; the patterns are "
                         f"{', '.join(PATTERNS)}", "pattern")
    scope_spec = SCOPES.get(scope) if isinstance(scope, str) else None
    if scope_spec is None:
        raise BuildError(f"unknown scope {str(scope)[:60]!r}; the scopes are "
                         f"{', '.join(SCOPES)}", "scope")
    if not isinstance(slots, Mapping):
        raise BuildError("slots map each slot (p, q, r, start, end) to an event", "slots")
    wanted = spec.slots + scope_spec.slots
    for name in slots:
        if name not in wanted:
            takes = ", ".join(wanted)
            raise BuildError(f"{pattern} {scope.replace('_', ' ')} has no slot "
                             f"{str(name)[:40]!r}; it takes {takes}", f"slots.{name}")
    events: dict[str, Event] = {}
    for name in wanted:
        if slots.get(name) in (None, "", {}):
            help_ = {**spec.slot_help, **scope_spec.slot_help}[name]
            raise BuildError(f"choose the event for {name} ({help_})", f"slots.{name}")
        events[name] = event(slots[name], f"slots.{name}")
    count = _count(spec, n)
    args = {k: events[k].formula for k in spec.slots}
    whole = spec.make(**args, n=count) if spec.count else spec.make(**args)
    start = events["start"].formula if "start" in events else None
    end = events["end"].formula if "end" in events else None
    formula = scoped(whole, scope, start, end)
    words = {k: event_words(e) for k, e in events.items()}
    return Built(formula, formula.text, english(pattern, scope, words, count), pattern, scope)


__all__ = [
    "MAX_COUNT", "MAX_STEPS", "PATTERNS", "SCOPES", "BuildError", "Built", "Event", "EventWords",
    "at_least", "at_most", "build", "event", "event_words", "english", "exactly_once",
    "precedence_chain", "response_chain", "scoped", "slots_of", "within",
]
