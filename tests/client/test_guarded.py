"""GuardedSession applies each guard decision (against the fake studio): what is proposed again
and with what, what is stored, what stops the step."""

import pytest

from studio.client import (DecisionPending, GuardedSession, GuardStopped, Proposal, StudioClient,
                           StudioError)
from tests.client.fake import answer

PAY = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
BALANCE = {"output": {"tool": "get_balance", "args": {"account": "me"}}}


class Proposer:
    """Hands out the given proposals in order (the last repeats) and records each call."""

    def __init__(self, *proposals):
        self.proposals = list(proposals)
        self.calls = []

    def __call__(self, hint, model):
        self.calls.append((hint, model))
        index = min(len(self.calls), len(self.proposals)) - 1
        return self.proposals[index]


def guard_answers(fake, *answers):
    fake.route("POST", "/guard", [(200, a) for a in answers])


def stored(fake):
    return [e for r in fake.of("/events") for e in r.body["events"]]


def test_allow_stores_the_proposed_event_under_the_steps_id(fake, client):
    guard_answers(fake, answer("allow"))
    propose = Proposer(BALANCE)
    step = GuardedSession(client, "s1").step(propose)
    assert propose.calls == [(None, None)]
    question = fake.of("/guard")[0].body
    assert question["event"] == BALANCE and question["attempt"] == 0
    step_id = question["decision_id"].removesuffix("-0")
    assert stored(fake) == [{**BALANCE, "event_id": step_id}]
    assert step.event == {**BALANCE, "event_id": step_id}
    assert step.candidate is None and step.attempts == 0
    assert step.answer["decision"] == "allow" and len(step.answers) == 1
    assert step.verdict["stored"] == 1 and step.changes == []


def test_an_event_id_of_its_own_is_kept_and_the_proposal_is_not_changed(fake, client):
    guard_answers(fake, answer("allow"))
    event = {**BALANCE, "event_id": "mine"}
    GuardedSession(client, "s1").step(Proposer(event))
    assert stored(fake)[0]["event_id"] == "mine"
    unnamed = dict(BALANCE)
    GuardedSession(client, "s1").step(Proposer(unnamed))
    assert "event_id" not in unnamed


def test_resample_proposes_again_with_the_attempt_counted(fake, client):
    guard_answers(fake, answer("resample"), answer("allow"))
    propose = Proposer(PAY, BALANCE)
    step = GuardedSession(client, "s1").step(propose)
    assert propose.calls == [(None, None), (None, None)]
    first, second = (r.body for r in fake.of("/guard"))
    assert (first["event"], first["attempt"]) == (PAY, 0)
    assert (second["event"], second["attempt"]) == (BALANCE, 1)
    # One step, one id; each question its own decision id (the same id would get the same
    # answer back).
    assert first["decision_id"].endswith("-0") and second["decision_id"].endswith("-1")
    assert first["decision_id"][:-2] == second["decision_id"][:-2]
    assert [e["output"] for e in stored(fake)] == [BALANCE["output"]]
    assert step.attempts == 1 and [a["decision"] for a in step.answers] == ["resample", "allow"]


def test_best_of_n_stores_the_named_candidate(fake, client):
    other = {"output": {"tool": "get_balance", "args": {"account": "savings"}}}
    guard_answers(fake, answer("best_of_n", candidate=1))
    step = GuardedSession(client, "s1").step(Proposer((PAY, [BALANCE, other])))
    question = fake.of("/guard")[0].body
    assert question["candidates"] == [{"event": BALANCE}, {"event": other}]
    assert step.candidate == 1
    assert [e["output"] for e in stored(fake)] == [other["output"]]


