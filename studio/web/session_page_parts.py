"""What the session list and a session's pages share: reading their numeric parameters,
choosing the audit run they show, paging, query strings and a rule's verdict badge."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db.models import Exists, OuterRef
from django.http import HttpResponse
from django.shortcuts import render

from studio.audits.models import AuditRun, RunStatus, SessionResult
from studio.monitor.verdicts import verdict_glyph, verdict_words

RUNS_OFFERED = 50
SEARCH_LIMIT = 300
# Larger numbers name nothing (ids are 64-bit) and would not fit a query's parameter.
LARGEST_NUMBER = 2**63 - 1
# Parameters of the list that a session page carries back to it.
LIST_PARAMS = ("run", "rule", "verdict", "q", "upload", "all", "page")


class Missing(Exception):
    """Something the URL names does not exist in this workspace: a 404 page with a message."""


def missing_page(request, workspace, message: str) -> HttpResponse:
    return render(request, "sessions/missing.html", {"workspace": workspace, "message": message},
                  status=404)


def int_param(request, name: str, problems: list[str], what: str,
             minimum: int = 0) -> int | None:
    """The parameter as an integer, or None when absent; a bad value adds a message."""
    raw = request.GET.get(name, "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < minimum:
        problems.append(f"“{raw[:40]}” is not a valid {what}: give a whole number"
                        f"{' from 1' if minimum == 1 else ''}.")
        return None
    if int(raw) > LARGEST_NUMBER:
        problems.append(f"“{raw[:40]}” is too large: no {what} is that big.")
        return None
    return int(raw)


def run_choice(request, workspace, problems: list[str], session=None) -> AuditRun | None:
    """The run named by ``?run=``, else the newest finished run that has results (for a
    session: the newest run of any status with results for it), so a page never opens on an
    empty run while another has verdicts.  A run of another workspace is Missing."""
    wanted = int_param(request, "run", problems, "audit run number")
    runs = (AuditRun.objects.filter(workspace=workspace).select_related("rule_set", "upload")
            .with_kind())
    if wanted is not None:
        run = runs.filter(id=wanted).first()
        if run is None:
            raise Missing(f"There is no audit run {wanted} in this workspace.")
        return run
    # Impact checks of unapproved versions (studio.evidence) are opened only when named.
    newest = runs.audits().order_by("-created_at", "-id")
    finished = newest.filter(status=RunStatus.DONE)
    if session is not None:
        audited = newest.filter(Exists(SessionResult.objects.filter(
            run=OuterRef("pk"), session=session))).first()
        if audited is not None:
            return audited
    with_results = finished.filter(Exists(SessionResult.objects.filter(run=OuterRef("pk"))))
    return with_results.first() or finished.first() or newest.first()


def run_options(workspace, chosen: AuditRun | None = None) -> list[dict]:
    """The workspace's newest audits; and the chosen run if it is not among them (an impact
    check opened by its number, labelled as one), so the picker shows what the page reads."""
    runs = list(AuditRun.objects.filter(workspace=workspace).audits().with_kind()
                .select_related("rule_set", "upload").order_by("-created_at", "-id")
                [:RUNS_OFFERED])
    if chosen is not None and chosen not in runs:
        runs.insert(0, chosen)
    return [{"id": r.id, "label": run_label(r)} for r in runs]


def run_label(run: AuditRun) -> str:
    """A run as the pickers name it; an impact check says it is one, not which rules it read."""
    head = f"#{run.id} · {run.created_at:%Y-%m-%d %H:%M} UTC · {run.status}"
    if run.draft_label:
        return f"{head} · {run.draft_label}"
    rules = f"rule set {run.rule_set.name}" if run.rule_set else "all rules"
    scope = f"upload {run.upload.filename}" if run.upload else "all sessions"
    return f"{head} · {rules} · {scope}"


def page_links(current: int, total: int) -> list[int | None]:
    """Page numbers to offer: the first, the last and those near the current (None: a gap)."""
    wanted = {1, total, *range(current - 2, current + 3)}
    out: list[int | None] = []
    for number in sorted(n for n in wanted if 1 <= n <= total):
        if out and out[-1] is not None and number > out[-1] + 1:
            out.append(None)
        out.append(number)
    return out


def query_string(**params) -> str:
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})


def verdict_badge(verdict: str, count: int = 0) -> dict:
    """A rule's one verdict in a session (``session_verdict``), in words and a glyph;
    ``verdict`` is its public word (complied, violated, open), as the pages' classes name it."""
    word = verdict_words(verdict)
    return {"verdict": word, "words": word, "count": count, "glyph": verdict_glyph(verdict)}
