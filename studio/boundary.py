"""Hostile input is refused where a request is read, once, not field by field: the one
definition of what input the studio refuses and how it says so.

Two kinds of text cannot be stored at all: NUL (Postgres refuses it in text and JSON) and lone
surrogates (half of a UTF-16 pair: JSON can spell one, ``"\\ud800"``, but it has no UTF-8 form,
so the database driver raises).  Either one used to reach the database and answer 500 - or,
inside an approved formula, break every later audit and delivery.  JSON nested beyond any use
overflowed Python's stack (RecursionError), and an over-long upload file name broke the
temporary file it names.

Where they are caught:
- ``RefuseHostileInput`` (middleware): the URL's path (so every path parameter, before any
  route reads it), every query parameter and form field, pages and API;
- ``loads``: every JSON body the API reads (``JsonParser`` for ninja's schemas, the live intake
  for webhooks) and JSON carried inside a form field (an upload's ``options``);
- ``FileNameCheck`` (the first upload handler): an upload's file name;
- ``check_document``: JSON a service reads out of form text (a labeler's settings), and
  documents decoded from other formats (OTLP protobuf);
- ``Text`` and ``Id``: the API schemas' text and id fields.

One wording (``text_problem``, after the field's name) and one status for each kind, on every
surface - a JSON body, a form page, an upload, a live event: text that cannot be stored is 422
naming the field (``events[0].data.note``, ``q``, ``file``); a request that is not usable at
all (too deep, a file name too long, a path that cannot name anything) is 400.  The API answers
``{"detail", "field"}``, pages the "Not accepted" page with the same status.
"""

from __future__ import annotations

import json
import math
import re
from functools import partial
from typing import Annotated, Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParser, MultiPartParserError
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve
from django.utils.datastructures import ImmutableList
from ninja.parser import Parser
from pydantic import AfterValidator, Field, ValidationInfo

from studio.errors import ServiceError

# Deeper than any log or setting needs (an OTLP export is about 12 levels), far below Python's
# recursion limit, which the ORM, pydantic and json.dumps all walk into.
MAX_JSON_DEPTH = 100
# What file systems allow for one name; Django would cut a longer one silently.
MAX_FILE_NAME = 255

_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class HostileInput(ServiceError):
    """Text that cannot be stored (422), named by its field."""

    status = 422


