"""Writes for rules, their versions and reviews, rule sets and labelers.

Each service is one transaction and appends what it did to the workspace's audit log.  Callers
(the API, views, scripts) resolve the workspace and check the caller's role; the services enforce
the domain's own rules: which state a version must be in, that a formula parses and compiles,
that nobody reviews their own version, that labelers can actually run.

``actor`` is a ``workspaces.acting.Actor`` (a person or a machine token), a user, or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from studio.boundary import check_document
from studio.errors import Conflict, PermissionDenied, ServiceError
from studio.labeling import LabelerConfigError, make_labeler
from studio.logic.formula import Formula
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.progression import is_invariant
from studio.monitor import RuleError, compile_rule
from studio.monitor.verdicts import CountingError, check_counting, default_counting
from studio.traces.models import Upload, UploadStatus
from studio.workspaces.acting import acting_token, acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Membership, Role, Workspace
from studio.workspaces.services import record

from .evidence import evidence
from .models import Labeler, Rule, RuleSet, RuleVersion, VersionStatus
from .sampling import formula_flags
from .vocabulary import formula_warnings, vocabulary_for, warnings_summary

NAME_MAX = 100
ATOM_MAX = 200
ACKNOWLEDGEMENT_MAX = 2000


# ---------------------------------------------------------------------------------------------
# Who is acting

def roles_of(workspace: Workspace, actor) -> set[str]:
    if hasattr(actor, "roles_in"):
        return actor.roles_in(workspace) or set()
    user = acting_user(actor)
    if user is None:
        return set()
    return set(Membership.objects.filter(workspace=workspace, user=user)
               .values_list("role", flat=True))


def _same_person(version: RuleVersion, actor) -> bool:
    """Whether ``actor`` wrote ``version``, as a person or through the same token."""
    user, token = acting_user(actor), acting_token(actor)
    if user is not None and version.author_id is not None and version.author_id == user.pk:
        return True
    return token is not None and version.author_token_id == token.pk


# ---------------------------------------------------------------------------------------------
# Formulas

def formula_error(exc: FormulaSyntaxError | RuleError) -> dict:
    """The structured error the editor marks: where, what, and what was expected there."""
    if isinstance(exc, FormulaSyntaxError):
        return {"line": exc.line, "column": exc.column, "message": exc.message,
                "expected": list(exc.expected)}
    # Compilation errors concern the formula as a whole (the parser keeps no positions).
    message = re.sub(r"^rule '.*?': ", "", str(exc), count=1)
    return {"line": 1, "column": 1, "message": message,
            "expected": ["only atoms, data atoms and past operators inside a past operator"]}


def compile_formula(text: str, name: str = "formula") -> Formula:
    """Parse and compile ``text``; a ServiceError (422, field ``formula``) with the line, the
    column and what was expected when it does not."""
    try:
        formula = parse(text)
        compile_rule(name, formula)
    except (FormulaSyntaxError, RuleError) as exc:
        details = formula_error(exc)
        where = (f"line {details['line']}, column {details['column']}: "
                 if isinstance(exc, FormulaSyntaxError) else "")
        raise ServiceError(f"the formula is not valid: {where}{details['message']}",
                           field="formula", status=422, details=details) from None
    return formula


# ---------------------------------------------------------------------------------------------
# How violations are counted (studio.monitor.verdicts)

def _is_globally(formula: Formula) -> bool:
    return is_invariant(formula)


def resolve_counting(formula: Formula, counting: str | None) -> str:
    """The counting a version of ``formula`` stores: ``counting``, or the default for the
    formula's form when None; a 422 naming the field ``counting`` when it does not fit."""
    try:
        return check_counting(counting, _is_globally(formula))
    except CountingError as exc:
        raise ServiceError(str(exc), field="counting", status=422) from None


