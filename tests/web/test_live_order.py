"""The live page puts the answer first (issue 26): violated sessions, then those at risk (a rule
not met yet), then open ones, then those whose every rule is met so far, most recently active
first within each; in a session the rules met so far are folded under "N rules met so far"."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from studio.live.ingest import clear_caches
from studio.traces.models import TraceSession
from studio.workspaces import services as workspace_services
from tests.live.conftest import Agent, approve

pytestmark = pytest.mark.django_db

RULES = [
    ("pay_before_ship", "!tool_call:ship W tool_call:pay"),
    ("no_delete", "G !tool_call:delete"),
    ("ends", 'F "stop_reason:end_turn"'),
]


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_caches()
    yield
    clear_caches()


@pytest.fixture
def setup(django_user_model):
    owner = django_user_model.objects.create_user(username="owner", password="pw-owner-123")
    workspace = workspace_services.create_workspace("Acme", owner=owner, slug="acme")
    for name, formula in RULES:
        approve(workspace, owner, name, formula)
    _, token = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    client = Client()
    client.force_login(owner)
    return {"workspace": workspace, "agent": Agent("acme", token=token), "owner": client}


def row_of(html: str, session: str) -> str:
    row = re.search(rf'<th scope="row">(?:<a [^>]*>)?{re.escape(session)}(?:</a>)?</th>(.*?)</tr>',
                    html, re.DOTALL)
    assert row, f"no row for {session}"
    return row.group(1)


def shown_and_folded(row: str) -> tuple[list[str], list[str]]:
    """The rule names shown in a row, and those folded in its "met so far" details."""
    shown, _, folded = row.partition('<details class="rules-met">')
    names = re.compile(r'<span class="rule-name">([^<]+)</span>')
    return names.findall(shown), names.findall(folded)


def test_violated_then_at_risk_then_open_then_complied_whatever_the_recency(setup):
    agent = setup["agent"]
    # Posted oldest first: recency alone would list them in the opposite order.
    agent.post("broke", [{"event_id": "b1", "output": {"tool": "ship"}}])
    agent.post("owes", [{"event_id": "o1", "output": {"tool": "pay"}}])
    agent.post("unread", [{"event_id": "u1", "output": {"tool": "pay"}}])
    agent.post("done", [{"event_id": "d1", "output": {"tool": "pay"}},
                        {"event_id": "d2", "output": "bye", "stop_reason": "end_turn"}])
    agent.post("owes-too", [{"event_id": "t1", "output": {"tool": "pay"}}])
    # A session whose monitors were never read: nothing is decided, so it is open.
    TraceSession.objects.filter(external_id="unread").update(monitor_state=None)

    for url in ("/w/acme/live/", "/w/acme/live/rows"):
        html = setup["owner"].get(url).content.decode()
        order = re.findall(r'<th scope="row">(?:<a [^>]*>)?([^<]+)(?:</a>)?</th>', html)
        assert order == ["broke", "owes-too", "owes", "unread", "done"], url

    html = setup["owner"].get("/w/acme/live/rows").content.decode()
    broke = row_of(html, "broke")
    # Violated first, then the rule not met yet; no_delete is met so far.
    assert shown_and_folded(broke) == (["pay_before_ship", "ends"], ["no_delete"])
    assert "1 rule met so far</summary>" in broke and "At risk" not in broke
    owes = row_of(html, "owes")
    assert shown_and_folded(owes) == (["ends"], ["no_delete", "pay_before_ship"])
    assert "<strong>At risk:</strong> a rule is not met yet." in owes
    assert "2 rules met so far</summary>" in owes
    done = row_of(html, "done")
    assert shown_and_folded(done) == ([], ["ends", "no_delete", "pay_before_ship"])
    assert "3 rules met so far</summary>" in done
    assert '<ul class="rule-states">' not in done.partition("<details")[0]
    assert "No event has been monitored yet" in row_of(html, "unread")


def test_an_ended_session_says_its_rules_are_met_not_met_so_far(setup):
    agent = setup["agent"]
    agent.post("over", [{"event_id": "e1", "output": {"tool": "pay"}},
                        {"event_id": "e2", "output": "bye", "stop_reason": "end_turn"}])
    assert agent.post("over", [], what="end").status_code == 200
    html = setup["owner"].get("/w/acme/live/rows").content.decode()
    assert "3 rules met</summary>" in row_of(html, "over")


SESSION_NAME = re.compile(r'<th scope="row">(?:<a [^>]*>)?([^<]+)(?:</a>)?</th>')


def page_of(client: Client, number: int, rows: bool = False) -> list[str]:
    url = f"/w/acme/live/{'rows' if rows else ''}?page={number}"
    return SESSION_NAME.findall(client.get(url).content.decode())


def every_page(client: Client) -> list[list[str]]:
    pages, number = [], 1
    while True:
        found = page_of(client, number)
        pages.append(found)
        if len(found) < 25:
            return pages
        number += 1


def test_the_order_holds_across_pages_and_paging_is_stable(setup):
    """30 sessions: the one violated is the oldest, so recency alone puts it on page 2.  It
    comes first on page 1; the at-risk ones (most recent first) follow; every session is on
    exactly one page; a complied session that breaks a rule later moves to page 1."""
    agent, owner = setup["agent"], setup["owner"]
    assert agent.post("broke-old", [{"event_id": "v1", "output": {"tool": "ship"}}]
                      ).status_code == 200
    for i in range(20):  # complied with every rule so far (paid, then ended the turn)
        assert agent.post(f"done-{i:02}", [
            {"event_id": f"d{i}a", "output": {"tool": "pay"}},
            {"event_id": f"d{i}b", "output": "bye", "stop_reason": "end_turn"}]
                          ).status_code == 200
    for i in range(9):  # paid, but still owe the end of the turn: at risk
        assert agent.post(f"owes-{i}", [{"event_id": f"o{i}", "output": {"tool": "pay"}}]
                          ).status_code == 200

    pages = every_page(owner)
    assert [len(p) for p in pages] == [25, 5]
    expected = (["broke-old"] + [f"owes-{i}" for i in reversed(range(9))]
                + [f"done-{i:02}" for i in reversed(range(20))])
    assert pages[0] + pages[1] == expected
    assert page_of(owner, 1, rows=True) == pages[0]  # the polled rows hold the same page
    assert page_of(owner, 2, rows=True) == pages[1]
    assert every_page(owner) == pages  # asked again: the same pages

    # The oldest complied session breaks a rule: it leads page 1, the rest move down by one.
    assert agent.post("done-00", [{"event_id": "late", "output": {"tool": "delete"}}]
                      ).status_code == 200
    after = every_page(owner)
    assert after[0][:2] == ["done-00", "broke-old"]
    assert after[0] + after[1] == ["done-00"] + [n for n in expected if n != "done-00"]


def test_the_stored_place_is_the_one_the_page_shows(setup):
    """What each delivery and each end stores (``attention``) is the place the page works out
    from the session's rules when it shows the row: the order of the query is the row's."""
    agent, owner = setup["agent"], setup["owner"]
    agent.post("broke", [{"event_id": "b1", "output": {"tool": "ship"}}])
    agent.post("owes", [{"event_id": "o1", "output": {"tool": "pay"}}])
    agent.post("fresh", [{"event_id": "f1", "output": {"tool": "search"}}])
    agent.post("done", [{"event_id": "d1", "output": {"tool": "pay"}},
                        {"event_id": "d2", "output": "bye", "stop_reason": "end_turn"}])
    agent.post("ended-owing", [{"event_id": "e1", "output": {"tool": "pay"}}])
    assert agent.post("ended-owing", [], what="end").status_code == 200
    agent.post("ended-done", [{"event_id": "g1", "output": {"tool": "pay"}},
                              {"event_id": "g2", "output": "bye", "stop_reason": "end_turn"}])
    assert agent.post("ended-done", [], what="end").status_code == 200

    html = owner.get("/w/acme/live/rows").content.decode()
    shown = SESSION_NAME.findall(html)
    stored = dict(TraceSession.objects.values_list("external_id", "attention"))
    words = {0: "violated", 1: "at risk", 2: "open", 3: "complied"}
    places = [words[stored[name]] for name in shown]
    assert places == sorted(places, key=["violated", "at risk", "open", "complied"].index)
    assert {name: words[stored[name]] for name in shown} == {
        "broke": "violated", "ended-owing": "violated", "owes": "at risk",
        "fresh": "at risk", "done": "complied", "ended-done": "complied"}
    for name in shown:  # the row says what was stored
        at_risk = "<strong>At risk:</strong>" in row_of(html, name)
        assert at_risk == (stored[name] == 1), name
