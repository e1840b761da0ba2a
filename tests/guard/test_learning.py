"""Learning risk models from the stored sessions: the task's result equals the pure learner's,
progress and counts are recorded, failures are kept with their reason, the live rules changing
asks for a model again, and ``current_model`` is a lookup once loaded."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from studio import tasks
from studio.guard import learning
from studio.guard.models import LearnedRiskModel, ModelStatus
from studio.labeling import Labeling
from studio.live.context import context_for
from studio.monitor import RuleSet as CompiledRules
from studio.risk.abstraction import Abstraction
from studio.risk.predictor import ANY_RULE, RiskModel
from studio.rules import services as rule_services
from studio.rules.models import RuleSet, RuleVersion
from studio.traces.models import TraceSession
from studio.workspaces.models import AuditLogEntry
from tests.audits.helpers import add_labeler, add_rule, add_sessions, make_team

RULES = [("approval", "G(pay -> O approved)"), ("reply", "G(ask -> F answer)")]
ATOMS = ["pay", "approved", "ask", "answer", "other"]


def sessions(count: int, seed: int = 0, atoms=ATOMS) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    return {f"s{seed}-{i:03d}": [{"labels": rng.sample(atoms, rng.randint(0, 2))}
                                 for _ in range(rng.randint(1, 6))]
            for i in range(count)}


@pytest.fixture
def team_slug():
    return "learn"


@pytest.fixture
def team(team):
    for name, formula in RULES:
        add_rule(team, name, formula)
    return team


@pytest.fixture
def learn(django_capture_on_commit_callbacks):
    """request_model with its task run (in-process) when the transaction commits."""

    def learn(team, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            made = learning.request_model(team.workspace, team.author, **kwargs)
        made.refresh_from_db()
        return made

    return learn


def expected_model(logs: dict[str, list[dict]]) -> RiskModel:
    """The pure learner over the same events, labelled as the workspace labels them."""
    labeling = Labeling([])
    labelled = []
    for external, events in logs.items():
        previous, out = None, []
        for step, event in enumerate(events):
            full = {"session": external, "step": step, "lifeline": "", "input": None,
                    "output": None, "data": {}, "labels": event["labels"]}
            out.append(labeling.label(full, previous))
            previous = full
        labelled.append(out)
    return RiskModel.learn(Abstraction(CompiledRules(RULES)), labelled)


def test_a_model_is_learned_from_the_finished_sessions(team, learn):
    logs = sessions(40)
    add_sessions(team, logs)
    # An open live session is not learned from: its end is not known yet.
    open_live = add_sessions(team, {"live-1": [{"labels": ["pay"]}]})["live-1"]
    TraceSession.objects.filter(pk=open_live.pk).update(source="live")
    made = learn(team)
    assert made.status == ModelStatus.READY, made.error
    assert made.versions == [[name, RuleVersion.objects.get(rule__name=name).id]
                             for name, _ in RULES]
    assert (made.sessions, made.progress_done, made.progress_total) == (40, 40, 40)
    assert made.events == sum(len(events) for events in logs.values())
    assert made.started_at <= made.finished_at and made.reason == "on demand"
    assert made.requested_by == team.author
    assert AuditLogEntry.objects.filter(action="risk_model.requested", target_id=made.pk).exists()

    stored = learning.load_model(made.pk)
    expected = expected_model(logs)
    assert made.states == len(stored.states) == len(expected.states)
    assert set(stored.states) == set(expected.states)
    for state in expected.states:
        ours, theirs = stored.answer(state, 3), expected.answer(state, 3)
        assert ours.risk == pytest.approx(theirs.risk, abs=1e-12)
        assert ours.backed == theirs.backed


def test_at_most_the_newest_sessions_are_learned_from(team, learn):
    add_sessions(team, sessions(10, seed=1, atoms=["ask", "other"]))   # older
    add_sessions(team, sessions(5, seed=2, atoms=["pay", "answer"]))   # newer
    with override_settings(GUARD_MODEL_MAX_SESSIONS=5):
        made = learn(team)
    assert made.status == ModelStatus.READY and made.sessions == 5
    seen = {atom for state in learning.load_model(made.pk).states for atom in state.labels}
    assert seen <= {"pay", "answer"} and seen


def test_one_model_waits_at_a_time(team):
    # The task is not run here: the records stay queued.
    first = learning.request_model(team.workspace, team.author)
    again = learning.request_model(team.workspace, team.reviewer, "again")
    assert again.pk == first.pk
    # The live rules change while it waits: the waiting one is retargeted, not duplicated.
    add_rule(team, "reply", "G(ask -> F[0,2] answer)")
    retargeted = learning.request_model(team.workspace, None, "the live rules changed")
    assert retargeted.pk == first.pk
    assert retargeted.versions[1] == ["reply", RuleVersion.objects.filter(
        rule__name="reply").order_by("-number").first().id]
    assert LearnedRiskModel.objects.count() == 1
    # Once it runs, a request for other versions starts nothing: it is noted on the running
    # one as the follow-up its end will queue.
    LearnedRiskModel.objects.filter(pk=first.pk).update(status=ModelStatus.RUNNING,
                                                        started_at=timezone.now())
    add_rule(team, "approval", "G(pay -> O approved) & G !delete")
    during = learning.request_model(team.workspace)
    assert during.pk == first.pk and LearnedRiskModel.objects.count() == 1
    live_key = context_for(team.workspace).versions_key
    assert during.follow_up["versions"] == live_key and not during.follow_up["again"]


def test_nothing_to_learn_without_live_rules(db):
    team = make_team("empty")
    with pytest.raises(learning.NothingToLearn, match="no approved rule is monitored live"):
        learning.request_model(team.workspace)
    assert not LearnedRiskModel.objects.exists()


def test_a_failure_is_stored_with_its_reason(team, learn, monkeypatch):
    add_sessions(team, sessions(5))

    def broken(self, *args, **kwargs):
        raise RuntimeError("the solver ran out of patience")

    monkeypatch.setattr("studio.risk.predictor.Traces.model", broken)
    made = learn(team)
    assert made.status == ModelStatus.FAILED and made.finished_at is not None
    assert made.error == ("learning stopped on an unexpected error (RuntimeError: the solver "
                          "ran out of patience)")
    assert made.model is None
    assert learning.current_model(team.workspace, made.versions) is None


def test_a_model_for_versions_that_are_gone_fails_saying_so(team):
    made = learning.request_model(team.workspace)
    RuleVersion.objects.filter(rule__name="reply").delete()
    assert learning.learn_model(made.pk) == "failed"
    made.refresh_from_db()
    assert made.status == ModelStatus.FAILED
    assert "no longer exist: reply (version id" in made.error


def test_a_duplicate_delivery_does_nothing(team, learn):
    add_sessions(team, sessions(3))
    made = learn(team)
    assert made.status == ModelStatus.READY
    assert learning.learn_model(made.pk) == "gone"
    again = LearnedRiskModel.objects.get(pk=made.pk)
    assert (again.status, again.finished_at, again.model) == (made.status, made.finished_at,
                                                              made.model)


def test_work_a_worker_lost_is_marked_failed(team):
    made = learning.request_model(team.workspace)
    LearnedRiskModel.objects.filter(pk=made.pk).update(
        status=ModelStatus.RUNNING, started_at=timezone.now() - timedelta(hours=3))
    with override_settings(GUARD_MODEL_STALL_SECONDS=3600):
        assert learning.mark_stalled(team.workspace) == 1
        made.refresh_from_db()
        assert made.status == ModelStatus.FAILED and "the worker stopped" in made.error
        # A queued one whose message was lost, too; a new request makes a new record.
        lost = learning.request_model(team.workspace)
        assert lost.pk != made.pk
        LearnedRiskModel.objects.filter(pk=lost.pk).update(
            created_at=timezone.now() - timedelta(hours=3))
        fresh = learning.request_model(team.workspace)
    lost.refresh_from_db()
    assert lost.status == ModelStatus.FAILED and "no worker took" in lost.error
    assert fresh.pk not in (made.pk, lost.pk) and fresh.status == ModelStatus.QUEUED


def test_a_broker_that_is_down_fails_the_record(team, django_capture_on_commit_callbacks,
                                                monkeypatch):
    from kombu.exceptions import OperationalError

    from worker import guard

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(guard.learn_risk_model, "apply_async", down)
    with django_capture_on_commit_callbacks(execute=True):
        made = learning.request_model(team.workspace)
    made.refresh_from_db()
    assert made.status == ModelStatus.FAILED and "task queue is unavailable" in made.error


# -- learning again when the live rules change ------------------------------------------------

def test_the_live_rules_changing_asks_for_a_model_again(team, learn,
                                                        django_capture_on_commit_callbacks):
    add_sessions(team, sessions(8))
    first = learn(team)
    assert first.status == ModelStatus.READY
    # A draft changes nothing live.
    reply = RuleVersion.objects.get(rule__name="reply").rule
    with django_capture_on_commit_callbacks(execute=True):
        rule_services.new_version(reply, team.author, formula="G(ask -> F[0,3] answer)")
    assert LearnedRiskModel.objects.count() == 1
    # A rule set marked live with one rule: the live rules are now that rule only.
    with django_capture_on_commit_callbacks(execute=True):
        shop = rule_services.create_rule_set(team.workspace, team.author, "shop",
                                             rule_ids=[reply.pk])
        rule_services.set_live(shop, team.author, True)
    second = LearnedRiskModel.objects.order_by("-id").first()
    assert second.pk != first.pk and second.reason == "the live rules changed"
    assert second.status == ModelStatus.READY, second.error
    assert [rule for rule, _ in second.versions] == ["reply"]
    # A version approved into the live rule set: learned again, for it.
    version = add_rule(team, "reply", "G(ask -> F answer) & G !pay", approved=False)
    with django_capture_on_commit_callbacks(execute=True):
        RuleVersion.objects.filter(pk=version.pk).update()   # nothing: no signal, no model
    assert LearnedRiskModel.objects.count() == 2
    with django_capture_on_commit_callbacks(execute=True):
        version.status = "approved"
        version.reviewer = team.reviewer
        version.save()
    third = LearnedRiskModel.objects.order_by("-id").first()
    assert third.pk != second.pk and third.versions == [["reply", version.pk]]
    # Unmarking the set: all the rules again.
    with django_capture_on_commit_callbacks(execute=True):
        rule_services.set_live(RuleSet.objects.get(pk=shop.pk), team.author, False)
    fourth = LearnedRiskModel.objects.order_by("-id").first()
    assert [rule for rule, _ in fourth.versions] == ["approval", "reply"]
    assert LearnedRiskModel.objects.count() == 4


def test_a_labeler_changing_asks_for_a_model_again(team, learn,
                                                   django_capture_on_commit_callbacks):
    add_sessions(team, sessions(4))
    first = learn(team)
    with django_capture_on_commit_callbacks(execute=True):
        add_labeler(team, "pay", "regex", {"path": "input", "pattern": "pay"})
    second = LearnedRiskModel.objects.order_by("-id").first()
    assert second.pk != first.pk and second.reason == "the labelers changed"
    assert second.versions == first.versions and second.status == ModelStatus.READY


def test_a_workspace_that_never_learned_a_model_is_not_made_to(
        team, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        add_rule(team, "refund", "G(refund -> O approved)")
    assert not LearnedRiskModel.objects.exists()


# -- the newest model, for the guard ----------------------------------------------------------

def test_current_model_is_a_lookup_once_loaded(team, learn, django_assert_num_queries):
    add_sessions(team, sessions(12))
    made = learn(team)
    key = context_for(team.workspace).versions_key
    learning.clear_caches()
    model = learning.current_model(team.workspace, key)
    assert model is not None and len(model.states) == made.states
    with django_assert_num_queries(0):
        for _ in range(50):
            assert learning.current_model(team.workspace, key) is model
    # Which model is newest is asked again after the check interval: one query, same model.
    learning.forget_newest()
    with django_assert_num_queries(1):
        assert learning.current_model(team.workspace, key) is model
    learning.forget_newest()
    with override_settings(GUARD_MODEL_CHECK_SECONDS=0):   # asked every time
        for _ in range(2):
            with django_assert_num_queries(1):
                assert learning.current_model(team.workspace, key) is model
    # Risks are solved once per rule and horizon, then kept.
    assert model.risks(ANY_RULE, 5) is model.risks(ANY_RULE, 5)
    # Other versions: no model.
    assert learning.current_model(team.workspace, [["approval", key[0][1]]]) is None
    # A newer model becoming ready in this process is used at once (no waiting for the
    # interval): learning it forgot which was newest.
    newer = learn(team)
    assert newer.pk != made.pk and newer.status == ModelStatus.READY
    fresh = learning.current_model(team.workspace, key)
    assert fresh is not model and fresh is learning.load_model(newer.pk)


def test_a_model_that_cannot_be_loaded_counts_as_none(team, learn, caplog):
    add_sessions(team, sessions(4))
    made = learn(team)
    learning.clear_caches()
    LearnedRiskModel.objects.filter(pk=made.pk).update(model={**made.model, "format": 99})
    assert learning.current_model(team.workspace, made.versions) is None
    assert "cannot be loaded" in caplog.text
    with pytest.raises(learning.ModelUnreadable, match="format"):
        learning.load_model(made.pk)


def test_current_model_checks_again_after_the_interval(team, learn, django_assert_num_queries):
    add_sessions(team, sessions(4))
    learn(team)
    key = context_for(team.workspace).versions_key
    with override_settings(GUARD_MODEL_CHECK_SECONDS=0.2):
        model = learning.current_model(team.workspace, key)
        with django_assert_num_queries(0):
            learning.current_model(team.workspace, key)
        time.sleep(0.25)
        with django_assert_num_queries(1):
            assert learning.current_model(team.workspace, key) is model


# -- one relearn per workspace at a time -------------------------------------------------------

def _edit(team, n: int) -> RuleVersion:
    """An edit of the live rules: a new approved version of "reply" (the n-th bound)."""
    return add_rule(team, "reply", f"G(ask -> F[0,{n}] answer)")


def test_edits_while_one_runs_leave_one_follow_up(team, monkeypatch,
                                                  django_capture_on_commit_callbacks):
    """Three edits land while a model is learned: nothing else starts; finishing queues one
    follow-up, for the last edit's versions, and that one learns them."""
    add_sessions(team, sessions(6))
    first = learning.request_model(team.workspace)   # queued; its task is run by hand below
    learn_for_real = learning._learn

    def edits_meanwhile(row, phases):
        for n in (2, 3, 4):
            _edit(team, n)
            learning.relearn_if_rules_changed(team.workspace.pk)   # as the signal does
            assert LearnedRiskModel.objects.count() == 1
        return learn_for_real(row, phases)

    monkeypatch.setattr(learning, "_learn", edits_meanwhile)
    with django_capture_on_commit_callbacks() as enqueued:
        assert learning.learn_model(first.pk) == "ready"
    monkeypatch.setattr(learning, "_learn", learn_for_real)
    first.refresh_from_db()
    assert first.status == ModelStatus.READY and first.follow_up is None
    follow = LearnedRiskModel.objects.exclude(pk=first.pk).get()
    final_key = context_for(team.workspace).versions_key
    assert follow.status == ModelStatus.QUEUED and follow.versions == final_key
    assert follow.reason == "the live rules changed"
    # Exactly one task is sent, after the commit (the rest: the edits' signals).
    sends = [f for f in enqueued if getattr(f, "task_name", None) == tasks.LEARN_RISK_MODEL]
    # (Each approval also asks for its anticipation to be searched ahead: not counted here.)
    ahead = [f for f in enqueued
             if getattr(f, "__qualname__", "").startswith("_after_approval")]
    assert len(sends) == 1 and len(enqueued) - len(ahead) == 4
    with django_capture_on_commit_callbacks(execute=True):
        for callback in enqueued:   # the signals find the follow-up asked for; the task runs
            callback()
    follow.refresh_from_db()
    assert follow.status == ModelStatus.READY and follow.versions == final_key
    assert LearnedRiskModel.objects.count() == 2
    # The audit log says the edits were noted on the running one, not started.
    noted = AuditLogEntry.objects.filter(action="risk_model.requested",
                                         details__after_running=True)
    assert noted.count() == 3 and {e.target_id for e in noted} == {first.pk}


