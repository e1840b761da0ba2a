"""The guard's routes.

Agents: ``POST /api/w/{slug}/live/sessions/{sid}/guard`` asks about a proposed next step and
``GET .../guard/{decision_id}?wait=S`` waits for a person's answer; both authenticate as the
events route does (a bearer token of the workspace, or a Standard Webhooks signature) and answer
503 with Retry-After when the session's monitors cannot be brought up to date (never a guess).
The events a guard request carries in ``taken`` that were not stored yet are stored by the same
worker after the answer is sent (``AnswerThen``), through the events route's own service.

Staff: a rule set's guard policy (``GET``/``PUT /api/w/{slug}/rule-sets/{id}/guard-policy``) and
the decisions waiting for a person (``GET /api/w/{slug}/guard/decisions``, ``POST
.../guard/decisions/{id}/approve`` or ``/deny``), with the session or a token like every route.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Field, Router, Schema

from studio.boundary import Id
from studio.errors import ServiceError
from studio.live import intake
from studio.live.api import PROBLEM_RESPONSES, answer, problem
from studio.rules.models import RuleSet
from studio.workspaces.acting import actor_of, workspace_for
from studio.workspaces.models import Role

from . import predicates as model_predicates
from . import services, waits

router = Router(tags=["guard"])
log = logging.getLogger("studio.guard")


class RuleAtRisk(Schema):
    rule: str
    risk: float | None
    intervention: str
    requires: str = Field(description="what the rule still requires, in words")


class Unbacked(Schema):
    rule: str
    risk: float


class GuardOut(Schema):
    decision_id: str
    decision: str = Field(description="allow, resample, best_of_n, inject, switch, ask_human "
                                      "or stop")
    status: str = Field(description="decided; pending while a person decides; approved, "
                                    "denied or timed_out after")
    reason: str
    risk: dict[str, float | None] = Field(description="per rule, the risk of a violation "
                                                      "within the horizon (null: not "
                                                      "estimated)")
    risk_any: float | None
    predictor: str = Field(description="exact, sampling or dtmc: what set the deciding risk")
    backed: bool = Field(description="the learned risk has the samples the PAC bound asks "
                                     "for (exact and sampled risks always are)")
    horizon: int
    threshold: float
    rules_at_risk: list[RuleAtRisk]
    candidate: int | None = Field(description="best_of_n: the index in candidates to use")
    inject: str | None = Field(description="inject: the text to add to the prompt")
    model: str | None = Field(description="switch: the safer model")
    poll: str | None = Field(description="ask_human: where to wait for the answer")
    max_resamples: int = Field(description="resamples (or re-prompts) of one step before the "
                                           "policy's fallback")
    learned_model: bool = Field(description="a learned risk model of the live rules was used")
    unbacked: list[Unbacked] = Field(
        default_factory=list,
        description="rules whose learned risk reached the threshold but is not backed by the "
                    "PAC bound, so it was reported and not acted on (unless the policy's "
                    "act_on_unbacked is true)")
    stored: list[str] = Field(
        default_factory=list,
        description="the event ids of taken that the studio had stored (in this session) when "
                    "it answered; the others are stored after the answer is sent, and a later "
                    "answer (or the events route) confirms them")
    not_yet_known: list[str] = Field(
        default_factory=list,
        description="rules for which whether this step leaves them impossible to meet is not "
                    "known yet (searched in the background; asking again shortly has it): for "
                    "these the decision rests on the exact check alone")


_GUARD_BODY = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "required": ["event"], "properties": {
            "event": {"type": "object", "description": "the proposed next event"},
            "continuation": {"type": "array", "items": {"type": "object"},
                             "description": "sampled steps after it (TRAC_P+I)"},
            "candidates": {"type": "array", "items": {"type": "object", "properties": {
                "event": {"type": "object"},
                "continuation": {"type": "array", "items": {"type": "object"}}}},
                "description": "other sampled next events"},
            "decision_id": {"type": "string", "maxLength": services.DECISION_ID_MAX,
                            "description": "the same id again answers the same decision"},
            "attempt": {"type": "integer", "minimum": 0,
                        "description": "how many times this step was already resampled"},
            "taken": {"type": "array", "maxItems": services.MAX_TAKEN,
                      "items": {"type": "object", "required": ["event_id"]},
                      "description": "the agent's events before the proposed one that may not "
                                     "be stored yet, in order, each with its event_id: decided "
                                     "on as if stored; stored after the answer"}}}}}},
    "security": [{"BearerAuth": []}, {}]}


@router.post("w/{slug}/live/sessions/{session_id}/guard", auth=None,
             response={200: GuardOut, **PROBLEM_RESPONSES},
             summary="Ask before acting: a decision on the proposed next step (stores no event)",
             openapi_extra=_GUARD_BODY)
def ask_guard(request: HttpRequest, slug: str, session_id: str):
    def run():
        raw = intake.raw_body(request)
        workspace, actor, _ = intake.authenticate(request, raw, slug)
        intake.check_rate(workspace, actor)
        document = intake.parse_json(intake.decoded_body(request, raw))
        decided = services.decide(workspace, session_id, document, actor)
        return AnswerThen(decided.answer, after=[
            (lambda: services.store_decided(decided),
             "a guard decision could not be stored after it was sent (its answer stands)"),
            (lambda: services.store_taken(workspace, session_id, document, decided.answer,
                                          actor),
             "the taken events of a guard answer could not be stored after it was sent (the "
             "agent sends them again)"),
            (lambda: services.refresh_ahead(workspace),
             "the live context could not be read again after an answer")])

    return answer(run)


class AnswerThen(JsonResponse):
    """A guard answer, then - once it has been sent - the work ``after`` it, each ``(work,
    what failing it means)``: the settled decision stored, its ``taken`` events stored, the
    workspace's live context and policy read again if they are about to expire.  The server
    calls ``close()`` after the body (WSGI; Django's ASGI handler too, in the request's
    thread), so this work is off the agent's wait and needs no second request.  Work that
    fails is logged, never raised, and the rest still runs: the agent still holds the events
    (nothing was confirmed to it) and sends them again - in its next question's ``taken`` or to
    the events route."""

    def __init__(self, data, *, after=(), **kwargs):
        super().__init__(data, **kwargs)
        self._after = list(after)

    def close(self):
        after, self._after = self._after, []
        for work, what in after:
            try:
                intake.on_recent_connection(work)
            except Exception:  # noqa: BLE001 - after the answer, nobody to raise to
                log.exception(what)
        super().close()


@router.get("w/{slug}/live/sessions/{session_id}/guard/{decision_id}", auth=None,
            response={200: GuardOut, **PROBLEM_RESPONSES}, url_name="guard_decision",
            summary="A guard decision; waits up to ?wait= seconds (30 at most) for a person",
            description="A poll that waits holds no server thread (docs/guard-waits.md).  A "
                        "token holds at most GUARD_WAITS_PER_TOKEN waiting polls at once, a "
                        "workspace GUARD_WAITS_PER_WORKSPACE; beyond, 429 with Retry-After.  "
                        "wait=0 never waits and is never refused for this.",
            openapi_extra={"security": [{"BearerAuth": []}, {}]})
async def get_decision(request: HttpRequest, slug: str, session_id: str, decision_id: str,
                       wait: float = 0):
    # The database work runs in the request's thread (sync_to_async); the wait itself is a
    # suspended coroutine watched by studio.guard.waits, holding no thread and no connection.
    started = await sync_to_async(answer)(
        lambda: _start_wait(request, slug, session_id, decision_id, wait))
    if not isinstance(started, _Waiting):
        return started
    try:
        await waits.watch().wait(started.pk, started.seconds)
    finally:
        # Also when the client went away (the view is cancelled): the count is taken back.
        await asyncio.shield(sync_to_async(waits.release, thread_sensitive=False)(
            started.lease))
    return await sync_to_async(answer)(lambda: _finish_wait(started))


@dataclass
class _Waiting:
    workspace: Any
    session_id: str
    decision_id: str
    pk: int
    seconds: float
    lease: waits.Lease


def _start_wait(request: HttpRequest, slug: str, session_id: str, decision_id: str,
                wait: float):
    """The answer at once (settled, or no wait asked), or what the wait needs: the row and its
    count against the caps (429 beyond them)."""
    raw = intake.raw_body(request)
    workspace, actor, _ = intake.authenticate(request, raw, slug)
    seconds = services.check_wait(wait)
    row = services.decision_row(workspace, session_id, decision_id)
    seconds = services.seconds_to_wait(row, seconds)
    if seconds <= 0:
        return JsonResponse(services.answer_of(row))
    token = actor.token.pk if actor is not None and actor.token is not None else None
    try:
        lease = waits.claim(workspace.pk, token)
    except waits.TooManyWaits as exc:
        raise intake.Refused(429, exc.message, {"Retry-After": str(exc.retry_after)}) from None
    if not connection.in_atomic_block:
        # Waiting polls must not each keep a database connection open (Postgres allows ~100).
        connection.close()
    return _Waiting(workspace, session_id, decision_id, row.pk, seconds, lease)


def _finish_wait(started: _Waiting):
    try:
        return JsonResponse(services.decision(started.workspace, started.session_id,
                                              started.decision_id))
    finally:
        if not connection.in_atomic_block:
            connection.close()


# ---------------------------------------------------------------------------------------------
# Staff: policies and the decisions waiting for a person


class PolicyFields(Schema):
    """A guard policy as the API answers it (every field; docs/guard.md)."""

    threshold: float = Field(description="intervene from this risk (0 to 1)")
    horizon: int = Field(description="steps the risk covers, the proposed one included "
                                     "(1 to 100)")
    interventions: dict[str, str] = Field(description="per rule name: resample, best_of_n, "
                                                      "inject, switch, ask_human or stop")
    default_intervention: str = Field(description="for the rules not named in interventions")
    max_resamples: int = Field(description="new tries of one step before the fallback (0-20)")
    fallback: str = Field(description="after max_resamples: best_accepted (the default: the "
                                      "least risky candidate the exact check accepts; stop "
                                      "only when none is), switch, ask_human, stop or allow")
    safer_model: str = Field(description="the model switch hands steps to")
    human_timeout_seconds: int = Field(description="how long a person has to answer")
    human_default: str = Field(description="allow or stop, when nobody answers in time")
    guarded_risk: bool = Field(description="read the learned risk of the agent behind this "
                                           "guard, its violating steps refused (default true)")
    act_on_unbacked: bool = Field(description="act on learned risks the PAC bound does not "
                                              "back (default false: reported, not acted on)")


class PolicyOut(Schema):
    rule_set: int
    policy: PolicyFields


class PolicyIn(Schema):
    policy: dict[str, Any] = Field(description="the fields of PolicyFields; a missing one "
                                               "takes its default, an unknown or unfit one is "
                                               "refused naming it (422)")


def _ruleset(workspace, rule_set_id: int) -> RuleSet:
    found = RuleSet.objects.filter(workspace=workspace, pk=rule_set_id).first()
    if found is None:
        raise ServiceError(f"no rule set {rule_set_id} in this workspace", field="rule_set_id",
                           status=404)
    return found


@router.get("w/{slug}/rule-sets/{rule_set_id}/guard-policy", response=PolicyOut,
            summary="The rule set's guard policy (defaults where unset)")
def get_policy(request, slug: str, rule_set_id: Id):
    workspace = workspace_for(request, slug)
    ruleset = _ruleset(workspace, rule_set_id)
    return {"rule_set": ruleset.pk, "policy": services.policy_of(ruleset).to_json()}


@router.put("w/{slug}/rule-sets/{rule_set_id}/guard-policy", response=PolicyOut,
            summary="Replace the rule set's guard policy; a field that does not fit is named")
def put_policy(request, slug: str, rule_set_id: Id, body: PolicyIn):
    workspace = workspace_for(request, slug, Role.AUTHOR)
    ruleset = _ruleset(workspace, rule_set_id)
    policy = services.set_policy(ruleset, body.policy, actor_of(request))
    return {"rule_set": ruleset.pk, "policy": policy.to_json()}


class PredicatesIn(Schema):
    predicates: list[Any] = Field(description="the predicates, each as "
                                               "studio.risk.predicates reads it: {kind: label, "
                                               "atom}, {kind: field, path, op, value} or "
                                               "{kind: action, action, within}")


def _predicates_out(ruleset) -> dict:
    found = model_predicates.predicates_of(ruleset)
    return {"rule_set": ruleset.pk, "live": ruleset.live,
            "predicates": [{**p.to_json(), "name": p.name, "words": p.words()}
                           for p in found]}


@router.get("w/{slug}/rule-sets/{rule_set_id}/guard-predicates",
            summary="The domain predicates the rule set adds to the risk model's states")
def get_predicates(request, slug: str, rule_set_id: Id):
    workspace = workspace_for(request, slug)
    return _predicates_out(_ruleset(workspace, rule_set_id))


@router.put("w/{slug}/rule-sets/{rule_set_id}/guard-predicates",
            summary="Replace the rule set's model predicates (a relearn follows when it is "
                    "live); a predicate that does not read is named")
def put_predicates(request, slug: str, rule_set_id: Id, body: PredicatesIn):
    workspace = workspace_for(request, slug)   # authors and admins: the service checks
    ruleset = _ruleset(workspace, rule_set_id)
    model_predicates.set_predicates(ruleset, body.predicates, actor_of(request))
    return _predicates_out(ruleset)


@router.get("w/{slug}/guard/model",
            summary="The newest ready risk model: its predicates, the precision and recall of "
                    "its alarms on held-out sessions, and the predicates proposed")
def get_model(request, slug: str):
    workspace = workspace_for(request, slug)
    return {"model": model_predicates.model_summary(model_predicates.newest_ready(workspace)),
            "live_predicates": [p.to_json() for p in
                                model_predicates.live_predicates(workspace)]}


def _pending_out(row) -> dict:
    return {"id": row.pk, "session": row.session, "decision_id": row.decision_id,
            "created_at": row.created_at, "expires_at": row.expires_at,
            **services.proposed_summary(row)}


@router.get("w/{slug}/guard/decisions",
            summary="Guard decisions waiting for a person, oldest first, a page at a time",
            description="?limit= (1 to 500, 50 by default) and ?offset=; the X-Total-Count "
                        "header says how many are waiting in all.")
def list_pending(request, slug: str, response: HttpResponse,
                 limit: int = services.PENDING_PAGE, offset: int = 0):
    workspace = workspace_for(request, slug)
    rows = services.pending_decisions(workspace, limit, offset)
    response["X-Total-Count"] = str(services.pending_count(workspace))
    return [_pending_out(row) for row in rows]


class AnswerIn(Schema):
    note: str = ""


@router.post("w/{slug}/guard/decisions/{decision_pk}/approve",
             summary="Approve: the agent may take the proposed step")
def approve(request, slug: str, decision_pk: Id, body: AnswerIn):
    workspace = workspace_for(request, slug, Role.REVIEWER)
    row = services.resolve(workspace, decision_pk, actor_of(request), True, body.note)
    return {"id": row.pk, "status": row.status, "decision": row.decision}


@router.post("w/{slug}/guard/decisions/{decision_pk}/deny",
             summary="Deny: the agent stops")
def deny(request, slug: str, decision_pk: Id, body: AnswerIn):
    workspace = workspace_for(request, slug, Role.REVIEWER)
    row = services.resolve(workspace, decision_pk, actor_of(request), False, body.note)
    return {"id": row.pk, "status": row.status, "decision": row.decision}


__all__ = ["router", "problem"]