def _carried_counting(old_formula: str, old_counting: str, new_formula: Formula) -> str:
    """The counting a new formula inherits when none is given: the new form's default when the
    old counting was the old form's default (nobody chose it), else the old counting when it
    still fits (``per_instance`` needs ``G phi``), else the new form's default."""
    globally = _is_globally(new_formula)
    try:
        was_default = old_counting == default_counting(_is_globally(parse(old_formula)))
    except FormulaSyntaxError:
        was_default = True
    if not old_counting or was_default:
        return default_counting(globally)
    try:
        return check_counting(old_counting, globally)
    except CountingError:
        return default_counting(globally)


# ---------------------------------------------------------------------------------------------
# Rules and versions

def _clean_name(name: str, what: str, limit: int = NAME_MAX) -> str:
    cleaned = (name or "").strip()
    if not cleaned:
        raise ServiceError(f"a {what} needs a name", field="name", status=422)
    if len(cleaned) > limit:
        raise ServiceError(f"a {what} name has at most {limit} characters", field="name",
                           status=422)
    return cleaned


def _locked_version(version: RuleVersion) -> RuleVersion:
    # Two reviewers (or a reviewer and the author) acting at once: the second sees the first's
    # change and is refused, rather than both succeeding.
    return RuleVersion.objects.select_for_update().select_related("rule").get(pk=version.pk)


def _version_label(version: RuleVersion) -> str:
    return f"version {version.number} of rule {version.rule.name!r}"


@transaction.atomic
def create_rule(workspace: Workspace, actor, name: str, formula: str, description: str = "",
                english: str = "", counting: str | None = None) -> Rule:
    """A new rule with its first version, a draft; ``counting`` None: the formula's default."""
    name = _clean_name(name, "rule")
    counting = resolve_counting(compile_formula(formula, name), counting)
    if Rule.objects.filter(workspace=workspace, name=name).exists():
        raise Conflict(f"workspace {workspace.slug!r} already has a rule named {name!r}",
                       field="name")
    try:
        with transaction.atomic():
            rule = Rule.objects.create(workspace=workspace, name=name, description=description,
                                       created_by=acting_user(actor))
    except IntegrityError:  # created concurrently under the same name
        raise Conflict(f"workspace {workspace.slug!r} already has a rule named {name!r}",
                       field="name") from None
    version = RuleVersion.objects.create(rule=rule, number=1, formula=formula, english=english,
                                         counting=counting, author=acting_user(actor),
                                         author_token=acting_token(actor))
    record(workspace, actor, LogAction.RULE_CREATED, rule, name=name)
    record(workspace, actor, LogAction.RULE_VERSION_CREATED, version, rule=name, number=1,
           formula=formula, counting=counting)
    return rule


@transaction.atomic
def update_rule(rule: Rule, actor, name: str | None = None,
                description: str | None = None) -> Rule:
    rule = Rule.objects.select_for_update().get(pk=rule.pk)
    changes: dict[str, Any] = {}
    if name is not None:
        name = _clean_name(name, "rule")
        if name != rule.name:
            if Rule.objects.filter(workspace_id=rule.workspace_id, name=name).exists():
                raise Conflict(f"this workspace already has a rule named {name!r}", field="name")
            changes["name"] = [rule.name, name]
            rule.name = name
    if description is not None and description != rule.description:
        changes["description"] = True
        rule.description = description
    if changes:
        rule.save(update_fields=["name", "description"])
        record(rule.workspace, actor, LogAction.RULE_UPDATED, rule, **changes)
    return rule


