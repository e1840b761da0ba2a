"""Live monitoring across server processes: a session's monitors are those of one monitor that
saw every stored event in step order, whichever process takes which delivery, whatever each
process still remembers, and however far the saved snapshot lags."""

import random

import pytest
from django.db.models import F

from bench.workloads import RULES_20, agent_events
from studio.caching import LruCache
from studio.labeling import Labeling
from studio.live import snapshots, storage
from studio.live.ingest import ingest
from studio.live.reading import check
from studio.monitor import RuleSet, SessionMonitor
from studio.traces.models import Event, TraceSession, monitor_event
from studio.workspaces import services as workspace_services
from tests.live.conftest import approve

pytestmark = pytest.mark.django_db

K = 4  # snapshot every K events in these tests


@pytest.fixture(autouse=True)
def _small_snapshots(monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_EVERY", K)


@pytest.fixture
def workspace(owner):
    ws = workspace_services.create_workspace("Twenty", owner=owner, slug="twenty")
    for name, formula in RULES_20:  # prev(), bounded F, past operators, data atoms
        approve(ws, owner, name, formula)
    return ws


def events(n, seed=7, prefix="e"):
    out = agent_events(n, seed=seed)
    for i, event in enumerate(out):
        event["event_id"] = f"{prefix}{i}"
        if i % 4 == 0:
            event["output"] = {"tool": "pay", "args": {"amount": event["data"]["amount"]}}
    return out


class Reference:
    """The offline monitor over the same events, labelled the same way, with every violation."""

    def __init__(self):
        self.monitor = SessionMonitor(RuleSet(sorted(RULES_20)))
        self.labeling = Labeling()
        self.steps = 0

    def feed(self, event, step=None):
        step = self.steps if step is None else step
        canonical = monitor_event(None, step, "", event.get("input"), event.get("output"),
                                  event.get("data") or {}, event.get("labels"))
        self.steps = step + 1
        return self.monitor.feed(self.labeling.label(canonical))

    def rules(self):
        return {t.machines.rule.name: (t.verdict, t.residual.text, len(o.violations))
                for t, o in zip(self.monitor.trac, self.monitor.violation_monitors)}


def rules_of(result):
    return {r["rule"]: (r["verdict"], r["residual"], r["violations"]) for r in result["rules"]}


class Processes:
    """Server processes: each has its own cache of session monitors, and keeps what a delivery
    committed (the callbacks run, as after a real commit)."""

    def __init__(self, monkeypatch, capture, count):
        self.caches = [LruCache(snapshots._MONITORS_MAX) for _ in range(count)]
        self.monkeypatch = monkeypatch
        self.capture = capture

    def _enter(self, which):
        if which is None:  # a process that never saw the session
            self.monkeypatch.setattr(snapshots, "_MONITORS", LruCache(snapshots._MONITORS_MAX))
        else:
            self.monkeypatch.setattr(snapshots, "_MONITORS", self.caches[which])

    def ingest(self, which, workspace, session, batch):
        self._enter(which)
        with self.capture(execute=True):
            return ingest(workspace, session, batch)

    def check(self, which, workspace, session, candidates):
        self._enter(which)
        return check(workspace, session, candidates)


@pytest.fixture
def processes(monkeypatch, django_capture_on_commit_callbacks):
    return lambda count: Processes(monkeypatch, django_capture_on_commit_callbacks, count)


def deliveries(stream, seed):
    """The stream cut into batches of 1 to 3 events."""
    rng = random.Random(seed)
    i = 0
    while i < len(stream):
        size = rng.choice([1, 1, 1, 2, 3])
        yield stream[i:i + size]
        i += size


@pytest.mark.parametrize("who", ["one process", "two processes", "a new process each time"])
def test_answers_are_those_of_one_monitor_whichever_process_takes_a_delivery(
        workspace, processes, who):
    stream = events(90)
    group = processes(2)
    rng = random.Random(3)
    reference = Reference()
    for batch in deliveries(stream, seed=5):
        which = {"one process": 0, "two processes": rng.randrange(2),
                 "a new process each time": None}[who]
        result = group.ingest(which, workspace, "s", batch)
        assert result["rebuilt"] is False
        for event, item in zip(batch, result["events"]):
            assert item["status"] == "stored" and item["step"] == reference.steps
            assert item["changes"] == reference.feed(event)
        assert rules_of(result) == reference.rules()
    session = TraceSession.objects.get(external_id="s")
    assert session.steps == len(stream)
    # The snapshot lags by less than K events (and is saved once per K, not per delivery).
    assert len(stream) - K < session.monitor_state["steps"] <= len(stream)


def test_a_new_process_restores_the_snapshot_and_replays_only_the_events_after_it(
        workspace, processes, monkeypatch):
    group = processes(1)
    stream = events(4 * K + 2)
    reference = Reference()
    for event in stream[:-1]:
        group.ingest(0, workspace, "s", [event])
        reference.feed(event)
    state = TraceSession.objects.get(external_id="s").monitor_state
    assert (state["steps"], state["next_step"]) == (4 * K, 4 * K)  # the last multiple of K
    read_from = []
    real_read = storage.read_events
    monkeypatch.setattr(storage, "read_events",
                        lambda pk, step: read_from.append(step) or real_read(pk, step))
    result = group.ingest(None, workspace, "s", [stream[-1]])
    assert read_from == [4 * K]  # the events after the snapshot, not the whole session
    assert result["rebuilt"] is False
    assert result["events"][0]["changes"] == reference.feed(stream[-1])
    assert rules_of(result) == reference.rules()


def test_a_cached_monitor_that_other_writers_moved_past_is_brought_up_to_date(
        workspace, processes):
    group = processes(2)
    stream = events(40)
    reference = Reference()

    def post(which, batch):
        result = group.ingest(which, workspace, "s", batch)
        for event, item in zip(batch, result["events"]):
            assert item["changes"] == reference.feed(event)
        assert rules_of(result) == reference.rules()
        return result

    post(0, stream[:5])
    post(1, stream[5:8])     # process 0's monitor is now 3 events behind
    post(0, stream[8:9])
    post(1, stream[9:10])
    # Events added behind the webhook's back (an upload does this: insert, then count them).
    session = TraceSession.objects.get(external_id="s")
    for step, event in enumerate(stream[10:12], start=10):
        Event.objects.create(workspace=workspace, session=session, step=step,
                             output=event.get("output"), data=event["data"],
                             labels=event["labels"])
        reference.feed(event)
    TraceSession.objects.filter(pk=session.pk).update(steps=F("steps") + 2)
    result = post(0, stream[12:13])
    assert result["events"][0]["step"] == 12
    # Far behind (more than 2K events): restored from the snapshot instead.
    post(1, stream[13:14])
    post(0, stream[14:30])
    result = post(1, stream[30:31])
    assert result["rebuilt"] is False


def test_a_cached_monitor_of_a_session_that_was_replaced_is_not_used(workspace, processes):
    group = processes(1)
    old = events(6, seed=1, prefix="old")
    for event in old:
        group.ingest(0, workspace, "s", [event])
    TraceSession.objects.filter(external_id="s").delete()  # and its events
    new = events(3, seed=2, prefix="new")
    reference = Reference()
    for event in new:
        result = group.ingest(0, workspace, "s", [event])
        assert result["events"][0]["changes"] == reference.feed(event)
    assert rules_of(result) == reference.rules()
    assert result["steps"] == 3


def test_a_snapshot_that_does_not_fit_the_stored_events_is_not_used(workspace, processes):
    """A snapshot claiming more events below its step than there are: rebuilt from them all."""
    group = processes(1)
    stream = events(2 * K + 1)
    reference = Reference()
    for event in stream[:-1]:
        group.ingest(0, workspace, "s", [event])
        reference.feed(event)
    session = TraceSession.objects.get(external_id="s")
    state = session.monitor_state
    state["steps"] += 1
    TraceSession.objects.filter(pk=session.pk).update(monitor_state=state)
    result = group.ingest(None, workspace, "s", stream[-1:])
    assert result["rebuilt"] is True
    assert result["events"][0]["changes"] == reference.feed(stream[-1])
    assert rules_of(result) == reference.rules()


def test_check_answers_from_the_session_as_stored_in_any_process(workspace, processes):
    group = processes(2)
    stream = events(3 * K + 1)
    reference = Reference()
    for i, event in enumerate(stream):
        group.ingest(i % 2, workspace, "s", [event])
        reference.feed(event)
    candidate = {"labels": ["delete", "refund"], "data": {"amount": 5000, "risk": 0.95}}
    before = (Event.objects.count(), TraceSession.objects.get(external_id="s").monitor_state)
    answers = [group.check(which, workspace, "s", [candidate])["candidates"][0]
               for which in (0, 1, None)]
    assert answers[0] == answers[1] == answers[2]
    assert (Event.objects.count(),
            TraceSession.objects.get(external_id="s").monitor_state) == before
    changes = reference.feed(candidate)
    after = reference.rules()
    for rule in answers[0]["rules"]:
        mine = [c for c in changes if c["rule"] == rule["rule"]]
        assert rule["violates"] == any(c.get("verdict") == "violated" or "violation" in c
                                       for c in mine)
        assert (rule["verdict"], rule["residual"]) == after[rule["rule"]][:2]


def test_events_stored_below_what_a_cached_monitor_covers_make_it_unusable(workspace, processes):
    """An uploaded session with gaps (steps 0, 1, 5), live events after it, then a gap filled
    (step 3) behind the monitors' back: the cached monitor and the snapshot no longer describe
    the events below their step, so the session is re-monitored from all of them."""
    group = processes(1)
    stream = events(7)
    session = TraceSession.objects.create(workspace=workspace, external_id="s", steps=3)

    def store(step, event):
        Event.objects.create(workspace=workspace, session=session, step=step,
                             output=event.get("output"), data=event["data"],
                             labels=event["labels"])

    for step, event in zip((0, 1, 5), stream[:3]):
        store(step, event)
    first = group.ingest(0, workspace, "s", stream[3:4])
    assert first["rebuilt"] is True and first["events"][0]["step"] == 6
    group.ingest(0, workspace, "s", stream[4:5])           # step 7, kept in process 0
    store(3, stream[5])
    TraceSession.objects.filter(pk=session.pk).update(steps=F("steps") + 1)
    result = group.ingest(0, workspace, "s", stream[6:7])
    assert result["rebuilt"] is True and result["events"][0]["step"] == 8
    reference = Reference()
    for step, event in zip((0, 1, 3, 5, 6, 7), [*stream[:2], stream[5], stream[2], *stream[3:5]]):
        reference.feed(event, step)
    assert result["events"][0]["changes"] == reference.feed(stream[6], 8)
    assert rules_of(result) == reference.rules()
