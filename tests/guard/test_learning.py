"""Learning risk models from the stored sessions: the task's result equals the pure learner's,
progress and counts are recorded, failures are kept with their reason, the live rules changing
asks for a model again, and ``current_model`` is a lookup once loaded."""

from __future__ import annotations

import random
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import override_settings
from django.utils import timezone

from studio.guard import learning
from studio.guard.models import LearnedRiskModel, ModelStatus
from studio.labeling import Labeling
from studio.live import services as live
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


@pytest.fixture(autouse=True)
def _fresh_caches():
    live.clear_caches()
    learning.clear_caches()
    yield
    live.clear_caches()
    learning.clear_caches()


def sessions(count: int, seed: int = 0, atoms=ATOMS) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    return {f"s{seed}-{i:03d}": [{"labels": rng.sample(atoms, rng.randint(0, 2))}
                                 for _ in range(rng.randint(1, 6))]
            for i in range(count)}


@pytest.fixture
def team(db):
    team = make_team("learn")
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
    # Once it runs, a request for other versions is a new record.
    LearnedRiskModel.objects.filter(pk=first.pk).update(status=ModelStatus.RUNNING,
                                                        started_at=timezone.now())
    add_rule(team, "approval", "G(pay -> O approved) & G !delete")
    newer = learning.request_model(team.workspace)
    assert newer.pk != first.pk and LearnedRiskModel.objects.count() == 2


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

    monkeypatch.setattr(guard.learn_risk_model, "delay", down)
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
    key = live.context_for(team.workspace).versions_key
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
    key = live.context_for(team.workspace).versions_key
    with override_settings(GUARD_MODEL_CHECK_SECONDS=0.2):
        model = learning.current_model(team.workspace, key)
        with django_assert_num_queries(0):
            learning.current_model(team.workspace, key)
        time.sleep(0.25)
        with django_assert_num_queries(1):
            assert learning.current_model(team.workspace, key) is model


# -- the task on a real worker ----------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_the_task_learns_on_a_real_worker(tmp_path):
    """``request_model`` in a process with a broker, the task run by a ``celery worker``
    (Postgres and Redis needed: skipped without them, like the audits' worker test)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres: the worker must share the test database")
    from tests.audits.test_worker_kill import Workers, _database_url, _redis_or_skip

    _redis_or_skip()
    team = make_team("worker")
    for name, formula in RULES:
        add_rule(team, name, formula)
    add_sessions(team, sessions(30, seed=5))
    queue = f"guard-test-{uuid.uuid4().hex[:12]}"
    env = {**__import__("os").environ, "DATABASE_URL": _database_url(),
           "CELERY_BROKER_URL": "redis://127.0.0.1:6379/7", "CELERY_QUEUE": queue,
           "DJANGO_SETTINGS_MODULE": "studio.settings", "PYTHONUNBUFFERED": "1"}
    workers = Workers(env, queue, tmp_path)
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
