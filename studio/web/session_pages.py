"""One session's pages: its verdict lanes, step timeline, residuals and violation witnesses,
the htmx partial of its residual panel, and the form that corrects a label of one of its steps
(the list of sessions is studio/web/session_list_page.py).

Everything is a plain GET with query parameters (``run``, ``step``, ``page``, ``violation`` and
the list's filters), so the pages work without JavaScript; htmx only swaps the residual panel.
A parameter a person can get wrong gets a message on the page (status 400), never a 500; an
unknown session, run or workspace gets 404.

Each step shows where its LLM labels came from (labeler, model, confidence: the run's
``LabelProvenance``) and the corrections people made; auditors correct a label with a POST to
``session_correct_label``, which recomputes the session's verdicts in the run and comes back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max, Min, Q
from django.http import HttpRequest, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from studio.audits import replay
from studio.audits.corrections import correct_label
from studio.audits.models import (AuditRun, LabelCorrection, LabelProvenance, SessionResult,
                                  ViolationRecord)
from studio.audits.services import prefetch_answers
from studio.errors import ServiceError
from studio.labeling import LabelerConfigError
from studio.labeling.llm import LLMError
from studio.live.context import context_for as live_context_for
from studio.live.reading import current_rules
from studio.logic.anticipation import WORDS as COMPLETE_WORDS
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.reads import rule_reads
from studio.monitor import RuleError
from studio.monitor.explain import explain_violation, residual_reading
from studio.monitor.verdicts import (PENDING, SATISFIED, VIOLATED, effective_counting,
                                     session_verdict, verdict_glyph, verdict_words)
from studio.traces.models import Event, TraceSession
from studio.traces.trace_links import conflict_sentences
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import live_pages
from .session_page_parts import (LARGEST_NUMBER, LIST_PARAMS, SEARCH_LIMIT, Missing,
                                 int_param, missing_page, page_links, query_string, run_choice,
                                 run_options, verdict_badge)

STEPS_PER_PAGE = 100
# Timeline cells show this much of a value; the rest opens in a <details>, up to TEXT_KEPT.
TEXT_SHOWN = 160
TEXT_KEPT = 8_000
# Violations listed per rule on one page of steps (a rule may fail at every step).
VIOLATIONS_LISTED = 100
WITNESS_LISTED = 500


def _so_far(verdict: str, count: int, session_open: bool) -> dict:
    """A rule's verdict as it stood after a step; open at a step of a session that has ended
    since is open at that step only."""
    badge = verdict_badge(verdict, count)
    if verdict == PENDING and not session_open:
        badge["words"] = "open at this step"
    return badge


def _stored_badge(result: SessionResult) -> dict:
    return verdict_badge(result.session_verdict, result.violation_count)


@dataclass
class _Extent:
    """The session's events: how many, and their first and last step numbers."""

    count: int
    first: int | None
    last: int | None

    def describe(self) -> str:
        if not self.count:
            return "this session has no events"
        return f"its steps run from {self.first} to {self.last}"


def _extent(session) -> _Extent:
    found = Event.objects.filter(session=session).aggregate(
        count=Count("id"), first=Min("step"), last=Max("step"))
    return _Extent(found["count"], found["first"], found["last"])


def _back_query(request) -> str:
    """The list's filters the session page was opened with, kept to its known parameters."""
    given = QueryDict(request.GET.get("back", "")[:2000])
    return query_string(**{k: given.get(k, "")[:SEARCH_LIMIT] for k in LIST_PARAMS})


def _step_problem(session, extent: _Extent, step: int) -> str | None:
    if Event.objects.filter(session=session, step=step).exists():
        return None
    if extent.count and extent.last is not None and step > extent.last:
        return (f"Step {step} is beyond the end of this session: {extent.describe()}. "
                "No step is selected.")
    return f"There is no step {step} in this session: {extent.describe()}. No step is selected."


def _selected_violation(request, run, results, problems) -> ViolationRecord | None:
    wanted = int_param(request, "violation", problems, "violation number")
    if wanted is None:
        return None
    found = (ViolationRecord.objects.filter(id=wanted, result__in=results)
             .select_related("result__rule_version__rule").first()) if results else None
    if found is None:
        where = f"run {run.id}" if run else "any run"
        problems.append(f"Violation {wanted} is not one of this session's violations in "
                        f"{where}.")
    return found


