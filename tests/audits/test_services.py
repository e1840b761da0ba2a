"""Audit services: results equal the offline audit, batches are idempotent, progress counts each
batch once, attempts are capped, the run's snapshot holds.  Tasks run in-process (no broker)."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from studio.errors import ServiceError
from studio.audits import services
from studio.audits.models import (
    AuditBatch,
    AuditRun,
    BatchStatus,
    RunStatus,
    SessionResult,
    ViolationRecord,
)
from studio.labeling import labeling_from_snapshot
from studio.monitor.monitors import label_names
from studio.rules.models import RuleSet
from studio.rules.monitoring import ruleset_for
from studio.traces.models import Event, TraceSession
from studio.workspaces.models import AuditLogEntry

from .helpers import (
    RULES,
    add_labeler,
    add_rule,
    add_rules,
    add_sessions,
    make_team,
    make_upload,
    offline_audit,
    random_sessions,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    """start_audit with its enqueued tasks run (in-process) when its transaction commits."""

    def start(team, rule_set=None, upload=None, by=None):
        with django_capture_on_commit_callbacks(execute=True):
            run = services.start_audit(team.workspace, rule_set, upload, by or team.auditor)
        run.refresh_from_db()
        return run

    return start


def stored(run) -> dict:
    """{(external id, rule): (result fields, [violations])} of a run."""
    out = {}
    violations = {}
    for v in ViolationRecord.objects.filter(result__run=run).order_by("detected", "trigger", "id"):
        violations.setdefault(v.result_id, []).append(
            (v.trigger, v.detected, v.at_end, v.witness))
    for r in SessionResult.objects.filter(run=run).select_related("session",
                                                                   "rule_version__rule"):
        out[(r.session.external_id, r.rule_version.rule.name)] = (
            {"steps": r.steps, "verdict": r.verdict, "first_verdict_step": r.first_verdict_step,
             "final": r.final, "residual": r.residual, "violation_count": r.violation_count,
             "timeline": r.timeline},
            violations.get(r.id, []))
    return out


# --- the results are the offline audit's ------------------------------------------------------

@override_settings(AUDIT_BATCH_SIZE=7)
def test_results_equal_the_offline_audit(team, start, tmp_path):
    add_rules(team)
    # A labeler: its atom is read by a rule; the offline audit gets it through the labels.
    add_labeler(team, "vip", "regex", {"path": "input", "pattern": "(?i)vip"})
    sessions = random_sessions(seed=1, count=40, low=1, high=80)
    add_sessions(team, sessions)

    run = start(team)

    assert run.status == RunStatus.DONE and run.batches_total == 6
    report = offline_audit(team, sessions, RULES, tmp_path / "log.jsonl").report()
    got = stored(run)
    assert len(got) == len(sessions) * len(RULES)
    compared = violations = 0
    for session in report["sessions"]:
        for rule in session["rules"]:
            fields, found = got[(session["session"], rule["rule"])]
            assert fields["steps"] == session["steps"]
            assert (fields["verdict"], fields["first_verdict_step"], fields["final"],
                    fields["residual"]) == (rule["verdict"], rule["first_verdict_step"],
                                            rule["final"], rule["residual"])
            assert [(t, d) for t, d, _, _ in found] == [
                (v["trigger"], v["detected"]) for v in rule["violations"]]
            assert fields["violation_count"] == len(rule["violations"])
            compared += 1
            violations += len(found)
    assert compared == len(sessions) * len(RULES)
    # The sample exercises every kind of outcome.
    verdicts = {(f["verdict"], f["final"]) for f, _ in got.values()}
    assert {("violated", "violated"), ("satisfied", "satisfied"),
            ("pending", "satisfied"), ("pending", "violated")} <= verdicts
    assert violations > 100
    assert any(rule.endswith("vip_escalated") and found for (_, rule), (_, found) in got.items())


def test_witnesses_and_timelines_match_the_monitor(team, start, tmp_path):
    rules = [("error_retry", "G(error -> X retry)"),
             ("big_amount_approved", "G(data.amount > 1000 -> F approved)"),
             ("consent_first", "!tool_call:pay W consent"),
             ("logs_out", "F logout")]
    add_rules(team, rules)
    sessions = random_sessions(seed=2, count=12, low=5, high=50)
    add_sessions(team, sessions)

    run = start(team)

    audit = offline_audit(team, sessions, rules, tmp_path / "log.jsonl", witnesses=True)
    got = stored(run)
    for external, monitor in audit.sessions.items():
        for result in monitor.results():
            fields, found = got[(external, result.rule)]
            assert [(t, d, e) for t, d, e, _ in found] == [
                (v.trigger, v.detected, v.at_end) for v in result.violations]
            assert [w for _, _, _, w in found] == [
                [{"step": w.step, "labels": list(label_names(w.labels)),
                  "residual": w.residual.text} for w in v.witness]
                for v in result.violations]
            first = result.first_verdict_step
            expected = ([[0, "pending"]] if first is None else
                        [[0, result.verdict]] if first == 0 else
                        [[0, "pending"], [first, result.verdict]])
            assert fields["timeline"] == expected


def test_an_example_by_hand(team, start):
    add_rule(team, "respond", "G(request -> F answer)")
    add_sessions(team, {"a": [{"labels": ["request"]}, {"labels": ["answer"]},
                              {"labels": ["request"]}, {"labels": []}]})

    run = start(team)

    ((fields, violations),) = stored(run).values()
    assert fields == {"steps": 4, "verdict": "pending", "first_verdict_step": None,
                      "final": "violated", "residual": "F answer & G (!request | F answer)",
                      "violation_count": 1, "timeline": [[0, "pending"]]}
    ((trigger, detected, at_end, witness),) = violations
    assert (trigger, detected, at_end) == (2, 3, True)
    assert witness == [{"step": 2, "labels": ["request"], "residual": "F answer"}]


def test_steps_are_the_events_stored_step_numbers(team, start):
    add_rule(team, "ship_paid", "!ship W pay")
    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"gaps": [{"step": 10, "labels": []}, {"step": 20, "labels": ["error"]},
                                 {"step": 35, "labels": ["ship"]}]})

    run = start(team)

    got = stored(run)
    ship, ship_violations = got[("gaps", "ship_paid")]
    assert ship["first_verdict_step"] == 35 and ship["timeline"] == [[10, "pending"],
                                                                     [35, "violated"]]
    assert [(t, d) for t, d, _, _ in ship_violations] == [(10, 35)]
    _, errors = got[("gaps", "no_error")]
    assert [(t, d, w[-1]["step"]) for t, d, _, w in errors] == [(20, 20, 20)]


def test_sessions_without_events_get_results_of_the_empty_trace(team, start):
    add_rule(team, "logs_out", "F logout")
    add_rule(team, "no_delete", "G !delete")
    add_sessions(team, {"empty": []})

    run = start(team)

    got = stored(run)
    assert got[("empty", "logs_out")][0] == {
        "steps": 0, "verdict": "pending", "first_verdict_step": None, "final": "violated",
        "residual": "F logout", "violation_count": 0, "timeline": []}
    assert got[("empty", "no_delete")][0]["final"] == "satisfied"


def test_the_event_the_monitors_read_is_the_models(team):
    session = add_sessions(team, {"x": [{"labels": ["a"], "input": "q", "output": {"tool": "t"},
                                         "data": {"k": 1}, "lifeline": "agent"}]})["x"]
    event = Event.objects.get(session=session)
    (row,) = services.session_events([session.id])
    assert services.monitor_event(row) == event.as_monitor_event()


# --- starting -----------------------------------------------------------------------------------

def test_an_audit_without_approved_versions_is_refused_clearly(team):
    add_rule(team, "draft_only", "G !x", approved=False)
    rule_set = RuleSet.objects.create(workspace=team.workspace, name="payments")
    rule_set.rules.add(team.workspace.rules.get())

    with pytest.raises(ServiceError) as caught:
        services.start_audit(team.workspace, rule_set, None, team.auditor)
    assert caught.value.message == "rule set 'payments' has no approved rule versions"
    with pytest.raises(ServiceError) as caught:
        services.start_audit(team.workspace, None, None, team.auditor)
    assert caught.value.message == "workspace 'acme' has no approved rule versions"
    assert not AuditRun.objects.exists()


def test_a_rule_set_audits_its_newest_approved_versions_only(team, start):
    rule_set = RuleSet.objects.create(workspace=team.workspace, name="payments")
    add_rule(team, "a", "G !x", rule_set=rule_set)
    newest = add_rule(team, "a", "G !y", rule_set=rule_set)
    add_rule(team, "a", "G !z", approved=False)  # a newer draft
    add_rule(team, "b", "F done")  # not in the rule set
    add_sessions(team, {"s": [{"labels": ["x"]}, {"labels": ["y"]}]})

    run = start(team, rule_set=rule_set)

    assert list(run.rule_versions.all()) == [newest]
    ((_, violations),) = stored(run).values()
    assert [(t, d) for t, d, _, _ in violations] == [(1, 1)]


def test_an_upload_scopes_the_audit_to_its_sessions(team, start):
    add_rule(team, "no_error", "G !error")
    upload = make_upload(team)
    add_sessions(team, {"in": [{"labels": ["error"]}]}, upload=upload)
    add_sessions(team, {"out": [{"labels": ["error"]}]})

    run = start(team, upload=upload)

    assert run.sessions_total == 1
    assert [key[0] for key in stored(run)] == ["in"]


def test_nothing_in_scope_is_done_at_once(team, start):
    add_rule(team, "no_error", "G !error")

    run = start(team)

    assert (run.status, run.batches_total, services.audit_progress(run)["percent"]) == (
        RunStatus.DONE, 0, 100.0)


def test_starting_is_logged_and_batches_are_planned(team, django_capture_on_commit_callbacks):
    add_rules(team, RULES[:3])
    add_sessions(team, random_sessions(seed=3, count=5, high=5))
    with (override_settings(AUDIT_BATCH_SIZE=2),
          django_capture_on_commit_callbacks(execute=False) as enqueued):
        run = services.start_audit(team.workspace, None, None, team.auditor)

    assert len(enqueued) == 1  # one callback enqueues the batches, after commit
    assert [len(b.session_ids) for b in run.batches.all()] == [2, 2, 1]
    assert (run.status, run.sessions_total, run.batches_total) == (RunStatus.QUEUED, 5, 3)
    entry = AuditLogEntry.objects.filter(action="audit.started").get()
    assert (entry.actor, entry.target_id) == (team.auditor, run.id)
    assert entry.details["sessions"] == 5 and entry.details["batches"] == 3


def test_the_run_keeps_the_labelers_it_started_with(team, django_capture_on_commit_callbacks):
    add_rule(team, "vip_escalated", "G !vip")
    labeler = add_labeler(team, "vip", "regex", {"path": "input", "pattern": "VIP"})
    add_sessions(team, {"s": [{"input": "VIP"}, {"input": "vip"}]})
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    labeler.config = {"path": "input", "pattern": "(?i)vip"}  # edited while the run waits
    labeler.save()

    for batch in run.batches.all():
        services.run_batch(batch.id)

    ((fields, _),) = stored(run).values()
    assert fields["violation_count"] == 1


# --- batches: idempotent, counted once, capped -------------------------------------------------

@override_settings(AUDIT_BATCH_SIZE=3)
def test_a_redelivered_batch_changes_nothing_and_a_forced_rerun_replaces(team, start):
    add_rules(team, RULES[:5])
    add_sessions(team, random_sessions(seed=4, count=7, low=5, high=40))
    run = start(team)
    before = stored(run)
    rows = SessionResult.objects.filter(run=run).count()
    first = run.batches.get(index=0)
    old_ids = set(SessionResult.objects.filter(batch=first).values_list("id", flat=True))

    assert services.run_batch(first.id) == "duplicate"
    assert services.run_batch(first.id, force=True) == "replaced"

    run.refresh_from_db()
    assert stored(run) == before
    assert SessionResult.objects.filter(run=run).count() == rows == 7 * 5
    assert not old_ids & set(SessionResult.objects.filter(batch=first)
                             .values_list("id", flat=True))
    assert (run.batches_done, run.sessions_done, run.status) == (3, 7, RunStatus.DONE)
    first.refresh_from_db()
    assert first.attempts == 1


def test_a_rerun_after_an_interrupted_attempt_replaces_what_it_left(team, start):
    add_rule(team, "no_error", "G !error")
    session = add_sessions(team, {"s": [{"labels": ["error"]}]})["s"]
    run = start(team)
    batch = run.batches.get()
    # As if an older attempt had stored results and the batch had not been marked done.
    AuditBatch.objects.filter(pk=batch.pk).update(status=BatchStatus.RUNNING)
    AuditRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, batches_done=0,
                                              sessions_done=0)

    assert services.run_batch(batch.id) == "done"

    assert SessionResult.objects.filter(run=run, session=session).count() == 1
    assert ViolationRecord.objects.filter(result__run=run).count() == 1
    run.refresh_from_db()
    assert (run.status, run.batches_done, run.sessions_done) == (RunStatus.DONE, 1, 1)


def test_progress_counts_each_batch_once(team, django_capture_on_commit_callbacks):
    add_rule(team, "no_error", "G !error")
    add_sessions(team, random_sessions(seed=5, count=10, high=3))
    with (override_settings(AUDIT_BATCH_SIZE=4),
          django_capture_on_commit_callbacks(execute=False)):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    batches = list(run.batches.all())
    assert services.audit_progress(run) == {
        "status": "queued", "percent": 0.0, "sessions_done": 0, "sessions_total": 10,
        "batches_done": 0, "batches_total": 3, "error": "", "finished_at": None}

    services.run_batch(batches[0].id)
    services.run_batch(batches[0].id)
    run.refresh_from_db()
    assert (run.status, run.sessions_done, services.audit_progress(run)["percent"]) == (
        RunStatus.RUNNING, 4, 40.0)

    services.run_batch(batches[2].id)
    services.run_batch(batches[1].id)
    run.refresh_from_db()
    progress = services.audit_progress(run)
    assert (progress["status"], progress["percent"], progress["batches_done"]) == ("done", 100.0,
                                                                                   3)
    assert run.finished_at is not None
    assert AuditLogEntry.objects.filter(action="audit.finished", target_id=run.id).count() == 1


@override_settings(AUDIT_MAX_ATTEMPTS=3)
def test_a_failing_batch_is_retried_then_fails_the_run_with_its_reason(
        team, django_capture_on_commit_callbacks, monkeypatch):
    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    batch = run.batches.get()

    def broken(*args):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "compute_batch", broken)
    for _attempt in (1, 2):
        with pytest.raises(services.BatchRetry, match="disk on fire"):
            services.run_batch(batch.id)
    assert services.run_batch(batch.id) == "failed"

    batch.refresh_from_db()
    run.refresh_from_db()
    assert (batch.status, batch.attempts) == (BatchStatus.FAILED, 3)
    assert batch.error == "RuntimeError: disk on fire"
    assert run.status == RunStatus.FAILED
    assert run.error == "batch 0 failed: RuntimeError: disk on fire"
    assert services.run_batch(batch.id) == "failed"  # and stays so
    assert not SessionResult.objects.exists()


@override_settings(AUDIT_MAX_ATTEMPTS=2)
def test_a_batch_whose_worker_keeps_dying_is_given_up(team, django_capture_on_commit_callbacks):
    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    batch = run.batches.get()
    # Two deliveries claimed it and died before finishing (SIGKILL leaves no trace but these).
    AuditBatch.objects.filter(pk=batch.pk).update(status=BatchStatus.RUNNING, attempts=2)

    assert services.run_batch(batch.id) == "failed"

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert "gave up after 2 attempts" in run.error and "killed" in run.error


def test_the_celery_task_runs_the_service(team, django_capture_on_commit_callbacks):
    from worker.audits import run_audit_batch

    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    batch = run.batches.get()

    assert run_audit_batch.delay(batch.id).get() == "done"
    assert run_audit_batch.delay(batch.id).get() == "duplicate"
    assert run_audit_batch.acks_late and run_audit_batch.reject_on_worker_lost


# --- concurrent duplicates (Postgres: real row locks) -------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_of_a_batch_store_it_once():
    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres row locks (runs with DATABASE_URL=postgres://...)")
    from django.db import connections

    team = make_team("conc")
    add_rules(team, RULES[:6])
    add_sessions(team, random_sessions(seed=6, count=20, low=20, high=80))
    with override_settings(AUDIT_BATCH_SIZE=100):
        run = services.start_audit(team.workspace, None, None, team.auditor)  # runs it, eager
    batch = run.batches.get()
    expected = stored(run)
    AuditBatch.objects.filter(pk=batch.pk).update(status=BatchStatus.RUNNING, attempts=0)
    AuditRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, batches_done=0,
                                              sessions_done=0)
    outcomes = []
    barrier = threading.Barrier(4)

    def deliver():
        try:
            barrier.wait()
            outcomes.append(services.run_batch(batch.id))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    with override_settings(AUDIT_MAX_ATTEMPTS=10):
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert sorted(outcomes) == ["done", "duplicate", "duplicate", "duplicate"]
    run.refresh_from_db()
    assert (run.batches_done, run.sessions_done, run.status) == (1, 20, RunStatus.DONE)
    assert stored(run) == expected
    assert SessionResult.objects.filter(run=run).count() == 20 * 6


def test_witness_json_is_plain_json(team, start):
    add_rule(team, "big", "G(data.amount > 10 -> F approved)")
    add_sessions(team, {"s": [{"data": {"amount": 50}}, {"labels": ["x"]}]})
    run = start(team)
    (violation,) = ViolationRecord.objects.filter(result__run=run)
    assert json.loads(json.dumps(violation.witness)) == [
        {"step": 0, "labels": ["data.amount > 10"], "residual": "F approved"}]


def test_witnesses_written_through_the_orm_read_back_whole(team, start):
    """Postgres keeps witnesses as ``json`` (``StoredJSONField``); a record written through
    the ORM (the driver sends ``jsonb``) reads back as the value written, as from COPY."""
    add_rule(team, "big", "G(data.amount > 10 -> F approved)")
    add_sessions(team, {"s": [{"data": {"amount": 50}}, {"labels": ["x"]}]})
    run = start(team)
    result = SessionResult.objects.get(run=run)
    witness = [{"step": 1, "labels": ["é", 'a "b"', "\\N"], "residual": "F approved\tnow"}]
    made = ViolationRecord.objects.create(result=result, trigger=1, detected=1, witness=witness)
    assert ViolationRecord.objects.get(pk=made.pk).witness == witness
    assert ViolationRecord.objects.filter(pk=made.pk).values_list("witness", flat=True)[0] \
        == witness
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_typeof(witness)::text FROM audits_violationrecord"
                           " WHERE id = %s", [made.pk])
            assert cursor.fetchone() == ("json",)


_odd_text = st.lists(st.sampled_from(["a", "é", "\\", "\t", "\n", "\r", "\\N", '"', "😀", " "]),
                     max_size=6).map("".join)


@hypothesis_settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(
    _odd_text, st.none() | st.integers(0, 2**31 - 1), _odd_text,
    st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99), st.booleans(),
                       st.lists(st.fixed_dictionaries({"step": st.integers(0, 99),
                                                       "labels": st.lists(_odd_text, max_size=2),
                                                       "residual": _odd_text}), max_size=2)),
             max_size=3)), min_size=1, max_size=4))
def test_stored_results_read_back_as_written_whatever_their_text(team, drawn):
    """Results and violations go in as COPY text the audit writes itself (no driver row by
    row): tabs, newlines, backslashes and a literal \\N in residuals and witnesses survive."""
    with transaction.atomic():  # each example leaves nothing behind
        versions = [add_rule(team, f"r{i}", "F p") for i in range(len(drawn))]
        session = TraceSession.objects.get_or_create(workspace=team.workspace, external_id="s")[0]
        run = AuditRun.objects.create(workspace=team.workspace)
        batch = AuditBatch.objects.create(run=run, index=0, session_ids=[session.id])
        results = [services._Result(session.id, version.id, 7, verdict, first, "undecided",
                                    residual, [[0, "pending"], [3, verdict]],
                                    [(t, d, e, json.dumps(w)) for t, d, e, w in violations])
                   for version, (verdict, first, residual, violations) in zip(versions, drawn)]
        services.insert_results(batch, results)
        got = [(r.verdict, r.first_verdict_step, r.residual, r.timeline,
                [(v.trigger, v.detected, v.at_end, v.witness) for v in r.violations.order_by("id")])
               for r in SessionResult.objects.filter(batch=batch).order_by("id")]
        assert got == [(verdict, first, residual, [[0, "pending"], [3, verdict]],
                        [(t, d, e, w) for t, d, e, w in violations])
                       for verdict, first, residual, violations in drawn]
        transaction.set_rollback(True)


@override_settings(AUDIT_MAX_ATTEMPTS=3)
def test_the_task_retries_a_failing_batch_up_to_the_cap(team, django_capture_on_commit_callbacks,
                                                         monkeypatch):
    from worker.audits import run_audit_batch

    add_rule(team, "no_error", "G !error")
    add_sessions(team, {"s": [{"labels": ["error"]}]})
    calls = []

    def broken(*args):
        calls.append(1)
        raise RuntimeError("flaky")

    monkeypatch.setattr(services, "compute_batch", broken)
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)

    assert run_audit_batch.delay(run.batches.get().id).get() == "failed"

    assert len(calls) == 3
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "flaky" in run.error


def test_events_out_of_order_are_refused_not_monitored(team, monkeypatch):
    add_rule(team, "no_error", "G !error")
    session = add_sessions(team, {"s": [{"labels": []}, {"labels": ["error"]}]})["s"]
    rows = list(services.session_events([session.id]))
    versions = list(team.workspace.rules.get().versions.all())
    ruleset, labeling, ids = ruleset_for(versions), labeling_from_snapshot([]), [versions[0].id]
    monkeypatch.setattr(services, "session_events", lambda ids: iter(reversed(rows)))
    with pytest.raises(services.OutOfOrder, match="step 0 came after 1"):
        services.compute_batch([session.id], ruleset, labeling, ids)
    monkeypatch.setattr(services, "session_events", lambda ids: iter([rows[0], (-1, *rows[1][1:]),
                                                                (session.id, *rows[1][1:])]))
    with pytest.raises(services.OutOfOrder, match="did not come together"):
        services.compute_batch([session.id, -1], ruleset, labeling, ids)


def test_a_session_deleted_after_planning_is_left_out(team, django_capture_on_commit_callbacks):
    add_rule(team, "no_error", "G !error")
    sessions = add_sessions(team, {"kept": [{"labels": ["error"]}], "gone": [{"labels": []}]})
    with django_capture_on_commit_callbacks(execute=False):
        run = services.start_audit(team.workspace, None, None, team.auditor)
    sessions["gone"].delete()

    assert services.run_batch(run.batches.get().id) == "done"

    assert [key[0] for key in stored(run)] == ["kept"]
    run.refresh_from_db()
    assert run.status == RunStatus.DONE


# --- work whose task a broker lost -----------------------------------------------------------

def _age(run, seconds: float) -> None:
    """Make a run and its batches look as if their last progress was ``seconds`` ago."""
    then = timezone.now() - timedelta(seconds=seconds)
    AuditRun.objects.filter(pk=run.pk).update(created_at=then)
    run.batches.update(started_at=None, finished_at=None)


def test_a_run_whose_tasks_were_lost_is_requeued_and_completes(
        team, start, django_capture_on_commit_callbacks):
    add_rules(team, RULES[:3])
    add_sessions(team, random_sessions(seed=5, count=6, high=8))
    with override_settings(AUDIT_BATCH_SIZE=2):
        expected = stored(start(team))
        # The broker loses every message of the second run (on_commit callbacks not executed).
        with django_capture_on_commit_callbacks(execute=False):
            lost = services.start_audit(team.workspace, None, None, team.auditor)
    _age(lost, 120)

    with django_capture_on_commit_callbacks(execute=True):
        requeued = services.requeue_stalled_audits(stall_seconds=60)

    lost.refresh_from_db()
    assert requeued == [lost.id] and lost.status == RunStatus.DONE
    assert stored(lost) == expected
    entry = AuditLogEntry.objects.get(action="audit.requeued")
    assert entry.actor is None and entry.details == {"batches": 3, "reason": "no progress for 60 s"}


def test_runs_with_recent_progress_are_left_alone(team, django_capture_on_commit_callbacks):
    add_rules(team, RULES[:2])
    add_sessions(team, random_sessions(seed=6, count=4, high=5))
    with (override_settings(AUDIT_BATCH_SIZE=2),
          django_capture_on_commit_callbacks(execute=False)):
        fresh = services.start_audit(team.workspace, None, None, team.auditor)
        working = services.start_audit(team.workspace, None, None, team.auditor)
    _age(working, 600)
    working.batches.filter(index=0).update(started_at=timezone.now())  # a batch just claimed

    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        assert services.requeue_stalled_audits(stall_seconds=60) == []
    assert enqueued == []

    # Requeued once per stall period, not on every sweep.
    _age(working, 600)
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        assert services.requeue_stalled_audits(stall_seconds=60) == [working.id]
        assert services.requeue_stalled_audits(stall_seconds=60) == []
    assert len(enqueued) == 1
    fresh.refresh_from_db()
    assert fresh.requeued_at is None