def test_rules_edited_back_while_one_runs_need_no_follow_up(team):
    add_sessions(team, sessions(4))
    first = learning.request_model(team.workspace)
    LearnedRiskModel.objects.filter(pk=first.pk).update(status=ModelStatus.RUNNING,
                                                        started_at=timezone.now())
    edited = _edit(team, 2)
    learning.relearn_if_rules_changed(team.workspace.pk)
    assert LearnedRiskModel.objects.get(pk=first.pk).follow_up is not None
    edited.delete()   # back to the versions it is learning (the signal asks again)
    learning.relearn_if_rules_changed(team.workspace.pk)
    first.refresh_from_db()
    assert first.follow_up is None and LearnedRiskModel.objects.count() == 1


def test_a_labeler_changing_while_one_runs_asks_for_one_more(team):
    """The same versions read other atoms now: the running one read the old labelers."""
    first = learning.request_model(team.workspace)
    LearnedRiskModel.objects.filter(pk=first.pk).update(status=ModelStatus.RUNNING,
                                                        started_at=timezone.now())
    add_labeler(team, "pay", "regex", {"path": "input", "pattern": "pay"})
    learning.relearn_if_rules_changed(team.workspace.pk, labelers=True)
    first.refresh_from_db()
    assert first.follow_up["versions"] == first.versions and first.follow_up["again"]
    # A later edit keeps it wanted, for the newest versions.
    _edit(team, 2)
    learning.relearn_if_rules_changed(team.workspace.pk)
    first.refresh_from_db()
    assert first.follow_up["again"]
    assert first.follow_up["versions"] == context_for(team.workspace).versions_key


