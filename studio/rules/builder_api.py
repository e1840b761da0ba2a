"""API of the rule builder: a rule from a specification pattern, a scope and events of the
workspace's logs (``studio.grounding.builder``), read back in English; and what its pickers
offer.  Nothing is stored: create the rule with ``POST /api/w/{slug}/rules`` and the formula.
"""

from __future__ import annotations

from typing import Any

from ninja import Router, Schema

from studio.boundary import Text
from studio.errors import ServiceError
from studio.grounding.builder import BuildError, build
from studio.grounding.builder_form import builder_options
from studio.workspaces.acting import workspace_for

from .api import WarningOut
from .vocabulary import formula_warnings, vocabulary_for

router = Router(tags=["rule builder"])


class ConditionIn(Schema):
    path: Text
    op: Text
    value: bool | int | float | Text | None


class EventIn(Schema):
    atom: Text | None = None
    conditions: list[ConditionIn] = []


class BuildIn(Schema):
    pattern: Text
    scope: Text = "globally"
    slots: dict[Text, EventIn | Text] = {}
    n: int | None = None


class BuildOut(Schema):
    formula: str
    english: str
    pattern: str
    scope: str
    warnings: list[WarningOut]


def built_or_422(pattern: str, scope: str, slots: dict, n: int | None):
    """``builder.build``, its refusal a 422 naming the field (``slots.p.conditions[0].op``)."""
    try:
        return build(pattern, scope, slots, n)
    except BuildError as exc:
        raise ServiceError(exc.message, field=exc.field, status=422) from None


def _slot(value: EventIn | str) -> dict | str:
    if isinstance(value, str):
        return value
    out: dict[str, Any] = {"conditions": [c.dict() for c in value.conditions]}
    if value.atom is not None:
        out["atom"] = value.atom
    return out


@router.post("w/{slug}/rules/build", response=BuildOut,
             summary="Build a rule from a pattern, a scope and events of the logs; store nothing",
             description=(
                 "patterns: absence, existence, universality, response, bounded_response (n: "
                 "steps), precedence, response_chain, precedence_chain, at_most / at_least "
                 "(n: times), exactly_once; scopes: globally, before (slot end), after (slot "
                 "start), between and after_until (start, end). Each slot (p, q, r, start, "
                 "end) is an atom name or {atom, conditions: [{path, op, value}]}. A choice "
                 "the builder refuses answers 422 naming the field, e.g. "
                 "slots.p.conditions[0].value."))
def build_rule(request, slug: str, body: BuildIn):
    workspace = workspace_for(request, slug)
    slots = {name: _slot(value) for name, value in body.slots.items()}
    built = built_or_422(body.pattern, body.scope, slots, body.n)
    return {"formula": built.text, "english": built.english, "pattern": built.pattern,
            "scope": built.scope,
            "warnings": formula_warnings(built.formula, vocabulary_for(workspace))}


@router.get("w/{slug}/rules/build/options", response=dict[str, Any],
            summary="What the rule builder's pickers offer in this workspace",
            description=("patterns and scopes with their slots; tools with their own "
                         "arguments (types, example values, comparisons); roles; labels; "
                         "other atoms; every field; the comparisons per JSON type. Without "
                         "the vocabulary's evidence tools list no arguments and fields no "
                         "examples."))
def build_options(request, slug: str):
    workspace = workspace_for(request, slug)
    return builder_options(vocabulary_for(workspace))
