"""orjson speeds up reading log lines, writing events for COPY and reading rows back for audits;
it must never change a value, a type or an error message.  Compared, on generated JSON, with the
json module paths it stands in for (no database)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.traces.formats.base import DECODER, decode_json_line, fast_loads
from studio.traces.parsing import _dumps, json_text

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-2**70, max_value=2**70),
    st.integers(min_value=2**63 - 3, max_value=2**64 + 3),
    st.integers(min_value=-2**63 - 3, max_value=-2**63 + 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(), st.text(alphabet=st.characters(codec="utf-8")),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12)


def same(a, b) -> bool:
    """Equal in value and in type all the way down (1, 1.0 and True differ; so do 0.0, -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def reference_line(raw: bytes):
    """decode_json_line as it was before orjson: the json module only."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        return DECODER.decode(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"


def agree(raw: bytes) -> None:
    got, expected = decode_json_line(raw), reference_line(raw)
    assert got[1] == expected[1]
    assert same(got[0], expected[0]), (raw, got, expected)


@settings(max_examples=400)
@given(values)
def test_lines_read_as_the_json_module_reads_them(value):
    agree(json.dumps(value).encode())
    agree(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@settings(max_examples=300)
@given(st.binary(max_size=40) | st.sampled_from([
    b"NaN", b"[Infinity]", b"1e999", b"-1e400", b'{"a": 1, "a": 2}', b'"\\ud800"', b"{oops",
    b"[1,]", b"\xff\xfe", b"18446744073709551616", b"-9223372036854775809", b"1E2", b"-0",
    b"[" * 3000 + b"]" * 3000, b"   ", b"", b'"\\u0000"']))
def test_odd_lines_get_the_same_value_or_the_same_message(raw):
    agree(raw)


@settings(max_examples=400)
@given(values)
def test_rows_read_back_as_json_loads_reads_them(value):
    text = json.dumps(value)
    assert same(fast_loads(text), json.loads(text))


@settings(max_examples=400)
@given(values | st.sampled_from([float("nan"), [float("inf")], {1: "int key"}, 2**64,
                                 {"a": [None, float("-inf")]}, "\ud800", {"x": "\x00"}]))
def test_event_json_is_what_the_json_module_writes_or_its_error(value):
    try:
        expected = _dumps(value)
    except (TypeError, ValueError) as exc:
        try:
            json_text(value)
        except type(exc) as again:
            assert str(again) == str(exc)
        else:
            raise AssertionError(f"{value!r} should be refused as {exc}") from None
        return
    got = json_text(value)
    if any("\ud800" <= c <= "\udfff" for c in expected):
        assert got == expected  # the surrogate check that follows reads this text
    assert same(json.loads(got), json.loads(expected))


def reference_serialise(event: dict):
    """_serialise as it was before orjson and the joined checks."""
    from studio.traces.parsing import _NUL_ESCAPE

    def _text(value):  # COPY's text format, as its manual describes it
        escapes = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
        return "\\N" if value is None else value.translate(escapes)

    try:
        texts = [_dumps(event["input"]), _dumps(event["output"]), _dumps(event["data"]),
                 None if event["labels"] is None else _dumps(event["labels"])]
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"cannot be stored as JSON ({exc})"
    message = event["message"] or {}
    names = [event["event_id"], event["lifeline"] or "", event["timestamp"],
             message.get("id") or "", message.get("peer") or "", message.get("kind") or ""]
    for text in (*texts, *names, event["session"]):
        if text is None or text.isascii():
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return None, ("contains an unpaired UTF-16 surrogate (\\ud800-\\udfff), which "
                          "cannot be stored")
    if any("\x00" in t for t in names if t) or "\x00" in event["session"] or any(
            "\\u0000" in t and _NUL_ESCAPE.search(t) for t in texts if t):
        return None, "contains the NUL character (\\u0000), which the database cannot store"
    json_texts = ["\\N" if t is None else t.replace("\\", "\\\\") for t in texts]
    return "\t".join([_text(names[0]), _text(names[1]), _text(names[2]), *json_texts,
                      _text(names[3]), _text(names[4]), _text(names[5])]), None


odd_text = st.lists(st.sampled_from(["a", "é", "\\", "\t", "\n", "\r", "\x00", "\ud800",
                                     "\udc00", "😀", '"', "u0000"]), max_size=6).map("".join)
names = st.none() | odd_text
events = st.fixed_dictionaries({
    "session": odd_text, "event_id": names, "lifeline": names, "timestamp": names,
    "input": values | odd_text, "output": values | odd_text,
    "data": st.dictionaries(odd_text, values | odd_text, max_size=3),
    "labels": st.none() | st.lists(odd_text, max_size=3),
    "message": st.none() | st.fixed_dictionaries({"id": names, "peer": names,
                                                  "kind": st.sampled_from(["send", "receive"])}),
})


@settings(max_examples=500)
@given(events)
def test_an_event_is_written_for_copy_as_before_or_refused_for_the_same_reason(event):
    from studio.traces.parsing import serialise

    got, expected = serialise(event), reference_serialise(event)
    assert got[1] == expected[1]
    if expected[0] is None:
        return
    # The same columns; JSON columns the same JSON (orjson may escape differently).
    got_columns, expected_columns = got[0].split("\t"), expected[0].split("\t")
    assert len(got_columns) == len(expected_columns) == 10
    for index, (a, b) in enumerate(zip(got_columns, expected_columns)):
        if index in (3, 4, 5, 6) and b != "\\N":
            assert same(json.loads(a.replace("\\\\", "\\")), json.loads(b.replace("\\\\", "\\")))
        else:
            assert a == b


@settings(max_examples=400)
@given(st.lists(events, min_size=1, max_size=4), st.integers(min_value=1, max_value=2**62),
       st.integers(min_value=0, max_value=2**31 - 8))
def test_the_copy_text_reads_back_as_the_rows_an_arrival_audit_observes(batch, session_id, step):
    """What a child process monitoring on arrival reads from the COPY text is what the loading
    process would have handed it (``CommittedRows.tuples``), whatever else the batch holds (one
    integer beyond 64 bits makes the whole batch read value by value)."""
    from studio.traces.copytext import monitor_rows
    from studio.traces.parsing import Row, serialise
    from studio.traces.loading import CommittedRows, direct_copy_text

    rows = []
    for event in batch:
        tail, problem = serialise(event)
        if not problem:
            rows.append(Row(len(rows), len(rows) + 1, event["session"], step + len(rows),
                            event["event_id"], tail, event, session_id))
    text = direct_copy_text(rows, 7, 9)
    got = monitor_rows(text)
    expected = CommittedRows(rows, text).tuples()
    assert len(got) == len(rows)
    for got_row, expected_row in zip(got, expected):
        assert all(same(a, b) for a, b in zip(got_row, expected_row)), (got_row, expected_row)
