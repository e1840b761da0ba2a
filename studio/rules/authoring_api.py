"""API of rule authoring: English to LTL, and the review aids of a formula or a version."""

from __future__ import annotations

from typing import Any, Literal

from django.shortcuts import get_object_or_404
from ninja import Router, Schema

from studio.boundary import Text
from studio.logic.parser import parse
from studio.workspaces.acting import workspace_for
from studio.workspaces.llm import client_for

from . import authoring
from .evidence import evidence
from .models import Rule
from .monitoring import labeling_for
from .sampling import formula_flags, stored_sample
from .vocabulary import vocabulary_for

router = Router(tags=["rule authoring"])


class FormaliseIn(Schema):
    english: Text
    engine: Literal["offline", "llm"] = "offline"
    # phrase -> the candidate the author picked (an atom or a field path): rewrites every reading
    choices: dict[Text, Text] = {}
    # False: skip trying the readings on stored sessions (quicker)
    flags: bool = True


class FlagExampleOut(Schema):
    session: str
    step: int


class FlagsOut(Schema):
    flagged: int
    sampled: int
    examples: list[FlagExampleOut]
    fired: int | None
    kind: str
    note: str
    summary: str


class ReadingOut(Schema):
    formula: str
    english: str
    why: str
    trace: list[list[str]]
    against: int | None
    flags: FlagsOut | None = None


class CandidateOut(Schema):
    atom: str
    examples: list[Any]
    events: int
    why: str
    warning: str
    new: bool


class GroundingOut(Schema):
    phrase: str
    kind: str
    atom: str
    grounded: bool
    sure: bool
    warning: str
    proposed: str
    tied_to: str
    chosen_by_author: bool
    candidates: list[CandidateOut]


class FormaliseOut(Schema):
    ok: bool
    engine: str
    formula: str
    atoms: list[str]
    message: str
    unplaced: list[dict[str, Any]]
    readings: list[ReadingOut]
    mapping: list[GroundingOut]
    sure: bool
    # the grammar could not read the sentence: the readings were sketched from what it names
    sketched: bool = False
    rejected_choices: list[str]
    sample: dict[str, Any] | None
    name: str
    # engine "llm": when the model's first reading and the offline grammar's differ, one sentence
    disagreement: str = ""


class FormulaReviewIn(Schema):
    formula: Text
    compare_to: Text | None = None
    counting: Text | None = None


@router.post("w/{slug}/formalise", response=FormaliseOut,
             summary="Read an English rule as a formula (offline grammar or the configured LLM)")
def formalise(request, slug: str, body: FormaliseIn):
    workspace = workspace_for(request, slug)
    known = tuple(sorted(labeling_for(workspace).declared_atoms))
    vocabulary = vocabulary_for(workspace)
    sample = stored_sample(workspace) if body.flags else None
    # the workspace's own endpoint when an admin set one, else the environment's
    return authoring.formalise(body.english, body.engine, known, vocabulary, body.choices,
                               sample, client=lambda: client_for(workspace))


@router.post("w/{slug}/formulas/review", response=dict[str, Any],
             summary="Review aids of a formula: English, example traces, warnings, equivalence")
def review_formula(request, slug: str, body: FormulaReviewIn):
    workspace_for(request, slug)
    return authoring.review_aids(body.formula, body.compare_to, body.counting or None)


@router.get("w/{slug}/rules/{rule_id}/versions/{number}/review", response=dict[str, Any],
            summary="Review aids of a rule version, compared with the version before it")
def review_version(request, slug: str, rule_id: int, number: int):
    workspace = workspace_for(request, slug)
    rule = get_object_or_404(Rule, workspace=workspace, pk=rule_id)
    version = get_object_or_404(rule.versions, number=number)
    previous = rule.versions.filter(number__lt=number).order_by("-number").first()
    aids = authoring.review_aids(version.formula, previous.formula if previous else None,
                                 version.counting or None,
                                 previous.counting if previous else None)
    # The rule's test cases run against this version (studio.evidence): failing ones block
    # its submission.
    aids["flags"] = formula_flags(workspace, parse(version.formula))
    cases = evidence()
    aids["cases"] = cases.cases(version)
    aids["cases_summary"] = cases.summary(aids["cases"])
    return aids
