"""Review evidence: a rule's test cases, the impact of a version on stored sessions, and the
comparison of two audit runs.

Reads need membership; writing cases needs the author role; starting an impact check needs the
author or the reviewer role.  A case that does not parse, or names an atom or path the rule does
not read, is refused with 422 naming the step and field (``"field": "steps[2].atoms"``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from studio.audits.models import AuditRun
from studio.boundary import Id, Text
from studio.errors import PermissionDenied, ServiceError
from studio.logic.cases import parse_table
from studio.rules.models import Rule, RuleVersion
from studio.workspaces.acting import actor_of, workspace_for
from studio.workspaces.models import Role

from . import compare, impact, services
from .models import RuleCase

router = Router(tags=["review evidence"])
STEP_MAX = 2**31 - 1
WITNESSES_SHOWN = 50  # sessions of an impact answer given both witnesses (?witnesses=true)


class CaseOut(Schema):
    id: int
    name: str
    expect: Literal["violate", "comply"]
    at_step: int | None
    steps: list[dict[str, Any]]
    source: dict[str, Any]
    created_by: str | None
    created_at: datetime
    changes: list[dict[str, Any]] = Field(description="every change made to the case")
    result: dict[str, Any] | None = Field(
        description="the case run against the version asked for (the latest by default): "
                    "passed, verdict (complied or violated; verdict_was: the old name, "
                    "deprecated), detected steps, differs_at and a message")


class SessionRange(Schema):
    session: Text | None = Field(None, max_length=300,
                                 description="the session's name, as the sessions list shows it")
    session_id: Id | None = Field(None, description="or its internal id")
    from_step: int | None = Field(None, ge=0, le=STEP_MAX)
    to_step: int | None = Field(None, ge=0, le=STEP_MAX)


class TraceRef(Schema):
    version: Id
    which: Literal["satisfying", "violating"]


class CaseIn(Schema):
    name: Text = Field("", max_length=services.NAME_MAX)
    expect: Text = Field("violate", description="violate or comply")
    at_step: int | None = Field(None, ge=0, le=STEP_MAX,
                                description="must violate: the step where the first "
                                            "violation is detected")
    steps: Any = Field(None, description='[{"atoms": [...], "data": {path: value}}, ...]')
    table: Text | None = Field(None, max_length=20_000,
                               description="steps as text, one line per step: atoms and "
                                           "path=value, separated by commas")
    from_session: SessionRange | None = None
    from_trace: TraceRef | None = Field(None, description="promote a review aid's shortest "
                                                          "trace (its expectation follows)")


class CasePatch(Schema):
    name: Text | None = Field(None, max_length=services.NAME_MAX)
    expect: Text | None = None
    at_step: int | None = Field(None, ge=0, le=STEP_MAX)
    clear_at_step: bool = False
    steps: Any = None
    table: Text | None = Field(None, max_length=20_000)
    reason: Text = Field("", max_length=2000, description="why the case changes (recorded)")


class ImpactIn(Schema):
    scope: Literal["all", "upload", "sample"] = "all"
    upload_id: Id | None = None
    sample_size: int | None = Field(None, ge=1, le=impact.SAMPLE_MAX)
    seed: int | None = Field(None, ge=0, le=2**63 - 1)


def _rule(workspace, rule_id: int) -> Rule:
    return get_object_or_404(Rule, workspace=workspace, id=rule_id)


def _version(rule: Rule, number: int | None) -> RuleVersion:
    versions = rule.versions.select_related("rule")
    if number is None:
        return versions.order_by("-number").first()
    return get_object_or_404(versions, number=number)


def _case_out(case: RuleCase, result: dict | None) -> dict:
    return {"id": case.id, "name": case.name, "expect": case.expect, "at_step": case.at_step,
            "steps": case.steps, "source": case.source,
            "created_by": case.created_by.get_username() if case.created_by else None,
            "created_at": case.created_at, "changes": case.changes, "result": result}


def _cases_out(rule: Rule, version: RuleVersion | None) -> list[dict]:
    results = ({r["case_id"]: r for r in services.check_version(version)}
               if version is not None else {})
    return [_case_out(c, results.get(c.id))
            for c in RuleCase.objects.filter(rule=rule).select_related("created_by")]


@router.get("{slug}/rules/{rule_id}/cases", response=list[CaseOut],
            summary="The rule's test cases, each run against a version (the latest by default)")
def list_cases(request, slug: str, rule_id: Id, version: Id | None = None):
    workspace = workspace_for(request, slug)
    rule = _rule(workspace, rule_id)
    return _cases_out(rule, _version(rule, version))


@router.post("{slug}/rules/{rule_id}/cases", response={201: CaseOut},
             summary="Add a test case: steps written by hand, a stored session's step range, "
                     "or a review aid's shortest trace")
def add_case(request, slug: str, rule_id: Id, body: CaseIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule = _rule(workspace, rule_id)
    actor = actor_of(request)
    if body.from_trace is not None:
        case = services.case_from_trace(_version(rule, body.from_trace.version), actor,
                                        body.from_trace.which)
    elif body.from_session is not None:
        taken = body.from_session
        if (taken.session is None) == (taken.session_id is None):
            raise ServiceError("give either the session's name (session) or its id (session_id)",
                               field="from_session.session", status=422)
        session_id = (taken.session_id if taken.session is None
                      else services.session_named(workspace, taken.session).id)
        case = services.case_from_session(rule, actor, session_id,
                                          body.from_session.from_step,
                                          body.from_session.to_step, body.expect, body.name,
                                          body.at_step)
    else:
        steps = parse_table(body.table) if body.table is not None else body.steps
        case = services.add_case(rule, actor, body.name, body.expect, steps, body.at_step)
    latest = _version(rule, None)
    result = next((r for r in services.check_version(latest) if r["case_id"] == case.id), None)
    return Status(201, _case_out(case, result))


@router.patch("{slug}/rules/{rule_id}/cases/{case_id}", response=CaseOut,
              summary="Change a test case (recorded on the case and in the audit log)")
def change_case(request, slug: str, rule_id: Id, case_id: Id, body: CasePatch):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule = _rule(workspace, rule_id)
    case = get_object_or_404(RuleCase, rule=rule, id=case_id)
    steps = parse_table(body.table) if body.table is not None else body.steps
    at_step: Any = None if body.clear_at_step else (body.at_step if body.at_step is not None
                                                      else "keep")
    case = services.change_case(case, actor_of(request), body.name, body.expect, steps,
                                at_step, body.reason)
    latest = _version(rule, None)
    result = next((r for r in services.check_version(latest) if r["case_id"] == case.id), None)
    return _case_out(case, result)


@router.delete("{slug}/rules/{rule_id}/cases/{case_id}", response={204: None},
               summary="Delete a test case (recorded in the audit log)")
def delete_case(request, slug: str, rule_id: Id, case_id: Id):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    rule = _rule(workspace, rule_id)
    services.delete_case(get_object_or_404(RuleCase, rule=rule, id=case_id), actor_of(request))
    return Status(204, None)


# ---------------------------------------------------------------------------------------------
# The impact of a version

def _author_or_reviewer(request, slug: str):
    workspace = workspace_for(request, slug)
    if not actor_of(request).roles_in(workspace) & {Role.AUTHOR, Role.REVIEWER}:
        raise PermissionDenied(f"this needs the author or the reviewer role in workspace "
                               f"{slug!r}")
    return workspace


@router.post("{slug}/rules/{rule_id}/versions/{number}/impact", response={202: dict[str, Any]},
             summary="What would change: audit stored sessions with this version beside the "
                     "approved one (background tasks; poll the GET for progress)")
def start_impact(request, slug: str, rule_id: Id, number: Id, body: ImpactIn | None = None):
    workspace = _author_or_reviewer(request, slug)
    body = body or ImpactIn()
    version = _version(_rule(workspace, rule_id), number)
    check = impact.start_impact(version, actor_of(request), body.scope, body.upload_id,
                                body.sample_size, body.seed)
    return Status(202, impact.impact_result(check))


@router.get("{slug}/rules/{rule_id}/versions/{number}/impact", response=dict[str, Any],
            summary="The latest impact check of a version: progress, then the sessions that "
                    "change (with both versions' witnesses of the first 50: ?witnesses=true)")
def get_impact(request, slug: str, rule_id: Id, number: Id, witnesses: bool = False):
    workspace = workspace_for(request, slug)
    version = _version(_rule(workspace, rule_id), number)
    check = impact.latest_check(version)
    if check is None:
        raise ServiceError(f"version {number} has no impact check yet", status=404)
    result = impact.impact_result(check)
    if result["summary"] is not None and witnesses:
        # Both versions' witnesses of the first sessions listed, as the page shows them.
        listed = result["summary"]["sessions_list"]
        result["summary"] = {**result["summary"], "sessions_list": [
            {**c, "witnesses": impact.witnesses(c)} if i < WITNESSES_SHOWN else c
            for i, c in enumerate(listed)]}
    return result


# ---------------------------------------------------------------------------------------------
# Comparing two runs

def _runs(workspace, before: int, after: int) -> tuple[AuditRun, AuditRun]:
    runs = AuditRun.objects.filter(workspace=workspace)
    return get_object_or_404(runs, id=before), get_object_or_404(runs, id=after)


@router.get("{slug}/audits/{before_id}/compare/{after_id}", response=dict[str, Any],
            summary="Two audit runs compared per rule: sessions whose verdict changed, new and "
                    "disappeared violations (?format=csv for CSV)")
def compare_runs(request, slug: str, before_id: Id, after_id: Id,
                 format: Literal["json", "csv"] = "json"):
    workspace = workspace_for(request, slug)
    before, after = _runs(workspace, before_id, after_id)
    rules = compare.compare_runs(before, after)
    if format == "csv":
        response = HttpResponse(compare.comparison_csv(rules), content_type="text/csv")
        response["Content-Disposition"] = (f'attachment; filename="audit-{before.id}-vs-'
                                           f'{after.id}.csv"')
        return response
    return {"before": before.id, "after": after.id, "rules": [r.as_dict() for r in rules],
            "session_url": f"/w/{workspace.slug}/sessions/{{session_id}}/?run={after.id}"
                           "&step={step}"}
