"""The pure vocabulary: collecting an event's atoms and paths, counting the evidence of every
event, what a rule reads, suggestions and warnings; and the parser's refusal of invisible
characters.  No database."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic.events import builtin_atoms
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.reads import rule_reads
from studio.logic.vocabulary import (
    EXAMPLE_TEXT_LIMIT,
    MAX_DEPTH,
    MAX_EXAMPLES,
    MAX_PATHS,
    Collector,
    Vocabulary,
    carrier_of,
    collect_event,
    event_counts,
    event_entries,
    example_value,
    json_type,
)
from studio.logic.vocabulary_warnings import nearest, vocabulary_warnings

PAYMENT = {"input": "pay the rent",
           "output": {"tool": "send_money", "args": {"amount": 12000, "to": "IBAN1",
                                                     "Memo": "x", "tags": ["a", 3]}},
           "data": {"status": "passed", "ok": True, "note": None, "role": "assistant"},
           "labels": ["approved", 7]}


def test_an_event_gives_its_built_in_atoms_its_labels_and_each_path_with_its_type():
    entries = event_entries(PAYMENT)

    atoms = {(kind, name) for kind, name, _ in entries if kind != "path"}
    assert atoms == {("builtin", "tool_call:send_money"), ("builtin", "role:assistant"),
                     ("label", "approved")}
    paths = {(name, type_) for kind, name, type_ in entries if kind == "path"}
    assert paths == {
        ("input", "string"), ("output", "object"), ("output.tool", "string"),
        ("output.args", "object"), ("output.args.amount", "number"),
        ("output.args.to", "string"), ("output.args.tags", "array"),
        ("output.args.tags.0", "string"), ("output.args.tags.0", "number"),
        ("data", "object"), ("data.status", "string"), ("data.ok", "boolean"),
        ("data.note", "null"), ("data.role", "string")}
    # `Memo` cannot be written in a formula (paths are lower-case): not collected.


def test_paths_stop_at_the_depth_bound():
    deep: dict = {"leaf": 1}
    for _ in range(MAX_DEPTH + 3):
        deep = {"k": deep}
    found = event_entries({"data": deep})
    longest = max((name for kind, name, _ in found if kind == "path"), key=len)
    assert longest.count(".") == MAX_DEPTH


def test_the_path_bound_keeps_atoms_but_no_more_paths():
    found: set = set()
    collect_event(None, {"tool": "a", "x": 1}, None, None, found, max_paths=1)
    collect_event(None, {"tool": "b", "y": 1}, None, None, found, max_paths=1)
    assert ("builtin", "tool_call:b", "") in found
    assert not any(name == "output.y" for _, name, _ in found)


# ---------------------------------------------------------------------------------------------
# Evidence: every event counted (Collector)

def test_each_path_is_counted_on_the_kind_of_event_that_carries_it():
    refund = {"input": "refund it", "output": {"tool": "issue_refund", "args": {"amount": 30}},
              "data": None, "labels": ["approved"]}
    search = {"input": None, "output": {"tool": "search", "args": {}},
              "data": {"env": {"placeholder_args": {"amount": "$AMOUNT"}}}, "labels": None}
    chat = {"input": "hi", "output": "hello", "data": {"role": "assistant"}, "labels": None}
    found = event_counts([refund, search, refund | {"output": {"tool": "issue_refund",
                                                               "args": {"amount": 45.5}}}, chat])

    assert found[("path", "output.args.amount", "number", "tool_call:issue_refund")] == (
        2, [30, 45.5])
    assert found[("path", "data.env.placeholder_args.amount", "string", "tool_call:search")] == (
        1, ["$AMOUNT"])
    assert not any(e[1] == "output.args.amount" and e[3] != "tool_call:issue_refund"
                   for e in found)
    assert found[("builtin", "tool_call:issue_refund", "", "tool_call:issue_refund")] == (2, [])
    assert found[("label", "approved", "", "tool_call:issue_refund")] == (2, [])
    assert found[("builtin", "role:assistant", "", "role:assistant")] == (1, [])
    assert found[("path", "output", "string", "role:assistant")] == (1, ["hello"])
    assert found[("path", "input", "null", "tool_call:search")] == (1, [])


def test_a_path_in_a_list_counts_once_an_event_and_examples_are_distinct_and_few():
    items = [{"sku": f"A{i}", "qty": 1} for i in range(7)]
    long_text = "x" * (EXAMPLE_TEXT_LIMIT + 20)
    found = event_counts([{"output": {"tool": "order", "args": {"items": items}}},
                          {"output": {"tool": "order", "args": {"items": items[:1]}},
                           "input": long_text}])

    assert found[("path", "output.args.items.0.sku", "string", "tool_call:order")] == (
        2, ["A0", "A1", "A2", "A3", "A4"])
    assert found[("path", "output.args.items.0.qty", "number", "tool_call:order")] == (2, [1])
    assert found[("path", "input", "string", "tool_call:order")] == (
        1, [long_text[:EXAMPLE_TEXT_LIMIT]])


def test_new_path_names_stop_at_the_bound_but_known_ones_and_atoms_are_still_counted():
    collector = Collector(max_paths=4)  # input, output, data and one more
    collector.add(None, {"x": 1, "tool": "a"}, None, None)
    collector.add(None, {"tool": "b", "x": 2, "y": 1}, None, None)
    found = collector.counts()
    assert ("builtin", "tool_call:b", "", "tool_call:b") in found
    assert found[("path", "output.x", "number", "tool_call:b")] == (1, [2])
    assert not any(e[1] in ("output.y", "output.tool") for e in found)


def reference_counts(events, max_paths: int = MAX_PATHS) -> dict:
    """The plain walk the collector must equal: each event's entries found one by one."""
    counts: dict = {}
    examples: dict = {}
    names = {"input", "output", "data"}
    for input_, output, data, labels, role in events:
        carrier = carrier_of(output, data, role)
        shown: set = set()
        values: list = []
        for atom in builtin_atoms({"output": output, "data": data, "role": role}):
            shown.add(("builtin", atom, "", carrier))
        if type(labels) is list:
            shown.update(("label", atom, "", carrier) for atom in labels if type(atom) is str)

        def walk(value, path, depth):
            entry = ("path", path, json_type(value), carrier)
            shown.add(entry)
            values.append((entry, value))
            if depth >= MAX_DEPTH:
                return
            if type(value) is dict:
                inner = [(f"{path}.{key}", v) for key, v in value.items()
                         if type(key) is str and re.fullmatch(r"[a-z0-9_:\-]+", key)]
            elif type(value) is list:
                inner = [(f"{path}.0", v) for v in value]
            else:
                inner = []
            for name, v in inner:
                if name in names or len(names) < max_paths:
                    names.add(name)
                    walk(v, name, depth + 1)

        walk(input_, "input", 0)
        walk(output, "output", 0)
        walk(data, "data", 0)
        for entry in shown:
            counts[entry] = counts.get(entry, 0) + 1
        for entry, value in values:
            example = example_value(value)
            kept = examples.setdefault(entry, [])
            if example is not None and example not in kept and len(kept) < MAX_EXAMPLES:
                kept.append(example)
    return {entry: (n, examples.get(entry, [])) for entry, n in counts.items()}


