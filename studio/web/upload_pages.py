"""Log upload pages: the list and the upload form (drag and drop is an enhancement of a plain
multipart form), an upload's parsing progress and line errors, its CSV error report, and starting
and watching audits of it.  Progress partials are polled by htmx; without JavaScript the pages
offer a refresh link instead.  Views validate the request and call the services."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods

from studio import exports
from studio.audits.models import AuditRun
from studio.audits.services import start_audit
from studio.errors import ServiceError
from studio.rules.models import RuleSet, RuleVersion, VersionStatus
from studio.traces import erasure, intake
from studio.traces.formats import PARSERS
from studio.traces.formats.csvlog import COLUMN_OPTIONS
from studio.traces.formats.examples import GUIDES
from studio.traces.models import Upload, UploadStatus
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

UPLOADS_PER_PAGE = 25
ERRORS_SHOWN = 50
FINISHED = (UploadStatus.PARSED, UploadStatus.FAILED)
DEFAULT_FORMAT = "jsonl"
FORMAT_LABELS = {
    "jsonl": "JSON Lines: one event per line (.jsonl)",
    "csv": "CSV with a column mapping (.csv)",
    "openai": "OpenAI-style chat transcripts (.json, .jsonl)",
    "otlp": "OpenTelemetry traces, OTLP JSON (.json, .jsonl)",
    "inspect": "Inspect AI log (.eval, .json)",
}
CSV_COLUMN_LABELS = {
    "session": "Session column (required)",
    "step": "Step column",
    "input": "Input column",
    "output": "Output column",
    "lifeline": "Lifeline (agent) column",
    "timestamp": "Timestamp column",
    "event_id": "Event id column",
    "labels": "Labels column (labels separated by ; or |)",
}
# Spreadsheets run a cell that starts like a formula; tab and carriage return count too (OWASP).


# ---------------------------------------------------------------------------------------------
# The list and the upload form

@csrf_exempt  # only so the size is checked before the body is read; the POST is checked below
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def upload_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    if request.method != "POST":
        return _list_page(request, workspace, roles, _blank_form(), {})
    # The CSRF check reads the whole multipart body (a file of any size spooled to disk), so an
    # oversized request is refused first, from its Content-Length alone; refusing changes nothing.
    too_big = _too_big(request)
    if too_big:
        return _list_page(request, workspace, roles, _blank_form(), {"file": too_big},
                          status=413)
    return _receive_upload(request, workspace, roles)


@csrf_protect
def _receive_upload(request: HttpRequest, workspace, roles: set[str]):
    form = _form_from(request)
    if Role.AUDITOR not in roles:
        return _list_page(request, workspace, roles, form, {"general": _auditors_only(roles)},
                          status=403)
    errors: dict[str, str] = {}
    file = request.FILES.get("file")
    if file is None:
        errors["file"] = "Choose a log file to upload."
    elif file.size == 0:
        errors["file"] = f"{file.name} is empty: there is nothing to import."
    if form["format"] not in PARSERS:
        errors["format"] = f"Choose one of the formats: {', '.join(PARSERS)}."
    options = _options_from(form) if form["format"] == "csv" else {}
    try:
        audit, rule_set = _audit_choice(workspace, form["audit"])
    except ServiceError as exc:
        errors["audit"] = exc.message
        audit, rule_set = False, None
    if form["format"] == "csv" and not options.get("session"):
        errors["csv_session"] = ("A CSV log needs the name of the column that holds the "
                                 "session.")
    if errors:
        return _list_page(request, workspace, roles, form, errors, status=400)
    try:
        upload, created = intake.create_upload(workspace, file, form["format"], options,
                                               by=actor(request), filename=file.name,
                                               audit=audit, rule_set=rule_set)
    except ServiceError as exc:
        return _list_page(request, workspace, roles, form,
                          {_form_field(exc.field): exc.message}, status=exc.status)
    except OSError:
        return _list_page(request, workspace, roles, form,
                          {"file": "The file could not be stored on the server; please try "
                                   "again, and tell an administrator if it keeps failing."},
                          status=503)
    if getattr(upload, "resumed", False):
        messages.success(request, f"{upload.filename} was uploaded before as upload #{upload.pk} "
                                  "and had failed; its parsing resumes where it stopped.")
        return redirect("upload", slug=workspace.slug, upload_id=upload.pk)
    if not created:
        link = reverse("upload", args=[workspace.slug, upload.pk])
        messages.warning(request, format_html(
            'This file was already uploaded to this workspace as <a href="{}">upload #{} '
            '({})</a> on {} UTC; a file is imported once, so nothing was added.',
            link, upload.pk, upload.filename, upload.created_at.strftime("%Y-%m-%d %H:%M")))
        return redirect("uploads", slug=workspace.slug)
    messages.success(request, f"{upload.filename} uploaded as upload #{upload.pk}.")
    return redirect("upload", slug=workspace.slug, upload_id=upload.pk)


def _too_big(request: HttpRequest) -> str | None:
    limit = settings.MAX_REQUEST_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length <= limit:
        return None
    return (f"This upload is {filesizeformat(length)}; uploads are limited to "
            f"{filesizeformat(limit)}. Split the log into smaller files and upload each.")


def _auditors_only(roles: set[str]) -> str:
    have = ", ".join(sorted(roles)) or "no role"
    return (f"Only members with the auditor role upload logs and run audits; your roles here "
            f"are: {have}. Ask a workspace owner for the auditor role.")


def _blank_form() -> dict:
    return {"format": DEFAULT_FORMAT, **{f"csv_{key}": "" for key in COLUMN_OPTIONS},
            "csv_data": "", "csv_delimiter": ",", "audit": AUDIT_ALL}


# The upload form's "audit as it loads" choice: no, every approved rule, or a rule set's.
AUDIT_NONE, AUDIT_ALL = "none", "all"


def _audit_choice(workspace, value: str) -> tuple[bool, RuleSet | None]:
    """(audit?, rule set) from the form's value; ServiceError naming the field when unknown."""
    if value in ("", AUDIT_NONE):
        return False, None
    if value == AUDIT_ALL:
        return True, None
    try:
        return True, intake.audit_rule_set(workspace, value)
    except ServiceError:
        raise ServiceError("Choose whether to audit the log as it loads, and with which rules; "
                           "that rule set no longer exists.", field="audit") from None


