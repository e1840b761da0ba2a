"""Live ingestion: an agent posts its events and reads back verdict changes and residuals.

Both routes authenticate themselves (``auth=None``): a bearer token of the workspace, or a
Standard Webhooks signature over the raw body, which ninja's auth classes cannot check because
they run before the body is at hand.  See ``intake`` for the order of the checks.

Statuses: 200 every event stored (or already stored); 207 some events refused, the others
stored, each refusal named by its index; 422 no event could be stored; 401 bad credentials or
signature; 404 a token of another workspace; 413 too large (also after decompression); 415 an
unknown Content-Encoding; 429 and 503 with Retry-After (rate limit; database unavailable).
"""

from __future__ import annotations

from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, JsonResponse
from ninja import Field, Router, Schema

from studio.errors import ServiceError
from studio.monitor.verdicts import OLD_NAMES_UNTIL, with_old_names

from . import ending, intake, reading
from .errors import LabelerUnavailable
from .events import SOURCE_LIVE
from .ingest import ingest

router = Router(tags=["live"])


# Schemas describe the answers in the OpenAPI document; the views build them as plain dicts.

def was(field: str, default=None):
    """The deprecated field keeping ``field``'s old value (satisfied, pending) for one release."""
    return Field(default, description=f"deprecated: {field} in the old names (satisfied, "
                                      f"pending), answered until {OLD_NAMES_UNTIL}",
                 json_schema_extra={"deprecated": True})


class Change(Schema):
    rule: str
    step: int
    verdict: str | None = Field(None, description="complied, violated or open")
    verdict_was: str | None = was("verdict")
    violation: dict | None = None


class GuardValue(Schema):
    guard: str | None = Field(description="the guard data.choice names (null: data.choice "
                                          "names none usably)")
    value: bool | None = Field(description="the guard over the causal past of the choice "
                                           "event; null when it cannot be decided (see reason)")
    reason: str
    lifeline: str
    seen: dict[str, int] | None = Field(None, description="events of each lifeline in the "
                                                          "causal past")


class LateGuardValue(GuardValue):
    step: int = Field(description="an earlier choice event, decided now that a send it "
                                  "waited for arrived")


class EventResult(Schema):
    index: int
    event_id: str | None = None
    status: str  # stored | duplicate | error
    step: int | None = None
    changes: list[Change] = Field(default_factory=list)
    guards: list[GuardValue] | None = Field(None, description="a choice event's causal guards "
                                                              "(CPL): present when data.choice "
                                                              "names any")
    error: str | None = None
    field: str | None = None


ONE_VERDICT = ("the rule's one verdict in the session: violated once a violation was counted; "
               "complied when nothing later can change that (or the session ended meeting "
               "it); open while the session is open and it depends on what comes next")


class RuleNow(Schema):
    rule: str
    verdict: str = Field(description=ONE_VERDICT)
    trac_verdict: str = Field(description="TRAC's verdict (the first verdict reached): "
                                          "complied, violated or open")
    residual: str
    final: str | None = Field(description="the verdict if the session ended now: complied or "
                                          "violated")
    violations: int
    verdict_was: str | None = was("verdict")
    trac_verdict_was: str | None = was("trac_verdict")
    final_was: str | None = was("final")


class RuleAtEnd(RuleNow):
    end_violations: int | None = Field(description="violations the end revealed (null when "
                                                   "the session had already ended)")


class EndOut(Schema):
    session: str
    steps: int
    ended_at: str
    already_ended: bool
    rules: list[RuleAtEnd]


class IngestOut(Schema):
    session: str
    steps: int
    stored: int
    duplicates: int
    rejected: int
    rebuilt: bool
    events: list[EventResult]
    rules: list[RuleNow]
    guards: list[LateGuardValue] | None = None


class RuleIfCandidate(Schema):
    rule: str
    violates: bool
    verdict: str = Field(description=ONE_VERDICT)
    trac_verdict: str
    residual: str
    violations: list[dict]
    verdict_was: str | None = was("verdict")
    trac_verdict_was: str | None = was("trac_verdict")


class CandidateResult(Schema):
    index: int
    violates: bool | None = None
    rules: list[RuleIfCandidate] = Field(default_factory=list)
    error: str | None = None
    field: str | None = None


class CheckOut(Schema):
    session: str
    steps: int
    candidates: list[CandidateResult]


class Problem(Schema):
    detail: str
    field: str | None = None


