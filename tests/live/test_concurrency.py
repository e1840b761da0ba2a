"""Deliveries racing on the real database: one session is advanced by one delivery at a time,
and an event delivered by 16 threads at once is stored once (RELIABILITY 3 and 11)."""

import threading

import pytest
from django.db import connection, connections

from studio.live.ingest import clear_caches, ingest
from studio.traces.models import Event, TraceSession
from tests.live.test_services import offline, states_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'postgresql'",
                       reason="needs Postgres: SQLite has no row locks and serialises writers "
                              "with 'database is locked' errors"),
]

THREADS = 16


def race(target, count=THREADS):
    """Run ``target(i)`` in ``count`` threads released at the same moment."""
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list = []

    def run(i):
        try:
            barrier.wait()
            results[i] = target(i)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return results


def test_the_same_delivery_from_16_threads_stores_one_event_and_one_change(workspace):
    assert connection.vendor == "postgresql"
    event = {"event_id": "same", "output": {"tool": "ship", "args": {}}}
    results = race(lambda i: ingest(workspace, "s1", [event]))
    assert Event.objects.count() == 1
    statuses = sorted(r["events"][0]["status"] for r in results)
    assert statuses == ["duplicate"] * (THREADS - 1) + ["stored"]
    changes = [c for r in results for c in r["events"][0]["changes"]]
    assert changes == [{"rule": "pay_before_ship", "step": 0, "verdict": "violated"},
                       {"rule": "pay_before_ship", "step": 0,
                        "violation": {"trigger": 0, "detected": 0}}]
    session = TraceSession.objects.get()
    assert session.steps == 1 and session.monitor_state["steps"] == 1


def test_concurrent_deliveries_to_one_session_are_monitored_one_after_the_other(workspace):
    tools = ["search", "ship", "delete", "pay", "delete", "search", "pay", "ship"]
    events = [{"event_id": f"e{i}", "output": {"tool": tools[i % len(tools)], "args": {}}}
              for i in range(THREADS)]
    race(lambda i: ingest(workspace, "s1", [events[i]]))
    stored = list(Event.objects.order_by("step"))
    assert [e.step for e in stored] == list(range(THREADS))
    # Whatever order they were stored in, the saved verdicts are those of that order.
    by_id = {e["event_id"]: e for e in events}
    _, expected = offline([by_id[e.event_id] for e in stored])
    clear_caches()
    assert states_of(ingest(workspace, "s1", [])) == expected


def test_one_event_id_raced_into_two_sessions_is_stored_once(workspace):
    results = race(lambda i: ingest(workspace, f"s{i % 2}", [{"event_id": "x"}]), 8)
    assert Event.objects.count() == 1
    statuses = sorted(r["events"][0]["status"] for r in results)
    assert statuses.count("stored") == 1
    assert set(statuses) <= {"stored", "duplicate", "error"}
