"""Declarative labelers, and the labeling that combines them with the built-in atoms."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from studio.logic.events import BUILTIN_PREFIXES, MISSING, builtin_atoms, compare, read_path
from studio.logic.formula import COMPARISONS, Comparison

# Regular expressions only read this much of a field: bounds the cost of a pathological pattern.
REGEX_TEXT_LIMIT = 100_000


# A JSON path as events are read: dot-separated keys (list elements by index), no brackets,
# wildcards or spaces - anything else would be accepted and then silently never match.
_PATH = re.compile(r"[\w:\-]+(?:\.[\w:\-]+)*")


class LabelerConfigError(ValueError):
    """A labeler declaration that cannot work; ``field`` names the offending setting."""

    def __init__(self, message: str, field: str):
        super().__init__(f"{field}: {message}")
        self.message = message
        self.field = field


def checked_path(path: Any, example: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise LabelerConfigError(f"a JSON path such as {example} is required", "path")
    path = path.strip()
    if not _PATH.fullmatch(path):
        raise LabelerConfigError(
            f"{path!r} is not a JSON path: write keys separated by dots, list elements by "
            f"number, as in {example}", "path")
    return path


class FieldLabeler:
    """``atom`` holds when ``path op value`` holds on the event (the data-atom reading)."""

    def __init__(self, atom: str, path: str, op: str, value: Any):
        path = checked_path(path, "output.args.amount")
        if op not in COMPARISONS:
            raise LabelerConfigError(f"must be one of {' '.join(COMPARISONS)}", "op")
        if isinstance(value, (dict, list)):
            raise LabelerConfigError("must be a string, number, boolean or null", "value")
        self.atom = atom
        self.comparison = Comparison(("path", path), op, ("const", value))

    def __call__(self, event: Mapping, previous: Mapping | None) -> bool:
        return compare(self.comparison, event, previous)


class RegexLabeler:
    """``atom`` holds when the regular expression matches somewhere in a text field."""

    def __init__(self, atom: str, path: str, pattern: str, flags: str = ""):
        path = checked_path(path, "output or input")
        if not isinstance(pattern, str) or not pattern:
            raise LabelerConfigError("a regular expression is required", "pattern")
        if flags is not None and not isinstance(flags, str):
            raise LabelerConfigError("must be text made of the letters i, m and s", "flags")
        unknown = set(flags or "") - set("ims")
        if unknown:
            raise LabelerConfigError(f"unknown flags {''.join(sorted(unknown))}; use i, m, s",
                                     "flags")
        bits = 0
        for letter, bit in (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL)):
            if letter in (flags or ""):
                bits |= bit
        try:
            self.regex = re.compile(pattern, bits)
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            raise LabelerConfigError(f"not a valid regular expression ({exc.msg}{where})",
                                     "pattern") from None
        self.atom = atom
        self.path = path

    def __call__(self, event: Mapping, previous: Mapping | None) -> bool:
        value = read_path(event, self.path)
        if value is MISSING or not isinstance(value, str):
            return False
        return self.regex.search(value[:REGEX_TEXT_LIMIT]) is not None


class Labeling:
    """The labeling function of a workspace: event (and previous event) to atom names.

    ``corrections`` maps ``(session, step)`` - the event's ``session`` and ``step`` - to
    ``{atom: true or false}`` that a person set for that event: they override the event's own
    labels, the built-in atoms and every labeler."""

    def __init__(self, labelers: Iterable = (), builtins: bool = True,
                 corrections: Mapping[tuple, Mapping[str, bool]] | None = None):
        self.labelers = list(labelers)
        self.builtins = builtins
        self.corrections = corrections or {}

    @property
    def declared_atoms(self) -> set[str]:
        return {labeler.atom for labeler in self.labelers}

    @property
    def batched_labelers(self) -> list:
        """Labelers that answer many steps per request (LLM labelers): an audit hands them its
        steps in groups (``answers(events)``) before labelling the steps one by one."""
        return [labeler for labeler in self.labelers if getattr(labeler, "batched", False)]

    def corrected(self, corrections: Mapping[tuple, Mapping[str, bool]]) -> Labeling:
        """The same labeling with ``corrections`` (sharing the labelers, and what they know)."""
        if not corrections and not self.corrections:
            return self
        return Labeling(self.labelers, self.builtins, corrections)

    def produces(self, atom: str) -> bool:
        """Whether some labeler produces ``atom`` (built-in atoms always may)."""
        return atom in self.declared_atoms or (self.builtins and atom.startswith(BUILTIN_PREFIXES))

    def __call__(self, event: Mapping, previous: Mapping | None = None) -> list[str]:
        given = event.get("labels")
        atoms = []
        if isinstance(given, list):
            for atom in given:
                if isinstance(atom, str):
                    atoms.append(atom)
        if self.builtins:
            atoms += builtin_atoms(event)
        for labeler in self.labelers:
            if labeler(event, previous):
                atoms.append(labeler.atom)
        if self.corrections:
            fixes = self.corrections.get((event.get("session"), event.get("step")))
            if fixes:
                atoms = [a for a in atoms if a not in fixes]
                atoms.extend(atom for atom, holds in fixes.items() if holds)
        return sorted(set(atoms))

    def label(self, event: Mapping, previous: Mapping | None = None) -> dict:
        """The event with its ``labels`` replaced by the labeling's output."""
        return {**event, "labels": self(event, previous)}
