"""Relearning a risk model of about 10^4 abstract states, end to end (issue 24, item 6).

    .venv/bin/python -m bench.relearn                     # 800 sessions x 20 events, 20 rules
    .venv/bin/python -m bench.relearn --sessions 2000 --events 20 --profile 25

Goal: a 10^4-state relearn well under a minute, end to end.

What it does, in order:

1. (Re)creates the Postgres database ``studio_bench_relearn``, migrates it and creates the
   workspace of ``bench.webhook`` (the 20 approved rules of ``bench.workloads.RULES_20``);
2. stores ``--sessions`` finished sessions of ``--events`` agent events each (the workload of
   ``bench.guard``: 800 x 20 give about 11,600 abstract states), loaded with COPY (not timed);
3. in a fresh process (nothing cached), asks for a model with the product's service
   (``learning.request_model``) and runs the task's body (``learning.learn_model``) on it, timed
   end to end: the claim, reading the sessions from Postgres, labelling, replaying the monitors
   (the abstract traces), the valid transitions, the smoothed DTMC, the PAC bounds, encoding
   and storing the model.  Prints the phases and the model's size; ``--profile N`` also prints
   the N functions with the most cumulative time (cProfile, which slows the run down).

The task is what a worker runs, so the figure is what a worker process is held for; the queue
wait before it is not part of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

from bench import webhook

REPO = webhook.REPO
DB_NAME = "studio_bench_relearn"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL_SECONDS = 60.0

STORE = '''
import json, sys
from django.db import connection, transaction
from bench.workloads import agent_events
from studio.traces.models import Event, TraceSession
from studio.workspaces.models import Workspace
ws = Workspace.objects.get(slug="bench")
sessions, length = int(sys.argv[1]), int(sys.argv[2])
events = agent_events(sessions * length, seed=5)
with transaction.atomic():
    TraceSession.objects.bulk_create([
        TraceSession(workspace=ws, external_id=f"learn-{s}", steps=length)
        for s in range(sessions)])
    ids = dict(TraceSession.objects.filter(workspace=ws).values_list("external_id", "id"))
    with connection.cursor() as cursor, cursor.copy(
            f"COPY {Event._meta.db_table} (workspace_id, session_id, step, source, lifeline,"
            " data, labels, message_id, message_peer, message_kind) FROM STDIN") as copy:
        for s in range(sessions):
            for k, event in enumerate(events[s * length:(s + 1) * length]):
                copy.write_row((ws.id, ids[f"learn-{s}"], k, "upload", "",
                                json.dumps(event["data"]), json.dumps(event["labels"]),
                                "", "", ""))
print(f"stored {sessions} sessions of {length} events")
'''

LEARN = '''
import cProfile, inspect, io, json, pstats, sys, time
from studio.guard import learning
from studio.guard.models import LearnedRiskModel
from studio.workspaces.models import Workspace
top = int(sys.argv[1])
ws = Workspace.objects.get(slug="bench")
# The record is made as a request makes it; its task is run here, not by a worker (and not in
# the request's place, as tasks run in-process without a broker would).
learning._enqueue = lambda record_id: None
started = time.perf_counter()
row = learning.request_model(ws, reason="benchmark")
phases = {}
profiler = cProfile.Profile() if top else None
if profiler:
    profiler.enable()
# (a version of the service before phases were counted is timed end to end only)
counted = "phases" in inspect.signature(learning.learn_model).parameters
status = learning.learn_model(row.pk, **({"phases": phases} if counted else {}))
if profiler:
    profiler.disable()
total = time.perf_counter() - started
row = LearnedRiskModel.objects.get(pk=row.pk)
assert row.status == "ready", (row.status, row.error)
if profiler:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    print(out.getvalue(), file=sys.stderr)
print(json.dumps({"seconds": total, "phases": phases, "states": row.states,
                  "sessions": row.sessions, "events": row.events,
                  "stored_bytes": len(json.dumps(row.model))}))
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=800, help="finished sessions stored")
    parser.add_argument("--events", type=int, default=20, help="events per session")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print the N functions with the most cumulative time")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the database of the previous run (same sizes)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)

    settings_dir = tempfile.mkdtemp(prefix="bench-relearn-")
    Path(settings_dir, "bench_live_settings.py").write_text(webhook.SETTINGS_MODULE)
    env = webhook._server_env(settings_dir)
    env["DATABASE_URL"] = DB_URL
    env["GUARD_MODEL_MAX_SESSIONS"] = str(args.sessions)
    if not args.reuse:
        print(f"preparing {DB_NAME} (20 approved rules) ...", flush=True)
        webhook._prepare(env, DB_NAME)
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             f"import sys; sys.argv = ['x', '{args.sessions}', '{args.events}']; "
             f"exec({STORE!r})"], cwd=REPO, env=env, check=True, capture_output=True, text=True)
        print(done.stdout.strip().splitlines()[-1], flush=True)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         f"import sys; sys.argv = ['x', '{args.profile}']; exec({LEARN!r})"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        print(done.stdout, done.stderr, file=sys.stderr)
        return 2
    if args.profile:
        print(done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"relearn: {result['states']:,} states from {result['sessions']:,} sessions "
          f"({result['events']:,} events), stored model {result['stored_bytes']:,} bytes")
    for name, seconds in result["phases"].items():
        print(f"  {name:<26} {seconds:8.2f} s")
    print(f"  {'end to end':<26} {result['seconds']:8.2f} s   (goal: under {GOAL_SECONDS:g} s)")
    with psycopg.connect(DB_URL) as conn:
        learned = conn.execute("SELECT count(*) FROM guard_learnedriskmodel").fetchone()[0]
    print(f"models in the database: {learned}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), **result}, indent=2))
    return 0 if result["seconds"] < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
