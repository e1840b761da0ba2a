"""The guard's ``taken``: the agent's events before the proposed one that the studio may not have
stored yet.  The decision is the one the guard gives once they are stored (they are decided on
in memory, on a fork of the session's monitors), none is applied twice however the stores race
the question, and the route stores them after its answer is sent."""

from __future__ import annotations

import json
import random

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from studio.guard import services as guard_services
from studio.live import storage
from studio.live.ingest import clear_caches, ingest
from studio.rules.models import RuleSet
from studio.traces.models import Event, TraceSession
from studio.workspaces import services as workspace_services
from tests.live.conftest import Agent, approve, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}
BIG = {"output": {"tool": "pay", "args": {"amount": 50_000}}}
SHIP = {"output": {"tool": "ship", "args": {}}}
DELETE = {"output": {"tool": "delete", "args": {}}}
LOOK = {"output": {"tool": "look", "args": {}}}
APPROVE = {"output": {"tool": "approve", "args": {}}, "labels": ["approved"]}
DRAWN = [PAY, BIG, SHIP, DELETE, LOOK, APPROVE]
COMPARED = ("decision", "reason", "risk", "risk_any", "rules_at_risk", "steps",
            "not_yet_known", "predictor")


@pytest.fixture
def ruleset(workspace, owner):
    # Two more rules that read the order of steps closely (next step, past step).
    approve(workspace, owner, "look_then_pay", "G(tool_call:look -> X tool_call:pay)")
    approve(workspace, owner, "ship_after_approval", "G(tool_call:ship -> O approved)")
    rules = RuleSet.objects.create(workspace=workspace, name="shop", live=True)
    rules.rules.set(workspace.rules.all())
    return rules


@pytest.fixture
def agent(workspace, owner):
    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    return Agent(workspace.slug, token=secret)


def with_ids(events: list[dict], prefix: str) -> list[dict]:
    return [{**event, "event_id": f"{prefix}-{i}"} for i, event in enumerate(events)]


def decided(answer: dict) -> dict:
    return {key: answer[key] for key in COMPARED}


def ask(agent, session, body):
    return agent.client.post(agent.url(session, "guard"), data=json.dumps(body),
                             content_type="application/json",
                             headers={"Authorization": f"Bearer {agent.token}"})


def test_taken_events_change_the_decision_exactly_as_if_they_had_been_stored(
        workspace, ruleset):
    """Random sessions over the rules: some events stored, the rest (some of them stored too,
    as a store racing the question leaves them) taken; the answer is the one given once every
    event is stored."""
    for seed in range(40):
        draw = random.Random(seed)
        events = with_ids([draw.choice(DRAWN) for _ in range(draw.randint(1, 7))], f"e{seed}")
        stored_first = draw.randint(0, len(events) - 1)
        also_stored = draw.randint(stored_first, len(events))
        proposed = draw.choice(DRAWN)
        taken_session, posted_session = f"taken-{seed}", f"posted-{seed}"
        if also_stored:
            ingest(workspace, taken_session, events[:also_stored])
        ingest(workspace, posted_session, with_ids(events, f"p{seed}"))
        if seed % 3 == 0:
            clear_caches()   # read from the snapshot, not this process's live copy
        with_taken = guard_services.guard(workspace, taken_session, {
            "event": proposed, "taken": events[stored_first:]})
        reference = guard_services.guard(workspace, posted_session, {"event": proposed})
        assert decided(with_taken) == decided(reference), (seed, events, proposed)
        assert with_taken["stored"] == [e["event_id"] for e in events[stored_first:also_stored]]
        # Asking stored nothing.
        assert Event.objects.filter(session__external_id=taken_session).count() == also_stored


def test_events_stored_between_the_read_and_the_id_check_are_not_applied_twice(
        workspace, ruleset, monkeypatch):
    ingest(workspace, "race", with_ids([PAY], "first"))
    taken = with_ids([LOOK, PAY, APPROVE], "race")
    read = storage.read_session

    def stored_meanwhile(workspace_pk, external_id, tail, ids=frozenset(), **kwargs):
        row, after_live, _, _ = read(workspace_pk, external_id, tail)
        # Another worker stores the taken events after the guard read the session, before it
        # looked their ids up.
        ingest(workspace, "race", taken)
        return row, after_live, *read(workspace_pk, external_id, None, ids, **kwargs)[2:]

    monkeypatch.setattr(storage, "read_session", stored_meanwhile)
    answer = guard_services.guard(workspace, "race", {"event": SHIP, "taken": taken})
    monkeypatch.undo()
    # Stored after the read, so applied from the question, once: four steps, not seven.
    assert answer["stored"] == [e["event_id"] for e in taken]
    assert answer["steps"] == 4
    clear_caches()
    reference = guard_services.guard(workspace, "race", {"event": SHIP})
    assert decided(answer) == decided(reference)


