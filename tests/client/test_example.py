"""The worked example (examples/openai_tool_loop.py) against the fake studio, whose guard stands
for the rule ``!tool_call:send_money W tool_call:get_balance``: each decision kind keeps the
payment from running before the balance check."""

import pytest

from studio.client import GuardedSession
from tests.client.fake import answer


def tool(event):
    output = event.get("output")
    return output.get("tool") if isinstance(output, dict) else None


def rule_guard(fake, decision, **extra):
    """Answers ``decision`` for a payment proposed before any stored balance check."""
    def respond(request):
        stored = [tool(e) for r in fake.of("/events") for e in r.body["events"]]
        proposed = request.body["event"]
        if tool(proposed) == "send_money" and "get_balance" not in stored:
            return 200, answer(decision, reason="send_money before get_balance", **extra)
        return 200, answer("allow")

    fake.route("POST", "/guard", respond)
    fake.route("POST", "/end", [(200, {"rules": [{"rule": "pay_after_balance",
                                                  "verdict": "complied"}]})])


def run(example, client, **options):
    lines = []
    result = example.run(GuardedSession(client, "s1"), example.StandInModel(), log=lines.append,
                         **options)
    return result, lines


@pytest.mark.parametrize("decision, extra", [
    ("resample", {}),
    ("inject", {"inject": "Check the balance with get_balance before send_money."}),
    ("switch", {"model": "careful-model"}),
])
def test_the_guard_turns_the_payment_into_a_balance_check_first(fake, client, example,
                                                                decision, extra):
    rule_guard(fake, decision, **extra)
    result, lines = run(example, client)
    assert [name for name, _ in result["executed"]] == ["get_balance", "send_money"]
    assert result["stopped"] is None
    assert result["answer"] == "Sent 50 to bob; the balance is now 70."
    assert f"guard: {decision} - send_money before get_balance" in lines
    # The studio saw the whole conversation: the user's turn, each call and its result, the answer.
    stored = [e for r in fake.of("/events") for e in r.body["events"]]
    assert [tool(e) or next(iter(e["data"])) for e in stored] == [
        "role", "get_balance", "tool_result", "send_money", "tool_result", "stop_reason"]
    # The chat history is what an OpenAI client expects: the call, then its result by id.
    messages = result["messages"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "get_balance"
    assert messages[3] == {"role": "tool", "tool_call_id": messages[2]["tool_calls"][0]["id"],
                           "content": '{"account": "me", "balance": 120.0}'}
    if decision == "inject":
        hinted = fake.of("/guard")[1].body
        assert hinted["attempt"] == 1
    assert result["end"]["rules"][0]["verdict"] == "complied"


def test_best_of_n_takes_the_sampled_balance_check(fake, client, example):
    def respond(request):
        body = request.body
        stored = [tool(e) for r in fake.of("/events") for e in r.body["events"]]
        if tool(body["event"]) == "send_money" and "get_balance" not in stored:
            index = next(i for i, c in enumerate(body["candidates"])
                         if tool(c["event"]) == "get_balance")
            return 200, answer("best_of_n", candidate=index)
        return 200, answer("allow")

    fake.route("POST", "/guard", respond)
    fake.route("POST", "/end", [(200, {"rules": []})])
    result, _ = run(example, client, samples=3)
    assert [name for name, _ in result["executed"]] == ["get_balance", "send_money"]
    first = fake.of("/guard")[0].body
    assert tool(first["event"]) == "send_money" and len(first["candidates"]) == 2


def test_a_stop_ends_the_loop_before_the_payment_runs(fake, client, example):
    rule_guard(fake, "stop")
    result, lines = run(example, client)
    assert result["executed"] == []
    assert result["stopped"] == "send_money before get_balance"
    assert "guard: stop - send_money before get_balance" in lines
    assert fake.of("/end")  # the session is ended all the same


def test_without_the_guard_the_payment_runs_first(fake, client, example):
    fake.route("POST", "/end", [(200, {"rules": []})])
    result, _ = run(example, client, guarded=False)
    assert [name for name, _ in result["executed"]] == ["send_money"]
    assert fake.of("/guard") == []


def test_main_reads_its_settings_from_the_environment(fake, example, monkeypatch, capsys):
    rule_guard(fake, "resample")
    monkeypatch.setenv("STUDIO_URL", fake.url)
    monkeypatch.setenv("STUDIO_WORKSPACE", "acme")
    monkeypatch.setenv("STUDIO_TOKEN", "tok-1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert example.main(["--session", "demo-1"]) == 0
    out = capsys.readouterr().out
    assert "session demo-1, model stand-in" in out
    assert "tools that ran: get_balance, send_money" in out
    assert fake.requests[0].path == "/api/w/acme/live/sessions/demo-1/events"
