"""A rule set's domain predicates for the risk model (docs/guard-models.md): reading them,
replacing them (audit-logged, and a relearn asked for after the commit when the rule set is
live), and the list the model of the live rules is learned with."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from studio.errors import PermissionDenied, ServiceError
from studio.risk.predicates import Predicate, PredicateError, predicates_from_json
from studio.rules.models import RuleSet
from studio.rules.services import roles_of
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Role, Workspace
from studio.workspaces.services import record

from . import learning
from .models import LearnedRiskModel, ModelPredicates, ModelStatus

log = logging.getLogger(__name__)

EDITORS = (Role.AUTHOR, Role.ADMIN)


def predicates_of(ruleset: RuleSet) -> tuple[Predicate, ...]:
    found = ModelPredicates.objects.filter(ruleset=ruleset).values_list("predicates",
                                                                        flat=True).first()
    return predicates_from_json(found or [])


def live_predicates(workspace: Workspace) -> tuple[Predicate, ...]:
    return learning.live_predicates(workspace)


def set_predicates(ruleset: RuleSet, data: Any, actor=None) -> tuple[Predicate, ...]:
    """Replace the rule set's predicates (authors and admins); a list that does not read is
    refused with the item and field named (422).  When they change and the rule set is live,
    a model is asked for again after the commit."""
    workspace = ruleset.workspace
    if not set(EDITORS) & roles_of(workspace, actor):
        raise PermissionDenied("only rule authors and administrators choose the model's "
                               "predicates")
    try:
        predicates = predicates_from_json(data)
    except PredicateError as exc:
        raise ServiceError(exc.message, field=exc.field, status=422) from None
    stored = [p.to_json() for p in predicates]
    with transaction.atomic():
        before = predicates_of(ruleset)
        if before == predicates:
            return predicates
        ModelPredicates.objects.update_or_create(
            ruleset=ruleset, defaults={"predicates": stored,
                                       "updated_by": acting_user(actor)})
        record(workspace, actor, LogAction.GUARD_PREDICATES_SET, ruleset,
               ruleset=ruleset.name, predicates=stored,
               added=[p.name for p in predicates if p not in before],
               removed=[p.name for p in before if p not in predicates])
        if ruleset.live:
            transaction.on_commit(lambda: _relearn(workspace, actor))
    return predicates


def _relearn(workspace: Workspace, actor) -> None:
    try:
        learning.request_model(workspace, actor, "the model's predicates changed", again=True)
    except learning.NothingToLearn:
        pass
    except Exception:  # noqa: BLE001 - the change stands; the page offers learning
        log.exception("asking for a risk model after the predicates of workspace %s changed",
                      workspace.pk)


def add_predicate(ruleset: RuleSet, data: Any, actor=None) -> tuple[Predicate, ...]:
    """Add one predicate (as data) to the rule set's list."""
    try:
        found = Predicate.from_json(data, "predicate")
    except PredicateError as exc:
        raise ServiceError(exc.message, field=exc.field, status=422) from None
    now = predicates_of(ruleset)
    if found in now:
        return now
    return set_predicates(ruleset, [p.to_json() for p in (*now, found)], actor)


def remove_predicate(ruleset: RuleSet, name: str, actor=None) -> tuple[Predicate, ...]:
    """Remove the predicate named ``name`` (``Predicate.name``) from the rule set's list."""
    now = predicates_of(ruleset)
    if not any(p.name == name for p in now):
        raise ServiceError(f"the rule set has no predicate {name!r}", field="name", status=404)
    return set_predicates(ruleset, [p.to_json() for p in now if p.name != name], actor)


def newest_ready(workspace: Workspace) -> LearnedRiskModel | None:
    """The newest ready model of the workspace (its stored model not read)."""
    return (LearnedRiskModel.objects.filter(workspace=workspace, status=ModelStatus.READY)
            .defer("model").order_by("-finished_at", "-id").first())


def model_summary(row: LearnedRiskModel | None) -> dict | None:
    """What the API and the page say of a model: its record, predicates, alarm quality and the
    predicates proposed from its sessions."""
    if row is None:
        return None
    return {"id": row.pk, "status": row.status, "sessions": row.sessions, "events": row.events,
            "states": row.states, "finished_at": row.finished_at,
            "versions": learning.key_of(row.versions), "predicates": row.predicates or [],
            "quality": row.quality, "proposals": row.proposals or []}
