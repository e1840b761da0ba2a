"""The LLM formaliser draws several answers and merges them by meaning; it shows the model the
workspace's vocabulary with its evidence and lists every name a reading uses as a phrase for
the evidence layer.  No database: a local stand-in endpoint (``chat_server.ChatServer``)."""

from __future__ import annotations

import itertools
import threading

import pytest

from studio.labeling.llm import ChatClient, Completion, LLMConfig, MemoryStore
from studio.english.ground_atoms import Grounding
from studio.english.llm import (SAMPLE_TEMPERATURE, LLMFormaliser, merge, phrases_of,
                                      same_reading, vocabulary_prompt)
from studio.logic.parser import parse
from studio.logic.vocabulary import Vocabulary
from tests.labeling.chat_server import ChatServer


@pytest.fixture
def server():
    server = ChatServer().start()
    yield server
    server.stop()


def client_of(server, **settings) -> ChatClient:
    config = LLMConfig(**{"base_url": server.url, "model": "test-model", "timeout": 5,
                          "max_retries": 0, "backoff": 0.01, **settings})
    return ChatClient(config, MemoryStore())


def in_turn(*answers: str):
    """A model answering ``answers`` in turn, whichever sample asks first."""
    lock = threading.Lock()
    asked = []

    def respond(request: dict) -> str:
        with lock:
            asked.append(request)
            return answers[(len(asked) - 1) % len(answers)]

    return respond


def support_vocabulary() -> Vocabulary:
    return Vocabulary.from_entries([
        ("builtin", "tool_call:issue_refund", "", "tool_call:issue_refund", 28, ()),
        ("builtin", "tool_call:escalate_to_manager", "", "tool_call:escalate_to_manager", 14, ()),
        ("builtin", "role:user", "", "role:user", 125, ()),
        ("label", "manager_approved", "", "role:user", 5, ()),
        ("path", "output.args.amount", "number", "tool_call:issue_refund", 28, (89, 750, 900)),
        ("path", "output.args.reason", "string", "tool_call:issue_refund", 28,
         ("damaged_on_arrival", "return_received")),
        ("path", "output.args.priority", "string", "tool_call:escalate_to_manager", 14,
         ("high", "urgent")),
        ("path", "data.customer.tier", "string", "role:user", 125, ("standard", "gold")),
    ])


def test_samples_that_mean_the_same_are_merged_and_counted(server):
    server.responder = in_turn("G (pay -> O verify)", "G !(pay & !O verify)",
                               "G (pay -> F verify)")
    formaliser = LLMFormaliser(client_of(server), samples=3)
    result = formaliser.formalise("Verify before paying.")
    assert result.ok and result.engine == "llm"
    assert server.count == 3
    assert {r["temperature"] for r in server.requests} == {SAMPLE_TEMPERATURE}
    first, second = result.readings
    assert same_reading(first.formula, parse("G (pay -> O verify)"))[0]
    assert first.why == "2 of 3 model answers" and first.formula is result.formula
    assert second.text == "G (pay -> F verify)" and second.why == "1 of 3 model answers"
    # each reading says what tells it from the other
    assert first.against == 1 and second.against == 0 and first.trace
    assert "verify" in first.english
    # each sample is cached apart: asking again asks nothing and reads the same
    again = formaliser.formalise("Verify before paying.")
    assert server.count == 3
    assert [r.text for r in again.readings] == [r.text for r in result.readings]
    assert [r.why for r in again.readings] == [r.why for r in result.readings]


def test_answers_that_all_agree_are_one_reading(server):
    server.responder = in_turn("G !drop", "G(!drop)", "!F drop")
    result = LLMFormaliser(client_of(server)).formalise("Do not drop things.")
    assert [(r.text, r.why) for r in result.readings] == [("G !drop", "3 of 3 model answers")]
    assert result.readings[0].against is None and result.message == ""


def test_a_sample_that_does_not_parse_is_asked_again_alone(server):
    lock = threading.Lock()
    state = {"broken": False}

    def respond(request):
        if request["messages"][-1]["content"].startswith("That formula does not parse"):
            return "G (take -> X examine)"
        with lock:
            if not state["broken"]:
                state["broken"] = True
                return "G(take -> X examine"
        return "G (take -> X examine)"

    server.responder = respond
    result = LLMFormaliser(client_of(server)).formalise("take, then examine")
    assert server.count == 4
    assert [(r.text, r.why) for r in result.readings] == [
        ("G (take -> X examine)", "3 of 3 model answers")]


def test_answers_with_no_valid_formula_count_against_the_others(server):
    server.responder = in_turn("G !drop", "not a formula (", "not a formula (")
    result = LLMFormaliser(client_of(server), attempts=1).formalise("Do not drop things.")
    assert [r.why for r in result.readings] == ["1 of 3 model answers"]
    assert result.message == "2 of 3 answers gave no valid formula"


