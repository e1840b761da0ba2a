"""Rules, their versions and reviews, rule sets, labelers, and the formula checker.

Reads need membership of the workspace; writing rules, versions, rule sets and labelers needs the
author role; approving and rejecting needs the reviewer role (and not being the version's author).
Errors answer ``{"detail", "field"}``; a formula that does not parse or compile answers 422 with
``"field": "formula"`` and ``"details": {"line", "column", "message", "expected"}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from studio.boundary import Id, Text
from studio.logic.parser import FormulaSyntaxError, parse, to_text
from studio.monitor import RuleError, compile_rule
from studio.monitor.verdicts import COUNTING_LABELS, COUNTING_MODES, COUNTING_SENTENCES
from studio.workspaces.acting import actor_of, workspace_for
from studio.workspaces.models import Role

from . import services
from .models import Labeler, Rule, RuleSet, RuleVersion
from .monitoring import approved_numbers
from .sampling import formula_flags
from .vocabulary import formula_warnings, reads_table, vocabulary_for

router = Router(tags=["rules"])

LONG_TEXT = 20_000  # descriptions, English renderings, review comments
COUNTING_HELP = ("how violations are counted: " + ", ".join(COUNTING_MODES)
                 + " (per_instance only for rules of the form G phi)")
FORMULA_TEXT = 20_000  # the parser's own limit; longer formulas get its clear error


# ---------------------------------------------------------------------------------------------
# Schemas

class WarningOut(Schema):
    code: Literal["unknown_atom", "unknown_path", "type_mismatch", "unsatisfiable", "valid",
                  "vacuous"]
    subject: str = Field(description="the atom, path, comparison or subformula it is about")
    message: str
    suggestion: str | None = Field(description="the nearest entry of the workspace's "
                                               "vocabulary (or the comparison rewritten)")


class VersionOut(Schema):
    id: int
    rule_id: int
    number: int
    formula: str
    english: str
    counting: str = Field(description=COUNTING_HELP)
    counting_label: str
    counting_sentence: str = Field(description="the counting in one English sentence")
    status: Literal["draft", "in_review", "approved", "rejected"]
    author: str | None
    created_at: datetime
    submitted_at: datetime | None
    reviewer: str | None
    reviewed_at: datetime | None
    review_comment: str
    submitted_warnings: list[WarningOut] = Field(
        description="the formula's warnings when it was submitted")
    acknowledgement: str = Field(description="the author's answer to those warnings")


class RuleOut(Schema):
    id: int
    name: str
    description: str
    created_by: str | None
    created_at: datetime
    version_count: int
    latest_version: VersionOut | None
    approved_version: int | None = Field(description="number of the newest approved version")


class RuleRef(Schema):
    id: int
    name: str
    approved_version: int | None


class RuleDetailOut(RuleOut):
    versions: list[VersionOut]
    rule_sets: list[str]


class RuleIn(Schema):
    name: Text = Field(min_length=1, max_length=services.NAME_MAX)
    description: Text = Field("", max_length=LONG_TEXT)
    formula: Text = Field(description="the first version's formula (a draft)")
    english: Text = Field("", max_length=LONG_TEXT)
    counting: Text | None = Field(None, max_length=40, description=COUNTING_HELP
                                  + "; the default for the formula's form when empty")


class RulePatch(Schema):
    name: Text | None = Field(None, min_length=1, max_length=services.NAME_MAX)
    description: Text | None = Field(None, max_length=LONG_TEXT)


class VersionIn(Schema):
    formula: Text | None = Field(None, description="defaults to the latest version's formula")
    english: Text | None = Field(None, max_length=LONG_TEXT)
    counting: Text | None = Field(None, max_length=40, description=COUNTING_HELP
                                  + "; the latest version's when empty (the formula's default "
                                    "if it does not fit or was the default)")


class VersionPatch(Schema):
    formula: Text | None = None
    english: Text | None = Field(None, max_length=LONG_TEXT)
    counting: Text | None = Field(None, max_length=40, description=COUNTING_HELP)


class SubmitIn(Schema):
    acknowledgement: Text = Field(
        "", max_length=services.ACKNOWLEDGEMENT_MAX,
        description="required when the formula has warnings (see formulas/check): why it "
                    "should be reviewed as it is, e.g. \"a labeler for `x` will be added\"")


class VersionDecisionIn(Schema):
    comment: Text = Field("", max_length=LONG_TEXT,
                          description="optional when approving, required when rejecting")


class RuleSetOut(Schema):
    id: int
    name: str
    description: str
    live: bool
    rules: list[RuleRef]
    created_at: datetime


class RuleSetIn(Schema):
    name: Text = Field(min_length=1, max_length=services.NAME_MAX)
    description: Text = Field("", max_length=LONG_TEXT)
    rule_ids: list[Id] = Field(default_factory=list, max_length=10_000)
    live: bool = False


class RuleSetPatch(Schema):
    name: Text | None = Field(None, min_length=1, max_length=services.NAME_MAX)
    description: Text | None = Field(None, max_length=LONG_TEXT)
    live: bool | None = Field(None, description="live sessions are monitored against the "
                                                "live rule sets (every rule when none is)")


class RuleIdsIn(Schema):
    rule_ids: list[Id] = Field(max_length=10_000)


class LabelerOut(Schema):
    id: int
    atom: str
    kind: Literal["field", "regex", "llm"]
    config: dict[str, Any]
    description: str
    enabled: bool
    created_at: datetime


class LabelerIn(Schema):
    atom: Text = Field(min_length=1, max_length=services.ATOM_MAX)
    kind: Literal["field", "regex", "llm"]
    config: dict[str, Any] = Field(
        description='field: {"path", "op", "value"}; regex: {"path", "pattern", "flags"}; '
                    'llm: {"description", "fields", "model", "batch_size"} (an LLM asked '
                    'whether the description holds at each step; see docs/llm.md)')
    description: Text = Field("", max_length=LONG_TEXT)
    enabled: bool = True


class LabelerPatch(Schema):
    atom: Text | None = Field(None, min_length=1, max_length=services.ATOM_MAX)
    kind: Literal["field", "regex", "llm"] | None = None
    config: dict[str, Any] | None = None
    description: Text | None = Field(None, max_length=LONG_TEXT)
    enabled: bool | None = None


class FormulaCheckIn(Schema):
    text: str


class FormulaError(Schema):
    line: int
    column: int
    message: str
    expected: list[str]


class AtomOut(Schema):
    atom: str
    produced: bool = Field(description="whether anything in the workspace produces it")
    source: Literal["builtin", "labeler", "events"] | None = Field(
        description="labeler: a labeler declares it; builtin: a built-in atom seen in the "
                    "workspace's events; events: events arrived labelled with it")


class PathOut(Schema):
    path: str
    seen_types: list[str] = Field(description="JSON types this path held in the workspace's "
                                              "events (empty: no event has it)")
    compared_with: list[str] = Field(description="what the rule compares it with: number, "
                                                 "string, boolean, null, or path")


class FormulaCheckOut(Schema):
    ok: bool
    formula: str | None = Field(description="the canonical text")
    unicode: str | None
    atoms: list[AtomOut]
    comparisons: list[str] = Field(description="data atoms, read from the event itself")
    paths: list[PathOut]
    warnings: list[WarningOut] = Field(description="unknown atoms and paths, mismatched "
                                                   "comparisons, and the review aids' warnings")
    instance_level: bool | None = Field(description="of the form G phi: every step opens an "
                                                    "obligation, each failure is a violation")
    error: FormulaError | None
    flags: dict[str, Any] | None = Field(
        None, description="what the formula would flag on the newest stored sessions: "
                          "flagged, sampled, examples (session, step), kind (never_fires, "
                          "every_session, never_flags or empty), note and summary in words")


# ---------------------------------------------------------------------------------------------
# Presenters

def _who(user, token) -> str | None:
    if token is not None:
        return f"{user.get_username()} (token {token.name})" if user else f"token {token.name}"
    return user.get_username() if user is not None else None


def _version_out(v: RuleVersion) -> dict:
    return {"id": v.id, "rule_id": v.rule_id, "number": v.number, "formula": v.formula,
            "english": v.english, "counting": v.counting,
            "counting_label": COUNTING_LABELS.get(v.counting, v.counting),
            "counting_sentence": COUNTING_SENTENCES.get(v.counting, ""),
            "status": v.status, "author": _who(v.author, v.author_token),
            "created_at": v.created_at, "submitted_at": v.submitted_at,
            "reviewer": _who(v.reviewer, v.reviewer_token), "reviewed_at": v.reviewed_at,
            "review_comment": v.review_comment,
            "submitted_warnings": v.submitted_warnings or [],
            "acknowledgement": v.acknowledgement}


def _versions(rule: Rule) -> list[RuleVersion]:
    # Prefetched by the listing queries; ordered by number (the model's ordering).
    return list(rule.versions.all())


def _rule_out(rule: Rule, approved: dict[int, int], detail: bool = False) -> dict:
    """``approved``: rule id -> its newest approved version's number (``approved_numbers``)."""
    versions = _versions(rule)
    out = {"id": rule.id, "name": rule.name, "description": rule.description,
           "created_by": rule.created_by.get_username() if rule.created_by else None,
           "created_at": rule.created_at, "version_count": len(versions),
           "latest_version": _version_out(versions[-1]) if versions else None,
           "approved_version": approved.get(rule.id)}
    if detail:
        out["versions"] = [_version_out(v) for v in versions]
        out["rule_sets"] = sorted(rule.rule_sets.values_list("name", flat=True))
    return out