def _form_from(request: HttpRequest) -> dict:
    # A post without the audit field (a script, an old page) asks for no audit.
    blank = {**_blank_form(), "audit": AUDIT_NONE}
    return {key: request.POST.get(key, default).strip() if key != "csv_delimiter"
            else request.POST.get(key, default) for key, default in blank.items()}


def _options_from(form: dict) -> dict:
    """The CSV column mapping the service expects, from the form's fields (empty ones left out)."""
    options: dict = {key: form[f"csv_{key}"] for key in COLUMN_OPTIONS if form[f"csv_{key}"]}
    data = [column.strip() for column in form["csv_data"].split(",") if column.strip()]
    if data:
        options["data"] = data
    delimiter = form["csv_delimiter"]
    # A tab cannot be typed into a text field; accept its usual spellings.
    delimiter = "\t" if delimiter.strip().lower() in ("\\t", "tab") else delimiter
    if delimiter and delimiter != ",":
        options["delimiter"] = delimiter
    return options


def _form_field(service_field: str | None) -> str:
    """The form field a service error names: ``options.session`` is ``csv_session``."""
    if not service_field:
        return "general"
    if service_field.startswith("options."):
        return "csv_" + service_field.removeprefix("options.")
    if service_field == "rule_set":
        return "audit"
    return service_field if service_field in ("file", "format", "audit") else "general"


