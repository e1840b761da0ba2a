"""A rule's verdict in a session, and how its violations are counted: one definition for every
page, the API and every export.

A rule's verdict in a session is *violated* when at least one violation was counted, *complied*
when none was and the session's end verdict holds, and *open* only while the session is still
open (a live session not yet ended; an uploaded log is a finished session).

The monitors and the database keep the names ``satisfied`` and ``pending`` (``SATISFIED``,
``PENDING``); everything a person or a file reads - pages, exports, API values, the client - says
``complied``, ``violated`` or ``open`` (``verdict_words``).  The JSON API keeps the old value of a
changed field under ``<field>_was`` for one release (docs/api-verdicts.md).

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

# The one word for each verdict wherever a person or a file reads it (pages, CSV, report.json,
# API values, the client).  Open: not decided yet, the session may still go either way.
COMPLIED, OPEN = "complied", "open"
VERDICT_WORDS = {
    VIOLATED: VIOLATED,
    SATISFIED: COMPLIED,
    PENDING: OPEN,
}
STORED_VERDICTS = {word: stored for stored, word in VERDICT_WORDS.items()}
VERDICT_GLYPHS = {COMPLIED: "✓", VIOLATED: "✗", OPEN: "…"}
# The first release without the old names (``<field>_was`` fields, ``satisfied``/``pending``
# accepted as query values).
OLD_NAMES_UNTIL = "2027-03-01"


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


def verdict_words(verdict: str | None) -> str | None:
    """The public word of a stored verdict; inside an anticipatory one too
    (``currently_satisfied`` -> ``currently_complied``).  None stays None."""
    if verdict is None:
        return None
    if verdict in VERDICT_WORDS:
        return VERDICT_WORDS[verdict]
    head, sep, last = verdict.rpartition("_")
    return head + sep + VERDICT_WORDS[last] if sep and last in VERDICT_WORDS else verdict


def stored_verdict(word: str | None) -> str | None:
    """The stored name of a verdict given by its public word or (deprecated) its old name."""
    if word is None:
        return None
    if word in STORED_VERDICTS:
        return STORED_VERDICTS[word]
    head, sep, last = word.rpartition("_")
    return head + sep + STORED_VERDICTS[last] if sep and last in STORED_VERDICTS else word


def verdict_glyph(verdict: str) -> str:
    """✓, ✗ or … for a verdict, stored or public, so a page reads without colour."""
    return VERDICT_GLYPHS.get(verdict_words(verdict), "…")


def with_old_names(answer: dict, fields) -> dict:
    """``answer`` with each named verdict field in public words and its stored (old) value kept
    under ``<field>_was`` (deprecated, until ``OLD_NAMES_UNTIL``); lists are mapped per item."""
    out = dict(answer)
    for name in fields:
        value = answer.get(name)
        out[name + "_was"] = value
        out[name] = ([verdict_words(v) for v in value] if isinstance(value, list)
                     else verdict_words(value))
    return out


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
