"""OTLP/HTTP protobuf at /v1/traces, sent by the real OpenTelemetry Python exporter
(opentelemetry-exporter-otlp-proto-http) to a live server: its spans are stored and monitored
exactly as the same spans in OTLP JSON are."""

from __future__ import annotations

import gzip
import json

import pytest
from django.test import Client, override_settings
from google.protobuf.message import DecodeError
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from studio.live.ingest import clear_caches
from studio.traces.models import Event, TraceSession

PROTOBUF = "application/x-protobuf"
EVENT_FIELDS = ("event_id", "step", "source", "lifeline", "timestamp", "input", "output", "data",
                "labels", "message_id", "message_peer", "message_kind")


class RecordingExporter(OTLPSpanExporter):
    """The real exporter, keeping what each export returned and the spans it sent."""

    def __init__(self, **options):
        super().__init__(**options)
        self.results: list[SpanExportResult] = []
        self.spans: list = []

    def export(self, spans):
        result = super().export(spans)
        self.results.append(result)
        self.spans.extend(spans)
        return result


def emit_agent_spans(exporter: OTLPSpanExporter) -> None:
    """A planner agent calling a shopper agent's tools, as the GenAI conventions spell it, sent
    in one export request (a batch flushed at the end), so the calls between the two agents are
    found in it."""
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
    tracer = provider.get_tracer("openai.agents", "0.1")
    common = {"gen_ai.conversation.id": "conv-1"}
    with tracer.start_as_current_span("invoke_agent planner", attributes={
            **common, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
        for tool, arguments in (("pay", {"amount": 20000}), ("ship", {"order": 7}),
                                ("delete", {"order": 7})):
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                    **common, "gen_ai.operation.name": "execute_tool",
                    "gen_ai.agent.name": "shopper", "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.arguments": json.dumps(arguments),
                    "retries": 2, "ratio": 0.5, "express": True, "tags": ("a", "b")}):
                pass
    assert provider.force_flush()
    provider.shutdown()


def _any_value(value) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [_any_value(item) for item in value]}}


def _attributes(attributes) -> list[dict]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def json_equivalent(spans) -> dict:
    """The OTLP JSON document of the spans the exporter sent, written by hand from the SDK's
    spans (hex ids, decimal-string times), as an http/json exporter would."""
    def one(span):
        item = {"traceId": f"{span.context.trace_id:032x}",
                "spanId": f"{span.context.span_id:016x}",
                "name": span.name, "kind": span.kind.value + 1,  # the SDK counts from INTERNAL=0
                "startTimeUnixNano": str(span.start_time), "endTimeUnixNano": str(span.end_time),
                "attributes": _attributes(span.attributes)}
        if span.parent is not None:
            item["parentSpanId"] = f"{span.parent.span_id:016x}"
        return item
    return {"resourceSpans": [{
        "resource": {"attributes": _attributes(spans[0].resource.attributes)},
        "scopeSpans": [{"scope": {"name": "openai.agents", "version": "0.1"},
                        "spans": [one(span) for span in spans]}]}]}


def stored_events() -> list[dict]:
    return [{name: getattr(event, name) for name in EVENT_FIELDS}
            | {"session": event.session.external_id}
            for event in Event.objects.select_related("session").order_by("session", "step")]


