"""``bench.faults_probe server-errors``: every API operation and page, asked by several callers
with valid and hostile inputs, against uvicorn with the production settings; counts 5xx answers
and cross-workspace leaks.  See bench/faults_probe.py for the command.

Two workspaces: ``acme`` (A) and ``beta`` (B).  Every piece of B's data (its name, rule names and
formulas, labelers, uploads' file names, sessions, events, token names) carries the marker
``bzzsecret``, which no request of the probe ever contains, so an answer to one of A's callers
that holds it has shown B's data.  B's ids, usernames and live session ids carry no marker: A's
callers name them in paths and bodies.

A leak is: the marker in an answer to A's caller (its token, an auditor-only token of A, its
signed-in person); a 2xx to A's caller on B's slug; a 2xx to B's token on A's slug; any change to
B's rows (counted before and after).  Requests go in three phases (reads, then writes, then
deletions, so A's objects exist while they are read), ``--clients`` at a time, each on a new
connection.
"""

from __future__ import annotations

import collections
import concurrent.futures
import copy
import http.client
import itertools
import json
import os
import random
import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from bench.probe_stack import (
    RedisServer, free_port, fresh_database, healthy, production_env, summary, uvicorn, wait,
)

MARKER = "bzzsecret"
NUL = "a\x00b"
FORMAT_CHARACTERS = "x\u202ey\u2062z\u00ad\U000e0041"
HUGE = 10**30
PATH_HOSTILE = {"nul": NUL, "format-chars": FORMAT_CHARACTERS, "huge": str(HUGE),
                "negative": "-1", "zero": "0", "text": "abc", "long": "x" * 5000,
                "crlf": "a\r\nb", "dots": ".."}
QUERY_HOSTILE = {"nul": NUL, "huge": str(HUGE), "negative": "-1", "text": "abc",
                 "format-chars": FORMAT_CHARACTERS}
REQUEST_TIMEOUT = 90


# ---------------------------------------------------------------------------------------------
# The two workspaces

def _make_workspace(slug: str, name: str, mark: str, people: tuple[str, str, str]) -> dict:
    """A workspace with rules (approved and draft), a live rule set asking a person before a
    delete, a labeler, tokens, a webhook secret, an upload parsed and audited twice; its ids by
    the names the routes give their parameters."""
    from django.core.files.base import ContentFile
    from django.utils import timezone

    from studio.audits import services as audits
    from studio.guard import services as guard
    from studio.rules.models import Labeler, Rule, RuleSet, RuleVersion, VersionStatus
    from studio.traces import intake
    from studio.traces.models import TraceSession
    from studio.workspaces import services as ws
    from studio.workspaces.models import Role

    owner_name, reviewer_name, victim_name = people
    owner = ws.create_user(owner_name)
    reviewer = ws.create_user(reviewer_name)
    victim = ws.create_user(victim_name)
    workspace = ws.create_workspace(name, owner=owner, slug=slug)
    ws.add_member(workspace, reviewer, Role.REVIEWER)
    ws.add_member(workspace, victim, Role.AUDITOR)
    formulas = [(f"{mark}no_delete", "G !tool_call:delete"),
                (f"{mark}pay_after_check", f"!tool_call:{mark}pay W tool_call:{mark}check"),
                (f"{mark}big_approved", "G(output.args.amount > 1000 -> F approved)"),
                (f"{mark}ends", 'F "stop_reason:end_turn"')]
    live = RuleSet.objects.create(workspace=workspace, name=f"{mark}shop", live=True)
    rules = []
    for rule_name, formula in formulas:
        rule = Rule.objects.create(workspace=workspace, name=rule_name, created_by=owner)
        RuleVersion.objects.create(rule=rule, number=1, formula=formula, author=owner,
                                   status=VersionStatus.APPROVED, reviewer=reviewer,
                                   reviewed_at=timezone.now())
        RuleVersion.objects.create(rule=rule, number=2, formula=f"{formula} & F {mark}done",
                                   author=owner)
        rules.append(rule)
    live.rules.set(rules)
    guard.set_policy(live, {"interventions": {f"{mark}no_delete": "ask_human"},
                            "human_timeout_seconds": 7200}, owner)
    labeler = Labeler.objects.create(workspace=workspace, atom=f"{mark}flagged", kind="regex",
                                     config={"path": "input", "pattern": f"{mark}|secret"})
    _, full = ws.create_token(workspace, f"{mark}agent", list(Role.values), owner)
    _, auditor = ws.create_token(workspace, f"{mark}reader", [Role.AUDITOR], owner)
    spare, _ = ws.create_token(workspace, f"{mark}spare", [Role.AUDITOR], owner)
    secret = ws.create_webhook_secret(workspace, "probe sender", by=owner)
    lines = "".join(json.dumps({
        "session": f"{mark}s{i % 6}", "step": i // 6,
        "input": f"{mark} request {i}",
        "output": {"tool": random.Random(i).choice(["pay", "check", "delete", "search"]),
                   "args": {"amount": i * 97 % 3000, "note": f"{mark}note"}}}) + "\n"
        for i in range(120))
    log = ContentFile(lines.encode(), name=f"{mark}log.jsonl")
    upload, _ = intake.create_upload(workspace, log, "jsonl", by=owner)
    upload.refresh_from_db()
    first = audits.start_audit(workspace, None, upload, owner)
    second = audits.start_audit(workspace, live, None, owner)
    session = TraceSession.objects.filter(workspace=workspace).order_by("id").first()
    return {"workspace": workspace, "owner": owner, "tokens": {"full": full, "auditor": auditor},
            "upload_status": upload.status,
            "ids": {"slug": slug, "username": victim_name, "token_id": spare.pk,
                    "secret_id": secret.pk, "rule_id": rules[0].pk, "number": 2,
                    "rule_set_id": live.pk, "labeler_id": labeler.pk, "upload_id": upload.pk,
                    "session_id": session.pk, "audit_id": first.pk, "before_id": first.pk,
                    "after_id": second.pk, "live_session_id": f"{slug}-live-0",
                    "decision_id": "q1", "rule_name": rules[0].name,
                    "session_name": session.external_id}}