def test_a_failed_relearn_still_queues_its_follow_up(team, monkeypatch):
    first = learning.request_model(team.workspace)

    def broken(row, phases):
        _edit(team, 5)
        learning.relearn_if_rules_changed(team.workspace.pk)
        raise RuntimeError("out of patience")

    monkeypatch.setattr(learning, "_learn", broken)
    assert learning.learn_model(first.pk) == "failed"
    follow = LearnedRiskModel.objects.exclude(pk=first.pk).get()
    assert follow.status == ModelStatus.QUEUED
    assert follow.versions == context_for(team.workspace).versions_key


def test_a_lost_worker_s_follow_up_starts_when_its_claim_expires(team):
    """A worker killed while learning: its record stays running until it is taken as lost;
    then (page, request or beat's sweep) the follow-up it carried is queued."""
    other = make_team("elsewhere")
    add_rule(other, "approval", "G(pay -> O approved)")
    stuck = learning.request_model(team.workspace)
    LearnedRiskModel.objects.filter(pk=stuck.pk).update(status=ModelStatus.RUNNING,
                                                        started_at=timezone.now())
    _edit(team, 2)
    learning.relearn_if_rules_changed(team.workspace.pk)
    LearnedRiskModel.objects.filter(pk=stuck.pk).update(   # then its worker is lost
        started_at=timezone.now() - timedelta(minutes=20))
    fresh = learning.request_model(other.workspace)
    LearnedRiskModel.objects.filter(pk=fresh.pk).update(status=ModelStatus.RUNNING,
                                                        started_at=timezone.now())
    with override_settings(GUARD_MODEL_STALL_SECONDS=600):
        assert LearnedRiskModel.objects.get(pk=stuck.pk).status == ModelStatus.RUNNING
        from worker.guard import expire_stalled_risk_models

        assert expire_stalled_risk_models() == 1
        assert expire_stalled_risk_models() == 0
    stuck.refresh_from_db()
    assert stuck.status == ModelStatus.FAILED and "the worker stopped" in stuck.error
    assert stuck.follow_up is None
    follow = LearnedRiskModel.objects.filter(workspace=team.workspace).exclude(
        pk=stuck.pk).get()
    assert follow.status == ModelStatus.QUEUED
    assert follow.versions == context_for(team.workspace).versions_key
    # The other workspace's relearn, running for a short while, is left alone.
    assert LearnedRiskModel.objects.get(pk=fresh.pk).status == ModelStatus.RUNNING


