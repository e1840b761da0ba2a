"""Benchmark of the audit pipeline on Postgres: 1,000,000 events, 20 rules, against a bare COPY.

Run from the repository root::

    .venv/bin/python -m bench.pipeline                 # 1,000 sessions x 1,000 events
    .venv/bin/python -m bench.pipeline --workers 2     # the audit's batches on 2 Celery worker
                                                       # processes (Redis 127.0.0.1:6379/8)
    .venv/bin/python -m bench.pipeline --quick         # 100 sessions x 1,000 events
    .venv/bin/python -m bench.pipeline --profile       # + where a batch's time goes, and cProfile
    .venv/bin/python -m bench.pipeline --upload        # + upload with audit on arrival, end to end
    .venv/bin/python -m bench.pipeline --separate      # + upload, then an audit once parsed
    .venv/bin/python -m bench.pipeline --pairs 3       # + 3 x (bare COPY, upload with audit on
                                                       # arrival) back to back: median ratio
    .venv/bin/python -m bench.pipeline --pairs 3 --floor  # + in each pair, the upload alone
                                                       # (no audit): what the audit adds
    .venv/bin/python -m bench.pipeline --json out.json # the figures as JSON too ('-' for stdout)

The script owns the database ``studio_bench_pipeline`` (dropped and created again, then
migrated).  Everything is generated, seeded, before any timer starts:

* **baseline, bare COPY**: the events, already serialised, COPYed into ``traces_event`` in one
  transaction (psycopg 3 ``cursor.copy`` + ``write_row``), the table's indexes included, each
  row with the columns an upload gives it (its session, workspace and upload, whose foreign keys
  Postgres checks at commit);
* **audit**: ``studio.audits.services.start_audit`` over every session with the 20 rules of
  ``bench.workloads.RULES_20`` until the run is done - planning, streaming the events from
  Postgres, labelling, monitoring, and storing results, violations and witnesses (COPY).  With
  ``--workers 0`` (the default) the batch tasks run in this process, one after the other, as
  they do without a broker; with ``--workers N`` they run on N worker processes.

* **upload and audit** (``--upload``): the same events written as a JSONL file (untimed), then
  ``create_upload(..., audit=True)`` until the upload is parsed and its run (audited on arrival,
  ``studio.audits.intake``) is done; ``--separate``: the upload without ``audit``, then
  ``start_audit`` of it once parsed.  Each into an emptied ``traces_event``, in a workspace of
  its own.

The figure the guardrail reads is (upload + audit) / COPY with ``--upload``: no worse than
``GUARDRAIL`` (2.5x; the earlier goal of 1.5x was retired on 2026-11-26: 2 cores measure 2.2-2.5x
under load); audit / COPY is printed too.  ``ANALYZE`` runs after the first COPY, untimed, as
autovacuum would soon after a real load.  The COPY is timed twice, first and last (emptying
``traces_event`` in between), and the faster one is the baseline: the machine's load varies over
minutes.
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import gc
import io
import json
import logging
import os
import platform
import pstats
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATABASE = "studio_bench_pipeline"
# (upload + audit) / bare COPY must not get worse than this (2 cores; the 1.5x goal is retired).
GUARDRAIL = 2.5
ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/8"


def progress(message: str) -> None:
    print(f"  .. {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The database (before Django reads its settings)

def fresh_database(name: str) -> str:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def setup_django(args) -> None:
    os.environ["DATABASE_URL"] = fresh_database(DATABASE)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["AUDIT_BATCH_SIZE"] = str(args.batch_size)
    if not os.environ.get("UPLOAD_ROOT"):  # the uploaded copy of the log goes away at exit
        root = tempfile.mkdtemp(prefix="bench-uploads-")
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        os.environ["UPLOAD_ROOT"] = root
    # Production settings (no query log, no debug cursor wrappers); a throwaway key.
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "bench-" + uuid.uuid4().hex * 2)
    if args.workers:
        os.environ["CELERY_BROKER_URL"] = REDIS_URL
    else:
        os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    progress(f"migrating {DATABASE}")
    call_command("migrate", verbosity=0)


# ---------------------------------------------------------------------------------------------
# Workload

def make_events(sessions: int, steps: int, seed: int = 11) -> list[list[dict]]:
    """Per session, its events: labels (about 1.1 a step), data read by data atoms, and some
    tool-call outputs (built-in atoms)."""
    from . import workloads as wl

    rng = random.Random(seed)
    out = []
    tools = ["search", "pay", "refund", "email"]
    for s in range(sessions):
        events = wl.agent_events(steps, seed=seed * 100_003 + s)
        for event in events:
            event["lifeline"] = "agent"
            event["output"] = ({"tool": rng.choice(tools), "args": {"q": "x"}}
                               if "tool_call" in event["labels"] else "ok")
        out.append(events)
    return out


def make_workspace(args, slug: str):
    """A workspace with the benchmark's rules, approved."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from studio.rules.models import Rule, RuleVersion, VersionStatus
    from studio.workspaces import services as ws

    users = get_user_model().objects
    author = users.filter(username="bench-author").first() or ws.create_user("bench-author")
    reviewer = (users.filter(username="bench-reviewer").first()
                or ws.create_user("bench-reviewer"))
    from . import workloads as wl

    w = ws.create_workspace(slug, slug=slug, owner=author)
    for name, formula in wl.RULES_20[:args.rules]:
        rule = Rule.objects.create(workspace=w, name=name, created_by=author)
        RuleVersion.objects.create(rule=rule, number=1, formula=formula, author=author,
                                   status=VersionStatus.APPROVED, reviewer=reviewer,
                                   reviewed_at=timezone.now())
    return w


