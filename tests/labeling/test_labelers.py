"""studio/labeling without a database: built-in atoms, field and regex labelers, and refusals
that name the setting at fault."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.labeling import LabelerConfigError, Labeling, builtin_atoms, make_labeler


def test_builtin_atoms_of_tool_calls_stop_reasons_and_roles():
    event = {"output": {"tool_calls": [{"function": {"name": "send_money"}}, {"name": "log"}]},
             "data": {"role": "assistant"}, "stop_reason": "tool_use"}
    assert sorted(builtin_atoms(event)) == ["role:assistant", "stop_reason:tool_use",
                                            "tool_call:log", "tool_call:send_money"]
    assert builtin_atoms({"output": "plain text"}) == []


def test_a_field_labeler_compares_the_value_at_its_path():
    big = make_labeler("field", "big_payment", {"path": "output.args.amount", "op": ">",
                                                "value": 10000})
    assert big({"output": {"args": {"amount": 12000}}}, None)
    assert not big({"output": {"args": {"amount": 900}}}, None)
    assert not big({"output": {"args": {}}}, None)  # missing: false, never an error
    first = make_labeler("field", "first_item", {"path": "data.items.0", "value": "knife"})
    assert first({"data": {"items": ["knife", "pan"]}}, None)


def test_a_regex_labeler_searches_a_text_field_with_its_flags():
    drop = make_labeler("regex", "drop", {"path": "output", "pattern": r"^drop\b", "flags": "i"})
    assert drop({"output": "Drop knife"}, None)
    assert not drop({"output": "eavesdrop"}, None)
    assert not drop({"output": {"tool": "drop"}}, None)  # not text


def test_the_labeling_combines_given_builtin_and_declared_atoms():
    labeling = Labeling([make_labeler("regex", "pay", {"path": "input", "pattern": "pay"})])
    event = {"labels": ["approved", 7], "input": "please pay", "output": {"tool": "transfer"}}
    assert labeling(event) == ["approved", "pay", "tool_call:transfer"]
    assert labeling.produces("pay") and labeling.produces("tool_call:anything")
    assert not labeling.produces("shipped")


@pytest.mark.parametrize("kind, config, field", [
    ("regex", {"path": "output", "pattern": "(unclosed"}, "pattern"),
    ("regex", {"path": "output", "pattern": "x", "flags": 5}, "flags"),
    ("regex", {"path": "output", "pattern": "x", "flags": "g"}, "flags"),
    ("regex", {"path": "$.output", "pattern": "x"}, "path"),
    ("regex", {"path": "output[0]", "pattern": "x"}, "path"),
    ("field", {"path": "output..amount", "value": 1}, "path"),
    ("field", {"path": "output.amount.", "value": 1}, "path"),
    ("field", {"path": "out put", "value": 1}, "path"),
    ("field", {"path": "amount", "op": "~", "value": 1}, "op"),
    ("field", {"path": "amount", "value": [1]}, "value"),
    ("field", {"path": "amount"}, "value"),
    ("field", {"path": "amount", "value": 1, "typo": 2}, "config"),
    ("embedding", {}, "kind"),  # llm is a kind now (tests/labeling/test_llm.py)
])
def test_bad_declarations_are_refused_naming_the_setting(kind, config, field):
    with pytest.raises(LabelerConfigError) as refused:
        make_labeler(kind, "atom", config)
    assert refused.value.field == field


@given(st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=4),
       st.integers())
def test_any_dotted_path_reads_the_value_nested_there(keys, number):
    event = number
    for key in reversed(keys):
        event = {key: event}
    path = ".".join(keys)
    assert make_labeler("field", "hit", {"path": path, "value": number})(event, None)
    assert not make_labeler("field", "hit", {"path": path, "value": number + 1})(event, None)
