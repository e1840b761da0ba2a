"""A rule's reads checked against a workspace's vocabulary: ``unknown_atom``, ``unknown_path``
and ``type_mismatch``, each with the nearest vocabulary entry as a suggestion
(``vocabulary_warnings``).  Pure Python."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from .events import BUILTIN_PREFIXES
from .formula import quote_string, render_operand
from .reads import PathRead, RuleReads
from .vocabulary import Vocabulary, normalised_path


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