def test_a_taken_event_already_read_is_not_applied_again(workspace, ruleset):
    # look_then_pay: a look must be followed by a payment.  Applied twice, the look would be
    # followed by a look and the rule already violated; applied once, the payment is fine.
    ingest(workspace, "once", with_ids([LOOK], "once"))
    answer = guard_services.guard(workspace, "once", {
        "event": PAY, "taken": with_ids([LOOK], "once")})
    assert answer["stored"] == ["once-0"] and answer["steps"] == 1
    assert answer["decision"] == "allow"
    fresh = guard_services.guard(workspace, "fresh", {"event": LOOK, "taken": with_ids([LOOK],
                                                                                     "fresh")})
    assert fresh["decision"] == "resample" and fresh["stored"] == []
    assert [r["rule"] for r in fresh["rules_at_risk"]] == ["look_then_pay"]


def test_the_decision_id_does_not_cover_taken(workspace, ruleset):
    first = guard_services.guard(workspace, "same", {
        "event": PAY, "decision_id": "d1", "taken": with_ids([LOOK], "same")})
    again = guard_services.guard(workspace, "same", {"event": PAY, "decision_id": "d1"})
    assert again["repeated"] is True and again["decision"] == first["decision"]


@pytest.mark.parametrize("taken, status, field", [
    ("look", 422, "taken"),
    ([LOOK], 422, "taken[0].event_id"),
    ([{**LOOK, "event_id": "a"}, {**PAY, "event_id": ""}], 422, "taken[1].event_id"),
    ([{**LOOK, "event_id": "a"}, "pay"], 422, "taken[1]"),
    ([{**LOOK, "event_id": "a", "timestamp": "yesterday"}], 422, "taken[0].timestamp"),
    ([{**LOOK, "event_id": f"x{i}"} for i in range(guard_services.MAX_TAKEN + 1)], 413,
     "taken"),
])
def test_taken_that_does_not_fit_is_refused_naming_the_field(agent, ruleset, taken, status,
                                                              field):
    answer = ask(agent, "bad", {"event": PAY, "taken": taken})
    assert answer.status_code == status, answer.content
    assert answer.json()["field"] == field
    assert not Event.objects.exists()


def test_the_route_stores_taken_events_after_its_answer_and_a_repeat_stores_nothing(
        agent, ruleset):
    taken = with_ids([LOOK, PAY, APPROVE], "route")
    answer = ask(agent, "r1", {"event": SHIP, "taken": taken})
    assert answer.status_code == 200, answer.content
    assert answer.json()["stored"] == [] and answer.json()["decision"] == "allow"
    # The test client closes the response as a WSGI server does: the events are stored then.
    assert list(Event.objects.filter(session__external_id="r1").order_by("step")
                .values_list("event_id", flat=True)) == [e["event_id"] for e in taken]
    again = ask(agent, "r1", {"event": SHIP, "taken": taken})
    assert again.json()["stored"] == [e["event_id"] for e in taken]
    assert again.json()["steps"] == 3
    assert TraceSession.objects.get(external_id="r1").steps == 3
    assert Event.objects.filter(session__external_id="r1").count() == 3


def test_under_asgi_the_taken_events_are_stored_after_the_answer(agent, ruleset):
    client = AsyncClient()
    taken = with_ids([LOOK, PAY], "asgi")
    answer = async_to_sync(client.post)(
        agent.url("a1", "guard"), data=json.dumps({"event": SHIP, "taken": taken}),
        content_type="application/json", headers={"Authorization": f"Bearer {agent.token}"})
    assert answer.status_code == 200, answer.content
    assert Event.objects.filter(session__external_id="a1").count() == 2


def test_a_store_that_fails_after_the_answer_loses_nothing(agent, workspace, ruleset,
                                                           monkeypatch):
    taken = with_ids([LOOK, PAY], "lost")

    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(guard_services, "ingest", broken)
    answer = ask(agent, "f1", {"event": SHIP, "taken": taken})
    assert answer.status_code == 200 and answer.json()["stored"] == []
    assert not Event.objects.filter(session__external_id="f1").exists()
    monkeypatch.undo()
    # Nothing was confirmed, so the agent sends them again: decided on, then stored.
    again = ask(agent, "f1", {"event": SHIP, "taken": taken})
    assert again.json()["stored"] == [] and again.json()["steps"] == 2
    assert Event.objects.filter(session__external_id="f1").count() == 2
    third = ask(agent, "f1", {"event": SHIP, "taken": taken})
    assert third.json()["stored"] == ["lost-0", "lost-1"]


