"""Upload benchmark: parse and load of a generated JSONL log against a bare COPY of the same rows.

Run from the repository root::

    .venv/bin/python -m bench.uploads                    # 1,000,000 events, Postgres
    .venv/bin/python -m bench.uploads --events 100000    # smaller
    .venv/bin/python -m bench.uploads --staged           # also the staged load (no direct COPY)

It uses ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/studio_bench_traces``),
creating and migrating that database itself; the log is generated (seeded) under ``$BENCH_TMP``
or /tmp and reused by later runs.  Contenders, each on an emptied ``traces_event`` after a
CHECKPOINT, best of ``--repeat`` runs:

- **parse only**: the JSONL parser over the file, no database (what Python costs);
- **upload + parse + load**: ``create_upload`` (stream to disk, sha256) then ``parse_upload``
  (parse, validate, sessions created and locked, COPY, counters), exactly what the Celery task runs;
- **bare COPY**: the same rows, serialised beforehand (untimed) into COPY's text format, streamed
  into ``traces_event`` with one COPY in one transaction - the floor for loading these rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from pathlib import Path

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/studio_bench_traces"
# The bare COPY's columns, in the order prepare_copy writes them.
EVENT_COLUMNS = ("workspace_id", "session_id", "upload_id", "step", "source", "event_id",
                 "lifeline", "timestamp", "input", "output", "data", "labels", "message_id",
                 "message_peer", "message_kind")
TOOLS = ["send_money", "get_balance", "search_calendar", "send_email", "read_file",
         "update_password", "get_iban", "schedule_transaction"]


def _setup_database() -> None:
    os.environ.setdefault("DATABASE_URL", DEFAULT_URL)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import dj_database_url
    import psycopg

    config = dj_database_url.parse(os.environ["DATABASE_URL"])
    if "postgresql" not in config["ENGINE"]:
        sys.exit("bench.uploads measures COPY: DATABASE_URL must name a Postgres database")
    with psycopg.connect(host=config["HOST"] or None, port=config["PORT"] or None,
                         user=config["USER"] or None, password=config["PASSWORD"] or None,
                         dbname="postgres", autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                               [config["NAME"]]).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{config["NAME"]}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def generate(path: Path, events: int, sessions: int, seed: int = 7) -> None:
    """AgentDojo-like lines: a tool call with arguments, an observation, an env object."""
    rng = random.Random(seed)
    steps = events // sessions
    with open(path, "w", encoding="utf-8") as out:
        for s in range(sessions):
            for step in range(steps):
                tool = rng.choice(TOOLS)
                line = {"session": f"bench/suite_{s % 4}/task_{s}", "step": step,
                        "input": f"observation {step} of task {s}: balance {rng.randint(0, 9999)}",
                        "output": {"tool": tool,
                                   "args": {"amount": rng.randint(1, 20000),
                                            "recipient": f"IBAN{rng.randint(0, 99)}"}},
                        "env": {"suite": f"suite_{s % 4}", "kind": "user_task", "error": None}}
                out.write(json.dumps(line) + "\n")


def _copy_text(value) -> str:
    """A value in COPY's text format."""
    if value is None:
        return "\\N"
    text = value if isinstance(value, str) else str(value)
    return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def prepare_copy(log: Path, target: Path, workspace_id: int, upload_id: int,
                 session_ids: dict[str, int]) -> int:
    """The log's rows, serialised as the loader stores them, in COPY text format."""
    from studio.traces.parsing import _dumps

    rows = 0
    with open(log, "rb") as source, open(target, "w", encoding="utf-8") as out:
        for raw in source:
            line = json.loads(raw)
            data = {"env": line["env"]}
            fields = (workspace_id, session_ids[line["session"]], upload_id, line["step"], "upload",
                      None, "", None, _dumps(line["input"]), _dumps(line["output"]), _dumps(data),
                      None, "", "", "")
            out.write("\t".join(_copy_text(f) for f in fields) + "\n")
            rows += 1
    return rows


def _empty_events() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE traces_event, traces_uploaderror CASCADE")
        cursor.execute("CHECKPOINT")
    gc.collect()


def run_parse_only(log: Path) -> float:
    from studio.traces import formats

    start = time.perf_counter()
    with open(log, "rb") as handle:
        count = sum(1 for _ in formats.parse("jsonl", handle))
    elapsed = time.perf_counter() - start
    assert count > 0
    return elapsed