def _count_rows(workspace) -> dict:
    """B's rows, to see that nothing of A's callers changed them."""
    from studio.audits.models import AuditRun, SessionResult
    from studio.rules.models import Labeler, Rule, RuleSet, RuleVersion
    from studio.traces.models import Event, TraceSession, Upload
    from studio.workspaces.models import ApiToken, Membership, Workspace

    refreshed = Workspace.objects.get(pk=workspace.pk)
    return {"name": refreshed.name, "slug": refreshed.slug,
            "rules": Rule.objects.filter(workspace=workspace).count(),
            "versions": RuleVersion.objects.filter(rule__workspace=workspace).count(),
            "version statuses": sorted(RuleVersion.objects.filter(rule__workspace=workspace)
                                       .values_list("status", flat=True)),
            "rule sets": RuleSet.objects.filter(workspace=workspace).count(),
            "labelers": Labeler.objects.filter(workspace=workspace).count(),
            "members": Membership.objects.filter(workspace=workspace).count(),
            "tokens": ApiToken.objects.filter(workspace=workspace).count(),
            "uploads": Upload.objects.filter(workspace=workspace).count(),
            "sessions": TraceSession.objects.filter(workspace=workspace).count(),
            "events": Event.objects.filter(workspace=workspace).count(),
            "runs": AuditRun.objects.filter(workspace=workspace).count(),
            "results": SessionResult.objects.filter(run__workspace=workspace).count()}


# ---------------------------------------------------------------------------------------------
# Requests

