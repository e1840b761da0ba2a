"""Issue 27, item 3: on the embedded default (no broker, tasks in-process) a risk model is
learned after the response, on the process's background thread, never inside the request that
asked; triggers that come while it waits coalesce into it; live sessions that end (the end call)
ask for a model again and are learned from, with the guard's refusals counted.  Real requests,
real (small) learning: nothing here is a stub."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.test.utils import override_settings
from django.urls import reverse

from studio import tasks
from studio.guard import learning
from studio.guard import services as guard_services
from studio.guard.models import LearnedRiskModel, ModelStatus
from studio.live.ingest import clear_caches
from studio.traces.models import TraceSession
from tests.live.conftest import Agent, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}
SHIP = {"output": {"tool": "ship", "args": {}}}
LOOK = {"output": {"tool": "look", "args": {}}}
DELAY = 5.0   # long enough for the bursts below to arrive before the learning starts


@pytest.fixture(autouse=True)
def _in_background():
    clear_caches()
    learning.clear_caches()
    guard_services.forget_policies()
    assert tasks.app.conf.task_always_eager   # the embedded default: no broker
    with override_settings(GUARD_MODEL_IN_BACKGROUND=True, GUARD_MODEL_BACKGROUND_DELAY=DELAY):
        yield
        # Nothing may still run on the background thread when the tables are emptied.
        assert tasks.BACKGROUND.idle(180)
    learning.clear_caches()


@pytest.fixture
def agent(workspace, owner):
    from studio.workspaces import services as workspace_services

    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    return Agent(workspace.slug, token=secret)


@pytest.fixture
def staff(owner):
    client = Client()
    client.force_login(owner)
    return client


def run_session(agent, name: str, events: list) -> None:
    """Post the session's events and end it with the end call, as an agent does."""
    assert agent.post(name, events).status_code in (200, 207)
    ended = agent.client.post(agent.url(name, "end"), data="", content_type="application/json",
                              headers={"Authorization": f"Bearer {agent.token}"})
    assert ended.status_code == 200, ended.content


def learn_again(staff, workspace):
    answer = staff.post(reverse("guard_model_learn", kwargs={"slug": workspace.slug}))
    assert answer.status_code == 302
    return answer


def test_a_request_that_asks_for_a_model_answers_before_it_is_learned(agent, staff, workspace):
    for s in range(12):
        run_session(agent, f"s{s}", [PAY, LOOK, SHIP])
    # No model was ever learned: ending sessions asks for none.
    assert not LearnedRiskModel.objects.exists()
    learn_again(staff, workspace)
    # The response has arrived: the model is asked for, and nobody has learned it yet.
    made = LearnedRiskModel.objects.get()
    assert made.status == ModelStatus.QUEUED and made.started_at is None
    page = staff.get(reverse("guard_model", kwargs={"slug": workspace.slug})).content.decode()
    assert "Risk model #%d: queued." % made.pk in page
    # It is learned afterwards, by the background thread, from the ended sessions.
    assert tasks.BACKGROUND.idle(180)
    made.refresh_from_db()
    assert made.status == ModelStatus.READY, made.error
    assert made.sessions == 12 and made.events == 36 and made.states > 1


def test_many_triggers_coalesce_into_one_learn(agent, staff, workspace):
    for s in range(5):
        run_session(agent, f"old{s}", [PAY, SHIP])
    learn_again(staff, workspace)
    assert tasks.BACKGROUND.idle(180)
    first = LearnedRiskModel.objects.get()
    assert first.status == ModelStatus.READY and first.sessions == 5
    with override_settings(GUARD_MODEL_RELEARN_SESSIONS=3):
        # Eight sessions end (eight requests), then "Learn again" is pressed four times: the
        # third end asks for a model, and every trigger after it finds that one still queued.
        for s in range(8):
            run_session(agent, f"new{s}", [PAY, LOOK, SHIP])
        for _ in range(4):
            learn_again(staff, workspace)
        records = list(LearnedRiskModel.objects.order_by("id"))
        assert [r.pk for r in records[:1]] == [first.pk] and len(records) == 2
        second = records[1]
        assert second.status == ModelStatus.QUEUED
        assert second.reason == learning.SESSIONS_ENDED
        assert tasks.BACKGROUND.idle(180)
    assert LearnedRiskModel.objects.count() == 2     # one learn for the twelve triggers
    second.refresh_from_db()
    assert second.status == ModelStatus.READY, second.error
    assert second.sessions == 13