def copy_rows(workspace, events_by_session: list[list[dict]]) -> tuple[list[int], list[tuple]]:
    """Sessions created (untimed) and the event rows, serialised, ready for COPY."""
    from studio.traces.models import TraceSession, Upload, UploadStatus

    # The rows as an upload stores them: each names its upload (a column with a foreign key,
    # checked at commit like the session's and the workspace's).
    upload = Upload.objects.create(workspace=workspace, filename="bare-copy.jsonl",
                                   format="jsonl", sha256="0" * 64, status=UploadStatus.PARSED)
    sessions = TraceSession.objects.bulk_create(
        [TraceSession(workspace=workspace, external_id=f"s{i:05d}", steps=len(events))
         for i, events in enumerate(events_by_session)])
    dumps = json.dumps
    rows = []
    for session, events in zip(sessions, events_by_session):
        for step, e in enumerate(events):
            rows.append((workspace.id, session.id, upload.id, step, "upload", e["lifeline"],
                         None, dumps(e["output"]), dumps(e["data"]), dumps(e["labels"]), "",
                         "", ""))
    return [s.id for s in sessions], rows


COPY_SQL = ("COPY traces_event (workspace_id, session_id, upload_id, step, source, lifeline,"
            " input, output, data, labels, message_id, message_peer, message_kind) FROM STDIN")


def bare_copy(rows: list[tuple]) -> float:
    from django.db import connection, transaction

    gc.collect()
    start = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor, cursor.copy(COPY_SQL) as copy:
        for row in rows:
            copy.write_row(row)
    return time.perf_counter() - start


def truncate_events() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE traces_event CASCADE")  # label corrections point at events


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_event")
        cursor.execute("ANALYZE traces_tracesession")


# ---------------------------------------------------------------------------------------------
# The audit

