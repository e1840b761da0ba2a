"""Rule test cases: example sessions that pin a rule's meaning.  Pure Python, no Django.

A case is a short session written as a table of steps, each step ``{"atoms": [...], "data":
{path: value}}``: the atoms true at the step, and the values of the data paths the rule's
comparisons read (``{"data.amount": 1200}``; ``prev(path)`` reads the step before).  It expects
the rule to be *violated* (optionally with its first violation detected at a given step) or
*complied with*.

``check_steps`` refuses steps that do not parse or that name atoms or paths the rule does not
read, naming the step and the field (``steps[2].atoms``); ``step_event`` is the event a step
stands for.  Running a case with a rule's monitor is ``studio.monitor.cases.run_case``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .events import MISSING, compare_values, put_path, read_path
from .formula import Formula
from .reads import RuleReads, rule_reads

VIOLATE, COMPLY = "violate", "comply"
EXPECTATIONS = (VIOLATE, COMPLY)
MAX_STEPS = 200
MAX_ATOMS = 50
MAX_TEXT = 2000  # a step's JSON, as text


class CaseError(ValueError):
    """A case the rule cannot be checked against: ``field`` names where (``steps[2].atoms``)."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Reads:
    """What the rule reads, as a case may name it: atom names and data paths."""

    atoms: frozenset[str]
    paths: frozenset[str]

    @classmethod
    def of(cls, formulas: Iterable[Formula]) -> Reads:
        atoms: set[str] = set()
        paths: set[str] = set()
        for formula in formulas:
            reads: RuleReads = rule_reads(formula)
            atoms.update(reads.atoms)
            paths.update(p.path for p in reads.paths)
        return cls(frozenset(atoms), frozenset(paths))


def check_steps(steps: Any, reads: Reads) -> list[dict]:
    """The steps in their stored form (atoms sorted, each once), or ``CaseError``."""
    if not isinstance(steps, list):
        raise CaseError("steps must be a list of steps, each {\"atoms\": [...], \"data\": {...}}",
                        "steps")
    if not steps:
        raise CaseError("a case needs at least one step", "steps")
    if len(steps) > MAX_STEPS:
        raise CaseError(f"a case has at most {MAX_STEPS} steps, not {len(steps)}", "steps")
    return [_check_step(step, i, reads) for i, step in enumerate(steps)]


def _check_step(step: Any, i: int, reads: Reads) -> dict:
    where = f"steps[{i}]"
    if isinstance(step, list):  # a bare list of atoms
        step = {"atoms": step}
    if not isinstance(step, Mapping):
        raise CaseError(f"step {i} must be an object {{\"atoms\": [...], \"data\": {{...}}}}",
                        where)
    unknown = sorted(set(step) - {"atoms", "data"})
    if unknown:
        raise CaseError(f"step {i} has an unknown field {unknown[0]!r} (a step has atoms and "
                        "data)", f"{where}.{unknown[0]}")
    atoms = step.get("atoms", [])
    if not isinstance(atoms, list) or not all(isinstance(a, str) for a in atoms):
        raise CaseError(f"step {i}: atoms must be a list of atom names", f"{where}.atoms")
    if len(atoms) > MAX_ATOMS:
        raise CaseError(f"step {i} names {len(atoms)} atoms; at most {MAX_ATOMS}",
                        f"{where}.atoms")
    for atom in atoms:
        if atom not in reads.atoms:
            raise CaseError(f"step {i}: the rule does not read the atom {atom!r}"
                            + _known(reads.atoms, "atoms"), f"{where}.atoms")
    data = step.get("data", {}) or {}
    if not isinstance(data, Mapping):
        raise CaseError(f"step {i}: data must be an object {{path: value}}", f"{where}.data")
    for path, value in data.items():
        if path not in reads.paths:
            raise CaseError(f"step {i}: the rule does not read the path {path!r}"
                            + _known(reads.paths, "paths"), f"{where}.data.{path}")
        if not _plain(value):
            raise CaseError(f"step {i}: the value of {path!r} must be a JSON number, string, "
                            "boolean or null (or a list or object of them)",
                            f"{where}.data.{path}")
    out = {"atoms": sorted(set(atoms)), "data": dict(data)}
    if len(json.dumps(out)) > MAX_TEXT:
        raise CaseError(f"step {i} is longer than {MAX_TEXT} characters", where)
    return out


def _known(names: frozenset[str], what: str) -> str:
    if not names:
        return f" (it reads no {what})"
    return f" (it reads the {what} {', '.join(sorted(names))})"


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


