"""Webhook latency under a bounded loopback load (RELIABILITY 20; issue 3, item 7).

    .venv/bin/python -m bench.webhook                       # 200 req/s for 20 s, gunicorn
    .venv/bin/python -m bench.webhook --rate 100 --seconds 10 --workers 2
    .venv/bin/python -m bench.webhook --auth signature      # Standard Webhooks deliveries
    .venv/bin/python -m bench.webhook --profile 300         # also: where a request's time goes
    .venv/bin/python -m bench.webhook --no-durable-commit   # answer before the WAL is on disk
    .venv/bin/python -m bench.webhook --multi-agent         # two lifelines, a CPL guard decided
                                                            # at every fourth event

What it does, in order:

1. (Re)creates the Postgres database ``studio_bench_live`` on 127.0.0.1:5432 and migrates it;
2. creates a workspace with the 20 rules of ``bench.workloads.RULES_20``, all approved, a token
   and a webhook secret;
3. starts the application under gunicorn on a free loopback port (production settings: DEBUG
   off, no HTTPS redirect because there is no TLS on loopback);
4. warms every worker up (rule sets compiled) with requests that are not measured;
5. runs the load from a second process: single-event POSTs on a fixed schedule (open loop: the
   i-th request is due at ``start + i / rate`` whatever happened before), spread round-robin over
   ``--sessions`` live sessions, each request on a new connection.  Latency is measured from the
   moment a request was due to the moment its answer was read, so a server that falls behind
   shows it (no coordinated omission);
6. prints p50/p90/p99/max, the achieved rate, and the status codes.

Needs gunicorn (``pip install -e ".[bench]"``) and a local Postgres.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from bench.workloads import RULES_20

REPO = Path(__file__).resolve().parent.parent
DB_NAME = "studio_bench_live"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL_P99_MS = 20.0

# Production settings for a loopback run: everything of studio.settings with DEBUG off, except
# the HTTPS redirect (there is no TLS on loopback).
SETTINGS_MODULE = '''
from studio.settings import *  # noqa: F401,F403
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
LIVE_RATE_LIMIT_PER_MINUTE = 0  # the benchmark measures monitoring, not the limiter
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]  # noqa: F405 - for --profile's test client
'''

SETUP = '''
import json
from bench.workloads import RULES_20
from studio.rules.models import Rule, RuleVersion, VersionStatus
from studio.workspaces import services
owner = services.create_user("bench-owner", "bench-password-123")
ws = services.create_workspace("Bench", owner=owner, slug="bench")
for name, formula in RULES_20:
    rule = Rule.objects.create(workspace=ws, name=name)
    RuleVersion.objects.create(rule=rule, number=1, formula=formula, author=owner,
                               status=VersionStatus.APPROVED)
_, token = services.create_token(ws, "bench", ["auditor"], by=owner)
secret = services.create_webhook_secret(ws, "bench sender", by=owner).secret
# For --multi-agent: the Checker's choice events name it (studio.live.causal_guards).
from studio.rules.models import CausalGuard
CausalGuard.objects.create(workspace=ws, name="tests_passed", owner="Checker",
                           cpl='@Tester (status == "passed") & Tester.cand == cand')
print(json.dumps({"token": token, "secret": secret}))
'''


def _recreate_database(name: str = DB_NAME) -> None:
    with psycopg.connect(host="127.0.0.1", port=5432, dbname="postgres", user="postgres",
                         autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_env(settings_dir: str) -> dict:
    env = dict(os.environ)
    env.update(DATABASE_URL=DB_URL, DEBUG="false", SECRET_KEY="bench-only-" + "k" * 50,
               ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SETTINGS_MODULE="bench_live_settings",
               PYTHONPATH=os.pathsep.join([settings_dir, str(REPO), env.get("PYTHONPATH", "")]))
    env.pop("CELERY_BROKER_URL", None)
    return env


def _prepare(env: dict, database: str = DB_NAME) -> dict:
    _recreate_database(database)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env,
                   check=True)
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", SETUP], cwd=REPO, env=env,
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _start_server(env: dict, port: int, workers: int, threads: int) -> subprocess.Popen:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    if not gunicorn.exists():
        sys.exit("gunicorn is not installed: .venv/bin/pip install -e '.[bench]'")
    command = [str(gunicorn), "studio.wsgi:application", "-b", f"127.0.0.1:{port}",
               "-w", str(workers), "--log-level", "warning"]
    if threads > 1:
        command += ["-k", "gthread", "--threads", str(threads)]
    server = subprocess.Popen(command, cwd=REPO, env=env)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    sys.exit("the server did not start")


# ---------------------------------------------------------------------------------------------
# The load generator (runs in its own process: `python -m bench.webhook --load SPEC`)

def _requests(spec: dict) -> list[tuple[str, bytes, dict]]:
    """Every request, built before the clock starts: (path, body, headers)."""
    sys.path.insert(0, str(REPO))
    from bench.workloads import agent_events

    total = int(spec["rate"] * spec["seconds"]) + spec["warmup"]
    events = agent_events(total, seed=11)
    out = []
    run = spec["run"]
    for i, event in enumerate(events):
        session = f"{run}-s{i % spec['sessions']}"
        event["event_id"] = f"{run}-e{i}"
        if i % 4 == 0:
            event["output"] = {"tool": "pay", "args": {"amount": event["data"]["amount"]}}
        if spec.get("multi_agent"):
            _as_multi_agent(event, i // spec["sessions"])
        body = json.dumps({"events": [event]}).encode()
        headers = {"Content-Type": "application/json", "Connection": "close"}
        if spec["auth"] == "signature":
            msg_id, stamp = f"msg_{run}_{i}", int(time.time())
            headers.update({"webhook-id": msg_id, "webhook-timestamp": str(stamp),
                            "webhook-signature": sign(spec["secret"], msg_id, stamp, body)})
        else:
            headers["Authorization"] = f"Bearer {spec['token']}"
        out.append((f"/api/w/bench/live/sessions/{session}/events", body, headers))
    return out


def _as_multi_agent(event: dict, position: int) -> None:
    """The session's ``position``-th event in a cycle of four on two lifelines: the Tester
    records a result, sends it to the Checker, the Checker receives it and decides (a choice
    event naming the guard ``tests_passed``, false for about 1 in 8 results)."""
    cycle, phase = divmod(position, 4)
    message = {"id": f"report-{cycle}", "peer": "Checker" if phase == 1 else "Tester"}
    if phase == 0:
        event.update(lifeline="Tester")
        event["data"].update(cand=f"c{cycle}",
                             status="failed" if event["data"]["risk"] < .125 else "passed")
    elif phase == 1:
        event.update(lifeline="Tester", message={**message, "kind": "send"})
    elif phase == 2:
        event.update(lifeline="Checker", message={**message, "kind": "receive"})
        event["data"]["cand"] = f"c{cycle}"
    else:
        event.update(lifeline="Checker")
        event["data"]["choice"] = "tests_passed"


def sign(secret: str, msg_id: str, stamp: int, body: bytes) -> str:
    """A Standard Webhooks signature, computed here as any sender would (no Django)."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def _send(port: int, path: str, body: bytes | None, headers: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST" if body is not None else "GET", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _answer_problem(answer_body: bytes, rules: int, body: bytes = b"") -> str | None:
    """Why a 200 answer to a single-event POST is not what the studio promises (the event
    stored and every rule's verdict and residual listed), or None.  Checked after the clock
    stopped for that request."""
    try:
        answer = json.loads(answer_body)
    except ValueError:
        return "not JSON"
    if answer.get("stored") != 1 or [e.get("status") for e in answer.get("events", [])] != [
            "stored"]:
        return f"event not stored: {answer.get('events')!r}"[:200]
    if b'"choice"' in body:  # --multi-agent: the guard is answered
        guards = answer["events"][0].get("guards") or [{}]
        if guards[0].get("guard") != "tests_passed" or "value" not in guards[0]:
            return f"choice without its guard's value: {guards!r}"[:200]
    listed = answer.get("rules", [])
    if len(listed) != rules or not all(r.get("verdict") and r.get("residual") for r in listed):
        return f"{len(listed)} rules answered, not {rules} with verdicts and residuals"
    return None


