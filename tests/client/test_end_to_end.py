"""The client and the worked example against the real server (Django's live server, over HTTP),
with a real token, a real webhook secret and an approved rule that a payment needs a balance
check first."""

import pytest
import json
import threading

from django.test import Client, override_settings

from studio.client import GuardedSession, GuardStopped, StudioClient, StudioError
from studio.live.ingest import clear_caches
from studio.rules.models import RuleSet
from studio.traces.models import Event
from studio.workspaces import services as workspace_services
from tests.live.conftest import approve

RULE = "!tool_call:send_money W tool_call:get_balance"
GUARD_KEYS = {"decision_id", "decision", "status", "candidate", "reason", "risk", "risk_any",
              "predictor", "horizon", "threshold", "backed", "rules_at_risk", "inject", "model",
              "poll"}

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_caches()
    _forget_policies()
    yield
    clear_caches()
    _forget_policies()


def _forget_policies():
    try:
        from studio.guard import services as guard_services
    except ImportError:  # not built yet
        return
    if hasattr(guard_services, "forget_policies"):
        guard_services.forget_policies()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner", password="pw-owner-123")


@pytest.fixture
def workspace(owner):
    ws = workspace_services.create_workspace("Payments", owner=owner, slug="pay")
    approve(ws, owner, "pay_after_balance", RULE)
    return ws


@pytest.fixture
def token(workspace, owner):
    return workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)[1]


@pytest.fixture
def client(live_server, token):
    return StudioClient(live_server.url, "pay", token=token, timeout=20)


def tools_stored(session: str) -> list:
    return [e.output.get("tool") if isinstance(e.output, dict) else None
            for e in Event.objects.filter(session__external_id=session).order_by("step")]


def test_the_example_unguarded_is_judged_by_the_studio(client, example):
    lines = []
    result = example.run(GuardedSession(client, "loop-1"), example.StandInModel(),
                         guarded=False, log=lines.append)
    # The stand-in paid first; the studio said so at the payment (step 1, after the user's turn).
    assert [name for name, _ in result["executed"]] == ["send_money"]
    assert "studio: rule pay_after_balance is violated at step 1" in lines
    # Every verdict in words: a violation found reads "violated", never "is None".
    assert not any(line.endswith("None") or " None " in line for line in lines), lines
    assert result["end"]["rules"][0]["verdict"] == "violated"
    assert tools_stored("loop-1") == [None, "send_money", None, None]


def test_a_signed_client_sends_checks_and_ends(live_server, workspace, owner):
    secret = workspace_services.create_webhook_secret(workspace, "payments agent",
                                                     by=owner).secret
    client = StudioClient(live_server.url, "pay", webhook_secret=secret, timeout=20)
    pay = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
    check = client.check("s-1", [pay])["candidates"][0]
    assert check["violates"] is True
    answer = client.send_events("s-1", [{"event_id": "b1", "output": {
        "tool": "get_balance", "args": {"account": "me"}}}])
    assert answer["stored"] == 1
    assert answer["events"][0]["changes"][0]["verdict"] == "complied"
    assert client.check("s-1", [pay])["candidates"][0]["violates"] is False
    # The same event again is a duplicate, not a second step.
    again = client.send_events("s-1", [{"event_id": "b1", "output": {"tool": "get_balance"}}])
    assert (again["duplicates"], again["steps"]) == (1, 1)
    ended = client.end("s-1")
    assert ended["rules"][0]["verdict"] == "complied"
    with pytest.raises(StudioError) as caught:
        client.send_events("s-1", [pay])
    assert caught.value.status == 409


def test_a_signed_client_asks_the_guard_and_reads_the_decision(live_server, workspace, owner):
    secret = workspace_services.create_webhook_secret(workspace, "payments agent",
                                                     by=owner).secret
    client = StudioClient(live_server.url, "pay", webhook_secret=secret, timeout=20)
    pay = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
    asked = client.guard("s-3", pay, decision_id="sig-1")
    # The long poll is a GET: its signature covers the empty body.
    read = client.decision("s-3", "sig-1", wait=1)
    assert (read["decision_id"], read["decision"]) == ("sig-1", asked["decision"])


def test_real_refusals_are_studio_errors(live_server, client, workspace, owner):
    with pytest.raises(StudioError) as caught:
        StudioClient(live_server.url, "pay", token="not-a-token").send_events("s", [{}])
    assert caught.value.status == 401 and "bearer token" in caught.value.detail
    other = workspace_services.create_workspace("Other", owner=owner, slug="other")
    foreign = workspace_services.create_token(other, "theirs", ["auditor"], by=owner)[1]
    with pytest.raises(StudioError) as caught:
        StudioClient(live_server.url, "pay", token=foreign).send_events("s", [{}])
    assert caught.value.status == 404
    with pytest.raises(StudioError) as caught:
        client.send_events("s", [{"labels": 3}])
    assert (caught.value.status, caught.value.field) == (422, "labels")
    assert Event.objects.count() == 0


def test_the_rate_limit_is_a_studio_error_with_its_retry_after(live_server, token):
    client = StudioClient(live_server.url, "pay", token=token, max_retry_wait=0)
    with override_settings(LIVE_RATE_LIMIT_PER_MINUTE=1):
        client.send_events("s", [{"event_id": "1"}])
        with pytest.raises(StudioError) as caught:
            client.send_events("s", [{"event_id": "2"}])
    assert caught.value.status == 429
    assert 1 <= caught.value.retry_after <= 61
    assert "requests this minute" in caught.value.detail


