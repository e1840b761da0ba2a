"""One step of the past operators (paper 001, section 5): each past subformula's value now
follows from its operands now and one remembered value from the step before.

The memory after a step holds, per past node: for Y and Z the operand's value at that step (what
the node will say one step later), for O, H and S the node's own value.  The monitor
(``studio.monitor.automaton.PastTracker``) and the rule review's search
(``studio.logic.review``) both advance their memory with ``past_step``.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from . import formula as fm
from .formula import Formula


def initial_memory(nodes: Sequence[Formula]) -> tuple[bool, ...]:
    """The memory before the first step: Z ("weak yesterday") and H hold there, the rest not."""
    return tuple(node.op in ("Z", "H") for node in nodes)


def past_step(nodes: Sequence[Formula], before: Sequence[bool],
              labels: AbstractSet) -> tuple[tuple[bool, ...], dict[Formula, bool]]:
    """The memory after this step and each past node's value at it.  ``nodes`` lists children
    before parents (a node's past operands come before it); ``labels`` holds the atoms' names
    (and the data atoms) true at this step."""
    now: dict[Formula, bool] = {}
    memory = []
    for node, remembered in zip(nodes, before):
        op = node.op
        if op in ("Y", "Z"):
            now[node] = remembered
            memory.append(present(node.args[0], labels, now))
            continue
        if op == "O":
            value = present(node.args[0], labels, now) or remembered
        elif op == "H":
            value = present(node.args[0], labels, now) and remembered
        else:  # S
            value = (present(node.args[1], labels, now)
                     or (present(node.args[0], labels, now) and remembered))
        now[node] = value
        memory.append(value)
    return tuple(memory), now


def present(f: Formula, labels: AbstractSet, now: dict[Formula, bool]) -> bool:
    """Truth at the current step of a formula without future operators, its past nodes read
    from ``now``."""
    op = f.op
    if op == "true":
        return True
    if op == "false":
        return False
    if op == "atom":
        return f.name in labels
    if op == "cmp":
        return f in labels
    if op in fm.PAST_OPS:
        return now[f]
    if op == "not":
        return not present(f.args[0], labels, now)
    if op == "and":
        return all(present(a, labels, now) for a in f.args)
    if op == "or":
        return any(present(a, labels, now) for a in f.args)
    if op == "implies":
        return (not present(f.args[0], labels, now)) or present(f.args[1], labels, now)
    if op == "iff":
        return present(f.args[0], labels, now) == present(f.args[1], labels, now)
    raise ValueError(f"`{f.text}` is not a present-tense formula")  # pragma: no cover