class Unusable(HostileInput):
    """Not usable at all: JSON nested too deep, a file name too long, a path parameter that
    cannot name anything (400)."""

    status = 400


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins real pairs into one character


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (NUL: Postgres refuses it; a lone surrogate has no UTF-8
    form), or None: the one wording, said after the name of the field that holds it."""
    if "\x00" in text:
        return "must not contain NUL characters (\\u0000)"
    if not text.isascii() and _LONE_SURROGATE.search(text):
        return ("must not contain a lone surrogate (such as \\ud800: half of a UTF-16 pair, "
                "which no UTF-8 text can hold)")
    return None


def check_text(text: str, where: str) -> None:
    problem = text_problem(text)
    if problem is not None:
        raise HostileInput(f"{where} {problem}", field=where)


def check_document(document: Any, where: str = "", *, finite: bool = False) -> None:
    """Refuse a parsed JSON value holding NUL or a lone surrogate (in a key or a string) or
    nested deeper than MAX_JSON_DEPTH, naming the place (``config.pattern``, ``events[0]``);
    with ``finite``, NaN and infinities too (JSON a service stores, which Postgres's JSON
    cannot hold).  Iterative, so the check itself cannot overflow the stack."""
    stack = [(document, where, 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            check_text(value, path or "body")
        elif isinstance(value, float):
            if finite and not math.isfinite(value):
                raise HostileInput(f"{path or 'body'} must be a finite number",
                                   field=path or None)
        elif isinstance(value, dict):
            if depth >= MAX_JSON_DEPTH:
                raise _too_deep(path)
            for key, item in value.items():
                problem = text_problem(key) if isinstance(key, str) else None
                if problem is not None:  # the key cannot name the field: its parent does
                    raise HostileInput(f"a key in {path or 'the body'} {problem}",
                                       field=path or None)
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth >= MAX_JSON_DEPTH:
                raise _too_deep(path)
            stack.extend((item, f"{path}[{index}]", depth + 1)
                         for index, item in enumerate(value))


def _too_deep(path: str) -> Unusable:
    named = path.split("[", 1)[0]  # "config.value", not a hundred "[0]" after it
    return Unusable(f"{named or 'the body'} is nested more than {MAX_JSON_DEPTH} levels deep",
                   field=named or None)


def loads(text: str | bytes | bytearray, where: str = "", **options) -> Any:
    """``json.loads`` for input from outside: a value nested too deep, or holding NUL or a lone
    surrogate, is a ``HostileInput`` naming its place under ``where``.  Syntax errors stay
    ``ValueError`` for the caller to word."""
    try:
        document = json.loads(text, **options)
    except RecursionError:
        raise _too_deep(where) from None
    if _may_be_hostile(text):
        check_document(document, where)
    return document


# JSON spells NUL and surrogates only as escapes (a raw NUL is a syntax error; raw UTF-8 cannot
# hold a surrogate), and cannot nest deeper than it has brackets: a scan in C clears most
# bodies, so a live delivery skips the walk (measured on 3 events: 10-16 us to parse, the walk
# 28 us more; the scan about 1 us).
_SUSPECT_BYTES = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_SUSPECT_TEXT = re.compile("\\\\u(?:0000|[dD][89a-fA-F])|[\x00\ud800-\udfff]")


def _may_be_hostile(text: str | bytes | bytearray) -> bool:
    if isinstance(text, str):
        return (_SUSPECT_TEXT.search(text) is not None
                or text.count("[") + text.count("{") >= MAX_JSON_DEPTH)
    # NUL bytes: also UTF-16 or UTF-32, which json.loads reads too and the pattern would miss.
    return (b"\x00" in text or _SUSPECT_BYTES.search(text) is not None
            or text.count(b"[") + text.count(b"{") >= MAX_JSON_DEPTH)


class JsonParser(Parser):
    """ninja's JSON bodies, read through ``loads``."""

    def parse_body(self, request: HttpRequest):
        try:
            return loads(request.body)
        except ValueError as exc:
            if isinstance(exc, UnicodeDecodeError):
                raise ServiceError("the body is not UTF-8 text") from None
            raise ServiceError(f"the body is not valid JSON ({exc})"[:300]) from None


class FileNameCheck(FileUploadHandler):
    """First of the upload handlers: refuses an over-long file name before the next handler
    makes a temporary file named after it."""

    def new_file(self, field_name, file_name, *args, **kwargs):
        if len(file_name) > MAX_FILE_NAME:
            raise Unusable(f"the file's name is {len(file_name)} characters long; rename it to "
                          f"at most {MAX_FILE_NAME}", field=field_name)
        check_text(file_name, field_name)

    def receive_data_chunk(self, raw_data, start):
        return raw_data

    def file_complete(self, file_size):
        return None


class _NamesKeptForTheCheck(MultiPartParser):
    """Django drops a file name's unprintable characters, NUL among them, without a word: the
    upload would be stored under another name than the one sent.  A name holding text that
    cannot be stored is passed on as sent, for ``FileNameCheck`` to refuse in the words every
    other field gets."""

    def sanitize_file_name(self, file_name):
        if text_problem(file_name) is not None:
            return file_name
        return super().sanitize_file_name(file_name)


def _parse_multipart(request: HttpRequest, meta, post_data):
    # HttpRequest.parse_file_upload, with the parser above.
    request.upload_handlers = ImmutableList(
        request.upload_handlers,
        warning="You cannot alter upload handlers after the upload has been processed.")
    return _NamesKeptForTheCheck(meta, post_data, request.upload_handlers,
                                 request.encoding).parse()


