"""The report's sentence about an erasure, in plain English for one and for several of each
count (the fault probe's rerun of issue 24 printed "2 batchs of this run ... were")."""

from __future__ import annotations

import pytest

from studio.audits.models import erasure_notice

AT = "2026-01-02T03:04:00+00:00"


def entry(events=1, sessions=1, results=0, batches=0) -> dict:
    return {"at": AT, "by": "ann", "kind": "upload", "id": 7, "name": "first.jsonl",
            "events": events, "sessions": sessions, "results": results,
            "recomputed_batches": batches}


@pytest.mark.parametrize("batches, words", [
    (1, "1 batch of this run computing while it was erased was computed again"),
    (2, "2 batches of this run computing while it was erased were computed again"),
    (1200, "1,200 batches of this run computing while it was erased were computed again"),
])
def test_batches_computed_again_are_counted_in_english(batches, words):
    assert words in erasure_notice(entry(batches=batches))


@pytest.mark.parametrize("n, events, sessions, results", [
    (1, "1 event", "1 session", "1 result of this run computed from it was removed"),
    (3, "3 events", "3 sessions", "3 results of this run computed from it were removed"),
])
def test_events_sessions_and_results_one_and_several(n, events, sessions, results):
    notice = erasure_notice(entry(events=n, sessions=n, results=n))
    assert notice.startswith(f"Upload first.jsonl (#7: {events}, {sessions}) was erased on "
                             "2026-01-02 03:04 UTC by ann; ")
    assert results in notice


def test_no_batch_computed_again_says_nothing_of_batches():
    notice = erasure_notice(entry())
    assert "batch" not in notice
    assert notice.endswith("none of this run's results had been computed from it.")
