"""What the studio's answers say, in the words compliance officers read: a rule's verdict is
exactly one of complied, violated or open (``studio/monitor/verdicts.py`` on the server)."""

from __future__ import annotations

VERDICTS = ("complied", "violated", "open")


def change_words(change: dict) -> str:
    """One verdict change of the events route in words: ``rule R is violated at step 3``, or
    ``rule R is violated at step 3: a violation counted`` for a violation found there.

    A change is either a verdict the rule reached (``verdict``) or a violation found at that
    step (``violation``, with the step that triggered it): a violation reads as ``violated``."""
    rule, step = change.get("rule"), change.get("step")
    verdict = change.get("verdict")
    if verdict is None and change.get("violation") is not None:
        trigger = (change.get("violation") or {}).get("trigger")
        since = f", triggered at step {trigger}" if trigger not in (None, step) else ""
        return f"rule {rule} is violated at step {step}: a violation counted{since}"
    return f"rule {rule} is {_word(verdict)} at step {step}"


def end_words(rule: dict) -> str:
    """A rule of the end route's answer in words: ``at the end, R is complied``."""
    return f"at the end, {rule.get('rule')} is {_word(rule.get('verdict'))}"


def _word(verdict) -> str:
    if verdict in VERDICTS:
        return verdict
    # An older server's words (satisfied, pending) or none: said, never guessed.
    return f"without a verdict the client knows ({verdict!r})"
