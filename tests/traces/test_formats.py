"""The log parsers on their own: no database, no Django."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.traces.formats import (
    PARSERS,
    LineError,
    OptionsError,
    check_options,
    parse,
    parse_csv,
    parse_inspect,
    parse_jsonl,
    parse_openai,
)
from studio.traces.formats.base import read_lines
from studio.traces.formats.examples import GUIDES
from studio.traces.formats.jsonstream import DocumentError, JsonStream

from .data import data_file

REPO = Path(__file__).resolve().parents[2]
CANONICAL = {"session", "step", "lifeline", "timestamp", "input", "output", "data", "labels",
             "event_id", "message", "line"}


def run(parser, content: bytes, *args, **kwargs) -> tuple[list[dict], list[LineError]]:
    items = list(parser(io.BytesIO(content), *args, **kwargs))
    events = [i for i in items if isinstance(i, dict)]
    errors = [i for i in items if isinstance(i, LineError)]
    assert len(events) + len(errors) == len(items)
    return events, errors


def run_file(format: str, path: Path, **kwargs):
    with open(path, "rb") as handle:
        items = list(parse(format, handle, name=path.name, **kwargs))
    return ([i for i in items if isinstance(i, dict)],
            [i for i in items if isinstance(i, LineError)])


def lines(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


# ---------------------------------------------------------------------------------------------
# Purity

def test_the_parsers_import_without_django():
    modules = ["studio.traces.formats", "studio.traces.formats.jsonl",
               "studio.traces.formats.csvlog", "studio.traces.formats.openai_chat",
               "studio.traces.formats.examples",
               "studio.traces.formats.inspect_logs", "studio.traces.formats.otlp_files",
               "studio.traces.formats.jsonstream", "studio.traces.parsing",
               "studio.childprocess"]
    script = ("import importlib, json, sys\n"
              "for m in sys.argv[1:]: importlib.import_module(m)\n"
              "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'django')))")
    done = subprocess.run([sys.executable, "-c", script, *modules], cwd=REPO, capture_output=True,
                          text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin",
                               "DJANGO_SETTINGS_MODULE": "studio.settings"},
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


# ---------------------------------------------------------------------------------------------
# The shared logs (counts from shared/data/README.md)

@pytest.mark.parametrize("name, sessions, events", [
    ("textworld.jsonl", 40, 985),
    ("agentdojo_groundtruth.jsonl", 123, 386),
    ("agentdojo_hijacked.jsonl", 20, 79),
    ("inspect_mock.jsonl", 3, 9),
])
def test_shared_jsonl_logs_import_whole(name, sessions, events):
    found, errors = run_file("jsonl", data_file(name))
    assert errors == []
    assert len(found) == events
    assert len({e["session"] for e in found}) == sessions
    assert all(set(e) == CANONICAL for e in found)
    first = found[0]
    # Free top-level fields go into data: the shared logs keep their context in `env`.
    assert set(first["data"]) == {"env"} and first["step"] == 0
    assert [e["line"] for e in found] == list(range(1, events + 1))


def _inspect_files():
    folder = data_file("inspect")
    return sorted(folder.glob("*.eval")) + sorted(folder.glob("*.json"))


def test_inspect_logs_give_what_the_reference_conversion_gives():
    reference, _ = run_file("jsonl", data_file("inspect_mock.jsonl"))
    files = _inspect_files()
    assert {f.suffix for f in files} == {".eval", ".json"}
    for path in files:
        found, errors = run_file("inspect", path)
        assert errors == [], path
        assert len(found) == 9 and len({e["session"] for e in found}) == 3
        for mine, theirs in zip(found, reference, strict=True):
            env = theirs["data"]["env"]
            assert (mine["session"], mine["step"]) == (theirs["session"], theirs["step"])
            assert mine["input"] == theirs["input"]
            assert mine["output"] == theirs["output"]
            for key in ("source", "model", "target", "score"):
                assert mine["data"][key] == env[key], (path.name, key)
            assert mine["data"]["role"] == "assistant"
            assert mine["data"]["stop_reason"] == ("stop" if "text" in mine["output"]
                                                   else "tool_calls")
            assert mine["timestamp"].startswith("2026-11-21T12:41:")
            assert mine["data"]["log"] == path.name


# ---------------------------------------------------------------------------------------------
# JSONL

def test_jsonl_bad_lines_are_reported_with_their_numbers_and_the_rest_kept():
    content = lines(
        {"session": "s", "step": 0, "output": "a"},                     # 1
        "{not json",                                                    # 2
        "",                                                             # 3 blank: skipped
        [1, 2],                                                         # 4
        {"step": 1},                                                    # 5
        {"session": "s", "step": "one"},                                # 6
        {"session": "s", "labels": "x"},                                # 7
        {"session": "s", "data": []},                                   # 8
        '{"session": "s", "input": NaN}',                               # 9
        {"session": "s", "step": -1},                                   # 10
        {"session": "s", "timestamp": "yesterday"},                     # 11
        {"session": "s", "env": 1, "data": {"env": 2}},                 # 12
        {"session": "s", "message": {"id": "m", "kind": "shout"}},      # 13
        {"session": "s", "lifeline": "x" * 201},                        # 14
        {"session": "s", "step": 1, "output": "b", "env": {"k": 1},     # 15
         "timestamp": "2026-01-02T03:04:05", "labels": ["p"], "event_id": 7,
         "message": {"id": "m1", "peer": "bob", "kind": "send"}},
    ) + b'{"session": "s", "x": "\xff"}\n'                               # 16
    events, errors = run(parse_jsonl, content)
    assert [(e.line, e.reason) for e in errors] == [
        (2, "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
        (4, "expected a JSON object, got an array"),
        (5, "field 'session' is required and must be a non-empty string"),
        (6, "field 'step' must be a whole number, got a string"),
        (7, "field 'labels' must be a list of atom names, got a string"),
        (8, "field 'data' must be an object, got an array"),
        (9, "not valid JSON (NaN is not a JSON number)"),
        (10, "field 'step' must be between 0 and 2147483647, got -1"),
        (11, ("field 'timestamp' must be an ISO 8601 date and time or seconds since 1970, "
              "got 'yesterday'")),
        (12, "field 'env' is given both at the top level and in 'data'"),
        (13, "field 'message.kind' must be 'send' or 'receive', got 'shout'"),
        (14, "field 'lifeline' is longer than 200 characters"),
        (16, "not UTF-8 text"),
    ]
    assert [e["line"] for e in events] == [1, 15]
    last = events[1]
    assert last == {"session": "s", "step": 1, "lifeline": "", "input": None, "output": "b",
                    "timestamp": "2026-01-02T03:04:05+00:00", "data": {"env": {"k": 1}},
                    "labels": ["p"], "event_id": "7", "line": 15,
                    "message": {"id": "m1", "peer": "bob", "kind": "send"}}


def test_jsonl_accepts_a_byte_order_mark_crlf_and_integer_sessions():
    events, errors = run(parse_jsonl, b'\xef\xbb\xbf{"session": 5, "input": 1}\r\n{"session": "t", "input": 2}')
    assert errors == [] and [e["session"] for e in events] == ["5", "t"]
    assert events[0]["step"] is None


def test_numbers_no_database_stores_are_refused():
    events, errors = run(parse_jsonl, lines('{"session": "s", "x": 1e999}', {"session": "t", "input": ""}))
    assert [e["session"] for e in events] == ["t"]
    assert [(e.line, e.reason) for e in errors] == [
        (1, "not valid JSON (the number 1e999 is too large)")]
    events, errors = run(parse_csv, b"s,x\na,1e999\n", {"session": "s", "data": ["x"]})
    assert errors == [] and events[0]["data"] == {"x": "1e999"}


def test_overlong_lines_are_skipped_unread():
    content = b"a" * 50 + b"\n" + b"b" * 10 + b"\n" + b"c" * 30
    assert list(read_lines(io.BytesIO(content), max_bytes=20)) == [
        (1, None), (2, b"b" * 10), (3, None)]


# ---------------------------------------------------------------------------------------------
# CSV

MAPPING = {"session": "conv", "step": "turn", "input": "prompt", "output": "reply",
           "labels": "tags", "timestamp": "at", "data": ["model", "cost", "zip"]}


def test_csv_with_a_mapping():
    content = (
        b"conv,turn,prompt,reply,tags,at,model,cost,zip\n"
        b"c1,0,hi,hello,greet;polite,2026-01-01T00:00:00Z,gpt,0.5,00123\n"
        b'c1,,"multi\nline","{""tool"": ""pay"", ""args"": {""amount"": 3}}",a|b,,gpt,true,\n'
        b"c2,x,q,r,,,m,1,2\n"
        b",1,q,r,,,m,1,2\n"
        b"c2,1,q\n"
        b"c2,2,q,r,,,m,-1e3,2\n")
    events, errors = run(parse_csv, content, MAPPING)
    assert [(e.line, e.reason) for e in errors] == [
        (5, "column 'turn' (the step) must be a whole number, got 'x'"),
        (6, "column 'conv' (the session) is empty"),
        (7, "the record has 3 fields; the header has 9"),
    ]
    first, second, third = events
    assert first["session"] == "c1" and first["step"] == 0 and first["line"] == 2
    assert first["labels"] == ["greet", "polite"]
    assert first["timestamp"] == "2026-01-01T00:00:00+00:00"
    assert first["data"] == {"model": "gpt", "cost": 0.5, "zip": "00123"}
    assert second["step"] is None and second["line"] == 3 and second["input"] == "multi\nline"
    assert second["output"] == {"tool": "pay", "args": {"amount": 3}}
    assert second["labels"] == ["a", "b"] and second["data"]["cost"] is True
    assert second["data"]["zip"] is None
    assert third["line"] == 8 and third["data"]["cost"] == -1000.0


def test_csv_mapping_naming_a_missing_column_is_a_field_error():
    content = b"conv,turn,prompt\nc1,0,hi\n"
    with pytest.raises(OptionsError) as caught:
        list(parse_csv(io.BytesIO(content), {"session": "conv", "output": "reply"}))
    assert caught.value.field == "options.output"
    assert caught.value.message == ("column 'reply' is not in the file's header; the header has "
                                    "'conv', 'turn', 'prompt'")
    with pytest.raises(OptionsError) as caught:
        list(parse_csv(io.BytesIO(content), {"session": "conv", "data": ["turn", "cost"]}))
    assert caught.value.field == "options.data" and "'cost'" in caught.value.message


@pytest.mark.parametrize("options, field", [
    ({}, "options.session"),
    ({"session": "a", "colour": "b"}, "options.colour"),
    ({"session": 3}, "options.session"),
    ({"session": "a", "data": "b"}, "options.data"),
    ({"session": "a", "delimiter": ";;"}, "options.delimiter"),
])
def test_csv_options_are_checked_before_reading(options, field):
    with pytest.raises(OptionsError) as caught:
        check_options("csv", options)
    assert caught.value.field == field


def test_csv_bad_bytes_and_delimiters():
    content = b"s;x\na;1\n" + b"b\xff;2\n" + b"c;3\n"
    events, errors = run(parse_csv, content, {"session": "s", "delimiter": ";", "data": ["x"]})
    assert [(e.line, e.reason) for e in errors] == [(3, "not UTF-8 text")]
    assert [(e["session"], e["data"]["x"]) for e in events] == [("a", 1), ("c", 3)]


# ---------------------------------------------------------------------------------------------
# OpenAI-style transcripts

def _call(name, arguments, call_id="c1"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATION = [
    {"role": "system", "content": "Be careful."},
    {"role": "user", "content": [{"type": "text", "text": "Pay Bob"},
                                 {"type": "image_url", "image_url": {"url": "x"}}]},
    {"role": "assistant", "content": None, "finish_reason": "tool_calls",
     "tool_calls": [_call("lookup", '{"name": "Bob"}', "c1"), _call("pay", '{"amount": 5',
                                                                     "c2")]},
    {"role": "tool", "tool_call_id": "c1", "content": "IBAN 1"},
    {"role": "assistant", "content": "Done.", "finish_reason": "stop"},
]


def test_openai_transcripts_one_per_line():
    content = lines({"id": "conv-1", "model": "gpt-x", "messages": CONVERSATION},
                    {"session": "conv-2", "messages": [{"role": "user", "content": "hi"}]},
                    {"session": "conv-3", "messages": "nope"},
                    {"messages": [{"role": "assistant", "content": "hey"}]})
    events, errors = run(parse_openai, content, name="chats.jsonl")
    assert [(e.line, e.pointer, e.reason) for e in errors] == [
        (1, "/messages/2/tool_calls/1",
         ("message 2: tool call 'pay': arguments are not valid JSON (Expecting ',' delimiter "
          "at column 13)")),
        (2, "", "session 'conv-2' has no assistant message: no event to import"),
        (3, "", "field 'messages' is required and must be a list of messages"),
    ]
    lookup, done, anonymous = events
    assert lookup["session"] == "conv-1" and lookup["step"] == 0
    assert lookup["input"] == "[system] Be careful.\n[user] Pay Bob\n[image]"
    assert lookup["output"] == {"tool": "lookup", "args": {"name": "Bob"}}
    assert lookup["data"] == {"model": "gpt-x", "role": "assistant", "stop_reason": "tool_calls",
                              "message_index": 2, "tool_call_id": "c1"}
    # The malformed call keeps its step: later steps do not shift.
    assert done["step"] == 2 and done["input"] == "[tool:lookup] IBAN 1"
    assert done["output"] == "Done." and done["data"]["stop_reason"] == "stop"
    assert anonymous["session"] == "chats.jsonl#4"


def test_openai_single_document_streamed_with_its_id_after_the_messages():
    document = json.dumps({"messages": CONVERSATION[:3] + [
        {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}}],
        "id": "doc-1", "user": "u"}, indent=2).encode()
    with_options = list(parse_openai(io.BytesIO(document), {"session": "fallback"}))
    events = [i for i in with_options if isinstance(i, dict)]
    errors = [i for i in with_options if isinstance(i, LineError)]
    assert [e["session"] for e in events] == ["doc-1", "doc-1"]
    assert [e["output"]["tool"] for e in events] == ["lookup", "legacy"]
    assert events[0]["data"]["user"] == "u"
    assert len(errors) == 1 and errors[0].pointer == "/messages/2/tool_calls/1"
    # The line is where the message starts in the pretty-printed document.
    text = document.decode()
    start = text.rfind("{", 0, text.index('"role": "assistant"'))
    assert errors[0].line == text.count("\n", 0, start) + 1


def test_openai_truncated_document_keeps_what_came_before():
    document = json.dumps({"id": "d", "messages": CONVERSATION}, indent=1).encode()
    cut = document[:document.index(b'"Done."')]
    events, errors = run(parse_openai, cut)
    assert [e["output"]["tool"] for e in events] == ["lookup"]
    assert [e["session"] for e in events] == ["d"]
    assert (errors[-1].line, errors[-1].reason) == (cut.count(b"\n") + 1,
                                                    "not valid JSON (Expecting value)")


# ---------------------------------------------------------------------------------------------
# Inspect

def _sample(sample_id, answer="ANSWER: 1"):
    return {"id": sample_id, "epoch": 1, "target": "1",
            "scores": {"match": {"value": "C"}},
            "attachments": {"abc": "a long prompt"},
            "messages": [
                {"role": "user", "content": "attachment://abc"},
                {"role": "assistant", "content": "",
                 "tool_calls": [{"id": "t", "function": "f", "arguments": {"x": 1}}]},
                {"role": "tool", "function": "f", "content": "2"},
                {"role": "assistant", "content": [{"type": "text", "text": answer}]}]}


def test_inspect_json_errors_name_the_sample_and_the_rest_is_kept():
    log = {"version": 2, "eval": {"task": "t", "model": "m"},
           "samples": [_sample("a"), {"id": "b"}, "junk", _sample(3)]}
    text = json.dumps(log, indent=1).encode()
    events, errors = run(parse_inspect, text, name="log.json")
    assert [e["session"] for e in events] == ["inspect/t/a/e1"] * 2 + ["inspect/t/3/e1"] * 2
    assert events[0]["input"] == "[user] a long prompt"
    assert events[1]["output"] == {"text": "ANSWER: 1"}
    assert [(e.pointer, e.reason) for e in errors] == [
        ("/samples/1/messages", "the sample has no messages"),
        ("/samples/2", "a sample must be an object, got a string")]
    assert errors[1].line == text.decode()[:text.decode().index('"junk"')].count("\n") + 1


def test_inspect_eval_archive_with_a_damaged_member(tmp_path):
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        archive.writestr("samples/a_epoch_1.json", json.dumps(_sample("a")))
        archive.writestr("samples/b_epoch_1.json", "{broken")
        archive.writestr("samples/c_epoch_1.json", json.dumps(_sample("c")))
        archive.writestr("samples/d_epoch_1.json", json.dumps(_sample("d")))
    content = bytearray(path.read_bytes())
    at = content.index(b"samples/d_epoch_1.json") + len("samples/d_epoch_1.json")
    content[at + 5] ^= 0xFF  # damage d's deflated data
    path.write_bytes(bytes(content))
    events, errors = run_file("inspect", path)
    assert [e["session"] for e in events] == ["inspect/t/a/e1"] * 2 + ["inspect/t/c/e1"] * 2
    assert [(e.line, e.pointer) for e in errors] == [(2, "samples/b_epoch_1.json"),
                                                     (4, "samples/d_epoch_1.json")]
    assert errors[0].reason.startswith("samples/b_epoch_1.json: it is not valid JSON")
    assert errors[1].reason.startswith("samples/d_epoch_1.json: it ")


def test_odd_ids_in_messages_are_not_a_crash():
    messages = [{"role": "assistant", "id": ["x"], "tool_calls": [
                    {"id": ["y"], "function": "f", "arguments": {}}]},
                {"role": "tool", "tool_call_id": ["y"], "content": "r"},
                {"role": "assistant", "content": "ok"}]
    log = {"eval": {"task": "t"}, "samples": [{"id": 1, "messages": messages}]}
    events, errors = run(parse_inspect, json.dumps(log).encode())
    assert errors == [] and events[1]["input"] == "[tool] r"
    events, errors = run(parse_openai, json.dumps({"messages": messages}).encode())
    assert errors == [] and len(events) == 2


def test_inspect_refuses_what_is_not_a_log():
    events, errors = run(parse_inspect, b"PK\x03\x04 not really a zip")
    assert events == [] and errors[0].line == 0 and "not a readable zip" in errors[0].reason
    events, errors = run(parse_inspect, b'{"version": 2, "eval": {"task": "t"}}')
    assert events == [] and "holds no samples" in errors[0].reason


# ---------------------------------------------------------------------------------------------
# The streaming reader

def test_json_stream_reads_members_and_elements_across_small_chunks():
    text = (b'{"a": 12345678901234567890,\n "skip": {"x": [1, 2, 3]},\n "items": [\n'
            b'  {"k": "\\u00e9\\u00e9"},\n  123456789,\n  "tail"\n ],\n "z": 1.5e10}')
    stream = JsonStream(io.BytesIO(text), chunk_size=3)
    seen = {}
    for key in stream.members():
        if key == "items":
            seen[key] = list(stream.elements())
        elif key != "skip":
            seen[key] = stream.take()
    assert seen == {"a": 12345678901234567890, "items": [(4, {"k": "éé"}), (5, 123456789),
                                                         (6, "tail")], "z": 1.5e10}


@pytest.mark.parametrize("text, line, reason", [
    (b'{"a": [1, 2,, 3]}', 1, "not valid JSON (Expecting value)"),
    (b'{"a": 1}\n\n{"b": 2}', 3, "not valid JSON (more data after the document)"),
    (b'[1]', 1, "not valid JSON (expected an object, found '[')"),
    (b'{"a": 1', 1, "not valid JSON (expected ',' or '}', found the end of the file)"),
    (b'{"a": "\xff"}', 1, "not UTF-8 text"),
])
def test_json_stream_errors_name_the_line(text, line, reason):
    stream = JsonStream(io.BytesIO(text), chunk_size=4)
    with pytest.raises(DocumentError) as caught:
        for _ in stream.members():
            stream.take()
    assert (caught.value.line, caught.value.reason) == (line, reason)


# ---------------------------------------------------------------------------------------------
# Fuzzing: only events or line errors, whatever the bytes

def _well_formed(items):
    for item in items:
        if isinstance(item, LineError):
            assert isinstance(item.line, int) and item.line >= 0 and item.reason
        else:
            assert set(item) == CANONICAL
            assert isinstance(item["session"], str) and item["session"]
            assert item["step"] is None or 0 <= item["step"] < 2**31
            assert isinstance(item["data"], dict)
            json.dumps(item)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["session", "step", "labels", "data", "input", "output", "timestamp",
                         "message", "event_id", "lifeline", "messages", "role", "env", "content",
                         "tool_calls", "tool_call_id", "function", "arguments", "name", "id",
                         "samples", "eval"]) | st.text(max_size=5), inner, max_size=4),
    max_leaves=12)
LINE = st.one_of(st.binary(max_size=40), JSONISH.map(lambda v: json.dumps(v).encode()),
                 st.sampled_from([b'{"session": "s"}', b'{"session": "s", "step": 1}', b"",
                                  b'{"session": 1, "input": NaN}', b'{"session": "\\ud800"}',
                                  b'{"session": "s", "output": -1e400}']))
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(LINE, max_size=8))
def test_fuzz_jsonl_yields_only_events_or_line_errors(rows):
    content = b"\n".join(rows)
    items = list(parse_jsonl(io.BytesIO(content)))
    _well_formed(items)
    # Every non-blank line (a byte order mark at the start is not content) is accounted for once.
    text = content.removeprefix(b"\xef\xbb\xbf")
    numbered = {n for n, raw in enumerate(text.split(b"\n"), 1) if raw.strip()}
    assert sorted(i.line if isinstance(i, LineError) else i["line"] for i in items) == \
        sorted(numbered)


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_random_bytes_in_every_format(content):
    for format, options in (("jsonl", None), ("openai", None), ("inspect", None),
                            ("csv", {"session": "s"})):
        try:
            _well_formed(parse(format, io.BytesIO(content), options))
        except OptionsError:
            assert format == "csv"  # a header without the mapped column


ROLES = st.sampled_from(["user", "assistant", "tool", "system", 3])
MESSAGE = st.fixed_dictionaries({"role": ROLES}, optional={
    "content": JSONISH, "tool_calls": st.lists(JSONISH | st.fixed_dictionaries(
        {"id": JSONISH, "function": JSONISH | st.fixed_dictionaries(
            {"name": JSONISH, "arguments": JSONISH | st.text(max_size=12)})}), max_size=2),
    "tool_call_id": JSONISH, "name": JSONISH, "function": JSONISH, "finish_reason": JSONISH})


@FUZZ
@given(st.lists(MESSAGE | JSONISH, max_size=5))
def test_fuzz_chat_transcripts_and_inspect_samples(messages):
    content = json.dumps({"id": "x", "messages": messages}).encode()
    _well_formed(parse_openai(io.BytesIO(content)))
    _well_formed(parse_openai(io.BytesIO(json.dumps({"messages": messages}, indent=1).encode())))
    log = {"eval": {"task": "t"}, "samples": [{"id": 1, "messages": messages}, messages]}
    _well_formed(parse_inspect(io.BytesIO(json.dumps(log).encode())))


def test_the_upload_pages_examples_parse_without_an_error():
    mapping = {"session": "session", "step": "step", "input": "input", "output": "output",
               "labels": "labels"}
    for key, guide in GUIDES.items():
        events, errors = run(PARSERS[key], guide.example.encode(),
                             mapping if key == "csv" else None, name="example")
        assert errors == [] and events, key
