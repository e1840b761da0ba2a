"""No request waits on a first search (issue 27, item 4): a monitor state whose anticipation
was never searched is answered "not yet known" - by the guard and by the Live page - and
searched off the request's thread (the embedded default: the process's background thread);
asked again once it is searched, the answer has it.  States the live rules reach first are
searched ahead, at approval."""

from __future__ import annotations

import json
import threading
import time

import pytest

from studio.guard import services as guard_services
from studio.live import anticipation as live_anticipation
from studio.live.ingest import clear_caches
from studio.logic.anticipation import RuleAnticipation
from studio.monitor import anticipation as core
from studio.monitor.anticipation_ahead import BackgroundSearches, reachable, warm
from studio.monitor.session import RuleSet, SessionMonitor
from studio.workspaces import services as workspace_services
from tests.live.conftest import Agent, approve, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"output": {"tool": "pay", "args": {"amount": 10}}}
LOOK = {"output": {"tool": "look", "args": {}}}
# A refund is owed and none may follow a payment: after a payment it is lost for good, though
# progression never reduces it to false.  The seven atoms of the second part put the rule past
# what is searched ahead beyond its start (``anticipation_ahead.WARM_ATOMS``).
REFUND = "F tool_call:refund & G(tool_call:pay -> G !tool_call:refund)"
WIDE = REFUND + " & G(a1 | a2 | a3 | a4 | a5 | a6 | a7 | !a1)"
SLOW_SECONDS = 0.5


@pytest.fixture
def searches(monkeypatch):
    """Every anticipation search made, as the thread it ran on; each is made expensive."""
    made: list[int] = []
    search = RuleAnticipation.search

    def slow_search(self, residual, *args, **kwargs):
        if "tool_call:refund" in residual.text:   # this test's rule (not the fixture's)
            made.append(threading.get_ident())
            time.sleep(SLOW_SECONDS)
        return search(self, residual, *args, **kwargs)

    monkeypatch.setattr(RuleAnticipation, "search", slow_search)
    return made


@pytest.fixture(autouse=True)
def _fresh():
    clear_caches()
    guard_services.forget_policies()
    yield
    background = live_anticipation.background()
    if background is not None:
        background.idle()
    clear_caches()
    guard_services.forget_policies()


def _idle():
    background = live_anticipation.background()
    assert background is not None, "the embedded default searches on a background thread"
    assert background.idle(60)


def _agent(workspace, owner):  # noqa: F811
    _, secret = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    return Agent(workspace.slug, token=secret)


def _ask(agent, session, body):
    response = agent.client.post(agent.url(session, "guard"), data=json.dumps(body).encode(),
                                 content_type="application/json",
                                 headers={"Authorization": f"Bearer {agent.token}"})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_first_guard_request_does_not_search_and_a_later_one_knows(
        workspace, owner, searches):  # noqa: F811
    approve(workspace, owner, "refund_owed", WIDE)
    agent = _agent(workspace, owner)
    _idle()  # what approval searched ahead (the rule's start) is done
    me = threading.get_ident()
    before = len(searches)

    first = _ask(agent, "s1", {"event": PAY})
    assert me not in searches, "a search ran on the request's thread"
    assert "refund_owed" in first["not_yet_known"]
    assert "not yet known" in first["reason"]
    assert "refund_owed" not in [r["rule"] for r in first["rules_at_risk"]]  # no guess

    _idle()
    assert len(searches) > before  # searched meanwhile, on the background thread
    assert me not in searches
    again = _ask(agent, "s1", {"event": PAY})
    assert again["not_yet_known"] == []
    assert again["decision"] != "allow"
    assert "refund_owed" in [r["rule"] for r in again["rules_at_risk"]]


def test_the_live_page_says_not_yet_known_then_the_verdict(workspace, owner, searches,  # noqa: F811
                                                            client):
    approve(workspace, owner, "refund_owed", WIDE)
    agent = _agent(workspace, owner)
    _idle()
    client.force_login(owner)
    me = threading.get_ident()

    assert agent.post("s1", [{"event_id": "e1", **PAY}]).status_code == 200
    rows = client.get(f"/w/{workspace.slug}/live/rows").content.decode()
    assert me not in searches
    assert "Not yet known" in rows

    _idle()
    rows = client.get(f"/w/{workspace.slug}/live/rows").content.decode()
    assert "Not yet known" not in rows
    assert "Broken for good" in rows


def test_states_near_the_start_are_searched_ahead_at_approval(workspace, owner,  # noqa: F811
                                                              searches):
    approve(workspace, owner, "refund_owed", REFUND)
    agent = _agent(workspace, owner)
    _idle()
    searched = len(searches)
    assert searched > 0   # ahead of any request

    paid = _ask(agent, "s1", {"event": PAY})
    assert paid["not_yet_known"] == []
    assert "refund_owed" in [r["rule"] for r in paid["rules_at_risk"]]
    assert len(searches) == searched   # the request searched nothing


