"""A workspace's vocabulary, what a rule reads, and the warnings between the two.  No Django.

The vocabulary is what a workspace's logs and labelers can produce: the atoms its labelers
declare, the built-in atoms seen in its events (``tool_call:NAME``, ``stop_reason:R``,
``role:R``), the atoms events arrived labelled with, and the data paths seen in its events
(``output.args.amount``, ``data.status``) with the JSON types found there.

* ``collect_event`` adds one event's entries to a set of ``(kind, name, json_type)`` - what an
  upload batch or a live delivery collects before one bulk write;
* ``rule_reads`` says what a formula reads: its atoms (also inside past operators), its
  comparisons, and each data path with the kind of value it is compared with;
* ``vocabulary_warnings`` checks the one against the other: ``unknown_atom``, ``unknown_path``
  and ``type_mismatch``, each with the nearest vocabulary entry as a suggestion.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.labeling.labelers import BUILTIN_PREFIXES, builtin_atoms

from .formula import Formula, quote_string, render_operand

# Kinds of vocabulary entries.
BUILTIN, LABEL, PATH = "builtin", "label", "path"
# The roots of the event under which data paths are collected.
ROOTS = ("input", "output", "data")
# Bounds on what one workspace keeps: paths in all, and how deep a path goes below its root.
MAX_PATHS = 5_000
MAX_DEPTH = 6
# List elements are read by index; the first few are walked and filed under index 0, so a
# log of long lists costs no more than one of short ones.
LIST_ITEMS_WALKED = 4
# Only keys a formula can spell are collected (atoms and paths are lower-case; see grammar.lark).
_WRITABLE_KEY = re.compile(r"[a-z0-9_:\-]+")
# Fields every event has, whatever its log held (``studio.logic.events.monitor_event``).
CANONICAL_FIELDS = {"session": frozenset({"number"}), "step": frozenset({"number"}),
                    "lifeline": frozenset({"string"}), "labels": frozenset({"array", "null"})}

_JSON_TYPES = {type(None): "null", bool: "boolean", int: "number", float: "number",
               str: "string", dict: "object", list: "array", tuple: "array"}
# value_kind (studio.logic.events) of a comparison's constant -> its JSON type
_CONST_TYPES = {"null": "null", "bool": "boolean", "number": "number", "string": "string"}


def json_type(value: Any) -> str:
    """The JSON type of a decoded value: number, string, boolean, object, array or null."""
    found = _JSON_TYPES.get(type(value))
    if found is not None:
        return found
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "array"


# ---------------------------------------------------------------------------------------------
# Collecting

def _add_labels(into: set, labels: Any) -> None:
    """The atoms an event arrived labelled with (a list of names; anything else holds none)."""
    if type(labels) is list:
        for atom in labels:
            if type(atom) is str:
                into.add((LABEL, atom, ""))


def collect_event(input: Any, output: Any, data: Any, labels: Any, into: set,
                  max_paths: int = MAX_PATHS) -> None:
    """Add what one event shows to ``into``: ``("builtin", atom, "")``, ``("label", atom, "")``
    and ``("path", path, json_type)``.  New paths stop being added once ``into`` holds
    ``max_paths`` entries (atoms are always added: there are few of them)."""
    if isinstance(output, Mapping) or isinstance(data, Mapping):
        for atom in builtin_atoms({"output": output, "data": data}):
            into.add((BUILTIN, atom, ""))
    _add_labels(into, labels)
    if len(into) < max_paths:
        _walk(input, "input", 0, into)
        _walk(output, "output", 0, into)
        _walk(data, "data", 0, into)


class BatchCollector:
    """``collect_event`` for the events of one upload batch, at a fraction of the cost: atoms
    are collected from every event, data paths from each event whose shape (the keys of its
    ``output`` and ``data``, the type of its ``input``) is new in the batch and from one event
    in ``SAMPLE_EVERY`` besides.  A path that only some events of a common shape hold can be
    missed by an upload; ``manage.py rebuild_vocabulary`` collects every one."""

    SAMPLE_EVERY = 64

    __slots__ = ("entries", "_shapes", "_count")

    def __init__(self):
        self.entries: set = set()
        self._shapes: dict = {}
        self._count = 0

    def add(self, input: Any, output: Any, data: Any, labels: Any) -> None:
        into = self.entries
        output_keys = tuple(output) if type(output) is dict else type(output)
        data_keys = tuple(data) if type(data) is dict else type(data)
        shape = (type(input), output_keys, data_keys)
        plain = self._shapes.get(shape)
        self._count += 1
        if plain is None:
            # A dict output whose only built-in atom can be its tool (no tool_calls, no role or
            # stop reason in it or in data): the atom is read directly, as builtin_atoms would.
            plain = self._shapes[shape] = (
                type(output) is dict and (data is None or type(data) is dict)
                and _SPECIAL_KEYS.isdisjoint(output)
                and (data is None or _SPECIAL_KEYS.isdisjoint(data)))
            self._walk(input, output, data)
        elif not self._count % self.SAMPLE_EVERY:
            self._walk(input, output, data)
        if plain:
            tool = output.get("tool") or output.get("name")
            if tool and isinstance(tool, str):
                into.add((BUILTIN, "tool_call:" + tool, ""))
        elif output_keys or data_keys:
            for atom in builtin_atoms({"output": output, "data": data}):
                into.add((BUILTIN, atom, ""))
        _add_labels(into, labels)

    def _walk(self, input: Any, output: Any, data: Any) -> None:
        into = self.entries
        if len(into) < MAX_PATHS:
            _walk(input, "input", 0, into)
            _walk(output, "output", 0, into)
            _walk(data, "data", 0, into)


# What builtin_atoms reads besides a tool's name.
_SPECIAL_KEYS = frozenset({"tool_calls", "stop_reason", "role"})


def _walk(value: Any, path: str, depth: int, into: set) -> None:
    kind = type(value)
    if kind is dict:
        into.add((PATH, path, "object"))
        if depth < MAX_DEPTH:
            for key, inner in value.items():
                if type(key) is str and _WRITABLE_KEY.fullmatch(key):
                    _walk(inner, f"{path}.{key}", depth + 1, into)
    elif kind is list:
        into.add((PATH, path, "array"))
        if depth < MAX_DEPTH and value:
            element = path + ".0"
            for inner in value[:LIST_ITEMS_WALKED]:
                _walk(inner, element, depth + 1, into)
    else:
        into.add((PATH, path, json_type(value)))


def event_entries(event: Mapping) -> set:
    """The entries of one canonical event (``input``, ``output``, ``data``, ``labels``)."""
    into: set = set()
    collect_event(event.get("input"), event.get("output"), event.get("data"),
                  event.get("labels"), into)
    return into


# ---------------------------------------------------------------------------------------------
# The vocabulary

def normalised_path(path: str) -> str:
    """List indexes read as index 0: the vocabulary files every element under it."""
    if not any(ch.isdigit() for ch in path):
        return path
    return ".".join("0" if part.isdigit() else part for part in path.split("."))


# How many distinct example values the vocabulary keeps of an entry on one kind of event, and
# how long an example text may be.
MAX_EXAMPLES = 5
EXAMPLE_TEXT_LIMIT = 80


def carrier_of(output: Any, data: Any, role: Any = None) -> str:
    """The kind of event a field or label was seen on: its tool call (``tool_call:NAME``, the
    first when it calls several), else its role (``role:R``), else "" (neither)."""
    atoms = builtin_atoms({"output": output, "data": data, "role": role})
    for atom in atoms:
        if atom.startswith("tool_call:"):
            return atom
    for atom in atoms:
        if atom.startswith("role:"):
            return atom
    return ""


def example_value(value: Any) -> Any:
    """What an entry keeps as an example: numbers, booleans and texts (cut to
    ``EXAMPLE_TEXT_LIMIT`` characters); None for objects, lists and null."""
    if value is None or isinstance(value, (dict, list, tuple)):
        return None
    if isinstance(value, str):
        return value[:EXAMPLE_TEXT_LIMIT]
    return value


@dataclass(frozen=True)
class Evidence:
    """What the logs showed of one atom or data path on one kind of event: ``carrier`` is that
    event kind (``tool_call:issue_refund``, ``role:user`` or ""), ``json_type`` the type held
    (paths only), ``events`` how many events showed it, ``examples`` up to ``MAX_EXAMPLES``
    distinct values (paths only)."""

    kind: str
    name: str
    json_type: str = ""
    carrier: str = ""
    events: int = 0
    examples: tuple = ()


@dataclass(frozen=True)
class Vocabulary:
    """What a workspace can produce: ``declared`` (its labelers' atoms), ``builtin`` (built-in
    atoms seen in its events), ``labelled`` (atoms its events arrived with) and ``paths`` (each
    data path seen, to the JSON types seen there); ``evidence`` says on which events each was
    seen, how often and with which values.  Plain data: no Django, no database."""

    declared: frozenset[str] = frozenset()
    builtin: frozenset[str] = frozenset()
    labelled: frozenset[str] = frozenset()
    paths: Mapping[str, frozenset[str]] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()

    @classmethod
    def from_entries(cls, entries: Iterable[tuple], declared: Iterable[str] = ()) -> Vocabulary:
        """From ``(kind, name, json_type)`` rows, or ``(kind, name, json_type, carrier, events,
        examples)`` rows that also say where each was seen."""
        builtin, labelled, paths, evidence = set(), set(), {}, []
        for row in entries:
            kind, name, type_ = row[0], row[1], row[2]
            if kind == BUILTIN:
                builtin.add(name)
            elif kind == LABEL:
                labelled.add(name)
            elif kind == PATH:
                paths.setdefault(name, set()).add(type_)
            if len(row) > 3:
                evidence.append(Evidence(kind, name, type_, row[3] or "", int(row[4] or 0),
                                         tuple(row[5] or ())))
        return cls(frozenset(declared), frozenset(builtin), frozenset(labelled),
                   {p: frozenset(t) for p, t in paths.items()}, tuple(evidence))

    def evidence_of(self, name: str) -> list[Evidence]:
        """Where ``name`` (an atom or a data path) was seen: one entry per kind of event and
        JSON type, the most frequent first."""
        index = self._index()
        return list(index.get(normalised_path(name), ()))

    def events_of(self, name: str, carrier: str | None = None) -> int:
        """How many events showed ``name`` (on events of ``carrier`` only, when given)."""
        return sum(e.events for e in self.evidence_of(name)
                   if carrier is None or e.carrier == carrier)

    def examples_of(self, name: str, carrier: str | None = None,
                    limit: int = MAX_EXAMPLES) -> list:
        """Distinct example values of a path (on events of ``carrier`` only, when given)."""
        out: list = []
        for e in self.evidence_of(name):
            if carrier is not None and e.carrier != carrier:
                continue
            for value in e.examples:
                if value not in out and len(out) < limit:
                    out.append(value)
        return out

    def carriers_of(self, name: str) -> dict[str, int]:
        """The kinds of event that showed ``name``, each with how many events did."""
        out: dict[str, int] = {}
        for e in self.evidence_of(name):
            out[e.carrier] = out.get(e.carrier, 0) + e.events
        return out

    def _index(self) -> dict[str, tuple[Evidence, ...]]:
        found = self.__dict__.get("_evidence_index")
        if found is None:
            grouped: dict[str, list[Evidence]] = {}
            for e in self.evidence:
                grouped.setdefault(e.name, []).append(e)
            found = {name: tuple(sorted(rows, key=lambda e: (-e.events, e.carrier)))
                     for name, rows in grouped.items()}
            object.__setattr__(self, "_evidence_index", found)
        return found

    @property
    def atoms(self) -> list[str]:
        return sorted(self.declared | self.builtin | self.labelled)

    def source_of(self, atom: str) -> str | None:
        """``labeler``, ``builtin`` (seen in the logs) or ``events`` (arrived labelled), or
        None when nothing in the workspace produces ``atom``."""
        if atom in self.declared:
            return "labeler"
        if atom in self.builtin:
            return "builtin"
        if atom in self.labelled:
            return "events"
        return None

    def path_types(self, path: str) -> frozenset[str] | None:
        """The JSON types seen at ``path`` as a rule reads it, or None when no event has it.
        A path outside ``input``/``output``/``data`` reads the event's top level, where the
        fields of ``data`` also are (``studio.logic.events.monitor_event``)."""
        path = normalised_path(path)
        found = self.paths.get(path)
        if found is not None:
            return found
        root = path.split(".", 1)[0]
        if path in CANONICAL_FIELDS:
            return CANONICAL_FIELDS[path]
        if root in ROOTS or root in CANONICAL_FIELDS:
            return None
        return self.paths.get("data." + path)

    def as_dict(self) -> dict:
        return {"atoms": {"labeler": sorted(self.declared), "builtin": sorted(self.builtin),
                          "events": sorted(self.labelled)},
                "paths": {p: sorted(t) for p, t in sorted(self.paths.items())}}


# ---------------------------------------------------------------------------------------------
# What a rule reads

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
# Suggestions

def nearest(name: str, candidates: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The candidate most like ``name`` (difflib's ratio), or None when none is close.  Atoms
    with a built-in prefix are also compared on what follows the prefix, so
    ``agent_send_money`` finds ``tool_call:send_money``."""
    best, best_score = None, cutoff
    bare = _without_prefix(name)
    for candidate in candidates:
        if candidate == name:
            continue
        score = difflib.SequenceMatcher(None, name, candidate, autojunk=False).ratio()
        other = _without_prefix(candidate)
        prefix_same = (name[:len(name) - len(bare)] == candidate[:len(candidate) - len(other)])
        if (bare != name or other != candidate) and (prefix_same or bare == name):
            score = max(score, difflib.SequenceMatcher(None, bare, other,
                                                       autojunk=False).ratio())
        if score > best_score or (score == best_score and best is not None
                                  and candidate < best):
            best, best_score = candidate, score
    return best


