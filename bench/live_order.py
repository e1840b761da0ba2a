"""The live page's order across pages (issue 26 item 4): a workspace of 10,000 live sessions,
the page's query with EXPLAIN ANALYZE, the page itself, and what storing each session's place
adds to a delivery.

Run from the repository root::

    .venv/bin/python -m bench.live_order                     # 10,000 sessions x 4 events
    .venv/bin/python -m bench.live_order --sessions 2000     # smaller
    .venv/bin/python -m bench.live_order --reuse             # measure the sessions loaded
                                                             # by the last run again

The script owns the database ``studio_bench_liveorder`` (dropped, created and migrated).  It
makes a workspace with the rules of ``bench.workloads.RULES_20`` and posts every session's
events through ``studio.live.ingest.ingest`` (the webhook's service, no HTTP), timing the part
of each delivery that works out the session's place (``verdicts_now`` and
``attention.rank``) against the whole delivery.  Then, after ``ANALYZE``:

- EXPLAIN ANALYZE of the page's query (``sessions_in_order``) for page 1 and for the last page,
  and of the count the pager runs; and, for comparison, of the query ordered by recency alone
  (what the page ran before; it could not put the answer first);
- the whole live page (page 1 and the last page) through the Django test client, median of
  five requests: 25 sessions' rules read from their snapshots;
- what the alternative would cost: working out every session's place in Python at request
  time (``current_rules`` for each), timed on 500 sessions and scaled to all of them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from types import SimpleNamespace

from .pipeline import ADMIN_URL, fresh_database, make_events, make_workspace, progress

DATABASE = "studio_bench_liveorder"


def setup_django(reuse: bool = False) -> None:
    os.environ["DATABASE_URL"] = (ADMIN_URL.rsplit("/", 1)[0] + "/" + DATABASE if reuse
                                  else fresh_database(DATABASE))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "bench-liveorder-" + "x" * 40)
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    progress(f"migrating {DATABASE}")
    call_command("migrate", verbosity=0)


def timed(function, total: list):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - started
    return wrapper


def load(workspace, sessions: int, steps: int) -> tuple[float, float]:
    """Post every session's events; returns (seconds in deliveries, seconds of them spent
    working out the sessions' places)."""
    from studio.live import attention, ingest

    placing = [0.0]
    ingest.verdicts_now = timed(ingest.verdicts_now, placing)
    attention.rank = timed(attention.rank, placing)
    delivering = 0.0
    for index, events in enumerate(make_events(sessions, steps)):
        batch = [{"event_id": f"s{index}-{i}", "output": e["output"], "labels": e["labels"],
                  "data": e.get("data") or {}} for i, e in enumerate(events)]
        started = time.perf_counter()
        ingest.ingest(workspace, f"session-{index:05}", batch)
        delivering += time.perf_counter() - started
        if index % 2000 == 1999:
            progress(f"{index + 1} sessions posted")
    return delivering, placing[0]


def explain(queryset) -> tuple[float, str]:
    """(execution time in ms, the plan) of EXPLAIN ANALYZE of a queryset or (sql, params)."""
    if isinstance(queryset, tuple):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN ANALYZE " + queryset[0], queryset[1])
            plan = "\n".join(row[0] for row in cursor.fetchall())
    else:
        plan = queryset.explain(analyze=True)
    took = next(float(line.split(":")[1].split()[0]) for line in plan.splitlines()
                if line.startswith("Execution Time"))
    return took, plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=4, help="events per session")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the database and sessions of the last run")
    args = parser.parse_args()
    setup_django(args.reuse)

    from django.db import connection
    from django.db.models import Count, F
    from django.test import Client

    from studio.live.context import context_for
    from studio.live.events import SOURCE_LIVE
    from studio.live.reading import current_rules
    from studio.live import attention
    from studio.traces.models import TraceSession
    from studio.web.live_pages import SESSIONS_PER_PAGE, rules_in_words, sessions_in_order

    if args.reuse:
        from studio.workspaces.models import Workspace

        workspace = Workspace.objects.get(slug="bench-live")
        args.sessions = TraceSession.objects.filter(workspace=workspace).count()
    else:
        workspace = make_workspace(SimpleNamespace(rules=20), "bench-live")
        progress(f"posting {args.sessions} sessions of {args.steps} events")
        delivering, placing = load(workspace, args.sessions, args.steps)
        print(f"deliveries: {args.sessions} in {delivering:.1f} s "
              f"({1000 * delivering / args.sessions:.2f} ms each); working out the session's "
              f"place: {1000 * placing / args.sessions:.3f} ms each "
              f"({100 * placing / delivering:.1f}% of a delivery)")
    places = dict(TraceSession.objects.filter(workspace=workspace).values_list(
        "live_order").annotate(n=Count("id")))
    print("sessions by place: " + ", ".join(
        f"{attention.ATTENTION[rank]} {n}" for rank, n in sorted(places.items())))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    last = (args.sessions - 1) // SESSIONS_PER_PAGE
    ordered = sessions_in_order(workspace)
    recency = (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE)
               .order_by(F("last_event_at").desc(nulls_last=True), "-id"))
    figures = {}
    for name, queryset in [
            ("page 1", ordered[:SESSIONS_PER_PAGE]),
            (f"page {last + 1}", ordered[last * SESSIONS_PER_PAGE:
                                         (last + 1) * SESSIONS_PER_PAGE]),
            ("count (pager)", ("SELECT COUNT(*) FROM traces_tracesession WHERE workspace_id "
                               "= %s AND source = %s", [workspace.pk, SOURCE_LIVE])),
            ("recency only, page 1", recency[:SESSIONS_PER_PAGE])]:
        runs = [explain(queryset) for _ in range(5)]
        figures[name] = statistics.median(t for t, _ in runs)
        print(f"\nEXPLAIN ANALYZE {name}: median {figures[name]:.3f} ms of 5\n{runs[-1][1]}")

    from django.conf import settings
    from django.contrib.auth import get_user_model

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    settings.SECURE_SSL_REDIRECT = False  # no TLS in process
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-author"))
    for number in (1, last + 1):
        took = []
        for _ in range(5):
            started = time.perf_counter()
            response = client.get(f"/w/{workspace.slug}/live/rows?page={number}")
            took.append(time.perf_counter() - started)
            assert response.status_code == 200
        print(f"live rows page {number}: median {1000 * statistics.median(took):.1f} ms of 5")

    sample = list(TraceSession.objects.filter(workspace=workspace)[:500])
    context = context_for(workspace)
    started = time.perf_counter()
    for session in sample:
        rules_in_words(session, current_rules(session, context), context)
    each = (time.perf_counter() - started) / len(sample)
    print(f"every session's place worked out at request time instead: {1000 * each:.2f} ms a "
          f"session, {each * args.sessions:.1f} s for {args.sessions}")


if __name__ == "__main__":
    main()
