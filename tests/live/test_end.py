"""Ending live sessions over HTTP: the end verdicts (what the end reveals is counted), 409 for
later events, idempotence, the inactivity timeout, and the one verdict in every live answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from studio.live.context import context_for
from studio.live.ending import end_idle_sessions
from studio.live.ingest import clear_caches
from studio.live.reading import current_rules
from studio.traces.models import TraceSession
from studio.workspaces.models import AuditLogEntry, Workspace
from tests.live.conftest import Agent, approve

pytestmark = pytest.mark.django_db

LOOK = {"output": {"tool": "look", "args": {}}}


@pytest.fixture
def confirm(workspace, owner):
    approve(workspace, owner, "confirms", "F tool_call:confirm")
    return workspace


def rules_of(body) -> dict:
    return {r["rule"]: r for r in body["rules"]}


def test_a_rule_pending_while_open_is_violated_once_the_session_ends(confirm, token):
    agent = Agent("acme", token=token)
    posted = agent.post("s1", [{**LOOK, "event_id": "e1"}]).json()
    assert rules_of(posted)["confirms"]["verdict"] == "open"  # it may still confirm
    assert rules_of(posted)["confirms"]["verdict_was"] == "pending"  # the old name, one release
    assert rules_of(posted)["confirms"]["final"] == "violated"

    ended = agent.post("s1", [], what="end")

    assert ended.status_code == 200, ended.json()
    body = ended.json()
    confirms = rules_of(body)["confirms"]
    assert (confirms["verdict"], confirms["violations"], confirms["end_violations"]) == (
        "violated", 1, 1)
    assert rules_of(body)["no_delete"]["verdict"] == "complied"  # G !delete held to the end
    assert body["already_ended"] is False
    session = TraceSession.objects.get(external_id="s1")
    assert session.ended_at is not None and not session.is_open
    # The Live page reads the same: the session's verdicts after the end, violations counted.
    now = rules_of(current_rules(session, context_for(confirm)))
    assert (now["confirms"]["verdict"], now["confirms"]["violations"]) == ("violated", 1)
    assert AuditLogEntry.objects.filter(action="live_session.ended").count() == 1


def test_an_end_body_holding_a_lone_surrogate_or_nul_is_refused_and_ends_nothing(confirm, token):
    agent = Agent("acme", token=token)
    agent.post("s1", [LOOK])
    # Text that cannot be stored is the boundary's 422 naming the field; JSON that cannot be read
    # is a 400.
    for body, status in ((b'{"note": "\\ud800"}', 422), (b'{"note": "a\\u0000b"}', 422),
                         (b"{not json", 400)):
        refused = agent.post("s1", [], what="end", body=body)
        assert refused.status_code == status, (body, refused.content)
        if status == 422:
            assert refused.json()["field"] == "note"
    assert TraceSession.objects.get(external_id="s1").is_open
    assert agent.post("s1", [], what="end", body=b"").status_code == 200  # no body: fine


def test_ending_again_changes_nothing(confirm, token):
    agent = Agent("acme", token=token)
    agent.post("s1", [LOOK])
    first = agent.post("s1", [], what="end").json()
    again = agent.post("s1", [], what="end")

    assert again.status_code == 200
    assert again.json()["already_ended"] is True
    assert again.json()["ended_at"] == first["ended_at"]
    assert ({r["rule"]: (r["verdict"], r["violations"]) for r in again.json()["rules"]}
            == {r["rule"]: (r["verdict"], r["violations"]) for r in first["rules"]})
    assert AuditLogEntry.objects.filter(action="live_session.ended").count() == 1


def test_later_events_get_409_naming_the_session_and_a_redelivery_is_still_a_duplicate(
        confirm, token):
    agent = Agent("acme", token=token)
    agent.post("s1", [{**LOOK, "event_id": "e1"}])
    agent.post("s1", [], what="end")

    later = agent.post("s1", [{"event_id": "e2", "output": {"tool": "confirm", "args": {}}}])
    assert later.status_code == 409
    assert later.json()["field"] == "session_id"
    assert "'s1' has ended" in later.json()["detail"]
    assert TraceSession.objects.get(external_id="s1").steps == 1

    again = agent.post("s1", [{**LOOK, "event_id": "e1"}])  # the sender retrying a delivery
    assert again.status_code == 200
    assert again.json()["events"][0]["status"] == "duplicate"
    assert rules_of(again.json())["confirms"]["verdict"] == "violated"
    assert agent.post("s1", [LOOK], what="check").status_code == 409


def test_ending_needs_the_events_routes_credentials_and_a_live_session(confirm, token, secret):
    assert Agent("acme").client.post(Agent("acme").url("s1", "end"), data=b"",
                                     content_type="application/json").status_code == 401
    assert Agent("acme", token=token).post("nobody", [], what="end").status_code == 404
    Agent("acme", token=token).post("s1", [LOOK])
    assert Agent("acme", secret=secret).post("s1", [], what="end").status_code == 200


def test_the_inactivity_timeout_ends_idle_sessions_only(confirm, token, owner):
    agent = Agent("acme", token=token)
    for name in ("idle", "busy"):
        agent.post(name, [LOOK])
    long_ago = timezone.now() - timedelta(minutes=31)
    TraceSession.objects.filter(external_id="idle").update(last_event_at=long_ago)

    assert end_idle_sessions() == 1
    idle, busy = (TraceSession.objects.get(external_id=n) for n in ("idle", "busy"))
    assert idle.ended_at is not None and busy.ended_at is None
    now = rules_of(current_rules(idle, context_for(confirm)))
    assert now["confirms"]["verdict"] == "violated"
    assert end_idle_sessions() == 0  # already ended

    Workspace.objects.filter(pk=confirm.pk).update(live_inactivity_minutes=0)  # never
    TraceSession.objects.filter(external_id="busy").update(last_event_at=long_ago)
    assert end_idle_sessions() == 0


def test_beat_runs_the_timeout():
    from django.conf import settings

    from worker.celery import app
    import worker.tasks  # noqa: F401  (registers the tasks)

    names = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "worker.live.end_idle_live_sessions" in names
    assert "worker.live.end_idle_live_sessions" in app.tasks


# --- the one verdict in the live answers -------------------------------------------------------

TOOLS = ["pay", "ship", "delete", "confirm", "look"]
COUNTINGS = {"first": "first", "again": "after_violation", "every": "every_verdict"}


@hypothesis_settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=4),
                        min_size=1, max_size=4))
def test_no_live_answer_says_satisfied_where_a_violation_was_counted(workspace, owner, token,
                                                                     batches):
    for name, counting in COUNTINGS.items():
        if not workspace.rules.filter(name=f"ship_{name}").exists():
            version = approve(workspace, owner, f"ship_{name}", "!tool_call:ship W tool_call:pay")
            type(version).objects.filter(pk=version.pk).update(counting=counting)
    clear_caches()
    agent = Agent("acme", token=token)
    session = f"s{TraceSession.objects.count()}"
    answers = []
    for batch in batches:
        body = agent.post(session, [{"output": {"tool": t, "args": {}}} for t in batch]).json()
        answers.append(body["rules"])
        answers.append(agent.post(session, [{"output": {"tool": "ship", "args": {}}}],
                                  what="check").json()["candidates"][0]["rules"])
    answers.append(agent.post(session, [], what="end").json()["rules"])
    answers.append(current_rules(TraceSession.objects.get(external_id=session),
                                 context_for(workspace))["rules"])

    for rules in answers:
        for rule in rules:
            if rule.get("violations") or rule.get("violates"):
                assert rule["verdict"] == "violated", rule
    assert all(r["verdict"] != "pending" for r in answers[-1])  # ended: all decided
