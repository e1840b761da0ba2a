"""Guard decision latency under a bounded loopback load (issue 16, item 3), next to the webhook's.

    .venv/bin/python -m bench.guard                        # 200 req/s for 20 s, gunicorn
    .venv/bin/python -m bench.guard --rate 100 --seconds 10 --model-sessions 200
    .venv/bin/python -m bench.guard --sampling             # issue 27 item 5: three phases in
                                                           # one run, see below

Goal: p99 under 10 ms at 200 requests/s with 20 rules and a learned model of 10^4 states.

``--sampling`` (issue 27, item 5) measures, against the same server and database, one after the
other: the webhook (single-event POSTs, as ``bench.webhook``) at ``--rate``, the plain guard
(one proposed event: the exact check, the DTMC and anticipation) at ``--rate``, and the sampling
guard at ``--sampling-rate`` (default 50 req/s): each request proposes ``--candidates`` (8)
candidate next events, each with a sampled continuation of ``--continuation`` (5) events, and the
rule set's policy has a horizon of 1 + ``--continuation`` so that every sampled step counts.
Goals: the plain guard's p99 under 10 ms, the sampling guard's under 20 ms.

What it does, in order:

1. (Re)creates the Postgres database ``studio_bench_guard`` and migrates it; creates the
   workspace of ``bench.webhook`` (the 20 rules of ``bench.workloads.RULES_20``, approved, a
   token);
2. stores ``--model-sessions`` finished live sessions of 20 events each (the workload's agent
   events, posted through the live service and ended), and learns the risk model from them with
   the product's own learning service (``studio.guard.learning``), as the Celery task does;
   800 sessions give about 11,600 abstract states;
3. opens ``--sessions`` live sessions with 10 events each (the guarded ones);
4. starts gunicorn as ``bench.webhook`` does, warms every worker up (the model loaded and its
   risks solved at the policy's horizon: not measured), then sends guard requests on a fixed
   schedule (open loop, latency from the due time): each proposes one next event of the
   workload; every answer is checked (a decision, a risk per rule, the learned model used).

The guard stores no event, so the sessions stand still: every request asks from the same state
of its session, which is what a guard in front of an agent's sampling loop sees too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

from bench import webhook
from bench.workloads import RULES_20
from studio.risk.guard import DECISIONS

REPO = webhook.REPO
DB_NAME = "studio_bench_guard"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL_P99_MS = 10.0
GOAL_SAMPLING_P99_MS = 20.0

# --sampling: one live rule set of the 20 rules, its policy's horizon covering every sampled step
# (set before the model is learned, which is for the live versions).
POLICY = '''
import sys
from studio.guard.models import GuardPolicy
from studio.rules.models import Rule, RuleSet
from studio.workspaces.models import Workspace
ws = Workspace.objects.get(slug="bench")
ruleset = RuleSet.objects.create(workspace=ws, name="bench", live=True)
ruleset.rules.set(Rule.objects.filter(workspace=ws))
GuardPolicy.objects.create(ruleset=ruleset, policy={"horizon": int(sys.argv[1])})
'''

MODEL = '''
import sys, time
from bench.workloads import agent_events
from studio.guard import learning
from studio.guard.models import LearnedRiskModel
from studio.live.ending import end_session
from studio.live.events import SOURCE_LIVE
from studio.live.ingest import ingest
from studio.workspaces.models import Workspace
ws = Workspace.objects.get(slug="bench")
sessions, guarded = int(sys.argv[1]), int(sys.argv[2])
events = agent_events(sessions * 20 + guarded * 10, seed=5)
started = time.perf_counter()
for s in range(sessions):
    batch = events[s * 20:(s + 1) * 20]
    for k, event in enumerate(batch):
        event["event_id"] = f"learn-{s}-{k}"
    ingest(ws, f"learn-{s}", batch, SOURCE_LIVE)
    end_session(ws, f"learn-{s}")
base = sessions * 20
for g in range(guarded):
    batch = events[base + g * 10: base + (g + 1) * 10]
    for k, event in enumerate(batch):
        event["event_id"] = f"guarded-{g}-{k}"
    ingest(ws, f"guarded-{g}", batch, SOURCE_LIVE)
stored = time.perf_counter()
row = learning.request_model(ws, reason="benchmark")
learning.learn_model(row.pk)
row.refresh_from_db()
assert row.status == "ready", (row.status, row.error)
print(f"stored {sessions} sessions in {stored - started:.1f} s; learned {row.states} states "
      f"from {row.sessions} sessions ({row.events} events) in {time.perf_counter() - stored:.1f} s")
'''


def _guard_requests(spec: dict) -> list[tuple[str, bytes, dict]]:
    from bench.workloads import agent_events

    total = int(spec["rate"] * spec["seconds"]) + spec["warmup"]
    candidates, length = spec.get("candidates", 0), spec.get("continuation", 0)
    per = max(candidates, 1) * (1 + length)
    events = agent_events(total * per, seed=21)
    out = []
    for i in range(total):
        session = f"guarded-{i % spec['sessions']}"
        mine = events[i * per:(i + 1) * per]
        if candidates:
            samples = [{"event": mine[k], "continuation": mine[k + 1:k + 1 + length]}
                       for k in range(0, per, 1 + length)]
            document = {**samples[0], "candidates": samples[1:]}
        else:
            document = {"event": mine[0]}
        body = json.dumps(document).encode()
        headers = {"Content-Type": "application/json", "Connection": "close",
                   "Authorization": f"Bearer {spec['token']}"}
        out.append((f"/api/w/bench/live/sessions/{session}/guard", body, headers))
    return out


def _guard_answer_problem(answer_body: bytes, rules: int, body: bytes = b"") -> str | None:
    try:
        answer = json.loads(answer_body)
    except ValueError:
        return "not JSON"
    if answer.get("decision") not in DECISIONS:
        return f"no decision: {answer!r}"[:200]
    if len(answer.get("risk", {})) != rules:
        return f"{len(answer.get('risk', {}))} rules' risks, not {rules}"
    if not answer.get("learned_model"):
        return "the learned model was not used"
    if b'"candidates"' in body and answer.get("predictor") not in ("exact", "sampling", "dtmc"):
        return f"no predictor: {answer!r}"[:200]
    return None


def _phase_requests(spec: dict) -> tuple[list, object]:
    """The requests of one phase, and the check of their answers."""
    if spec.get("kind") == "webhook":
        return webhook._requests(spec), webhook._answer_problem
    return _guard_requests(spec), _guard_answer_problem


def _run_phase(name: str, spec: dict, server) -> dict:
    """One phase's load from its own process; its figures."""
    print(f"{name}: {spec['rate']:g} req/s for {spec['seconds']:g} s", flush=True)
    cpu_before = webhook._server_cpu(server.pid)
    done = subprocess.run([sys.executable, "-m", "bench.guard", "--load", json.dumps(spec)],
                          cwd=REPO, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(2)
    result = json.loads(done.stdout)
    result["cpu"] = ((webhook._server_cpu(server.pid) - cpu_before)
                     / (result["count"] + spec["warmup"]))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sessions", type=int, default=50, help="guarded live sessions")
    parser.add_argument("--model-sessions", type=int, default=800,
                        help="finished sessions the model is learned from")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--clients", type=int, default=32, help="load generator threads")
    parser.add_argument("--sampling", action="store_true",
                        help="three phases in one run: the webhook and the plain guard at "
                             "--rate, the sampling guard at --sampling-rate")
    parser.add_argument("--sampling-rate", type=float, default=50.0)
    parser.add_argument("--settle", type=float, default=10.0,
                        help="--sampling: seconds between the first warm-up and the first "
                             "measured phase")
    parser.add_argument("--candidates", type=int, default=8,
                        help="--sampling: candidates per request")
    parser.add_argument("--continuation", type=int, default=5,
                        help="--sampling: sampled steps after each candidate")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # internal: the load process
    args = parser.parse_args()
    if args.load:
        spec = json.loads(args.load)
        requests, check = _phase_requests(spec)
        result = webhook.run_load(spec, requests, check)
        json.dump(result, sys.stdout)
        return 0
    if args.sampling:
        return _compare(args)

    load_before = webhook._load()
    settings_dir = tempfile.mkdtemp(prefix="bench-guard-")
    Path(settings_dir, "bench_live_settings.py").write_text(webhook.SETTINGS_MODULE)
    env = webhook._server_env(settings_dir)
    env["DATABASE_URL"] = DB_URL
    env["GUARD_MODEL_MAX_SESSIONS"] = str(args.model_sessions)
    print(f"preparing {DB_NAME} (20 approved rules) ...", flush=True)
    credentials = webhook._prepare(env, DB_NAME)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         f"import sys; sys.argv = ['x', '{args.model_sessions}', '{args.sessions}']; "
         f"exec({MODEL!r})"], cwd=REPO, env=env, check=True, capture_output=True, text=True)
    print(done.stdout.strip().splitlines()[-1], flush=True)
    port = webhook._free_port()
    server = webhook._start_server(env, port, args.workers, 1)
    try:
        spec = {"port": port, "rate": args.rate, "seconds": args.seconds,
                "sessions": args.sessions, "clients": args.clients,
                "warmup": 30 * args.workers, "rules": len(RULES_20), **credentials}
        print(f"load: {args.rate:g} req/s for {args.seconds:g} s, guard POSTs over "
              f"{args.sessions} sessions; gunicorn {args.workers} worker(s) on "
              f"127.0.0.1:{port}", flush=True)
        cpu_before = webhook._server_cpu(server.pid)
        done = subprocess.run([sys.executable, "-m", "bench.guard", "--load", json.dumps(spec)],
                              cwd=REPO, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return 2
        result = json.loads(done.stdout)
        cpu = (webhook._server_cpu(server.pid) - cpu_before) / (result["count"] + spec["warmup"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    with psycopg.connect(DB_URL) as conn:
        decisions = dict(conn.execute("SELECT decision, count(*) FROM guard_guarddecision "
                                      "GROUP BY decision").fetchall())
    ok = webhook.report(result, cpu, GOAL_P99_MS, args.rate, load_before)
    print(f"decisions stored: {decisions}")
    return 0 if ok else 1


def _compare(args) -> int:
    """--sampling: the webhook, the plain guard and the sampling guard, one after the other
    against one server."""
    load_before = webhook._load()
    settings_dir = tempfile.mkdtemp(prefix="bench-guard-")
    Path(settings_dir, "bench_live_settings.py").write_text(webhook.SETTINGS_MODULE)
    env = webhook._server_env(settings_dir)
    env["DATABASE_URL"] = DB_URL
    env["GUARD_MODEL_MAX_SESSIONS"] = str(args.model_sessions)
    print(f"preparing {DB_NAME} (20 approved rules, one live rule set, horizon "
          f"{1 + args.continuation}) ...", flush=True)
    credentials = webhook._prepare(env, DB_NAME)
    for script, argv in ((POLICY, [str(1 + args.continuation)]),
                         (MODEL, [str(args.model_sessions), str(args.sessions)])):
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             f"import sys; sys.argv = ['x', {', '.join(map(repr, argv))}]; exec({script!r})"],
            cwd=REPO, env=env, check=True, capture_output=True, text=True)
    print(done.stdout.strip().splitlines()[-1], flush=True)
    port = webhook._free_port()
    server = webhook._start_server(env, port, args.workers, 1)
    base = {"port": port, "seconds": args.seconds, "sessions": args.sessions,
            "clients": args.clients, "warmup": 30 * args.workers, "rules": len(RULES_20),
            "auth": "token", **credentials}
    # The first requests of each worker build its live context, whose rules' first states
    # the worker then searches ahead in the background (about 2 s of CPU for the 20 rules):
    # let that finish before the first phase is measured.
    phases = [("webhook", {**base, "kind": "webhook", "rate": args.rate, "run": "hook",
                           "settle": args.settle}, webhook.GOAL_P99_MS),
              ("plain guard", {**base, "kind": "guard", "rate": args.rate}, GOAL_P99_MS),
              (f"sampling guard ({args.candidates} candidates x {args.continuation} steps)",
               {**base, "kind": "guard", "rate": args.sampling_rate,
                "candidates": args.candidates, "continuation": args.continuation},
               GOAL_SAMPLING_P99_MS)]
    results = []
    try:
        for name, spec, goal in phases:
            result = _run_phase(name, spec, server)
            ok = webhook.report(result, result["cpu"], goal, spec["rate"], load_before)
            results.append((name, spec["rate"], result, goal, ok))
    finally:
        server.terminate()
        server.wait(timeout=30)
    try:
        with psycopg.connect(DB_URL) as conn:
            unknown = conn.execute("SELECT count(*) FROM guard_guarddecision WHERE "
                                   "jsonb_array_length(coalesce(answer->'not_yet_known', "
                                   "'[]'::jsonb)) > 0").fetchone()[0]
            stored = conn.execute("SELECT count(*) FROM rules_anticipatedverdict").fetchone()[0]
        print(f"guard answers with a rule's anticipation not yet known (warm-up included): "
              f"{unknown}; anticipatory verdicts stored: {stored}")
    except psycopg.errors.UndefinedTable:   # a version of the studio before issue 27, item 4
        pass
    print("\nsummary (one server, one run; latency from the due time):")
    print("| phase | rate | p50 | p99 | server CPU / request | goal |")
    print("|---|---|---|---|---|---|")
    for name, rate, result, goal, ok in results:
        lat = result["latencies"]
        print(f"| {name} | {rate:g} req/s | {webhook._percentile(lat, .5):.2f} ms | "
              f"{webhook._percentile(lat, .99):.2f} ms | {result['cpu'] * 1000:.2f} ms | "
              f"p99 < {goal:g} ms: {'met' if ok else 'NOT met'} |")
    return 0 if all(r[4] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
