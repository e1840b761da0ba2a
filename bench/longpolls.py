"""The site while guard polls wait for a person (issue 24, item 3).

    .venv/bin/python -m bench.longpolls                      # uvicorn, 200 polls from 10 tokens
    .venv/bin/python -m bench.longpolls --server gunicorn --polls 12   # the old way, for "before"

Goal: ``/healthz`` p99 under 50 ms and a guard decision p99 under 20 ms while 200 polls from 10
tokens wait, measured side by side with the same load and no polls waiting.

What it does, in order:

1. (Re)creates the Postgres database ``studio_bench_longpolls``, migrates it, and creates a
   workspace with four rules, a live rule set whose policy asks a person before a ``delete``
   (two hours to answer), and ``--tokens`` tokens;
2. starts the server with the production settings of docs/deployment.md ("Web server"): uvicorn,
   ``--workers`` processes, DEBUG off, the database pool (``DATABASE_POOL=true``; without
   psycopg_pool installed, ``DATABASE_CONN_MAX_AGE=0``), the cache on Redis
   (``--cache``, database 11 by default) so the caps count across processes.  The per-token cap
   stays at its default (20: 200 polls from 10 tokens fit); the per-workspace cap is raised to
   the number of polls (its default, 100, would refuse half of them);
3. asks ``--polls`` guard questions that wait for a person (``delete``), through the API;
4. phase "no polls": a fixed schedule (open loop; latency from the due time, so a server that
   falls behind shows it) of ``GET /healthz`` and guard decisions that answer at once (a
   ``pay``: allowed), ``--rate`` of each per second for ``--seconds``; every guard answer is
   checked (allowed, the rules' risks there);
5. phase "polls waiting": the ``--polls`` polls start (``?wait=30``, each token its share; a
   poll that returns asks again, so they keep waiting), and once every one is waiting the same
   schedule runs again;
6. prints both phases side by side: p50/p99/max per kind, status codes, and how many polls were
   waiting throughout.

Needs a local Postgres, Redis (for ``--workers`` > 1) and uvicorn (or gunicorn for
``--server gunicorn``: ``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import webhook

REPO = webhook.REPO
DB_NAME = "studio_bench_longpolls"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL_HEALTHZ_P99_MS = 50.0
GOAL_GUARD_P99_MS = 20.0
WAIT_SECONDS = 30
REQUEST_TIMEOUT = 10  # a measured request not answered by then counts as status 0
SETTLE_SECONDS = 5.0

SETTINGS_MODULE = '''
from studio.settings import *  # noqa: F401,F403
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
LIVE_RATE_LIMIT_PER_MINUTE = 0  # the benchmark measures waiting, not the limiter
'''

SETUP = '''
import json, os
from studio.guard import services as guard
from studio.rules.models import Rule, RuleSet, RuleVersion, VersionStatus
from studio.workspaces import services
owner = services.create_user("bench-owner", "bench-password-123")
ws = services.create_workspace("Bench", owner=owner, slug="bench")
rules = [("pay_before_ship", "!tool_call:ship W tool_call:pay"),
         ("big_needs_approval", "G(output.args.amount > 10000 -> F approved)"),
         ("no_delete", "G !tool_call:delete"),
         ("ends", 'F "stop_reason:end_turn"')]
live = RuleSet.objects.create(workspace=ws, name="shop", live=True)
for name, formula in rules:
    rule = Rule.objects.create(workspace=ws, name=name)
    RuleVersion.objects.create(rule=rule, number=1, formula=formula, author=owner,
                               status=VersionStatus.APPROVED)
live.rules.set(ws.rules.all())
guard.set_policy(live, {"interventions": {"no_delete": "ask_human"},
                        "human_timeout_seconds": 7200}, owner)
tokens = [services.create_token(ws, f"agent-{i}", ["auditor"], by=owner)[1]
          for i in range(int(os.environ["BENCH_TOKENS"]))]
print(json.dumps({"tokens": tokens}))
'''

PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}
DELETE = {"output": {"tool": "delete", "args": {}}}


def _request(port: int, method: str, path: str, body: dict | None = None,
             token: str | None = None, timeout: float = 60) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json", "Connection": "close"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _prepare(env: dict, tokens: int) -> list[str]:
    webhook._recreate_database(DB_NAME)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env,
                   check=True)
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", SETUP], cwd=REPO,
                          env={**env, "BENCH_TOKENS": str(tokens)}, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["tokens"]


def _start_server(args, env: dict, port: int) -> subprocess.Popen:
    if args.server == "uvicorn":
        command = [sys.executable, "-m", "uvicorn", "studio.asgi:application",
                   "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.workers),
                   "--lifespan", "off", "--no-access-log", "--log-level", "warning",
                   "--timeout-keep-alive", "5", "--timeout-graceful-shutdown", "35"]
    else:
        gunicorn = Path(sys.executable).with_name("gunicorn")
        if not gunicorn.exists():
            sys.exit("gunicorn is not installed: .venv/bin/pip install -e '.[bench]'")
        command = [str(gunicorn), "studio.wsgi:application", "-b", f"127.0.0.1:{port}",
                   "-w", str(args.workers), "--log-level", "warning", "--timeout", "60"]
    server = subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if _request(port, "GET", "/healthz", timeout=1)[0] == 200:
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    sys.exit("the server did not start")


class Polls:
    """``count`` polls that keep waiting: each asks with ?wait=30 and asks again when it
    returns (or is refused, after a moment)."""

    def __init__(self, port: int, paths: list[str], tokens: list[str]):
        self.port, self.paths, self.tokens = port, paths, tokens
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.refused = 0
        self.errors = 0
        self.returned = 0

    def start(self) -> None:
        for i, path in enumerate(self.paths):
            threading.Thread(target=self._poll, args=(path, self.tokens[i % len(self.tokens)]),
                             daemon=True).start()

    def _poll(self, path: str, token: str) -> None:
        while not self.stop.is_set():
            with self.lock:
                self.in_flight += 1
            try:
                status, _ = _request(self.port, "GET", f"{path}?wait={WAIT_SECONDS}",
                                     token=token, timeout=WAIT_SECONDS + 30)
            except OSError:
                status = 0
            with self.lock:
                self.in_flight -= 1
                if status == 429:
                    self.refused += 1
                elif status != 200:
                    self.errors += 1
                else:
                    self.returned += 1
            if status != 200:
                time.sleep(0.5)


def _phase(port: int, token: str, rate: float, seconds: float, clients: int,
           polls: Polls | None) -> dict:
    """``rate`` healthz and ``rate`` guard decisions per second, interleaved, open loop."""
    kinds = ("healthz", "guard")
    latencies: dict[str, list[float]] = {k: [] for k in kinds}
    statuses: dict[str, dict[int, int]] = {k: {} for k in kinds}
    problems: list[str] = []
    lock = threading.Lock()
    due: queue.Queue = queue.Queue()
    total = int(rate * seconds) * 2
    waiting_seen: list[int] = []

    def worker():
        while True:
            item = due.get()
            if item is None:
                return
            at, kind, i = item
            try:
                if kind == "healthz":
                    status, body = _request(port, "GET", "/healthz", timeout=REQUEST_TIMEOUT)
                else:
                    status, body = _request(
                        port, "POST", f"/api/w/bench/live/sessions/busy-{i % 20}/guard",
                        {"event": PAY}, token, timeout=REQUEST_TIMEOUT)
            except OSError:
                status, body = 0, b""
            done = time.perf_counter()
            problem = None
            if kind == "guard" and status == 200:
                answer = json.loads(body)
                if answer.get("decision") != "allow" or len(answer.get("risk", {})) != 4:
                    problem = f"unexpected guard answer {body[:200]!r}"
            with lock:
                latencies[kind].append(done - at)
                statuses[kind][status] = statuses[kind].get(status, 0) + 1
                if problem:
                    problems.append(problem)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    interval = 1.0 / (rate * 2)
    start = time.perf_counter() + 0.05
    for i in range(total):
        at = start + i * interval
        delay = at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        if polls is not None and i % 20 == 0:
            waiting_seen.append(polls.in_flight)
        due.put((at, kinds[i % 2], i))
    for _ in threads:
        due.put(None)
    for t in threads:
        t.join()
    return {"latencies": latencies, "statuses": statuses, "problems": problems,
            "waiting_min": min(waiting_seen) if waiting_seen else 0}


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["uvicorn", "gunicorn"], default="uvicorn")
    parser.add_argument("--workers", type=int, default=2, help="server processes")
    parser.add_argument("--polls", type=int, default=200, help="waiting polls")
    parser.add_argument("--tokens", type=int, default=10, help="tokens the polls come from")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="healthz requests per second, and as many guard decisions")
    parser.add_argument("--seconds", type=float, default=15.0, help="per phase")
    parser.add_argument("--clients", type=int, default=32, help="load generator threads")
    parser.add_argument("--cache", default="redis://127.0.0.1:6379/11",
                        help="CACHE_URL of the server ('' for local memory)")
    args = parser.parse_args()

    settings_dir = tempfile.mkdtemp(prefix="bench-longpolls-")
    Path(settings_dir, "bench_longpolls_settings.py").write_text(SETTINGS_MODULE)
    env = webhook._server_env(settings_dir)
    env.update(DATABASE_URL=DB_URL, DJANGO_SETTINGS_MODULE="bench_longpolls_settings",
               GUARD_WAITS_PER_WORKSPACE=str(max(args.polls, 100)))
    try:
        import psycopg_pool  # noqa: F401
        pool = True
        env["DATABASE_POOL"] = "true"
    except ImportError:
        pool = False
        env["DATABASE_CONN_MAX_AGE"] = "0"
    if args.cache:
        env["CACHE_URL"] = args.cache
    else:
        env.pop("CACHE_URL", None)
    tokens = _prepare(env, args.tokens)
    port = webhook._free_port()
    server = _start_server(args, env, port)
    try:
        # Warm every process up (not measured): rule sets compiled, policy read.
        for i in range(20 * args.workers):
            _request(port, "POST", f"/api/w/bench/live/sessions/busy-{i % 20}/guard",
                     {"event": PAY}, tokens[0])
        paths = []
        for i in range(args.polls):
            status, body = _request(port, "POST", f"/api/w/bench/live/sessions/wait-{i}/guard",
                                    {"event": DELETE, "decision_id": f"q{i}"},
                                    tokens[i % len(tokens)])
            answer = json.loads(body)
            if status != 200 or answer.get("status") != "pending":
                sys.exit(f"expected a question for a person, got {status} {body[:300]!r}")
            paths.append(answer["poll"])

        quiet = _phase(port, tokens[0], args.rate, args.seconds, args.clients, None)
        polls = Polls(port, paths, tokens)
        polls.start()
        deadline = time.time() + 60
        while polls.in_flight < args.polls and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(SETTLE_SECONDS)  # every poll past its checks (auth, read, count) and waiting
        returned_before = polls.returned
        busy = _phase(port, tokens[0], args.rate, args.seconds, args.clients, polls)
        returned_during = polls.returned - returned_before
        polls.stop.set()
    finally:
        os.killpg(server.pid, 15)
        server.wait(40)

    print(f"\n{args.server}, {args.workers} process(es), DEBUG off, "
          f"{'DATABASE_POOL=true' if pool else 'DATABASE_CONN_MAX_AGE=0'}, "
          f"cache {args.cache or 'local memory'}; {args.rate:g}/s healthz + {args.rate:g}/s "
          f"guard decisions for {args.seconds:g} s per phase, open loop, {args.clients} clients")
    print(f"{'phase':<22}{'kind':<9}{'n':>6}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  statuses")
    for name, phase in (("no polls", quiet),
                        (f"{args.polls} polls waiting", busy)):
        for kind in ("healthz", "guard"):
            values = phase["latencies"][kind]
            print(f"{name:<22}{kind:<9}{len(values):>6}{_percentile(values, .5):>9.1f}"
                  f"{_percentile(values, .99):>9.1f}{max(values) * 1000:>9.1f}  "
                  f"{phase['statuses'][kind]}")
    print(f"polls waiting during the second phase: at least {busy['waiting_min']} of "
          f"{args.polls}; refused {polls.refused}, errors {polls.errors}; polls that returned "
          f"during it (a wait is {WAIT_SECONDS} s): {returned_during}")
    problems = quiet["problems"] + busy["problems"]
    if problems:
        print(f"{len(problems)} wrong answers, e.g. {problems[0]}")
    healthz = _percentile(busy["latencies"]["healthz"], .99)
    guard = _percentile(busy["latencies"]["guard"], .99)
    met = healthz < GOAL_HEALTHZ_P99_MS and guard < GOAL_GUARD_P99_MS and not problems
    print(f"goal (healthz p99 < {GOAL_HEALTHZ_P99_MS:g} ms, guard p99 < {GOAL_GUARD_P99_MS:g} "
          f"ms with the polls waiting): {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