def run_load(spec: dict, requests: list | None = None, check=None) -> dict:
    """Send ``requests`` (default: the webhook's) on the open-loop schedule of ``spec``;
    ``check(answer, rules, body)`` says why a 200 answer is wrong (default: the webhook's)."""
    port = spec["port"]
    requests = _requests(spec) if requests is None else requests
    check = check or _answer_problem
    if spec.get("baseline"):  # the same schedule against a view that does nothing
        requests = [("/healthz", None, {"Connection": "close"}) for _ in requests]
    warm, measured = requests[:spec["warmup"]], requests[spec["warmup"]:]
    for path, body, headers in warm:  # compile the rule set in every worker; not measured
        _send(port, path, body, headers)
    time.sleep(spec.get("settle", 0))  # work the warm-up started in the background, finished
    due: queue.Queue = queue.Queue()
    latencies: list[float] = []
    service: list[float] = []
    statuses: dict[int, int] = {}
    problems: list[str] = []
    lock = threading.Lock()

    def worker():
        while True:
            item = due.get()
            if item is None:
                return
            at, (path, body, headers) = item
            sent = time.perf_counter()
            try:
                status, answer = _send(port, path, body, headers)
            except OSError:
                status, answer = 0, b""
            done = time.perf_counter()
            problem = (check(answer, spec["rules"], body)
                       if status == 200 and body is not None else None)
            with lock:
                latencies.append(done - at)
                service.append(done - sent)
                statuses[status] = statuses.get(status, 0) + 1
                if problem:
                    problems.append(problem)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(spec["clients"])]
    for t in threads:
        t.start()
    interval = 1.0 / spec["rate"]
    start = time.perf_counter() + 0.05
    for i, request in enumerate(measured):
        at = start + i * interval
        delay = at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        due.put((at, request))
    for _ in threads:
        due.put(None)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return {"latencies": latencies, "service": service, "statuses": statuses,
            "elapsed": elapsed, "count": len(measured), "problems": problems[:5],
            "problem_count": len(problems)}


