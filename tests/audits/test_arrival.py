"""Audit on arrival (studio.audits.intake): an upload asked to be audited is monitored while it
loads, and the run it gets stores exactly what a separate audit of the same upload stores.

With Postgres and no enclosing transaction the load is threaded (writer and parsing threads), and
for a big file the monitoring runs in a child process; elsewhere it runs inline: every path is
compared with the separate audit."""

from __future__ import annotations

import io
import json
import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client

from studio.audits import intake as audit_intake
from studio.audits.models import AuditRun, BatchStatus, RunStatus, SessionResult
from studio.audits.services import start_audit
from studio.errors import ServiceError
from studio.live.ingest import ingest
from studio.rules.models import RuleSet
from studio.traces import intake, loading
from studio.traces.models import Upload, UploadStatus
from studio.workspaces import services as ws
from studio.workspaces.models import AuditLogEntry, Role

from .helpers import RULES, add_labeler, add_rule, add_rules, make_team, random_events
from .test_worker_kill import stored


@pytest.fixture(autouse=True)
def small_batches(settings, tmp_path, monkeypatch):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.AUDIT_BATCH_SIZE = 4
    # Load batches of 60 events, so sessions span batches and the monitors carry over.
    monkeypatch.setattr(loading, "BATCH_EVENTS", 60)


def _interleaved(rng: random.Random, sessions: dict[str, list[dict]]) -> list[dict]:
    """The sessions' events as log lines, sessions interleaved at random, each in its order."""
    queues = {name: [dict(e, session=name) for e in events] for name, events in sessions.items()}
    lines = []
    while queues:
        name = rng.choice(sorted(queues))
        lines.append(queues[name].pop(0))
        if not queues[name]:
            del queues[name]
    return lines


def _upload(team, lines: list[dict], *, audit=True, rule_set=None, name="log.jsonl",
            capture=None) -> Upload:
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with capture(execute=True):
        upload, _ = intake.create_upload(team.workspace, io.BytesIO(content), "jsonl",
                                         by=team.auditor, filename=name, audit=audit,
                                         rule_set=rule_set)
    upload.refresh_from_db()
    return upload


def _on_arrival(run: AuditRun) -> int:
    entry = AuditLogEntry.objects.get(action="audit.started", target_id=run.pk)
    return entry.details["audited_on_arrival"]


def _team_with_rules():
    team = make_team("arrive")
    add_rules(team, RULES)
    add_labeler(team, "vip", "regex", {"path": "input", "pattern": "vip", "flags": "i"})
    add_labeler(team, "big", "field", {"path": "data.amount", "op": ">", "value": 900})
    add_rule(team, "big_then_approved", "G(big -> F approved)")
    return team


class _CountedProcess(audit_intake.MonitorProcess):
    started: list = []

    def __init__(self, *args):
        super().__init__(*args)
        self.started.append(self._child.pid)


