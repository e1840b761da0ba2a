"""What the upload page shows for each format: a sentence on what the file holds and a short
example, written in that format.  Every example parses without an error and gives at least one
event (tests/traces/test_formats.py checks it), so what the page shows is what an upload accepts.
The examples follow the parsers' docstrings and the logs the tests read (the AgentDojo and
message-chart demo logs, the Inspect samples)."""

from __future__ import annotations

from typing import NamedTuple


class FormatGuide(NamedTuple):
    description: str
    example: str


GUIDES: dict[str, FormatGuide] = {
    "jsonl": FormatGuide(
        "One event per line, a JSON object: the session it belongs to, its step, what the agent "
        "was given (input) and did (output), optional labels and data.  Fields this schema does "
        "not name are kept in the event's data.",
        '{"session": "agentdojo/workspace/user_task_0", "step": 0, "input": "Who else is '
        'invited to the Networking event on May 26th?", "output": {"tool": '
        '"search_calendar_events", "args": {"query": "Networking event", "date": '
        '"2024-05-26"}}}'),
    "csv": FormatGuide(
        "A spreadsheet export: the first row is the header, and you say which column holds the "
        "session (required), the step, the input, the output and the labels (separated by ; or "
        "|).  A cell holding a JSON object is read as that object.",
        "session,step,input,output,labels\n"
        "order-17,0,Refund order 17,\"{\"\"tool\"\": \"\"refund\"\", \"\"args\"\": "
        "{\"\"order\"\": 17}}\",tool_call:refund"),
    "openai": FormatGuide(
        "OpenAI-style chat transcripts, one per line (or one JSON document): a session id and "
        "its messages.  Each assistant message becomes an event; its tool calls are the "
        "event's output.",
        '{"session": "conv-1", "messages": [{"role": "user", "content": "Pay Bob 5 euros"}, '
        '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": '
        '"function", "function": {"name": "pay", "arguments": "{\\"amount\\": 5}"}}]}]}'),
    "otlp": FormatGuide(
        "OpenTelemetry traces in the OTLP JSON encoding (an export request, or one per line as "
        "the Collector's file exporter writes them).  Every span is an event, read through the "
        "GenAI and OpenInference conventions; a tool execution span is a tool call.",
        '{"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": '
        '{"stringValue": "agent"}}]}, "scopeSpans": [{"spans": [{"traceId": '
        '"5b8efff798038103d269b633813fc60c", "spanId": "b7ad6b7169203331", "name": '
        '"execute_tool pay", "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": '
        '"1700000001000000000", "attributes": [{"key": "gen_ai.operation.name", "value": '
        '{"stringValue": "execute_tool"}}, {"key": "gen_ai.tool.name", "value": '
        '{"stringValue": "pay"}}]}]}]}]}'),
    "inspect": FormatGuide(
        "An Inspect AI evaluation log, the .eval archive or the .json log, as Inspect writes "
        "it: each sample (and epoch) is a session, its assistant messages the events.  The "
        "example is a .json log cut to one sample.",
        '{"version": 2, "eval": {"task": "t", "model": "m"}, "samples": [{"id": "a", '
        '"epoch": 1, "target": "1", "messages": [{"role": "user", "content": "What is 0+1?"}, '
        '{"role": "assistant", "content": "ANSWER: 1"}]}]}'),
}