def monitor_states() -> dict:
    """Each session's monitors, without the revision (a fresh random id per write)."""
    return {session.external_id: {key: value for key, value in session.monitor_state.items()
                                  if key != "revision"}
            for session in TraceSession.objects.all()}


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_python_exporter_is_stored_and_monitored_as_json_is(live_server, workspace, token,
                                                                 compression):
    exporter = RecordingExporter(endpoint=f"{live_server.url}/v1/traces", timeout=10,
                                 headers={"Authorization": f"Bearer {token}"},
                                 compression=compression)
    emit_agent_spans(exporter)
    assert exporter.results and set(exporter.results) == {SpanExportResult.SUCCESS}
    from_protobuf = stored_events()
    states = monitor_states()
    tools = [e["output"] for e in from_protobuf if e["output"] and "tool" in e["output"]]
    assert tools == [{"tool": "pay", "args": {"amount": 20000}},
                     {"tool": "ship", "args": {"order": 7}},
                     {"tool": "delete", "args": {"order": 7}}]
    assert {e["source"] for e in from_protobuf} == {"otlp"}
    # The planner calls the shopper three times: a send and a receive per call, ids in hex.
    assert sum(1 for e in from_protobuf if e["message_kind"]) == 6
    assert all(e["event_id"] is None or len(e["event_id"]) == 16 or e["message_id"]
               for e in from_protobuf)
    assert states["conv-1"]["steps"] == len(from_protobuf)

    # The same spans as OTLP JSON, into an emptied workspace, give the same events and monitors.
    TraceSession.objects.all().delete()
    clear_caches()
    response = Client().post("/v1/traces", data=json.dumps(json_equivalent(exporter.spans)),
                             content_type="application/json",
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200 and response.json() == {}
    assert stored_events() == from_protobuf
    assert monitor_states() == states


def test_a_retried_protobuf_export_stores_nothing_twice(live_server, workspace, token):
    exporter = RecordingExporter(endpoint=f"{live_server.url}/v1/traces",
                                 headers={"Authorization": f"Bearer {token}"})
    emit_agent_spans(exporter)
    count = Event.objects.count()
    again = OTLPSpanExporter(endpoint=f"{live_server.url}/v1/traces",
                             headers={"Authorization": f"Bearer {token}"})
    assert count > 0 and again.export(exporter.spans) == SpanExportResult.SUCCESS
    assert Event.objects.count() == count


def post_protobuf(token, body: bytes, headers=None):
    extra = {"Authorization": f"Bearer {token}"} | (headers or {})
    return Client().post("/v1/traces", data=body, content_type=PROTOBUF, headers=extra)


def request_of(*span_ids: bytes, trace_id: bytes = b"\x5b" * 16) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    item = resource_spans.resource.attributes.add()
    item.key, item.value.string_value = "service.name", "agent"
    scope = resource_spans.scope_spans.add()
    for index, span_id in enumerate(span_ids):
        span = scope.spans.add(trace_id=trace_id, span_id=span_id, name="execute_tool",
                               start_time_unix_nano=1_700_000_000 + index)
        for key, value in (("gen_ai.operation.name", "execute_tool"),
                           ("gen_ai.tool.name", "ship"), ("gen_ai.conversation.id", "conv-1")):
            attribute = span.attributes.add()
            attribute.key, attribute.value.string_value = key, value
    return request


def test_a_body_that_is_not_protobuf_is_400(workspace, token):
    response = post_protobuf(token, b"this is not protobuf at all")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["code"] == 3
    assert "not a valid protobuf ExportTraceServiceRequest" in response.json()["message"]
    gzipped = post_protobuf(token, gzip.compress(b"\xff\xff\xff\xff"),
                            headers={"Content-Encoding": "gzip"})
    assert gzipped.status_code == 400
    assert post_protobuf(None, request_of(b"\xaa" * 8).SerializeToString()).status_code == 401
    assert Event.objects.count() == 0
    with pytest.raises(DecodeError):  # the refused body really is not protobuf
        ExportTraceServiceRequest.FromString(b"this is not protobuf at all")


def test_gzip_protobuf_and_partial_success_answer_in_protobuf(workspace, token):
    # An 8-byte id of zeros is invalid (OTLP): that span alone is rejected.
    body = request_of(b"\xaa" * 8, b"\x00" * 8, b"\xcc" * 8).SerializeToString()
    response = post_protobuf(token, gzip.compress(body), headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200 and response["Content-Type"] == PROTOBUF
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert "span 1" in answer.partial_success.error_message
    assert [e.event_id for e in Event.objects.order_by("step")] == ["aaaaaaaaaaaaaaaa",
                                                                     "cccccccccccccccc"]
    complete = post_protobuf(token, request_of(b"\xdd" * 8).SerializeToString())
    assert complete.status_code == 200 and complete.content == b""  # an empty response
    assert not ExportTraceServiceResponse.FromString(complete.content).HasField("partial_success")


def test_protobuf_keeps_nul_out(workspace, token):
    with_nul = request_of(b"\xaa" * 8)
    with_nul.resource_spans[0].scope_spans[0].spans[0].name = "bad\x00name"
    response = post_protobuf(token, with_nul.SerializeToString())
    assert response.status_code == 422 and "NUL" in response.json()["message"]
    assert "spans[0].name" in response.json()["message"]
    assert Event.objects.count() == 0


@override_settings(MAX_REQUEST_BYTES=2_000)
def test_protobuf_keeps_the_size_limits(workspace, token):
    big = request_of(*[bytes([index + 1]) * 8 for index in range(60)]).SerializeToString()
    assert len(big) > 2_000
    assert post_protobuf(token, big).status_code == 413
    bomb = gzip.compress(b"\x0a\x00" * 50_000)  # small compressed, far past the limit inflated
    assert len(bomb) < 2_000
    assert post_protobuf(token, bomb, headers={"Content-Encoding": "gzip"}).status_code == 413
    assert Event.objects.count() == 0


def test_the_protobuf_decoder_imports_no_django():
    import subprocess
    import sys

    code = ("import sys, studio.traces.formats.otlp_protobuf; "
            "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) "
            "else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