class RefuseHostileInput:
    """Middleware: a path, query parameters and form fields with NUL or a lone surrogate, and
    uploads with an unusable file name, are answered (422, or 400 for what is not usable at
    all) naming the field, before any view sees them: JSON on the API, a page on pages."""

    # Async too: under ASGI a chain of async-capable middleware lets an async view (the guard's
    # waiting poll) wait without holding a thread.
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if iscoroutinefunction(self):
            return self._acall(request)
        try:
            self._check(request)
        except HostileInput as exc:
            return self._refusal(request, exc)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest):
        try:
            if request.method in ("GET", "HEAD", "OPTIONS"):
                self._check(request)  # the path and the query: no I/O
            else:
                await sync_to_async(self._check)(request)  # may parse a form from disk
        except HostileInput as exc:
            return await sync_to_async(self._refusal)(request, exc)
        return await self.get_response(request)

    @staticmethod
    def _check(request: HttpRequest) -> None:
        _check_path(request)
        _check_fields(request.GET)
        if request.method in ("GET", "HEAD", "OPTIONS") or request.content_type not in _FORM_TYPES:
            return
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return
        if length > settings.MAX_REQUEST_BYTES:
            return  # the view refuses it (413) without reading it
        if request.content_type == "multipart/form-data":
            request.parse_file_upload = partial(_parse_multipart, request)
        try:
            _check_fields(request.POST)
        except MultiPartParserError as exc:
            # Django reads at most 1,024 bytes of a part's headers: a file name near that long
            # ends here, before any upload handler sees it.
            raise Unusable(f"the form cannot be read ({exc}); a part's headers, such as a file "
                          f"name, longer than {MAX_FILE_NAME} characters are refused") from None

    @staticmethod
    def _refusal(request: HttpRequest, exc: HostileInput) -> HttpResponse:
        if request.path_info.startswith(("/api/", "/v1/")):
            body = {"detail": exc.message}
            if exc.field:
                body["field"] = exc.field
            return JsonResponse(body, status=exc.status)
        # A refusal naming a field starts with the field's name (``q must not contain ...``):
        # the page shows that name as it is spelled in the form or URL, set apart, rather than
        # capitalising it into another name ("Q").
        field = exc.field
        named = bool(field) and exc.message.startswith(f"{field} ")
        page = render_to_string("400.html", {
            "problem": exc.message, "field": field,
            "about_field": exc.message[len(field) + 1:] if named else ""}, request=request)
        return HttpResponse(page, status=exc.status)


def _check_path(request: HttpRequest) -> None:
    """A path parameter (``members/{username}``, ``sessions/{session_id}``) reaches a database
    query or a page as it is; %00 in the URL is a NUL there.  The whole path is checked, so
    no route can forget; the refusal names the parameter when a route matches."""
    path = request.path_info
    if path.isascii() and "\x00" not in path:
        return  # the common case, without a resolver lookup
    problem = text_problem(path)
    if problem is None:
        return
    try:
        match = resolve(path, getattr(request, "urlconf", None))
    except Resolver404:
        match = None
    for name, value in (match.kwargs.items() if match is not None else ()):
        if isinstance(value, str) and text_problem(value) is not None:
            raise Unusable(f"{name} in the address {problem}", field=name)
    raise Unusable(f"the address (URL path) {problem}")


def _check_fields(fields) -> None:
    for name, values in fields.lists():
        check_text(name, "a field name")
        for value in values:
            check_text(value, name)


# The API schemas' fields.  A body's text was checked as it was read (``loads``); these refuse
# it again, in the same words, wherever a schema is filled some other way (a form body, a query
# parameter read into a schema).

def _storable(value: str, info: ValidationInfo) -> str:
    # Raised as the boundary's refusal, not a ValueError, so it is answered {"detail", "field"}
    # like every other refusal of this text, rather than as a schema error.
    check_text(value, info.field_name or "body")
    return value


Text = Annotated[str, AfterValidator(_storable)]

# Ids in paths and bodies: a database key is a positive 64-bit integer, and SQLite raises
# OverflowError (a 500) on a larger one in a foreign-key or ``in`` lookup.  Out of range is 422.
MAX_ID = 2**63 - 1
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
