"""Which live sessions need a person first (issue 26): violated, then at risk, then open, then
complied - a session's place is its worst rule.  One definition, read by the live page for each
row and stored as ``TraceSession.attention`` by every delivery and every end, so the page's query
orders all sessions by it (``TraceSession.live_order``) rather than one page at a time.

The rules read here are shaped as ``reading.current_rules`` gives them (``violations``,
``final``, ``trac_verdict``, ``complete``...); ``with_verdict`` adds each rule's one verdict in
the session, in words, as the pages show it.
"""

from __future__ import annotations

from studio.logic.anticipation import (CURRENTLY_SATISFIED, CURRENTLY_VIOLATED,
                                       PERMANENTLY_SATISFIED, PERMANENTLY_VIOLATED)
from studio.monitor.verdicts import COMPLIED, OPEN, VIOLATED, session_verdict, verdict_words
from studio.traces.models import Attention

# At risk: a rule still open that the anticipation says is not met yet (the session ends
# violating it unless the agent acts); complied: every rule complied or met so far.
AT_RISK = "at risk"
ATTENTION = (VIOLATED, AT_RISK, OPEN, COMPLIED)
RANKS = {VIOLATED: Attention.VIOLATED, AT_RISK: Attention.AT_RISK, OPEN: Attention.OPEN,
         COMPLIED: Attention.COMPLIED}


def one_verdict(rule: dict, open: bool, counting: str) -> str:
    """The rule's one verdict in the session (``session_verdict``: not decided yet while the
    session is open, unless nothing later can change it), as stored (``satisfied``...)."""
    return session_verdict(rule["violations"], rule["final"] or "", open=open,
                           settled=rule.get("trac_verdict", rule["verdict"]), counting=counting)


def with_verdict(rules: list[dict], open: bool, counting: dict[str, str]) -> list[dict]:
    """``rules`` each with ``session_verdict``, its one verdict in words."""
    return [{**rule, "session_verdict": verdict_words(
        one_verdict(rule, open, counting.get(rule["rule"], "")))} for rule in rules]


def met_so_far(rule: dict) -> bool:
    """Complied, or open with nothing owed if the session ended now (the anticipation's
    "met so far" or "met for good")."""
    return rule["session_verdict"] == COMPLIED or (
        rule["session_verdict"] == OPEN
        and rule.get("complete") in (CURRENTLY_SATISFIED, PERMANENTLY_SATISFIED))


def at_risk(rule: dict) -> bool:
    """Open, and the session would end violating it unless the agent acts ("not met yet")."""
    return (rule["session_verdict"] == OPEN
            and rule.get("complete") in (CURRENTLY_VIOLATED, PERMANENTLY_VIOLATED))


def attention(rules: list[dict]) -> str:
    """The session's place in ``ATTENTION`` (rules with ``session_verdict``): its worst rule.
    Complied: every rule met so far.  A session with no rule read yet is open (nothing is
    decided)."""
    if any(rule["session_verdict"] == VIOLATED for rule in rules):
        return VIOLATED
    if any(at_risk(rule) for rule in rules):
        return AT_RISK
    if not rules or not all(met_so_far(rule) for rule in rules):
        return OPEN
    return COMPLIED


def rank(rules: list[dict], open: bool, counting: dict[str, str]) -> int:
    """What ``TraceSession.attention`` stores for a session whose rules are ``rules``."""
    return RANKS[attention(with_verdict(rules, open, counting))]