_VERSION_RELATED = ("author", "author_token", "reviewer", "reviewer_token")


def _rules(workspace):
    return (Rule.objects.filter(workspace=workspace).select_related("created_by")
            .prefetch_related(*(f"versions__{name}" for name in _VERSION_RELATED)))


def _rule_set_out(rule_set: RuleSet, approved: dict[int, int] | None = None) -> dict:
    if approved is None:
        approved = approved_numbers(rule_set.workspace)
    return {"id": rule_set.id, "name": rule_set.name, "description": rule_set.description,
            "live": rule_set.live, "created_at": rule_set.created_at,
            "rules": [{"id": r.id, "name": r.name, "approved_version": approved.get(r.id)}
                      for r in rule_set.rules.order_by("name")]}


def _labeler_out(labeler: Labeler) -> dict:
    return {"id": labeler.id, "atom": labeler.atom, "kind": labeler.kind,
            "config": labeler.config, "description": labeler.description,
            "enabled": labeler.enabled, "created_at": labeler.created_at}


# ---------------------------------------------------------------------------------------------
# Lookups: always through the caller's workspace, so another workspace's ids read as 404.

def _rule(workspace, rule_id: Id) -> Rule:
    return get_object_or_404(_rules(workspace), id=rule_id)


def _version(workspace, rule_id: Id, number: Id) -> RuleVersion:
    return get_object_or_404(
        RuleVersion.objects.select_related("rule", *_VERSION_RELATED),
        rule__workspace=workspace, rule_id=rule_id, number=number)


