"""The OpenAI Agents SDK (the real ``openai-agents`` package) guarded by the studio: its model is a
stand-in server answering /v1/chat/completions over HTTP (first a payment before any balance
check, which the rule forbids, then the balance check and the payment), and the studio is a live
test server with an approved live rule.  Nothing here is a fake of the SDK or of the studio."""

from __future__ import annotations

import json
import threading

import pytest
from django.test import Client

pytest.importorskip("agents", reason="pip install -e '.[test]' (openai-agents)")

from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig,  # noqa: E402
                    ToolInputGuardrailTripwireTriggered, function_tool)
from openai import AsyncOpenAI  # noqa: E402

from studio.client import GuardStopped, StudioClient  # noqa: E402
from studio.client.openai_agents import AgentGuard  # noqa: E402
from studio.guard import services as guard_services  # noqa: E402
from studio.rules.models import RuleSet  # noqa: E402
from studio.workspaces import services as workspace_services  # noqa: E402
from tests.integrations.chat_server import ChatServer, payments_agent  # noqa: E402
from tests.live.conftest import approve  # noqa: E402

RULE = "!tool_call:send_money W tool_call:get_balance"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ruleset(owner):
    """A workspace whose live rule set holds one approved rule: pay only after a balance check."""
    workspace = workspace_services.create_workspace("Payments", owner=owner, slug="pay")
    approve(workspace, owner, "pay_after_balance", RULE)
    ruleset = RuleSet.objects.create(workspace=workspace, name="payments", live=True)
    ruleset.rules.set(workspace.rules.all())
    return ruleset


@pytest.fixture
def studio(live_server, ruleset, owner):
    token = workspace_services.create_token(ruleset.workspace, "agent", ["auditor"], by=owner)[1]
    return StudioClient(live_server.url, "pay", token=token, timeout=20)


@pytest.fixture
def set_policy(ruleset, owner):
    staff = Client()
    staff.force_login(owner)

    def put(policy: dict):
        answer = staff.put(f"/api/w/pay/rule-sets/{ruleset.pk}/guard-policy",
                           data=json.dumps({"policy": policy}), content_type="application/json")
        assert answer.status_code == 200, answer.content
        guard_services.forget_policies()

    put.staff = staff
    return put


@pytest.fixture
def model_server():
    server = ChatServer(payments_agent)
    yield server
    server.close()


class Bank:
    """The agent's tools, counting what actually ran."""

    def __init__(self):
        self.ran: list[tuple[str, dict]] = []

        @function_tool
        def get_balance(account: str) -> str:
            """The balance of an account."""
            self.ran.append(("get_balance", {"account": account}))
            return json.dumps({"account": account, "balance": 120})

        @function_tool
        def send_money(to: str, amount: float) -> str:
            """Send money from the user's account."""
            self.ran.append(("send_money", {"to": to, "amount": amount}))
            return json.dumps({"sent": amount, "to": to, "balance": 120 - amount})

        self.tools = [get_balance, send_money]


def make_agent(server: ChatServer, bank: Bank) -> Agent:
    model = OpenAIChatCompletionsModel(
        model="stand-in", openai_client=AsyncOpenAI(base_url=server.url, api_key="not-needed"))
    return Agent(name="payments", instructions="Use the tools, then answer in one sentence.",
                 tools=bank.tools, model=model,
                 model_settings=ModelSettings(parallel_tool_calls=False))


NO_TRACING = RunConfig(tracing_disabled=True)


def stored(staff: Client, session: str) -> list[dict]:
    """The session's events as the studio's API reads them back, in step order."""
    (found,) = [s for s in staff.get("/api/w/pay/sessions").json()["items"]
                if s["external_id"] == session]
    events = staff.get(f"/api/w/pay/sessions/{found['id']}/events").json()["items"]
    assert [e["step"] for e in events] == sorted(e["step"] for e in events)
    return events


def shape(event: dict):
    """An event as (kind, what): the user's turn, a tool call, a tool result, an answer."""
    data, output = event.get("data") or {}, event.get("output")
    if isinstance(output, dict) and "tool" in output:
        return ("call", output["tool"])
    if "tool_result" in data:
        return ("result", data["tool_result"])
    if data.get("role") == "user":
        return ("user", event.get("input"))
    return ("final" if data.get("final") else "says", output)


