"""The risk model page: the newest learned model of the workspace (status and progress, polled
while it is learned), the model drawn, a button to learn it again, and each live session's risk
over time under the model of the live rules."""

from __future__ import annotations

import json
import threading
import weakref

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from studio.live.context import context_for
from studio.live.events import SOURCE_LIVE
from studio.rules.models import RuleVersion
from studio.traces.models import TraceSession
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from studio.errors import ServiceError
from studio.rules.models import RuleSet

from . import drawing, learning
from . import predicates as model_predicates
from .models import LearnedRiskModel, ModelStatus
from .services import effective_policy

LIVE_SESSIONS_SHOWN = 10
LEARNERS = (Role.AUTHOR, Role.ADMIN)

# A stored model never changes: its picture is drawn once per loaded model (and goes with it).
_PICTURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PICTURES_LOCK = threading.Lock()


def _picture(model) -> drawing.ModelDrawing:
    with _PICTURES_LOCK:
        found = _PICTURES.get(model)
    if found is None:
        found = drawing.draw_model(model)
        with _PICTURES_LOCK:
            _PICTURES[model] = found
    return found


def _newest(workspace) -> LearnedRiskModel | None:
    learning.mark_stalled(workspace)
    return (LearnedRiskModel.objects.filter(workspace=workspace).defer("model")
            .select_related("requested_by").order_by("-id").first())


def _versions_in_words(versions) -> list[str]:
    numbers = dict(RuleVersion.objects.filter(id__in=[i for _, i in versions])
                   .values_list("id", "number"))
    return [f"{rule} v{numbers[i]}" if i in numbers else f"{rule} (a deleted version)"
            for rule, i in versions]