def test_the_guarded_example_never_pays_before_the_balance_check(client, example):
    lines = []
    result = example.run(GuardedSession(client, "loop-2"), example.StandInModel(),
                         log=lines.append)
    print("\n".join(lines))
    stored = tools_stored("loop-2")
    # Whatever the workspace's policy decides (resample, inject, switch, best-of-n, stop), the
    # payment is neither run nor stored before the balance check.
    assert result["end"]["rules"][0]["verdict"] != "violated", lines
    executed = [name for name, _ in result["executed"]]
    assert executed in (["get_balance", "send_money"], []), lines
    if result["stopped"]:
        assert "send_money" not in stored
    else:
        assert stored.index("get_balance") < stored.index("send_money")
    for step in result["steps"]:
        for answer in step.answers:
            assert GUARD_KEYS <= set(answer), answer


def test_the_real_guard_answers_the_same_decision_id_the_same_way(client):
    pay = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
    first = client.guard("s-2", pay, decision_id="d-1")
    again = client.guard("s-2", pay, decision_id="d-1")
    assert again.pop("repeated") is True
    assert first == again
    assert first["decision"] != "allow"  # the payment would violate the rule at once
    assert first["decision_id"] == "d-1"
    assert Event.objects.count() == 0  # the guard stores nothing


# ---------------------------------------------------------------------------------------------
# The real guard under each kind of policy (set as staff do, through the API)

@pytest.fixture
def set_policy(workspace, owner):
    ruleset = RuleSet.objects.create(workspace=workspace, name="payments", live=True)
    ruleset.rules.set(workspace.rules.all())
    staff = Client()
    staff.force_login(owner)

    def put(policy: dict):
        answer = staff.put(f"/api/w/pay/rule-sets/{ruleset.pk}/guard-policy",
                           data=json.dumps({"policy": policy}), content_type="application/json")
        assert answer.status_code == 200, answer.content
        _forget_policies()

    put.staff = staff
    return put


def run_guarded(example, client, session, **options):
    lines = []
    result = example.run(GuardedSession(client, session), example.StandInModel(),
                         log=lines.append, **options)
    return result, lines


@pytest.mark.parametrize("policy, options, decision", [
    ({"default_intervention": "inject"}, {}, "inject"),
    ({"default_intervention": "switch", "safer_model": "careful-1"}, {}, "switch"),
    ({"default_intervention": "best_of_n"}, {"samples": 3}, "best_of_n"),
])
def test_each_intervention_of_the_real_guard_is_applied(client, example, set_policy, policy,
                                                        options, decision):
    set_policy(policy)
    result, lines = run_guarded(example, client, "p-1", **options)
    assert [name for name, _ in result["executed"]] == ["get_balance", "send_money"], lines
    first = result["steps"][0]
    assert first.answers[0]["decision"] == decision, lines
    if decision == "inject":
        assert first.hint and first.hint == first.answers[0]["inject"]
    if decision == "switch":
        assert first.model == "careful-1"
    if decision == "best_of_n":
        assert first.candidate is not None and first.attempts == 0
    assert result["end"]["rules"][0]["verdict"] == "complied"


def test_a_stop_policy_stops_the_loop_before_the_payment(client, example, set_policy):
    set_policy({"default_intervention": "stop"})
    result, lines = run_guarded(example, client, "p-2")
    assert result["stopped"] and result["executed"] == [], lines
    assert "send_money" not in tools_stored("p-2")


def test_the_servers_resample_limit_ends_in_its_fallback(client, set_policy):
    set_policy({"max_resamples": 2, "fallback": "stop"})
    pay = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
    calls = []
    with pytest.raises(GuardStopped) as caught:
        GuardedSession(client, "p-3").step(lambda hint, model: calls.append(1) or pay)
    assert [a["decision"] for a in caught.value.answers] == ["resample", "resample", "stop"]
    assert len(calls) == 3
    assert tools_stored("p-3") == []


def test_a_person_approves_while_the_agent_waits(client, set_policy, workspace):
    from studio.guard import services as guard_services

    set_policy({"default_intervention": "ask_human"})
    pay = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
    outcome = {}

    def agent():
        try:
            outcome["step"] = GuardedSession(client, "p-4", human_timeout=30).step(
                lambda hint, model: pay)
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        pending = []
        for _ in range(100):
            pending = guard_services.pending_decisions(workspace)
            if pending:
                break
            thread.join(0.1)
        assert pending, outcome
        answer = set_policy.staff.post(f"/api/w/pay/guard/decisions/{pending[0].pk}/approve",
                                       data="{}", content_type="application/json")
        assert answer.status_code == 200, answer.content
    finally:
        thread.join(40)
    assert "error" not in outcome, outcome
    step = outcome["step"]
    assert (step.answer["status"], step.answer["decision"]) == ("approved", "allow")
    assert step.answers[0]["status"] == "pending"
    # Approved: the payment is taken and stored, and the rule says what it is.
    assert tools_stored("p-4") == ["send_money"]
    assert step.changes[0]["verdict"] == "violated"


def test_nobody_answering_applies_the_servers_default(client, set_policy):
    set_policy({"default_intervention": "ask_human", "human_timeout_seconds": 1})
    pay = {"output": {"tool": "send_money", "args": {"to": "bob", "amount": 50}}}
    with pytest.raises(GuardStopped) as caught:
        GuardedSession(client, "p-5", human_timeout=10).step(lambda hint, model: pay)
    assert (caught.value.answer["status"], caught.value.answer["decision"]) == (
        "timed_out", "stop")
    assert tools_stored("p-5") == []
