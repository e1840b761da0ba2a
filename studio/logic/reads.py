"""What a rule reads: its atoms (also inside past operators), its comparisons, and each data
path with the kind of value it is compared with (``rule_reads``); the event that puts its
obligation into play (``trigger_of``) and the condition under which it applies at all
(``condition_of``), decided on a step's labels by ``holds_on``.  Pure Python."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Collection
from typing import Any

from . import formula as fm
from .formula import Formula

_CONST_TYPES = {"null": "null", "bool": "boolean", "number": "number", "string": "string"}


@dataclass(frozen=True)
class PathRead:
    """One data path a comparison reads: ``previous`` for ``prev(path)``; ``compared_with`` is
    the JSON type of the constant on the other side (``number``, ``string``, ``boolean``,
    ``null``) or ``path`` when the other side reads the event too; ``comparison`` its text."""

    path: str
    previous: bool
    op: str
    compared_with: str
    comparison: str
    other_path: str | None = None


@dataclass(frozen=True)
class RuleReads:
    atoms: tuple[str, ...]
    comparisons: tuple[str, ...]
    paths: tuple[PathRead, ...]

    @property
    def path_names(self) -> list[str]:
        return sorted({p.path for p in self.paths})


def rule_reads(formula: Formula) -> RuleReads:
    """Everything ``formula`` reads, past operators included: atom names, comparison texts and
    the data paths of the comparisons (sorted, each once per comparison side)."""
    atoms: set[str] = set()
    comparisons: dict[str, Formula] = {}
    for g in formula.subformulas():
        if g.op == "atom":
            atoms.add(g.name)
        elif g.op == "cmp":
            comparisons[g.text] = g
    paths = []
    for text in sorted(comparisons):
        c = comparisons[text].payload
        for side, other in ((c.left, c.right), (c.right, c.left)):
            if side[0] == "const":
                continue
            if other[0] == "const":
                compared = _CONST_TYPES.get(_kind_of(other[1]), "string")
                paths.append(PathRead(side[1], side[0] == "prev", c.op, compared, text))
            else:
                paths.append(PathRead(side[1], side[0] == "prev", c.op, "path", text, other[1]))
    return RuleReads(tuple(sorted(atoms)), tuple(sorted(comparisons)), tuple(paths))


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


# ---------------------------------------------------------------------------------------------
# When a rule applies

def trigger_of(f: Formula) -> Formula | None:
    """The event that puts ``f``'s obligation into play, or None when ``f`` has no single one
    (not of the form ``G ...``, or ``G`` of something that is not a condition or a ban): ``p``
    in ``G (p -> ...)`` and ``G (!p | ...)``, the plain events of ``G !(p & q & !O r)`` (``p &
    q``: the exception ``!O r`` is not what fires it)."""
    if f.op != "G":
        return None
    body = f.args[0]
    if body.op == "implies":
        return _present(body.args[0]) or body.args[0]
    if body.op == "not":
        return _present(body.args[0])
    if body.op == "or":
        # G (!p | q): p brings q into play
        banned = [a.args[0] for a in body.args if a.op == "not"]
        if len(banned) == 1:
            return _present(banned[0])
    return None


def _present(f: Formula) -> Formula | None:
    """The parts of a conjunction that are plain events (atoms, comparisons and their
    negation-free combinations at one step), or None when it has none."""
    parts = f.args if f.op == "and" else (f,)
    plain = [p for p in parts if _plain(p)]
    return fm.And(*plain) if plain else None


def _plain(f: Formula) -> bool:
    if f.op in ("atom", "cmp"):
        return True
    return f.op in ("and", "or") and all(_plain(a) for a in f.args)


def condition_of(f: Formula) -> Formula | None:
    """The condition that makes ``f`` apply at a step (``trigger_of``), or None when ``f``
    applies throughout: a ban (``G !p``, ``p`` a plain event: any step may break it) or a rule
    with no single trigger.  A ban with an exception, ``G !(p & !O r)`` ("no p without an r
    before it"), applies when ``p`` happens.  A rule whose condition held at no step of a
    session complied there only because it never applied ("not applicable: never
    triggered")."""
    if f.op == "G" and f.args[0].op == "not" and _plain(f.args[0].args[0]):
        return None
    return trigger_of(f)


def holds_on(condition: Formula, labels: Collection) -> bool | None:
    """Whether ``condition`` (atoms and comparisons under and/or/not) holds on a step whose
    labels are ``labels``: the atom names that held and the comparisons that held (formula
    nodes, as the monitors label a step, or their texts).  None for anything else."""
    op = condition.op
    if op == "atom":
        return condition.name in labels
    if op == "cmp":
        return condition in labels or condition.text in labels
    if op == "not":
        inner = holds_on(condition.args[0], labels)
        return None if inner is None else not inner
    if op in ("and", "or"):
        found = [holds_on(a, labels) for a in condition.args]
        if None in found:
            return None
        return all(found) if op == "and" else any(found)
    if op in ("true", "false"):
        return op == "true"
    return None