class Answers:
    """Every answer counted: by status, the 5xx and the leaks kept with their request."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses: collections.Counter = collections.Counter()
        self.server_errors: list[str] = []
        self.no_answer: list[str] = []
        self.leaks: list[str] = []
        self.total = 0
        # Valid requests of A's full token: how deep the probe reached (a route that refuses
        # every valid request was probed only at its door).
        self.valid: dict[str, int] = {}

    def add(self, request: dict, status: int, body: bytes) -> None:
        what = (f"{request['caller']} {request['method']} {request['path'][:160]!r} "
                f"[{request['kind']}]")
        with self.lock:
            self.total += 1
            self.statuses[status] += 1
            if request["caller"] in ("A-token", "A-person") and request["kind"] in (
                    "valid", "upload valid"):
                self.valid[f"{request['method']} {request['path'][:90]} ({request['caller']})"] = (
                    status, body[:160])
            if status == 0:
                self.no_answer.append(what)
            elif status >= 500:
                self.server_errors.append(f"{status} {what}: {body[:200]!r}")
            leak = None
            if request["caller"] in A_CALLERS and MARKER.encode() in body:
                leak = "B's marker in the answer"
            elif request.get("foreign") and 200 <= status < 300:
                leak = f"{status} on the other workspace"
            if leak:
                self.leaks.append(f"{leak}: {what}: {body[:200]!r}")


A_CALLERS = {"A-token", "A-auditor", "A-person"}


class Caller:
    def __init__(self, name: str, token: str | None = None, cookie: str | None = None,
                 csrf: str | None = None):
        self.name, self.token, self.cookie, self.csrf = name, token, cookie, csrf

    def headers(self, method: str) -> dict:
        headers = {"Connection": "close"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.cookie:
            headers["Cookie"] = self.cookie
            if method not in ("GET", "HEAD") and self.csrf:
                headers["X-CSRFToken"] = self.csrf
        return headers


def _send(port: int, request: dict) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        connection.putrequest(request["method"], request["path"], skip_accept_encoding=True)
        body = request.get("body")
        headers = dict(request["headers"])
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
            headers["Content-Length"] = str(len(body))
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        connection.close()


def _path(template: str, values: dict) -> str:
    def fill(match: re.Match) -> str:
        return quote(str(values[match[1]]), safe="")
    return re.sub(r"\{([^}]+)\}", fill, template)


def _resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


class Bodies:
    """A valid body for an operation (from its schema, with plausible values by field name), and
    hostile variants of it."""

    def __init__(self, components: dict, ids: dict):
        self.components, self.ids = components, ids
        self.counter = itertools.count()

    def valid(self, schema: dict) -> object:
        return self._value(_resolve(schema, self.components), "", depth=0)

    def _value(self, schema: dict, name: str, depth: int):
        schema = _resolve(schema, self.components)
        known = self._by_name(name)
        if known is not None:
            return known
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [s for s in schema[key] if _resolve(s, self.components).get("type")
                           != "null"]
                return self._value(options[0], name, depth) if options else None
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if kind == "object":
            if depth > 4:
                return {}
            properties = schema.get("properties", {})
            required = set(schema.get("required", []))
            return {key: self._value(value, key, depth + 1)
                    for key, value in properties.items() if key in required or depth == 0}
        if kind == "array":
            return [self._value(schema.get("items", {}), name, depth + 1)]
        if kind == "integer":
            return 1
        if kind == "number":
            return 1.5
        if kind == "boolean":
            return True
        return f"probe-{name}-{next(self.counter)}"

    def _by_name(self, name: str):
        ids = self.ids
        n = next(self.counter)
        return {
            "formula": "G !tool_call:delete", "text": "G(tool_call:pay -> O tool_call:check)",
            "cpl": "G !delete", "english": "the agent never deletes anything",
            "roles": ["auditor"], "username": ids["username"], "rule_ids": [ids["rule_id"]],
            "rule_set": ids["rule_set_id"], "upload": ids["upload_id"], "kind": "regex",
            "config": {"path": "input", "pattern": "refund"}, "atom": f"probe_atom_{n}",
            "name": f"probe-{n}", "event": {"output": {"tool": "pay", "args": {"amount": 5}}},
            "events": [{"event_id": f"probe-ev-{n}",
                        "output": {"tool": "search", "args": {"q": "x"}}}],
            "labels": [{"session": ids["session_name"], "rule": ids["rule_name"],
                        "violated": True}],
            "counting": None, "pattern": "absence", "comment": "probe",
        }.get(name)

    def variants(self, valid) -> dict[str, bytes]:
        """Hostile bodies, by kind."""
        found = {"empty": b"{}", "bad-json": b'{"a": ', "array": b"[]", "null": b"null",
                 "not-utf8": b'{"name": "\xff\xfe"}', "deep": b"[" * 5000 + b"]" * 5000,
                 "float-overflow": b'{"n": 1e999, "limit": 1e999}'}
        if isinstance(valid, dict) and valid:
            for kind, change in (("nul-strings", lambda v: _strings(v, NUL)),
                                 ("format-chars", lambda v: _strings(v, FORMAT_CHARACTERS)),
                                 ("long-strings", lambda v: _strings(v, "y" * 200_000)),
                                 ("wrong-types", _wrong_types),
                                 ("huge-numbers", lambda v: _numbers(v, HUGE)),
                                 ("negative-numbers", lambda v: _numbers(v, -HUGE)),
                                 ("extra-field", lambda v: {**v, "workspace": 1, "id": 1,
                                                            "slug": "beta"})):
                found[kind] = json.dumps(change(copy.deepcopy(valid))).encode()
        return found


def _strings(value, replacement: str):
    if isinstance(value, str):
        return replacement
    if isinstance(value, list):
        return [_strings(v, replacement) for v in value]
    if isinstance(value, dict):
        return {k: _strings(v, replacement) for k, v in value.items()}
    return value


def _numbers(value, replacement: int):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return replacement
    if isinstance(value, list):
        return [_numbers(v, replacement) for v in value]
    if isinstance(value, dict):
        return {k: _numbers(v, replacement) for k, v in value.items()}
    return value


def _wrong_types(value):
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, str):
        return 123
    if isinstance(value, (int, float)):
        return "abc"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return {k: _wrong_types(v) for k, v in value.items()} if value else 7
    return [None]


VALID_QUERY = {"limit": "5", "offset": "0", "wait": "0"}


def _multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    boundary = "probe" + secrets.token_hex(8)
    parts = []
    for key, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'
                     .encode() + value.encode() + b"\r\n")
    for key, (filename, content) in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"; '
                     f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                     .encode("utf-8", "surrogateescape") + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _upload_requests(path: str) -> list[tuple[str, bytes, str]]:
    line = json.dumps({"session": "probe-up", "step": 0, "output": {"tool": "pay"}}).encode()
    cases = {"valid": ({"format": "jsonl"}, {"file": ("probe.jsonl", line + b"\n")}),
             "nul-filename": ({"format": "jsonl"}, {"file": ("a\x00b.jsonl", line)}),
             "format-chars-filename": ({"format": "jsonl"},
                                       {"file": (FORMAT_CHARACTERS + ".jsonl", line)}),
             "bad-format": ({"format": "exe"}, {"file": ("x.jsonl", line)}),
             "nul-format": ({"format": NUL}, {"file": ("x.jsonl", line)}),
             "empty-file": ({"format": "jsonl"}, {"file": ("empty.jsonl", b"")}),
             "binary": ({"format": "jsonl"}, {"file": ("junk.jsonl", bytes(range(256)) * 40)}),
             "no-file": ({"format": "jsonl"}, {}),
             "bad-options": ({"format": "jsonl", "options": "{not json"},
                             {"file": ("x.jsonl", line)}),
             "csv-hostile": ({"format": "csv"}, {"file": ("x.csv", b"session,step\n\x00,1e999\n")})}
    found = []
    for kind, (fields, files) in cases.items():
        body, content_type = _multipart(fields, files)
        found.append((kind, body, content_type))
    found.append(("not-multipart", b'{"format": "jsonl"}', "application/json"))
    return found


def api_requests(schema: dict, a: dict, b: dict, callers: dict, bodies_a: Bodies,
                 bodies_b: Bodies) -> list[dict]:
    """The matrix of API requests (see the module docstring), each a dict."""
    components = schema["components"]["schemas"]
    made = []

    def add(caller: str, method: str, path: str, kind: str, body: bytes | None = None,
            content_type: str | None = None, foreign: bool = False):
        headers = callers[caller].headers(method)
        if content_type:
            headers["Content-Type"] = content_type
        made.append({"caller": caller, "method": method, "path": path, "kind": kind,
                     "body": body, "headers": headers, "foreign": foreign})

    for template, operations in schema["paths"].items():
        for method, operation in operations.items():
            method = method.upper()
            parameters = operation.get("parameters", [])
            path_names = [p["name"] for p in parameters if p["in"] == "path"]
            query_names = [p["name"] for p in parameters if p["in"] == "query"]
            # Valid requests give only the paging and waiting parameters; each is made
            # hostile in turn below.
            query = {name: VALID_QUERY[name] for name in query_names if name in VALID_QUERY}
            live = "/live/sessions/" in template

            def values(ids: dict) -> dict:
                found = {name: ids.get(name, 1) for name in path_names}
                if live and "session_id" in found:
                    found["session_id"] = ids["live_session_id"]
                return found

            def url(ids_values: dict, query_values: dict) -> str:
                text = _path(template, ids_values)
                return text + ("?" + urlencode(query_values) if query_values else "")

            content = operation.get("requestBody", {}).get("content", {})
            if "multipart/form-data" in content:
                for kind, body, content_type in _upload_requests(template):
                    add("A-token", method, url(values(a), query), f"upload {kind}", body,
                        content_type)
                body_a, content_type = _upload_requests(template)[0][1:]
                body_b = body_a
            elif "application/json" in content:
                body_schema = content["application/json"]["schema"]
                valid = bodies_a.valid(body_schema)
                body_a = json.dumps(valid).encode()
                body_b = json.dumps(bodies_b.valid(body_schema)).encode()
                content_type = "application/json"
                for kind, body in bodies_a.variants(valid).items():
                    add("A-token", method, url(values(a), query), f"body {kind}", body,
                        content_type)
            else:
                body_a = body_b = None
                content_type = None
            for caller in ("A-token", "A-auditor", "A-person", "anonymous", "bad-token"):
                add(caller, method, url(values(a), query), "valid", body_a, content_type)
            # B's ids (never its slug) under A's slug, by A's token and person: B's data must
            # not show.
            crossed = {**values(b), "slug": a["slug"]}
            if len(path_names) > 1:
                for caller in ("A-token", "A-person"):
                    add(caller, method, url(crossed, query), "B's ids under A's slug", body_b,
                        content_type)
            if "slug" in path_names:
                for caller in ("A-token", "A-person"):
                    add(caller, method, url(values(b), query), "B's slug and ids", body_b,
                        content_type, foreign=True)
                add("B-token", method, url(values(a), query), "B's token on A", body_a,
                    content_type, foreign=True)
            for name in path_names:
                for kind, hostile in PATH_HOSTILE.items():
                    add("A-token", method, url({**values(a), name: hostile}, query),
                        f"path {name} {kind}", body_a, content_type)
            for name in query_names:
                for kind, hostile in QUERY_HOSTILE.items():
                    add("A-token", method, url(values(a), {**query, name: hostile}),
                        f"query {name} {kind}", body_a, content_type)
    return made


PAGE_PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
PAGE_FORM = {"name": "probe page", "formula": "G !tool_call:delete", "roles": "auditor",
             "username": "vic", "atom": "probe_page_atom", "kind": "regex", "text": "G x",
             "english": "never delete", "answer": "approve", "decision": "approve",
             "comment": "probe", "format": "jsonl", "before": "1", "after": "2", "q": "x",
             "rule_set": "1", "upload": "1", "engine": "offline", "pattern": "absence",
             "labels": "[]", "session": "s0", "rule": "x", "violated": "true", "page": "2"}


def _page_routes() -> list[str]:
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(resolver, prefix=""):
        for entry in resolver.url_patterns:
            pattern = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                yield from walk(entry, pattern)
            elif isinstance(entry, URLPattern):
                yield pattern

    return sorted({r for r in walk(get_resolver())
                   if not r.startswith(("api/", "admin/", "^")) and "(?P<" not in r})


def page_requests(a: dict, b: dict, callers: dict) -> list[dict]:
    made = []

    def add(caller: str, method: str, path: str, kind: str, form: dict | None = None,
            foreign: bool = False):
        headers = callers[caller].headers(method)
        body = None
        if form is not None:
            token = callers[caller].csrf
            body = urlencode({**form, **({"csrfmiddlewaretoken": token} if token else {})},
                             doseq=True).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        made.append({"caller": caller, "method": method, "path": path, "kind": kind,
                     "body": body, "headers": headers, "foreign": foreign})

    def page_ids(ids: dict) -> dict:
        return {**ids, "pk": ids.get("decision_pk", 1)}

    for route in _page_routes():
        if "logout" in route:
            continue  # the signed-in person stays signed in for the rest

        def url(ids: dict, route=route) -> str:
            return "/" + PAGE_PARAMETER.sub(
                lambda m: quote(str(ids.get(m["name"], 1)), safe=""), route)

        names = [m["name"] for m in PAGE_PARAMETER.finditer(route)]
        query = "?" + urlencode({"before": a["audit_id"], "after": a["after_id"], "page": 2,
                                 "q": "s"})
        for method in ("GET", "POST"):
            form = None if method == "GET" else PAGE_FORM
            for caller in ("A-person", "anonymous"):
                add(caller, method, url(page_ids(a)), "valid", form)
            add("A-person", method, url(page_ids(a)) + query, "valid with query", form)
            if method == "POST":
                for kind, hostile in (("nul", NUL), ("format-chars", FORMAT_CHARACTERS),
                                      ("huge", str(HUGE)), ("long", "y" * 100_000)):
                    add("A-person", method, url(page_ids(a)), f"form {kind}",
                        {key: hostile for key in PAGE_FORM})
            if "slug" in names:
                add("A-person", method, url(page_ids(b)), "B's slug and ids", form,
                    foreign=True)
            if len(names) > 1:
                add("A-person", method, url({**page_ids(b), "slug": a["slug"]}),
                    "B's ids under A's slug", form)
            for name in names:
                for kind, hostile in PATH_HOSTILE.items():
                    add("A-person", method, url({**page_ids(a), name: hostile}),
                        f"path {name} {kind}", form)
            if method == "GET":
                for kind, hostile in QUERY_HOSTILE.items():
                    add("A-person", method, url(page_ids(a)) + "?" + urlencode(
                        {"before": hostile, "after": hostile, "page": hostile, "q": hostile,
                         "status": hostile, "rule": hostile, "session": hostile}),
                        f"query {kind}")
    # Outside the workspaces: health, OTLP, sign-in.
    otlp_json = (b'{"resourceSpans": [{"scopeSpans": [{"spans": '
                 b'[{"traceId": "\\u0000", "name": 5}]}]}]}')
    for kind, body in (("empty", b""), ("junk", bytes(range(256))), ("json", otlp_json),
                       ("huge", b'{"resourceSpans": 1e999}')):
        for caller in ("A-token", "anonymous", "bad-token"):
            made.append({"caller": caller, "method": "POST", "path": "/v1/traces",
                         "kind": f"otlp {kind}", "body": body,
                         "headers": {**callers[caller].headers("POST"),
                                     "Content-Type": "application/json"}, "foreign": False})
    for username in ("ann", NUL, FORMAT_CHARACTERS, "x" * 10_000):
        made.append({"caller": "anonymous", "method": "POST", "path": "/accounts/login/",
                     "kind": "sign-in", "headers": {"Connection": "close",
                                                    "Content-Type":
                                                    "application/x-www-form-urlencoded"},
                     "body": urlencode({"username": username, "password": NUL}).encode(),
                     "foreign": False})
    made.append({"caller": "anonymous", "method": "GET", "path": "/healthz", "kind": "valid",
                 "headers": {"Connection": "close"}, "body": None, "foreign": False})
    return made


def _person_cookie(user) -> str:
    """A signed-in session for ``user``, as the sign-in page makes it."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def run(args) -> bool:
    folder = Path(tempfile.mkdtemp(prefix="probe-server-"))
    cache = RedisServer(folder)
    cache.start()
    services = None
    try:
        extra = {"CACHE_URL": f"{cache.url}/1", "UPLOAD_ROOT": str(folder / "uploads")}
        env = production_env(folder, "studio_probe_server", extra)
        # No broker: tasks run in the process that asks for them (the web server's here).
        for key in ("CELERY_BROKER_URL",):
            os.environ.pop(key, None)
            env.pop(key, None)
        # The same secret as the server's, so the session cookie made here is valid there.
        fresh_database("studio_probe_server", {"SECRET_KEY": env["SECRET_KEY"], **extra})
        from studio.api.urls import api
        from studio.guard.models import GuardDecision

        a = _make_workspace("acme", "Acme", "", ("ann", "rita", "vic"))
        b = _make_workspace("beta", f"Beta {MARKER}", MARKER, ("bob", "rex", "val"))
        from tests.test_broker_restart import Services

        services = Services(env, folder)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        uvicorn(services, port, args.workers)
        wait(lambda: healthy(base), 90, "the web server", 0.3, services.output)
        for ws in (a, b):
            slug, token = ws["ids"]["slug"], ws["tokens"]["full"]
            for path, body in ((f"/api/w/{slug}/live/sessions/{slug}-live-0/events",
                                {"events": [{"event_id": f"{slug}-e{i}", "input":
                                             f"{MARKER if slug == 'beta' else ''} live {i}",
                                             "output": {"tool": "search"}} for i in range(3)]}),
                               (f"/api/w/{slug}/live/sessions/{slug}-live-0/guard",
                                {"event": {"output": {"tool": "delete", "args": {}}},
                                 "decision_id": "q1"})):
                status, answer = _send(port, {"method": "POST", "path": path,
                                              "body": json.dumps(body).encode(),
                                              "headers": {"Authorization": f"Bearer {token}",
                                                          "Connection": "close"}})
                if status != 200:
                    raise SystemExit(f"setting up {path}: {status} {answer[:300]!r}")
            pending = GuardDecision.objects.filter(workspace=ws["workspace"]).order_by("id")
            ws["ids"]["decision_pk"] = pending.first().pk if pending.exists() else 1
        csrf = secrets.token_hex(16)
        callers = {
            "A-token": Caller("A-token", a["tokens"]["full"]),
            "A-auditor": Caller("A-auditor", a["tokens"]["auditor"]),
            "A-person": Caller("A-person", cookie=f"sessionid={_person_cookie(a['owner'])}; "
                                                  f"csrftoken={csrf}", csrf=csrf),
            "B-token": Caller("B-token", b["tokens"]["full"]),
            "anonymous": Caller("anonymous"),
            "bad-token": Caller("bad-token", "sk_" + "0" * 40),
        }
        schema = api.get_openapi_schema()
        requests_made = (api_requests(schema, a["ids"], b["ids"], callers,
                                      Bodies(schema["components"]["schemas"], a["ids"]),
                                      Bodies(schema["components"]["schemas"], b["ids"]))
                         + page_requests(a["ids"], b["ids"], callers))
        random.Random(args.seed).shuffle(requests_made)
        def removes(request: dict) -> bool:
            return request["method"] == "DELETE" or (
                request["method"] == "POST" and request["path"].split("?")[0].rstrip("/")
                .endswith(("/erase", "/remove", "/revoke")))

        phases = [[r for r in requests_made if r["method"] in ("GET", "HEAD")],
                  [r for r in requests_made if r["method"] != "GET" and not removes(r)],
                  [r for r in requests_made if removes(r)]]
        before = _count_rows(b["workspace"])
        answers = Answers()
        began = time.monotonic()
        for phase in phases:
            with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
                for request, (status, body) in zip(
                        phase, pool.map(lambda r: _send(port, r), phase)):
                    answers.add(request, status, body)
        seconds = time.monotonic() - began
        # The detector can see B's data: B's own token reads its rules with the marker.
        control = _send(port, {"method": "GET", "path": "/api/w/beta/rules",
                               "headers": callers["B-token"].headers("GET")})
        detector_sees = control[0] == 200 and MARKER.encode() in control[1]
        after = _count_rows(b["workspace"])
        web_log = services.log("web")
    finally:
        if services is not None:
            services.stop_all()
        cache.stop()
    shutil.rmtree(folder, ignore_errors=True)

    changed = {key: (before[key], after[key]) for key in before if before[key] != after[key]}
    api_operations = sum(len(v) for v in schema["paths"].values())
    print(f"{answers.total:,} requests in {seconds:.0f} s over {api_operations} API operations "
          f"and {len(_page_routes())} page routes; answers by status: "
          f"{dict(sorted(answers.statuses.items()))}")
    print(f"tracebacks in the server's log: {web_log.count('Traceback')}")
    reached = collections.Counter(f"{status // 100}xx" for status, _ in answers.valid.values())
    print(f"valid requests of A's token and person: {dict(sorted(reached.items()))}")
    if args.verbose:
        for what, (status, body) in sorted(answers.valid.items()):
            print(f"  {status} {what}" + (f" {body!r}" if status >= 300 else ""))
    for title, items in (("server errors", answers.server_errors),
                         ("no answer", answers.no_answer), ("leaks", answers.leaks)):
        if items:
            print(f"{title} ({len(items)}):")
            for item in sorted(items)[:40]:
                print(f"  {item}")
    if changed:
        print(f"B's rows changed: {changed}")
    print(f"control: B's own token reads its rules with the marker: {detector_sees}")
    return summary("server-errors", {
        "requests": answers.total, "server errors": len(answers.server_errors),
        "no answer": len(answers.no_answer), "leaks": len(answers.leaks),
        "B changed": len(changed), "tracebacks logged": web_log.count("Traceback"),
        "detector blind": int(not detector_sees)},
        ("server errors", "no answer", "leaks", "B changed", "detector blind"))
