"""``GuardedSession``: one agent step at a time, asked of the guard before it is taken.

The agent hands ``step`` a ``propose(hint, model)`` function that samples its next event (a
tool call, say).  The guard answers with a decision, which the session applies:

- ``allow``: the proposed event is taken;
- ``best_of_n``: the candidate the answer names is taken instead;
- ``resample``: ``propose`` is called again;
- ``inject``: ``propose`` is called again with the answer's text as ``hint`` (for the prompt);
- ``switch``: ``propose`` is called again with the safer ``model`` the answer names;
- ``ask_human``: the session waits for the human (or the server's timeout), then applies the
  decision that comes back (``allow`` when approved, ``stop`` when denied);
- ``stop``: ``GuardStopped`` is raised with the guard's reason; nothing is taken.

Each new proposal sends ``attempt`` (how many were made before it in this step), so the guard's
policy can escalate, and sends the step's earlier proposals as candidates after its own, so that
once the policy's resamples are spent the guard can take the least risky proposal the exact check
accepts (``best_accepted``); the client also gives up (GuardStopped) after ``max_proposals``.  The event
taken is then posted to the events route - the guard stores nothing - and ``step`` returns it
with the verdict changes.  Each guard question has a decision id made of the step's uuid and the
attempt, and the stored event gets the step's uuid as its event id (unless it has one), so a
retried request is recognised rather than counted twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .core import StudioClient
from .errors import DecisionPending, GuardStopped, StudioError

DECISIONS = ("allow", "resample", "best_of_n", "inject", "switch", "ask_human", "stop")
PROPOSE_AGAIN = ("resample", "inject", "switch")
MAX_CANDIDATES = 32   # the most candidates one guard question may carry


@dataclass
class Proposal:
    """What ``propose`` samples: the next event, optionally its sampled continuation (the steps
    after it) and other sampled next events.  A candidate is an event or ``{"event": ...,
    "continuation": [...]}``.  ``propose`` may also return just the event, or
    ``(event, candidates)``."""

    event: dict
    continuation: list[dict] | None = None
    candidates: list[dict] | None = None

    @classmethod
    def of(cls, value: Any) -> Proposal:
        if isinstance(value, Proposal):
            proposal = value
        elif isinstance(value, dict):
            proposal = cls(value)
        elif (isinstance(value, (tuple, list)) and len(value) == 2
              and isinstance(value[0], dict) and isinstance(value[1], (list, tuple, type(None)))):
            proposal = cls(value[0], candidates=list(value[1]) if value[1] is not None else None)
        else:
            raise TypeError("propose must return an event (a dict), (event, candidates) or a "
                            f"Proposal, not {type(value).__name__}")
        if proposal.candidates is not None:
            proposal.candidates = [_candidate(c) for c in proposal.candidates]
        return proposal


def _candidate(value: Any) -> dict:
    if isinstance(value, dict) and "event" in value and set(value) <= {"event", "continuation"}:
        return value
    if isinstance(value, dict):
        return {"event": value}
    raise TypeError(f"a candidate is an event (a dict), not {type(value).__name__}")


@dataclass
class StepResult:
    """A step taken: the event stored, where it came from, and what the studio said."""

    event: dict               # as stored (with its event_id)
    candidate: int | None     # None: the proposal's own event; else its index in ``sent``
    proposal: Proposal        # the proposal the event was taken from
    answer: dict              # the guard answer that let it through
    answers: list[dict]       # every guard answer of the step, in order
    verdict: dict             # the events route's answer for the stored event
    hint: str | None = None   # the last hint proposed with (inject)
    model: str | None = None  # the model proposed with (switch)
    attempts: int = 0         # proposals made before the one that was taken
    sent: list[dict] | None = None  # the candidates asked about: the proposal's, then earlier ones

    @property
    def changes(self) -> list[dict]:
        """The verdict changes the stored event caused."""
        events = self.verdict.get("events") or [{}]
        return events[0].get("changes") or []


class GuardedSession:
    """One live session of an agent, each step asked of the guard before it is taken.

    ``max_proposals`` bounds the proposals of one step (resample, inject, switch); past it the
    step is stopped.  ``human_timeout`` is how long a step waits for a human (``ask_human``)
    before it is stopped (DecisionPending).  With ``event_ids`` an event taken without an
    ``event_id`` is stored under the step's uuid, so posting it again is a duplicate.
    """

    def __init__(self, client: StudioClient, session: str, *, max_proposals: int = 10,
                 human_timeout: float = 300.0, event_ids: bool = True):
        if max_proposals < 1:
            raise ValueError("max_proposals must be at least 1")
        self.client = client
        self.session = session
        self.max_proposals = max_proposals
        self.human_timeout = human_timeout
        self.event_ids = event_ids

    def step(self, propose: Callable[[str | None, str | None], Any]) -> StepResult:
        """Propose, ask the guard, apply its decision, store the event taken.  Raises
        GuardStopped (nothing stored) when the guard does not let the step through."""
        step_id = uuid.uuid4().hex
        hint: str | None = None
        model: str | None = None
        answers: list[dict] = []
        earlier: list[dict] = []   # this step's refused proposals, newest first
        for attempt in range(self.max_proposals):
            proposal = Proposal.of(propose(hint, model))
            sent = (list(proposal.candidates or ()) + earlier)[:MAX_CANDIDATES]
            answer = self.client.guard(self.session, proposal.event, proposal.continuation,
                                       sent or None, decision_id=f"{step_id}-{attempt}",
                                       attempt=attempt)
            answers.append(answer)
            answer = self._settled(answer, answers)
            decision = answer.get("decision")
            if decision == "allow":
                return self._take(step_id, proposal, sent, None, answer, answers, hint, model,
                                  attempt)
            if decision == "best_of_n":
                index = _candidate_index(answer, sent)
                return self._take(step_id, proposal, sent, index, answer, answers, hint, model,
                                  attempt)
            if decision == "stop":
                raise GuardStopped(answer.get("reason") or "the guard stopped this step",
                                   answer, answers)
            if decision == "inject":
                hint = answer.get("inject") or hint
            elif decision == "switch":
                model = answer.get("model") or model
            elif decision != "resample":
                # An answer this client does not know is not a permission.
                raise GuardStopped(f"unknown guard decision {decision!r}", answer, answers)
            refused = {"event": proposal.event}
            if proposal.continuation:
                refused["continuation"] = proposal.continuation
            earlier.insert(0, refused)
        last = answers[-1]
        raise GuardStopped(f"the guard asked for another proposal {self.max_proposals} times "
                           f"(last: {last.get('decision')}, {last.get('reason') or 'no reason'})"
                           "; giving up", last, answers)

    def record(self, events: Sequence[dict]) -> dict:
        """Store events the guard need not be asked about (a tool's result, a user's turn)."""
        return self.client.send_events(self.session, events)

    def end(self) -> dict:
        return self.client.end(self.session)

    def _settled(self, answer: dict, answers: list[dict]) -> dict:
        """A decided answer: an ``ask_human`` still pending is waited for."""
        if answer.get("decision") != "ask_human":
            return answer
        if answer.get("status") == "pending":
            decision_id = answer.get("decision_id")
            if not decision_id:
                raise StudioError(None, "an ask_human answer without a decision_id", body=answer)
            answer = self.client.wait_for_decision(self.session, decision_id,
                                                   self.human_timeout)
            answers.append(answer)
            if answer.get("status") == "pending":
                raise DecisionPending(f"nobody answered within {self.human_timeout:g} s: "
                                      f"{answer.get('reason') or 'a human must decide'}",
                                      answer, answers)
        if answer.get("decision") == "ask_human":
            raise GuardStopped("the guard's answer to a question was to ask again", answer,
                               answers)
        return answer

    def _take(self, step_id: str, proposal: Proposal, sent: list[dict], index: int | None,
              answer: dict, answers: list[dict], hint: str | None, model: str | None,
              attempt: int) -> StepResult:
        chosen = proposal.event if index is None else sent[index]["event"]
        event = dict(chosen)
        if self.event_ids and event.get("event_id") is None:
            event["event_id"] = step_id
        verdict = self.client.send_events(self.session, [event])
        return StepResult(event, index, proposal, answer, answers, verdict, hint, model,
                          attempt, sent)


def _candidate_index(answer: dict, sent: Sequence[dict]) -> int:
    index = answer.get("candidate")
    count = len(sent)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
        raise StudioError(None, f"best_of_n named candidate {index!r}, but {count} candidates "
                                "were sent", field="candidate", body=answer)
    return index