keys = st.sampled_from(["tool", "name", "role", "stop_reason", "tool_calls", "function",
                        "args", "amount", "a", "0", "B", "x.y"])
leaves = (st.none() | st.booleans() | st.integers(-3, 3) | st.integers(-50, 50)
          | st.floats(-2, 2, allow_nan=False).map(lambda f: round(f, 1))
          | st.sampled_from(["", "a", "b", "pay", "user", "x" * 79, "x" * 80, "x" * 81,
                             "x" * 80 + "y"]))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(keys, inner, max_size=4), max_leaves=12)
outputs = values | st.fixed_dictionaries(
    {"tool": st.sampled_from(["pay", "refund", "", 3])},
    optional={"args": values, "role": st.sampled_from(["tool", "assistant"])})
events = st.tuples(values, outputs, st.none() | st.dictionaries(keys, values, max_size=4),
                   st.none() | st.lists(st.sampled_from(["ok", "late", 7]), max_size=3),
                   st.none() | st.sampled_from(["user", "assistant", ""]))


@settings(max_examples=400, deadline=None)
@given(st.lists(events, max_size=16), st.integers(3, 14), st.integers(0, 16))
def test_the_collector_counts_exactly_what_a_plain_walk_of_every_event_finds(
        logged, max_paths, cut):
    collector = Collector(max_paths)
    for event in logged:
        collector.add(*event)
    assert collector.counts() == reference_counts(logged, max_paths)

    # Counted in two batches and added up as the store adds them: the same.
    batches = Collector(max_paths)
    for event in logged[:cut]:
        batches.add(*event)
    first = batches.take()
    for event in logged[cut:]:
        batches.add(*event)
    total = dict(first)
    for entry, (n, examples) in batches.take().items():
        have, kept = total.get(entry, (0, []))
        total[entry] = (have + n, merged(kept, examples))
    assert total == reference_counts(logged, max_paths)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, min_size=1, max_size=3), st.data())