def _rule_set(workspace, rule_set_id: Id) -> RuleSet:
    return get_object_or_404(RuleSet, workspace=workspace, id=rule_set_id)


def _labeler(workspace, labeler_id: Id) -> Labeler:
    return get_object_or_404(Labeler, workspace=workspace, id=labeler_id)


# ---------------------------------------------------------------------------------------------
# Rules and versions

@router.get("{slug}/rules", response=list[RuleOut], summary="The workspace's rules")
def list_rules(request, slug: str):
    workspace = workspace_for(request, slug)
    approved = approved_numbers(workspace)
    return [_rule_out(r, approved) for r in _rules(workspace)]


@router.post("{slug}/rules", response={201: RuleDetailOut},
             summary="Create a rule with its first version (a draft)")
def create_rule(request, slug: str, body: RuleIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule = services.create_rule(workspace, actor_of(request), body.name, body.formula,
                                body.description, body.english, body.counting or None)
    return Status(201, _rule_out(_rule(workspace, rule.id), approved_numbers(workspace),
                                 detail=True))


@router.get("{slug}/rules/{rule_id}", response=RuleDetailOut)
def get_rule(request, slug: str, rule_id: Id):
    workspace = workspace_for(request, slug)
    return _rule_out(_rule(workspace, rule_id), approved_numbers(workspace), detail=True)


@router.patch("{slug}/rules/{rule_id}", response=RuleDetailOut,
              summary="Rename a rule or change its description")
def update_rule(request, slug: str, rule_id: Id, body: RulePatch):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule = services.update_rule(_rule(workspace, rule_id), actor_of(request), body.name,
                                body.description)
    return _rule_out(_rule(workspace, rule.id), approved_numbers(workspace), detail=True)


@router.get("{slug}/rules/{rule_id}/versions", response=list[VersionOut])
def list_versions(request, slug: str, rule_id: Id):
    workspace = workspace_for(request, slug)
    return [_version_out(v) for v in _versions(_rule(workspace, rule_id))]


@router.post("{slug}/rules/{rule_id}/versions", response={201: VersionOut},
             summary="Start a new version (a draft; copies the latest formula if none given)")
def create_version(request, slug: str, rule_id: Id, body: VersionIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    version = services.new_version(_rule(workspace, rule_id), actor_of(request), body.formula,
                                   body.english, body.counting or None)
    return Status(201, _version_out(_version(workspace, rule_id, version.number)))


@router.get("{slug}/rules/{rule_id}/versions/{number}", response=VersionOut)
def get_version(request, slug: str, rule_id: Id, number: Id):
    workspace = workspace_for(request, slug)
    return _version_out(_version(workspace, rule_id, number))


@router.patch("{slug}/rules/{rule_id}/versions/{number}", response=VersionOut,
              summary="Edit a draft")
def update_version(request, slug: str, rule_id: Id, number: Id, body: VersionPatch):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    services.update_draft(_version(workspace, rule_id, number), actor_of(request), body.formula,
                          body.english, body.counting or None)
    return _version_out(_version(workspace, rule_id, number))


@router.post("{slug}/rules/{rule_id}/versions/{number}/submit", response=VersionOut,
             summary="Submit a draft for review (its formula must parse and compile)",
             description="A formula with warnings (formulas/check) needs an acknowledgement; "
                         "without one the answer is 400 with the warnings in details.")
def submit_version(request, slug: str, rule_id: Id, number: Id,
                   body: SubmitIn | None = None):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    services.submit_for_review(_version(workspace, rule_id, number), actor_of(request),
                               body.acknowledgement if body is not None else "")
    return _version_out(_version(workspace, rule_id, number))


@router.post("{slug}/rules/{rule_id}/versions/{number}/approve", response=VersionOut,
             summary="Approve a version in review (reviewers; never the version's author)")
def approve_version(request, slug: str, rule_id: Id, number: Id, body: VersionDecisionIn):
    workspace = workspace_for(request, slug, Role.REVIEWER)
    services.approve(_version(workspace, rule_id, number), actor_of(request), body.comment)
    return _version_out(_version(workspace, rule_id, number))


@router.post("{slug}/rules/{rule_id}/versions/{number}/reject", response=VersionOut,
             summary="Reject a version in review, saying why (reviewers; not the author)")
def reject_version(request, slug: str, rule_id: Id, number: Id, body: VersionDecisionIn):
    workspace = workspace_for(request, slug, Role.REVIEWER)
    services.reject(_version(workspace, rule_id, number), actor_of(request), body.comment)
    return _version_out(_version(workspace, rule_id, number))


# ---------------------------------------------------------------------------------------------
# Rule sets

@router.get("{slug}/rule-sets", response=list[RuleSetOut])
def list_rule_sets(request, slug: str):
    workspace = workspace_for(request, slug)
    approved = approved_numbers(workspace)
    return [_rule_set_out(s, approved) for s in RuleSet.objects.filter(workspace=workspace)]


@router.post("{slug}/rule-sets", response={201: RuleSetOut})
def create_rule_set(request, slug: str, body: RuleSetIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule_set = services.create_rule_set(workspace, actor_of(request), body.name,
                                        body.description, body.rule_ids, body.live)
    return Status(201, _rule_set_out(rule_set))


@router.get("{slug}/rule-sets/{rule_set_id}", response=RuleSetOut)
def get_rule_set(request, slug: str, rule_set_id: Id):
    workspace = workspace_for(request, slug)
    return _rule_set_out(_rule_set(workspace, rule_set_id))


@router.patch("{slug}/rule-sets/{rule_set_id}", response=RuleSetOut,
              summary="Rename a rule set, change its description, or mark it live")
def update_rule_set(request, slug: str, rule_set_id: Id, body: RuleSetPatch):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule_set = _rule_set(workspace, rule_set_id)
    actor = actor_of(request)
    rule_set = services.update_rule_set(rule_set, actor, body.name, body.description)
    if body.live is not None:
        rule_set = services.set_live(rule_set, actor, body.live)
    return _rule_set_out(rule_set)


@router.put("{slug}/rule-sets/{rule_set_id}/rules", response=RuleSetOut,
            summary="Replace the rule set's rules")
def set_rule_set_rules(request, slug: str, rule_set_id: Id, body: RuleIdsIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule_set = services.set_rules(_rule_set(workspace, rule_set_id), actor_of(request),
                                  body.rule_ids)
    return _rule_set_out(rule_set)


@router.delete("{slug}/rule-sets/{rule_set_id}", response={204: None})
def delete_rule_set(request, slug: str, rule_set_id: Id):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    services.delete_rule_set(_rule_set(workspace, rule_set_id), actor_of(request))
    return Status(204, None)


# ---------------------------------------------------------------------------------------------
# Labelers

@router.get("{slug}/labelers", response=list[LabelerOut])
def list_labelers(request, slug: str):
    workspace = workspace_for(request, slug)
    return [_labeler_out(l) for l in Labeler.objects.filter(workspace=workspace)]


@router.post("{slug}/labelers", response={201: LabelerOut},
             summary="Declare a labeler (errors name the field at fault)")
def create_labeler(request, slug: str, body: LabelerIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    labeler = services.create_labeler(workspace, actor_of(request), body.atom, body.kind,
                                      body.config, body.description, body.enabled)
    return Status(201, _labeler_out(labeler))


@router.get("{slug}/labelers/{labeler_id}", response=LabelerOut)
def get_labeler(request, slug: str, labeler_id: Id):
    workspace = workspace_for(request, slug)
    return _labeler_out(_labeler(workspace, labeler_id))


@router.patch("{slug}/labelers/{labeler_id}", response=LabelerOut)
def update_labeler(request, slug: str, labeler_id: Id, body: LabelerPatch):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    labeler = services.update_labeler(_labeler(workspace, labeler_id), actor_of(request),
                                      body.atom, body.kind, body.config, body.description,
                                      body.enabled)
    return _labeler_out(labeler)


@router.delete("{slug}/labelers/{labeler_id}", response={204: None})
def delete_labeler(request, slug: str, labeler_id: Id):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    services.delete_labeler(_labeler(workspace, labeler_id), actor_of(request))
    return Status(204, None)


# ---------------------------------------------------------------------------------------------
# The editor's live feedback

@router.post("{slug}/formulas/check", response=FormulaCheckOut,
             summary="Parse and compile a formula; store nothing",
             description="Answers 200 either way: the canonical text, its atoms and whether "
                         "anything produces them, or the error with its line, column and what "
                         "was expected there.")
def check_formula(request, slug: str, body: FormulaCheckIn):
    workspace = workspace_for(request, slug)
    empty = {"ok": False, "formula": None, "unicode": None, "atoms": [], "comparisons": [],
             "paths": [], "warnings": [], "instance_level": None}
    try:
        formula = parse(body.text)
        compiled = compile_rule("formula", formula)
    except FormulaSyntaxError as exc:
        return {**empty, "error": services.formula_error(exc)}
    except RuleError as exc:
        # It parsed: show what it reads (and what nothing produces) alongside the error.
        formula = parse(body.text)
        known = vocabulary_for(workspace)
        return {**empty, **reads_table(formula, known), "formula": to_text(formula),
                "unicode": to_text(formula, unicode=True),
                "warnings": formula_warnings(formula, known, with_review=False),
                "error": services.formula_error(exc)}
    known = vocabulary_for(workspace)
    return {"ok": True, "formula": to_text(formula), "unicode": to_text(formula, unicode=True),
            **reads_table(formula, known), "warnings": formula_warnings(formula, known),
            "instance_level": compiled.instance_level, "error": None,
            "flags": formula_flags(workspace, formula)}
