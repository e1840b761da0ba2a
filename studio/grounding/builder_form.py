"""The pattern builder's form (``studio.grounding.builder`` builds the rule): values typed in
it, what its pickers offer from a workspace's vocabulary, and the form prefilled from what an
English reading understood.  Pure Python: no Django."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from studio.logic.formula import Atom, Formula

from .builder import (
    MAX_CONDITIONS,
    MAX_COUNT,
    MAX_STEPS,
    PATTERNS,
    SCOPES,
    Event,
    event_words,
    field_words,
)


# ---------------------------------------------------------------------------------------------
# Values typed in a form

def parse_value(text: str, types: Any = ()) -> Any:
    """A value typed in a form, read with the JSON types seen at its field: ``500`` is a
    number where the field holds numbers and a text where it holds only texts; ``true``,
    ``false`` and ``null`` are themselves where the field holds them (or nothing is known);
    ``"..."`` is always a text."""
    text = text.strip()
    types = set(types or ())
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = text[1:-1]
        return decoded if isinstance(decoded, str) else text[1:-1]
    if text in ("true", "false") and (not types or "boolean" in types):
        return text == "true"
    if text == "null" and (not types or "null" in types):
        return None
    if not types or "number" in types:
        try:
            number = json.loads(text)
        except ValueError:
            number = None
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return number
    return text


# ---------------------------------------------------------------------------------------------
# What the pickers offer

OPERATORS: dict[str, list[str]] = {
    "number": [">", ">=", "<", "<=", "==", "!="],
    "string": ["==", "!="],
    "boolean": ["==", "!="],
    "null": ["==", "!="],
}
OPERATOR_WORDS = {">": "over", ">=": "at least", "<": "under", "<=": "at most",
                  "==": "equal to", "!=": "other than"}
SCALAR_TYPES = ("number", "string", "boolean", "null")
# A field is offered when it holds one of these (a field only ever null compares with nothing).
VALUE_TYPES = frozenset({"number", "string", "boolean"})


def operators_for(types: Any) -> list[str]:
    """The comparisons that make sense for a field holding ``types`` (order for numbers;
    every comparison when nothing is known)."""
    types = set(types or ())
    if not types & set(SCALAR_TYPES):
        return list(OPERATORS["number"])
    out: list[str] = []
    for t in SCALAR_TYPES:
        if t in types:
            out += [op for op in OPERATORS[t] if op not in out]
    return out


def _field(vocabulary, path: str, carrier: str | None) -> dict:
    types = sorted(vocabulary.paths.get(path, ()))
    examples = [v for v in vocabulary.examples_of(path, carrier) if v is not None]
    return {"path": path, "name": field_words(path), "types": types,
            "ops": operators_for(types), "examples": examples,
            "events": vocabulary.events_of(path, carrier)}


def _is_argument(path: str) -> bool:
    return any(part in ("args", "arguments", "parameters", "input") for part in
               path.split(".")[1:])


def own_fields(vocabulary, tool: str) -> list[str]:
    """The fields the events of ``tool`` (``tool_call:NAME``) showed holding a number, a text or
    true/false: arguments first, then the most frequent.  A field that only ever held the
    tool's own name (``output.tool``) says nothing the tool's atom does not, and is left out."""
    name = tool[len("tool_call:"):]
    seen: dict[str, int] = {}
    for e in vocabulary.evidence:
        if e.kind == "path" and e.carrier == tool and e.json_type in VALUE_TYPES:
            seen[e.name] = seen.get(e.name, 0) + e.events
    return sorted((p for p in seen if vocabulary.examples_of(p, tool) != [name]),
                  key=lambda p: (not _is_argument(p), -seen[p], p))


def builder_options(vocabulary) -> dict:
    """What the builder's pickers offer from a workspace's vocabulary
    (``studio.logic.vocabulary.Vocabulary``):

    * ``patterns`` and ``scopes``, each with its slots (``count``: "steps" or "times" when it
      takes a number);
    * ``tools``: each ``tool_call:NAME`` with its own arguments - the fields seen on that
      tool's calls (``own_fields``), each with its types, example values and comparisons;
    * ``roles``, ``labels`` (labeler atoms and arrival labels) and ``other_atoms`` (stop
      reasons and other built-in atoms);
    * ``fields``: every field that holds a number, a text or true/false, with its types,
      comparisons and the examples seen on any event;
    * ``operators``: the comparisons per JSON type, with their words;
    * ``evidence``: whether the vocabulary records which events showed each field.  Without
      it (a workspace whose vocabulary predates the evidence) tools list no arguments and
      fields no examples: every field is offered under ``fields``.
    """
    has_evidence = bool(getattr(vocabulary, "evidence", ()))
    scalar = sorted(path for path, types in vocabulary.paths.items() if set(types) & VALUE_TYPES)
    tools, roles, labels, others = [], [], [], []
    for atom in vocabulary.atoms:
        source = vocabulary.source_of(atom)
        entry = {"atom": atom, "source": source,
                 "events": vocabulary.events_of(atom) if has_evidence else None}
        if atom.startswith("tool_call:"):
            arguments = []
            if has_evidence:
                arguments = [_field(vocabulary, p, atom) for p in own_fields(vocabulary, atom)]
            tools.append({**entry, "name": atom[len("tool_call:"):], "arguments": arguments})
        elif atom.startswith("role:"):
            roles.append({**entry, "name": atom[len("role:"):],
                          "words": event_words(Event(atom, (), Atom(atom))).noun})
        elif source == "builtin":
            others.append({**entry, "words": event_words(Event(atom, (), Atom(atom))).noun})
        else:
            labels.append(entry)
    fields = [_field(vocabulary, p, None) for p in scalar]
    return {
        "patterns": [{"name": s.name, "label": s.label, "slots": list(s.slots),
                      "slot_help": dict(s.slot_help), "count": s.count}
                     for s in PATTERNS.values()],
        "scopes": [{"name": s.name, "label": s.label, "slots": list(s.slots),
                    "slot_help": dict(s.slot_help)} for s in SCOPES.values()],
        "tools": tools, "roles": roles, "labels": labels, "other_atoms": others,
        "fields": fields,
        "operators": {t: [{"op": op, "words": OPERATOR_WORDS[op]} for op in ops]
                      for t, ops in OPERATORS.items()},
        "evidence": has_evidence,
        "limits": {"steps": MAX_STEPS, "count": MAX_COUNT, "conditions": MAX_CONDITIONS},
    }


def prefill(formula: Formula | None, events: Sequence[str] = ()) -> dict[str, list[str]]:
    """The builder's query parameters for what a reading understood: the pattern of its
    common shapes (``G !E``, ``G (P -> F Q)``, ``G (P -> F[0,n] Q)``, ``G (P -> O Q)``), each
    event's atom and conditions; otherwise ``events`` (the atoms the reading named) as
    ``p``, ``q``, ``r``.  Values are lists, as ``urlencode(..., doseq=True)`` takes them."""
    shape = _shape(formula) if formula is not None else None
    if shape is None:
        return {slot: [atom] for slot, atom in zip(("p", "q", "r"), events)}
    pattern, slots, n = shape
    out: dict[str, list[str]] = {"pattern": [pattern]}
    if n is not None:
        out["n"] = [str(n)]
    for slot, event in slots.items():
        atoms = [a.name for a in _conjuncts(event) if a.op == "atom"]
        if atoms:
            out[slot] = [atoms[0]]
        for c in (a for a in _conjuncts(event) if a.op == "cmp"):
            left, right = c.payload.left, c.payload.right
            if left[0] != "path" or right[0] != "const":
                continue
            value = right[1]
            out.setdefault(f"{slot}_path", []).append(left[1])
            out.setdefault(f"{slot}_op", []).append(c.payload.op)
            out.setdefault(f"{slot}_value", []).append(
                f'"{value}"' if isinstance(value, str) else str(value).lower()
                if isinstance(value, bool) else str(value))
    return out


def _conjuncts(f: Formula) -> tuple[Formula, ...]:
    return f.args if f.op == "and" else (f,)


def _plain_event(f: Formula) -> bool:
    return all(a.op in ("atom", "cmp") for a in _conjuncts(f))


def _shape(f: Formula):
    if f.op != "G":
        return None
    body = f.args[0]
    if body.op == "not" and _plain_event(body.args[0]):
        return "absence", {"p": body.args[0]}, None
    if body.op != "implies" or not _plain_event(body.args[0]):
        return None
    trigger, then = body.args
    if then.op == "F" and _plain_event(then.args[0]):
        return "response", {"p": trigger, "q": then.args[0]}, None
    if then.op == "F[]" and then.payload[0] == 0 and _plain_event(then.args[0]):
        return "bounded_response", {"p": trigger, "q": then.args[0]}, then.payload[1]
    if then.op == "O" and _plain_event(then.args[0]):
        return "precedence", {"p": then.args[0], "q": trigger}, None
    return None
