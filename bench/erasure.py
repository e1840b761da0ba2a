"""Erasure benchmark: the studio's erasure of an audited upload against a bare DELETE of the same
rows, measured in the same run.

Run from the repository root::

    .venv/bin/python -m bench.erasure                    # 1,000 sessions x 1,000 events
    .venv/bin/python -m bench.erasure --events 200000    # smaller
    .venv/bin/python -m bench.erasure --profile          # + where the erasure's time goes
                                                         # (cProfile, slowest SQL statements
                                                         # with their foreign-key checks)
    .venv/bin/python -m bench.erasure --other-upload     # + a second upload of as many events
                                                         # stays in the workspace
    .venv/bin/python -m bench.erasure --other-upload 2   # ... of twice as many: the upload
                                                         # erased is a minority of its workspace

The script owns the database ``studio_bench_erasure`` (dropped, created and migrated).  Before
any timer starts it builds three identical uploads, each in a workspace of its own: the same
generated events (``bench.pipeline.make_events``) COPYed into ``traces_event`` under one upload.
The studio's copy is then made what a real upload leaves behind: its vocabulary counted
(``vocabulary.rebuild``) and an audit of the upload with the rules of ``bench.workloads.RULES_20``
run to the end (results, violations, label provenance).  ``ANALYZE`` and a ``CHECKPOINT`` run
before each contender:

- **studio erasure**: ``studio.traces.erasure.erase_upload`` of the audited upload, commit
  included (events, sessions, results, violations, label provenance, vocabulary, the runs'
  records, the audit log);
- **bare DELETE**: ``DELETE FROM traces_event WHERE upload_id = %s`` of another copy in one
  transaction, commit included (with the checks of the foreign keys pointing at events), timed
  before the studio's erasure and again after it on a third copy: the figure is their mean,
  since the load of a shared machine drifts over minutes.

With ``--other-upload [K]`` the studio's workspace also holds a second upload of K times the same
events (sessions of its own, not audited, its vocabulary share counted), which stays: the
erasure takes the erased upload's share off the vocabulary and gives the entries it showed
their examples from the share left, without reading an event of either.

Each contender's line also says what else the server did meanwhile: the checkpoints that
started and the load average (the server is shared; autovacuum, when on, is reported too).

The goal (issue 26 item 7) is studio / bare within ``GOAL`` (2x).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from types import SimpleNamespace

from .pipeline import bare_copy, copy_rows, fresh_database, make_events, make_workspace, progress

DATABASE = "studio_bench_erasure"
GOAL = 2.0


def setup_django() -> None:
    os.environ["DATABASE_URL"] = fresh_database(DATABASE)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "bench-erasure-" + "x" * 40)
    os.environ.pop("CELERY_BROKER_URL", None)  # audit batches run in this process
    import django

    django.setup()
    from django.core.management import call_command

    progress(f"migrating {DATABASE}")
    call_command("migrate", verbosity=0)


def load(slug: str, rules: int, events_by_session) -> tuple[object, object]:
    """A workspace holding one upload of the events (COPY, untimed)."""
    from studio.traces.models import Upload

    workspace = make_workspace(SimpleNamespace(rules=rules), slug)
    _, rows = copy_rows(workspace, events_by_session)
    bare_copy(rows)
    upload = Upload.objects.get(workspace=workspace)
    Upload.objects.filter(pk=upload.pk).update(events_stored=len(rows), lines_total=len(rows))
    return workspace, Upload.objects.get(pk=upload.pk)


def load_other(workspace, events_by_session, times: int) -> None:
    """A second upload of ``times`` x the same events in the workspace, in sessions of their
    own: it stays."""
    from studio.traces.models import TraceSession, Upload, UploadStatus

    other = Upload.objects.create(workspace=workspace, filename="other.jsonl", format="jsonl",
                                  sha256="1" * 64, status=UploadStatus.PARSED)
    events_by_session = events_by_session * times
    sessions = TraceSession.objects.bulk_create(
        [TraceSession(workspace=workspace, external_id=f"other-{i:05d}", steps=len(events))
         for i, events in enumerate(events_by_session)])
    dumps = json.dumps
    rows = [(workspace.pk, session.pk, other.pk, step, "upload", e["lifeline"], None,
             dumps(e["output"]), dumps(e["data"]), dumps(e["labels"]), "", "", "")
            for session, events in zip(sessions, events_by_session)
            for step, e in enumerate(events)]
    bare_copy(rows)
    Upload.objects.filter(pk=other.pk).update(events_stored=len(rows), lines_total=len(rows))


def audit(workspace, upload):
    from studio.audits import services
    from studio.audits.models import AuditRun, RunStatus

    run = services.start_audit(workspace, None, upload, None)
    while run.status not in (RunStatus.DONE, RunStatus.FAILED):
        time.sleep(0.05)
        run = AuditRun.objects.get(pk=run.pk)
    if run.status != RunStatus.DONE:
        raise SystemExit(f"audit {run.pk} failed: {run.error}")
    return run


def settle() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("CHECKPOINT")
    gc.collect()


class Meanwhile:
    """What the server did while one contender ran: checkpoints started (timed or asked for by
    the WAL's size: they write every dirty page while the contender runs), autovacuum workers
    seen on the bench's database (polled), and the load average."""

    def __init__(self):
        from django.db import connection

        self.connection = connection
        self.autovacuum: set[str] = set()
        self._stop = threading.Event()

    def _checkpoints(self) -> int:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
            return cursor.fetchone()[0]

    def _poll(self, url: str) -> None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            while not self._stop.wait(0.2):
                for (query,) in conn.execute(
                        "SELECT query FROM pg_stat_activity WHERE datname = current_database() "
                        "AND backend_type = 'autovacuum worker'"):
                    self.autovacuum.add(query)

    def __enter__(self):
        self.checkpoints = self._checkpoints()
        self.load = os.getloadavg()[0]
        self._thread = threading.Thread(target=self._poll, args=(os.environ["DATABASE_URL"],),
                                         daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.checkpoints = self._checkpoints() - self.checkpoints
        self.load = (self.load + os.getloadavg()[0]) / 2

    def __str__(self) -> str:
        return (f"{self.checkpoints} checkpoint(s) started, load {self.load:.1f}"
                + (f", autovacuum: {'; '.join(sorted(self.autovacuum))}"
                   if self.autovacuum else ""))


def bare_delete(upload) -> tuple[float, int]:
    from django.db import connection, transaction

    settle()
    with Meanwhile() as meanwhile:
        start = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM traces_event WHERE upload_id = %s", [upload.pk])
            rows = cursor.rowcount
        elapsed = time.perf_counter() - start
    return elapsed, rows, meanwhile


def studio_erasure(upload, profile: bool):
    from studio.traces.erasure import erase_upload

    settle()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    statements: list[tuple[float, str]] = []

    def timed(execute, sql, params, many, context):
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            statements.append((time.perf_counter() - began, " ".join(sql.split())[:150]))

    from django.db import connection, transaction

    meanwhile = Meanwhile().__enter__()
    start = time.perf_counter()
    if profile:
        # Each statement's foreign-key checks run with it (not at commit) and are timed with it.
        with transaction.atomic(), connection.execute_wrapper(timed):
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            erasure = erase_upload(upload, reason="bench")
    else:
        erasure = erase_upload(upload, reason="bench")
    elapsed = time.perf_counter() - start
    meanwhile.__exit__(None, None, None)
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
        print("slowest statements, each with its foreign-key checks:", file=sys.stderr)
        for seconds, sql in sorted(statements, reverse=True)[:15]:
            print(f"  {seconds:7.3f} s  {sql}", file=sys.stderr)
    return elapsed, erasure, meanwhile


def left_behind(workspace, upload_id: int) -> dict[str, int]:
    """What the erasure must not leave: counted after it, all zero (but for the upload that
    stays with ``--other-upload``: its events and sessions are not counted)."""
    from studio.audits.models import LabelProvenance, SessionResult, ViolationRecord
    from studio.traces.models import (Event, TraceSession, Upload, VocabularyEntry,
                                      VocabularyShare)

    return {"events": Event.objects.filter(workspace=workspace)
            .exclude(session__external_id__startswith="other-").count(),
            "sessions": TraceSession.objects.filter(workspace=workspace)
            .exclude(external_id__startswith="other-").count(),
            "results": SessionResult.objects.filter(run__workspace=workspace).count(),
            "violations": ViolationRecord.objects.filter(result__run__workspace=workspace)
            .count(),
            "label provenance": LabelProvenance.objects.filter(run__workspace=workspace).count(),
            # (with --other-upload the same events stay: every entry does)
            "vocabulary entries": VocabularyEntry.objects.filter(workspace=workspace).count()
            if not Event.objects.filter(workspace=workspace).exists() else 0,
            "vocabulary shares": VocabularyShare.objects.filter(upload_id=upload_id).count(),
            "upload": Upload.objects.filter(pk=upload_id).count()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--other-upload", type=int, nargs="?", const=1, default=0, metavar="K",
                        help="a second upload of K times as many events (1 when K is not "
                             "given) stays in the erased upload's workspace")
    args = parser.parse_args(argv)
    setup_django()

    from django.db import connection

    from studio.traces import vocabulary

    steps = max(1, args.events // args.sessions)
    progress(f"generating {args.sessions:,} sessions x {steps:,} events")
    events_by_session = make_events(args.sessions, steps)
    progress("loading the bare DELETEs' copies")
    _, bare_upload = load("erasure-bare", 0, events_by_session)
    _, bare_upload_after = load("erasure-bare-after", 0, events_by_session)
    progress("loading the studio's copy")
    workspace, upload = load("erasure-studio", args.rules, events_by_session)
    if args.other_upload:
        progress("loading the upload that stays")
        load_other(workspace, events_by_session, args.other_upload)
    del events_by_session
    progress("counting its vocabulary")
    vocabulary.rebuild(workspace)
    progress(f"auditing it ({args.rules} rules)")
    run = audit(workspace, upload)

    progress("bare DELETE")
    bare_s, rows, bare_meanwhile = bare_delete(bare_upload)
    progress("studio erasure")
    studio_s, erasure, studio_meanwhile = studio_erasure(upload, args.profile)
    progress("bare DELETE again")
    bare_after_s, rows_after, after_meanwhile = bare_delete(bare_upload_after)
    assert erasure.events == rows == rows_after, (erasure.events, rows, rows_after)
    left = left_behind(workspace, upload.pk)

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    print(f"\n{rows:,} events, {args.sessions:,} sessions, {args.rules} rules "
          f"(run {run.pk}: {erasure.results:,} results); Postgres {version}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    floor = (bare_s + bare_after_s) / 2
    print(f"{'studio erasure':16} {studio_s:8.2f} s")
    print(f"{'bare DELETE':16} {floor:8.2f} s (before it {bare_s:.2f} s, after it "
          f"{bare_after_s:.2f} s: the machine's load drifts)")
    print(f"{'ratio':16} {studio_s / floor:8.2f} x (goal: within {GOAL:g}x; "
          f"{studio_s / min(bare_s, bare_after_s):.2f} x the faster bare DELETE)")
    print(f"meanwhile: bare DELETE before: {bare_meanwhile}; studio erasure: "
          f"{studio_meanwhile}; bare DELETE after: {after_meanwhile}")
    if args.other_upload:
        print(f"(an upload of {args.other_upload} x as many events stays in the workspace)")
    print(f"copies removed: {erasure.copies}")
    print(f"left behind: {left}")
    return 0 if not any(left.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
