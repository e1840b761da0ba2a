"""Upload under lost connections: a log loaded while every connection to the database is
terminated once a second, as issue 24 reported it (``pg_terminate_backend`` on every backend of
the database but the killer's own).

Run from the repository root::

    .venv/bin/python -m bench.upload_faults                   # 120,000 lines, killed every 1 s
    .venv/bin/python -m bench.upload_faults --every 0.5       # more often
    .venv/bin/python -m bench.upload_faults --calm            # also an undisturbed load, to compare

It uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/studio_bench_traces``),
creating and migrating that database itself (``bench.uploads``); the log is ``bench.uploads``'s
(seeded, explicit steps) under ``$BENCH_TMP`` or /tmp.  The parse runs as the Celery task does,
in this process (``parse_upload_task.apply``): the loader's connections (the task's, the writing
thread's) are the ones terminated.  It prints how the upload ended, how many of its lines are
stored and whether any twice, and exits 1 unless every line is stored exactly once.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import threading
import time
from pathlib import Path


class ConnectionKiller:
    """A thread that terminates every other backend connected to ``database`` every ``low`` to
    ``high`` seconds (seeded), through a connection of its own; ``kills`` counts the
    terminations and ``rounds`` the times it struck; ``first``: the first strike after that many
    seconds instead."""

    def __init__(self, conninfo: dict, database: str, low: float, high: float, seed: int = 24,
                 first: float | None = None):
        self.conninfo, self.database = conninfo, database
        self.low, self.high, self.first = low, high, first
        self.random = random.Random(seed)
        self.kills = self.rounds = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="connection-killer")

    def __enter__(self) -> ConnectionKiller:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(**self.conninfo, dbname=self.database,
                                 autocommit=True) as killer:
                wait = self.first if self.first is not None else self.random.uniform(
                    self.low, self.high)
                while not self._stop.wait(wait):
                    wait = self.random.uniform(self.low, self.high)
                    killed = killer.execute(
                        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))"
                        " FROM pg_stat_activity"
                        " WHERE datname = %s AND pid <> pg_backend_pid()"
                        " AND backend_type = 'client backend'",
                        [self.database]).fetchone()[0]
                    self.kills += killed
                    self.rounds += 1
        except BaseException as exc:  # noqa: BLE001 - the caller reports it
            self.failure = exc


class LostConnections(logging.Handler):
    """Counts the loader's warnings that a lost connection is retried."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "connection was lost" in record.getMessage():
            self.count += 1


def conninfo_of(settings_dict: dict) -> dict:
    return {key: value for key, value in (
        ("host", settings_dict["HOST"] or None), ("port", settings_dict["PORT"] or None),
        ("user", settings_dict["USER"] or None), ("password", settings_dict["PASSWORD"] or None))
        if value}


def load(log: Path, number: int, killer: ConnectionKiller | None) -> dict:
    """Upload ``log`` to a workspace of its own and run its parse task; how it ended."""
    from django.core.files import File
    from django.db import connection

    from studio.traces import intake
    from studio.traces.models import Event, Upload
    from studio.workspaces import services as ws
    from worker.uploads import parse_upload_task

    workspace = ws.create_workspace(f"bench faults {number}",
                                    slug=f"bench-faults-{number}-{os.getpid()}")
    enqueue = intake.enqueue_parse
    intake.enqueue_parse = lambda upload_id: None  # run below, under the killer
    try:
        with open(log, "rb") as handle:
            upload, _ = intake.create_upload(workspace, File(handle, name=log.name), "jsonl")
    finally:
        intake.enqueue_parse = enqueue
    counter = LostConnections()
    loader_log = logging.getLogger("studio.traces.loading")
    level, propagate = loader_log.level, loader_log.propagate
    loader_log.setLevel(logging.WARNING)
    loader_log.propagate = False  # counted, not printed
    loader_log.addHandler(counter)
    start = time.perf_counter()
    try:
        if killer is None:
            outcome = parse_upload_task.apply(args=[upload.pk]).get()
        else:
            with killer:
                outcome = parse_upload_task.apply(args=[upload.pk]).get()
    finally:
        loader_log.removeHandler(counter)
        loader_log.setLevel(level)
        loader_log.propagate = propagate
    elapsed = time.perf_counter() - start
    connection.close()  # the killer may have ended it last
    upload = Upload.objects.get(pk=upload.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT (session_id, step)),"
                       " count(DISTINCT input) FROM traces_event WHERE upload_id = %s",
                       [upload.pk])
        rows, places, inputs = cursor.fetchone()
    intake.stored_file(upload).unlink(missing_ok=True)
    Event.objects.filter(upload_id=upload.pk).delete()
    return {"outcome": outcome, "seconds": elapsed, "upload": upload, "rows": rows,
            "places": places, "inputs": inputs, "retried": counter.count}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=120_000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--every", type=float, default=1.0,
                        help="seconds between two rounds of terminations")
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="each pause is drawn from [every - jitter, every + jitter]")
    parser.add_argument("--calm", action="store_true", help="also load it undisturbed")
    args = parser.parse_args(argv)

    from bench.uploads import _setup_database, generate

    _setup_database()
    from django.conf import settings
    from django.db import connection

    folder = Path(os.environ.get("BENCH_TMP") or "/tmp")
    settings.UPLOAD_ROOT = folder / "bench_uploads_root"
    log = folder / f"bench_uploads_{args.events}_{args.sessions}.jsonl"
    if not log.exists():
        print(f"generating {log} ...", flush=True)
        generate(log, args.events, args.sessions)
    lines = sum(1 for _ in open(log, "rb"))
    database = connection.settings_dict["NAME"]
    killer = ConnectionKiller(conninfo_of(connection.settings_dict), database,
                              args.every - args.jitter, args.every + args.jitter)
    runs = [("connections killed", killer)] + ([("undisturbed", None)] if args.calm else [])
    print(f"{lines:,} lines, {log.stat().st_size / 1e6:.0f} MB; every backend of {database} "
          f"terminated every {args.every:g} s (+/- {args.jitter:g}); {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    ok = True
    for number, (name, with_killer) in enumerate(runs, start=1):
        result = load(log, number, with_killer)
        upload = result["upload"]
        once = (upload.status == "parsed" and result["rows"] == lines
                and result["places"] == result["inputs"] == lines and upload.lines_bad == 0)
        ok = ok and once
        print(f"\n{name}: task answered {result['outcome']!r} in {result['seconds']:.1f} s; "
              f"upload {upload.status}, attempts {upload.attempts}"
              + (f", error: {upload.error}" if upload.error else ""))
        print(f"  stored {result['rows']:,} of {lines:,} lines ({result['places']:,} distinct "
              f"(session, step), {result['inputs']:,} distinct inputs); counters: "
              f"{upload.lines_total:,} read, {upload.lines_ok:,} ok, {upload.lines_bad:,} bad, "
              f"{upload.events_stored:,} events; {'every line once' if once else 'NOT every line once'}")
        if with_killer is not None:
            if with_killer.failure is not None:
                print(f"  the killer failed: {with_killer.failure!r}")
                ok = False
            print(f"  {with_killer.rounds} rounds terminated {with_killer.kills} connections; "
                  f"the loader retried {result['retried']} lost connections")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