# Operations on one workspace, in any order: edits of the live rules (to one of a few bounds),
# a labeler added, a worker taking the queued task, a worker finishing (or failing) the running
# one, and a running one's worker lost (its claim expires).
operations = st.lists(st.one_of(
    st.tuples(st.just("edit"), st.integers(1, 3)),
    st.tuples(st.just("labeler"), st.just(0)),
    st.tuples(st.just("take"), st.just(0)),
    st.tuples(st.just("finish"), st.booleans()),
    st.tuples(st.just("lose"), st.just(0))), max_size=14)


@hyp_settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations)
@example([("take", 0), ("edit", 2), ("edit", 3)])   # edits while one runs
def test_relearning_coalesces_whatever_happens_in_between(team, operations):
    """Checked against what happened: never more than one record queued or running in the
    workspace, after any operation; once the work drains, the last model started began after
    the last change (of rules or labelers), for the live versions, and is the newest ready
    one unless it failed."""
    LearnedRiskModel.objects.filter(workspace=team.workspace).delete()
    team.workspace.labelers.all().delete()
    pending_tasks: list[int] = []   # what the broker holds, in order
    first = learning.request_model(team.workspace)
    pending_tasks.append(first.pk)
    last_change = 0   # the step of the last edit or labeler change
    step = 0
    sent = set(pending_tasks)
    started_at_step: dict[int, int] = {}

    def sync_sent():
        for pk in LearnedRiskModel.objects.filter(workspace=team.workspace,
                                                  status=ModelStatus.QUEUED).values_list(
                                                      "id", flat=True):
            if pk not in sent:
                sent.add(pk)
                pending_tasks.append(pk)

    def take():
        nonlocal step
        while pending_tasks:
            pk = pending_tasks.pop(0)
            if LearnedRiskModel.objects.filter(pk=pk, status=ModelStatus.QUEUED).update(
                    status=ModelStatus.RUNNING, started_at=timezone.now()):
                started_at_step[pk] = step
                return

    def finish(ok: bool):
        running = LearnedRiskModel.objects.filter(workspace=team.workspace,
                                                  status=ModelStatus.RUNNING).first()
        if running is not None:
            if ok:
                learning._finish(running, status=ModelStatus.READY,
                                 finished_at=timezone.now(), model={})
            else:
                learning._finish(running, status=ModelStatus.FAILED,
                                 finished_at=timezone.now(), error="failed on purpose")

    for kind, argument in operations:
        step += 1
        if kind == "edit":
            _edit(team, argument)
            last_change = step
            learning.relearn_if_rules_changed(team.workspace.pk)
        elif kind == "labeler":
            add_labeler(team, f"atom{step}", "regex", {"path": "input", "pattern": "x"})
            last_change = step
            learning.relearn_if_rules_changed(team.workspace.pk, labelers=True)
        elif kind == "take":
            take()
        elif kind == "finish":
            finish(argument)
        else:
            LearnedRiskModel.objects.filter(workspace=team.workspace,
                                            status=ModelStatus.RUNNING).update(
                started_at=timezone.now() - timedelta(hours=1))
            with override_settings(GUARD_MODEL_STALL_SECONDS=600):
                learning.expire_stalled()
        sync_sent()
        active = LearnedRiskModel.objects.filter(workspace=team.workspace,
                                                 status__in=learning.ACTIVE).count()
        assert active <= 1
    # Drain: workers take and finish everything, successfully.
    for _ in range(10):
        take()
        finish(True)
        sync_sent()
        if not LearnedRiskModel.objects.filter(workspace=team.workspace,
                                               status__in=learning.ACTIVE).exists():
            break
    assert not LearnedRiskModel.objects.filter(workspace=team.workspace,
                                               status__in=learning.ACTIVE).exists()
    # The last one started began after the last change, for the live versions; it is the
    # newest ready model unless it failed or its worker was lost (then nothing newer is).
    last = LearnedRiskModel.objects.get(pk=max(started_at_step, key=started_at_step.get))
    assert started_at_step[last.pk] >= last_change
    assert last.versions == context_for(team.workspace).versions_key
    newest = (LearnedRiskModel.objects.filter(workspace=team.workspace,
                                              status=ModelStatus.READY)
              .order_by("-finished_at", "-id").first())
    assert last.status == ModelStatus.FAILED or last == newest