def _text(value) -> dict | None:
    """A value of an event: text as it came, JSON indented so that it wraps between tokens (a
    narrow column then breaks it at its own lines, not inside words). Longer than TEXT_SHOWN
    compact characters, it shows as one cut line with the rest to expand, up to TEXT_KEPT."""
    if value is None or value == "" or value == {} or value == []:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    if len(text) <= TEXT_SHOWN:
        if isinstance(value, str):
            return {"short": text}
        return {"short": text,
                "indented": json.dumps(value, ensure_ascii=False, indent=2, default=str)}
    # The summary line with runs of whitespace collapsed (logs pad with hundreds of spaces).
    short = " ".join(text[:TEXT_SHOWN * 4].split())[:TEXT_SHOWN]
    full = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2,
                                                           default=str)
    return {"short": short + "…", "full": full[:TEXT_KEPT],
            "omitted": max(0, len(full) - TEXT_KEPT)}


class _Links:
    """URLs of the session page and of its residual partial, keeping run, back and violation."""

    def __init__(self, slug: str, session_id: int, run, back: str, violation):
        self.page_url = reverse("session", args=[slug, session_id])
        self.residual_url = reverse("session_residual", args=[slug, session_id])
        self.list_url = reverse("sessions", args=[slug])
        self.keep = {"run": run.id if run else None, "back": back,
                     "violation": violation.id if violation else None}

    def page(self, **params) -> str:
        return f"{self.page_url}?{query_string(**{**self.keep, **params})}"

    def step(self, step: int) -> str:
        return self.page(step=step) + f"#step-{step}"

    def residual(self, step: int) -> str:
        return f"{self.residual_url}?{query_string(run=self.keep['run'], step=step)}"

    def back(self) -> str:
        query = self.keep["back"]
        return f"{self.list_url}?{query}" if query else self.list_url


def _residual_context(run, session, step: int | None, results) -> dict:
    """What the residual panel shows: every rule after the selected step (replayed), or the
    stored residuals after the last step when no step is selected."""
    context = {"run": run, "step": step, "state": None, "replay_error": None,
               "stored": [{"rule": r.rule_version.rule.name, "badge": _stored_badge(r),
                           "final": verdict_words(r.final), "residual": r.residual,
                           "reading": residual_reading(r.residual,
                                                       since=_violated_since(r.timeline),
                                                       ended=not session.is_open,
                                                       complied=r.session_verdict == SATISFIED)}
                          for r in results]}
    if run is not None and step is not None:
        try:
            prefetch_answers(run, session.id, step)
            context["state"] = _state_in_words(replay.state_at(run, session, step), session,
                                               results)
        except replay.StepNotFound:
            context["replay_error"] = f"There is no step {step} in this session."
        except (RuleError, LabelerConfigError, ValueError) as exc:
            context["replay_error"] = f"The run's rules could not be replayed: {exc}"
        except LLMError as exc:
            context["replay_error"] = f"The run's LLM labelers could not be asked: {exc.message}"
    return context


# Violations explained in the residual panel per rule at one step.
EXPLAINED_AT_STEP = 5


def _complete_words(found: dict | None) -> dict | None:
    """A rule's anticipatory verdict for its lane: in words, since when, and why."""
    if not found:
        return None
    return {"words": COMPLETE_WORDS[found["complete"]], "step": found["complete_step"],
            "reason": found["complete_reason"]}


def _violated_since(timeline: list, step: int | None = None) -> int | None:
    """The step from which TRAC's verdict was violated (up to ``step``), from a timeline."""
    since = None
    for changed_at, value in timeline:
        if step is not None and changed_at > step:
            break
        since = changed_at if value == VIOLATED else None
    return since