# ---------------------------------------------------------------------------------------------
# Writing steps as text: one line per step, atoms and path=value pairs separated by commas or
# spaces ("take, data.amount=1200"); "-" or an empty line is a step where nothing holds.

def parse_table(text: str) -> list[dict]:
    """Steps from the page's text table; ``CaseError`` naming the line's step."""
    steps = []
    for i, line in enumerate((text or "").strip().splitlines()):
        line = line.strip()
        atoms: list[str] = []
        data: dict[str, Any] = {}
        for token in line.replace(",", " ").split():
            if token == "-":
                continue
            if "=" in token and not token.startswith(("=", "!")):
                path, _, raw = token.partition("=")
                try:
                    data[path] = json.loads(raw)
                except ValueError:
                    data[path] = raw
            else:
                atoms.append(token)
        steps.append({"atoms": atoms, "data": data})
    return steps


def table_text(steps: Sequence[Mapping]) -> str:
    """The inverse of ``parse_table``, for editing a stored case."""
    lines = []
    for step in steps:
        parts = list(step.get("atoms", []))
        parts += [f"{path}={json.dumps(value)}" for path, value in (step.get("data") or {}).items()]
        lines.append(", ".join(parts) or "-")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Running a case

def step_event(step: Mapping, i: int) -> dict:
    """The event a step stands for, as the monitors read it (``events.monitor_event``'s shape):
    its atoms as the event's labels, each data path's value at its place."""
    event: dict[str, Any] = {"session": "case", "step": i, "lifeline": "", "input": None,
                             "output": None, "data": {}, "labels": list(step.get("atoms", []))}
    for path, value in (step.get("data") or {}).items():
        put_path(event, path, value)
    return event


# ---------------------------------------------------------------------------------------------
# Cases from elsewhere: a stored session's steps, a review aid's shortest trace

def steps_from_events(events: Iterable[Mapping], label, reads: Reads) -> list[dict]:
    """The steps of labelled events (``label(event, previous)`` gives the event with its
    ``labels``): the atoms the rule reads that hold, and the values of the paths it reads."""
    steps = []
    previous = None
    for event in events:
        labelled = label(event, previous)
        previous = event
        atoms = sorted(a for a in (labelled.get("labels") or ()) if a in reads.atoms)
        data = {}
        for path in sorted(reads.paths):
            value = read_path(event, path)
            if value is not MISSING and _plain(value):
                data[path] = value
        steps.append({"atoms": atoms, "data": data})
    return steps


def steps_from_trace(trace: Sequence[Iterable[str]], formula: Formula) -> list[dict]:
    """Steps from a review aid's trace (letters of atom names and comparison texts): each
    comparison the letter holds is made true, every other comparison of the formula false, by
    choosing a value for its path.  ``CaseError`` when no value is found (``prev`` and
    path-to-path comparisons, contradictory letters): write such a case by hand."""
    comparisons = {g.text: g.payload for g in formula.subformulas() if g.op == "cmp"}
    steps = []
    for i, letter in enumerate(trace):
        letter = set(letter)
        atoms = sorted(a for a in letter if a not in comparisons)
        wanted: dict[str, list[tuple[str, Any, bool]]] = {}
        for text, c in comparisons.items():
            if c.left[0] != "path" or c.right[0] != "const":
                raise CaseError(f"step {i}: the trace reads {text!r}, which compares with "
                                "another path or the previous step; write this case by hand",
                                f"steps[{i}].data")
            wanted.setdefault(c.left[1], []).append((c.op, c.right[1], text in letter))
        data = {}
        for path, needs in wanted.items():
            value = _value_for(needs)
            if value is MISSING:
                raise CaseError(f"step {i}: no value of {path!r} makes the trace's comparisons "
                                "hold as it says; write this case by hand",
                                f"steps[{i}].data.{path}")
            if value is not _ABSENT:
                data[path] = value
        steps.append({"atoms": atoms, "data": data})
    return steps


_ABSENT = object()  # leave the path out: every comparison on it is false


def _value_for(needs: list[tuple[str, Any, bool]]) -> Any:
    if not any(holds for _, _, holds in needs):
        return _ABSENT
    candidates: list[Any] = []
    for _, const, _ in needs:
        candidates.append(const)
        if isinstance(const, (int, float)) and not isinstance(const, bool):
            candidates += [const + 1, const - 1]
        elif isinstance(const, str):
            candidates += [const + "~", const[:-1] if const else "a"]
        elif isinstance(const, bool):
            candidates.append(not const)
    candidates += [None, ""]
    for value in candidates:
        if all(compare_values(op, value, const) == holds for op, const, holds in needs):
            return value
    return MISSING