def run_upload(log: Path, number: int, staged: bool) -> tuple[float, float, int]:
    from django.core.files import File

    from studio.traces import intake, loading
    from studio.traces.models import TraceSession, Upload
    from studio.workspaces import services as ws

    _empty_events()
    workspace = ws.create_workspace(f"bench upload {number}",
                                    slug=f"bench-up-{number}-{os.getpid()}")
    loading.DIRECT_COPY = not staged
    enqueue = intake.enqueue_parse
    intake.enqueue_parse = lambda upload_id: None  # timed separately below
    try:
        start = time.perf_counter()
        with open(log, "rb") as handle:
            upload, _ = intake.create_upload(workspace, File(handle, name=log.name), "jsonl")
        stored = time.perf_counter()
        loading.parse_upload(upload.pk)
        done = time.perf_counter()
    finally:
        intake.enqueue_parse = enqueue
        loading.DIRECT_COPY = True
    upload = Upload.objects.get(pk=upload.pk)
    assert upload.status == "parsed" and upload.lines_bad == 0, (upload.status, upload.error)
    assert sum(TraceSession.objects.filter(workspace=workspace)
               .values_list("steps", flat=True)) == upload.events_stored
    intake.stored_file(upload).unlink(missing_ok=True)
    return stored - start, done - stored, upload.events_stored


def run_bare_copy(copy_file: Path) -> tuple[float, int]:
    from django.db import connection, transaction

    _empty_events()
    start = time.perf_counter()
    # The commit is timed too: it runs the deferred foreign-key checks.
    columns = ", ".join(EVENT_COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor, \
            cursor.copy(f"COPY traces_event ({columns}) FROM STDIN") as copy, \
            open(copy_file, "rb") as source:
        while chunk := source.read(1 << 20):
            copy.write(chunk)
    elapsed = time.perf_counter() - start
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM traces_event")
        rows = cursor.fetchone()[0]
    return elapsed, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--staged", action="store_true",
                        help="also time the staged load (temporary table, INSERT ON CONFLICT)")
    args = parser.parse_args(argv)
    _setup_database()

    from django.conf import settings
    from django.db import connection

    from studio.traces.models import TraceSession, Upload
    from studio.workspaces import services as ws

    folder = Path(os.environ.get("BENCH_TMP") or "/tmp")
    settings.UPLOAD_ROOT = folder / "bench_uploads_root"
    log = folder / f"bench_uploads_{args.events}_{args.sessions}.jsonl"
    if not log.exists():
        print(f"generating {log} ...", flush=True)
        generate(log, args.events, args.sessions)
    # The bare COPY's sessions exist beforehand in a workspace of their own.
    names = []
    with open(log, "rb") as handle:
        for raw in handle:
            name = json.loads(raw)["session"]
            if not names or names[-1] != name:
                names.append(name)
    bare = ws.create_workspace("bench bare copy", slug=f"bench-bare-{os.getpid()}")
    TraceSession.objects.bulk_create([TraceSession(workspace=bare, external_id=n) for n in names],
                                     batch_size=1000)
    ids = dict(TraceSession.objects.filter(workspace=bare).values_list("external_id", "pk"))
    # Its rows name an upload too, so both pay the same three foreign-key checks per row.
    holder = Upload.objects.create(workspace=bare, filename="bare", format="jsonl",
                                   sha256="0" * 64, status="parsed")
    copy_file = folder / f"bench_uploads_{args.events}_{args.sessions}.copy"
    print("serialising the rows for the bare COPY (untimed) ...", flush=True)
    prepare_copy(log, copy_file, bare.pk, holder.pk, ids)

    size = log.stat().st_size
    results: dict[str, list[float]] = {"parse only": [], "upload + parse + load": [],
                                       "  of which storing the file": [], "bare COPY": []}
    if args.staged:
        results["upload + parse + staged load"] = []
    load_before = os.getloadavg()[0]
    number = 0
    for _ in range(args.repeat):
        elapsed, rows = run_bare_copy(copy_file)
        results["bare COPY"].append(elapsed)
        results["parse only"].append(run_parse_only(log))
        number += 1
        store, parse, events = run_upload(log, number, staged=False)
        assert events == rows == args.events // args.sessions * args.sessions, (events, rows)
        results["upload + parse + load"].append(store + parse)
        results["  of which storing the file"].append(store)
        if args.staged:
            number += 1
            store, parse, _ = run_upload(log, number, staged=True)
            results["upload + parse + staged load"].append(store + parse)
    _empty_events()
    copy_file.unlink(missing_ok=True)

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    floor = min(results["bare COPY"])
    print(f"\n{rows:,} events, {args.sessions:,} sessions, {size / 1e6:.0f} MB of JSONL; "
          f"Postgres {version}; best of {args.repeat}; {os.cpu_count()} cores, load average "
          f"{load_before:.1f} before and {os.getloadavg()[0]:.1f} after")
    print(f"{'':34} {'seconds':>8} {'events/s':>10} {'x bare COPY':>12}")
    for name, times in results.items():
        best = min(times)
        print(f"{name:34} {best:8.1f} {rows / best:10,.0f} {best / floor:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