def test_a_taken_id_stored_in_another_session_is_not_applied(workspace, ruleset):
    ingest(workspace, "elsewhere", [{**LOOK, "event_id": "shared"}])
    answer = guard_services.guard(workspace, "here", {
        "event": SHIP, "taken": [{**LOOK, "event_id": "shared"}]})
    assert answer["stored"] == [] and answer["steps"] == 0


def test_a_decision_id_decided_already_answers_the_first_decision(workspace, ruleset):
    first = guard_services.guard(workspace, "meanwhile", {"event": PAY, "decision_id": "d7"})
    # Not looked for before deciding: decided again, refused by the insert, answered as first.
    again = guard_services.guard(workspace, "meanwhile", {"event": PAY, "decision_id": "d7"})
    assert again["repeated"] is True and again["decision"] == first["decision"]
    # The connection is usable afterwards (the failed transaction was ended).
    assert guard_services.guard(workspace, "meanwhile", {"event": SHIP})["decision"]
    assert TraceSession.objects.count() == 0


def test_a_question_answered_before_its_session_ended_is_answered_as_it_was(workspace,
                                                                           ruleset):
    from studio.live.ending import end_session
    from studio.live.errors import SessionEnded

    ingest(workspace, "ends", [LOOK])
    first = guard_services.guard(workspace, "ends", {"event": PAY, "decision_id": "d8"})
    end_session(workspace, "ends")
    again = guard_services.guard(workspace, "ends", {"event": PAY, "decision_id": "d8"})
    assert again["repeated"] is True and again["decision"] == first["decision"]
    with pytest.raises(SessionEnded):
        guard_services.guard(workspace, "ends", {"event": PAY, "decision_id": "d9"})


def test_after_an_answer_the_context_about_to_expire_is_read_again(agent, workspace, ruleset,
                                                                   settings):
    import time

    from studio.live import context as live_context

    settings.LIVE_CONTEXT_SECONDS = 2.0
    assert ask(agent, "fresh-1", {"event": PAY}).status_code == 200
    expires, context = live_context._CONTEXTS.entries[workspace.pk]
    # About to expire: the next answer reads it again once sent, not the question after it.
    live_context._CONTEXTS.entries[workspace.pk] = (time.monotonic() + 0.1, context)
    guard_services._POLICIES.entries[workspace.pk] = (
        time.monotonic() + 0.1, guard_services._POLICIES.entries[workspace.pk][1])
    assert ask(agent, "fresh-1", {"event": PAY}).status_code == 200
    assert live_context._CONTEXTS.entries[workspace.pk][0] > time.monotonic() + 1.5
    assert guard_services._POLICIES.entries[workspace.pk][0] > time.monotonic() + 1.5


def test_store_taken_false_decides_on_the_events_and_leaves_them_to_the_agent(agent, workspace,
                                                                              ruleset):
    taken = with_ids([LOOK, PAY], "later")
    first = ask(agent, "later", {"event": SHIP, "taken": taken, "store_taken": False})
    assert first.status_code == 200 and first.json()["steps"] == 2
    assert not Event.objects.filter(session__external_id="later").exists()
    # Asked again with the default: decided the same, and stored once answered.
    second = ask(agent, "later", {"event": SHIP, "taken": taken})
    assert decided(second.json()) == decided(first.json())
    assert Event.objects.filter(session__external_id="later").count() == 2
    refused = ask(agent, "later", {"event": SHIP, "store_taken": "no"})
    assert refused.status_code == 422 and refused.json()["field"] == "store_taken"


def test_a_settled_decision_is_stored_once_its_answer_is_sent(agent, workspace, ruleset):
    from django.db import connection

    from studio.guard.models import GuardDecision

    made = guard_services.decide(workspace, "record", {"event": PAY, "decision_id": "r1"})
    rows = GuardDecision.objects.filter(session="record")
    if connection.vendor == "postgresql":
        # Left for the route to store after sending the answer (the agent does not wait).
        assert made.record is not None and not rows.exists()
        guard_services.store_decided(made)
    else:
        assert made.record is None
    assert rows.get().answer["decision"] == made.answer["decision"]
    # A repeat racing it stored first: the first is kept, nothing raised.
    guard_services.store_decided(made)
    assert rows.count() == 1
    # Over the route, the row is there once the answer is: asked again, the first answer.
    first = ask(agent, "record", {"event": PAY, "decision_id": "r2"}).json()
    again = ask(agent, "record", {"event": PAY, "decision_id": "r2"}).json()
    assert again["repeated"] is True and again["decision"] == first["decision"]
    assert "repeated" not in first
