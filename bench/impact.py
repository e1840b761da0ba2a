"""Impact-check benchmark: what a changed rule would change on 100,000 stored events, against an
audit of that one rule over the same events (issue 18: under twice its time).

Run from the repository root::

    .venv/bin/python -m bench.impact                     # 100,000 events (1,000 sessions x 100)
    .venv/bin/python -m bench.impact --events 20000      # smaller
    .venv/bin/python -m bench.impact --json out.json     # also write the figures

It uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/studio_bench_impact``),
creating and migrating that database and a new workspace of its own each run.  Tasks run
in-process (no broker: Celery's eager mode, as in development), so both figures are the service
work a worker does, without queueing:

- **audit**: ``start_audit`` of the workspace, whose one rule has its approved version: batches
  planned, every batch's events streamed, labelled, monitored, results and witnesses stored;
- **impact**: ``start_impact`` of the rule's draft (the same run beside the approved version, so
  two monitors per session and twice the results stored) followed by ``impact_result``, which
  compares the two versions' results and keeps the summary.

Best of ``--repeat`` runs each, interleaved; the goal is impact / audit < 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import time

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/studio_bench_impact"
SLUG = "bench-impact"
APPROVED = "G(request -> F answer)"
CHANGED = "G(request -> F[0,5] answer)"
LABELS = {"request": .2, "answer": .25, "other": .3}


def _setup_database() -> None:
    os.environ.setdefault("DATABASE_URL", DEFAULT_URL)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ.pop("CELERY_BROKER_URL", None)  # in-process tasks
    import dj_database_url
    import psycopg

    config = dj_database_url.parse(os.environ["DATABASE_URL"])
    if "postgresql" not in config["ENGINE"]:
        sys.exit("bench.impact runs on Postgres: DATABASE_URL must name a Postgres database")
    with psycopg.connect(host=config["HOST"] or None, port=config["PORT"] or None,
                         user=config["USER"] or None, password=config["PASSWORD"] or None,
                         dbname="postgres", autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                             [config["NAME"]]).fetchone():
            admin.execute(f'CREATE DATABASE "{config["NAME"]}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _world(events: int, per_session: int, seed: int = 18):
    """A fresh workspace: one rule (approved version 1, draft version 2), its sessions loaded
    with COPY."""
    from django.db import connection, transaction
    from django.utils import timezone

    from studio.rules.models import Rule, RuleVersion, VersionStatus
    from studio.traces.models import Event, TraceSession
    from studio.workspaces import services as ws

    # A workspace of its own each run (the audit log keeps workspaces from being deleted).
    slug = f"{SLUG}-{time.time_ns()}"
    author = ws.create_user(f"bench-author-{time.time_ns()}")
    reviewer = ws.create_user(f"bench-reviewer-{time.time_ns()}")
    workspace = ws.create_workspace("Bench impact", slug=slug, owner=author)
    rule = Rule.objects.create(workspace=workspace, name="answered", created_by=author)
    RuleVersion.objects.create(rule=rule, number=1, formula=APPROVED, author=author,
                               status=VersionStatus.APPROVED, reviewer=reviewer,
                               reviewed_at=timezone.now())
    draft = RuleVersion.objects.create(rule=rule, number=2, formula=CHANGED, author=author)
    rng = random.Random(seed)
    count = events // per_session
    with transaction.atomic():
        TraceSession.objects.bulk_create([
            TraceSession(workspace=workspace, external_id=f"s{i:05d}", steps=per_session)
            for i in range(count)])
        ids = list(TraceSession.objects.filter(workspace=workspace).order_by("external_id")
                   .values_list("id", flat=True))
        with connection.cursor() as cursor, cursor.copy(
                f"COPY {Event._meta.db_table} (workspace_id, session_id, step, source, lifeline,"
                " input, output, data, labels, message_id, message_peer, message_kind)"
                " FROM STDIN") as copy:
            for session_id in ids:
                for step in range(per_session):
                    labels = [a for a, p in LABELS.items() if rng.random() < p]
                    copy.write_row((workspace.id, session_id, step, "upload", "", None,
                                    json.dumps("ok"), "{}", json.dumps(labels), "", "", ""))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return workspace, draft, author


def _audit(workspace, by) -> float:
    from studio.audits.models import RunStatus
    from studio.audits.services import start_audit

    gc.collect()
    started = time.perf_counter()
    run = start_audit(workspace, by=by)
    elapsed = time.perf_counter() - started
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    return elapsed


def _impact(draft, by) -> tuple[float, dict]:
    from studio.evidence.impact import impact_result, start_impact

    gc.collect()
    started = time.perf_counter()
    check = start_impact(draft, by)
    result = impact_result(check)
    elapsed = time.perf_counter() - started
    assert result["summary"] is not None, result["progress"]
    return elapsed, result["summary"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--per-session", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the figures here ('-' for stdout)")
    args = parser.parse_args(argv)
    _setup_database()
    workspace, draft, author = _world(args.events, args.per_session)
    audits, impacts, summary = [], [], {}
    _audit(workspace, author)  # warm: compiled automata, connection, caches
    for _ in range(args.repeat):
        audits.append(_audit(workspace, author))
        seconds, summary = _impact(draft, author)
        impacts.append(seconds)
    audit, impact = min(audits), min(impacts)
    ratio = impact / audit
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    sessions = args.events // args.per_session
    print(f"bench.impact at {commit}: {args.events:,} events in {sessions:,} sessions, "
          f"rule {APPROVED!r} (approved) vs {CHANGED!r} (draft); best of {args.repeat}")
    print(f"  audit of the one rule      {audit:7.2f} s  ({args.events / audit:,.0f} events/s)")
    print(f"  impact check (both + diff) {impact:7.2f} s  ({args.events / impact:,.0f} events/s)")
    print(f"  ratio impact / audit       {ratio:7.2f}   goal < 2: "
          f"{'met' if ratio < 2 else 'NOT MET'}")
    print(f"  sessions changed: {summary.get('sessions_changed')} of "
          f"{summary.get('sessions_compared')} ({summary.get('to_violated')} to violated, "
          f"{summary.get('new_violations')} new violations)")
    figures = {"commit": commit, "events": args.events, "sessions": sessions,
               "audit_seconds": audit, "impact_seconds": impact, "ratio": ratio,
               "audits": audits, "impacts": impacts,
               "summary": {k: v for k, v in summary.items() if k != "sessions_list"}}
    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as out:
                out.write(text + "\n")
    return 0 if ratio < 2 else 1


if __name__ == "__main__":
    sys.exit(main())