def test_events_of_a_few_shapes_with_other_values_are_counted_the_same(templates, data):
    # Most events share the shape of an earlier one (checked by its compiled shape), some
    # with a value of another kind or a key more or less.
    def vary(value):
        if type(value) is dict:
            varied = {k: vary(v) for k, v in value.items()}
            if data.draw(st.integers(0, 9)) == 0:
                varied[data.draw(keys)] = data.draw(leaves)
            return varied
        if type(value) is list:
            return [vary(v) for v in value]
        return data.draw(leaves) if data.draw(st.integers(0, 3)) == 0 else value

    logged = [tuple(vary(part) for part in data.draw(st.sampled_from(templates)))
              for _ in range(data.draw(st.integers(1, 24)))]
    collector = Collector()
    for event in logged:
        collector.add(*event)
    assert collector.counts() == reference_counts(logged)


def merged(stored: list, more: list) -> list:
    out: list = []
    for value in (*stored, *more):
        if value not in out and len(out) < MAX_EXAMPLES:
            out.append(value)
    return out


VOCABULARY = Vocabulary.from_entries(
    event_entries(PAYMENT) | event_entries({"output": {"tool": "get_balance"},
                                            "data": {"env": {"location": "kitchen"}}}),
    declared=["is_large"])


def test_paths_are_found_as_rules_read_them():
    assert VOCABULARY.path_types("output.args.amount") == {"number"}
    assert VOCABULARY.path_types("output.args.tags.2") == {"string", "number"}
    assert VOCABULARY.path_types("env.location") == {"string"}  # data's fields, at the top
    assert VOCABULARY.path_types("step") == {"number"}
    assert VOCABULARY.path_types("output.tol") is None
    assert VOCABULARY.path_types("lifeline.x") is None
    assert VOCABULARY.source_of("is_large") == "labeler"
    assert VOCABULARY.source_of("tool_call:get_balance") == "builtin"
    assert VOCABULARY.source_of("approved") == "events"
    assert VOCABULARY.source_of("tool_call:send_mony") is None


def test_a_rule_reads_the_atoms_inside_past_operators_and_each_comparison_side():
    reads = rule_reads(parse('G(tool_call:send_money -> O approved) & '
                             'H(data.balance <= prev(data.balance)) & data.status == "ok"'))

    assert reads.atoms == ("approved", "tool_call:send_money")
    assert reads.comparisons == ('data.balance <= prev(data.balance)', 'data.status == "ok"')
    assert [(p.path, p.previous, p.compared_with) for p in reads.paths] == [
        ("data.balance", False, "path"), ("data.balance", True, "path"),
        ("data.status", False, "string")]


@pytest.mark.parametrize("name, candidates, expected", [
    ("tool_call:send_mony", ["tool_call:send_money", "tool_call:get_balance"],
     "tool_call:send_money"),
    ("agent_send_money", ["tool_call:send_money", "approved"], "tool_call:send_money"),
    ("output.tol", ["output.tool", "output.args", "input"], "output.tool"),
    ("appproved", ["approved"], "approved"),
    ("refund", ["tool_call:send_money", "approved"], None),
])
def test_the_nearest_vocabulary_entry(name, candidates, expected):
    assert nearest(name, candidates) == expected


