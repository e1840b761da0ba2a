"""API of the workspace's causal guards (CPL, paper 001): list, declare, change, delete.

Reading needs membership of the workspace (outsiders get 404); writing needs the author role
(403).  A guard whose CPL does not parse answers 422 with ``"field": "cpl"`` and ``"details":
{"line", "column", "message", "expected"}``.
"""

from __future__ import annotations

from datetime import datetime

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from studio.boundary import Id, Text
from studio.workspaces.acting import actor_of, workspace_for
from studio.workspaces.models import Role

from . import guards
from .models import CausalGuard

router = Router(tags=["causal guards"])
DESCRIPTION_MAX = 10_000


class CausalGuardOut(Schema):
    id: int
    name: str
    cpl: str
    owner: str = Field(description="the lifeline that decides it; empty: any lifeline whose "
                                   "choice event names it")
    description: str
    created_by: str | None
    created_at: datetime


class GuardIn(Schema):
    name: Text = Field(min_length=1, max_length=guards.NAME_MAX)
    cpl: Text = Field(max_length=guards.CPL_MAX)
    owner: Text = Field("", max_length=guards.OWNER_MAX)
    description: Text = Field("", max_length=DESCRIPTION_MAX)


class GuardPatch(Schema):
    name: Text | None = Field(None, min_length=1, max_length=guards.NAME_MAX)
    cpl: Text | None = Field(None, max_length=guards.CPL_MAX)
    owner: Text | None = Field(None, max_length=guards.OWNER_MAX)
    description: Text | None = Field(None, max_length=DESCRIPTION_MAX)


def _out(guard: CausalGuard) -> dict:
    return {"id": guard.id, "name": guard.name, "cpl": guard.cpl, "owner": guard.owner,
            "description": guard.description,
            "created_by": guard.created_by.get_username() if guard.created_by else None,
            "created_at": guard.created_at}


def _guard(workspace, guard_id: Id) -> CausalGuard:
    return get_object_or_404(CausalGuard.objects.select_related("created_by"),
                             workspace=workspace, id=guard_id)


@router.get("w/{slug}/guards", response=list[CausalGuardOut],
            summary="The workspace's causal guards")
def list_guards(request, slug: str):
    workspace = workspace_for(request, slug)
    return [_out(g) for g in CausalGuard.objects.filter(workspace=workspace)
            .select_related("created_by")]


@router.post("w/{slug}/guards", response={201: CausalGuardOut}, summary="Declare a causal guard")
def create_guard(request, slug: str, body: GuardIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    guard = guards.create_guard(workspace, actor_of(request), body.name, body.cpl, body.owner,
                                body.description)
    return Status(201, _out(_guard(workspace, guard.id)))


@router.get("w/{slug}/guards/{guard_id}", response=CausalGuardOut)
def get_guard(request, slug: str, guard_id: Id):
    return _out(_guard(workspace_for(request, slug), guard_id))


@router.patch("w/{slug}/guards/{guard_id}", response=CausalGuardOut,
              summary="Change a causal guard's name, CPL, owner or description")
def update_guard(request, slug: str, guard_id: Id, body: GuardPatch):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    guard = guards.update_guard(_guard(workspace, guard_id), actor_of(request), body.name,
                                body.cpl, body.owner, body.description)
    return _out(_guard(workspace, guard.id))


@router.delete("w/{slug}/guards/{guard_id}", response={204: None})
def delete_guard(request, slug: str, guard_id: Id):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    guards.delete_guard(_guard(workspace, guard_id), actor_of(request))
    return Status(204, None)
