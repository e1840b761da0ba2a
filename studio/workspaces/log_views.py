"""The audit-log page, ``/w/<slug>/log/``, and its CSV download: admins and auditors read who
did what when, filtered; other members get 403, outsiders 404."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest
from django.shortcuts import render
from django.views.decorators.http import require_safe

from studio.exports import attachment, csv_lines

from . import log_reading
from .access import workspace_page
from .models import Role

LOG_READERS = frozenset({Role.ADMIN, Role.AUDITOR})
PAGE_SIZE = 50
CSV_HEADER = ["when (UTC)", "who", "what", "action", "target", "details", "details (JSON)"]


def _log_reader(request, slug: str):
    workspace, roles = workspace_page(request, slug)
    if not roles & LOG_READERS:
        raise PermissionDenied("the audit log is read by admins and auditors")
    return workspace, roles


@login_required
@require_safe
def log_page(request: HttpRequest, slug: str):
    workspace, roles = _log_reader(request, slug)
    log_filter = log_reading.read_filter(workspace, request.GET)
    page = None
    if not log_filter.errors:
        page = Paginator(log_reading.entries(workspace, log_filter), PAGE_SIZE).get_page(
            request.GET.get("page"))
    asked = {name: value for name, value in log_filter.asked.items() if value}
    return render(request, "workspaces/log.html", {
        "workspace": workspace, "roles": roles, "filter": log_filter,
        "errors": log_filter.errors, "page": page,
        "rows": [log_reading.entry_row(entry) for entry in page] if page else [],
        "who_choices": log_reading.who_choices(workspace),
        "action_choices": log_reading.action_choices(),
        "query": urlencode(asked),
    }, status=400 if log_filter.errors else 200)


def _csv_rows(entries):
    for entry in entries.iterator(chunk_size=2000):
        row = log_reading.entry_row(entry)
        yield [entry.at.isoformat(), row["who"], row["what"], entry.action, row["target"],
               "; ".join(f"{name}: {value}" for name, value in row["details"]),
               json.dumps(entry.details, ensure_ascii=False, sort_keys=True)]


@login_required
@require_safe
def log_csv(request: HttpRequest, slug: str):
    """Every entry the page's filters keep (not only one page), as CSV a spreadsheet opens
    safely: cells that read as formulas are neutralised (studio.exports)."""
    workspace, _ = _log_reader(request, slug)
    log_filter = log_reading.read_filter(workspace, request.GET)
    if log_filter.errors:
        return log_page(request, slug)
    return attachment(csv_lines(CSV_HEADER, _csv_rows(log_reading.entries(workspace,
                                                                          log_filter))),
                      "text/csv; charset=utf-8", f"audit-log-{workspace.slug}.csv")
