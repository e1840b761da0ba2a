"""The live service on the database: steps in arrival order, idempotency, monitor state that
resumes exactly (compared with the offline SessionMonitor), rebuilds, candidates."""

import time

import pytest

from studio.labeling import Labeling
from studio.live import snapshots
from studio.live.context import live_versions
from studio.live.ingest import clear_caches, ingest
from studio.live.reading import check
from studio.live.snapshots import STATE_FORMAT
from studio.monitor import RuleSet, SessionMonitor
from studio.rules import monitoring
from studio.rules.models import Labeler, RuleVersion, VersionStatus
from studio.rules.models import RuleSet as RuleSetModel
from studio.traces.models import Event, TraceSession
from tests.live.conftest import RULES, approve

pytestmark = pytest.mark.django_db

SESSION = [
    {"event_id": "a", "output": {"tool": "search", "args": {"q": "x"}}},
    {"event_id": "b", "output": {"tool": "ship", "args": {"amount": 20000}}},
    {"event_id": "c", "output": {"tool": "delete", "args": {}}},
    {"event_id": "d", "labels": ["approved"]},
    {"event_id": "e", "output": {"tool": "pay", "args": {"amount": 50000}}},
    {"event_id": "f", "output": {"tool": "delete", "args": {}}, "stop_reason": "end_turn"},
]


def offline(events, rules=RULES, labeling=None):
    """The reference: the pure monitor over the same events, labelled the same way."""
    labeling = labeling or Labeling()
    monitor = SessionMonitor(RuleSet(sorted(rules)))  # live monitors order rules by name
    changes, previous = [], None
    for event in events:
        canonical = {"lifeline": "", "input": event.get("input"), "output": event.get("output"),
                     "data": dict(event.get("data") or {}), "labels": event.get("labels")}
        for key in ("stop_reason", "role"):
            if key in event:
                canonical["data"][key] = event[key]
        changes.append(monitor.feed(labeling.label(canonical, previous)))
        previous = canonical
    states = {t.machines.rule.name: (t.verdict, t.residual.text, len(o.violations))
              for t, o in zip(monitor.trac, monitor.violation_monitors)}
    return changes, states


def states_of(result):
    return {r["rule"]: (r["verdict"], r["residual"], r["violations"]) for r in result["rules"]}


@pytest.mark.parametrize("batch", [1, 2, 6])
def test_verdict_changes_and_residuals_match_the_offline_monitor(workspace, batch):
    results = []
    for start in range(0, len(SESSION), batch):
        if start % (2 * batch):
            clear_caches()  # every other batch resumes from the saved JSON state
        results.append(ingest(workspace, "s1", SESSION[start:start + batch]))
    changes, states = offline(SESSION)
    got = [item["changes"] for r in results for item in r["events"]]
    assert got == changes
    assert [item["step"] for r in results for item in r["events"]] == list(range(len(SESSION)))
    assert states_of(results[-1]) == states
    assert states["pay_before_ship"][0] == "violated" and states["no_delete"][2] == 2
    assert states["ends"][0] == "satisfied"


def test_cached_and_reloaded_monitors_agree(workspace, monkeypatch,
                                            django_capture_on_commit_callbacks):
    """One process keeping the session's monitor, and a new process for every delivery: the
    same answers, and the same snapshots (saved every SNAPSHOT_EVERY events)."""
    monkeypatch.setattr(snapshots, "SNAPSHOT_EVERY", 2)
    cached, reloaded = [], []
    for event in SESSION:
        with django_capture_on_commit_callbacks(execute=True):  # kept, as after a commit
            cached.append(ingest(workspace, "cached", [event]))
    for event in SESSION:
        clear_caches()
        reloaded.append(ingest(workspace, "reloaded",
                               [{**event, "event_id": "r" + event["event_id"]}]))

    def answers(results):
        return [([item["changes"] for item in r["events"]], r["rules"], r["rebuilt"])
                for r in results]

    assert answers(cached) == answers(reloaded)
    a = TraceSession.objects.get(external_id="cached").monitor_state
    b = TraceSession.objects.get(external_id="reloaded").monitor_state
    assert a["monitor"] == b["monitor"] and a["steps"] == b["steps"] == len(SESSION)


