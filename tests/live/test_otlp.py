"""OTLP/HTTP JSON decoding (pure, no database): the spec's encoding rules and the GenAI and
OpenInference conventions, on hand-written documents."""

import json
import sys

from studio.traces.formats.otlp import decode_traces, events_from_otlp

TRACE = "5B8EFFF798038103D269B633813FC60C"   # hex is case-insensitive
TRACE2 = "0af7651916cd43dd8448eb211c80319c"


def kv(key, **value):
    return {"key": key, "value": value}


def span(span_id, start, *, name="op", attrs=(), trace=TRACE, **extra):
    return {"traceId": trace, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 2_500_000),
            "attributes": list(attrs), **extra}


def document(*spans, service="shop-agent", extra_resource=()):
    return {"resourceSpans": [{
        "resource": {"attributes": [kv("service.name", stringValue=service), *extra_resource],
                     "droppedAttributesCount": 0},
        "scopeSpans": [{"scope": {"name": "openai.agents", "version": "0.1"},
                        "spans": list(spans), "schemaUrl": "https://x"}],
        "futureField": {"anything": [1, 2]},
    }], "someUnknownTopLevel": True}


def test_a_spec_conformant_document_decodes_in_start_order():
    doc = document(
        span("EEE19B7EC3C1B174", 1_700_000_000_200_000_000, name="execute_tool ship",
             attrs=[kv("gen_ai.operation.name", stringValue="execute_tool"),
                    kv("gen_ai.tool.name", stringValue="ship"),
                    kv("gen_ai.tool.call.arguments", stringValue='{"order": 7, "express": true}'),
                    kv("gen_ai.tool.call.result", stringValue='{"ok": true}'),
                    kv("gen_ai.conversation.id", stringValue="conv-1"),
                    kv("gen_ai.agent.name", stringValue="shopper"),
                    kv("retries", intValue="9007199254740993"),   # int64 as a string
                    kv("ratio", doubleValue=0.5),
                    kv("tags", arrayValue={"values": [{"stringValue": "a"}, {"intValue": 2}]}),
                    kv("flag", boolValue=True),
                    kv("blob", bytesValue="AAEC"),
                    kv("http.response.status_code", intValue=200)],
             status={"code": 1, "message": ""}, unknownSpanField={"x": 1}),
        span("00f067aa0ba902b7", 1_700_000_000_100_000_000, name="chat gpt-4o", kind=3,
             attrs=[kv("gen_ai.operation.name", stringValue="chat"),
                    kv("gen_ai.request.model", stringValue="gpt-4o"),
                    kv("gen_ai.conversation.id", stringValue="conv-1"),
                    kv("gen_ai.response.finish_reasons",
                       arrayValue={"values": [{"stringValue": "tool_calls"}]}),
                    kv("gen_ai.input.messages", stringValue=json.dumps([
                        {"role": "system", "parts": [{"type": "text", "content": "be nice"}]},
                        {"role": "user", "parts": [{"type": "text", "content": "ship order 7"}]}])),
                    kv("gen_ai.output.messages", stringValue=json.dumps([
                        {"role": "assistant", "parts": [
                            {"type": "tool_call", "id": "c1", "name": "ship",
                             "arguments": {"order": 7}}], "finish_reason": "tool_calls"}])),
                    kv("gen_ai.usage.input_tokens", intValue="12")]),
    )
    events, errors = events_from_otlp(doc)
    assert errors == []
    chat, tool = events
    assert chat["event_id"] == "00f067aa0ba902b7" and tool["event_id"] == "eee19b7ec3c1b174"
    assert chat["session"] == tool["session"] == "conv-1"
    assert chat["step"] is None and chat["labels"] is None and chat["message"] is None
    assert chat["timestamp"] == "2023-11-14T22:13:20.100000Z"
    assert chat["lifeline"] == "shop-agent" and tool["lifeline"] == "shopper"
    assert chat["input"] == "ship order 7"
    assert chat["output"] is None
    assert chat["data"]["stop_reason"] == "tool_calls"
    assert chat["data"]["tool_calls"] == [{"id": "c1", "name": "ship", "arguments": {"order": 7}}]
    assert chat["data"]["kind"] == "client" and chat["data"]["model"] == "gpt-4o"
    assert chat["data"]["usage"] == {"input_tokens": 12}
    assert tool["output"] == {"tool": "ship", "args": {"order": 7, "express": True}}
    assert tool["data"]["tool_result"] == {"ok": True}
    assert tool["data"]["status"] == "ok" and tool["data"]["duration_ms"] == 2.5
    attributes = tool["data"]["attributes"]
    assert attributes["retries"] == 9007199254740993
    assert attributes["tags"] == ["a", 2] and attributes["flag"] is True
    assert attributes["http"]["response"]["status_code"] == 200  # dotted keys nest as paths
    assert tool["data"]["trace_id"] == TRACE.lower()
    json.dumps(events, allow_nan=False)  # storable as is