class Workers:
    def __init__(self, n: int):
        self.queue = f"bench-{uuid.uuid4().hex[:8]}"
        self.processes = []
        self.n = n
        self.logs = Path(tempfile.mkdtemp(prefix="bench-workers-"))
        atexit.register(shutil.rmtree, self.logs, ignore_errors=True)

    def __enter__(self):
        from worker import celery_app

        celery_app.conf.task_routes = {"worker.audits.run_audit_batch": {"queue": self.queue}}
        for i in range(self.n):
            with open(self.logs / f"worker{i}.log", "w") as log:
                self.processes.append(subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "worker", "worker", "-Q", self.queue,
                     "-c", "1", "-l", "warning", "-n", f"{self.queue}-{i}@%h",
                     "--without-gossip", "--without-mingle", "--without-heartbeat"],
                    cwd=REPO, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True))
        time.sleep(4)  # started and connected before any timer
        return self

    def __exit__(self, *exc):
        for p in self.processes:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)


def audit(workspace, upload=None) -> tuple[float, object]:
    from studio.audits import services
    from studio.audits.models import AuditRun, RunStatus

    gc.collect()
    start = time.perf_counter()
    run = services.start_audit(workspace, None, upload, None)
    while True:
        run = AuditRun.objects.get(pk=run.pk)
        if run.status in (RunStatus.DONE, RunStatus.FAILED):
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - start
    if run.status != RunStatus.DONE:
        raise SystemExit(f"audit {run.id} failed: {run.error}")
    return elapsed, run


def result_counts(run) -> dict:
    from studio.audits.models import SessionResult, ViolationRecord

    return {"results": SessionResult.objects.filter(run=run).count(),
            "violations": ViolationRecord.objects.filter(result__run=run).count()}


def breakdown(run, batches: int = 3) -> dict:
    """Where a batch's time goes, over the run's first batches (read again, results rolled
    back): streaming the rows, + building and labelling events, + monitoring, storing."""
    from django.db import transaction

    from studio.audits import services

    ruleset, labeling, version_ids = services.prepared_rules(run)
    out = {"rows": 0, "fetch": 0.0, "fetch+label": 0.0, "compute": 0.0, "store": 0.0}
    for batch in list(run.batches.order_by("index"))[:batches]:
        ids = batch.session_ids
        t = time.perf_counter()
        for _ in services.session_events(ids):
            out["rows"] += 1
        out["fetch"] += time.perf_counter() - t
        t = time.perf_counter()
        label = labeling.label
        previous = None
        for row in services.session_events(ids):
            event = services.monitor_event(row)
            label(event, previous)
            previous = event
        out["fetch+label"] += time.perf_counter() - t
        t = time.perf_counter()
        results = services.compute_batch(ids, ruleset, labeling, version_ids)
        out["compute"] += time.perf_counter() - t

        class Rollback(Exception):
            pass

        t = time.perf_counter()
        try:
            with transaction.atomic():
                from studio.audits.models import SessionResult

                SessionResult.objects.filter(batch=batch).delete()
                services.insert_results(batch, results)
                out["store"] += time.perf_counter() - t
                raise Rollback
        except Rollback:
            pass
    return out


def profile_batch(run, top: int) -> str:
    from studio.audits import services

    batch = run.batches.order_by("index").first()
    ruleset, labeling, version_ids = services.prepared_rules(run)
    profiler = cProfile.Profile()
    profiler.enable()
    services.compute_batch(batch.session_ids, ruleset, labeling, version_ids)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


# ---------------------------------------------------------------------------------------------
# Upload and audit (the uploads slice's parse service), end to end

def write_log(events_by_session, directory: Path) -> Path:
    path = directory / "bench_pipeline.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(
            json.dumps({"session": f"s{i:05d}", "step": step, "lifeline": e["lifeline"],
                        "output": e["output"], "data": e["data"], "labels": e["labels"]}) + "\n"
            for i, events in enumerate(events_by_session) for step, e in enumerate(events))
    return path