def test_the_saved_state_is_small_and_has_no_witnesses(workspace):
    ingest(workspace, "s1", SESSION)
    state = TraceSession.objects.get(external_id="s1").monitor_state
    assert state["format"] == STATE_FORMAT and state["steps"] == len(SESSION)
    assert [name for name, _ in state["versions"]] == sorted(name for name, _ in RULES)
    assert "'witness': [{" not in repr(state)


def test_a_delivery_twice_stores_one_event_and_reports_its_changes_once(workspace):
    first = ingest(workspace, "s1", SESSION[:2])
    again = ingest(workspace, "s1", SESSION[:2])
    assert first["stored"] == 2 and again["stored"] == 0 and again["duplicates"] == 2
    assert [i["status"] for i in again["events"]] == ["duplicate", "duplicate"]
    assert [i["step"] for i in again["events"]] == [0, 1]
    assert all(i["changes"] == [] for i in again["events"])
    assert any(i["changes"] for i in first["events"])
    assert states_of(again) == states_of(first)
    assert Event.objects.filter(session__external_id="s1").count() == 2
    # A repeat inside one batch is a duplicate of the first occurrence.
    inside = ingest(workspace, "s2", [{"event_id": "z"}, {"event_id": "z"}])
    assert [i["status"] for i in inside["events"]] == ["stored", "duplicate"]


def test_an_event_id_of_another_session_is_refused_for_that_item(workspace):
    ingest(workspace, "s1", [{"event_id": "x"}])
    result = ingest(workspace, "s2", [{"event_id": "x"}, {"event_id": "y"}])
    assert [i["status"] for i in result["events"]] == ["error", "stored"]
    assert result["events"][0]["field"] == "event_id" and result["events"][1]["step"] == 0


def test_bad_items_are_named_and_the_others_stored(workspace):
    result = ingest(workspace, "s1", [
        {"event_id": "ok1"}, "text", {"data": [1]}, {"labels": "approved"},
        {"timestamp": "yesterday"}, {"session": "other"}, {"input": "a\x00b"},
        {"lifeline": "x" * 201}, {"message": {"id": "m", "kind": "shout"}}, {"event_id": "ok2"}])
    statuses = [i["status"] for i in result["events"]]
    assert statuses == ["stored"] + ["error"] * 8 + ["stored"]
    fields = [i.get("field") for i in result["events"][1:9]]
    assert fields == [None, "data", "labels", "timestamp", "session", None, "lifeline",
                      "message.kind"]
    assert [i["step"] for i in result["events"] if i["status"] == "stored"] == [0, 1]
    assert result["rejected"] == 8 and result["stored"] == 2


def test_canonical_fields_and_free_fields(workspace):
    ingest(workspace, "s1", [{
        "event_id": 17, "step": 99, "lifeline": "planner", "timestamp": "2025-01-31T12:00:00Z",
        "input": "hi", "output": {"tool": "pay", "args": {}}, "data": {"k": 1},
        "labels": ["approved"], "role": "assistant",
        "message": {"id": "m1", "peer": "executor", "kind": "send"}}])
    event = Event.objects.get(session__external_id="s1")
    assert event.step == 0 and event.event_id == "17" and event.source == "live"
    assert event.data == {"k": 1, "role": "assistant"}
    assert event.timestamp.isoformat() == "2025-01-31T12:00:00+00:00"
    assert (event.message_id, event.message_peer, event.message_kind) == ("m1", "executor",
                                                                          "send")


def test_a_new_rule_version_rebuilds_the_state_from_the_stored_events(workspace, owner):
    ingest(workspace, "s1", SESSION[:3])
    approve(workspace, owner, "no_delete", "G !tool_call:drop")      # v2 replaces v1
    approve(workspace, owner, "searched", "F tool_call:search")       # a new rule
    result = ingest(workspace, "s1", SESSION[3:4])
    assert result["rebuilt"] is True
    rules = [(n, f) for n, f in RULES if n != "no_delete"] + [
        ("no_delete", "G !tool_call:drop"), ("searched", "F tool_call:search")]
    _, states = offline(SESSION[:4], rules)
    assert states_of(result) == states
    assert states["searched"][0] == "satisfied" and states["no_delete"][2] == 0
    assert ingest(workspace, "s1", SESSION[4:5])["rebuilt"] is False


