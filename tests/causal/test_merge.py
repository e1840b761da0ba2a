"""The merge scenario of paper 001 (section 2, figure 2), and its demo files."""

from __future__ import annotations

import io
import json
from pathlib import Path

from studio.causal import (
    CausalMonitor,
    build_msc,
    causal_past,
    evaluate_denotational,
    parse_cpl,
    run_monitor,
)
from studio.causal.examples import (
    LIFELINES,
    MERGE_CHOICE_INDEX,
    MERGE_GUARD,
    MERGE_GUARDS,
    UPDATE_SEND_INDEX,
    merge_scenario,
)
from studio.traces.formats.jsonl import parse_jsonl

DEMO = Path(__file__).resolve().parents[2] / "studio" / "web" / "demo"


def test_the_readings_disagree_exactly_at_the_committers_choice():
    msc = build_msc(merge_scenario())
    decisions = run_monitor(msc, MERGE_GUARDS)
    assert len(decisions) == 1
    decision = decisions[0]
    assert decision.event_index == MERGE_CHOICE_INDEX and decision.step == 9
    assert decision.lifeline == "Committer" and decision.guard == "merge_ok"
    assert decision.guard_text == parse_cpl(MERGE_GUARD).text
    assert decision.causal_value is True        # the Committer may merge: it saw the pass
    assert decision.sequential_value is False   # a log ordered by time shows the failure first
    assert decision.disagrees
    # What each reading sees of the TestRunner: 3 events causally, all 5 in the log.
    t = msc.lifelines.index("TestRunner")
    assert decision.causal_clock[t] == 3 and decision.log_clock[t] == 5


def test_the_update_is_in_transit_and_outside_the_causal_past():
    msc = build_msc(merge_scenario())
    assert msc.in_transit == [UPDATE_SEND_INDEX]
    past = causal_past(msc, MERGE_CHOICE_INDEX)
    assert past == {0, 1, 2, 3, 4, 5, 8, 9}
    assert 6 not in past and UPDATE_SEND_INDEX not in past   # the failure and its update
    assert msc.latest_visible(MERGE_CHOICE_INDEX, "TestRunner") == 2   # the first report
    assert msc.events[2].valuation == {"cand": "c42", "status": "passed"}


def test_the_oracle_agrees_on_both_readings():
    msc = build_msc(merge_scenario())
    assert evaluate_denotational(msc, MERGE_GUARD, MERGE_CHOICE_INDEX) is True
    assert evaluate_denotational(msc, MERGE_GUARD, MERGE_CHOICE_INDEX, "sequential") is False
    # The parts of the guard, as the paper reads them.
    same = "TestRunner.cand == cand"
    passed = '@TestRunner (status != "failed" S status == "passed")'
    for text, causal, sequential in [(same, True, True), (passed, True, False)]:
        assert evaluate_denotational(msc, text, MERGE_CHOICE_INDEX) is causal
        assert evaluate_denotational(msc, text, MERGE_CHOICE_INDEX, "sequential") is sequential


def test_once_the_update_arrives_both_readings_block_the_merge():
    msc = build_msc(merge_scenario(with_delivery=True))
    decisions = run_monitor(msc, MERGE_GUARDS)
    assert [(d.event_index, d.causal_value, d.sequential_value, d.disagrees)
            for d in decisions] == [(9, True, False, True), (11, False, False, False)]
    assert msc.in_transit == []


def test_a_different_candidate_blocks_the_merge_in_both_readings():
    events = merge_scenario()
    events[8] = dict(events[8], data={"cand": "c43"})
    decisions = run_monitor(build_msc(events), MERGE_GUARDS)
    assert [(d.causal_value, d.sequential_value) for d in decisions] == [(False, False)]


def test_online_monitor_in_another_causal_order_decides_the_same_causally():
    # Deliver the Orchestrator's proposal path before the TestRunner's report path.
    events = merge_scenario()
    order = [3, 5, 0, 1, 2, 4, 8, 9, 6, 7]
    monitor = CausalMonitor(LIFELINES, MERGE_GUARDS)
    decisions = [d for i in order for d in monitor.process(events[i], i)]
    assert [(d.event_index, d.causal_value) for d in decisions] == [(9, True)]
    # Here the TestRunner's failure (6, 7) reaches the monitor only after the decision, so the
    # log as received agrees with causality.
    assert decisions[0].sequential_value is True and not decisions[0].disagrees
    assert monitor.in_transit == ["report-2"]


def test_the_demo_log_imports_and_reproduces_the_disagreement():
    raw = (DEMO / "msc_merge.jsonl").read_bytes()
    imported = list(parse_jsonl(io.BytesIO(raw)))
    assert all(isinstance(e, dict) for e in imported), imported
    assert [e["step"] for e in imported] == list(range(10))
    assert [e["message"] for e in imported] == [e.get("message") for e in merge_scenario()]
    assert [json.loads(line) for line in raw.decode().splitlines()] == merge_scenario()
    guards = json.loads((DEMO / "msc_merge_guards.json").read_text(encoding="utf-8"))
    assert guards["guards"] == MERGE_GUARDS
    decisions = run_monitor(build_msc(imported), guards["guards"])
    assert [(d.step, d.disagrees) for d in decisions] == [(9, True)]