def test_guarded_sessions_are_learned_from_with_the_guards_refusals_counted(agent, staff,
                                                                           workspace):
    """A session behind the guard: the step it refused (ship before pay) never happened; the
    session ends with the end call and enters the model, counted as guarded, its refusal
    counted; an unguarded session beside it counts as neither."""
    headers = {"Authorization": f"Bearer {agent.token}"}

    def ask(session, event, attempt=0):
        answer = agent.client.post(agent.url(session, "guard"),
                                   data=json.dumps({"event": event, "attempt": attempt}),
                                   content_type="application/json", headers=headers)
        return answer.json()["decision"]

    agent.post("guarded", [LOOK])
    assert ask("guarded", SHIP) == "resample"
    assert ask("guarded", PAY, 1) == "allow"
    agent.post("guarded", [PAY])
    assert ask("guarded", SHIP) == "allow"
    run_session(agent, "guarded", [SHIP])
    run_session(agent, "plain", [PAY, SHIP])
    # A live session left open is not learned from until it is idle past the workspace's
    # inactivity window (30 minutes by default).
    agent.post("open", [PAY])
    learn_again(staff, workspace)
    assert tasks.BACKGROUND.idle(180)
    made = LearnedRiskModel.objects.get()
    assert made.status == ModelStatus.READY, made.error
    assert (made.sessions, made.guarded_sessions, made.refused_steps) == (2, 1, 1)
    page = staff.get(reverse("guard_model", kwargs={"slug": workspace.slug})).content.decode()
    assert "1 of them ran behind the guard, which refused 1 proposed step there" in page
    # Idle past the window, the open session is learned from too (no beat runs here to end it).
    workspace.live_inactivity_minutes = 1
    workspace.save(update_fields=["live_inactivity_minutes"])
    from datetime import timedelta

    from django.utils import timezone
    TraceSession.objects.filter(external_id="open").update(
        last_event_at=timezone.now() - timedelta(minutes=2))
    learn_again(staff, workspace)
    assert tasks.BACKGROUND.idle(180)
    newest = LearnedRiskModel.objects.order_by("-id").first()
    assert newest.status == ModelStatus.READY and newest.sessions == 3


def test_a_model_queued_by_a_process_that_ended_is_taken_on_when_its_page_is_read(
        agent, staff, workspace, monkeypatch):
    """A command (load_demo) or a restarted process queued it on a background thread that is
    gone: the model page's process learns it rather than leaving it queued for ever."""
    for s in range(3):
        run_session(agent, f"s{s}", [PAY, LOOK, SHIP])
    with monkeypatch.context() as gone:   # the asking process's thread never runs it
        gone.setattr(tasks.BACKGROUND, "submit", lambda *args: None)
        row = learning.request_model(workspace, reason="queued by a process that ended")
    LearnedRiskModel.objects.filter(pk=row.pk).update(
        created_at=row.created_at - timedelta(seconds=DELAY + 10))
    assert not tasks.BACKGROUND.holds(tasks.LEARN_RISK_MODEL, (row.pk,))
    page = staff.get(reverse("guard_model", kwargs={"slug": workspace.slug}))
    assert page.status_code == 200
    assert tasks.BACKGROUND.holds(tasks.LEARN_RISK_MODEL, (row.pk,))
    assert learning.adopt_orphans(workspace) == 0   # held now: not sent twice
    assert tasks.BACKGROUND.idle(180)
    row.refresh_from_db()
    assert row.status == ModelStatus.READY and row.sessions == 3