def test_formulas_with_data_comparisons_merge_when_they_read_alike():
    a = parse("G (tool_call:issue_refund & output.args.amount > 500 -> O manager_approved)")
    b = parse("G (output.args.amount > 500 & tool_call:issue_refund -> O manager_approved)")
    c = parse("G (tool_call:issue_refund & output.args.amount >= 500 -> O manager_approved)")
    merged = merge([a, c, b])
    assert [(m.formula, m.answers) for m in merged] == [(a, 2), (c, 1)]


def test_a_reading_is_written_as_most_answers_wrote_it_whatever_their_order():
    # The samples go out together, so which answer comes first is a matter of timing.
    texts = ["G !drop", "G(!drop)", "!F drop", "G !drop"]
    for order in itertools.permutations(texts):
        merged = merge([parse(t) for t in order])
        assert [(m.formula.text, m.answers) for m in merged] == [("G !drop", 4)]


def test_one_sample_is_greedy(server):
    server.responder = in_turn("G !drop")
    LLMFormaliser(client_of(server), samples=1).formalise("Do not drop things.")
    assert server.count == 1 and server.requests[0]["temperature"] == 0


def test_an_unreachable_endpoint_is_a_message_not_an_exception():
    config = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout=1, max_retries=0)
    result = LLMFormaliser(ChatClient(config)).formalise("Do not drop things.")
    assert not result.ok and result.message.startswith("the LLM could not be asked: ")


def test_a_client_that_answers_one_prompt_at_a_time_will_do():
    class Plain:
        def __init__(self):
            self.asked = []

        def complete(self, messages, *, model=None):
            self.asked.append(messages)
            return Completion("G !drop", "m", cached=False)

    plain = Plain()
    result = LLMFormaliser(plain).formalise("Do not drop things.")
    assert len(plain.asked) == 3 and result.readings[0].why == "3 of 3 model answers"


def test_the_model_is_shown_the_vocabulary_with_its_evidence(server):
    server.responder = in_turn("G (refund_issued & output.args.amount > 500 -> "
                               "O tool_call:escalate_to_manager)")
    vocabulary = support_vocabulary()
    result = LLMFormaliser(client_of(server), vocabulary=vocabulary).formalise(
        "Refunds over 500 need an escalation first.")
    prompt = server.requests[0]["messages"][-1]["content"]
    assert prompt.startswith("Rule: Refunds over 500 need an escalation first.\n\n")
    # each tool with its own fields and example values
    assert ("- tool_call:issue_refund (28 events): output.args.amount (number) e.g. 89, 750, "
            "900; output.args.reason (text) e.g. \"damaged_on_arrival\", \"return_received\""
            in prompt)
    assert "- manager_approved (5 events) on user messages" in prompt
    assert "- data.customer.tier (text, on user messages) e.g. \"standard\", \"gold\"" in prompt
    assert "Roles and stop reasons: role:user" in prompt
    assert "Atoms already in use" not in prompt
    # every name the reading uses is a phrase, grounded or not
    assert set(result.mapping) == {
        Grounding("refund issued", "refund_issued", False),
        Grounding("escalate to manager", "tool_call:escalate_to_manager", True),
        Grounding("amount", "output.args.amount", True)}


def test_the_vocabulary_shown_is_bounded():
    entries = [("builtin", f"tool_call:tool_{k}", "", f"tool_call:tool_{k}", 1000 - k, ())
               for k in range(400)]
    entries += [("path", f"output.args.field_{j}", "string", f"tool_call:tool_{k}", 3,
                 ("a" * 200, "b", "c", "d"))
                for k in range(400) for j in range(12)]
    text = vocabulary_prompt(Vocabulary.from_entries(entries), limit=3000)
    assert len(text) <= 3000 + 60 and text.endswith("more entries, not listed)")
    first_tool = text.splitlines()[2]
    assert first_tool.startswith("- tool_call:tool_0 (1000 events): ")
    assert first_tool.count("output.args.") == 8          # TOOL_FIELDS
    assert '"' + "a" * 30 + '…"' in first_tool               # examples are cut


def test_phrases_are_unique_and_roles_the_logs_have_are_not_phrases():
    f = parse("G (role:user & output.args.amount > 5 -> O output.result.amount > 5 & amount)")
    phrases = phrases_of([f], support_vocabulary())
    assert [(p.phrase, p.atom, p.grounded) for p in phrases] == [
        ("amount", "amount", False),
        ("output args amount", "output.args.amount", True),
        ("output result amount", "output.result.amount", False)]
