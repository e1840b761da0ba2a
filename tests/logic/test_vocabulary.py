"""The pure vocabulary: collecting an event's atoms and paths, what a rule reads, suggestions and
warnings; and the parser's refusal of invisible characters.  No database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.vocabulary import (
    MAX_DEPTH,
    BatchCollector,
    Vocabulary,
    collect_event,
    event_entries,
    nearest,
    rule_reads,
    vocabulary_warnings,
)

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


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["tool", "name", "role", "stop_reason", "tool_calls", "function",
                         "args", "a", "B"]), inner, max_size=4),
    max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(json_values, json_values, json_values,
                          st.none() | st.lists(st.text(max_size=3) | st.integers(),
                                               max_size=3)), max_size=8))
def test_a_batch_collects_exactly_the_atoms_of_its_events_and_only_paths_they_have(events):
    exact: set = set()
    batch = BatchCollector()
    for input_, output, data, labels in events:
        collect_event(input_, output, data, labels, exact)
        batch.add(input_, output, data, labels)
    assert {e for e in batch.entries if e[0] != "path"} == {e for e in exact if e[0] != "path"}
    assert {e for e in batch.entries if e[0] == "path"} <= exact


def test_a_batch_walks_every_new_shape():
    batch = BatchCollector()
    batch.add("x", {"tool": "a", "args": {"n": 1}}, {}, None)
    batch.add("x", {"tool": "b", "args": {"n": 1}}, {"extra": "y"}, None)
    assert ("path", "data.extra", "string") in batch.entries
    assert ("builtin", "tool_call:b", "") in batch.entries


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