def _without_prefix(atom: str) -> str:
    for prefix in BUILTIN_PREFIXES:
        if atom.startswith(prefix):
            return atom[len(prefix):]
    return atom


# ---------------------------------------------------------------------------------------------
# Warnings

@dataclass(frozen=True)
class VocabularyWarning:
    """``code`` is ``unknown_atom``, ``unknown_path`` or ``type_mismatch``; ``subject`` the
    atom, path or comparison it is about; ``suggestion`` the nearest vocabulary entry (or the
    comparison rewritten), or None."""

    code: str
    subject: str
    message: str
    suggestion: str | None = None

    def as_dict(self) -> dict:
        return {"code": self.code, "subject": self.subject, "message": self.message,
                "suggestion": self.suggestion}


_TYPE_WORDS = {"number": "numbers", "string": "text", "boolean": "true/false values",
               "null": "null", "object": "objects", "array": "lists"}


def _unknown_atom(atom: str, vocabulary: Vocabulary) -> VocabularyWarning:
    suggestion = nearest(atom, vocabulary.atoms)
    if atom.startswith("tool_call:"):
        why = f"no uploaded or live event has called a tool `{atom[len('tool_call:'):]}`"
    elif atom.startswith("stop_reason:"):
        why = f"no uploaded or live event has stopped for the reason " \
              f"`{atom[len('stop_reason:'):]}`"
    elif atom.startswith("role:"):
        why = f"no uploaded or live event came from the role `{atom[len('role:'):]}`"
    else:
        why = "no uploaded or live event has arrived labelled with it"
    message = (f"Nothing in this workspace produces `{atom}`: no labeler, and {why}. "
               "Until something does, it is false at every step.")
    if suggestion:
        message += f" Did you mean `{suggestion}`?"
    return VocabularyWarning("unknown_atom", atom, message, suggestion)