def _server_cpu(pid: int) -> float:
    """CPU seconds used so far by the gunicorn master and its workers (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return float("nan")
    for p in [str(pid), *children]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _load() -> str:
    """The 1-minute load average: other work on the machine moves every figure."""
    return f"{os.getloadavg()[0]:.2f}"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


# ---------------------------------------------------------------------------------------------
# Where the time goes (in-process, the same request path, cProfile)

PROFILE = '''
import cProfile, json, pstats, sys, io, time
from django.test import Client
from bench.workloads import agent_events
token = sys.argv[1]; n = int(sys.argv[2])
client = Client()
events = agent_events(n + 50, seed=12)
def post(i):
    e = events[i]; e["event_id"] = f"prof-{i}"
    r = client.post(f"/api/w/bench/live/sessions/prof-s{i % 20}/events",
                    data=json.dumps({"events": [e]}), content_type="application/json",
                    headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.content
for i in range(50): post(i)
profiler = cProfile.Profile()
t = time.perf_counter()
profiler.enable()
for i in range(50, 50 + n): post(i)
profiler.disable()
print(f"in-process: {(time.perf_counter() - t) / n * 1000:.2f} ms per request (profiled)")
out = io.StringIO()
stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
stats.print_stats("studio/(live|api|monitor|labeling)|psycopg/cursor.py.*execute|bulk_create", 25)
print(out.getvalue())
'''


def report(result: dict, cpu: float, goal_ms: float, rate: float, load_before: str,
           problems: list[str] | None = None) -> bool:
    """Print the run's figures; whether the goal was met (p99 below it, every answer 200 and
    right)."""
    problems = list(result["problems"]) if problems is None else problems
    lat, svc = result["latencies"], result["service"]
    achieved = result["count"] / result["elapsed"]
    p50, p90, p99 = (_percentile(lat, q) for q in (0.50, 0.90, 0.99))
    print(f"requests {result['count']}  achieved {achieved:.1f} req/s  statuses "
          f"{dict(sorted(result['statuses'].items()))}")
    print(f"latency from due time: p50 {p50:.2f} ms  p90 {p90:.2f} ms  p99 {p99:.2f} ms  "
          f"max {max(lat) * 1000:.2f} ms  mean {statistics.fmean(lat) * 1000:.2f} ms")
    print(f"latency from send:     p50 {_percentile(svc, .5):.2f} ms  "
          f"p99 {_percentile(svc, .99):.2f} ms")
    print(f"server CPU per request (gunicorn processes, not Postgres): {cpu * 1000:.2f} ms")
    for problem in problems:
        print(f"WRONG ANSWER: {problem}")
    if result["problem_count"] > len(result["problems"]):
        print(f"... {result['problem_count']} wrong answers in all")
    ok = p99 < goal_ms and set(result["statuses"]) == {"200"} and not problems
    print(f"goal p99 < {goal_ms:g} ms at {rate:g} req/s: {'met' if ok else 'NOT met'}"
          f"  (load average before/after: {load_before} / {_load()})")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sessions", type=int, default=50, help="live sessions, round-robin")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (gthread)")
    parser.add_argument("--clients", type=int, default=32, help="load generator threads")
    parser.add_argument("--auth", choices=("token", "signature"), default="token")
    parser.add_argument("--baseline", action="store_true",
                        help="the same load against GET /healthz (what the machine allows)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile N requests in-process and print the top entries")
    parser.add_argument("--no-durable-commit", action="store_true",
                        help="LIVE_DURABLE_COMMIT=false: answer before the disk flush")
    parser.add_argument("--multi-agent", action="store_true",
                        help="events on two lifelines with messages; every fourth a choice "
                             "whose CPL guard is decided")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # internal: the load process
    args = parser.parse_args()
    if args.load:
        result = run_load(json.loads(args.load))
        json.dump(result, sys.stdout)
        return 0

    load_before = _load()
    settings_dir = tempfile.mkdtemp(prefix="bench-live-")
    Path(settings_dir, "bench_live_settings.py").write_text(SETTINGS_MODULE)
    env = _server_env(settings_dir)
    env["LIVE_DURABLE_COMMIT"] = "false" if args.no_durable_commit else "true"
    print(f"preparing {DB_NAME} (20 approved rules) ...", flush=True)
    credentials = _prepare(env)
    port = _free_port()
    server = _start_server(env, port, args.workers, args.threads)
    try:
        spec = {"port": port, "rate": args.rate, "seconds": args.seconds,
                "sessions": args.sessions, "clients": args.clients, "auth": args.auth,
                "warmup": 20 * args.workers * max(1, args.threads), "run": "r1",
                "baseline": args.baseline, "rules": len(RULES_20),
                "multi_agent": args.multi_agent, **credentials}
        what = "GET /healthz (baseline)" if args.baseline else (
            "single-event POSTs" + (", multi-agent with a guard" if args.multi_agent else ""))
        print(f"load: {args.rate:g} req/s for {args.seconds:g} s, {what} over "
              f"{args.sessions} sessions, auth={args.auth}; gunicorn {args.workers} worker(s)"
              f" x {args.threads} thread(s) on 127.0.0.1:{port}; durable commit "
              f"{'off' if args.no_durable_commit else 'on'}", flush=True)
        cpu_before = _server_cpu(server.pid)
        done = subprocess.run([sys.executable, "-m", "bench.webhook", "--load", json.dumps(spec)],
                              cwd=REPO, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return 2
        result = json.loads(done.stdout)
        # Includes the unmeasured warm-up requests; Postgres's own CPU is not counted.
        cpu = (_server_cpu(server.pid) - cpu_before) / (result["count"] + spec["warmup"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    problems = list(result["problems"])
    if not args.baseline:  # every answered POST stored exactly one event
        with psycopg.connect(DB_URL) as conn:
            stored = conn.execute("SELECT count(*) FROM traces_event").fetchone()[0]
        answered = result["statuses"].get("200", 0) + spec["warmup"]
        if stored != answered:
            problems.append(f"{stored} events stored for {answered} answered POSTs")
    ok = report(result, cpu, GOAL_P99_MS, args.rate, load_before, problems)
    if args.profile:
        profile_env = {**env, "DJANGO_SETTINGS_MODULE": "bench_live_settings"}
        token, count = credentials["token"], str(args.profile)
        code = f"import sys; sys.argv = ['x', {token!r}, {count!r}]; exec({PROFILE!r})"
        subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=REPO,
                       env=profile_env, check=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