def test_a_session_with_events_but_no_state_is_rebuilt(workspace):
    ingest(workspace, "s1", SESSION[:3])
    TraceSession.objects.filter(external_id="s1").update(monitor_state=None)
    clear_caches()
    result = ingest(workspace, "s1", SESSION[3:])
    assert result["rebuilt"] is True
    assert states_of(result) == offline(SESSION)[1]


def test_workspace_labelers_label_live_events(workspace, owner):
    Labeler.objects.create(workspace=workspace, atom="approved", kind="field",
                           config={"path": "data.approver", "op": "!=", "value": ""})
    result = ingest(workspace, "s1", [
        {"event_id": "1", "output": {"tool": "ship", "args": {"amount": 20000}}},
        {"event_id": "2", "data": {"approver": "kim"}}])
    assert states_of(result)["big_needs_approval"][1].startswith("G ")  # discharged
    assert result["events"][1]["changes"] == []
    labeling = monitoring.labeling_for(workspace)
    _, states = offline([{"output": {"tool": "ship", "args": {"amount": 20000}}},
                         {"data": {"approver": "kim"}}], labeling=labeling)
    assert states_of(result) == states


def test_check_answers_per_candidate_and_stores_nothing(workspace):
    ingest(workspace, "s1", SESSION[:1])
    before = (Event.objects.count(), TraceSession.objects.get(external_id="s1").monitor_state)
    answer = check(workspace, "s1", [
        {"output": {"tool": "delete", "args": {}}},
        {"output": {"tool": "pay", "args": {}}},
        {"data": "not an object"}])
    assert (Event.objects.count(), TraceSession.objects.get(external_id="s1").monitor_state
            ) == before
    delete, pay, bad = answer["candidates"]
    by_rule = {r["rule"]: r for r in delete["rules"]}
    assert delete["violates"] is True and by_rule["no_delete"]["violates"] is True
    assert by_rule["no_delete"]["violations"] == [{"trigger": 1, "detected": 1}]
    assert by_rule["no_delete"]["residual"] == "false"
    assert pay["violates"] is False
    assert {r["rule"]: r for r in pay["rules"]}["pay_before_ship"]["residual"] == "true"
    assert bad["field"] == "data"
    # Each candidate stands alone, from the session as stored; an unknown session is empty.
    fresh = check(workspace, "nobody", [{"output": {"tool": "ship", "args": {}}}])
    assert fresh["steps"] == 0 and fresh["candidates"][0]["violates"] is True
    assert not TraceSession.objects.filter(external_id="nobody").exists()


def test_one_query_live_versions_agree_with_the_shared_helper(workspace, owner):
    def same():
        assert ([v.id for v in live_versions(workspace)]
                == [v.id for v in monitoring.live_versions(workspace)])

    same()
    approve(workspace, owner, "no_delete", "G !tool_call:drop")
    draft = RuleVersion.objects.create(rule=RuleVersion.objects.filter(
        rule__name="ends").first().rule, number=9, formula="true", author=owner,
        status=VersionStatus.DRAFT)
    assert draft.id not in [v.id for v in live_versions(workspace)]
    same()
    live = RuleSetModel.objects.create(workspace=workspace, name="live", live=True)
    same()  # a live set with no rules: nothing is monitored
    assert live_versions(workspace) == []
    live.rules.add(*workspace.rules.filter(name__in=["ends", "no_delete"]))
    same()
    RuleSetModel.objects.create(workspace=workspace, name="also", live=True).rules.add(
        *workspace.rules.filter(name__in=["no_delete", "pay_before_ship"]))
    same()
    assert [v.rule for v in live_versions(workspace)] == [
        "ends", "no_delete", "pay_before_ship"]