def _unknown_path(path: str, vocabulary: Vocabulary) -> VocabularyWarning:
    suggestion = nearest(normalised_path(path), vocabulary.paths, cutoff=0.7)
    message = (f"No uploaded or live event in this workspace has a field `{path}`, so every "
               "comparison reading it is false.")
    if suggestion:
        message += f" Did you mean `{suggestion}`?"
    return VocabularyWarning("unknown_path", path, message, suggestion)


def _type_mismatch(read: PathRead, types: frozenset[str],
                   other_types: frozenset[str] | None) -> VocabularyWarning | None:
    outcome = "always true" if read.op == "!=" else "always false"
    held = " or ".join(_TYPE_WORDS.get(t, t) for t in sorted(types))
    if read.compared_with == "path":
        if not other_types or types & other_types:
            return None
        other_held = " or ".join(_TYPE_WORDS.get(t, t) for t in sorted(other_types))
        return VocabularyWarning(
            "type_mismatch", read.comparison,
            f"In `{read.comparison}`, `{read.path}` holds {held} in this workspace's events "
            f"and `{read.other_path}` holds {other_held}: values of different kinds never "
            f"compare, so the comparison is {outcome}.")
    wanted = read.compared_with
    if wanted == "null" or wanted in types:
        return None
    suggestion = None
    if wanted == "string" and "number" in types:
        suggestion = _as_number(read)
    elif wanted == "number" and "string" in types:
        suggestion = _with_quoted_number(read)
    fix = f" Write `{suggestion}` instead." if suggestion else ""
    return VocabularyWarning(
        "type_mismatch", read.comparison,
        f"`{read.path}` holds {held} in this workspace's events, but `{read.comparison}` "
        f"compares it with {_TYPE_WORDS[wanted] if wanted != 'string' else 'a text'}: values "
        f"of different kinds never compare, so this comparison is {outcome}.{fix}",
        suggestion)