# -- the task on a real worker ----------------------------------------------------------------

# A Redis database of this test file's own (helper 5's: 5 + 8), and a queue per test: other
# runs' workers never take these tasks.
WORKER_REDIS = "redis://127.0.0.1:6379/13"


def _real_services_or_skip() -> None:
    """Postgres (the worker shares the test database) and Redis, or the test is skipped - and
    fails under CI=true, where they must be there."""
    reason = None
    if connection.vendor != "postgresql":
        reason = "needs Postgres: the worker must share the test database"
    else:
        try:
            import redis

            redis.Redis.from_url(WORKER_REDIS, socket_connect_timeout=1,
                                 socket_timeout=2).ping()
        except Exception as exc:  # noqa: BLE001 - any failure means no usable Redis
            reason = f"needs Redis at {WORKER_REDIS} for a real Celery worker ({exc})"
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI: {reason}")
        pytest.skip(reason)


def worker_env(queue: str) -> dict:
    from tests.audits.test_worker_kill import _database_url

    return {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": WORKER_REDIS,
            "CELERY_QUEUE": queue, "DJANGO_SETTINGS_MODULE": "studio.settings",
            "PYTHONUNBUFFERED": "1"}


@pytest.mark.django_db(transaction=True)
def test_the_task_learns_on_a_real_worker(tmp_path):
    """``request_model`` in a process with a broker, the task run by a ``celery worker``
    (Postgres and Redis needed: skipped without them, failed under CI=true)."""
    _real_services_or_skip()
    from tests.audits.test_worker_kill import Workers
    team = make_team("worker")
    for name, formula in RULES:
        add_rule(team, name, formula)
    add_sessions(team, sessions(30, seed=5))
    queue = f"guard-test-{uuid.uuid4().hex[:12]}"
    env = worker_env(queue)
    # Only the models queue: the task must be routed there (a worker of the default queue
    # would never see it, and this one sees nothing else).
    workers = Workers(env, f"{queue}-models", tmp_path)
    try:
        workers.start()
        script = ("import django\n"
                  "django.setup()\n"
                  "import worker  # noqa: F401 - the Celery app, configured from settings\n"
                  "from studio.guard.learning import request_model\n"
                  "from studio.workspaces.models import Workspace\n"
                  "print(request_model(Workspace.objects.get(slug='worker')).id)\n")
        producer = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                  text=True, timeout=120, check=False)
        assert producer.returncode == 0, producer.stderr
        made = LearnedRiskModel.objects.get(pk=int(producer.stdout.split()[-1]))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            made.refresh_from_db()
            if made.status in (ModelStatus.READY, ModelStatus.FAILED):
                break
            time.sleep(0.1)
        assert made.status == ModelStatus.READY, f"{made.status} {made.error}\n" \
                                                 f"{workers.output()}"
        assert made.sessions == 30 and made.progress_done == 30
        model = learning.current_model(team.workspace, made.versions)
        assert model is not None and len(model.states) == made.states
    finally:
        workers.stop_all()


