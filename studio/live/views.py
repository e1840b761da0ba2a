"""OTLP/HTTP at ``/v1/traces``: OpenTelemetry exporters send their spans straight here.

An exporter is configured with the endpoint ``<site>/v1/traces``, the protocol ``http/json``
(``application/json``) or ``http/protobuf`` (``application/x-protobuf``, the Python exporter's
default) and an ``Authorization: Bearer <token>`` header; the spans go to the token's workspace.
A protobuf body is turned into the JSON document first, so both take one path after that; the
spans of one trace go to one session (``otlp_sessions``).
Answers follow the OTLP specification: 200 with an ``ExportTraceServiceResponse`` in the
request's encoding (``partialSuccess`` naming how many spans were rejected and why, when some
were, or with none rejected and a warning, when a trace named two sessions), and on failure a
JSON ``Status`` (``{"code", "message"}``) with 400, 401, 413, 415, or 429/503 with Retry-After,
which exporters retry.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from studio import boundary
from studio.errors import ServiceError
from studio.traces.formats import otlp_protobuf
from studio.workspaces.acting import Actor

from . import intake
from .otlp_sessions import store_spans

# google.rpc.Code values for the Status body.
_GRPC = {400: 3, 401: 16, 404: 5, 405: 12, 413: 3, 415: 3, 422: 3, 429: 8, 503: 14}
_MESSAGES_SHOWN = 10


def _status(status: int, message: str, headers: dict | None = None) -> JsonResponse:
    response = JsonResponse({"code": _GRPC.get(status, 2), "message": message}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@csrf_exempt  # token-authenticated machine route (RELIABILITY 13)
def otlp_traces(request: HttpRequest):
    if request.method != "POST":
        response = _status(405, "POST an ExportTraceServiceRequest")
        response["Allow"] = "POST"
        return response
    if request.content_type not in ("application/json", otlp_protobuf.CONTENT_TYPE):
        return _status(415, "this endpoint takes OTLP/HTTP JSON (Content-Type: "
                            "application/json) or protobuf (application/x-protobuf)")
    try:
        return intake.on_recent_connection(lambda: _export(request))
    except intake.Refused as exc:
        return _status(exc.status, exc.message, exc.headers)
    except ServiceError as exc:  # NUL, a lone surrogate or nesting too deep in the body
        return _status(exc.status, exc.message)
    except (OperationalError, InterfaceError):
        return _status(503, "the database is unavailable; nothing was stored, retry later",
                       {"Retry-After": str(intake.DB_RETRY_AFTER_SECONDS)})


def _export(request: HttpRequest) -> HttpResponse:
    raw = intake.raw_body(request)
    token = intake.bearer_token(request)
    if token is None:
        raise intake.Refused(401, "authentication required: Authorization: Bearer <token>")
    intake.require_roles(token)
    actor = Actor(token=token)
    workspace = token.workspace
    intake.check_rate(workspace, actor)
    protobuf = request.content_type == otlp_protobuf.CONTENT_TYPE
    body = intake.decoded_body(request, raw)
    document = _from_protobuf(body) if protobuf else intake.parse_json(body)
    if not isinstance(document, dict):
        raise intake.Refused(400, "the body must be an ExportTraceServiceRequest object")
    stored = store_spans(workspace, document, actor)
    rejected = stored.rejected
    # A trace naming two sessions is a warning: OTLP answers it as a partial success that
    # rejected nothing, with the message.
    messages = [*stored.errors, *stored.warnings]
    shown = "; ".join(messages[:_MESSAGES_SHOWN])
    if len(messages) > _MESSAGES_SHOWN:
        shown += f"; and {len(messages) - _MESSAGES_SHOWN} more"
    if protobuf:
        return HttpResponse(otlp_protobuf.response_body(rejected, shown),
                            content_type=otlp_protobuf.CONTENT_TYPE)
    if not messages:
        return JsonResponse({})
    return JsonResponse({"partialSuccess": {"rejectedSpans": str(rejected),
                                            "errorMessage": shown}})


def _from_protobuf(body: bytes) -> dict:
    """The JSON document of a protobuf body, refused as the JSON body is: 400 when it cannot
    be read, and NUL in any string as in JSON (``boundary.check_document``; protobuf has no
    lone surrogates, and its parser refuses nesting deeper than 100)."""
    try:
        document = otlp_protobuf.document_from_protobuf(body)
    except otlp_protobuf.NotProtobuf as exc:
        raise intake.Refused(400, str(exc)) from None
    boundary.check_document(document)
    return document
