"""One trace, one session, with the real instrumentations (issue 28): the real ``openai`` client
talks to a local stand-in OpenAI server, OpenInference's or the OpenTelemetry GenAI
instrumentation traces it, a manual span runs the tool, and the real OTLP exporter (protobuf)
sends every span, one request each as it ends, to the studio's ``/v1/traces`` on a live test
server.  The model's tool call, the tool's run with its result and the model's answer land in one
session in order; the session's live verdicts, once ended, are the verdicts an audit gives the
same events uploaded as JSONL."""

from __future__ import annotations

import json

import openai
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from studio.traces.models import Event, TraceSession, TraceSessionLink

from .standin_openai import FINAL_ANSWER, REFUND_ARGUMENTS

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = [{"type": "function", "function": {
    "name": "refund", "description": "Refund an order",
    "parameters": {"type": "object", "properties": {"order": {"type": "integer"},
                                                     "amount": {"type": "number"}}}}}]
TOOL_RESULT = "refunded 20 USD"


class Recording(OTLPSpanExporter):
    """The real exporter, keeping what each export returned."""

    def __init__(self, **options):
        super().__init__(**options)
        self.results: list[SpanExportResult] = []

    def export(self, spans):
        result = super().export(spans)
        self.results.append(result)
        return result


def tracing_to(live_server, token) -> tuple[TracerProvider, Recording]:
    """A provider exporting each span on its own request as it ends: the spans of one trace
    arrive one by one, the root (which may name the session) last."""
    provider = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
    exporter = Recording(endpoint=f"{live_server.url}/v1/traces", timeout=10,
                         headers={"Authorization": f"Bearer {token}"})
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def refund_conversation(client: openai.OpenAI, run_tool) -> str:
    """The agent loop: the model asks for the refund tool, the tool runs (``run_tool(call)``
    traces it), the model answers."""
    messages = [{"role": "user", "content": "Please refund order 7."}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    result = run_tool(call)
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": result}]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    return second.choices[0].message.content


def session_events(name: str) -> list[dict]:
    return list(Event.objects.filter(session__external_id=name).order_by("step").values(
        "step", "lifeline", "timestamp", "input", "output", "data", "source"))


def live_verdicts(token, session: str) -> dict:
    """The session ended over the API: each rule's verdict, in words."""
    response = Client().post(f"/api/w/acme/live/sessions/{session}/end", data="{}",
                             content_type="application/json",
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.content
    return {r["rule"]: r["verdict"] for r in response.json()["rules"]}


def jsonl_verdicts(token, events: list[dict]) -> dict:
    """The same events uploaded as a JSONL file and audited: each rule's verdict, in words."""
    lines = [json.dumps({"session": "from-jsonl", "lifeline": e["lifeline"],
                         "timestamp": e["timestamp"].isoformat(), "input": e["input"],
                         "output": e["output"], "data": e["data"]}) for e in events]
    client = Client(headers={"Authorization": f"Bearer {token}"})
    upload = client.post("/api/w/acme/uploads", data={
        "file": SimpleUploadedFile("copy.jsonl", "\n".join(lines).encode()), "format": "jsonl"})
    assert upload.status_code in (200, 201), upload.content
    assert upload.json()["status"] == "parsed" and upload.json()["lines_bad"] == 0
    run = client.post("/api/w/acme/audits", data={"upload": upload.json()["id"]},
                      content_type="application/json")
    assert run.status_code == 201, run.content
    report = client.get(f"/api/w/acme/audits/{run.json()['id']}/report.json").json()
    (session,) = report["sessions"]
    assert session["session"] == "from-jsonl" and session["steps"] == len(events)
    return {rule["rule"]: verdict for rule, verdict in zip(report["rules"], session["verdicts"])}


def assert_one_session_in_order(name: str, token) -> list[dict]:
    assert list(TraceSession.objects.values_list("external_id", flat=True)) == [name]
    events = session_events(name)
    assert {e["source"] for e in events} == {"otlp"}
    requested, tool, answer = events[0], events[1], events[2]
    # The model's message asking for the tool, the tool's run with its result, the answer.
    assert [(c["name"], c["arguments"]) for c in requested["data"]["tool_calls"]] == [
        ("refund", REFUND_ARGUMENTS)]
    assert tool["output"] == {"tool": "refund", "args": REFUND_ARGUMENTS}
    assert tool["data"]["tool_result"] == TOOL_RESULT
    assert answer["output"] == FINAL_ANSWER
    assert len(events) == 4  # and the agent's span, which ended last
    assert TraceSessionLink.objects.get().session == name
    return events


def test_openinference_using_session_keeps_the_tool_and_agent_spans(live_server, workspace,
                                                                   token, openai_server):
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider, exporter = tracing_to(live_server, token)
    tracer = provider.get_tracer("refund-agent")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=openai_server.url, api_key="test-key")

    def run_tool(call):  # a manual TOOL span, as OpenInference's docs show
        with tracer.start_as_current_span("refund", attributes={
                "openinference.span.kind": "TOOL", "tool.name": call.function.name,
                "input.value": call.function.arguments, "input.mime_type": "application/json",
                "output.value": TOOL_RESULT}):
            return TOOL_RESULT

    try:
        with using_session("otel-demo-1"):
            with tracer.start_as_current_span("refund-agent", attributes={
                    "openinference.span.kind": "AGENT"}):
                answer = refund_conversation(client, run_tool)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert answer == FINAL_ANSWER and len(openai_server.requests) == 2
    assert exporter.results == [SpanExportResult.SUCCESS] * 4

    events = assert_one_session_in_order("otel-demo-1", token)
    assert events[0]["data"]["span_kind"] == "LLM" and events[3]["data"]["span_kind"] == "AGENT"
    live = live_verdicts(token, "otel-demo-1")
    assert live == {"lookup_before_refund": "violated", "refund_within_limit": "complied"}
    assert jsonl_verdicts(token, events) == live


def test_genai_conventions_with_the_session_named_on_the_agent_span(live_server, workspace,
                                                                    token, openai_server,
                                                                    monkeypatch):
    """The GenAI instrumentation names no session: the agent's span does
    (``gen_ai.conversation.id``), and it ends - and is exported - last, so every span before it
    was stored under the trace id first and is moved into the session when it arrives."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    provider, exporter = tracing_to(live_server, token)
    tracer = provider.get_tracer("refund-agent")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=openai_server.url, api_key="test-key")
    seen_before_the_root: list[list[str]] = []

    def run_tool(call):  # execute_tool, as the GenAI conventions spell it
        with tracer.start_as_current_span(f"execute_tool {call.function.name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.call.arguments": call.function.arguments,
                "gen_ai.tool.call.result": TOOL_RESULT}):
            return TOOL_RESULT

    try:
        with tracer.start_as_current_span("invoke_agent refund-agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund-agent",
                "gen_ai.conversation.id": "genai-demo-1"}):
            answer = refund_conversation(client, run_tool)
            seen_before_the_root.append(list(TraceSession.objects.values_list(
                "external_id", flat=True)))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert answer == FINAL_ANSWER
    assert exporter.results == [SpanExportResult.SUCCESS] * 4
    # Before the agent's span arrived, its trace was a session of its own, named by its id.
    (before,) = seen_before_the_root
    assert len(before) == 1 and len(before[0]) == 32

    events = assert_one_session_in_order("genai-demo-1", token)
    assert [e["data"].get("operation") for e in events] == ["chat", "execute_tool", "chat",
                                                            "invoke_agent"]
    assert events[2]["data"]["stop_reason"] == "stop"
    live = live_verdicts(token, "genai-demo-1")
    assert live == {"lookup_before_refund": "violated", "refund_within_limit": "complied"}
    assert jsonl_verdicts(token, events) == live
