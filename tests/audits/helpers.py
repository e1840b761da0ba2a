"""Workspaces, approved rules, sessions and events for the audit tests, made through the ORM.

Events go straight into the tables (the uploads service is someone else's slice): a session is a
list of canonical-event dicts; steps run 0, 1, 2, ... unless an event names its own.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from studio.audits.services import monitor_event
from studio.labeling import labeling_from_snapshot
from studio.monitor.audit import Audit
from studio.rules.models import Labeler, Rule, RuleSet, RuleVersion, VersionStatus
from studio.rules.monitoring import labeler_snapshot
from studio.traces.models import Event, TraceSession, Upload, UploadStatus
from studio.workspaces import services as ws
from studio.workspaces.models import Role, Workspace

# Future, past, bounded, weak until, data atoms, prev(), built-in atoms, a labeler's atom.
RULES = [
    ("big_amount_approved", "G(data.amount > 1000 -> F approved)"),
    ("consent_first", "!tool_call:pay W consent"),
    ("delete_backup", "G(delete -> O backup)"),
    ("error_retry", "G(error -> X retry)"),
    ("escalation_acked", "G(escalate -> F[0,3] ack)"),
    ("grant_requested", "G(grant -> O request)"),
    ("increase_approved", "G(data.amount > prev(data.amount) -> F approved)"),
    ("logs_out", "F logout"),
    ("no_delete", "G !delete"),
    ("refund_after_approval", "G(tool_call:refund -> (!notify S approved))"),
    ("status_error_retry", 'G(data.status == "error" -> X retry)'),
    ("vip_escalated", "G(vip -> F[0,2] escalate)"),
]

LABELS = {"request": .15, "grant": .12, "approved": .08, "consent": .05, "error": .06,
          "retry": .2, "escalate": .06, "ack": .3, "logout": .03, "delete": .01,
          "backup": .05, "notify": .1}
TOOLS = ["pay", "refund", "search", "ship"]


@dataclass
class Team:
    workspace: Workspace
    users: dict = field(default_factory=dict)

    def __getattr__(self, name):
        try:
            return self.users[name]
        except KeyError:
            raise AttributeError(name) from None


def make_team(slug: str = "acme") -> Team:
    """``auditor`` audits, ``author`` writes rules (no auditor role), ``outsider`` belongs to
    another workspace only."""
    users = {name: ws.create_user(f"{name}-{slug}") for name in
             ("auditor", "author", "reviewer", "outsider")}
    workspace = ws.create_workspace(slug.title(), slug=slug)
    ws.add_member(workspace, users["auditor"], Role.AUDITOR)
    ws.add_member(workspace, users["author"], Role.AUTHOR)
    ws.add_member(workspace, users["reviewer"], Role.REVIEWER)
    ws.create_workspace(f"Other {slug}", slug=f"other-{slug}", owner=users["outsider"])
    return Team(workspace, users)


def add_rule(team: Team, name: str, formula: str, approved: bool = True,
             rule_set: RuleSet | None = None, counting: str | None = None) -> RuleVersion:
    """A version as the rule services write it (its counting resolved: the formula's default
    when None), approved unless told otherwise."""
    from studio.logic.parser import parse
    from studio.rules.services import resolve_counting

    rule, _ = Rule.objects.get_or_create(workspace=team.workspace, name=name,
                                         defaults={"created_by": team.author})
    number = rule.versions.count() + 1
    version = RuleVersion.objects.create(
        rule=rule, number=number, formula=formula, author=team.author,
        counting=resolve_counting(parse(formula), counting),
        status=VersionStatus.APPROVED if approved else VersionStatus.DRAFT,
        reviewer=team.reviewer if approved else None,
        reviewed_at=timezone.now() if approved else None)
    if rule_set is not None:
        rule_set.rules.add(rule)
    return version


def add_rules(team: Team, rules=RULES) -> list[RuleVersion]:
    return [add_rule(team, name, formula) for name, formula in rules]


def add_labeler(team: Team, atom: str, kind: str, config: dict) -> Labeler:
    return Labeler.objects.create(workspace=team.workspace, atom=atom, kind=kind, config=config)


def make_upload(team: Team, name: str = "log.jsonl") -> Upload:
    return Upload.objects.create(workspace=team.workspace, uploaded_by=team.auditor,
                                 filename=name, format="jsonl", sha256=name.ljust(64, "0")[:64],
                                 status=UploadStatus.PARSED)


@transaction.atomic
def add_sessions(team: Team, sessions: dict[str, list[dict]],
                 upload: Upload | None = None) -> dict[str, TraceSession]:
    """Store sessions ``{external id: [event, ...]}``; returns them by external id."""
    made = {}
    rows = []
    for external, events in sessions.items():
        session = TraceSession.objects.create(workspace=team.workspace, external_id=external,
                                              steps=len(events))
        made[external] = session
        for position, event in enumerate(events):
            rows.append(Event(workspace=team.workspace, session=session, upload=upload,
                              step=event.get("step", position),
                              lifeline=event.get("lifeline", ""), input=event.get("input"),
                              output=event.get("output"), data=event.get("data") or {},
                              labels=event.get("labels")))
    Event.objects.bulk_create(rows, batch_size=2000)
    return made


def copy_sessions(team: Team, sessions: dict[str, list[dict]]) -> dict[str, TraceSession]:
    """``add_sessions`` for large logs on Postgres: events loaded with COPY."""
    from django.db import connection

    made = {}
    with transaction.atomic():
        TraceSession.objects.bulk_create([
            TraceSession(workspace=team.workspace, external_id=external, steps=len(events))
            for external, events in sessions.items()])
        made = {s.external_id: s for s in TraceSession.objects.filter(
            workspace=team.workspace, external_id__in=list(sessions))}

        def js(value):
            return None if value is None else json.dumps(value)

        with connection.cursor() as cursor, cursor.copy(
                f"COPY {Event._meta.db_table} (workspace_id, session_id, step, source, lifeline,"
                " input, output, data, labels, message_id, message_peer, message_kind)"
                " FROM STDIN") as copy:
            for external, events in sessions.items():
                session_id = made[external].id
                for position, e in enumerate(events):
                    copy.write_row((team.workspace.id, session_id, e.get("step", position),
                                    "upload", e.get("lifeline", ""), js(e.get("input")),
                                    js(e.get("output")), json.dumps(e.get("data") or {}),
                                    js(e.get("labels")), "", "", ""))
    return made


def random_events(rng: random.Random, n: int) -> list[dict]:
    """Agent-like events: pre-set labels, tool calls in the output (built-in atoms), data fields
    read by data atoms and by a labeler."""
    out = []
    for _ in range(n):
        labels = [a for a, p in LABELS.items() if rng.random() < p]
        tool = rng.choice(TOOLS) if rng.random() < .35 else None
        out.append({
            "labels": labels,
            "input": rng.choice(["hi", "please refund", "VIP customer here", None]),
            "output": ({"tool": tool, "args": {"amount": rng.randint(1, 3000)}} if tool
                       else rng.choice(["ok", "done", None])),
            "data": {"amount": int(rng.lognormvariate(6, 1.2)),
                     "status": "error" if rng.random() < .08 else "ok"},
        })
    return out


def random_sessions(seed: int, count: int, low: int = 0, high: int = 60) -> dict[str, list]:
    rng = random.Random(seed)
    return {f"s{seed}-{i:04d}": random_events(rng, rng.randint(low, high)) for i in range(count)}


def offline_audit(team: Team, sessions: dict[str, list[dict]], rules, path,
                  witnesses: bool = False) -> Audit:
    """The offline audit (``studio.monitor.audit.Audit``, what ``manage.py audit`` runs) over
    the same events written to a JSONL log at ``path``, each line carrying the labels the
    workspace's labeling gives it (the offline audit reads labels, it does not compute them)."""
    labeling = labeling_from_snapshot(labeler_snapshot(team.workspace))
    with open(path, "w", encoding="utf-8") as out:
        for external, events in sessions.items():
            previous = None
            for position, event in enumerate(events):
                full = monitor_event((external, event.get("step", position),
                                      event.get("lifeline", ""), event.get("input"),
                                      event.get("output"), event.get("data") or {},
                                      event.get("labels")))
                out.write(json.dumps(labeling.label(full, previous)) + "\n")
                previous = full
    audit = Audit(rules, witnesses=witnesses)
    audit.add_file(path)
    assert not audit.errors
    return audit