EDITS = """
import sys, time
import django
django.setup()
import worker  # noqa: F401 - the Celery app, configured from settings
from studio.rules.models import Rule, RuleVersion
from studio.workspaces.models import Workspace
workspace = Workspace.objects.get(slug=sys.argv[1])
rule = Rule.objects.get(workspace=workspace, name="escalation_acked")
model = rule.versions.order_by("-number").first()
for n in range(int(sys.argv[2])):
    # Each edit commits on its own; its signal asks for a model after the commit.
    RuleVersion.objects.create(rule=rule, number=model.number + 1 + n,
                               formula=f"G(escalate -> F[0,{4 + n}] ack)", author=model.author,
                               counting=model.counting, status="approved",
                               reviewer=model.reviewer)
    time.sleep(float(sys.argv[3]))
print(time.time())   # when the last edit had committed
"""


@pytest.mark.django_db(transaction=True)
def test_edits_in_quick_succession_learn_at_most_twice_on_a_real_worker(tmp_path):
    """Issue 24 item 6: edits of the live rules in quick succession (all within one relearn), a
    real worker with two processes on the models queue: at most two relearns run (the one the
    first edit started and one follow-up), never at the same time, and the final model is for
    the last edit."""
    _real_services_or_skip()
    from bench.workloads import RULES_20, agent_events
    from tests.audits.helpers import copy_sessions
    from tests.audits.test_worker_kill import Workers
    team = make_team("edits")
    for name, formula in RULES_20:
        add_rule(team, name, formula)
    # Enough sessions that one relearn (about 3 s) outlasts all the edits (about 0.5 s).
    stream = agent_events(700 * 20, seed=9)
    copy_sessions(team, {f"s{k}": stream[k * 20:(k + 1) * 20] for k in range(700)})
    first = learning.request_model(team.workspace)   # learned here (no broker in this process)
    first.refresh_from_db()
    assert first.status == ModelStatus.READY, first.error
    queue = f"guard-edits-{uuid.uuid4().hex[:12]}"
    env = worker_env(queue)
    workers = Workers(env, f"{queue}-models", tmp_path)
    edits = 6
    try:
        workers.start()
        # The worker connected and idle, as in production: until its log says it is ready.
        ready_by = time.monotonic() + 60
        while " ready." not in workers.output(None) and time.monotonic() < ready_by:
            time.sleep(0.1)
        producer = subprocess.run([sys.executable, "-c", EDITS, "edits", str(edits), "0.05"],
                                  env=env, capture_output=True, text=True, timeout=120,
                                  check=False)
        assert producer.returncode == 0, producer.stderr
        quiet_since, deadline = None, time.monotonic() + 180
        while time.monotonic() < deadline:
            busy = LearnedRiskModel.objects.filter(workspace=team.workspace,
                                                   status__in=learning.ACTIVE).exists()
            if busy:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 2:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the relearns did not finish\n{workers.output()}")
    finally:
        workers.stop_all()
    relearns = list(LearnedRiskModel.objects.filter(workspace=team.workspace)
                    .exclude(pk=first.pk).order_by("started_at"))
    last_edit_at = float(producer.stdout.split()[-1])
    assert relearns and last_edit_at < relearns[0].finished_at.timestamp(), (
        "the edits were not all made while the first relearn ran (the machine is too slow for "
        "this test's timing): later edits rightly ask for one more")
    assert 1 <= len(relearns) <= 2, ([(r.pk, r.status, r.reason, r.started_at, r.finished_at)
                                      for r in relearns], producer.stderr, workers.output())
    assert all(r.status == ModelStatus.READY for r in relearns), \
        [(r.status, r.error) for r in relearns]
    if len(relearns) == 2:
        assert relearns[1].started_at >= relearns[0].finished_at   # one after the other
    final_key = context_for(team.workspace).versions_key
    last_edit = RuleVersion.objects.get(pk=dict(map(tuple, final_key))["escalation_acked"])
    assert last_edit.formula == f"G(escalate -> F[0,{3 + edits}] ack)"
    assert relearns[-1].versions == final_key
    assert learning.current_model(team.workspace, final_key) is not None
    # Edits came while one ran (the worker took the first edit's at once): they were noted on
    # it, and started nothing.
    noted = AuditLogEntry.objects.filter(workspace=team.workspace,
                                         action="risk_model.requested",
                                         details__after_running=True).count()
    assert noted >= 1, f"no edit came while a relearn ran: nothing was coalesced\n" \
                       f"{workers.output()}"