@transaction.atomic
def new_version(rule: Rule, actor, formula: str | None = None,
                english: str | None = None, counting: str | None = None) -> RuleVersion:
    """The next version of ``rule``, a draft; without a formula it copies the latest version's.
    Without a counting it carries the latest version's (``_carried_counting``): changing only
    the counting of an approved version is a new version with the same formula."""
    rule = Rule.objects.select_for_update().get(pk=rule.pk)  # serialises version numbering
    latest = rule.versions.order_by("-number").first()
    if latest is not None and latest.status == VersionStatus.DRAFT:
        raise Conflict(f"{_version_label(latest)} is still a draft: edit it instead of "
                       "starting another", field="number")
    if formula is None:
        if latest is None:
            raise ServiceError("a formula is required", field="formula", status=422)
        formula = latest.formula
        if english is None:
            english = latest.english
    compiled = compile_formula(formula, rule.name)
    if counting is None and latest is not None:
        counting = _carried_counting(latest.formula, latest.counting, compiled)
    counting = resolve_counting(compiled, counting)
    number = (rule.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    version = RuleVersion.objects.create(rule=rule, number=number, formula=formula,
                                         english=english or "", counting=counting,
                                         author=acting_user(actor),
                                         author_token=acting_token(actor))
    record(rule.workspace, actor, LogAction.RULE_VERSION_CREATED, version, rule=rule.name,
           number=number, formula=formula, counting=counting)
    _check_cases(version, actor)
    return version


def _check_cases(version: RuleVersion, actor) -> None:
    # Every version saved is checked against its rule's test cases (studio.evidence).
    evidence().record_check(version, actor)


@transaction.atomic
def update_draft(version: RuleVersion, actor, formula: str | None = None,
                 english: str | None = None, counting: str | None = None) -> RuleVersion:
    """Edit a draft in place.  ``counting`` None keeps the draft's, unless the new formula
    changes its form: a default follows the form, and ``per_instance`` on a formula no longer
    of the form ``G phi`` falls back to the default (the change is in the answer and the log)."""
    version = _locked_version(version)
    if version.status != VersionStatus.DRAFT:
        raise Conflict(f"{_version_label(version)} is {version.get_status_display().lower()}; "
                       "only drafts are edited (start a new version instead)", field="status")
    changes: dict[str, Any] = {}
    if formula is not None and formula != version.formula:
        compiled = compile_formula(formula, version.rule.name)
        new_counting = (resolve_counting(compiled, counting) if counting is not None else
                        _carried_counting(version.formula, version.counting, compiled))
        changes["formula"] = [version.formula, formula]
        version.formula = formula
    elif counting is not None:
        new_counting = resolve_counting(parse(version.formula), counting)
    else:
        new_counting = version.counting
    if new_counting != version.counting:
        changes["counting"] = [version.counting, new_counting]
        version.counting = new_counting
    if english is not None and english != version.english:
        changes["english"] = True
        version.english = english
    if changes:
        version.save(update_fields=["formula", "english", "counting"])
        record(version.rule.workspace, actor, LogAction.RULE_VERSION_UPDATED, version,
               rule=version.rule.name, number=version.number, **changes)
        if "formula" in changes or "counting" in changes:
            _check_cases(version, actor)
    return version


@transaction.atomic
def submit_for_review(version: RuleVersion, actor, acknowledgement: str = "") -> RuleVersion:
    """draft -> in review.  The formula must parse and compile; it is frozen from now on.

    A formula with warnings (``studio.rules.vocabulary.formula_warnings``: atoms nothing in the
    workspace produces, paths no event has, mismatched comparisons, vacuity...) is submitted
    only with an ``acknowledgement`` the author wrote ("a labeler for `x` will be added"); both
    are recorded with the version for its reviewer.  Without one: 400 naming the warnings."""
    version = _locked_version(version)
    if version.status != VersionStatus.DRAFT:
        raise Conflict(f"{_version_label(version)} is {version.get_status_display().lower()}; "
                       "only drafts are submitted for review", field="status")
    formula = compile_formula(version.formula, version.rule.name)
    evidence().refuse_failing(version)  # failing one of its rule's test cases: not reviewed
    warnings = formula_warnings(formula, vocabulary_for(version.rule.workspace))
    acknowledgement = (acknowledgement or "").strip()
    if warnings and not acknowledgement:
        raise ServiceError(
            f"{_version_label(version)} has {len(warnings)} warning"
            f"{'' if len(warnings) == 1 else 's'} ({warnings_summary(warnings)}): say in "
            "the acknowledgement why it should be reviewed as it is, e.g. \"a labeler for "
            "`x` will be added\"", field="acknowledgement", status=400,
            details={"warnings": warnings})
    if len(acknowledgement) > ACKNOWLEDGEMENT_MAX:
        raise ServiceError(f"an acknowledgement has at most {ACKNOWLEDGEMENT_MAX} characters",
                           field="acknowledgement", status=422)
    version.status = VersionStatus.IN_REVIEW
    version.submitted_at = timezone.now()
    version.submitted_warnings = warnings
    version.acknowledgement = acknowledgement if warnings else ""
    version.save(update_fields=["status", "submitted_at", "submitted_warnings",
                                "acknowledgement"])
    record(version.rule.workspace, actor, LogAction.RULE_VERSION_SUBMITTED, version,
           rule=version.rule.name, number=version.number,
           warnings=[w["code"] + " " + w["subject"] for w in warnings],
           acknowledgement=version.acknowledgement)
    return version


def _review(version: RuleVersion, actor, outcome: str, comment: str) -> RuleVersion:
    version = _locked_version(version)
    workspace = version.rule.workspace
    verb = "approve" if outcome == VersionStatus.APPROVED else "reject"
    if Role.REVIEWER not in roles_of(workspace, actor):
        raise PermissionDenied(f"only members with the reviewer role {verb} rule versions")
    if _same_person(version, actor):
        raise PermissionDenied(f"you wrote {_version_label(version)}: another reviewer must "
                               f"{verb} it")
    if version.status != VersionStatus.IN_REVIEW:
        raise Conflict(f"{_version_label(version)} is {version.get_status_display().lower()}; "
                       "only versions in review are approved or rejected", field="status")
    now = timezone.now()
    version.status = outcome
    version.reviewer = acting_user(actor)
    version.reviewer_token = acting_token(actor)
    version.reviewed_at = now
    version.review_comment = comment
    version.save(update_fields=["status", "reviewer", "reviewer_token", "reviewed_at",
                                "review_comment"])
    before_reviewer = {}
    if outcome == VersionStatus.APPROVED:
        # What the reviewer had before them: the test cases' outcome and what the version
        # changes on stored sessions (None: no impact check was run).
        cases = evidence()
        before_reviewer = {"cases": cases.summary(cases.cases(version)),
                           "impact": cases.impact_for_approval(version),
                           "flags": _flags_for_record(workspace, version)}
    # The log entry is the lasting record of who approved which version, and when (UTC).
    action = (LogAction.RULE_VERSION_APPROVED if outcome == VersionStatus.APPROVED
              else LogAction.RULE_VERSION_REJECTED)
    record(workspace, actor, action, version, rule=version.rule.name, rule_id=version.rule_id,
           number=version.number, formula=version.formula, comment=comment,
           reviewed_at=now.isoformat(), **before_reviewer)
    return version


def _flags_for_record(workspace, version: RuleVersion) -> dict:
    """What the approved version would flag on the newest stored sessions, as the review page
    showed it: the counts and the note (a version that would never fire says so)."""
    found = formula_flags(workspace, parse(version.formula))
    return {k: found[k] for k in ("flagged", "sampled", "fired", "kind", "note")}


@transaction.atomic
def approve(version: RuleVersion, actor, comment: str = "") -> RuleVersion:
    """in review -> approved, by a reviewer who did not write the version."""
    return _review(version, actor, VersionStatus.APPROVED, comment or "")


@transaction.atomic
def reject(version: RuleVersion, actor, comment: str) -> RuleVersion:
    """in review -> rejected, with the reason for the author."""
    if not (comment or "").strip():
        raise ServiceError("say why the version is rejected", field="comment", status=422)
    return _review(version, actor, VersionStatus.REJECTED, comment.strip())


# ---------------------------------------------------------------------------------------------
# Rule sets

def _rules_of(workspace: Workspace, rule_ids: Iterable[int]) -> list[Rule]:
    wanted = set(rule_ids)
    rules = list(Rule.objects.filter(workspace=workspace, id__in=wanted))
    missing = sorted(wanted - {r.id for r in rules})
    if missing:
        # Another workspace's rule reads exactly like one that does not exist.
        raise ServiceError(f"no rule with id {', '.join(map(str, missing))} in this workspace",
                           field="rule_ids", status=422)
    return rules


def _rule_set_name_taken(workspace_id: int, name: str, exclude: int | None = None) -> bool:
    return RuleSet.objects.filter(workspace_id=workspace_id, name=name).exclude(
        pk=exclude).exists()


@transaction.atomic
def create_rule_set(workspace: Workspace, actor, name: str, description: str = "",
                    rule_ids: Iterable[int] = (), live: bool = False) -> RuleSet:
    name = _clean_name(name, "rule set")
    rules = _rules_of(workspace, rule_ids)
    if _rule_set_name_taken(workspace.id, name):
        raise Conflict(f"workspace {workspace.slug!r} already has a rule set named {name!r}",
                       field="name")
    try:
        with transaction.atomic():
            rule_set = RuleSet.objects.create(workspace=workspace, name=name,
                                              description=description, live=live)
    except IntegrityError:
        raise Conflict(f"workspace {workspace.slug!r} already has a rule set named {name!r}",
                       field="name") from None
    rule_set.rules.set(rules)
    record(workspace, actor, LogAction.RULE_SET_CREATED, rule_set, name=name,
           rules=sorted(r.name for r in rules), live=live)
    return rule_set


@transaction.atomic
def update_rule_set(rule_set: RuleSet, actor, name: str | None = None,
                    description: str | None = None) -> RuleSet:
    """Rename it or change its description."""
    rule_set = RuleSet.objects.select_for_update().get(pk=rule_set.pk)
    changes: dict[str, Any] = {}
    if name is not None:
        name = _clean_name(name, "rule set")
        if name != rule_set.name:
            if _rule_set_name_taken(rule_set.workspace_id, name, exclude=rule_set.pk):
                raise Conflict(f"this workspace already has a rule set named {name!r}",
                               field="name")
            changes["name"] = [rule_set.name, name]
            rule_set.name = name
    if description is not None and description != rule_set.description:
        changes["description"] = True
        rule_set.description = description
    if changes:
        rule_set.save(update_fields=["name", "description"])
        record(rule_set.workspace, actor, LogAction.RULE_SET_UPDATED, rule_set, **changes)
    return rule_set


@transaction.atomic
def set_rules(rule_set: RuleSet, actor, rule_ids: Iterable[int]) -> RuleSet:
    """Replace the rule set's rules (ids of rules of the same workspace)."""
    rule_set = RuleSet.objects.select_for_update().get(pk=rule_set.pk)
    rules = _rules_of(rule_set.workspace, rule_ids)
    before = sorted(rule_set.rules.values_list("name", flat=True))
    after = sorted(r.name for r in rules)
    if before != after:
        rule_set.rules.set(rules)
        record(rule_set.workspace, actor, LogAction.RULE_SET_RULES_SET, rule_set,
               name=rule_set.name,
               before=before, after=after)
    return rule_set


def add_rule(rule_set: RuleSet, actor, rule: Rule) -> RuleSet:
    """``rule`` added to the rule set's rules (kept once; recorded as ``set_rules`` records)."""
    return set_rules(rule_set, actor, [*rule_set.rules.values_list("id", flat=True), rule.id])


@transaction.atomic
def set_live(rule_set: RuleSet, actor, live: bool) -> RuleSet:
    """Mark the rule set live (live sessions are monitored against the live sets) or not."""
    rule_set = RuleSet.objects.select_for_update().get(pk=rule_set.pk)
    if rule_set.live != live:
        rule_set.live = live
        rule_set.save(update_fields=["live"])
        record(rule_set.workspace, actor,
               LogAction.RULE_SET_LIVE if live else LogAction.RULE_SET_NOT_LIVE,
               rule_set, name=rule_set.name)
    return rule_set


@transaction.atomic
def delete_rule_set(rule_set: RuleSet, actor) -> None:
    # Audit runs keep their rule versions; their link to the set is cleared (SET_NULL).

    # Uploads still loading that asked to be audited with this set will not be: auditing them
    # with every rule instead would not be what was asked for.
    waiting = list(Upload.objects.select_for_update()
                   .filter(audit_rule_set=rule_set, audit_requested=True,
                           status__in=[UploadStatus.RECEIVED, UploadStatus.PARSING])
                   .values_list("pk", flat=True))
    Upload.objects.filter(pk__in=waiting).update(audit_requested=False)
    record(rule_set.workspace, actor, LogAction.RULE_SET_DELETED, rule_set, name=rule_set.name,
           audits_cancelled_for_uploads=waiting)
    rule_set.delete()


# ---------------------------------------------------------------------------------------------
# Labelers

def _config_field(field: str) -> str:
    return field if field in ("atom", "kind", "config") else f"config.{field}"


def validate_labeler(kind: str, atom: str, config: Any) -> str:
    """The cleaned atom, once ``make_labeler`` accepts the declaration; else a 422 naming the
    field at fault (``atom``, ``kind``, ``config`` or ``config.<setting>``)."""
    if isinstance(atom, str) and len(atom.strip()) > ATOM_MAX:
        raise ServiceError(f"an atom has at most {ATOM_MAX} characters", field="atom",
                           status=422)
    if isinstance(config, Mapping):
        check_document(dict(config), "config", finite=True)
    try:
        labeler = make_labeler(kind, atom, config)
    except LabelerConfigError as exc:
        raise ServiceError(exc.message, field=_config_field(exc.field), status=422) from None
    return labeler.atom


def _atom_taken(workspace_id: int, atom: str, exclude: int | None = None) -> bool:
    return Labeler.objects.filter(workspace_id=workspace_id, atom=atom).exclude(
        pk=exclude).exists()


@transaction.atomic
def create_labeler(workspace: Workspace, actor, atom: str, kind: str, config: Mapping,
                   description: str = "", enabled: bool = True) -> Labeler:
    atom = validate_labeler(kind, atom, config)
    if _atom_taken(workspace.id, atom):
        raise Conflict(f"a labeler already produces {atom!r} in this workspace", field="atom")
    try:
        with transaction.atomic():
            labeler = Labeler.objects.create(workspace=workspace, atom=atom, kind=kind,
                                             config=dict(config), description=description,
                                             enabled=enabled)
    except IntegrityError:
        raise Conflict(f"a labeler already produces {atom!r} in this workspace",
                       field="atom") from None
    record(workspace, actor, LogAction.LABELER_CREATED, labeler, atom=atom, kind=kind,
           config=labeler.config, enabled=enabled)
    return labeler


@transaction.atomic
def update_labeler(labeler: Labeler, actor, atom: str | None = None, kind: str | None = None,
                   config: Mapping | None = None, description: str | None = None,
                   enabled: bool | None = None) -> Labeler:
    """Change any part of a labeler; the result is validated as a whole."""
    labeler = Labeler.objects.select_for_update().get(pk=labeler.pk)
    new_kind = kind if kind is not None else labeler.kind
    new_config = dict(config) if config is not None else labeler.config
    new_atom = validate_labeler(new_kind, atom if atom is not None else labeler.atom, new_config)
    if new_atom != labeler.atom and _atom_taken(labeler.workspace_id, new_atom,
                                                exclude=labeler.pk):
        raise Conflict(f"a labeler already produces {new_atom!r} in this workspace",
                       field="atom")
    before = {"atom": labeler.atom, "kind": labeler.kind, "config": labeler.config,
              "enabled": labeler.enabled}
    labeler.atom, labeler.kind, labeler.config = new_atom, new_kind, new_config
    if description is not None:
        labeler.description = description
    if enabled is not None:
        labeler.enabled = enabled
    after = {"atom": labeler.atom, "kind": labeler.kind, "config": labeler.config,
             "enabled": labeler.enabled}
    labeler.save()
    changed = {key: [before[key], after[key]] for key in before if before[key] != after[key]}
    if changed or description is not None:
        record(labeler.workspace, actor, LogAction.LABELER_UPDATED, labeler, atom=labeler.atom,
               changes=changed)
    return labeler


@transaction.atomic
def delete_labeler(labeler: Labeler, actor) -> None:
    record(labeler.workspace, actor, LogAction.LABELER_DELETED, labeler, atom=labeler.atom,
           kind=labeler.kind, config=labeler.config)
    labeler.delete()
