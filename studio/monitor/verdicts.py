"""A rule's verdict in a session, and how its violations are counted: one definition for every
page, the API and every export.

A rule's verdict in a session is *violated* when at least one violation was counted, *satisfied*
when none was and the session's end verdict holds, and *pending* only while the session is still
open (a live session not yet ended; an uploaded log is a finished session).

How violations are counted is part of each rule version (``COUNTING_MODES``):

* ``first`` - TRAC (paper 000, Algorithm 1): the first verdict stands; at most one violation.
* ``after_violation`` - monitoring restarts after a violation only, so repeated violations are
  each counted, and once the rule is satisfied it stays satisfied.  The default for rules that
  are not of the form ``G phi``.
* ``every_verdict`` - TRAC_R (paper 000, Algorithm 2): restarts after every verdict, satisfied
  or violated.
* ``per_instance`` - for ``G phi`` only (its default): every step opens its own obligation
  ``phi``, and every obligation that fails is its own violation.
"""

from __future__ import annotations

from studio.logic.progression import is_invariant
from studio.logic.parser import FormulaSyntaxError, parse

FIRST, AFTER_VIOLATION, EVERY_VERDICT, PER_INSTANCE = (
    "first", "after_violation", "every_verdict", "per_instance")
COUNTING_MODES = (FIRST, AFTER_VIOLATION, EVERY_VERDICT, PER_INSTANCE)

PENDING, SATISFIED, VIOLATED = "pending", "satisfied", "violated"

# One English sentence per counting mode, for the editor, the review aids and the evidence report.
COUNTING_SENTENCES = {
    FIRST: "Only the first verdict counts: once the rule is violated or met in a session, "
           "nothing later in that session changes it (at most one violation a session).",
    AFTER_VIOLATION: "After a violation the rule is checked afresh from the next step, so every "
                     "repeated violation is counted; once the rule is met it stays met for the "
                     "rest of the session.",
    EVERY_VERDICT: "After every verdict, met or violated, the rule is checked afresh from the "
                   "next step, so it must be met again and again: a later repetition can count "
                   "as a new violation even after the rule was met.",
    PER_INSTANCE: "Every step starts its own obligation, and each obligation that fails is its "
                  "own violation, with the step that started it and the step that found it.",
}

COUNTING_LABELS = {
    FIRST: "first verdict only",
    AFTER_VIOLATION: "again after each violation",
    EVERY_VERDICT: "again after every verdict",
    PER_INSTANCE: "every step's obligation",
}

# Verdicts in words a compliance officer reads without knowing temporal logic.
VERDICT_WORDS = {
    VIOLATED: "violated",
    SATISFIED: "complied",
    PENDING: "not decided yet: session still open",
}


class CountingError(ValueError):
    """A counting mode that does not exist, or does not fit the rule."""


def default_counting(is_globally: bool) -> str:
    """``per_instance`` for a rule of the form ``G phi``, ``after_violation`` otherwise."""
    return PER_INSTANCE if is_globally else AFTER_VIOLATION


def check_counting(counting: str | None, is_globally: bool) -> str:
    """The counting mode to use (the default for ``None`` or ``""``), or ``CountingError``."""
    if not counting:
        return default_counting(is_globally)
    if counting not in COUNTING_MODES:
        raise CountingError(f"unknown counting {counting!r}; use one of "
                            + ", ".join(COUNTING_MODES))
    if counting == PER_INSTANCE and not is_globally:
        raise CountingError("counting 'per_instance' needs a rule of the form G phi "
                            "(every step opens an obligation); use first, after_violation or "
                            "every_verdict")
    return counting


def session_verdict(violations: int, final: str, *, open: bool = False,
                    settled: str | None = None, counting: str | None = None) -> str:
    """The one verdict of a rule in a session.

    ``violations``: how many were counted; ``final``: the LTLf verdict if the session ended now;
    ``open``: the session may still receive events (a live session not ended);
    ``settled``/``counting``: TRAC's verdict so far and the rule's counting, which let an open
    session already show *satisfied* when nothing later can count a violation.
    """
    if violations:
        return VIOLATED
    if open:
        if settled == SATISFIED and counting in (FIRST, AFTER_VIOLATION):
            return SATISFIED
        return PENDING
    return SATISFIED if final == SATISFIED else VIOLATED


def verdict_words(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


def effective_counting(counting: str | None, formula: str) -> str:
    """The counting a version uses: its own, or the default for its formula when it stores
    none ("" in versions written before counting was a choice)."""
    if counting:
        return counting
    try:
        # The form the monitors see: negation normal form (`!F p` is `G !p`).
        return default_counting(is_invariant(parse(formula)))
    except FormulaSyntaxError:
        return AFTER_VIOLATION