def test_one_search_however_many_requests_ask(workspace, owner, searches):  # noqa: F811
    approve(workspace, owner, "refund_owed", WIDE)
    agent = _agent(workspace, owner)
    _idle()
    before = len(searches)
    answers = [_ask(agent, f"s{k}", {"event": PAY}) for k in range(4)]
    assert "refund_owed" in answers[0]["not_yet_known"]
    for answer in answers:   # not yet known, or (once searched) known: never a guess
        assert ("refund_owed" in answer["not_yet_known"]) != (answer["decision"] != "allow")
    _idle()
    # Four sessions meet the same state after a payment: it is searched once.
    assert len(searches) - before == 1


# ---------------------------------------------------------------------------------------------
# Pure: the searches made ahead agree with searches made on demand

def test_warm_decides_what_observing_would_and_shares_through_a_store():
    class Store:
        def __init__(self):
            self.rows: dict = {}

        def get(self, rule_key, state_key):
            return self.rows.get((rule_key, state_key))

        def put(self, rule_key, state_key, data):
            self.rows.setdefault((rule_key, state_key), data)

        def load(self, rule_keys):
            return {k: v for k, v in self.rows.items() if k[0] in rule_keys}

    rules = [("refund", REFUND), ("ack", "G(req -> F[0,3] ack)"), ("big", "G(data.x > 5 -> F ok)")]
    store = Store()
    saved = core.configured()
    core.configure(store=store)
    try:
        ahead = core.Anticipator(RuleSet(rules))
        assert warm(ahead) > 0
        assert all(len(reachable(ahead, i)) >= 1 for i in range(len(rules)))
        # Another process (a fresh rule set and anticipator) reads them back: no search.
        other = core.Anticipator(RuleSet(rules))
        monitor = SessionMonitor(other.ruleset)
        for event in ({"labels": ["req"]}, {"labels": ["tool_call:pay"], "data": {"x": 9}}):
            monitor.feed(event)
            waited = core.SessionAnticipation(monitor, other, resume=False, wait=False)
            waited.observe(event)
            assert waited.not_yet_known() == set()
            assert other.searches == 0
            fresh = core.SessionAnticipation(monitor, core.Anticipator(RuleSet(rules)),
                                             resume=False)
            fresh.observe(event)
            assert [v.value for v in waited.verdicts] == [v.value for v in fresh.verdicts]
    finally:
        core.configure(*saved)


@pytest.fixture
def pure():
    """The core as it is without the studio: no store, nothing searched later."""
    saved = core.configured()
    core.configure()
    yield
    core.configure(*saved)


def test_background_searches_coalesce_and_fill_the_memo(pure):
    ruleset = RuleSet([("refund", WIDE)])
    background = BackgroundSearches()
    anticipator = core.Anticipator(ruleset)
    assert anticipator.store is None
    anticipator.later = background
    monitor = SessionMonitor(ruleset)
    event = {"labels": ["tool_call:pay"]}
    monitor.feed(event)
    for _ in range(3):
        assert core.SessionAnticipation(monitor, anticipator, resume=False,
                                        wait=False).observe(event) is not None
    assert background.idle(60)
    assert anticipator.searches == 1
    assert threading.get_ident() not in background.threads
    found = core.SessionAnticipation(monitor, anticipator, resume=False, wait=False)
    found.observe(event)
    assert found.permanently_violated() == {"refund"}
    assert found.not_yet_known() == set()


def test_a_worker_decides_a_state_for_every_process(searches):
    """With a broker the web process hands the state to ``worker.live.anticipate_state`` (its
    body called here); the verdict it stores is known to a process that never searched it."""
    from worker.live import anticipate_state

    ruleset = RuleSet([("refund", WIDE)])
    monitor = SessionMonitor(ruleset)
    monitor.feed({"labels": ["tool_call:pay"]})
    state = monitor.trac[0].state
    memory = state.carry.values if state.carry is not None and state.residual.has_past else None
    web = core.Anticipator(ruleset)
    sent = []
    web.later = lambda anticipator, i, s, c: sent.append((i, s, c))   # what is handed over
    assert web.known(0, state, ()) is None
    core.SessionAnticipation(monitor, web, resume=False, wait=False).observe()
    assert sent == [(0, state, ())]

    value = anticipate_state(WIDE, state.residual.text,
                             list(memory) if memory is not None else None, [])
    assert value == "permanently_violated"
    other = core.Anticipator(RuleSet([("refund", WIDE)]))   # another process, after the worker
    again = SessionMonitor(other.ruleset)
    again.feed({"labels": ["tool_call:pay"]})
    anticipation = core.SessionAnticipation(again, other, resume=False, wait=False)
    anticipation.observe()
    assert anticipation.permanently_violated() == {"refund"}
    assert other.searches == 0