def _list_page(request, workspace, roles, form: dict, errors: dict, status: int = 200):
    uploads = (Upload.objects.filter(workspace=workspace).select_related("uploaded_by")
               .order_by("-created_at", "-id"))
    page = Paginator(uploads, UPLOADS_PER_PAGE).get_page(request.GET.get("page"))
    csv_fields = [{"name": f"csv_{key}", "label": CSV_COLUMN_LABELS[key],
                   "value": form[f"csv_{key}"], "error": errors.get(f"csv_{key}")}
                  for key in COLUMN_OPTIONS]
    # Errors the form has no field for (an unknown CSV option, say) are shown at the top.
    known = {"file", "format", "audit", "csv_data", "csv_delimiter",
             *(f["name"] for f in csv_fields)}
    has_approved = RuleVersion.objects.filter(rule__workspace=workspace,
                                              status=VersionStatus.APPROVED).exists()
    general = [message for field, message in errors.items() if field not in known]
    return render(request, "traces/uploads.html", {
        "workspace": workspace, "slug": workspace.slug, "roles": roles,
        "can_upload": Role.AUDITOR in roles, "auditors_only": _auditors_only(roles),
        "page": page, "form": form, "errors": errors, "general_errors": general,
        "formats": [(key, FORMAT_LABELS.get(key, key)) for key in PARSERS],
        "format_guides": [{"key": key, "label": FORMAT_LABELS.get(key, key),
                           "description": GUIDES[key].description,
                           "example": GUIDES[key].example} for key in PARSERS if key in GUIDES],
        "csv_fields": csv_fields, "max_bytes": settings.MAX_REQUEST_BYTES,
        "has_approved": has_approved,
        "rule_sets": RuleSet.objects.filter(workspace=workspace).order_by("name"),
    }, status=status)


# ---------------------------------------------------------------------------------------------
# One upload: progress, line errors, audits

@login_required
@require_http_methods(["GET", "HEAD"])
def upload_detail(request: HttpRequest, slug: str, upload_id: int):
    workspace, roles = workspace_page(request, slug)
    upload = _upload_in(workspace, upload_id)
    return render(request, "traces/upload.html", _detail_context(workspace, roles, upload))


@login_required
@require_http_methods(["GET", "HEAD"])
def upload_progress(request: HttpRequest, slug: str, upload_id: int):
    """htmx: the parsing progress.  The poller says which status it showed (``shown``); when the
    status has changed the answer also updates the announced status, and once parsing has
    finished it brings in the line errors and the audit form (out of band)."""
    workspace, roles = workspace_page(request, slug)
    upload = _upload_in(workspace, upload_id)
    shown = request.GET.get("shown", upload.status)
    context = {"workspace": workspace, "slug": workspace.slug, "upload": upload,
               "polling": upload.status not in FINISHED, "announce": shown != upload.status}
    if upload.status in FINISHED and shown not in FINISHED:
        context.update(_detail_context(workspace, roles, upload), finished_now=True)
    return render(request, "traces/_upload_progress.html", context)


@login_required
@require_http_methods(["GET", "HEAD"])
def upload_errors_csv(request: HttpRequest, slug: str, upload_id: int):
    workspace, _ = workspace_page(request, slug)
    return exports.upload_errors_csv(_upload_in(workspace, upload_id))


@login_required
@require_http_methods(["POST"])
def upload_audit(request: HttpRequest, slug: str, upload_id: int):
    workspace, roles = workspace_page(request, slug)
    upload = _upload_in(workspace, upload_id)
    back = redirect("upload", slug=workspace.slug, upload_id=upload.pk)
    if Role.AUDITOR not in roles:
        context = _detail_context(workspace, roles, upload)
        context["refusal"] = _auditors_only(roles)
        return render(request, "traces/upload.html", context, status=403)
    try:
        rule_set = intake.audit_rule_set(workspace, request.POST.get("rule_set"))
    except ServiceError:
        messages.error(request, "That rule set no longer exists; choose another.")
        return back
    try:
        run = start_audit(workspace, rule_set=rule_set, upload=upload, by=actor(request))
    except ServiceError as exc:
        messages.error(request, _audit_refusal(exc, workspace))
        return back
    what = f"rule set {rule_set.name!r}" if rule_set else "every approved rule"
    messages.success(request, f"Audit #{run.pk} of {upload.filename} with {what} started.")
    return back