def test_live_events_continue_after_gaps_left_by_an_upload(db):
    """An uploaded session with steps 0, 1, 5 (count 3): live events go to 6, 7 - never 5."""
    from studio.live.ingest import ingest
    from studio.traces.models import Event, TraceSession
    from studio.workspaces.services import create_user, create_workspace

    owner = create_user("gap-owner", "a long password 123")
    workspace = create_workspace("Gaps", owner=owner)
    session = TraceSession.objects.create(workspace=workspace, external_id="s", steps=3)
    for step in (0, 1, 5):
        Event.objects.create(workspace=workspace, session=session, step=step, data={})
    result = ingest(workspace, "s", [{"event_id": "a"}, {"event_id": "b"}], "live", owner)
    assert [item["step"] for item in result["events"]] == [6, 7]
    assert sorted(Event.objects.filter(session=session).values_list("step", flat=True)) == [
        0, 1, 5, 6, 7]


def test_the_live_rules_are_reread_when_they_change_here_and_within_the_ttl_otherwise(
        workspace, owner, settings, monkeypatch):
    settings.LIVE_CONTEXT_SECONDS = 2
    first = ingest(workspace, "s1", [{"output": {"tool": "ship"}}])
    assert "shipping_audit" not in {r["rule"] for r in first["rules"]}
    # Approved through this process (a save): the next delivery is checked against it at once.
    approve(workspace, owner, "shipping_audit", "G !tool_call:ship")
    second = ingest(workspace, "s1", [{"output": {"tool": "ship"}}])
    assert {r["rule"]: r["verdict"] for r in second["rules"]}["shipping_audit"] == "violated"
    # Withdrawn behind this process's back (another server's write): seen once the TTL passes.
    RuleVersion.objects.filter(rule__name="shipping_audit").update(status=VersionStatus.REJECTED)
    cached = ingest(workspace, "s2", [{"output": {"tool": "ship"}}])
    assert "shipping_audit" in {r["rule"] for r in cached["rules"]}
    clock = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: clock + 3)
    fresh = ingest(workspace, "s2", [{"output": {"tool": "ship"}}])
    assert "shipping_audit" not in {r["rule"] for r in fresh["rules"]}


def test_the_next_step_is_remembered_until_an_upload_adds_to_the_session(db):
    """Live, live (no MAX(step) query: the saved state knows where to go on), then an upload
    adds steps 9 and 10 behind the monitor's back, then live again: after 10, never a clash."""
    from django.db import connection
    from django.db.models import F
    from django.test.utils import CaptureQueriesContext

    from studio.live.ingest import ingest
    from studio.traces.models import Event, TraceSession
    from studio.workspaces.services import create_user, create_workspace

    owner = create_user("next-owner", "a long password 123")
    workspace = create_workspace("Next", owner=owner)
    ingest(workspace, "s", [{"event_id": "a"}, {"event_id": "b"}], "live", owner)
    with CaptureQueriesContext(connection) as queries:
        second = ingest(workspace, "s", [{"event_id": "c"}], "live", owner)
    assert [item["step"] for item in second["events"]] == [2]
    assert not any("MAX(" in q["sql"].upper() for q in queries.captured_queries)
    session = TraceSession.objects.get(external_id="s")
    for step in (9, 10):  # what an upload's loader does: insert, then count the steps
        Event.objects.create(workspace=workspace, session=session, step=step, data={})
    TraceSession.objects.filter(pk=session.pk).update(steps=F("steps") + 2)
    third = ingest(workspace, "s", [{"event_id": "d"}], "live", owner)
    assert [item["step"] for item in third["events"]] == [11]


@pytest.mark.parametrize("durable", [True, False])
def test_a_delivery_waits_for_the_disk_unless_told_not_to(workspace, settings, durable):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit is Postgres's")
    settings.LIVE_DURABLE_COMMIT = durable
    with CaptureQueriesContext(connection) as queries:
        result = ingest(workspace, "s-disk", SESSION[:2])
    asynchronous = [q for q in queries if "synchronous_commit TO OFF" in q["sql"]]
    assert len(asynchronous) == (0 if durable else 1)
    assert [item["step"] for item in result["events"]] == [0, 1]
    assert Event.objects.filter(session__external_id="s-disk").count() == 2
