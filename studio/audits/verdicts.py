"""The one verdict of a rule in a session (``studio.monitor.verdicts.session_verdict``) as a
database filter, so that lists can filter and count stored results by it.

``session_verdict_q(v)`` keeps exactly the ``SessionResult`` rows whose ``session_verdict``
property is ``v`` (tests/audits/test_verdict_filters.py checks the two agree).
"""

from __future__ import annotations

from django.db.models import Q

from studio.monitor.verdicts import AFTER_VIOLATION, FIRST, PENDING, SATISFIED, VIOLATED

# A live session not yet ended may still receive events (TraceSession.is_open).
_OPEN = Q(session__source="live", session__ended_at__isnull=True)
# An open session already met a rule for good: nothing later can count a violation.
_SETTLED = Q(verdict=SATISFIED, rule_version__counting__in=(FIRST, AFTER_VIOLATION))


def session_verdict_q(verdict: str) -> Q:
    """A filter on ``SessionResult`` for the results whose one verdict is ``verdict``."""
    none = Q(violation_count=0)
    if verdict == VIOLATED:
        return Q(violation_count__gt=0) | (none & ~_OPEN & ~Q(final=SATISFIED))
    if verdict == SATISFIED:
        return none & ((~_OPEN & Q(final=SATISFIED)) | (_OPEN & _SETTLED))
    if verdict == PENDING:
        return none & _OPEN & ~_SETTLED
    raise ValueError(f"unknown verdict {verdict!r}")
