"""A stateful test of live ingestion (RELIABILITY 17): posting, duplicate deliveries, event ids in
no particular order, process caches lost, candidates checked - against a model that is the
offline SessionMonitor over the events stored so far."""

import uuid

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, multiple, rule

from studio.labeling import Labeling
from studio.live.ingest import clear_caches
from studio.monitor import RuleSet, SessionMonitor
from studio.monitor.verdicts import verdict_words, with_old_names
from tests.live.conftest import RULES, Agent

pytestmark = pytest.mark.django_db

EVENTS = [
    {"output": {"tool": "ship", "args": {"amount": 20000}}},
    {"output": {"tool": "pay", "args": {"amount": 50}}},
    {"output": {"tool": "delete", "args": {}}},
    {"output": {"tool": "search", "args": {"q": "x"}}},
    {"labels": ["approved"]},
    {"data": {"stop_reason": "end_turn"}},
    {"input": "hello", "output": "hi"},
]
RULESET = RuleSet(sorted(RULES))
LABELING = Labeling()


def canonical(event):
    return {"lifeline": "", "input": event.get("input"), "output": event.get("output"),
            "data": event.get("data") or {}, "labels": event.get("labels")}


def rule_states(monitor):
    """The model's states in the words the answers use (complied, violated, open)."""
    return {t.machines.rule.name: (verdict_words(t.verdict), t.residual.text, len(o.violations))
            for t, o in zip(monitor.trac, monitor.violation_monitors)}


def in_words(changes):
    """The model's changes as the answers give them: the verdict in words, the old beside."""
    return [with_old_names(c, ("verdict",)) if "verdict" in c else c for c in changes]


class LiveIngestion(RuleBasedStateMachine):
    agent: Agent  # set by the test

    def __init__(self):
        super().__init__()
        self.session = f"h-{uuid.uuid4().hex[:12]}"
        self.model = SessionMonitor(RULESET)
        self.history: list[dict] = []          # events stored, in step order
        self.posted: dict[str, tuple[dict, int]] = {}
        self.last_rules = None

    ids = Bundle("ids")

    def _feed_model(self, event):
        previous = canonical(self.history[-1]) if self.history else None
        changes = self.model.feed(LABELING.label(canonical(event), previous))
        self.history.append(event)
        return in_words(changes)

    def _post(self, batch):
        response = self.agent.post(self.session, batch)
        assert response.status_code == 200, response.content
        body = response.json()
        self.last_rules = {r["rule"]: (r["verdict"], r["residual"], r["violations"])
                           for r in body["rules"]}
        return body["events"]

    @rule(target=ids, event=st.sampled_from(EVENTS),
          numeric=st.booleans(), salt=st.integers(0, 10**9))
    def post(self, event, numeric, salt):
        # Ids in no order at all: random text or a number, never increasing with the step.
        event_id = str(salt) + uuid.uuid4().hex[:6] if not numeric else str(
            uuid.uuid4().int % 10**12)
        posted = {**event, "event_id": event_id}
        (item,) = self._post([posted])
        expected = self._feed_model(posted)
        assert item["status"] == "stored" and item["step"] == len(self.history) - 1
        assert item["changes"] == expected
        self.posted[event_id] = (posted, item["step"])
        return event_id

    @rule(target=ids, events=st.lists(st.sampled_from(EVENTS), min_size=2, max_size=4),
          repeat=st.booleans())
    def post_batch(self, events, repeat):
        batch = [{**e, "event_id": uuid.uuid4().hex} for e in events]
        if repeat:
            batch.append(dict(batch[0]))  # a repeat inside the batch
        items = self._post(batch)
        for posted, item in zip(batch, items):
            if repeat and item is items[-1]:
                assert item["status"] == "duplicate" and item["changes"] == []
                assert item["step"] == items[0]["step"]
                continue
            assert item["status"] == "stored"
            assert item["changes"] == self._feed_model(posted)
            self.posted[posted["event_id"]] = (posted, item["step"])
        return multiple(*[p["event_id"] for p in batch[:len(events)]])

    @rule(event_id=ids)
    def duplicate(self, event_id):
        posted, step = self.posted[event_id]
        before = rule_states(self.model)
        (item,) = self._post([posted])
        assert item["status"] == "duplicate" and item["step"] == step
        assert item["changes"] == []
        assert self.last_rules == before

    @rule()
    def lose_process_caches(self):
        clear_caches()  # as if the next delivery reached another server process

    @rule(candidate=st.sampled_from(EVENTS))
    def query(self, candidate):
        response = self.agent.post(self.session, [candidate], "check")
        assert response.status_code == 200
        (answer,) = response.json()["candidates"]
        reference = SessionMonitor(RULESET)
        previous = None
        for event in self.history:
            reference.feed(LABELING.label(canonical(event), previous))
            previous = canonical(event)
        changes = reference.feed(LABELING.label(canonical(candidate), previous))
        after = rule_states(reference)
        for r in answer["rules"]:
            mine = [c for c in changes if c["rule"] == r["rule"]]
            assert r["violates"] == any(c.get("verdict") == "violated" or "violation" in c
                                        for c in mine)
            assert (r["verdict"], r["residual"]) == after[r["rule"]][:2]

    @invariant()
    def verdicts_match_the_model(self):
        if self.last_rules is not None:
            assert self.last_rules == rule_states(self.model)


def test_live_ingestion_behaves_like_the_offline_monitor(workspace, token):
    LiveIngestion.agent = Agent("acme", token=token)
    runner = LiveIngestion.TestCase
    runner.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                               suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.function_scoped_fixture])
    runner().runTest()