@pytest.fixture
def where(request, settings, monkeypatch):
    """Where the monitoring runs: "here" (the loading process) or "child" (a process of its
    own, as for big files, which are parsed in another child too; only with threads, that is
    on Postgres); "parsed-apart": here, the rows parsed in a child process."""
    settings.PARSE_PROCESS_MIN_BYTES = 10**12
    if request.param != "here" and connection.vendor != "postgresql":
        pytest.skip("child processes serve threaded loads, on Postgres only")
    if request.param == "child":
        settings.ARRIVAL_PROCESS_MIN_BYTES = settings.PARSE_PROCESS_MIN_BYTES = 0
        _CountedProcess.started = []
        monkeypatch.setattr(audit_intake, "MonitorProcess", _CountedProcess)
    else:
        settings.ARRIVAL_PROCESS_MIN_BYTES = 10**12
    if request.param == "parsed-apart":
        settings.PARSE_PROCESS_MIN_BYTES = 0
    return request.param


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("seed", [3, 8])
@pytest.mark.parametrize("where", ["here", "child", "parsed-apart"], indirect=True)
def test_an_upload_audited_on_arrival_stores_what_a_separate_audit_stores(
        seed, where, django_capture_on_commit_callbacks):
    team = _team_with_rules()
    rng = random.Random(seed)
    sessions = {f"a{seed}-{i:02d}": random_events(rng, rng.randint(1, 70)) for i in range(14)}
    # Two sessions that must be audited afterwards, from the database: one already has events
    # (a live delivery before the upload), one comes with explicit steps out of order.
    ingest(team.workspace, f"a{seed}-00", [{"id": "before-1", "labels": ["request"]}])
    disordered = f"a{seed}-01"
    sessions[disordered] = [dict(e, step=s) for e, s in zip(
        random_events(rng, 6), [0, 1, 4, 2, 3, 5])]
    lines = _interleaved(rng, sessions)

    upload = _upload(team, lines, capture=django_capture_on_commit_callbacks)

    assert upload.status == UploadStatus.PARSED and upload.lines_bad == 0
    run = upload.audit_run
    assert run is not None
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert run.sessions_total == len(sessions)
    assert _on_arrival(run) == len(sessions) - 2  # all but the two above
    assert all(b.status == BatchStatus.DONE for b in run.batches.all())

    separate = start_audit(team.workspace, None, upload, team.auditor)
    separate.refresh_from_db()
    assert separate.status == RunStatus.DONE
    results = stored(run)
    assert results == stored(separate)
    assert len(results) == len(sessions) * (len(RULES) + 1)
    assert any(r[1] == "violated" for r in results.values())  # the comparison is not vacuous
    if where == "child":
        assert len(_CountedProcess.started) == 2  # ARRIVAL_PROCESSES


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("when", ["before the rows", "handing its results over"])
def test_when_the_monitoring_process_dies_the_batches_audit_instead(
        when, settings, monkeypatch, django_capture_on_commit_callbacks):
    if connection.vendor != "postgresql":
        pytest.skip("the monitoring process serves threaded loads, on Postgres only")
    settings.ARRIVAL_PROCESS_MIN_BYTES = 0
    settings.AUDIT_BATCH_SIZE = 2  # results handed over in several batches
    killed = []

    class Dying(audit_intake.MonitorProcess):
        def _kill(self):
            self._child.kill()
            self._child.wait()
            killed.append(self._child.returncode)

        def _send(self, message):
            if when == "before the rows" and message[0].startswith("observe") and not killed:
                self._kill()
            super()._send(message)

        def result_texts(self, plan, version_ids):
            stream = super().result_texts(plan, version_ids)
            yield next(stream)  # the first batch is stored, then the child dies
            if when == "handing its results over":
                self._kill()
                self._child.stdout.read()  # what it wrote before dying is lost with it
            yield from stream

    monkeypatch.setattr(audit_intake, "MonitorProcess", Dying)
    team = _team_with_rules()
    rng = random.Random(13)
    sessions = {f"d-{i}": random_events(rng, rng.randint(1, 50)) for i in range(6)}
    upload = _upload(team, _interleaved(rng, sessions),
                     capture=django_capture_on_commit_callbacks)

    assert killed and upload.status == UploadStatus.PARSED
    run = upload.audit_run
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    assert _on_arrival(run) == 0  # every session audited by the batches instead
    separate = start_audit(team.workspace, None, upload, team.auditor)
    separate.refresh_from_db()
    assert stored(run) == stored(separate)
    assert len(stored(run)) == len(sessions) * (len(RULES) + 1)


@pytest.mark.django_db
def test_without_threads_the_results_are_the_same(django_capture_on_commit_callbacks):
    team = _team_with_rules()
    rng = random.Random(5)
    sessions = {f"b-{i}": random_events(rng, rng.randint(0, 40)) for i in range(9)}
    upload = _upload(team, _interleaved(rng, sessions),
                     capture=django_capture_on_commit_callbacks)
    run = upload.audit_run
    assert run.status == RunStatus.DONE
    assert _on_arrival(run) == sum(1 for events in sessions.values() if events)
    with django_capture_on_commit_callbacks(execute=True):
        separate = start_audit(team.workspace, None, upload, team.auditor)
    assert stored(run) == stored(separate)


@pytest.mark.django_db
def test_a_rule_set_limits_the_audit(django_capture_on_commit_callbacks):
    team = make_team("sets")
    rule_set = RuleSet.objects.create(workspace=team.workspace, name="deletes")
    kept = add_rule(team, "no_delete", "G !delete", rule_set=rule_set)
    add_rule(team, "logs_out", "F logout")
    upload = _upload(team, [{"session": "s", "labels": ["delete"]}], rule_set=rule_set,
                     capture=django_capture_on_commit_callbacks)
    results = SessionResult.objects.filter(run=upload.audit_run)
    assert [(r.rule_version_id, r.verdict) for r in results] == [(kept.id, "violated")]
    assert upload.audit_run.rule_set == rule_set


@pytest.mark.django_db
def test_asking_for_an_audit_without_approved_rules_is_refused(
        django_capture_on_commit_callbacks):
    team = make_team("none")
    add_rule(team, "draft_only", "G !delete", approved=False)
    with pytest.raises(ServiceError) as refused:
        _upload(team, [{"session": "s"}], capture=django_capture_on_commit_callbacks)
    assert refused.value.field == "audit"
    assert "no approved rule versions" in refused.value.message
    assert not Upload.objects.exists()


@pytest.mark.django_db
def test_the_same_file_again_with_an_audit_audits_it(django_capture_on_commit_callbacks):
    team = make_team("again")
    add_rule(team, "no_delete", "G !delete")
    lines = [{"session": "s", "labels": ["delete"]}, {"session": "t", "labels": []}]
    first = _upload(team, lines, audit=False, capture=django_capture_on_commit_callbacks)
    assert first.audit_run is None and not AuditRun.objects.exists()
    again = _upload(team, lines, capture=django_capture_on_commit_callbacks)
    assert again.pk == first.pk
    assert again.audit_run.status == RunStatus.DONE
    assert {r.verdict for r in SessionResult.objects.filter(run=again.audit_run)} == {
        "violated", "pending"}