def test_later_proposals_carry_the_steps_earlier_ones_as_candidates(fake, client):
    """So that, once the policy's resamples are spent, the guard can take the least risky
    proposal of the step (best_accepted) - here the first one, named after the latest's own."""
    other = {"output": {"tool": "get_balance", "args": {"account": "savings"}}}
    guard_answers(fake, answer("resample"), answer("resample"), answer("best_of_n", candidate=2))
    propose = Proposer(Proposal(BALANCE, continuation=[PAY]), PAY, (PAY, [other]))
    step = GuardedSession(client, "s1").step(propose)
    first, second, third = (r.body for r in fake.of("/guard"))
    assert first.get("candidates") is None
    assert second["candidates"] == [{"event": BALANCE, "continuation": [PAY]}]
    assert third["candidates"] == [{"event": other}, {"event": PAY},
                                   {"event": BALANCE, "continuation": [PAY]}]
    assert step.candidate == 2 and step.sent == third["candidates"]
    assert [e["output"] for e in stored(fake)] == [BALANCE["output"]]


def test_candidates_may_carry_their_continuations(fake, client):
    guard_answers(fake, answer("best_of_n", candidate=0))
    proposal = Proposal(PAY, continuation=[BALANCE],
                        candidates=[{"event": BALANCE, "continuation": [PAY]}])
    GuardedSession(client, "s1").step(Proposer(proposal))
    question = fake.of("/guard")[0].body
    assert question["continuation"] == [BALANCE]
    assert question["candidates"] == [{"event": BALANCE, "continuation": [PAY]}]
    assert stored(fake)[0]["output"] == BALANCE["output"]


@pytest.mark.parametrize("index", [None, 2, -1, True, "0"])
def test_best_of_n_naming_no_candidate_sent_is_an_error_and_stores_nothing(fake, client, index):
    guard_answers(fake, answer("best_of_n", candidate=index))
    with pytest.raises(StudioError) as caught:
        GuardedSession(client, "s1").step(Proposer((PAY, [BALANCE, BALANCE])))
    assert caught.value.field == "candidate"
    assert stored(fake) == []


def test_inject_proposes_again_with_the_hint(fake, client):
    hint = "Call get_balance before send_money."
    guard_answers(fake, answer("inject", inject=hint), answer("allow"))
    propose = Proposer(PAY, BALANCE)
    step = GuardedSession(client, "s1").step(propose)
    assert propose.calls == [(None, None), (hint, None)]
    assert step.hint == hint and stored(fake)[0]["output"] == BALANCE["output"]


def test_switch_proposes_again_with_the_safer_model(fake, client):
    guard_answers(fake, answer("switch", model="careful-1"), answer("allow"))
    propose = Proposer(PAY, BALANCE)
    step = GuardedSession(client, "s1").step(propose)
    assert propose.calls == [(None, None), (None, "careful-1")]
    assert step.model == "careful-1"


def test_hint_and_model_stay_for_the_rest_of_the_step(fake, client):
    guard_answers(fake, answer("inject", inject="h"), answer("switch", model="m"),
                  answer("resample"), answer("allow"))
    propose = Proposer(PAY)
    GuardedSession(client, "s1").step(propose)
    assert propose.calls == [(None, None), ("h", None), ("h", "m"), ("h", "m")]


def test_stop_raises_with_the_reason_and_stores_nothing(fake, client):
    rules = [{"rule": "pay_after_balance", "risk": 1.0, "intervention": "stop",
              "requires": None}]
    guard_answers(fake, answer("stop", reason="send_money before get_balance",
                               rules_at_risk=rules))
    with pytest.raises(GuardStopped) as caught:
        GuardedSession(client, "s1").step(Proposer(PAY))
    assert caught.value.reason == "send_money before get_balance"
    assert caught.value.answer["rules_at_risk"] == rules
    assert stored(fake) == []


def test_proposals_are_bounded(fake, client):
    guard_answers(fake, answer("resample"))
    propose = Proposer(PAY)
    with pytest.raises(GuardStopped) as caught:
        GuardedSession(client, "s1", max_proposals=3).step(propose)
    assert len(propose.calls) == 3 and len(caught.value.answers) == 3
    assert "3 times" in caught.value.reason
    assert [r.body["attempt"] for r in fake.of("/guard")] == [0, 1, 2]
    assert stored(fake) == []