_EVENT_SCHEMA = {
    "type": "object",
    "description": "A canonical event.  Fields outside these are kept under data; the step "
                   "is assigned on arrival.",
    "properties": {
        "event_id": {"type": "string", "maxLength": 200,
                     "description": "unique per workspace: a repeated id is a duplicate"},
        "lifeline": {"type": "string"}, "timestamp": {"type": "string", "format": "date-time"},
        "input": {}, "output": {}, "data": {"type": "object"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "message": {"type": "object", "properties": {
            "id": {"type": "string"}, "peer": {"type": "string"},
            "kind": {"type": "string", "enum": ["send", "receive"]}}},
    },
}


def _body_doc(key: str, description: str) -> dict:
    return {"requestBody": {"required": True, "description": description, "content": {
        "application/json": {"schema": {"type": "object", "required": [key], "properties": {
            key: {"type": "array", "items": _EVENT_SCHEMA}}}}}},
        "security": [{"BearerAuth": []}, {}],
        "parameters": [{"in": "header", "name": name, "required": False,
                        "schema": {"type": "string"}, "description": text} for name, text in (
            ("webhook-id", "Standard Webhooks message id (signed deliveries)"),
            ("webhook-timestamp", "seconds since 1970, within 300 s of now"),
            ("webhook-signature", "space-separated v1,<base64 HMAC-SHA256>"),
            ("Content-Encoding", "gzip, deflate or identity"))]}


PROBLEM_RESPONSES = {401: Problem, 404: Problem, 409: Problem, 413: Problem, 415: Problem, 422: Problem,
           429: Problem, 503: Problem}


RULE_VERDICTS = ("verdict", "trac_verdict", "final")


def _rules_in_words(rules: list[dict]) -> list[dict]:
    return [with_old_names(r, [f for f in RULE_VERDICTS if f in r]) for r in rules]


def in_words(result: dict) -> dict:
    """An answer with every verdict in the public words (complied, violated, open) and the
    old value under ``<field>_was``; the monitors' own dicts keep the stored names."""
    out = dict(result)
    if "rules" in out:
        out["rules"] = _rules_in_words(out["rules"])
    if "events" in out:
        out["events"] = [{**e, "changes": [with_old_names(c, ("verdict",)) if "verdict" in c
                                           else c for c in e.get("changes") or []]}
                         if "changes" in e else e for e in out["events"]]
    if "candidates" in out:
        out["candidates"] = [{**c, "rules": _rules_in_words(c["rules"])} if "rules" in c
                             else c for c in out["candidates"]]
    return out


def problem(status: int, detail: str, headers: dict | None = None, field: str | None = None):
    body: dict[str, Any] = {"detail": detail}
    if field:
        body["field"] = field
    response = JsonResponse(body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def unavailable():
    """The database cannot be reached: nothing was stored; the sender retries later."""
    return problem(503, "the database is unavailable; nothing was stored, retry later",
                   {"Retry-After": str(intake.DB_RETRY_AFTER_SECONDS)})


def _read(request: HttpRequest, slug: str, key: str):
    raw = intake.raw_body(request)
    workspace, actor, delivery = intake.authenticate(request, raw, slug)
    intake.check_rate(workspace, actor)
    document = intake.parse_json(intake.decoded_body(request, raw))
    if not isinstance(document, dict) or not isinstance(document.get(key), list):
        raise ServiceError(f"the body must be a JSON object with an array {key!r}", field=key,
                           status=422)
    return workspace, actor, delivery, document[key]


def answer(run):
    try:
        return intake.on_recent_connection(run)
    except intake.Refused as exc:
        return problem(exc.status, exc.message, exc.headers)
    except LabelerUnavailable as exc:
        return problem(exc.status, exc.message, {"Retry-After": str(exc.retry_after)})
    except ServiceError as exc:
        return problem(exc.status, exc.message, field=exc.field)
    except (OperationalError, InterfaceError):
        return unavailable()


@router.post("w/{slug}/live/sessions/{session_id}/events", auth=None,
             response={200: IngestOut, 207: IngestOut, **PROBLEM_RESPONSES},
             summary="Post events of a live session; get verdict changes and residuals",
             openapi_extra=_body_doc("events", "{\"events\": [event, ...]}"))
def post_events(request: HttpRequest, slug: str, session_id: str):
    def run():
        workspace, actor, delivery, events = _read(request, slug, "events")
        result = ingest(workspace, session_id, events, SOURCE_LIVE, actor,
                        delivery_id=delivery)
        if not result["rejected"]:
            status = 200
        elif result["stored"] or result["duplicates"]:
            status = 207
        else:
            status = 422
        return JsonResponse(in_words(result), status=status)

    return answer(run)


@router.post("w/{slug}/live/sessions/{session_id}/check", auth=None,
             response={200: CheckOut, **PROBLEM_RESPONSES},
             summary="Would these candidate next events violate a rule? Stores nothing",
             openapi_extra=_body_doc("candidates", "{\"candidates\": [event, ...]}"))
def check_candidates(request: HttpRequest, slug: str, session_id: str):
    def run():
        workspace, _, _, candidates = _read(request, slug, "candidates")
        return JsonResponse(in_words(reading.check(workspace, session_id, candidates)))

    return answer(run)


@router.post("w/{slug}/live/sessions/{session_id}/end", auth=None,
             response={200: EndOut, **PROBLEM_RESPONSES},
             summary="End a live session: each rule gets its end verdict; later events get 409",
             description="Authenticated as the events route (bearer token or signed webhook); "
                         "the body is ignored (but must be JSON without NUL or lone surrogates, or "
                         "empty).  Ending an ended session changes nothing.",
             openapi_extra={"security": [{"BearerAuth": []}, {}], "requestBody": {
                 "required": False, "description": "ignored (a signature covers it)",
                 "content": {"application/json": {"schema": {"type": "object"}}}}})
def end_session(request: HttpRequest, slug: str, session_id: str):
    def run():
        raw = intake.raw_body(request)
        workspace, actor, _ = intake.authenticate(request, raw, slug)
        intake.check_rate(workspace, actor)
        body = intake.decoded_body(request, raw)
        if body.strip():
            # Ignored, but still input: it is read as every body is, so that NUL, a lone
            # surrogate or broken JSON is refused here as on the events route.
            intake.parse_json(body)
        return JsonResponse(in_words(ending.end_session(workspace, session_id, actor)))

    return answer(run)