class _Phases(logging.Handler):
    """Keeps the phases ``studio.traces.loading`` logs when an upload is loaded."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.last: dict = {}

    def emit(self, record: logging.LogRecord) -> None:
        found = getattr(record, "phases", None)
        if found is not None:
            self.last = found


_phases = _Phases()


def wait_parsed(upload):
    from studio.traces.models import Upload, UploadStatus

    while True:
        upload = Upload.objects.get(pk=upload.pk)
        if upload.status in (UploadStatus.PARSED, UploadStatus.FAILED):
            break
        time.sleep(0.05)
    if upload.status != UploadStatus.PARSED:
        raise RuntimeError(f"upload failed: {upload.error}")
    return upload


def upload_alone(workspace, path: Path) -> float:
    """The upload without an audit, until parsed: the loading that any audit adds to."""
    from django.db import transaction

    from studio.traces import intake

    gc.collect()
    start = time.perf_counter()
    with open(path, "rb") as handle, transaction.atomic():
        upload, _ = intake.create_upload(workspace, handle, "jsonl", filename=path.name)
    wait_parsed(upload)
    return time.perf_counter() - start


def upload_and_audit(workspace, path: Path, on_arrival: bool) -> dict:
    """Upload the JSONL and audit it, end to end: with ``on_arrival`` the upload asks for the
    audit (monitored as it loads); otherwise the audit starts once the upload is parsed."""
    from django.db import transaction

    from studio.audits.models import AuditRun, RunStatus
    from studio.traces import intake

    _phases.last = {}  # this upload's, not an earlier one's
    gc.collect()
    start = time.perf_counter()
    with open(path, "rb") as handle, transaction.atomic():
        upload, _ = intake.create_upload(workspace, handle, "jsonl", filename=path.name,
                                         audit=on_arrival)
    upload = wait_parsed(upload)
    parsed = time.perf_counter() - start
    if on_arrival:
        run = AuditRun.objects.get(pk=upload.audit_run_id)
        while run.status not in (RunStatus.DONE, RunStatus.FAILED):
            time.sleep(0.05)
            run = AuditRun.objects.get(pk=run.pk)
        audited = time.perf_counter() - start - parsed
    else:
        analyze()
        audited, run = audit(workspace, upload)
    from studio.workspaces.models import AuditLogEntry

    started = AuditLogEntry.objects.get(action="audit.started", target_id=run.pk)
    return {"upload": parsed, "audit": audited, "events_stored": upload.events_stored,
            "lines_bad": upload.lines_bad, "run": run,
            "on_arrival": started.details.get("audited_on_arrival", 0), "phases": _phases.last,
            **result_counts(run)}


# ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=1000, help="events per session")
    parser.add_argument("--rules", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=50, help="sessions per audit batch")
    parser.add_argument("--workers", type=int, default=0,
                        help="Celery worker processes for the audit (0: tasks in-process)")
    parser.add_argument("--quick", action="store_true", help="100 sessions")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--upload", action="store_true",
                        help="also time the upload of the same events as JSONL with the audit "
                             "on arrival, end to end (the issue's goal)")
    parser.add_argument("--separate", action="store_true",
                        help="also time the upload, then an audit started once it is parsed")
    parser.add_argument("--pairs", type=int, default=0,
                        help="also time this many back-to-back pairs of a bare COPY and an upload "
                             "with audit on arrival, and report the median of their ratios (the "
                             "machine's speed drifts over minutes; a pair shares its minute)")
    parser.add_argument("--floor", action="store_true",
                        help="with --pairs: also time, in each pair, the upload without an audit "
                             "(what loading alone costs), and show where the upload with audit "
                             "spent its time (loading, storing the results, the commit)")
    parser.add_argument("--json", help="write the figures as JSON to this file ('-': stdout)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions = min(args.sessions, 100)

    setup_django(args)
    loads = logging.getLogger("studio.traces.loading")
    loads.addHandler(_phases)
    loads.setLevel(logging.INFO)
    from django.conf import settings

    n = args.sessions * args.steps
    progress(f"generating {n:,} events ({args.sessions} sessions x {args.steps})")
    events = make_events(args.sessions, args.steps)
    workspace = make_workspace(args, "bench")
    _, rows = copy_rows(workspace, events)

    progress("bare COPY")
    copy_first = bare_copy(rows)
    analyze()

    mode = (f"{args.workers} Celery worker process{'es' if args.workers > 1 else ''} (Redis)"
            if args.workers else "tasks in-process (no broker), one after the other")
    progress(f"audit: {mode}")
    if args.workers:
        with Workers(args.workers):
            audit_time, run = audit(workspace)
    else:
        audit_time, run = audit(workspace)
    counts = result_counts(run)

    uploads = {}
    pairs: list[tuple[float, float]] = []  # (bare COPY, upload + audit on arrival), back to back
    floors: list[tuple[float, float]] = []  # (the pair's bare COPY, the upload alone)
    phases: list[dict] = []  # of each pair's upload with audit (``--floor``)
    if args.upload or args.separate or args.pairs:
        truncate_events()  # each load starts from an empty table, as the bare COPY does
        with tempfile.TemporaryDirectory() as tmp:
            path = write_log(events, Path(tmp))
            for key, on_arrival, wanted in (("arrival", True, args.upload),
                                            ("separate", False, args.separate)):
                if not wanted:
                    continue
                progress("upload + audit " + ("on arrival" if on_arrival
                                              else "started once parsed"))
                target = make_workspace(args, f"bench-{key}")
                if args.workers:
                    with Workers(args.workers):
                        uploads[key] = upload_and_audit(target, path, on_arrival)
                else:
                    uploads[key] = upload_and_audit(target, path, on_arrival)
                truncate_events()
            for i in range(args.pairs):
                progress(f"pair {i + 1} of {args.pairs}: bare COPY, then upload + audit on arrival")
                copied = bare_copy(rows)
                truncate_events()
                target = make_workspace(args, f"bench-pair-{i + 1}")
                up = upload_and_audit(target, path, True)
                if up["on_arrival"] != args.sessions or up["events_stored"] != n:
                    raise SystemExit(f"pair {i + 1}: {up['on_arrival']} sessions audited on "
                                     f"arrival, {up['events_stored']} events stored")
                pairs.append((copied, up["upload"] + up["audit"]))
                truncate_events()
                if args.floor:
                    phases.append(up["phases"])
                    alone = upload_alone(make_workspace(args, f"bench-alone-{i + 1}"), path)
                    floors.append((copied, alone))
                    truncate_events()

    # The COPY again, after the rest (the machine's load varies): the faster of the two counts.
    progress("bare COPY again")
    truncate_events()
    copy_again = bare_copy(rows)
    del rows
    analyze()
    copy_time = min(copy_first, copy_again)

    figures = {
        "commit": _commit(), "python": platform.python_version(), "events": n,
        "sessions": args.sessions, "rules": args.rules, "batch_size": settings.AUDIT_BATCH_SIZE,
        "batches": run.batches_total, "mode": mode, "copy_s": round(copy_time, 2),
        "copy_runs_s": [round(copy_first, 2), round(copy_again, 2)],
        "audit_s": round(audit_time, 2), "ratio": round(audit_time / copy_time, 2), **counts,
    }
    print()
    print(f"bench.pipeline  {n:,} events ({args.sessions} sessions x {args.steps}), "
          f"{args.rules} rules, batches of {settings.AUDIT_BATCH_SIZE} sessions; {mode}")
    print(f"  bare COPY into traces_event   {copy_time:7.2f} s   {n / copy_time:10,.0f} rows/s"
          f"   (best of {copy_first:.2f} s first and {copy_again:.2f} s last)")
    print(f"  audit of stored events        {audit_time:7.2f} s   {n / audit_time:10,.0f} events/s"
          f"   ({counts['results']:,} results, {counts['violations']:,} violations stored)")
    print(f"  ratio audit / COPY            {audit_time / copy_time:7.2f}x")
    for key, up in uploads.items():
        total = up["upload"] + up["audit"]
        same = {k: up[k] for k in counts} == counts
        how = ("upload with audit on arrival" if key == "arrival"
               else "upload, then audit once parsed")
        print(f"  {how:30}{total:7.2f} s   (parse + load {up['upload']:.2f} s, then "
              f"{up['audit']:.2f} s; {up['on_arrival']:,} of {args.sessions:,} sessions "
              f"audited on arrival; {up['events_stored']:,} events, {up['lines_bad']} bad "
              f"lines; results {'identical in count' if same else 'DIFFER'})")
        print(f"  ratio (upload + audit) / COPY {total / copy_time:7.2f}x  (guardrail <= "
              f"{GUARDRAIL}x: {'kept' if total <= GUARDRAIL * copy_time else 'BROKEN'})")
        figures[key] = {"upload_s": round(up["upload"], 2), "audit_s": round(up["audit"], 2),
                        "total_s": round(total, 2), "ratio": round(total / copy_time, 2),
                        "audited_on_arrival": up["on_arrival"], "same_counts": same}

    if pairs:
        median = statistics.median(total / copied for copied, total in pairs)
        print("  back-to-back pairs (bare COPY, then upload with audit on arrival):")
        for i, (copied, total) in enumerate(pairs, start=1):
            print(f"    pair {i}: COPY {copied:6.2f} s, upload + audit {total:6.2f} s, "
                  f"ratio {total / copied:5.2f}x")
        print(f"  median ratio of the pairs          {median:5.2f}x  (guardrail <= "
              f"{GUARDRAIL}x: {'kept' if median <= GUARDRAIL else 'BROKEN'})")
        figures["pairs"] = [{"copy_s": round(c, 2), "upload_audit_s": round(t, 2),
                             "ratio": round(t / c, 2)} for c, t in pairs]
        figures["pairs_median_ratio"] = round(median, 2)
    if floors:
        alone = statistics.median(t / c for c, t in floors)
        print("  the upload alone (no audit), after each pair's upload with audit:")
        for i, ((copied, total), (_, t)) in enumerate(zip(pairs, floors, strict=True), start=1):
            print(f"    pair {i}: upload alone {t:6.2f} s, ratio {t / copied:5.2f}x; the upload "
                  f"with audit {total - t:+.2f} s")
        print(f"  median ratio of the upload alone     {alone:5.2f}x")
        print("  where each upload with audit spent its time (studio.traces.loading's log):")
        for i, p in enumerate(phases, start=1):
            if not p:
                print(f"    pair {i}: no phases logged (studio.traces.loading said nothing)")
                continue
            print(f"    pair {i}: load (parse, write, monitor) {p['load_s']:6.2f} s, store the "
                  f"results {p['finish_s']:5.2f} s, commit (foreign keys) {p['commit_s']:5.2f} s")
        figures["upload_alone"] = [round(t, 2) for _, t in floors]
        figures["upload_alone_median_ratio"] = round(alone, 2)
        figures["phases"] = [{k: round(v, 2) for k, v in p.items()} for p in phases]

    if args.profile:
        progress("profile")
        parts = breakdown(run)
        rows_read = parts["rows"]
        print(f"\n  where a batch's time goes (first 3 batches, {rows_read:,} events):")
        last = 0.0
        for key, label in (("fetch", "stream rows from Postgres (server-side cursor)"),
                           ("fetch+label", "+ build event dicts and label them"),
                           ("compute", "+ SessionMonitor.feed and results (compute_batch)")):
            print(f"    {label:52} {parts[key]:6.2f} s  (+{parts[key] - last:5.2f} s, "
                  f"{rows_read / parts[key]:9,.0f} events/s)")
            last = parts[key]
        print(f"    {'store results, violations, witnesses (COPY)':52} {parts['store']:6.2f} s")
        figures["breakdown"] = {k: round(v, 3) if isinstance(v, float) else v
                                for k, v in parts.items()}
        print("\n  cProfile of compute_batch on the first batch (top by own time):")
        print(profile_batch(run, 25))

    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
