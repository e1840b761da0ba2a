"""What a session's page and API say of the OpenTelemetry traces whose spans named two sessions
(``TraceSessionLink.conflicts``; ``studio.live.otlp_sessions`` records them)."""

from __future__ import annotations

from .models import TraceSessionLink

# A session may hold many traces; its page names the first few conflicts, and how many more.
SHOWN = 5


def conflict_sentences(workspace, external_id: str) -> list[str]:
    """One plain sentence per trace of the session ``external_id`` whose spans also named
    other sessions: which, and that they were kept here."""
    rows = (TraceSessionLink.objects.filter(workspace=workspace, session=external_id,
                                            named=True).exclude(conflicts=[])
            .order_by("created_at", "id").values_list("trace_id", "conflicts"))
    out = []
    total = 0
    for trace_id, others in rows.iterator():
        total += 1
        if len(out) < SHOWN:
            named = " and ".join(repr(str(o)) for o in others)
            out.append(f"Trace {trace_id} named two sessions: {external_id!r} first, then "
                       f"{named}. Every span of the trace is kept in {external_id!r}, also "
                       "those that named another session; give every span of one trace the "
                       "same session.id.")
    if total > SHOWN:
        out.append(f"{total - SHOWN} more traces of this session named other sessions too.")
    return out
