"""Causal guards (CPL) decided on live multi-agent deliveries, through real requests: the merge
scenario of paper 001 posted by its agents, the guard true at the first decision and false at the
second; a receive posted before its send; unknown guards and bad choices answered, never a 500;
the monitor kept between deliveries (not replayed per event); the MSC page showing the values."""

from __future__ import annotations

import html
import re
from unittest import mock

import pytest
from django.test import Client

from studio.causal.examples import MERGE_GUARDS, merge_scenario
from studio.live import causal_guards
from studio.live.ingest import clear_caches
from studio.rules import guards as guard_services
from studio.traces.models import TraceSession
from tests.live.conftest import Agent

pytestmark = pytest.mark.django_db

SESSION = "merge-1"


@pytest.fixture
def merge_ok(workspace, owner):
    spec = MERGE_GUARDS["merge_ok"]
    return guard_services.create_guard(workspace, owner, "merge_ok", spec["cpl"], spec["owner"])


def live(event: dict) -> dict:
    """A scenario event as an agent posts it: its own id, no step (assigned on arrival)."""
    out = {"event_id": f"e{event['step']}", "lifeline": event["lifeline"],
           "timestamp": event["timestamp"], "output": event["output"], "data": event["data"]}
    if "message" in event:
        out["message"] = event["message"]
    return out


def post(agent: Agent, *events: dict, session: str = SESSION) -> dict:
    response = agent.post(session, [live(e) for e in events])
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """``post`` with the delivery's after-commit work done (the test's own transaction never
    commits): the process keeps the session's monitors, as a server does."""
    def post_committed(agent: Agent, *events: dict, session: str = SESSION) -> dict:
        with django_capture_on_commit_callbacks(execute=True):
            return post(agent, *events, session=session)
    return post_committed


def test_the_guard_holds_at_the_first_choice_and_is_false_at_the_second(workspace, token,
                                                                       merge_ok):
    agent = Agent("acme", token=token)
    events = merge_scenario(with_delivery=True)
    for event in events[:9]:
        body = post(agent, event)
        assert "guards" not in body["events"][0] and "guards" not in body
    first = post(agent, events[9])["events"][0]
    assert first["step"] == 9
    (value,) = first["guards"]
    assert value["guard"] == "merge_ok" and value["value"] is True
    assert value["lifeline"] == "Committer"
    assert value["seen"] == {"Orchestrator": 2, "TestRunner": 3, "Committer": 3}
    assert "holds over the causal past" in value["reason"]
    body = post(agent, events[10], events[11])  # the update delivered, then decide again
    receive, second = body["events"]
    assert "guards" not in receive
    (value,) = second["guards"]
    assert value["value"] is False, value
    assert "merge_ok is false over the causal past" in value["reason"]
    assert value["seen"]["TestRunner"] == 5


def test_a_batch_with_the_whole_session_answers_each_choice(workspace, token, merge_ok):
    body = post(Agent("acme", token=token), *merge_scenario(with_delivery=True))
    answered = {item["step"]: [(g["guard"], g["value"]) for g in item["guards"]]
                for item in body["events"] if "guards" in item}
    assert answered == {9: [("merge_ok", True)], 11: [("merge_ok", False)]}


def test_a_receive_posted_before_its_send_is_decided_when_the_send_arrives(workspace, token,
                                                                           merge_ok):
    agent = Agent("acme", token=token)
    events = merge_scenario()
    proposal_send = events.pop(5)   # the Orchestrator's proposal is posted last
    body = post(agent, *events)
    (waiting,) = [g for item in body["events"] for g in item.get("guards", ())]
    assert waiting["value"] is None
    assert "not decided yet" in waiting["reason"] and "'proposal-1'" in waiting["reason"]
    body = post(agent, proposal_send)
    assert body["guards"] == [{"step": 8, "guard": "merge_ok", "value": True,
                               "reason": body["guards"][0]["reason"], "lifeline": "Committer",
                               "seen": {"Orchestrator": 2, "TestRunner": 3, "Committer": 3}}]


def test_a_send_later_in_the_same_batch_decides_the_choice_in_its_item(workspace, token,
                                                                       merge_ok):
    events = merge_scenario()
    proposal_send = events.pop(5)
    body = post(Agent("acme", token=token), *events, proposal_send)
    (value,) = [g for item in body["events"] for g in item.get("guards", ())]
    assert value["value"] is True and "guards" not in body


def test_unknown_guards_and_bad_choices_are_answered_not_failed(workspace, token, merge_ok):
    agent = Agent("acme", token=token)
    response = agent.post("s-bad", [
        {"event_id": "a", "lifeline": "A", "data": {"choice": "nope"}},
        {"event_id": "b", "lifeline": "A", "data": {"choice": 5}},
        {"event_id": "c", "lifeline": "A", "data": {"choice": ["merge_ok", ""]}},
        {"event_id": "d", "lifeline": "A", "data": {"choice": "merge_ok"}},
        {"event_id": "e", "lifeline": "Committer", "data": {"choice": "merge_ok"},
         "message": {"id": "m", "peer": "B", "kind": "send"}},
    ])
    assert response.status_code == 200, response.content
    unknown, number, empty_name, foreign, with_message = (
        item["guards"] for item in response.json()["events"])
    assert unknown[0]["guard"] == "nope" and unknown[0]["value"] is None
    assert "no causal guard of that name is declared in workspace 'acme'" in \
        unknown[0]["reason"]
    assert "/w/acme/guards/" in unknown[0]["reason"]
    assert number[0]["guard"] is None and "data.choice must name a guard" in number[0]["reason"]
    assert empty_name[0]["guard"] is None
    assert foreign[0]["value"] is None
    assert "decided by lifeline Committer only; this choice is on A" in foreign[0]["reason"]
    assert "cannot also send or receive" in with_message[0]["reason"]
    assert TraceSession.objects.get(external_id="s-bad").steps == 5  # all stored