def test_openinference_spans():
    doc = document(
        span("1111111111111111", 10, attrs=[
            kv("openinference.span.kind", stringValue="LLM"),
            kv("session.id", stringValue="sess-9"),
            kv("llm.model_name", stringValue="claude"),
            kv("llm.input_messages.0.message.role", stringValue="user"),
            kv("llm.input_messages.0.message.content", stringValue="refund me"),
            kv("llm.output_messages.0.message.role", stringValue="assistant"),
            kv("llm.output_messages.0.message.content", stringValue="Sure."),
            kv("llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
               stringValue="refund"),
            kv("llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
               stringValue='{"amount": 20}')]),
        span("2222222222222222", 20, attrs=[
            kv("openinference.span.kind", stringValue="TOOL"),
            kv("session.id", stringValue="sess-9"),
            kv("tool.name", stringValue="refund"),
            kv("input.value", stringValue='{"amount": 20}'),
            kv("input.mime_type", stringValue="application/json"),
            kv("output.value", stringValue="done")]),
        span("3333333333333333", 30, attrs=[
            kv("openinference.span.kind", stringValue="CHAIN"),
            kv("input.value", stringValue="plain text in"),
            kv("output.value", stringValue="plain text out")]),
    )
    (llm, tool, chain), errors = events_from_otlp(doc)
    assert errors == []
    assert llm["session"] == tool["session"] == "sess-9"
    # The chain span names no session, but its trace does: one trace, one session (issue 28).
    assert chain["session"] == "sess-9"
    assert llm["input"] == "refund me" and llm["output"] == "Sure."
    assert llm["data"]["tool_calls"][0]["name"] == "refund"
    assert llm["data"]["span_kind"] == "LLM" and llm["data"]["model"] == "claude"
    assert tool["output"] == {"tool": "refund", "args": {"amount": 20}}
    assert tool["data"]["tool_result"] == "done"
    assert chain["input"] == "plain text in" and chain["output"] == "plain text out"


def test_bad_spans_are_rejected_one_by_one_and_named():
    good = span("aaaaaaaaaaaaaaaa", 5)
    doc = document(
        good,
        span("W7+zTvgqkNk=", 6),                                      # base64, not hex
        {**span("bbbbbbbbbbbbbbbb", 7), "kind": "SPAN_KIND_SERVER"},  # enum by name
        {**span("cccccccccccccccc", 8), "startTimeUnixNano": "soon"},
        {**span("dddddddddddddddd", 9), "trace_id": TRACE, "traceId": None},  # snake_case key
        span("eeeeeeeeeeeeeeee", 10, attrs=[{"key": "x", "value": {"intValue": "1.5"}}]),
        span("0000000000000000", 11),
        "not a span",
    )
    decoded = decode_traces(doc)
    assert [e["event_id"] for e in decoded.events] == ["aaaaaaaaaaaaaaaa"]
    assert decoded.rejected_spans == 7
    reasons = decoded.errors
    assert reasons[0].startswith("span 1 (resourceSpans[0].scopeSpans[0].spans[1]): spanId")
    assert "hex" in reasons[0]
    assert reasons[1].startswith("span 2 ") and "integer" in reasons[1]
    assert reasons[2].startswith("span 3 ") and "startTimeUnixNano" in reasons[2]
    assert reasons[3].startswith("span 4 ") and "traceId is required" in reasons[3]
    assert reasons[4].startswith("span 5 ") and "intValue" in reasons[4]
    assert reasons[5].startswith("span 6 ") and "all zeros" in reasons[5]
    assert reasons[6].startswith("span 7 ") and "object" in reasons[6]


def test_numbers_for_int64_fields_are_accepted_and_ties_keep_document_order():
    doc = document(span("aaaaaaaaaaaaaaaa", 7, trace=TRACE2), span("bbbbbbbbbbbbbbbb", 7))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = 7  # a number
    events, errors = events_from_otlp(doc)
    assert errors == [] and [e["event_id"] for e in events] == ["aaaaaaaaaaaaaaaa",
                                                                  "bbbbbbbbbbbbbbbb"]


def test_empty_and_malformed_documents():
    assert events_from_otlp({}) == ([], [])
    assert events_from_otlp({"resourceSpans": []}) == ([], [])
    events, errors = events_from_otlp([])
    assert events == [] and "object" in errors[0]
    events, errors = events_from_otlp({"resourceSpans": {"a": 1}})
    assert events == [] and "resourceSpans must be an array" in errors[0]


def test_non_finite_doubles_stay_storable_and_deep_values_are_refused():
    deep = {"stringValue": "x"}
    for _ in range(200):
        deep = {"arrayValue": {"values": [deep]}}
    doc = document(span("aaaaaaaaaaaaaaaa", 1, attrs=[kv("r", doubleValue="NaN")]),
                   span("bbbbbbbbbbbbbbbb", 2, attrs=[{"key": "deep", "value": deep}]))
    decoded = decode_traces(doc)
    assert decoded.events[0]["data"]["attributes"]["r"] == "NaN"
    assert decoded.rejected_spans == 1 and "deeply" in decoded.errors[0]
    json.dumps(decoded.events, allow_nan=False)


def test_the_decoder_imports_no_django():
    import subprocess

    code = ("import sys, studio.traces.formats.otlp; "
            "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) "
            "else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