def _state_in_words(state: replay.StepState, session, results) -> dict:
    """The replayed state at a step with each rule's one verdict as it stood after that step
    (the violations counted up to it), the violations detected at it explained, and the
    residuals read in English."""
    by_rule = {r.rule_version.rule.name: r for r in results}
    counted = dict(ViolationRecord.objects.filter(result__in=results, detected__lte=state.step)
                   .values("result_id").annotate(n=Count("id")).values_list("result_id", "n"))
    here: dict[int, list] = {}
    for v in (ViolationRecord.objects.filter(result__in=results, detected=state.step)
              .order_by("result_id", "trigger", "id")):
        here.setdefault(v.result_id, []).append(v)
    last = Event.objects.filter(session=session).aggregate(last=Max("step"))["last"]
    ended = state.step == last and not session.is_open
    rules = []
    for rule in state.rules:
        result = by_rule.get(rule.rule)
        counting = effective_counting(result.rule_version.counting if result else "",
                                      rule.formula)
        count = counted.get(result.id, 0) if result else 0
        verdict = session_verdict(count, rule.final if ended else "", open=not ended,
                                  settled=rule.verdict, counting=counting)
        found = here.get(result.id, []) if result else []
        since = _violated_since(result.timeline, state.step) if result else None
        rules.append({
            "rule": rule.rule, "badge": _so_far(verdict, count, session.is_open),
            "residual": rule.residual,
            "reading": residual_reading(rule.residual, since=since, ended=ended,
                                        complied=verdict == SATISFIED),
            "final": verdict_words(rule.final), "counted": count, "detected_here": len(found),
            "explanations": [explain_violation(rule.formula, v.trigger, v.detected, v.at_end,
                                               v.witness, counting)
                             for v in found[:EXPLAINED_AT_STEP]],
            "obligations": [{"triggers": ob.triggers, "more": ob.more, "residual": ob.residual,
                             "reading": residual_reading(ob.residual)}
                            for ob in rule.obligations]})
    return {"step": state.step, "rules": rules, "ended": ended}


def _results_of(run, session) -> list[SessionResult]:
    if run is None:
        return []
    return list(SessionResult.objects.filter(run=run, session=session)
                .select_related("rule_version__rule", "session")
                .order_by("rule_version__rule__name", "rule_version_id"))


def _session_or_missing(workspace, session_id: int) -> TraceSession:
    session = TraceSession.objects.filter(workspace=workspace, id=session_id).first()
    if session is None:
        raise Missing(f"There is no session {session_id} in this workspace.")
    return session


def _session_and_run(request, workspace, session_id: int, problems: list[str]):
    """The session of the URL and the audit run the page shows it in (``Missing`` if either
    names nothing of this workspace)."""
    session = _session_or_missing(workspace, session_id)
    return session, run_choice(request, workspace, problems, session=session)


