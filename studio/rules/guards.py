"""Writes for the workspace's causal guards (CPL, paper 001).

Compliance staff declare a guard once; every multi-agent session whose choice events name it is
evaluated with it on the MSC page.  As in ``services``: one transaction per write, the author
role is required, and each write is appended to the workspace's audit log.  A guard whose CPL does
not parse is refused (422, field ``cpl``) with the line and column of the mistake.
"""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction

from studio.causal import CplSyntaxError, parse_cpl
from studio.errors import Conflict, PermissionDenied, ServiceError
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Role, Workspace
from studio.workspaces.services import record

from .models import CausalGuard
from .services import roles_of

NAME_MAX = 100
OWNER_MAX = 200
CPL_MAX = 10_000
# A choice event names its guard in data.choice, so the name has to be easy to type there.
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _require_author(workspace: Workspace, actor) -> None:
    if Role.AUTHOR not in roles_of(workspace, actor):
        raise PermissionDenied("only members with the author role declare, change or delete "
                               "causal guards")


def clean_name(name: str | None) -> str:
    cleaned = (name or "").strip()
    if not cleaned:
        raise ServiceError("a causal guard needs a name", field="name", status=422)
    if len(cleaned) > NAME_MAX:
        raise ServiceError(f"a causal guard name has at most {NAME_MAX} characters",
                           field="name", status=422)
    if not NAME_PATTERN.match(cleaned):
        raise ServiceError("a causal guard name is an identifier: a letter or _, then letters, "
                           "digits or _ (choice events name it in data.choice)",
                           field="name", status=422)
    return cleaned


def clean_cpl(text: str | None) -> str:
    """The guard's CPL text, parsed; a ServiceError with the position of a syntax error.  The
    text is parsed as given, so the line and column match what the person typed."""
    text = text or ""
    if not text.strip():
        raise ServiceError("a causal guard needs its CPL formula", field="cpl", status=422)
    if len(text) > CPL_MAX:
        raise ServiceError(f"a CPL formula has at most {CPL_MAX} characters", field="cpl",
                           status=422)
    try:
        parse_cpl(text)
    except CplSyntaxError as exc:
        raise ServiceError(f"the CPL formula is not valid: line {exc.line}, column "
                           f"{exc.column}: {exc.message}", field="cpl", status=422,
                           details={"line": exc.line, "column": exc.column,
                                    "message": exc.message,
                                    "expected": list(exc.expected)}) from None
    return text.strip()


def clean_owner(owner: str | None) -> str:
    cleaned = (owner or "").strip()
    if len(cleaned) > OWNER_MAX:
        raise ServiceError(f"a lifeline name has at most {OWNER_MAX} characters", field="owner",
                           status=422)
    if any(c in cleaned for c in "\r\n\t"):
        raise ServiceError("a lifeline name is one line", field="owner", status=422)
    return cleaned


def _taken(workspace_id: int, name: str, exclude: int | None = None) -> bool:
    return CausalGuard.objects.filter(workspace_id=workspace_id, name=name).exclude(
        pk=exclude).exists()


def _name_conflict(workspace: Workspace, name: str) -> Conflict:
    return Conflict(f"workspace {workspace.slug!r} already has a causal guard named {name!r}",
                    field="name")


@transaction.atomic
def create_guard(workspace: Workspace, actor, name: str, cpl: str, owner: str = "",
                 description: str = "") -> CausalGuard:
    _require_author(workspace, actor)
    name, cpl, owner = clean_name(name), clean_cpl(cpl), clean_owner(owner)
    if _taken(workspace.id, name):
        raise _name_conflict(workspace, name)
    try:
        with transaction.atomic():
            guard = CausalGuard.objects.create(workspace=workspace, name=name, cpl=cpl,
                                               owner=owner, description=description or "",
                                               created_by=acting_user(actor))
    except IntegrityError:  # declared concurrently under the same name
        raise _name_conflict(workspace, name) from None
    record(workspace, actor, LogAction.CAUSAL_GUARD_CREATED, guard, name=name, cpl=cpl, owner=owner)
    return guard


@transaction.atomic
def update_guard(guard: CausalGuard, actor, name: str | None = None, cpl: str | None = None,
                 owner: str | None = None, description: str | None = None) -> CausalGuard:
    """Change any part of a guard; the parts not given stay as they are."""
    guard = CausalGuard.objects.select_for_update().select_related("workspace").get(pk=guard.pk)
    workspace = guard.workspace
    _require_author(workspace, actor)
    before = {"name": guard.name, "cpl": guard.cpl, "owner": guard.owner,
              "description": guard.description}
    if name is not None:
        guard.name = clean_name(name)
        if guard.name != before["name"] and _taken(workspace.id, guard.name, exclude=guard.pk):
            raise _name_conflict(workspace, guard.name)
    if cpl is not None:
        guard.cpl = clean_cpl(cpl)
    if owner is not None:
        guard.owner = clean_owner(owner)
    if description is not None:
        guard.description = description
    after = {"name": guard.name, "cpl": guard.cpl, "owner": guard.owner,
             "description": guard.description}
    changes = {key: [before[key], after[key]] for key in before if before[key] != after[key]}
    if changes:
        try:
            with transaction.atomic():
                guard.save()
        except IntegrityError:
            raise _name_conflict(workspace, guard.name) from None
        record(workspace, actor, LogAction.CAUSAL_GUARD_UPDATED, guard, name=guard.name,
               changes=changes)
    return guard


@transaction.atomic
def delete_guard(guard: CausalGuard, actor) -> None:
    # The log records the guard as it is now, not as the caller last read it.
    guard = CausalGuard.objects.select_for_update().select_related("workspace").get(pk=guard.pk)
    _require_author(guard.workspace, actor)
    record(guard.workspace, actor, LogAction.CAUSAL_GUARD_DELETED, guard, name=guard.name,
           cpl=guard.cpl, owner=guard.owner)
    guard.delete()
