"""The merge scenario of paper 001 (section 2, figure 2) as canonical events.

Three lifelines.  The TestRunner starts on candidate c42, its required checks pass and it reports
that to the Committer; the report arrives before the Orchestrator's merge proposal.  Meanwhile a
subsequent check fails and the TestRunner sends an update, which is still in transit when the
Committer, triggered by the proposal, decides whether to merge (the choice event).

Causally, the latest TestRunner event the Committer can see is the first report (status passed,
candidate c42), so the guard holds and the merge goes ahead.  A sequential log ordered by time
shows the failure before the decision, so a naive reading of it blocks the merge: the two readings
disagree exactly at the choice event.  ``with_delivery=True`` adds the delivery of the update and
a second decision, where both readings agree that the merge is blocked.
"""

from __future__ import annotations

MERGE_GUARD = 'TestRunner.cand == cand & @TestRunner (status != "failed" S status == "passed")'
MERGE_GUARDS = {
    "merge_ok": {
        "owner": "Committer",
        "cpl": MERGE_GUARD,
        "description": "Merge only if the latest TestRunner state visible to the Committer "
                       "concerns the proposed candidate, its required checks passed, and no "
                       "failure is recorded since (paper 001, section 2).",
    },
}
SESSION = "msc-merge-demo"
LIFELINES = ("Orchestrator", "TestRunner", "Committer")


def _event(step: int, second: int, lifeline: str, output: str, data: dict | None = None,
           message: dict | None = None) -> dict:
    event = {"session": SESSION, "step": step, "lifeline": lifeline,
             "timestamp": f"2026-01-15T10:00:{second:02d}Z", "input": None, "output": output,
             "data": data or {}}
    if message is not None:
        event["message"] = message
    return event


def merge_scenario(with_delivery: bool = False) -> list[dict]:
    """The events of figure 2, in log (time) order."""
    events = [
        _event(0, 0, "TestRunner", "start the test suite on candidate c42",
               {"cand": "c42", "status": "running"}),
        _event(1, 5, "TestRunner", "required pre-merge checks passed", {"status": "passed"}),
        _event(2, 6, "TestRunner", "report: c42 passed the required checks", {},
               {"id": "report-1", "peer": "Committer", "kind": "send"}),
        _event(3, 7, "Orchestrator", "prepare the merge proposal for c42", {"cand": "c42"}),
        _event(4, 8, "Committer", "received the test report", {},
               {"id": "report-1", "peer": "TestRunner", "kind": "receive"}),
        _event(5, 9, "Orchestrator", "propose: merge c42", {},
               {"id": "proposal-1", "peer": "Committer", "kind": "send"}),
        _event(6, 10, "TestRunner", "a subsequent check found a regression", {"status": "failed"}),
        _event(7, 11, "TestRunner", "update: c42 failed", {},
               {"id": "report-2", "peer": "Committer", "kind": "send"}),
        _event(8, 12, "Committer", "received the merge proposal for c42", {"cand": "c42"},
               {"id": "proposal-1", "peer": "Orchestrator", "kind": "receive"}),
        _event(9, 13, "Committer", "decide: merge c42?", {"choice": "merge_ok"}),
    ]
    if with_delivery:
        events += [
            _event(10, 14, "Committer", "received the test update", {},
                   {"id": "report-2", "peer": "TestRunner", "kind": "receive"}),
            _event(11, 15, "Committer", "decide again: merge c42?", {"choice": "merge_ok"}),
        ]
    return events


MERGE_CHOICE_INDEX = 9   # the decision where the readings disagree
UPDATE_SEND_INDEX = 7    # the update still in transit at the decision