def test_a_violating_call_is_refused_with_the_rules_reason_and_never_runs(
        studio, model_server, set_policy):
    bank, lines = Bank(), []
    guard = AgentGuard(studio, "agents-1", log=lines.append)
    result = guard.run_sync(make_agent(model_server, bank), "Send 50 to bob.",
                            run_config=NO_TRACING)

    # The payment the model asked for first was refused (the default policy resamples) and
    # never ran; the balance check and then the payment did.
    assert [name for name, _ in bank.ran] == ["get_balance", "send_money"], lines
    assert result.final_output == "Sent 50 to bob."
    (refusal,) = guard.refused
    assert refusal["decision"] != "allow"
    assert [r["rule"] for r in refusal["rules_at_risk"]] == ["pay_after_balance"]
    # The model read the rule's reason in place of the refused call's result.
    first_result = model_server.tool_messages()[0]
    assert "refused" in first_result and refusal["reason"] in first_result
    assert "pay_after_balance" in first_result

    # Recorded in order: the user's turn, what the model said, each call that ran and its
    # result, the answer; the refused call is not among them.
    events = stored(set_policy.staff, "agents-1")
    assert [shape(e) for e in events] == [
        ("user", "Send 50 to bob."), ("says", "Checking first."),
        ("call", "get_balance"), ("result", "get_balance"),
        ("call", "send_money"), ("result", "send_money"),
        ("final", "Sent 50 to bob.")]
    assert json.loads(events[5]["input"])["sent"] == 50
    # The verdict, read back from the studio after the run ended the session.
    assert guard.end_answer["rules"][0] == guard.end_answer["rules"][0] | {
        "rule": "pay_after_balance", "verdict": "complied"}
    assert "studio: at the end, pay_after_balance is complied" in lines


def test_a_stop_ends_the_run_and_the_session_before_the_payment(studio, model_server,
                                                                set_policy):
    set_policy({"default_intervention": "stop"})
    bank, lines = Bank(), []
    guard = AgentGuard(studio, "agents-2", log=lines.append)
    with pytest.raises(GuardStopped) as caught:
        guard.run_sync(make_agent(model_server, bank), "Send 50 to bob.",
                       run_config=NO_TRACING)
    assert isinstance(caught.value.__cause__, ToolInputGuardrailTripwireTriggered)
    assert caught.value.answer["decision"] == "stop"
    assert caught.value.reason == caught.value.answer["reason"]
    assert bank.ran == []
    assert [shape(e) for e in stored(set_policy.staff, "agents-2")] == [
        ("user", "Send 50 to bob.")]
    # Ended by the stop: the session's end answer is the verdict, read back.
    assert guard.end_answer["session"] == "agents-2"
    assert guard.end_answer["already_ended"] is False
    assert guard.end_answer["rules"][0]["verdict"] == "complied"


def test_unguarded_the_payment_runs_and_the_studio_says_violated(studio, model_server,
                                                                 set_policy):
    bank, lines = Bank(), []
    guard = AgentGuard(studio, "agents-3", guard=False, log=lines.append)
    guard.run_sync(make_agent(model_server, bank), "Send 50 to bob.", run_config=NO_TRACING)
    assert [name for name, _ in bank.ran] == ["send_money"]
    assert "studio: rule pay_after_balance is violated at step 1" in lines, lines
    assert not any("None" in line for line in lines), lines
    assert guard.end_answer["rules"][0]["verdict"] == "violated"
    assert [shape(e) for e in stored(set_policy.staff, "agents-3")] == [
        ("user", "Send 50 to bob."), ("call", "send_money"), ("result", "send_money"),
        ("final", "Sent 50 to bob.")]


def test_a_person_approves_the_payment_while_the_agent_waits(studio, model_server, set_policy,
                                                             ruleset):
    from studio.guard import services as guard_services

    set_policy({"default_intervention": "ask_human"})
    bank, outcome = Bank(), {}
    guard = AgentGuard(studio, "agents-4", human_timeout=30)

    def agent():
        try:
            outcome["result"] = guard.run_sync(make_agent(model_server, bank), "Send 50 to bob.",
                                               run_config=NO_TRACING)
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        pending = []
        for _ in range(150):
            pending = guard_services.pending_decisions(ruleset.workspace)
            if pending:
                break
            thread.join(0.1)
        assert pending, outcome
        assert bank.ran == []  # waiting: the payment has not run
        answer = set_policy.staff.post(f"/api/w/pay/guard/decisions/{pending[0].pk}/approve",
                                       data="{}", content_type="application/json")
        assert answer.status_code == 200, answer.content
    finally:
        thread.join(60)
    assert "error" not in outcome, outcome
    # Approved by a person: the payment ran, and the studio still says what it was.
    assert [name for name, _ in bank.ran] == ["send_money"]
    assert [a.get("status") for a in guard.answers] == ["pending", "approved"]
    assert guard.end_answer["rules"][0]["verdict"] == "violated"