@require_safe
@login_required
def session_detail(request: HttpRequest, slug: str, session_id: int):
    workspace, roles = workspace_page(request, slug)
    problems: list[str] = []
    try:
        session, run = _session_and_run(request, workspace, session_id, problems)
    except Missing as exc:
        return missing_page(request, workspace, str(exc))
    extent = _extent(session)
    results = _results_of(run, session)
    violation = _selected_violation(request, run, results, problems)

    step = int_param(request, "step", problems, "step number")
    if step is not None:
        problem = _step_problem(session, extent, step)
        if problem:
            problems.append(problem)
            step = None
    if step is None and violation is not None:
        step = violation.detected  # open on the step where the violation was found

    pages = max(1, -(-extent.count // STEPS_PER_PAGE))
    number = int_param(request, "page", problems, "page number", minimum=1)
    beyond = number if number is not None and number > pages else None
    if number is None or beyond:  # the page of the selected step, else the first
        position = (Event.objects.filter(session=session, step__lt=step).count()
                    if step is not None else 0)
        number = position // STEPS_PER_PAGE + 1
    if beyond:
        problems.append(f"There is no page {beyond} of steps: the session has {pages} "
                        f"page{'s' if pages != 1 else ''}. Showing page {number}.")

    events = list(Event.objects.filter(session=session).order_by("step").values(
        "step", "lifeline", "timestamp", "input", "output", "data", "labels")
        [(number - 1) * STEPS_PER_PAGE:number * STEPS_PER_PAGE])
    window = [e["step"] for e in events]
    labels = {}
    if run is not None and events:
        try:
            prefetch_answers(run, session.id, max(window[-1], step or 0))
            labels = replay.labels_between(run, session, window[0], window[-1])
        except (RuleError, LabelerConfigError, ValueError) as exc:
            problems.append(f"The run's labelers could not label these events: {exc}")
        except LLMError as exc:
            problems.append(f"The run's LLM labelers could not be asked: {exc.message}")
    answers = _llm_answers(run, session, window)
    corrections = _corrections(session, window)
    can_correct = Role.AUDITOR in roles and bool(results)

    links = _Links(slug, session.id, run, _back_query(request), violation)
    witness = _witness(violation, links)
    witness_steps = {entry["step"] for entry in witness["entries"]} if witness else set()
    marks = {}
    if violation is not None:
        marks = {violation.trigger: "trigger", violation.detected: "detected"}

    timeline = []
    for e in events:
        s = e["step"]
        timeline.append({
            "step": s, "lifeline": e["lifeline"], "timestamp": e["timestamp"],
            "input": _text(e["input"]), "output": _text(e["output"]), "data": _text(e["data"]),
            "labels": labels.get(s, [x for x in (e["labels"] or []) if isinstance(x, str)]),
            "answers": _with_overrides(answers.get(s, []), corrections.get(s, [])),
            "corrections": corrections.get(s, []),
            "url": links.step(s), "page_url": links.page(step=s),
            "residual_url": links.residual(s),
            "selected": s == step, "witness": s in witness_steps, "mark": marks.get(s)})

    lanes, violations = _lanes(results, window, step, witness_steps, links, extent.last)
    # Anticipation (issue 17): each lane says when its verdict over the session became certain.
    complete = replay.complete_verdicts(run, session) if run is not None and lanes else None
    for lane in lanes:
        lane["complete"] = _complete_words((complete or {}).get(lane["rule"]))
    context = {
        "workspace": workspace, "roles": roles, "session": session, "run": run,
        "run_options": run_options(workspace, run), "results": results, "extent": extent,
        "problems": problems, "timeline": timeline, "lanes": lanes, "violations": violations,
        "any_violation": any(rule["total"] for rule in violations),
        "witness": witness, "selected_violation": violation, "step": step,
        "page": number, "pages": pages,
        # Paging keeps the selected step: its residuals stay in the panel while browsing.
        "page_links": [(n, links.page(page=n, step=step) if n else None)
                       for n in page_links(number, pages)],
        "previous_page": links.page(page=number - 1, step=step) if number > 1 else None,
        "next_page": links.page(page=number + 1, step=step) if number < pages else None,
        "back_url": links.back(), "back": links.keep["back"], "page_url": links.page_url,
        "close_witness_url": links.page(violation=None, step=step) + (
            f"#step-{step}" if step is not None else ""),
        "columns": [{"step": s, "url": links.step(s), "selected": s == step} for s in window],
        "first_shown": window[0] if window else None, "last_shown": window[-1] if window else None,
        "can_correct": can_correct,
        "correctable_atoms": _correctable_atoms(run, answers) if can_correct else [],
        # The list's filters ride along, so the page comes back with its way back.
        "correct_url": reverse("session_correct_label", args=[slug, session.id]) + (
            f"?{query_string(back=links.keep['back'])}" if links.keep["back"] else ""),
    }
    context.update(_residual_context(run, session, step, results))
    context["trace_warnings"] = conflict_sentences(workspace, session.external_id)
    if session.source == "live":  # what the agent was last answered, as the Live page shows
        live_context = live_context_for(workspace)
        context["live"] = live_pages.rules_in_words(
            session, current_rules(session, live_context), live_context)
    return render(request, "sessions/detail.html", context, status=400 if problems else 200)


def _llm_answers(run, session, window: list[int]) -> dict[int, list[dict]]:
    """Per step of the window, what the run's LLM labelers answered, with their provenance."""
    if run is None or not window:
        return {}
    out: dict[int, list[dict]] = {}
    for step, atom, labeler, model, confidence, value in (
            LabelProvenance.objects.filter(run=run, session=session,
                                           step__range=(window[0], window[-1]))
            .order_by("step", "atom")
            .values_list("step", "atom", "labeler", "model", "confidence", "value")):
        out.setdefault(step, []).append({"atom": atom, "labeler": labeler, "model": model,
                                         "confidence": confidence, "value": value})
    return out


def _with_overrides(answers: list[dict], corrections: list[dict]) -> list[dict]:
    """The answers, each marked ``overridden`` when a person corrected its atom at that step."""
    corrected = {c["atom"] for c in corrections}
    return [{**a, "overridden": a["atom"] in corrected} for a in answers]


def _corrections(session, window: list[int]) -> dict[int, list[dict]]:
    """Per step of the window, the labels people corrected: atom, value, who and when."""
    if not window:
        return {}
    out: dict[int, list[dict]] = {}
    for correction in (LabelCorrection.objects
                       .filter(event__session=session,
                               event__step__range=(window[0], window[-1]))
                       .select_related("event", "corrected_by")
                       .order_by("event__step", "atom")):
        who = correction.corrected_by.get_username() if correction.corrected_by else "someone"
        out.setdefault(correction.event.step, []).append({
            "atom": correction.atom, "value": correction.value, "by": who,
            "at": correction.corrected_at})
    return out


def _correctable_atoms(run, answers: dict[int, list[dict]]) -> list[str]:
    """The atoms a person may set on this page: those the run's rules read and its labelers
    produce (built-in atoms and data atoms are facts of the event, not judgements)."""
    atoms = {d["atom"] for d in run.labelers if isinstance(d, dict) and d.get("atom")}
    atoms.update(a["atom"] for found in answers.values() for a in found)
    for version in run.rule_versions.all():
        try:
            formula = parse(version.formula)
        except FormulaSyntaxError:
            continue
        atoms.update(rule_reads(formula).atoms)
    return sorted(atoms)


def _witness(violation, links: _Links) -> dict | None:
    if violation is None:
        return None
    entries = violation.witness[:WITNESS_LISTED]
    version = violation.result.rule_version
    return {"rule": version.rule.name, "violation": violation,
            "explanation": explain_violation(version.formula, violation.trigger,
                                             violation.detected, violation.at_end,
                                             violation.witness, version.counting),
            "more": max(0, len(violation.witness) - WITNESS_LISTED),
            "entries": [{"step": w["step"], "labels": w["labels"], "residual": w["residual"],
                         "reading": residual_reading(w["residual"], since=w["step"]),
                         "url": links.step(w["step"])} for w in entries]}


def _lanes(results, window: list[int], step, witness_steps: set, links: _Links,
           session_last: int | None = None):
    """Per rule, a cell per step of the window (the rule's one verdict as it stood after that
    step - violated once a violation was counted, complied once nothing later can change it,
    else not decided yet - and how many violations were detected there), and the rule's
    violations triggered or detected on this window, each explained in a sentence."""
    if not results or not window:
        return [], []
    first, last = window[0], window[-1]
    before: dict[int, int] = dict(
        ViolationRecord.objects.filter(result__in=results, detected__lt=first)
        .values("result_id").annotate(n=Count("id")).values_list("result_id", "n"))
    # Counts per (rule, step) in one query; a rule may fail thousands of times at the end.
    detected: dict[tuple[int, int], int] = {
        (result_id, at): n for result_id, at, n in
        ViolationRecord.objects.filter(result__in=results, detected__range=(first, last))
        .values("result_id", "detected").annotate(n=Count("id"))
        .values_list("result_id", "detected", "n")}
    earliest = dict(ViolationRecord.objects.filter(result__in=results).values("result_id")
                    .annotate(first=Min("detected")).values_list("result_id", "first"))
    here = Q(detected__range=(first, last)) | Q(trigger__range=(first, last))
    lanes, violations = [], []
    for r in results:
        name = r.rule_version.rule.name
        cells = []
        counted = before.get(r.id, 0)
        counting = effective_counting(r.rule_version.counting, r.rule_version.formula)
        for s in window:
            counted += detected.get((r.id, s), 0)
            # After the session's last step the session verdict itself; before it, the verdict
            # of a session that was still running then.
            ended = s == session_last and not r.session.is_open
            verdict = session_verdict(counted, r.final if ended else "", open=not ended,
                                      settled=r.trac_verdict_at(s), counting=counting)
            cells.append({"step": s, "verdict": verdict_words(verdict),
                          "words": _so_far(verdict, counted, r.session.is_open)["words"],
                          "glyph": verdict_glyph(verdict),
                          "detected": detected.get((r.id, s), 0), "selected": s == step,
                          "witness": s in witness_steps})
        lanes.append({"rule": name, "formula": r.rule_version.formula, "result": r,
                      "badge": _stored_badge(r), "cells": cells})
        found, more = [], 0
        if r.violation_count:  # one bounded query per rule that has violations at all
            mine = ViolationRecord.objects.filter(here, result=r)
            found = list(mine.order_by("detected", "trigger", "id").values(
                "id", "trigger", "detected", "at_end", "witness")[:VIOLATIONS_LISTED])
            for v in found:
                v["explanation"] = explain_violation(
                    r.rule_version.formula, v["trigger"], v["detected"], v["at_end"],
                    v.pop("witness") or (), r.rule_version.counting)
            if len(found) == VIOLATIONS_LISTED:
                more = mine.count() - len(found)
        first_detected = earliest.get(r.id)
        violations.append({
            "rule": name, "total": r.violation_count, "more": more,
            "items": [{**v, "url": links.page(violation=v["id"]) + f"#step-{v['detected']}"}
                      for v in found],
            "first_url": (links.step(first_detected)
                          if first_detected is not None and not found else None),
            "first_detected": first_detected})
    return lanes, violations


@require_safe
@login_required
def session_residual(request: HttpRequest, slug: str, session_id: int):
    """The residual panel alone (htmx swaps it in when a step is selected)."""
    workspace, _ = workspace_page(request, slug)
    problems: list[str] = []
    try:
        session, run = _session_and_run(request, workspace, session_id, problems)
    except Missing as exc:
        return missing_page(request, workspace, str(exc))
    step = int_param(request, "step", problems, "step number")
    if step is None and not problems:
        problems.append("Choose a step: add ?step= and a step number.")
    if step is not None:
        problem = _step_problem(session, _extent(session), step)
        if problem:
            problems.append(problem)
            step = None
    context = {"problems": problems}
    context.update(_residual_context(run, session, step, _results_of(run, session)))
    # htmx does not swap error answers; the message is the panel's content either way.
    status = 400 if problems and not request.headers.get("HX-Request") else 200
    return render(request, "sessions/_residual.html", context, status=status)


CORRECTION_VALUES = {"true": True, "false": False, "clear": None}


@require_POST
@login_required
def session_correct_label(request: HttpRequest, slug: str, session_id: int):
    """An auditor sets an atom true or false at a step (or removes that correction); the
    session's verdicts in the run are recomputed and the page shows them."""
    workspace, _ = workspace_page(request, slug, Role.AUDITOR)  # 403 for other members
    try:
        session = _session_or_missing(workspace, session_id)
    except Missing as exc:
        return missing_page(request, workspace, str(exc))
    problems: list[str] = []
    run_id = _number_field(request.POST.get("run"), "audit run number", problems)
    step = _number_field(request.POST.get("step"), "step number", problems)
    run = (AuditRun.objects.filter(workspace=workspace, id=run_id).first()
           if run_id is not None else None)
    if run_id is not None and run is None:
        return missing_page(request, workspace, f"There is no audit run {run_id} in this "
                                                 "workspace.")
    value_text = request.POST.get("value", "")
    if value_text not in CORRECTION_VALUES:
        problems.append("Choose whether the atom holds, does not hold, or loses its "
                        "correction.")
    atom = request.POST.get("atom", "")
    if not problems:
        value = CORRECTION_VALUES[value_text]
        try:
            correct_label(run, session, step, atom, value, actor(request))
        except ServiceError as exc:
            problems.append(exc.message[:1].upper() + exc.message[1:] + ".")
        except LLMError as exc:
            problems.append(f"The correction is saved, but the verdicts could not be "
                            f"recomputed: {exc.message}")
        else:
            said = {True: "holds", False: "does not hold", None: "is left to the labelers"}
            messages.success(request, f"Step {step}: {atom.strip()} {said[value]}. The "
                                      f"verdicts of audit run #{run.id} were recomputed.")
    for problem in problems:
        messages.error(request, problem)
    links = _Links(slug, session.id, run, _back_query(request), None)
    target = links.step(step) if step is not None else links.page()
    return HttpResponseRedirect(target, status=303)


def _number_field(raw, what: str, problems: list[str]) -> int | None:
    raw = (raw or "").strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) > LARGEST_NUMBER:
        problems.append(f"“{raw[:40]}” is not a valid {what}.")
        return None
    return int(raw)