def warnings_of(text: str) -> dict:
    return {(w.code, w.subject): w
            for w in vocabulary_warnings(rule_reads(parse(text)), VOCABULARY)}


def test_each_warning_with_its_suggestion():
    found = warnings_of('G(tool_call:send_mony -> output.tol == "x" & '
                        'output.args.amount > "10000") & F is_large')

    assert found[("unknown_atom", "tool_call:send_mony")].suggestion == "tool_call:send_money"
    assert found[("unknown_path", "output.tol")].suggestion == "output.tool"
    mismatch = found[("type_mismatch", 'output.args.amount > "10000"')]
    assert mismatch.suggestion == "output.args.amount > 10000"
    assert len(found) == 3  # is_large has a labeler


def test_comparisons_of_matching_kinds_and_with_null_are_not_mismatches():
    assert warnings_of('data.status == "ok" & output.args.amount >= 5 & data.note == null '
                       '& data.ok == true & env.location == "hall"') == {}
    mismatch = warnings_of("data.ok == 1")[("type_mismatch", "data.ok == 1")]
    assert "true/false values" in mismatch.message and mismatch.suggestion is None


def test_two_paths_of_different_kinds_never_compare():
    found = warnings_of("output.args.amount == data.status")
    assert ("type_mismatch", "output.args.amount == data.status") in found


# ---------------------------------------------------------------------------------------------
# Invisible characters in formulas

INVISIBLE = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
             "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060",
             "\ufeff", "\ud800", "\udfff"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(INVISIBLE), st.integers(min_value=0, max_value=10), st.booleans())
def test_an_invisible_character_in_an_atom_is_refused_where_it_is(char, at, quoted):
    name = "tool_call:send"[:at] + char + "tool_call:send"[at:]
    text = f'G "{name}"' if quoted else f"G {name}"
    column = 3 + (1 if quoted else 0) + at  # "G " then the atom (after its quote)

    with pytest.raises(FormulaSyntaxError) as caught:
        parse(text)

    assert (caught.value.line, caught.value.column) == (1, column)
    assert f"at column {column}" in caught.value.message
    assert "retype it" in caught.value.message
    # It touches the atom's letters, or sits inside its quotes: the message says so.
    if quoted or 0 < at < len("tool_call:send"):
        assert caught.value.message.startswith("the atom contains")


def test_the_error_names_the_character_and_the_line():
    with pytest.raises(FormulaSyntaxError) as caught:
        parse('G(p ->\n  "pay\u202emoney")')
    assert (caught.value.line, caught.value.column) == (2, 7)
    assert "invisible right-to-left override (U+202E)" in caught.value.message


@pytest.mark.parametrize("text", ['G "send\\u202emoney"', 'data.s == "a\\u200bb"',
                                  'G "x\\ud800"'])
def test_escapes_of_invisible_characters_are_refused_too(text):
    # Printed back, the formula would hold the character itself.
    with pytest.raises(FormulaSyntaxError, match="written as an escape"):
        parse(text)


def test_visible_unicode_in_quoted_atoms_is_still_fine():
    formula = parse('G "paiement_reçu" & data.city == "Zürich"')
    assert parse(formula.text) is formula and "reçu" in formula.text


def test_hostile_keys_are_data_never_source():
    """Keys of an event never become code of the compiled shapes: quotes, newlines and Python
    in a key are counted like any other key (twice, so the compiled shape runs too)."""
    from studio.logic.vocabulary import Collector

    hostile = "x'] or __import__('os').system('false') #\n\"\\"
    collector = Collector()
    for _ in range(3):
        collector.add(None, {"tool": "t", "args": {hostile: 1, "amount": 5}}, {}, None)
    counts = collector.counts()
    assert counts[("path", "output.args.amount", "number", "tool_call:t")][0] == 3
    assert counts[("builtin", "tool_call:t", "", "tool_call:t")][0] == 3
