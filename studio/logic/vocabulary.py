"""A workspace's vocabulary: what its logs and labelers can produce.  No Django.

The vocabulary is what a workspace's logs and labelers can produce: the atoms its labelers
declare, the built-in atoms seen in its events (``tool_call:NAME``, ``stop_reason:R``,
``role:R``), the atoms events arrived labelled with, and the data paths seen in its events
(``output.args.amount``, ``data.status``) with the JSON types found there.

* ``Collector`` counts the evidence of every event it is shown, exactly (no sampling): per
  ``(kind, name, json_type, carrier)`` how many events showed it and up to ``MAX_EXAMPLES``
  distinct example values - what an upload batch or a live delivery collects before one bulk
  write (``studio.traces.vocabulary.record``); ``collect_event`` gives one event's entries as
  a set of ``(kind, name, json_type)``;
* what a rule reads is ``studio.logic.reads``; the warnings between the two are
  ``studio.logic.vocabulary_warnings``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .events import builtin_atoms

# Kinds of vocabulary entries.
BUILTIN, LABEL, PATH = "builtin", "label", "path"
# The roots of the event under which data paths are collected.
ROOTS = ("input", "output", "data")
# Bounds on what one workspace keeps: path names in all, and how deep a path goes below its root.
MAX_PATHS = 5_000
MAX_DEPTH = 6
# (List elements are read by index: every element is walked, and filed under index 0.)
# Only keys a formula can spell are collected (atoms and paths are lower-case; see grammar.lark).
_WRITABLE_KEY = re.compile(r"[a-z0-9_:\-]+")
# Fields every event has, whatever its log held (``studio.logic.events.monitor_event``).
CANONICAL_FIELDS = {"session": frozenset({"number"}), "step": frozenset({"number"}),
                    "lifeline": frozenset({"string"}), "labels": frozenset({"array", "null"})}

_JSON_TYPES = {type(None): "null", bool: "boolean", int: "number", float: "number",
               str: "string", dict: "object", list: "array", tuple: "array"}
# value_kind (studio.logic.events) of a comparison's constant -> its JSON type


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
            for inner in value:
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
    return _carrier(builtin_atoms({"output": output, "data": data, "role": role}))


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


# ---------------------------------------------------------------------------------------------
# Evidence: every event counted

# An example slot not yet met on a carrier (a full one holds None); a child not yet met.
_NEW: list = []


class _NoShape(Exception):
    """An event whose shape is not compiled (a key or a value JSON does not make)."""


class _Node:
    """A path name as the collector walks it: its children by key (None: a key that is not
    collected), the node of its list elements, and its slot per Python type of value."""

    __slots__ = ("name", "depth", "deep", "children", "element", "slots")

    def __init__(self, name: str, depth: int):
        self.name = name
        self.depth = depth
        self.deep = depth < MAX_DEPTH
        self.children: dict = {}
        self.element: _Node | None = None
        self.slots: dict[type, int] = {}


class Collector:
    """The evidence of every event shown to ``add``, exactly: per ``(kind, name, json_type,
    carrier)`` how many events showed it and up to ``MAX_EXAMPLES`` distinct example values
    (``example_value``, in the order first met; paths holding numbers, texts and booleans
    only).  ``counts()`` gives ``{(kind, name, json_type, carrier): (events, examples)}``.

    An event shows each of its built-in atoms and each label it arrived with (``json_type``
    "") and each data path under input, output and data with the JSON type held there
    (``json_type``), all on its carrier (``carrier_of``: its tool call, else its role).  A
    path is counted once per event however many list elements hold it.  Paths follow the
    rules of ``collect_event`` (writable keys, ``MAX_DEPTH``), and new path names stop being
    collected once ``max_paths`` are known (atoms and labels always are).

    Every event is walked, in one pass over its values, and counted by what it shows
    (carrier, atoms, labels, paths): one dict update an event, expanded into counts per entry
    at the end.  The walk is fast because events of one kind mostly share a shape: an event
    is walked generically (each path node remembers its children, so no key is checked or
    joined twice), and when a shape comes again it is compiled into a function that checks an
    event has it (each dict's exact keys, each value's JSON type) while it reads the examples,
    and answers the paths it shows - or None, and the event is walked generically.
    List elements are always walked generically.  ``take()`` hands the counts over and starts
    counting afresh, keeping what it learnt of the paths and shapes (an upload's batches)."""

    # Compiled shapes kept per carrier (the most recently matched first).  Compiling a shape
    # costs about as much as walking 30 events: a shape is compiled the second time it is
    # walked, and beyond the first ones at most once per SHAPE_WALKS events walked.
    SHAPES_PER_CARRIER = 8
    FIRST_SHAPES = 32
    SHAPE_WALKS = 64
    # The kinds of event (carrier, atoms, labels, paths) whose entries counts() remembers.
    EXPANDED_MAX = 40_000

    def __init__(self, max_paths: int = MAX_PATHS):
        self.max_paths = max_paths
        self._roots = tuple(_Node(root, 0) for root in ROOTS)
        self._names: set[str] = set(ROOTS)
        self._slot_ids: dict[tuple[str, str], int] = {}
        self._slot_keys: list[tuple[str, str]] = []
        self._tools: dict[str, tuple[str, tuple[str, ...]]] = {}
        # carrier -> (its examples while they are not full, its compiled shapes): the
        # examples are slot -> the same list as in _examples while it is not full, None once
        # it is; and -1 -> the carrier.
        self._carriers: dict[str, tuple[dict, list]] = {}
        # The paths events show, as slot tuples, numbered: counting by number hashes less.
        self._signatures: dict[tuple[int, ...], int] = {}
        self._signature_slots: list[tuple[int, ...]] = []
        self._walked_before: set[int] = set()  # signatures walked generically
        # (carrier, atoms, labels, signature) -> the entries it shows (counts())
        self._expanded: dict[tuple, tuple] = {}
        self._walks = self._compiled = 0
        self._start()

    def _start(self) -> None:
        # (carrier, atoms, labels, signature) -> events
        self._seen: dict[tuple, int] = {}
        # (carrier, slot) -> examples
        self._examples: dict[tuple[str, int], list] = {}
        for carrier, (examples, _) in self._carriers.items():
            examples.clear()
            examples[-1] = carrier

    def _signature(self, slots: tuple[int, ...]) -> int:
        found = self._signatures.get(slots)
        if found is None:
            found = self._signatures[slots] = len(self._signature_slots)
            self._signature_slots.append(slots)
        return found

    # -- one event -----------------------------------------------------------------------------

    def add(self, input: Any, output: Any, data: Any, labels: Any, role: Any = None) -> None:
        """Count one event (its ``input``, ``output``, ``data``, ``labels``; ``role``: a role
        it has outside ``data`` and ``output``, as ``builtin_atoms`` reads it)."""
        if (role is None and type(output) is dict and (data is None or type(data) is dict)
                and "tool_calls" not in output and "stop_reason" not in output
                and "role" not in output
                and (data is None or ("stop_reason" not in data and "role" not in data))):
            # The common event: its only atom can be its tool, read as builtin_atoms does.
            tool = output.get("tool") or output.get("name")
            if tool and isinstance(tool, str):
                found = self._tools.get(tool)
                if found is None:
                    atom = "tool_call:" + tool
                    found = self._tools[tool] = (atom, (atom,))
                carrier, atoms = found
            else:
                carrier, atoms = "", ()
        else:
            atoms = tuple(dict.fromkeys(builtin_atoms(
                {"output": output, "data": data, "role": role})))
            carrier = _carrier(atoms)
        if labels is None:
            said: tuple = ()
        elif type(labels) is list:
            said = tuple(dict.fromkeys([a for a in labels if type(a) is str]))
        else:
            said = ()
        state = self._carriers.get(carrier)
        if state is None:
            state = self._carriers[carrier] = ({-1: carrier}, [])
        examples, shapes = state
        for shape in shapes:
            signature = shape(input, output, data, examples)
            if signature is not None:
                if shape is not shapes[0]:
                    shapes.remove(shape)
                    shapes.insert(0, shape)
                break
        else:
            signature = self._walked(input, output, data, examples, shapes)
        key = (carrier, atoms, said, signature)
        seen = self._seen
        seen[key] = seen.get(key, 0) + 1

    def _walked(self, input: Any, output: Any, data: Any, examples: dict,
                shapes: list) -> int:
        """The signature of the paths an event shows, walked generically; its shape compiled
        when due."""
        slots: list[int] = []
        visit = self._visit
        roots = self._roots
        visit(input, roots[0], slots, examples)
        visit(output, roots[1], slots, examples)
        visit(data, roots[2], slots, examples)
        signature = self._signature(tuple(slots))
        self._walks += 1
        if signature not in self._walked_before:
            self._walked_before.add(signature)
        elif (self._compiled < self.FIRST_SHAPES
              or self._walks >= self.SHAPE_WALKS * (self._compiled - self.FIRST_SHAPES + 1)):
            shape = self._compile(input, output, data)
            if shape is not None:
                self._compiled += 1
                del shapes[self.SHAPES_PER_CARRIER - 1:]
                shapes.insert(0, shape)
        return signature

    def _visit(self, value: Any, node: _Node, slots: list, examples: dict) -> None:
        kind = type(value)
        slot = node.slots.get(kind)
        if slot is None:
            slot = self._slot(node, value)
        slots.append(slot)
        if kind is dict:
            if node.deep:
                children = node.children
                visit = self._visit
                for key, inner in value.items():
                    child = children.get(key, _NEW)
                    if child is _NEW:
                        child = self._child(node, key)
                    if child is not None:
                        visit(inner, child, slots, examples)
        elif kind is list:
            if value and node.deep:
                self._elements(value, node, slots, examples)
        elif value is not None and examples.get(slot, _NEW) is not None:
            if kind is str or kind is int or kind is float or kind is bool:
                self._note(value, slot, examples)
            else:
                example = example_value(value)
                if example is not None:
                    self._note(example, slot, examples)

    def _elements(self, value: list, node: _Node, slots: list, examples: dict) -> None:
        """A list's elements, each walked, their paths added once."""
        element = node.element
        if element is None:
            element = self._element(node)
            if element is None:
                return
        if len(value) == 1:
            self._visit(value[0], element, slots, examples)
        else:
            inner_slots: list[int] = []
            visit = self._visit
            for inner in value:
                visit(inner, element, inner_slots, examples)
            slots.extend(dict.fromkeys(inner_slots))

    def _note(self, value: Any, slot: int, examples: dict) -> None:
        """``value`` (a number, boolean or text, or an example already) as an example."""
        if type(value) is str and len(value) > EXAMPLE_TEXT_LIMIT:
            value = value[:EXAMPLE_TEXT_LIMIT]
        kept = examples.get(slot, _NEW)
        if kept is None:
            return
        if kept is _NEW:
            kept = examples[slot] = self._examples[(examples[-1], slot)] = []
        if value not in kept:
            kept.append(value)
            if len(kept) >= MAX_EXAMPLES:
                examples[slot] = None

    def _slot(self, node: _Node, value: Any) -> int:
        key = (node.name, json_type(value))
        slot = self._slot_ids.get(key)
        if slot is None:
            slot = self._slot_ids[key] = len(self._slot_keys)
            self._slot_keys.append(key)
        node.slots[type(value)] = slot
        return slot

    def _named(self, name: str, depth: int) -> _Node | None:
        if name not in self._names:
            if len(self._names) >= self.max_paths:
                return None
            self._names.add(name)
        return _Node(name, depth)

    def _child(self, node: _Node, key: Any) -> _Node | None:
        child = None
        if type(key) is str and _WRITABLE_KEY.fullmatch(key):
            child = self._named(f"{node.name}.{key}", node.depth + 1)
        node.children[key] = child
        return child

    def _element(self, node: _Node) -> _Node | None:
        node.element = self._named(node.name + ".0", node.depth + 1)
        return node.element

    # -- compiled shapes -----------------------------------------------------------------------

    def _compile(self, input: Any, output: Any, data: Any):
        """A function ``(input, output, data, examples) -> signature`` for events of the shape of
        this one (just walked: its nodes and slots exist), None when it has none (a value of a
        type JSON does not make).  Values are read in this event's order; the order does not
        matter, since each slot's examples come from one value an event (lists aside)."""
        lines: list[str] = []
        names: dict[str, Any] = {}
        static: list[int] = []
        has_lists = False

        def emit(text: str) -> None:
            lines.append("        " + text)

        def shape(value: Any, node: _Node, var: str) -> None:
            nonlocal has_lists
            kind = type(value)
            slot = node.slots[kind]
            static.append(slot)
            if kind is dict:
                emit(f"if type({var}) is not dict: return None")
                if not node.deep:
                    return
                emit(f"if len({var}) != {len(value)}: return None")
                for key, inner in value.items():
                    if type(key) is not str:
                        raise _NoShape
                    child = node.children[key]
                    # the event's keys are data, never source: each is a constant of the
                    # namespace under a name of ours
                    constant = f"k{len(names)}"
                    names[constant] = key
                    if child is None:
                        emit(f"if {constant} not in {var}: return None")
                    else:
                        inner_var = f"v{len(lines)}"
                        emit(f"{inner_var} = {var}[{constant}]")
                        shape(inner, child, inner_var)
            elif kind is list:
                emit(f"if type({var}) is not list: return None")
                if node.deep:
                    has_lists = True
                    names[f"n{slot}"] = node
                    emit(f"if {var}: elements({var}, n{slot}, found, ex)")
            elif value is None:
                emit(f"if {var} is not None: return None")
            elif kind is str or kind is bool or kind is int or kind is float:
                if kind is str or kind is bool:
                    emit(f"if type({var}) is not {kind.__name__}: return None")
                else:
                    emit(f"t = type({var})")
                    emit("if t is not int and t is not float: return None")
                # A long text may be new while its start is not: note() cuts it, then looks.
                emit(f"e = ex.get({slot}, NEW)")
                emit(f"if e is not None and {var} not in e: note({var}, {slot}, ex)")
            else:
                raise _NoShape

        try:
            shape(input, self._roots[0], "i")
            shape(output, self._roots[1], "o")
            shape(data, self._roots[2], "d")
        except _NoShape:
            return None
        answer = "signature(SLOTS + tuple(found))" if has_lists else "SIGNATURE"
        source = "\n".join(["def shape(i, o, d, ex, type=type, len=len, dict=dict, list=list,"
                            " str=str, bool=bool, int=int, float=float, NEW=NEW, note=note):",
                            "    found = []" if has_lists else "    pass",
                            "    try:", *lines,
                            "    except KeyError:",  # a key the shape has, the event lacks
                            "        return None",
                            f"    return {answer}"])
        namespace = {**names, "SLOTS": tuple(static), "NEW": _NEW, "note": self._note,
                     "elements": self._elements, "signature": self._signature,
                     "SIGNATURE": None if has_lists else self._signature(tuple(static))}
        exec(compile(source, "<vocabulary shape>", "exec"), namespace)  # noqa: S102
        return namespace["shape"]

    # -- the counts ----------------------------------------------------------------------------

    def counts(self) -> dict[tuple[str, str, str, str], tuple[int, list]]:
        """``{(kind, name, json_type, carrier): (events, examples)}`` of the events so far."""
        events: dict[tuple[str, str, str, str], int] = {}
        expanded = self._expanded
        if len(expanded) > self.EXPANDED_MAX:
            expanded.clear()
        for key, n in self._seen.items():
            entries = expanded.get(key)
            if entries is None:
                entries = expanded[key] = self._entries(*key)
            for entry in entries:
                events[entry] = events.get(entry, 0) + n
        examples = {self._path_entry(carrier, slot): kept
                    for (carrier, slot), kept in self._examples.items()}
        return {entry: (n, list(examples[entry]) if entry in examples else [])
                for entry, n in events.items()}

    def _entries(self, carrier: str, atoms: tuple, said: tuple, signature: int) -> tuple:
        """The entries an event of this carrier, atoms, labels and paths shows."""
        return (*((BUILTIN, atom, "", carrier) for atom in atoms),
                *((LABEL, atom, "", carrier) for atom in said),
                *(self._path_entry(carrier, slot) for slot in self._signature_slots[signature]))

    def _path_entry(self, carrier: str, slot: int) -> tuple[str, str, str, str]:
        name, type_ = self._slot_keys[slot]
        return (PATH, name, type_, carrier)

    @property
    def signatures(self) -> int:
        """How many sets of paths it has met: what it keeps of them grows with this."""
        return len(self._signature_slots)

    def take(self) -> dict[tuple[str, str, str, str], tuple[int, list]]:
        """The counts so far; the collector then counts afresh (what it knows of the paths,
        and the path names known against ``max_paths``, stay)."""
        found = self.counts()
        self._start()
        return found


def _carrier(atoms: Iterable[str]) -> str:
    """``carrier_of`` from an event's built-in atoms."""
    for atom in atoms:
        if atom.startswith("tool_call:"):
            return atom
    for atom in atoms:
        if atom.startswith("role:"):
            return atom
    return ""


def event_counts(events: Iterable[Mapping], max_paths: int = MAX_PATHS) -> dict:
    """``Collector.counts`` of canonical events (``input``, ``output``, ``data``, ``labels``
    and, when they have one, ``role``)."""
    collector = Collector(max_paths)
    for event in events:
        collector.add(event.get("input"), event.get("output"), event.get("data"),
                      event.get("labels"), event.get("role"))
    return collector.counts()


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
            if len(row) > 3 and int(row[4] or 0) > 0:
                # (a row stored before events were counted is no evidence of where it was seen)
                evidence.append(Evidence(kind, name, type_, row[3] or "", int(row[4]),
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
