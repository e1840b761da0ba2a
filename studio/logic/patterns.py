"""Policy-rule kinds and temporal specification patterns, as formulas.

Two families of ready-made rules, each a function that returns an interned :class:`Formula`:

* the declarative **rule kinds** of the peer checker (paper 003, "policy rule kinds -> LTL
  formulas"): ``no_call``, ``must_call_before``, ``must_call_once``, ``required_stop_reason``,
  ``forbidden_text``, ``must_include_text`` and ``ltl_formula``.  They read the built-in atoms of
  the canonical event: ``tool_call:NAME``, ``stop_reason:R`` and ``text_contains:T``;
* the **specification patterns** of paper 000 (Table 2, after Dwyer et al.) and a few more:
  ``universality``, ``absence``, ``existence``, ``response``, ``absence_between``,
  ``constrained_response``, ``precedence``, ``at_most_once``, ``next_step_response`` and
  ``bounded_response``.  Their arguments are atom names (``str``) or formulas.

Every docstring states the rule's meaning on a finite session under the semantics of this package
(LTLf: strong ``X``, weak ``WX``, ``G`` vacuous at the end, ``F`` and ``U`` false at the end).
Steps are numbered from 0.  ``RULE_KINDS`` / ``rule_from_kind`` and ``PATTERNS`` / ``pattern``
build rules from a name and parameters (as stored rules and API requests carry them) and raise a
``ValueError`` that names the kind and the parameter at fault.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .formula import MAX_BOUND, WX, And, Atom, F, FBounded, Formula, G, Implies, Not, Or, U, W, X
from .parser import parse

TOOL_CALL = "tool_call:"
STOP_REASON = "stop_reason:"
TEXT_CONTAINS = "text_contains:"

# The parser refuses bounds above this, so a larger one would build a formula whose text could
# not be read back.
MAX_STEPS = MAX_BOUND

# How each parameter reads in an error message.
_PARAMETER_HELP = {
    "tool": "a tool name",
    "first": "a tool name",
    "then": "a tool name",
    "allowed": "a list of stop reasons",
    "text": "a text",
    "formula": "the text of an LTL formula",
    "p": "an atom name or a formula",
    "q": "an atom name or a formula",
    "r": "an atom name or a formula",
    "k": f"a whole number of steps from 0 to {MAX_STEPS}",
}


# ---------------------------------------------------------------------------------------------
# Checking arguments

def _bad(kind: str, param: str, value: Any, detail: str = "") -> ValueError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ValueError(f"{kind} parameter {param!r} must be {_PARAMETER_HELP[param]}{detail}; "
                      f"got {shown} ({type(value).__name__})")


def _name(kind: str, param: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _bad(kind, param, value, " (a non-empty string)")
    return value


def _prop(kind: str, param: str, value: Any) -> Formula:
    """A pattern argument: a formula as is, a string as the atom of that name (never parsed:
    ``"p & q"`` is one atom with an odd name, not a conjunction)."""
    if isinstance(value, Formula):
        return value
    if isinstance(value, str) and value:
        return Atom(value)
    raise _bad(kind, param, value)


# ---------------------------------------------------------------------------------------------
# The rule kinds of paper 003

def no_call(tool: str) -> Formula:
    """``G !tool_call:TOOL``: the tool is never called, at any step of the session.

    Violated at every step that calls the tool."""
    return G(Not(Atom(TOOL_CALL + _name("no_call", "tool", tool))))


def must_call_before(first: str, then: str) -> Formula:
    """``(!tool_call:THEN) W tool_call:FIRST``: ``then`` is not called until ``first`` has been.

    A call of ``then`` at the same step as the first call of ``first``, or at any later step, is
    allowed; a call of ``then`` at an earlier step is a violation.  The until is weak, so a
    session that calls neither tool (or only ``first``) satisfies the rule: with a strong until
    it would be flagged for never calling ``first``.
    """
    a = Atom(TOOL_CALL + _name("must_call_before", "first", first))
    b = Atom(TOOL_CALL + _name("must_call_before", "then", then))
    return W(Not(b), a)


def must_call_once(tool: str) -> Formula:
    """``F a & G (a -> WX G !a)`` with ``a = tool_call:TOOL``: the tool is called at exactly one
    step of the session.

    Violated when the tool is never called (known only when the session ends) and when it is
    called a second time (at that step).  A single call at the last step satisfies the rule.
    Paper 003 writes ``X`` for the next step but states exactly this last-step behaviour; that
    holds in its checker only because its ``X`` reads the operand one step past the end, where
    ``G`` is vacuously true.  Here ``X`` is strong (false at the last step, so a single final call
    would violate ``a -> X G !a``), and the weak ``WX`` gives the documented meaning.
    """
    a = Atom(TOOL_CALL + _name("must_call_once", "tool", tool))
    return And(F(a), at_most_once(a))


def required_stop_reason(allowed: list[str]) -> Formula:
    """``F (stop_reason:R1 | stop_reason:R2 | ...)``: at some step the session stops for one of
    the allowed reasons.

    Satisfied as soon as one of them is seen; violated when the session ends without any.  The
    rule does not forbid other stop reasons at other steps.
    """
    if isinstance(allowed, (str, bytes)) or not isinstance(allowed, (list, tuple)):
        raise _bad("required_stop_reason", "allowed", allowed)
    if not allowed:
        raise ValueError("required_stop_reason parameter 'allowed' must name at least one stop "
                         "reason (with none the rule could never be satisfied)")
    for reason in allowed:
        if not isinstance(reason, str) or not reason:
            raise _bad("required_stop_reason", "allowed", allowed,
                       " (each a non-empty string)")
    return F(Or(*[Atom(STOP_REASON + reason) for reason in allowed]))


def forbidden_text(text: str) -> Formula:
    """``G !text_contains:TEXT``: no step of the session contains the text.

    Violated at every step that does."""
    return G(Not(Atom(TEXT_CONTAINS + _name("forbidden_text", "text", text))))


def must_include_text(text: str) -> Formula:
    """``F text_contains:TEXT``: some step of the session contains the text.

    Satisfied at the first step that does; violated when the session ends without one."""
    return F(Atom(TEXT_CONTAINS + _name("must_include_text", "text", text)))


def ltl_formula(formula: str) -> Formula:
    """The formula written in the rule language, as ``parse`` reads it.

    A formula that does not parse raises ``FormulaSyntaxError`` (a ``ValueError``) naming the line
    and column."""
    if not isinstance(formula, str):
        raise _bad("ltl_formula", "formula", formula)
    return parse(formula)


RULE_KINDS: dict[str, Callable[..., Formula]] = {
    "no_call": no_call,
    "must_call_before": must_call_before,
    "must_call_once": must_call_once,
    "required_stop_reason": required_stop_reason,
    "forbidden_text": forbidden_text,
    "must_include_text": must_include_text,
    "ltl_formula": ltl_formula,
}


# ---------------------------------------------------------------------------------------------
# Specification patterns (paper 000, Table 2, and more)

def universality(p: str | Formula) -> Formula:
    """``G p``: ``p`` holds at every step."""
    return G(_prop("universality", "p", p))


def absence(p: str | Formula) -> Formula:
    """``G !p``: ``p`` holds at no step."""
    return G(Not(_prop("absence", "p", p)))


def existence(p: str | Formula) -> Formula:
    """``F p``: ``p`` holds at some step (a session that ends without one violates it)."""
    return F(_prop("existence", "p", p))


def response(p: str | Formula, q: str | Formula) -> Formula:
    """``G (p -> F q)``: every step where ``p`` holds is answered by ``q`` at that same step or a
    later one.  An occurrence of ``p`` still unanswered when the session ends is a violation."""
    return G(Implies(_prop("response", "p", p), F(_prop("response", "q", q))))


def absence_between(p: str | Formula, q: str | Formula, r: str | Formula) -> Formula:
    """``G ((q & !r & F r) -> (!p U r))``: ``p`` does not occur between ``q`` and the next ``r``.

    Whenever ``q`` holds at a step where ``r`` does not and ``r`` holds at some later step, ``p``
    must not hold from that step (included) up to the next ``r`` (excluded).  If no ``r`` follows,
    nothing is required: ``p`` after a ``q`` that is never closed by ``r`` is allowed.  So a
    violation can only be known once the closing ``r`` arrives.
    """
    kind = "absence_between"
    fp, fq, fr = _prop(kind, "p", p), _prop(kind, "q", q), _prop(kind, "r", r)
    return G(Implies(And(fq, Not(fr), F(fr)), U(Not(fp), fr)))


def constrained_response(p: str | Formula, q: str | Formula, r: str | Formula) -> Formula:
    """``G (p -> (!q U r))``: after every ``p``, ``q`` does not occur until ``r`` does, and ``r``
    must come.

    From each step where ``p`` holds (that step included), ``q`` must not hold at any step before
    the first ``r`` at or after it, and such an ``r`` must exist: a ``p`` not followed by ``r``
    before the session ends is a violation even without any ``q``.
    """
    kind = "constrained_response"
    fp, fq, fr = _prop(kind, "p", p), _prop(kind, "q", q), _prop(kind, "r", r)
    return G(Implies(fp, U(Not(fq), fr)))


def precedence(p: str | Formula, q: str | Formula) -> Formula:
    """``!q W p``: ``q`` occurs only once ``p`` has: no step before the first ``p`` has ``q``.

    ``q`` at the step of the first ``p`` is allowed, and a session without ``p`` satisfies the rule
    as long as it has no ``q``."""
    return W(Not(_prop("precedence", "q", q)), _prop("precedence", "p", p))


def at_most_once(p: str | Formula) -> Formula:
    """``G (p -> WX G !p)``: ``p`` holds at no more than one step (possibly none).

    Violated at the second step where ``p`` holds.  ``WX`` rather than ``X``: at the last step
    there is no next step, and a ``p`` there must not be a violation."""
    fp = _prop("at_most_once", "p", p)
    return G(Implies(fp, WX(G(Not(fp)))))


def next_step_response(p: str | Formula, q: str | Formula) -> Formula:
    """``G (p -> X q)``: every step where ``p`` holds is immediately followed by a step where ``q``
    holds.  The next is strong: ``p`` at the last step of the session is a violation, since the
    step that should answer it never comes."""
    kind = "next_step_response"
    return G(Implies(_prop(kind, "p", p), X(_prop(kind, "q", q))))


def bounded_response(p: str | Formula, q: str | Formula, k: int) -> Formula:
    """``G (p -> F[0,k] q)``: every step where ``p`` holds is answered by ``q`` within ``k``
    steps, the step of ``p`` counting as 0 (so ``q`` at one of the steps ``t`` to ``t + k`` for
    ``p`` at step ``t``; with ``k = 0`` this is ``G (p -> q)``).

    A missing answer is detected at step ``t + k``, the last step of the window; if the session
    ends before that step, the unanswered ``p`` is a violation at the end (the steps of the window
    must exist, as with ``F``).
    """
    kind = "bounded_response"
    fp, fq = _prop(kind, "p", p), _prop(kind, "q", q)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_STEPS:
        raise _bad(kind, "k", k)
    return G(Implies(fp, FBounded(0, k, fq)))


PATTERNS: dict[str, Callable[..., Formula]] = {
    "universality": universality,
    "absence": absence,
    "existence": existence,
    "response": response,
    "absence_between": absence_between,
    "constrained_response": constrained_response,
    "precedence": precedence,
    "at_most_once": at_most_once,
    "next_step_response": next_step_response,
    "bounded_response": bounded_response,
}


# ---------------------------------------------------------------------------------------------
# Building from a name and parameters

def rule_from_kind(kind: str, params: Mapping[str, Any]) -> Formula:
    """The formula of a declarative rule, e.g. ``rule_from_kind("no_call", {"tool": "rm"})``.

    Raises ``ValueError`` for an unknown kind and for a missing, unexpected or badly typed
    parameter, naming the kind and the parameter."""
    return _build(RULE_KINDS, "rule kind", "kinds", kind, params)


def pattern(name: str, **args: Any) -> Formula:
    """The formula of a specification pattern, e.g. ``pattern("response", p="ask", q="answer")``.

    Raises ``ValueError`` like ``rule_from_kind``."""
    return _build(PATTERNS, "pattern", "patterns", name, args)


def _build(registry: Mapping[str, Callable[..., Formula]], what: str, plural: str, name: Any,
           params: Any) -> Formula:
    make = registry.get(name) if isinstance(name, str) else None
    if make is None:
        raise ValueError(f"unknown {what} {name!r}; known {plural}: {', '.join(registry)}")
    if not isinstance(params, Mapping):
        raise ValueError(f"the parameters of {name} must be a mapping from parameter names to "
                         f"values; got {type(params).__name__}")
    expected = list(inspect.signature(make).parameters)
    unknown = [p for p in params if p not in expected]
    if unknown:
        raise ValueError(f"{name} does not take parameter {unknown[0]!r}; "
                         f"it takes {_and(repr(p) for p in expected)}")
    missing = [p for p in expected if p not in params]
    if missing:
        needed = _and(f"{p!r} ({_PARAMETER_HELP[p]})" for p in missing)
        plural = "s" if len(missing) > 1 else ""
        raise ValueError(f"{name} needs parameter{plural} {needed}")
    return make(**params)


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


__all__ = [
    "MAX_STEPS", "PATTERNS", "RULE_KINDS", "absence", "absence_between", "at_most_once",
    "bounded_response", "constrained_response", "existence", "forbidden_text", "ltl_formula",
    "must_call_before", "must_call_once", "must_include_text", "next_step_response", "no_call",
    "pattern", "precedence", "required_stop_reason", "response", "rule_from_kind",
    "universality",
]
