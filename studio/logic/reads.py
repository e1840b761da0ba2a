"""What a rule reads: its atoms (also inside past operators), its comparisons, and each data
path with the kind of value it is compared with (``rule_reads``).  Pure Python."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