def test_a_workspace_without_guards_answers_each_name_unknown(workspace, token):
    response = Agent("acme", token=token).post("s1", [
        {"event_id": "a", "lifeline": "Committer", "data": {"choice": ["merge_ok", "x"]}}])
    assert response.status_code == 200
    guards = response.json()["events"][0]["guards"]
    assert [(g["guard"], g["value"]) for g in guards] == [("merge_ok", None), ("x", None)]


def test_the_monitor_is_kept_between_deliveries_not_replayed(workspace, token, merge_ok,
                                                            committed):
    agent = Agent("acme", token=token)
    events = merge_scenario(with_delivery=True)
    with mock.patch.object(causal_guards, "_stored", wraps=causal_guards._stored) as stored:
        values = [g["value"] for event in events
                  for g in committed(agent, event)["events"][0].get("guards", ())]
    assert values == [True, False]
    # Read once, at the first choice event; every later delivery fed the kept monitor.
    assert stored.call_count == 1


def test_a_held_choice_is_released_by_the_kept_monitor_too(workspace, token, merge_ok,
                                                           committed):
    agent = Agent("acme", token=token)
    events = merge_scenario()
    proposal_send = events.pop(5)
    for event in events:
        committed(agent, event)
    with mock.patch.object(causal_guards, "_stored", wraps=causal_guards._stored) as stored:
        body = committed(agent, proposal_send)
    assert [(g["step"], g["value"]) for g in body["guards"]] == [(8, True)]
    assert stored.call_count == 0


def test_another_process_rebuilds_or_catches_up_from_the_stored_events(workspace, token,
                                                                      merge_ok, committed):
    agent = Agent("acme", token=token)
    events = merge_scenario(with_delivery=True)
    committed(agent, *events[:10])
    # This process's monitor saw steps 0-9; another process stores step 10 meanwhile.
    behind = causal_guards._take(workspace.pk, SESSION)
    committed(agent, events[10])
    causal_guards._keep(workspace.pk, SESSION, behind)
    with mock.patch.object(causal_guards, "_stored", wraps=causal_guards._stored) as stored:
        (value,) = committed(agent, events[11])["events"][0]["guards"]
    assert value["value"] is False
    assert [c.args for c in stored.call_args_list] == [(behind.session_pk, 10)]  # just the gap
    clear_caches()            # a process that saw nothing: built from every event
    (value,) = committed(agent, {**events[11], "step": 12})["events"][0]["guards"]
    assert value["value"] is False


def test_a_new_lifeline_and_a_changed_guard_are_taken_into_account(workspace, token, owner,
                                                                   merge_ok):
    agent = Agent("acme", token=token)
    events = merge_scenario()
    post(agent, *events)
    reviewer = {"step": 20, "lifeline": "Reviewer", "timestamp": "2026-01-15T10:00:30Z",
                "output": "looked", "data": {"ok": True}}
    post(agent, reviewer)
    guard_services.update_guard(merge_ok, owner, cpl='@Reviewer ok == true')
    (value,) = post(agent, {**events[9], "step": 21})["events"][0]["guards"]
    assert value["value"] is False  # the Committer has not heard from the Reviewer
    assert "Reviewer" not in value["seen"]


def test_duplicates_are_not_answered_twice_and_otlp_is_left_alone(workspace, token, merge_ok):
    agent = Agent("acme", token=token)
    events = merge_scenario()
    post(agent, *events)
    again = post(agent, events[9])["events"][0]
    assert again["status"] == "duplicate" and "guards" not in again


def test_the_msc_page_of_the_live_session_shows_the_false_guard(workspace, token, owner,
                                                                merge_ok):
    post(Agent("acme", token=token), *merge_scenario(with_delivery=True))
    session = TraceSession.objects.get(external_id=SESSION)
    client = Client()
    client.force_login(owner)
    response = client.get(f"/w/acme/sessions/{session.id}/msc")
    assert response.status_code == 200
    text = html.unescape(response.content.decode())
    rows = re.findall(r"<tr[^>]*><th scope=\"row\"><a [^>]*>(\d+)</a></th><td>Committer</td>"
                      r"<td>merge_ok</td><td>([^<]*)</td>", text)
    assert rows == [("9", "✓ true"), ("11", "✗ false")]


def test_the_live_page_links_each_session_to_its_chart(workspace, token, owner, merge_ok):
    post(Agent("acme", token=token), *merge_scenario())
    session = TraceSession.objects.get(external_id=SESSION)
    client = Client()
    client.force_login(owner)
    response = client.get("/w/acme/live/")
    assert response.status_code == 200
    assert f'href="/w/acme/sessions/{session.id}/msc"'.encode() in response.content
    assert b'href="/w/acme/guards/"' in response.content