def test_an_unknown_decision_is_not_a_permission(fake, client):
    guard_answers(fake, answer("maybe"))
    with pytest.raises(GuardStopped, match="unknown guard decision 'maybe'"):
        GuardedSession(client, "s1").step(Proposer(PAY))
    assert stored(fake) == []


# ---------------------------------------------------------------------------------------------
# Asking a human

def ask(fake, *later):
    guard_answers(fake, answer("ask_human", status="pending", decision_id="q-1",
                               poll="/api/w/acme/live/sessions/s1/guard/q-1"))
    fake.route("GET", "/guard/q-1", [(200, a) for a in later])


def test_ask_human_approved_stores_the_event(fake, client):
    ask(fake, answer("ask_human", status="pending", decision_id="q-1"),
        answer("allow", status="approved", decision_id="q-1"))
    step = GuardedSession(client, "s1").step(Proposer(PAY))
    assert step.answer["status"] == "approved"
    assert [a["status"] for a in step.answers] == ["pending", "approved"]  # the last poll
    assert stored(fake)[0]["output"] == PAY["output"]


def test_ask_human_denied_stops(fake, client):
    ask(fake, answer("stop", status="denied", reason="denied by ann"))
    with pytest.raises(GuardStopped, match="denied by ann"):
        GuardedSession(client, "s1").step(Proposer(PAY))
    assert stored(fake) == []


@pytest.mark.parametrize("default, taken", [("allow", True), ("stop", False)])
def test_ask_human_timed_out_applies_the_policys_default(fake, client, default, taken):
    ask(fake, answer(default, status="timed_out"))
    session = GuardedSession(client, "s1")
    if taken:
        assert session.step(Proposer(PAY)).answer["status"] == "timed_out"
    else:
        with pytest.raises(GuardStopped):
            session.step(Proposer(PAY))
    assert len(stored(fake)) == (1 if taken else 0)


def test_ask_human_timed_out_into_a_resample_proposes_again(fake, client):
    ask(fake, answer("resample", status="timed_out"))
    fake.route("POST", "/guard", [(200, answer("ask_human", status="pending",
                                               decision_id="q-1")),
                                  (200, answer("allow"))])
    propose = Proposer(PAY, BALANCE)
    GuardedSession(client, "s1").step(propose)
    assert len(propose.calls) == 2
    assert stored(fake)[0]["output"] == BALANCE["output"]


def test_nobody_answering_in_time_stops_the_step(fake, client):
    ask(fake, answer("ask_human", status="pending", decision_id="q-1"))
    with pytest.raises(DecisionPending) as caught:
        GuardedSession(client, "s1", human_timeout=0.5).step(Proposer(PAY))
    assert isinstance(caught.value, GuardStopped)
    assert "nobody answered within 0.5 s" in caught.value.reason
    assert stored(fake) == []


def test_a_refused_taken_event_is_raised(fake, client):
    guard_answers(fake, answer("allow"))
    fake.route("POST", "/events", [(409, {"detail": "the session has ended"})])
    with pytest.raises(StudioError) as caught:
        GuardedSession(client, "s1").step(Proposer(PAY))
    assert caught.value.status == 409


@pytest.mark.parametrize("proposal", ["send money", (PAY, BALANCE), (PAY, ["x"]), None])
def test_propose_must_return_an_event(fake, client, proposal):
    with pytest.raises(TypeError):
        GuardedSession(client, "s1").step(lambda hint, model: proposal)
    assert fake.requests == []


def test_record_and_end_skip_the_guard(fake, client):
    fake.route("POST", "/end", [(200, {"rules": []})])
    session = GuardedSession(client, "s1")
    session.record([{"input": {"balance": 120}}])
    session.end()
    assert [r.path.rsplit("/", 1)[1] for r in fake.requests] == ["events", "end"]


def test_guarded_session_uses_any_studio_client(fake):
    guard_answers(fake, answer("allow"))
    client = StudioClient(fake.url, "acme", token="t")
    assert GuardedSession(client, "s1").step(Proposer(PAY)).event["output"] == PAY["output"]
