"""Reading events: their built-in atoms and their data atoms.

The built-in atoms of an event (``tool_call:NAME``, ``stop_reason:R``, ``role:R``) hold on it
whatever labelers a workspace declares (``builtin_atoms``).

A data atom compares values read from the event by a dotted path (``output.args.amount``,
``data.status``) or from the previous event (``prev(data.balance)``).  A path that is missing,
or a comparison between values of different kinds (a string against a number, a boolean against
a number), is simply false: a rule never crashes on an event it did not expect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .formula import Comparison


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


_split_cache: dict[str, tuple[str, ...]] = {}


def _parts(path: str) -> tuple[str, ...]:
    parts = _split_cache.get(path)
    if parts is None:
        if len(_split_cache) > 10_000:
            _split_cache.clear()
        parts = _split_cache[path] = tuple(path.split("."))
    return parts


def read_path(event: Any, path: str) -> Any:
    """The value at a dotted path, or ``MISSING``.  List elements are addressed by index."""
    value = event
    for part in _parts(path):
        if type(value) is dict or isinstance(value, Mapping):
            value = value.get(part, MISSING)
        elif isinstance(value, list) and part.isdigit():
            index = int(part)
            value = value[index] if index < len(value) else MISSING
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def put_path(event: dict, path: str, value: Any) -> None:
    """Set the value at a dotted path, making the objects on the way (``read_path``'s inverse
    for objects; a non-object on the way is replaced)."""
    parts = _parts(path)
    node = event
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = node[part] = {}
        node = nxt
    node[parts[-1]] = value


def _operand(operand: tuple, event: Any, previous: Any) -> Any:
    kind, value = operand
    if kind == "const":
        return value
    if kind == "path":
        return read_path(event, value)
    return MISSING if previous is None else read_path(previous, value)


_KINDS = {type(None): "null", bool: "bool", int: "number", float: "number", str: "string"}


def value_kind(value: Any) -> str:
    return _KINDS.get(type(value), "other")


def compare_values(op: str, left: Any, right: Any) -> bool:
    """An atomic comparison as data atoms read it (CPL guards too): false when a side is
    undefined; values of different kinds are unequal; order only between two numbers or two
    strings."""
    if left is MISSING or right is MISSING:
        return False
    same_kind = value_kind(left) == value_kind(right)
    if op == "==":
        return same_kind and left == right
    if op == "!=":
        return not (same_kind and left == right)
    if not same_kind or value_kind(left) not in ("number", "string"):
        return False
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    if op == ">=":
        return left >= right
    raise ValueError(f"unknown comparison {op!r}")


def compare(comparison: Comparison, event: Any, previous: Any = None) -> bool:
    """Truth of a data atom on ``event`` (``previous`` is the event before it, if any)."""
    return compare_values(comparison.op, _operand(comparison.left, event, previous),
                          _operand(comparison.right, event, previous))


def monitor_event(session, step, lifeline, input, output, data, labels) -> dict:
    """An event as rules read it.  Fields of the original log that importers file under
    ``data`` (TextWorld's ``env``, say) are also readable where the log had them, at the top, so
    a rule reads the same path in the studio as in ``manage.py audit`` on the raw file; the
    canonical fields win a clash."""
    event = dict(data) if isinstance(data, dict) else {}
    event.update(session=session, step=step, lifeline=lifeline, input=input, output=output,
                 data=data if data is not None else {}, labels=labels)
    return event


# ---------------------------------------------------------------------------------------------
# Built-in atoms

BUILTIN_PREFIXES = ("tool_call:", "stop_reason:", "role:")


def _tool_names(output: Mapping) -> list[str]:
    names = []
    tool = output.get("tool") or output.get("name")
    if isinstance(tool, str) and tool:
        names.append(tool)
    calls = output.get("tool_calls")
    if isinstance(calls, list):  # OpenAI style: [{"function": {"name": ...}}]
        for call in calls:
            if isinstance(call, Mapping):
                fn = call.get("function")
                name = fn.get("name") if isinstance(fn, Mapping) else call.get("name")
                if isinstance(name, str) and name:
                    names.append(name)
    return names


_NOTHING: Mapping = {}


def builtin_atoms(event: Mapping) -> list[str]:
    """``tool_call:NAME`` for each tool the output calls, ``stop_reason:R`` and ``role:R`` from
    the event or its data."""
    # Every audited event passes here: exact dicts (what decoders give) skip the ABC checks.
    output = event.get("output")
    if not (type(output) is dict or isinstance(output, Mapping)):
        output = _NOTHING
    data = event.get("data")
    if not (type(data) is dict or isinstance(data, Mapping)):
        data = _NOTHING
    atoms = [f"tool_call:{name}" for name in _tool_names(output)] if output else []
    for key in ("stop_reason", "role"):
        value = event.get(key) or data.get(key) or output.get(key)
        if value and isinstance(value, str):
            atoms.append(f"{key}:{value}")
    return atoms