@pytest.mark.django_db
def test_the_same_file_again_before_it_is_parsed_is_audited_once_it_is(
        django_capture_on_commit_callbacks):
    team = make_team("waiting")
    add_rule(team, "no_delete", "G !delete")
    content = b'{"session": "s", "labels": ["delete"]}\n'
    with django_capture_on_commit_callbacks(execute=False):  # no parse yet
        first, _ = intake.create_upload(team.workspace, io.BytesIO(content), "jsonl",
                                        by=team.auditor, filename="w.jsonl")
    again, created = intake.create_upload(team.workspace, io.BytesIO(content), "jsonl",
                                          by=team.auditor, filename="w.jsonl", audit=True)
    assert not created and again.pk == first.pk
    assert again.status == UploadStatus.RECEIVED and again.audit_requested
    loading.parse_upload(first.pk, observe=audit_intake.observe_upload)
    first.refresh_from_db()
    assert first.audit_run is not None
    assert [r.verdict for r in SessionResult.objects.filter(run=first.audit_run)] == ["violated"]


@pytest.mark.django_db
def test_the_rules_approved_when_the_load_began_are_the_ones_audited(
        django_capture_on_commit_callbacks, monkeypatch):
    team = make_team("gone")
    version = add_rule(team, "no_delete", "G !delete")
    # The rule loses its approval while the file loads: no audit, the upload is still fine.
    original = loading._Store.put

    def put_and_unapprove(self, batch):
        original(self, batch)
        type(version).objects.filter(pk=version.pk).update(status="rejected")

    monkeypatch.setattr(loading._Store, "put", put_and_unapprove)
    upload = _upload(team, [{"session": "s", "labels": []}],
                     capture=django_capture_on_commit_callbacks)
    assert upload.status == UploadStatus.PARSED
    # Monitored on arrival with the version approved when the load began: that run stands.
    assert upload.audit_run is not None and upload.audit_run.status == RunStatus.DONE
    assert list(upload.audit_run.rule_versions.all()) == [version]


@pytest.mark.django_db
def test_the_api_takes_audit_and_rule_set(django_capture_on_commit_callbacks):
    team = make_team("api")
    add_rule(team, "no_delete", "G !delete")
    token = ws.create_token(team.workspace, "ci", [Role.AUDITOR], team.auditor)[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def post(name, **fields):
        body = {"file": SimpleUploadedFile(name, b'{"session": "s", "labels": ["delete"]}\n'),
                "format": "jsonl", **fields}
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/api/w/{team.workspace.slug}/uploads", data=body)

    bad = post("a.jsonl", audit="maybe")
    assert bad.status_code == 400 and bad.json()["field"] == "audit", bad.content
    lonely = post("b.jsonl", rule_set="999")
    assert lonely.status_code == 404 and lonely.json()["field"] == "rule_set"
    for odd in ("²", "9" * 30, "-1", "1.5"):  # not ids: refused by name, never a server error
        refused = post(f"odd-{len(odd)}.jsonl", audit="true", rule_set=odd)
        assert refused.status_code == 400, (odd, refused.content)
        assert refused.json()["field"] == "rule_set" and "whole number" in refused.json()["detail"]
    made = post("c.jsonl", audit="true")
    assert made.status_code == 201, made.content
    assert made.json()["audit_requested"] is True
    # Parsed when the request's transaction committed, after its answer was made.
    body = client.get(f"/api/w/{team.workspace.slug}/uploads/{made.json()['id']}").json()
    assert body["status"] == "parsed" and body["audit_run"] is not None
    status = client.get(f"/api/w/{team.workspace.slug}/audits/{body['audit_run']}")
    assert status.json()["status"] == "done"
    assert not Upload.objects.exclude(filename="c.jsonl").exists()


@pytest.mark.django_db
def test_a_rule_set_deleted_while_the_log_loads_cancels_its_audit(
        django_capture_on_commit_callbacks, monkeypatch):
    from studio.rules import services as rules

    team = make_team("deleted")
    rule_set = RuleSet.objects.create(workspace=team.workspace, name="short-lived")
    add_rule(team, "no_delete", "G !delete", rule_set=rule_set)
    original = loading._Store.put

    def put_and_delete(self, batch):
        original(self, batch)
        if RuleSet.objects.filter(pk=rule_set.pk).exists():
            rules.delete_rule_set(RuleSet.objects.get(pk=rule_set.pk), team.author)

    monkeypatch.setattr(loading._Store, "put", put_and_delete)
    upload = _upload(team, [{"session": "s", "labels": ["delete"]}], rule_set=rule_set,
                     capture=django_capture_on_commit_callbacks)
    assert upload.status == UploadStatus.PARSED and upload.events_stored == 1
    assert not upload.audit_requested and upload.audit_run is None
    assert not AuditRun.objects.exists()  # not audited with every rule instead
    deleted = AuditLogEntry.objects.get(action="rule_set.deleted")
    assert deleted.details["audits_cancelled_for_uploads"] == [upload.pk]
