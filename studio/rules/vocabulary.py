"""A rule against its workspace's vocabulary: what the rule reads, what nothing produces, and
the warnings the editor, ``formulas/check``, submission and the review page show.

``vocabulary_for(workspace)`` is the workspace's vocabulary as plain data
(``studio.logic.vocabulary.Vocabulary``); ``formula_warnings`` lists every warning of a formula
as ``{code, subject, message, suggestion}``: ``unknown_atom``, ``unknown_path``,
``type_mismatch`` and the review aids' ``unsatisfiable``, ``valid`` and ``vacuous``.
"""

from __future__ import annotations

from studio.logic import review
from studio.logic import vocabulary as pure
from studio.logic.formula import Formula
from studio.logic.reads import rule_reads
from studio.logic.vocabulary_warnings import vocabulary_warnings
from studio.traces.models import VocabularyEntry

from .models import Labeler

# Shorter than the core's default: the editor asks on every pause in typing.
REVIEW_LENGTH = 10


def vocabulary_for(workspace) -> pure.Vocabulary:
    """What the workspace's labelers and logs can produce: the atoms its enabled labelers
    declare, the built-in atoms and arrival labels seen in its events, and each data path seen
    with its JSON types; with the evidence of each (on which kind of event, how many events,
    example values).  A plain-Python object (no Django); two queries."""
    declared = Labeler.objects.filter(workspace=workspace, enabled=True).values_list(
        "atom", flat=True)
    entries = VocabularyEntry.objects.filter(workspace=workspace).values_list(
        "kind", "name", "json_type", "carrier", "events", "examples")
    return pure.Vocabulary.from_entries(entries, declared)


def reads_table(formula: Formula, vocabulary: pure.Vocabulary) -> dict:
    """What ``formula`` reads, for the pages and the API: each atom with what produces it, each
    comparison, and each data path with the JSON types seen there and the kind of value each
    comparison compares it with."""
    reads = rule_reads(formula)
    atoms = [{"atom": atom, "source": vocabulary.source_of(atom),
              "produced": vocabulary.source_of(atom) is not None} for atom in reads.atoms]
    paths: dict[str, dict] = {}
    for read in reads.paths:
        row = paths.setdefault(read.path, {
            "path": read.path, "seen_types": sorted(vocabulary.path_types(read.path) or ()),
            "compared_with": []})
        if read.compared_with not in row["compared_with"]:
            row["compared_with"].append(read.compared_with)
    return {"atoms": atoms, "comparisons": list(reads.comparisons),
            "paths": [paths[p] for p in sorted(paths)]}


_REVIEW_TITLES = {"unsatisfiable": "no session can satisfy it",
                  "valid": "no session can violate it", "vacuous": "a condition never holds"}


def review_warnings(formula: Formula) -> list[dict]:
    """The review aids' warnings (unsatisfiable, valid, vacuous) in the warnings' shape; none
    when the formula reads too many atoms for the searches."""
    try:
        found = review.warnings(formula, REVIEW_LENGTH)
    except review.ReviewLimitError:
        return []
    return [{"code": w.kind, "subject": w.trigger or formula.text, "message": w.message,
             "suggestion": None} for w in found]


def formula_warnings(formula: Formula, vocabulary: pure.Vocabulary,
                     with_review: bool = True) -> list[dict]:
    """Every warning of ``formula`` in this vocabulary: the vocabulary's first (what the rule
    reads that nothing produces), then the review aids'."""
    out = [w.as_dict() for w in vocabulary_warnings(rule_reads(formula), vocabulary)]
    if with_review:
        out += review_warnings(formula)
    return out


def warnings_summary(warnings: list[dict]) -> str:
    """The warnings named in one line, for an error message."""
    return "; ".join(f"{w['code']} `{w['subject']}`" for w in warnings)
