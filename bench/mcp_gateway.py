"""The time the MCP gateway adds to a tool call (issue 28, item 1), side by side with calling the
upstream directly in the same run.

    .venv/bin/python -m bench.mcp_gateway                    # 1,000 calls each way, 1 session
    .venv/bin/python -m bench.mcp_gateway --calls 200 --sessions 10

Goal: the gateway's p99 less than 10 ms above the direct call's p99, with 20 live rules.

What it does, in order:

1. (Re)creates the Postgres database ``studio_bench_mcp_gateway``, migrates it, creates a
   workspace with the 20 rules of ``TOOL_RULES`` (over tool calls and their arguments), approved
   and in a live rule set, 40 earlier sessions of 50 events, and a token, and analyses the
   tables (as autovacuum does in a deployment that has run a while);
2. starts the studio as ``bench.webhook`` does (gunicorn, production settings, ``--workers``
   sync workers), or with ``--server uvicorn`` as docker-compose.yml does (uvicorn, ASGI, with
   DATABASE_POOL=true);
3. starts two MCP connections with the official SDK's client, each over stdio: one to the test
   upstream (tests/integrations/mcp/upstream_server.py) directly, one to ``manage.py mcp_gateway``,
   which starts the same upstream behind it;
4. makes ``--warmup`` calls each way (not measured), then ``--calls`` calls each way,
   alternating which goes first, every one a ``get_balance`` the rules allow (each gateway call
   asks the guard, goes upstream, and has its call and result stored as live events: carried by
   the session's next guard question, ``taken``, and stored by the studio after it answers).
   Calls name their session in ``_meta``, round robin over ``--sessions`` sessions: with 1, every
   call is asked right after the previous one, the worst case for the 2 cores (the previous
   call's events are stored while the gateway calls the upstream and answers its client);
5. checks every answer (the upstream's balance, no error), and that the studio stored two
   events per gateway call.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psycopg

from bench import webhook

REPO = webhook.REPO
DB_NAME = "studio_bench_mcp_gateway"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL_ADDED_P99_MS = 10.0
UPSTREAM = REPO / "tests" / "integrations" / "mcp" / "upstream_server.py"

# Twenty rules over tool calls, their arguments and results; the benchmark's get_balance calls
# comply with every one, so each call is allowed after all twenty are checked.
TOOL_RULES = [
    ("no_account_deletion", "G !tool_call:delete_account"),
    ("pay_after_balance", "!tool_call:send_money W tool_call:get_balance"),
    ("refund_after_approval", "G(tool_call:refund -> O tool_call:approve)"),
    ("big_payment_approved", "G(output.args.amount > 10000 -> F tool_call:approve)"),
    ("no_table_drop", "G !tool_call:drop_table"),
    ("transfer_verified", "G(tool_call:transfer -> O tool_call:verify)"),
    ("login_logout", "G(tool_call:login -> F tool_call:logout)"),
    ("secret_escalated", 'G(output.args.account == "secret" -> F tool_call:escalate)'),
    ("ship_after_pay", "!tool_call:ship W tool_call:pay"),
    ("escalation_acked", "G(tool_call:escalate -> F[0,3] tool_call:ack)"),
    ("grant_requested", "G(tool_call:grant -> O tool_call:request)"),
    ("pii_consent", "G(tool_call:pii_lookup -> O tool_call:consent)"),
    ("backup_before_delete", "G(tool_call:delete_backup -> O tool_call:backup)"),
    ("error_retried", "G(tool_call:error -> X tool_call:retry)"),
    ("refund_notified", "G(tool_call:refund -> F tool_call:notify)"),
    ("no_wipe", "G !tool_call:wipe"),
    ("no_negative_amount", "G(output.args.amount >= 0 | !tool_call:send_money)"),
    ("close_after_open", "G(tool_call:close_account -> O tool_call:open_account)"),
    ("export_reviewed", "G(tool_call:export -> O tool_call:review)"),
    ("amount_rises_approved", "G(output.args.amount > prev(output.args.amount) -> "
                              "F tool_call:approve)"),
]

HISTORY_SESSIONS, HISTORY_EVENTS = 40, 50   # the workspace's earlier sessions, events each

SETUP = f'''
HISTORY_SESSIONS, HISTORY_EVENTS = {HISTORY_SESSIONS}, {HISTORY_EVENTS}
''' + '''
import json, sys
from studio.rules.models import Rule, RuleSet, RuleVersion, VersionStatus
from studio.workspaces import services
rules = json.loads(sys.argv[1])
owner = services.create_user("bench-owner", "bench-password-123")
ws = services.create_workspace("Bench", owner=owner, slug="bench")
live = RuleSet.objects.create(workspace=ws, name="tools", live=True)
for name, formula in rules:
    rule = Rule.objects.create(workspace=ws, name=name, description=f"The rule {name}.")
    RuleVersion.objects.create(rule=rule, number=1, formula=formula, author=owner,
                               status=VersionStatus.APPROVED)
    live.rules.add(rule)
# A workspace in use: earlier sessions' events, and the planner's statistics of them, as
# autovacuum keeps them in a running deployment (a table never analysed is read as empty, and
# the event-id lookups then scan every event of the workspace).
from django.db import connection
from studio.live.ingest import ingest
for k in range(HISTORY_SESSIONS):
    events = []
    for i in range(HISTORY_EVENTS // 2):
        call = {"event_id": f"h{k}-{i}", "output": {"tool": "get_balance",
                                                    "args": {"account": f"acct-{i}"}}}
        events += [call, {"event_id": f"h{k}-{i}-result", "input": {"balance": 1},
                          "data": {"tool_result": "get_balance"}}]
    ingest(ws, f"earlier-{k}", events, "live", None)
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
_, token = services.create_token(ws, "gateway", ["auditor"], by=owner)
print(json.dumps({"token": token}))
'''

MEASURE = '''
import anyio, json, sys, time
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
spec = json.loads(sys.argv[1])

def params(argv, env=None):
    return StdioServerParameters(command=argv[0], args=argv[1:], cwd=spec["repo"], env=env)

log = open(spec["gateway_log"], "w")

async def main():
    direct_times, gateway_times = [], []
    upstream = params(spec["upstream"])
    gateway = params(spec["gateway"], spec["gateway_env"])
    async with Client(upstream) as direct, \
            Client(stdio_client(gateway, errlog=log)) as guarded:
        async def one(client, i, meta=None):
            args = {"account": f"acct-{i % 97}"}
            started = time.perf_counter()
            result = await client.call_tool("get_balance", args, meta=meta)
            took = (time.perf_counter() - started) * 1000
            assert not result.is_error, result
            assert result.structured_content["balance"] == 100 * len(args["account"]), result
            return took
        total = spec["warmup"] + spec["calls"]
        for i in range(total):
            meta = {"studio/session": f"bench-{i % spec['sessions']}"}
            if i % 2:
                d = await one(direct, i)
                g = await one(guarded, i, meta)
            else:
                g = await one(guarded, i, meta)
                d = await one(direct, i)
            if i >= spec["warmup"]:
                direct_times.append(d)
                gateway_times.append(g)
    print(json.dumps({"direct": direct_times, "gateway": gateway_times}))

anyio.run(main)
'''


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def gateway_phases(path: str, skip: int) -> dict[str, list[float]]:
    """The gateway's own timing lines (``-v 2``): per call, the wait for the session's earlier
    events, the guard's round trip, the upstream's."""
    phases: dict[str, list[float]] = {}
    lines = [line for line in Path(path).read_text().splitlines() if " timing " in line]
    for line in lines[skip:]:
        for name, value in re.findall(r"(\w+)_ms=([\d.]+)", line):
            phases.setdefault(name, []).append(float(value))
    return phases


def _start_uvicorn(env: dict, port: int, workers: int) -> subprocess.Popen:
    """The studio as docker-compose.yml serves it (uvicorn, ASGI), answering /healthz."""
    command = [str(Path(sys.executable).with_name("uvicorn")), "studio.asgi:application",
               "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
               "--lifespan", "off", "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=REPO, env=env)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    sys.exit("uvicorn did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="measured calls each way")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=1,
                        help="sessions the gateway calls go round (1: back to back)")
    parser.add_argument("--workers", type=int, default=2, help="the server's worker processes")
    parser.add_argument("--server", choices=("gunicorn", "uvicorn"), default="gunicorn",
                        help="gunicorn's sync workers (WSGI), or uvicorn (ASGI) as "
                             "docker-compose.yml runs the studio, with DATABASE_POOL=true")
    args = parser.parse_args()

    load_before = webhook._load()
    settings_dir = tempfile.mkdtemp(prefix="bench-mcp-")
    Path(settings_dir, "bench_live_settings.py").write_text(webhook.SETTINGS_MODULE)
    env = webhook._server_env(settings_dir)
    env["DATABASE_URL"] = DB_URL
    print(f"preparing {DB_NAME} ({len(TOOL_RULES)} approved live rules) ...", flush=True)
    webhook._recreate_database(DB_NAME)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env,
                   check=True)
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                           f"import sys; sys.argv = ['x', {json.dumps(json.dumps(TOOL_RULES))}];"
                           f" exec({SETUP!r})"],
                          cwd=REPO, env=env, check=True, capture_output=True, text=True)
    token = json.loads(done.stdout.strip().splitlines()[-1])["token"]
    port = webhook._free_port()
    if args.server == "uvicorn":
        server = _start_uvicorn({**env, "DATABASE_POOL": "true"}, port, args.workers)
    else:
        server = webhook._start_server(env, port, args.workers, 1)
    upstream = [sys.executable, str(UPSTREAM)]
    spec = {
        "repo": str(REPO), "calls": args.calls, "warmup": args.warmup,
        "sessions": args.sessions, "upstream": upstream,
        "gateway": [sys.executable, "manage.py", "mcp_gateway", "-v", "2", "--workspace", "bench",
                    "--studio-url", f"http://127.0.0.1:{port}",
                    "--upstream", "bank=" + " ".join(upstream)],
        "gateway_env": {**env, "STUDIO_TOKEN": token},
        "gateway_log": str(Path(settings_dir, "gateway.log")),
    }
    try:
        print(f"measuring: {args.calls} calls each way after {args.warmup} warm-up calls, "
              f"{args.sessions} session(s); studio on {args.server}, {args.workers} worker(s)",
              flush=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(spec)], cwd=REPO,
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        if done.returncode:
            print(done.stderr[-4000:], file=sys.stderr)
            return 2
        result = json.loads(done.stdout.strip().splitlines()[-1])
        elapsed = time.perf_counter() - started
        # The floor: what a plain client (studio.client, no MCP) pays per call on sessions of
        # the same shape - the guard's question carrying the previous call's events (as the
        # gateway asks), and the older way, the question then the call and its result posted
        # - so what the gateway adds beyond them is its own.
        from studio.client import StudioClient

        client = StudioClient(f"http://127.0.0.1:{port}", "bench", token=token)
        guard_times, both_times, taken_times = [], [], []
        taken: dict[str, list[dict]] = {}
        for i in range(args.warmup + min(args.calls, 500)):
            # The gateway's way: the previous call's events ride on the question.
            call = {"output": {"tool": "get_balance", "args": {"account": f"acct-{i % 97}"}}}
            session = f"taken-{i % args.sessions}"
            started_one = time.perf_counter()
            answer = client.guard(session, call, taken=taken.get(session))
            if i >= args.warmup:
                taken_times.append((time.perf_counter() - started_one) * 1000)
            assert answer["decision"] == "allow", answer
            taken[session] = [{**call, "event_id": f"t{i}"}, {
                "event_id": f"t{i}-result", "input": {"balance": 1},
                "data": {"tool_result": "get_balance"}}]
        for i in range(args.warmup + min(args.calls, 500)):
            call = {"output": {"tool": "get_balance", "args": {"account": f"acct-{i % 97}"}}}
            session = f"plain-{i % args.sessions}"
            started_one = time.perf_counter()
            answer = client.guard(session, call)
            asked = time.perf_counter()
            client.send_events(session, [{**call, "event_id": f"p{i}"}, {
                "event_id": f"p{i}-result", "input": {"balance": 1},
                "data": {"tool_result": "get_balance"}}])
            if i >= args.warmup:
                guard_times.append((asked - started_one) * 1000)
                both_times.append((time.perf_counter() - started_one) * 1000)
            assert answer["decision"] == "allow", answer
    finally:
        server.terminate()
        server.wait(timeout=30)
    expected = 2 * (args.calls + args.warmup)   # the gateway's: a call and its result each
    deadline = time.monotonic() + 10   # the last call's events may still be on their way
    while True:
        with psycopg.connect(DB_URL) as conn:
            events = conn.execute(
                "SELECT count(*) FROM traces_event e JOIN traces_tracesession s "
                "ON e.session_id = s.id WHERE s.external_id LIKE 'bench-%%'").fetchone()[0]
        if events >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    direct, gateway = result["direct"], result["gateway"]
    rows = []
    for name, values in (("direct to the upstream", direct), ("through the gateway", gateway)):
        rows.append((name, statistics.median(values), percentile(values, 99), max(values)))
    added = [g - d for g, d in zip(gateway, direct, strict=True)]
    print(f"{'':26} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, p50, p99, top in rows:
        print(f"{name:26} {p50:8.2f} {p99:8.2f} {top:8.2f}")
    added_p50 = rows[1][1] - rows[0][1]
    added_p99 = rows[1][2] - rows[0][2]
    print(f"added by the gateway: p50 +{added_p50:.2f} ms, p99 +{added_p99:.2f} ms "
          f"(per call pair: median +{statistics.median(added):.2f} ms, "
          f"p99 +{percentile(added, 99):.2f} ms)")
    phases = gateway_phases(spec["gateway_log"], args.warmup)
    if phases:
        print("inside the gateway, per call (p50 / p99 ms): " + ", ".join(
            f"{name} {statistics.median(v):.2f} / {percentile(v, 99):.2f}"
            for name, v in phases.items()))
    print(f"a plain client, the same requests ({len(guard_times)} calls): guard p50 "
          f"{statistics.median(guard_times):.2f} ms, p99 {percentile(guard_times, 99):.2f} ms; "
          f"guard + events p50 {statistics.median(both_times):.2f} ms, p99 "
          f"{percentile(both_times, 99):.2f} ms; guard with the previous events taken p50 "
          f"{statistics.median(taken_times):.2f} ms, p99 {percentile(taken_times, 99):.2f} ms")
    print(f"events stored: {events} of {expected}; {elapsed:.0f} s; load before: {load_before}")
    met = added_p99 < GOAL_ADDED_P99_MS and events == expected
    print(f"goal p99 < +{GOAL_ADDED_P99_MS:g} ms: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
