"""Uploads, their progress and errors; sessions and their events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Max, Min
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from studio import boundary, exports
from studio.errors import Conflict, PermissionDenied, ServiceError
from studio.workspaces.acting import actor_of, workspace_for
from studio.workspaces.models import Role

from . import erasure, intake
from .formats import PARSERS
from .models import Event, TraceSession, Upload, UploadStatus
from .trace_links import conflict_sentences

router = Router(tags=["traces"])

MAX_PAGE = 1000
MAX_OFFSET = 10**12  # beyond any table; keeps OFFSET inside a bigint


class UploadOut(Schema):
    id: int
    filename: str
    format: str
    options: dict
    sha256: str
    size: int
    status: str
    percent: float
    lines_total: int
    lines_ok: int
    lines_bad: int
    events_stored: int
    error: str
    uploaded_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    audit_requested: bool
    audit_rule_set: int | None
    audit_run: int | None  # the audit made when it was parsed (or asked for again)


class ErasureOut(Schema):
    kind: str               # upload | session
    id: int
    name: str               # the upload's file name, the session's external id
    events: int             # events erased
    sessions: int           # sessions that held one of them
    sessions_removed: int   # of those, the ones left with no event
    results: int            # audit results (in any run) removed: they read erased events
    runs: list[int]         # the audit runs that record the erasure
    at: datetime | None
    by: str | None
    reason: str
    # Copies of the erased data removed with it, by kind: vocabulary_entries, test_cases,
    # log_entries_redacted, ground_truth_labels, impact_summaries.
    copies: dict[str, int]


class UploadPage(Schema):
    count: int
    offset: int
    limit: int
    items: list[UploadOut]


class UploadErrorOut(Schema):
    line: int
    reason: str
    pointer: str


class UploadErrorPage(Schema):
    count: int
    offset: int
    limit: int
    items: list[UploadErrorOut]


class SessionOut(Schema):
    id: int
    external_id: str
    source: str
    steps: int
    created_at: datetime
    last_event_at: datetime | None


class SessionDetail(SessionOut):
    first_step: int | None
    last_step: int | None
    warnings: list[str] = Field(
        default_factory=list,
        description="what the reader should know: OpenTelemetry traces of this session whose "
                    "spans also named another session (their spans are kept here)")


class SessionPage(Schema):
    count: int
    offset: int
    limit: int
    items: list[SessionOut]


class MessageOut(Schema):
    id: str
    peer: str
    kind: str


class EventOut(Schema):
    id: int
    step: int
    lifeline: str
    timestamp: datetime | None
    input: Any = None
    output: Any = None
    data: dict
    labels: list[str] | None
    event_id: str | None
    message: MessageOut | None
    source: str
    upload_id: int | None


class EventPage(Schema):
    session: int
    items: list[EventOut]
    next_step: int | None  # where the next page starts; null on the last page


def _upload_out(upload: Upload) -> dict:
    return {"id": upload.pk, "filename": upload.filename, "format": upload.format,
            "options": upload.options or {}, "sha256": upload.sha256, "size": upload.size,
            "status": upload.status, "percent": upload.percent,
            "lines_total": upload.lines_total, "lines_ok": upload.lines_ok,
            "lines_bad": upload.lines_bad, "events_stored": upload.events_stored,
            "error": upload.error,
            "uploaded_by": upload.uploaded_by.get_username() if upload.uploaded_by else None,
            "created_at": upload.created_at, "started_at": upload.started_at,
            "finished_at": upload.finished_at, "audit_requested": upload.audit_requested,
            "audit_rule_set": upload.audit_rule_set_id, "audit_run": upload.audit_run_id}


def _session_out(session: TraceSession) -> dict:
    return {"id": session.pk, "external_id": session.external_id, "source": session.source,
            "steps": session.steps, "created_at": session.created_at,
            "last_event_at": session.last_event_at}


def _page(offset: int, limit: int) -> tuple[int, int]:
    # An offset past any table is an empty page, not an SQL OFFSET the database cannot hold.
    return max(0, min(offset, MAX_OFFSET)), max(1, min(limit, MAX_PAGE))


# ---------------------------------------------------------------------------------------------
# Uploads

UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file", "format"],
    "properties": {
        "file": {"type": "string", "format": "binary"},
        "format": {"type": "string", "enum": list(PARSERS)},
        "options": {"type": "string", "description":
                    'A JSON object; for csv the column mapping, e.g. {"session": "conv", '
                    '"step": "turn", "input": "prompt", "output": "reply", "labels": "tags", '
                    '"data": ["model"]}'},
        "audit": {"type": "boolean", "default": False, "description":
                  "Audit the upload's sessions as it loads, with the approved rules of rule_set "
                  "(or of the workspace); the upload's audit_run names the run once parsed"},
        "rule_set": {"type": "integer", "description": "The rule set to audit with"},
    }}}}}}


def _refuse_too_large(request) -> None:
    limit = settings.MAX_REQUEST_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise ServiceError(f"the request body is {length} bytes; uploads are limited to "
                           f"{limit} bytes ({limit / 1024 / 1024:g} MiB)", status=413)


@router.post("{slug}/uploads", response={200: UploadOut, 201: UploadOut},
             openapi_extra=UPLOAD_BODY,
             summary="Upload a log (multipart: file, format, options); 201 when new, 200 with "
                     "the earlier upload when the same file was uploaded before")
def create_upload(request, slug: str):
    workspace = workspace_for(request, slug, Role.AUDITOR)
    _refuse_too_large(request)  # before the body is read
    file = request.FILES.get("file")
    if file is None:
        raise ServiceError("a file is required (multipart field 'file')", field="file")
    format = (request.POST.get("format") or "").strip()
    if not format:
        raise ServiceError(f"the format is required: one of {', '.join(PARSERS)}",
                           field="format")
    raw_options = request.POST.get("options") or "{}"
    try:
        options = boundary.loads(raw_options, "options")
    except ValueError as exc:
        raise ServiceError(f"options must be a JSON object ({exc})", field="options") from None
    if not isinstance(options, dict):
        raise ServiceError("options must be a JSON object", field="options")
    audit = _flag(request.POST.get("audit"), "audit")
    rule_set = intake.audit_rule_set(workspace, request.POST.get("rule_set"))
    if rule_set is not None and not audit:
        raise ServiceError("rule_set names the rules to audit with: send audit=true too",
                           field="rule_set")
    upload, created = intake.create_upload(workspace, file, format, options,
                                           by=actor_of(request), filename=file.name,
                                           audit=audit, rule_set=rule_set)
    upload.refresh_from_db()  # without a broker the parse has already run
    return Status(201 if created else 200, _upload_out(upload))


def _flag(value: str | None, field: str) -> bool:
    text = (value or "").strip().lower()
    if text in ("", "false", "0", "no", "off"):
        return False
    if text in ("true", "1", "yes", "on"):
        return True
    raise ServiceError(f"{field} must be true or false, not {value!r}", field=field)


@router.get("{slug}/uploads", response=UploadPage, summary="Uploads, newest first")
def list_uploads(request, slug: str, offset: int = 0, limit: int = 50,
                 status: UploadStatus | None = None):
    workspace = workspace_for(request, slug)
    offset, limit = _page(offset, limit)
    uploads = Upload.objects.filter(workspace=workspace).select_related("uploaded_by")
    if status is not None:
        uploads = uploads.filter(status=status)
    return {"count": uploads.count(), "offset": offset, "limit": limit,
            "items": [_upload_out(u) for u in uploads.order_by("-created_at", "-id")
                      [offset:offset + limit]]}


def _upload(request, slug: str, upload_id: int) -> Upload:
    workspace = workspace_for(request, slug)
    return get_object_or_404(Upload.objects.select_related("uploaded_by"),
                             workspace=workspace, pk=upload_id)


@router.get("{slug}/uploads/{upload_id}", response=UploadOut,
            summary="An upload: status, progress counters and percent done")
def get_upload(request, slug: str, upload_id: int):
    return _upload_out(_upload(request, slug, upload_id))


@router.post("{slug}/uploads/{upload_id}/resume", response=UploadOut,
             summary="Parse a failed upload again from where it stopped (auditor role): the "
                     "events it stored stay, the rest are loaded, each once; 409 when it has "
                     "not failed")
def resume_upload(request, slug: str, upload_id: int):
    workspace = workspace_for(request, slug, Role.AUDITOR)
    upload = get_object_or_404(Upload, workspace=workspace, pk=upload_id)
    intake.resume_upload(upload, by=actor_of(request))
    return _upload_out(_upload(request, slug, upload_id))  # parsed already without a broker


ERASERS = (Role.AUDITOR, Role.ADMIN)


def eraser_workspace(request, slug: str):
    """The workspace for an erasure: auditors and admins only (403 to other members, 404 to
    outsiders)."""
    workspace = workspace_for(request, slug)
    if not actor_of(request).roles_in(workspace) & set(ERASERS):
        raise PermissionDenied(f"erasing needs the auditor or admin role in workspace {slug!r}")
    return workspace


@router.delete("{slug}/uploads/{upload_id}", response=ErasureOut,
               summary="Erase an upload (auditor or admin): its events and stored file, the "
                       "sessions left with no event, and every audit result that read its "
                       "events; the runs concerned and the audit log record it")
def erase_upload(request, slug: str, upload_id: int):
    workspace = eraser_workspace(request, slug)
    upload = get_object_or_404(Upload, workspace=workspace, pk=upload_id)
    try:
        return erasure.erase_upload(upload, by=actor_of(request))
    except erasure.StillParsing as exc:
        raise Conflict(str(exc)) from None


@router.get("{slug}/uploads/{upload_id}/errors", response=UploadErrorPage,
            summary="The lines that were not imported, and why, in file order")
def upload_errors(request, slug: str, upload_id: int, offset: int = 0, limit: int = 100):
    upload = _upload(request, slug, upload_id)
    offset, limit = _page(offset, limit)
    errors = upload.errors.order_by("line", "id")
    return {"count": errors.count(), "offset": offset, "limit": limit,
            "items": list(errors.values("line", "reason", "pointer")[offset:offset + limit])}


@router.get("{slug}/uploads/{upload_id}/errors.csv",
            summary="The upload's errors as a CSV download (line, reason, pointer)")
def upload_errors_csv(request, slug: str, upload_id: int):
    return exports.upload_errors_csv(_upload(request, slug, upload_id))


# ---------------------------------------------------------------------------------------------
# Sessions and events

@router.get("{slug}/sessions", response=SessionPage,
            summary="Sessions, optionally those of one upload or whose id contains a text")
def list_sessions(request, slug: str, upload: int | None = None, q: str | None = None,
                  offset: int = 0, limit: int = 50):
    workspace = workspace_for(request, slug)
    offset, limit = _page(offset, limit)
    sessions = TraceSession.objects.filter(workspace=workspace)
    if upload is not None:
        get_object_or_404(Upload, workspace=workspace, pk=upload)
        sessions = sessions.filter(pk__in=Event.objects.filter(upload_id=upload)
                                   .values("session_id"))
    if q:
        sessions = sessions.filter(external_id__icontains=q)
    return {"count": sessions.count(), "offset": offset, "limit": limit,
            "items": [_session_out(s) for s in sessions.order_by("id")[offset:offset + limit]]}


def _session(request, slug: str, session_id: int) -> TraceSession:
    workspace = workspace_for(request, slug)
    return get_object_or_404(TraceSession, workspace=workspace, pk=session_id)


@router.get("{slug}/sessions/{session_id}", response=SessionDetail)
def get_session(request, slug: str, session_id: int):
    session = _session(request, slug, session_id)
    bounds = Event.objects.filter(session=session).aggregate(first=Min("step"), last=Max("step"))
    return {**_session_out(session), "first_step": bounds["first"], "last_step": bounds["last"],
            "warnings": conflict_sentences(session.workspace, session.external_id)}


@router.delete("{slug}/sessions/{session_id}", response=ErasureOut,
               summary="Erase a session, live or uploaded (auditor or admin): all its events "
                       "and every audit result of it; the runs concerned and the audit log "
                       "record it")
def erase_session(request, slug: str, session_id: int):
    workspace = eraser_workspace(request, slug)
    session = get_object_or_404(TraceSession, workspace=workspace, pk=session_id)
    return erasure.erase_session(session, by=actor_of(request))


@router.get("{slug}/sessions/{session_id}/events", response=EventPage,
            summary="A session's events in step order, from_step to to_step (inclusive)")
def session_events(request, slug: str, session_id: int, from_step: int = 0,
                   to_step: int | None = None, limit: int = 100):
    session = _session(request, slug, session_id)
    _, limit = _page(0, limit)
    events = Event.objects.filter(session=session, step__gte=max(0, from_step))
    if to_step is not None:
        events = events.filter(step__lte=to_step)
    rows = list(events.order_by("step")[:limit + 1])
    next_step = rows[limit].step if len(rows) > limit else None
    return {"session": session.pk, "next_step": next_step,
            "items": [{"id": e.pk, "step": e.step, "lifeline": e.lifeline,
                       "timestamp": e.timestamp, "input": e.input, "output": e.output,
                       "data": e.data or {}, "labels": e.labels, "event_id": e.event_id,
                       "message": ({"id": e.message_id, "peer": e.message_peer,
                                    "kind": e.message_kind} if e.message_id else None),
                       "source": e.source, "upload_id": e.upload_id}
                      for e in rows[:limit]]}
