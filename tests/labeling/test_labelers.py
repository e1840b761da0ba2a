"""studio/labeling without a database: built-in atoms, field and regex labelers, and refusals
that name the setting at fault."""

from collections.abc import Mapping
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.labeling import LabelerConfigError, Labeling, make_labeler
from studio.logic.events import builtin_atoms


def test_builtin_atoms_of_tool_calls_stop_reasons_and_roles():
    event = {"output": {"tool_calls": [{"function": {"name": "send_money"}}, {"name": "log"}]},
             "data": {"role": "assistant"}, "stop_reason": "tool_use"}
    assert sorted(builtin_atoms(event)) == ["role:assistant", "stop_reason:tool_use",
                                            "tool_call:log", "tool_call:send_money"]
    assert builtin_atoms({"output": "plain text"}) == []


def _spec_builtin_atoms(event) -> set[str]:
    """The built-in atoms as documented, written plainly (the oracle)."""
    def mapping(value):
        return dict(value) if isinstance(value, Mapping) else {}

    output, data = mapping(event.get("output")), mapping(event.get("data"))
    atoms = set()
    for name in (output.get("tool") or output.get("name"),):
        if isinstance(name, str) and name:
            atoms.add(f"tool_call:{name}")
    calls = output.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping):
            function = call.get("function")
            name = (function.get("name") if isinstance(function, Mapping)
                    else call.get("name"))
            if isinstance(name, str) and name:
                atoms.add(f"tool_call:{name}")
    for key in ("stop_reason", "role"):
        value = event.get(key) or data.get(key) or output.get(key)
        if isinstance(value, str) and value:
            atoms.add(f"{key}:{value}")
    return atoms


_odd = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "x", "pay"]))
_call = st.one_of(_odd, st.fixed_dictionaries({}, optional={
    "name": _odd, "function": st.one_of(_odd, st.fixed_dictionaries({}, optional={"name": _odd}))}))
_fields = st.fixed_dictionaries({}, optional={
    "tool": _odd, "name": _odd, "role": _odd, "stop_reason": _odd,
    "tool_calls": st.one_of(_odd, st.lists(_call, max_size=3))})


@given(st.fixed_dictionaries({}, optional={
    "output": st.one_of(_odd, _fields, _fields.map(MappingProxyType)),
    "data": st.one_of(_odd, _fields, _fields.map(MappingProxyType)),
    "role": _odd, "stop_reason": _odd}))
def test_builtin_atoms_follow_their_description_for_any_event(event):
    # Mappings that are not dicts (a read-only proxy) read like dicts.
    assert set(builtin_atoms(event)) == _spec_builtin_atoms(event)


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