def _sides(comparison: str, read: PathRead) -> tuple[str, str] | None:
    """(path side, constant side) texts of a comparison ``path op constant`` as written."""
    head = f"prev({read.path})" if read.previous else read.path
    marker = f"{head} {read.op} "
    if comparison.startswith(marker):
        return head, comparison[len(marker):]
    return None


def _as_number(read: PathRead) -> str | None:
    sides = _sides(read.comparison, read)
    if sides is None:
        return None
    try:
        text = json.loads(sides[1])
        number = float(text)
    except (ValueError, TypeError):
        return None
    value = int(number) if number.is_integer() and "." not in text else number
    return f"{sides[0]} {read.op} {render_operand(('const', value))}"


def _with_quoted_number(read: PathRead) -> str | None:
    sides = _sides(read.comparison, read)
    if sides is None:
        return None
    return f"{sides[0]} {read.op} {quote_string(sides[1])}"


def vocabulary_warnings(reads: RuleReads, vocabulary: Vocabulary) -> list[VocabularyWarning]:
    """What the rule reads that nothing in the workspace produces, paths no event has, and
    comparisons between kinds of values that never compare; in reading order (atoms, then
    paths, then comparisons), each subject once."""
    out: list[VocabularyWarning] = []
    for atom in reads.atoms:
        if vocabulary.source_of(atom) is None:
            out.append(_unknown_atom(atom, vocabulary))
    for path in reads.path_names:
        if vocabulary.path_types(path) is None:
            out.append(_unknown_path(path, vocabulary))
    seen = set()
    for read in reads.paths:
        types = vocabulary.path_types(read.path)
        if not types or read.comparison in seen:
            continue
        other = vocabulary.path_types(read.other_path) if read.other_path else None
        warning = _type_mismatch(read, types, other)
        if warning is not None:
            seen.add(read.comparison)
            out.append(warning)
    return out
