"""The stored sessions a reading is tried on: the newest of the workspace, bounded.

``stored_sample(workspace)`` reads at most ``SAMPLE_SESSIONS`` sessions (newest first by their
last event) and ``SAMPLE_EVENTS`` events in all, and labels them with the workspace's labelers
that answer at once (field predicates, regular expressions, labels events arrived with, built-in
atoms); LLM labelers are left out of a sample, which an answer must be quick to read, and the
sample says so.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from django.db.models import Count, Max

from studio.grounding.flags import SAMPLE_EVENTS, SAMPLE_SESSIONS, reading_flags
from studio.labeling import labeling_from_snapshot
from studio.logic import wording
from studio.logic import formula as fm
from studio.logic.formula import Formula
from studio.traces.models import Event, TraceSession

from .monitoring import labeler_snapshot

# Labeler kinds a sample runs: those that answer without asking a model.
QUICK_LABELERS = ("field", "regex")


@dataclass
class Sample:
    sessions: list = field(default_factory=list)   # (name, events as the monitors read them)
    events: int = 0
    label: object = None
    skipped_labelers: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"sessions": len(self.sessions), "events": self.events,
                "newest_first": True, "max_sessions": SAMPLE_SESSIONS,
                "max_events": SAMPLE_EVENTS, "labelers_not_run": self.skipped_labelers}


def stored_sample(workspace, max_sessions: int = SAMPLE_SESSIONS,
                  max_events: int = SAMPLE_EVENTS) -> Sample:
    snapshot = labeler_snapshot(workspace)
    quick = [d for d in snapshot if d["kind"] in QUICK_LABELERS]
    sample = Sample(label=labeling_from_snapshot(quick).label,
                    skipped_labelers=sorted(d["atom"] for d in snapshot
                                            if d["kind"] not in QUICK_LABELERS))
    chosen = list(TraceSession.objects.filter(workspace=workspace, steps__gt=0)
                  .order_by("-last_event_at", "-id")
                  .values_list("id", "external_id", "steps")[:max_sessions])
    ids, names, budget = [], {}, max_events
    for session_id, name, steps in chosen:
        if steps > budget and ids:
            break
        ids.append(session_id)
        names[session_id] = name
        budget -= steps
    grouped: dict[int, list] = {i: [] for i in ids}
    rows = (Event.objects.filter(session_id__in=ids).order_by("session_id", "step")
            .only("session_id", "step", "lifeline", "input", "output", "data", "labels"))
    for event in rows.iterator(chunk_size=2000):
        if sample.events >= max_events:
            break
        grouped[event.session_id].append(event.as_monitor_event())
        sample.events += 1
    sample.sessions = [(names[i], grouped[i]) for i in ids if grouped[i]]
    return sample


# A sample read for one workspace is reused for a short while: the editor asks on every pause
# in typing.  Keyed by the workspace and its newest event, so new events are seen at once.
SAMPLE_REUSE_SECONDS = 30.0
_SAMPLES_KEPT = 8
_samples: dict[tuple, tuple[float, Sample]] = {}
_samples_lock = threading.Lock()


def recent_sample(workspace) -> Sample:
    """``stored_sample`` reused for ``SAMPLE_REUSE_SECONDS`` while no session got a new event."""
    newest = (TraceSession.objects.filter(workspace=workspace)
              .aggregate(last=Max("last_event_at"), count=Count("id")))
    key = (workspace.pk, newest["last"], newest["count"])
    now = time.monotonic()
    with _samples_lock:
        found = _samples.get(key)
        if found is not None and found[0] > now:
            return found[1]
    sample = stored_sample(workspace)
    with _samples_lock:
        if len(_samples) >= _SAMPLES_KEPT:
            _samples.clear()
        _samples[key] = (now + SAMPLE_REUSE_SECONDS, sample)
    return sample


def formula_flags(workspace, formula: Formula) -> dict:
    """What ``formula`` would flag on the workspace's newest stored sessions (the sample
    stated), with a note in words when it would never fire or would flag every session."""
    sample = recent_sample(workspace)
    [flags] = reading_flags([formula], sample.sessions, sample.label, describe=event_words)
    return {**flags.as_dict(), "sample": sample.as_dict()}


def event_words(f: Formula) -> str:
    """An event of a rule in words, for the notes of what a reading would flag: the one English
    renderer's words for it (``wording.explain`` of "never this")."""
    text = wording.explain(fm.G(fm.Not(f)))
    text = text.removeprefix("Never: ")
    return text[:-1] if text.endswith(".") else text