@login_required
@require_safe
def model_page(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    context = context_for(workspace)
    policy = effective_policy(workspace)
    newest = _newest(workspace)
    drawn = (newest if newest is not None and newest.status == ModelStatus.READY else
             LearnedRiskModel.objects.filter(workspace=workspace, status=ModelStatus.READY)
             .defer("model").order_by("-finished_at", "-id").first())
    page = {"workspace": workspace, "roles": roles, "newest": newest, "drawn": drawn,
            "can_learn": bool(roles & set(LEARNERS)), "policy": policy,
            "live_versions": _versions_in_words(context.versions_key),
            "max_sessions": learning.max_sessions()}
    if newest is not None:
        page["newest_versions"] = _versions_in_words(newest.versions)
    if drawn is not None:
        page.update({"drawn_versions": _versions_in_words(drawn.versions),
                     "drawn_is_live": learning.key_of(drawn.versions) == context.versions_key})
        try:
            model = learning.load_model(drawn.pk)
        except learning.ModelUnreadable as exc:
            page["unreadable"] = str(exc)
        else:
            page.update({"picture": _picture(model), "epsilon": model.epsilon,
                         "delta": model.delta})
    page.update(_predicates_part(workspace, drawn))
    page["sessions"], page["sessions_more"], page["risk_note"] = _live_risks(
        workspace, context, policy)
    return render(request, "guard/model.html", page)


def _predicates_part(workspace, drawn) -> dict:
    """The live rule sets with their predicates, and the drawn model's alarm quality and
    proposals."""
    rulesets = [{"ruleset": r, "predicates": model_predicates.predicates_of(r)}
                for r in RuleSet.objects.filter(workspace=workspace, live=True).order_by("id")]
    summary = model_predicates.model_summary(drawn) if drawn is not None else None
    quality = (summary or {}).get("quality")
    if quality:
        quality = {**quality, **{k: None if quality.get(k) is None else round(100 * quality[k])
                                 for k in ("precision", "recall")},
                   "threshold_percent": round(100 * quality["threshold"])}
    return {"live_rulesets": rulesets, "quality": quality,
            "proposals": [{**p, "predicate_json": json.dumps(p["predicate"])}
                          for p in (summary or {}).get("proposals", [])],
            "learned_predicates": (summary or {}).get("predicates", [])}


def _ruleset_of(request: HttpRequest, workspace) -> RuleSet:
    raw = request.POST.get("rule_set", "")
    found = (RuleSet.objects.filter(workspace=workspace, pk=int(raw)).first()
             if raw.isdigit() and len(raw) < 12 else None)
    if found is None:
        raise ServiceError("choose a rule set of this workspace", field="rule_set", status=404)
    return found


def _change_predicates(request: HttpRequest, slug: str, change) -> HttpResponse:
    workspace, roles = workspace_page(request, slug)
    if not roles & set(model_predicates.EDITORS):
        raise PermissionDenied("choosing the model's predicates needs the author or admin role")
    try:
        ruleset = _ruleset_of(request, workspace)
        done = change(ruleset)
    except ServiceError as exc:
        messages.error(request, f"{exc.field}: {exc.message}" if exc.field else exc.message)
    else:
        messages.success(request, done)
    return redirect("guard_model", slug=slug)


@login_required
@require_POST
def add_predicate(request: HttpRequest, slug: str):
    """Add a predicate (as JSON: a proposal's, or one typed) to a rule set's model."""

    def change(ruleset):
        raw = request.POST.get("predicate", "")
        try:
            data = json.loads(raw)
        except ValueError:
            raise ServiceError("the predicate is not JSON (for example {\"kind\": \"field\", "
                               "\"path\": \"data.amount\", \"op\": \">\", "
                               "\"value\": 10000})", field="predicate", status=422) from None
        model_predicates.add_predicate(ruleset, data, actor(request))
        return (f"Added to the model of {ruleset.name}"
                + ("; the model is learned again." if ruleset.live else "."))

    return _change_predicates(request, slug, change)


@login_required
@require_POST
def remove_predicate(request: HttpRequest, slug: str):
    def change(ruleset):
        name = request.POST.get("name", "")
        model_predicates.remove_predicate(ruleset, name, actor(request))
        return (f"Removed {name} from the model of {ruleset.name}"
                + ("; the model is learned again." if ruleset.live else "."))

    return _change_predicates(request, slug, change)


def _live_risks(workspace, context, policy) -> tuple[list[dict], int, str]:
    sessions = (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE)
                .order_by(F("last_event_at").desc(nulls_last=True), "-id"))
    total = sessions.count()
    if not total:
        return [], 0, "No live session yet."
    model = learning.current_model(workspace, context.versions_key) if context.versions else None
    if model is None:
        return [], total, ("No model is ready for the live rules yet, so no session's risk can "
                           "be estimated.")
    out = []
    for session in sessions[:LIVE_SESSIONS_SHOWN]:
        row = {"session": session}
        if session.steps > learning.REPLAY_MAX_EVENTS:
            row["note"] = (f"{session.steps} events: longer than the "
                           f"{learning.REPLAY_MAX_EVENTS} replayed here.")
        else:
            try:
                points = learning.session_risks(model, session.pk, context.labeling,
                                                policy.horizon, policy.guarded_risk)
            except learning.LLMError as exc:
                row["note"] = f"A labeler could not label its events ({exc.message})."
            else:
                words = drawing.risk_words(points, policy.threshold, policy.horizon)
                row.update({"chart": drawing.draw_risk(points, policy.threshold,
                                                       " ".join(words)),
                            "words": words})
        out.append(row)
    return out, max(0, total - len(out)), ""


@login_required
@require_safe
def model_progress(request: HttpRequest, slug: str):
    """The polled status of the newest model; once it is no longer queued or running (or a
    newer one appeared), the whole page is loaded again to draw it."""
    workspace, roles = workspace_page(request, slug)
    newest = _newest(workspace)
    shown = request.GET.get("shown", "")
    if newest is None or str(newest.pk) != shown or newest.status not in (
            ModelStatus.QUEUED, ModelStatus.RUNNING):
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    return render(request, "guard/model.html#progress",
                  {"workspace": workspace, "newest": newest})


@login_required
@require_POST
def learn_again(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    if not roles & set(LEARNERS):
        raise PermissionDenied("learning a model needs the author or admin role")
    try:
        made = learning.request_model(workspace, actor(request), "asked for on the page")
    except learning.NothingToLearn as exc:
        messages.error(request, exc.message)
    else:
        made.refresh_from_db(fields=["status"])   # tasks run in-process may have finished it
        messages.success(request, f"Risk model #{made.pk}: {made.get_status_display().lower()}.")
    return redirect("guard_model", slug=slug)
