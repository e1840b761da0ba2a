"""The LLM engine through ``authoring.formalise`` and the formalise API: the model's merged
readings go through the same grounding by evidence as the offline grammar's, the grammar reads
the rule too, a disagreement between the two is said, and an endpoint that cannot be asked
leaves the grammar's readings and a message.  A local stand-in endpoint plays the model."""

from __future__ import annotations

import threading

import pytest

from studio.labeling.llm import ChatClient, LLMConfig, MemoryStore
from studio.rules import authoring
from studio.workspaces import services as ws
from tests.api.world import world  # noqa: F401
from tests.labeling.chat_server import ChatServer
from tests.labeling.test_llm_samples import support_vocabulary


@pytest.fixture
def server():
    server = ChatServer().start()
    yield server
    server.stop()


def client_of(server) -> ChatClient:
    return ChatClient(LLMConfig(base_url=server.url, model="test-model", timeout=5,
                                max_retries=0), MemoryStore())


def answering(*answers: str):
    lock = threading.Lock()
    count = [0]

    def respond(request):
        with lock:
            count[0] += 1
            return answers[(count[0] - 1) % len(answers)]

    return respond


def test_the_engines_readings_side_by_side_and_their_disagreement(server):
    server.responder = answering("F tool_call:issue_refund")
    answer = authoring.formalise("Never issue a refund.", "llm", (), support_vocabulary(),
                                 client=client_of(server))
    assert answer["ok"] and answer["engine"] == "llm" and server.count == 3
    assert [(r["formula"], r["why"]) for r in answer["readings"]] == [
        ("F tool_call:issue_refund", "model: 3 of 3 answers"),
        ("G !tool_call:issue_refund", "offline grammar")]
    assert answer["formula"] == "F tool_call:issue_refund"
    # each reading says what tells it from the other
    assert answer["readings"][0]["against"] == 1 and answer["readings"][1]["against"] == 0
    assert answer["readings"][0]["trace"]
    assert answer["disagreement"].startswith("The model and the offline grammar read this rule "
                                             "differently: the model as “")
    assert "(F tool_call:issue_refund)" in answer["disagreement"]
    assert "(G !tool_call:issue_refund)" in answer["disagreement"]


def test_when_the_engines_agree_one_reading_says_so(server):
    server.responder = answering("G !tool_call:issue_refund", "!F tool_call:issue_refund")
    answer = authoring.formalise("Never issue a refund.", "llm", (), support_vocabulary(),
                                 client=client_of(server))
    (only,) = answer["readings"]
    # (whichever answer came first names the merged reading)
    assert only["formula"] in ("G !tool_call:issue_refund", "!F tool_call:issue_refund")
    assert only["why"] == "model: 3 of 3 answers; the offline grammar agrees"
    assert "disagreement" not in answer and answer["sure"]


def test_an_atom_the_model_invents_gets_candidates_from_the_evidence(server):
    server.responder = answering(
        "G (refund_issued & output.args.amount > 500 -> O manager_approved)")
    client = client_of(server)
    answer = authoring.formalise("Refunds over 500 need manager approval first.", "llm", (),
                                 support_vocabulary(), client=client)
    first = answer["readings"][0]
    assert first["formula"] == ("G (output.args.amount > 500 & refund_issued -> "
                                "O manager_approved)")
    assert first["why"] == "model: 3 of 3 answers"
    invented = next(p for p in answer["mapping"] if p["phrase"] == "refund issued")
    assert invented["atom"] == "refund_issued" and not invented["grounded"]
    assert not invented["sure"] and not answer["sure"]
    candidates = [c["atom"] for c in invented["candidates"]]
    assert candidates[0] == "refund_issued" and "tool_call:issue_refund" in candidates
    # the author's choice rewrites the model's reading onto the logs' own event
    chosen = authoring.formalise("Refunds over 500 need manager approval first.", "llm", (),
                                 support_vocabulary(),
                                 {"refund issued": "tool_call:issue_refund"}, client=client)
    assert chosen["readings"][0]["formula"] == ("G (output.args.amount > 500 & "
                                                "tool_call:issue_refund -> O manager_approved)")
    assert server.count == 3      # the same answers, from the cache
    # the grammar's own readings follow, those the model's do not mean
    assert any(r["why"].startswith("offline grammar") for r in answer["readings"][1:])


def test_an_unreachable_endpoint_leaves_the_offline_readings_and_a_message():
    dead = ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout=1,
                                max_retries=0), MemoryStore())
    answer = authoring.formalise("Never issue a refund.", "llm", (), support_vocabulary(),
                                 client=dead)
    assert answer["ok"] and answer["engine"] == "llm"
    assert [(r["formula"], r["why"]) for r in answer["readings"]] == [
        ("G !tool_call:issue_refund", "offline grammar")]
    assert answer["message"].startswith("The model gave no reading (the LLM could not be asked: "
                                        "the LLM endpoint http://127.0.0.1:9/v1/chat/completions")
    assert answer["message"].endswith("these are the offline grammar's readings.")
    assert "disagreement" not in answer


def test_an_unconfigured_endpoint_says_how_to_configure_one(monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    answer = authoring.formalise("Never issue a refund.", "llm", (), support_vocabulary())
    assert answer["ok"] and answer["readings"][0]["why"] == "offline grammar"
    assert "no LLM endpoint is configured: set LLM_BASE_URL" in answer["message"]


def test_the_api_asks_the_workspaces_own_endpoint_with_its_key(world, server, monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    server.responder = answering("F tool_call:issue_refund")
    ws.set_llm_endpoint(world.acme, server.url, "acme-model", "stored", "sk-acme-secret-9876",
                        by=world.ann)
    reply = world.as_("alice").post("w/acme/formalise", {
        "english": "Never issue a refund.", "engine": "llm", "flags": False})
    assert reply.status_code == 200, reply.content
    body = reply.json()
    assert server.count == 3 and server.requests[0]["model"] == "acme-model"
    assert server.headers[0]["Authorization"] == "Bearer sk-acme-secret-9876"
    assert body["readings"][0]["why"] == "model: 3 of 3 answers"
    assert "(F tool_call:issue_refund)" in body["disagreement"]
    # the offline engine has no disagreement to tell
    offline = world.as_("alice").post("w/acme/formalise", {
        "english": "Never issue a refund.", "flags": False}).json()
    assert offline["disagreement"] == "" and offline["engine"] == "offline"


def test_the_api_answers_an_unreachable_workspace_endpoint_with_the_offline_readings(world):
    ws.set_llm_endpoint(world.acme, "http://127.0.0.1:9/v1", "m", "none", by=world.ann)
    reply = world.as_("alice").post("w/acme/formalise", {
        "english": "Never drop things.", "engine": "llm", "flags": False})
    assert reply.status_code == 200, reply.content
    body = reply.json()
    assert body["ok"] and body["readings"] and body["message"].startswith(
        "The model gave no reading (the LLM could not be asked")
