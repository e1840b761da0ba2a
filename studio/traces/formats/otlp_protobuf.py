"""OTLP/HTTP protobuf traces to the OTLP JSON document :mod:`.otlp` reads.  Pure: no Django.

What ``opentelemetry-exporter-otlp-proto-http`` sends (``Content-Type: application/x-protobuf``)
is a serialized ``ExportTraceServiceRequest``.  It is turned into the very dict the JSON
encoding gives, so both encodings share one decoder after this step: ``MessageToDict`` already
writes lowerCamelCase keys and 64-bit integers as decimal strings; enums are asked for as
integers, and the trace and span ids (base64 in proto3's JSON mapping) are rewritten as hex,
as OTLP's JSON encoding has them.  ``bytesValue`` attributes stay base64, as in OTLP JSON.
"""

from __future__ import annotations

import base64
import binascii

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

CONTENT_TYPE = "application/x-protobuf"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class NotProtobuf(ValueError):
    """A body that is not a serialized ExportTraceServiceRequest."""


def document_from_protobuf(body: bytes) -> dict:
    """The OTLP JSON document of a serialized ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise NotProtobuf(f"the body is not a valid protobuf ExportTraceServiceRequest "
                          f"({exc or 'cannot be parsed'})"[:300]) from None
    document = MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                _ids_to_hex(span)
                for link in span.get("links", []):
                    _ids_to_hex(link)
    return document


def _ids_to_hex(item: dict) -> None:
    for name in _ID_FIELDS:
        if name in item:
            try:
                item[name] = base64.b64decode(item[name], validate=True).hex()
            except (binascii.Error, ValueError):  # cannot happen for bytes MessageToDict wrote
                pass


def response_body(rejected_spans: int = 0, error_message: str = "") -> bytes:
    """A serialized ``ExportTraceServiceResponse``: empty on full success, else naming the
    rejected spans (``partial_success``; none rejected with a message is a warning)."""
    response = ExportTraceServiceResponse()
    if rejected_spans or error_message:
        response.partial_success.rejected_spans = rejected_spans
        response.partial_success.error_message = error_message
    return response.SerializeToString()