@login_required
@require_http_methods(["POST"])
def upload_resume(request: HttpRequest, slug: str, upload_id: int):
    """Resuming a failed upload (auditors, who upload): parsing goes on from its checkpoint."""
    workspace, roles = workspace_page(request, slug)
    upload = _upload_in(workspace, upload_id)
    if Role.AUDITOR not in roles:
        context = _detail_context(workspace, roles, upload)
        context["refusal"] = _auditors_only(roles)
        return render(request, "traces/upload.html", context, status=403)
    try:
        intake.resume_upload(upload, by=actor(request))
    except ServiceError as exc:
        messages.error(request, _sentence(exc.message) + ".")
    else:
        messages.success(request, f"Parsing of {upload.filename} resumes where it stopped; the "
                                  f"{upload.events_stored} events stored before are kept.")
    return redirect("upload", slug=workspace.slug, upload_id=upload.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def upload_erase(request: HttpRequest, slug: str, upload_id: int):
    """Erasing an upload (auditors and admins).  GET is the confirmation page, for browsers
    without JavaScript; POST erases (htmx asks with ``hx-confirm`` first) and goes to the
    uploads list."""
    workspace, roles = workspace_page(request, slug)
    upload = _upload_in(workspace, upload_id)
    if not roles & {Role.AUDITOR, Role.ADMIN}:
        context = _detail_context(workspace, roles, upload)
        context["refusal"] = "Only auditors and admins may erase an upload."
        return render(request, "traces/upload.html", context, status=403)
    if request.method != "POST":
        return render(request, "traces/erase_upload.html", {
            "workspace": workspace, "slug": workspace.slug, "upload": upload,
            "preview": erasure.preview_upload(upload)})
    try:
        done = erasure.erase_upload(upload, by=actor(request))
    except erasure.StillParsing as exc:
        messages.error(request, _sentence(str(exc)) + ".")
        return redirect("upload", slug=workspace.slug, upload_id=upload.pk)
    messages.success(request, f"{upload.filename} was erased: {done.events} "
                              f"event{'s' if done.events != 1 else ''}, "
                              f"{done.sessions_removed} session"
                              f"{'s' if done.sessions_removed != 1 else ''} left with no event, "
                              f"and {done.results} audit result"
                              f"{'s' if done.results != 1 else ''} computed from them. "
                              + done.copies_sentence())
    target = reverse("uploads", args=[workspace.slug])
    if request.headers.get("HX-Request"):
        response = HttpResponse()
        response["HX-Redirect"] = target
        return response
    return redirect(target)


def _audit_refusal(exc: ServiceError, workspace):
    if exc.field == "rule_set" and "no approved rule versions" in exc.message:
        return format_html('{}: only approved rule versions audit. <a href="{}">See the '
                           'rules</a>.', _sentence(exc.message),
                           reverse("rules", args=[workspace.slug]))
    return _sentence(exc.message)


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:]


@login_required
@require_http_methods(["GET", "HEAD"])
def audit_progress(request: HttpRequest, slug: str, audit_id: int):
    """htmx: an audit run's progress bar; like ``upload_progress`` it also updates the announced
    status when it has changed since the poller's last answer."""
    workspace, _ = workspace_page(request, slug)
    run = get_object_or_404(AuditRun, workspace=workspace, pk=audit_id)
    shown = request.GET.get("shown", run.status)
    return render(request, "traces/_audit_progress.html#bar",
                  {"slug": workspace.slug, "run": run, "announce": shown != run.status})


def _upload_in(workspace, upload_id: int) -> Upload:
    return get_object_or_404(Upload.objects.select_related("uploaded_by"),
                             workspace=workspace, pk=upload_id)


def _detail_context(workspace, roles: set[str], upload: Upload) -> dict:
    error_count = upload.errors.count()
    # An impact check of a draft on this upload is not one of its audits.
    runs = list(upload.audit_runs.filter(workspace=workspace).audits()
                .select_related("rule_set", "created_by").order_by("-created_at", "-id"))
    has_approved = RuleVersion.objects.filter(rule__workspace=workspace,
                                              status=VersionStatus.APPROVED).exists()
    read_nothing = (upload.status in FINISHED and upload.lines_ok == 0
                    and upload.lines_bad > 0)
    return {
        "workspace": workspace, "slug": workspace.slug, "roles": roles, "upload": upload,
        "polling": upload.status not in FINISHED,
        "format_label": FORMAT_LABELS.get(upload.format, upload.format),
        "first_errors": list(upload.errors.order_by("line", "id")[:ERRORS_SHOWN]),
        "error_count": error_count, "errors_shown": min(error_count, ERRORS_SHOWN),
        "read_nothing": read_nothing,
        "runs": runs, "rule_sets": list(RuleSet.objects.filter(workspace=workspace)
                                        .order_by("name")),
        "has_approved": has_approved, "can_audit": Role.AUDITOR in roles,
        "can_erase": bool(roles & {Role.AUDITOR, Role.ADMIN}),
        "auditors_only": _auditors_only(roles),
    }