def test_a_conversation_goes_on_in_the_same_session(studio, model_server, set_policy):
    bank = Bank()
    guard = AgentGuard(studio, "agents-7")
    agent = make_agent(model_server, bank)
    first = guard.run_sync(agent, "Send 50 to bob.", run_config=NO_TRACING, end=False)
    # The next turn is sent the whole conversation again: only the new message is recorded.
    guard.run_sync(agent, [*first.to_input_list(), {"role": "user", "content": "Thanks."}],
                   run_config=NO_TRACING)
    shapes = [shape(e) for e in stored(set_policy.staff, "agents-7")]
    assert [s for s in shapes if s[0] == "user"] == [("user", "Send 50 to bob."),
                                                   ("user", "Thanks.")]
    assert shapes[-2:] == [("user", "Thanks."), ("final", "Sent 50 to bob.")]
    assert [name for name, _ in bank.ran] == ["get_balance", "send_money"]
    assert guard.end_answer["rules"][0]["verdict"] == "complied"


def test_a_studio_out_of_reach_fails_closed(model_server, live_server):
    from studio.client import StudioError

    bank = Bank()
    unreachable = StudioClient("http://127.0.0.1:9", "pay", token="t", timeout=2, retries=0)
    guard = AgentGuard(unreachable, "agents-8")
    with pytest.raises(StudioError, match="got no answer"):
        guard.run_sync(make_agent(model_server, bank), "Send 50 to bob.",
                       run_config=NO_TRACING)
    assert bank.ran == []  # no tool ran unasked


def test_a_guard_question_the_studio_refuses_fails_closed(studio, model_server, set_policy):
    from django.test import override_settings

    from studio.client import StudioError

    bank = Bank()
    studio.max_retry_wait = 0  # a 429 is not waited for
    guard = AgentGuard(studio, "agents-9")
    # One request a minute: the user's message is recorded, the guard question is refused.
    with override_settings(LIVE_RATE_LIMIT_PER_MINUTE=1):
        with pytest.raises(StudioError) as caught:
            guard.run_sync(make_agent(model_server, bank), "Send 50 to bob.",
                           run_config=NO_TRACING)
    assert caught.value.status == 429
    assert guard.answers == [] and bank.ran == []


def test_tools_no_guardrail_sees_are_refused_not_left_unguarded(studio):
    from agents import WebSearchTool

    guard = AgentGuard(studio, "agents-5")
    agent = Agent(name="browser", tools=[WebSearchTool()])
    with pytest.raises(TypeError, match="not a function tool"):
        guard.agent(agent)
    assert guard.agent(agent, unguarded_ok=True).tools == agent.tools


def test_guarding_copies_the_agent_and_its_handoffs(studio):
    bank = Bank()
    helper = Agent(name="helper", tools=bank.tools)
    main = Agent(name="main", tools=bank.tools[:1], handoffs=[helper])
    guard = AgentGuard(studio, "agents-6")
    guarded = guard.agent(main)
    assert main.tools[0].tool_input_guardrails is None  # the original is untouched
    assert guarded.tools[0].tool_input_guardrails == [guard.input_guardrail]
    (copy,) = guarded.handoffs
    assert copy is not helper and all(
        t.tool_input_guardrails == [guard.input_guardrail] for t in copy.tools)
    # Guarding twice does not ask twice.
    again = guard.agent(guarded)
    assert again.tools[0].tool_input_guardrails == [guard.input_guardrail]


# ---------------------------------------------------------------------------------------------
# examples/openai_agents_loop.py, with its own stand-in model server

@pytest.fixture(scope="module")
def example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "openai_agents_loop.py"
    spec = importlib.util.spec_from_file_location("openai_agents_loop", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_is_refused_then_pays_after_the_balance_check(studio, example, set_policy):
    lines = []
    result = example.run(studio, "example-1", log=lines.append)
    assert [name for name, _ in result["executed"]] == ["get_balance", "send_money"], lines
    assert len(result["refused"]) == 1 and result["stopped"] is None
    assert result["answer"] == "Sent 50 to bob; the balance is now 70."
    assert result["end"]["rules"][0]["verdict"] == "complied"
    assert "studio: at the end, pay_after_balance is complied" in lines


def test_the_example_unguarded_prints_the_verdict_in_words(studio, example, set_policy, capsys,
                                                          monkeypatch):
    monkeypatch.setenv("STUDIO_URL", studio.base_url)
    monkeypatch.setenv("STUDIO_WORKSPACE", "pay")
    monkeypatch.setenv("STUDIO_TOKEN", studio.token)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert example.main(["--session", "example-2", "--no-guard"]) == 0
    out = capsys.readouterr().out
    assert "studio: rule pay_after_balance is violated at step 1" in out, out
    assert "studio: at the end, pay_after_balance is violated" in out, out
    assert "None" not in out, out
    assert "tools that ran: send_money" in out
