"""The message sequence chart of a multi-agent session (paper 001): lifelines, events, messages,
choice events with their guards' values, the rules' verdicts, and the causal past of a selected
event.

``GET /w/<slug>/sessions/<id>/msc?run=&event=&zoom=`` - ``run`` picks the audit run whose
verdicts are shown (default: the newest finished run that audited the session), ``event`` a step
to select (its causal past is highlighted), ``zoom`` one of ``msc_svg.ZOOM_LEVELS`` (percent).
Plain GET links throughout, so it works without JavaScript; a parameter a person can get wrong
gets a message (status 400), an unknown session or run a 404, an outsider a 404.

Guards (CPL): a choice event names its guard(s) in ``data.choice``.  A name is defined by the
workspace's causal guards (``studio.rules.models.CausalGuard``, declared once on /w/<slug>/guards/)
or by the log: ``data.guard`` on that event (one guard) or ``data.guards`` ``{name: cpl | {"cpl",
"owner"}}`` on any event of the session; the workspace's declaration wins over the log's.  Only a
name neither defines but one of the built-in examples does (paper 001's ``merge_ok``) is taken
from there.  The page says where each guard came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from studio.audits.models import AuditRun, RunStatus, SessionResult, ViolationRecord
from studio.causal import MscError, build_msc, causal_past, run_monitor
from studio.causal.examples import MERGE_GUARDS
from studio.rules.models import CausalGuard
from studio.traces import msc_svg
from studio.traces.models import Event, TraceSession, UploadFormat
from studio.workspaces.access import workspace_page

from .session_page_parts import run_label

# Events that OpenTelemetry exporters sent to /v1/traces (studio.live.events.SOURCE_OTLP).
SOURCE_OTLP = "otlp"

# Longer sessions are charted up to this many events (steps in order), with a notice.
MAX_CHART_EVENTS = 20_000
DEFAULT_ZOOM = 100
RUNS_OFFERED = 50
PROBLEMS_LISTED = 20
LARGEST_NUMBER = 2**63 - 1
# A lifeline name for events that have none (single-agent logs): shown as a lifeline of its own.
UNNAMED_LIFELINE = "(no lifeline)"
WORKSPACE_GUARD_SOURCE = "this workspace's causal guards"
BUILT_IN_GUARDS = {name: {**spec, "source": "paper 001's merge example (built in)"}
                   for name, spec in MERGE_GUARDS.items()}
EVENT_FIELDS = ("step", "lifeline", "timestamp", "input", "output", "data", "message_id",
                "message_peer", "message_kind", "source", "upload__format")


class _Missing(Exception):
    """Something the URL names is not in this workspace: a 404 page saying what."""


def _missing(request, workspace, message: str):
    return render(request, "sessions/missing.html", {"workspace": workspace, "message": message},
                  status=404)


def _number(request, name: str, what: str, problems: list[str]) -> int | None:
    raw = request.GET.get(name, "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) > LARGEST_NUMBER:
        problems.append(f"“{raw[:40]}” is not a valid {what}: give a whole number.")
        return None
    return int(raw)


def _chosen_run(request, workspace, session, problems: list[str]) -> AuditRun | None:
    wanted = _number(request, "run", "audit run number", problems)
    runs = AuditRun.objects.filter(workspace=workspace).with_kind()
    if wanted is not None:
        run = runs.filter(id=wanted).first()
        if run is None:
            raise _Missing(f"There is no audit run {wanted} in this workspace.")
        return run
    # Impact checks of unapproved versions are opened only when named.
    return (runs.audits().filter(status=RunStatus.DONE, results__session=session)
            .order_by("-created_at", "-id").first())


def _zoom(request, problems: list[str]) -> int:
    raw = request.GET.get("zoom", "").strip()
    if not raw:
        return DEFAULT_ZOOM
    if raw.isascii() and raw.isdigit() and int(raw) in msc_svg.ZOOM_LEVELS:
        return int(raw)
    problems.append(f"“{raw[:40]}” is not a zoom level; choose one of "
                    f"{', '.join(str(z) for z in msc_svg.ZOOM_LEVELS)} (percent).")
    return DEFAULT_ZOOM


# ---------------------------------------------------------------------------------------------
# From stored events to an MSC

def chart_order(rows: list[dict]) -> list[dict]:
    """The stored events in the order the chart reads each lifeline: by step, the log's own
    order - except for OpenTelemetry spans, which carry no steps: the importer numbers them as
    they come in the file, and a message between spans of two documents is added after both, so
    their order is their times' (steps break ties)."""
    from_spans = rows and all(r["timestamp"] is not None and (
        r.get("source") == SOURCE_OTLP or r.get("upload__format") == UploadFormat.OTLP)
        for r in rows)
    if from_spans:
        return sorted(rows, key=lambda r: (r["timestamp"], r["step"]))
    return list(rows)


def canonical(row: dict) -> dict:
    """A stored event as ``build_msc`` reads it.  Its step is left out: the chart's order is
    given by the list (``chart_order``), and steps are unique and ordered in the database."""
    data = row["data"] if isinstance(row["data"], dict) else {}
    return {"step": None, "lifeline": row["lifeline"] or UNNAMED_LIFELINE,
            "timestamp": row["timestamp"], "input": row["input"], "output": row["output"],
            "data": data, "message_id": row["message_id"], "message_peer": row["message_peer"],
            "message_kind": row["message_kind"]}


def chart_msc(rows: list[dict]):
    """``(msc, steps)`` for stored events (``EVENT_FIELDS``): the MSC, and the step of each of
    its events by index.  Raises ``MscError`` when the events do not form an MSC."""
    ordered = chart_order(rows)
    msc = build_msc([canonical(r) for r in ordered])
    return msc, [r["step"] for r in ordered]


def _msc_problem(problem: MscError, steps: list[int]) -> str:
    where = [f"step {steps[problem.index]}" if problem.index is not None else "the session"]
    if problem.lifeline:
        where.append(f"lifeline {problem.lifeline}")
    if problem.message_id:
        where.append(f"message {problem.message_id}")
    return f"{', '.join(where)}: {problem.message}"


@dataclass
class GuardSource:
    name: str
    text: str
    owner: str | None
    source: str
    url: str | None = None       # where the guard is declared, when that is a page


def workspace_guards(workspace, names) -> dict[str, GuardSource]:
    """The workspace's declared causal guards among ``names``."""
    url = reverse("guards", args=[workspace.slug])
    return {g.name: GuardSource(g.name, g.cpl, g.owner or None, WORKSPACE_GUARD_SOURCE,
                                f"{url}#guard-{g.name}")
            for g in CausalGuard.objects.filter(workspace=workspace, name__in=list(names))}


def choice_names(events: list[dict]) -> list[str]:
    """The guard names the events' ``data.choice`` mention, in order of first mention."""
    named: dict[str, None] = {}
    for event in events:
        data = event["data"] if isinstance(event["data"], dict) else {}
        choice = data.get("choice")
        names = [choice] if isinstance(choice, str) else (
            [n for n in choice if isinstance(n, str)] if isinstance(choice, list) else [])
        named.update(dict.fromkeys(names))
    return list(named)


def guard_definitions(events: list[dict], problems: list[str],
                      declared: dict[str, GuardSource] | None = None) -> dict[str, GuardSource]:
    """The guards the session's choice events name: the workspace's ``declared`` guards first,
    then the log's (``data.guard`` on a choice of one guard, ``data.guards`` anywhere), and only
    for names neither defines the built-in examples."""
    declared = declared or {}
    found: dict[str, GuardSource] = {}
    named: list[str] = []

    def define(name, spec, where: str) -> None:
        owner = None
        if isinstance(spec, dict):
            owner = spec.get("owner")
            spec = spec.get("cpl")
        if not isinstance(name, str) or not name or not isinstance(spec, str) or not spec:
            problems.append(f"{where}: a guard needs a name and CPL text (a string, or "
                            "{\"cpl\": ..., \"owner\": ...}).")
            return
        if owner is not None and not isinstance(owner, str):
            owner = None
        known = found.get(name)
        if known is None:
            found[name] = GuardSource(name, spec, owner, f"the log ({where})")
        elif (known.text, known.owner) != (spec, owner):
            problems.append(f"Guard {name} is defined again differently at {where}; the first "
                            f"definition ({known.source}) is used.")

    for event in events:
        data = event["data"] if isinstance(event["data"], dict) else {}
        where = f"step {event['step']}"
        choice = data.get("choice")
        names = [choice] if isinstance(choice, str) else (
            [n for n in choice if isinstance(n, str)] if isinstance(choice, list) else [])
        named.extend(n for n in names if n not in named)
        guards = data.get("guards")
        if isinstance(guards, dict):
            for name, spec in guards.items():
                define(name, spec, where)
        elif guards is not None:
            problems.append(f"{where}: data.guards must map guard names to CPL text.")
        single = data.get("guard")
        if single is not None:
            if len(names) == 1:
                define(names[0], single, where)
            else:
                problems.append(f"{where}: data.guard needs exactly one guard named in "
                                "data.choice; use data.guards for several.")
    for name in named:
        own = declared.get(name)
        if own is not None:
            logged = found.get(name)
            if logged is not None and (logged.text, logged.owner) != (own.text, own.owner):
                problems.append(f"Guard {name} is declared by this workspace; its different "
                                f"definition in {logged.source} is not used.")
            found[name] = own
        elif name not in found and name in BUILT_IN_GUARDS:
            spec = BUILT_IN_GUARDS[name]
            found[name] = GuardSource(name, spec["cpl"], spec.get("owner"), spec["source"])
    return {name: found[name] for name in named if name in found}


def owned_elsewhere(msc, guards: dict[str, GuardSource], steps: list[int],
                    notices: list[str]) -> dict[str, GuardSource]:
    """The guards whose owner can decide them in this chart.  A guard owned by a lifeline the
    session lacks is left out, and choice events on other lifelines are named, so nobody reads
    a missing value as a pass."""
    usable = {}
    for name, guard in guards.items():
        choosers = [e for e in msc.events if name in e.guards]
        if guard.owner and guard.owner not in msc.lifelines:
            notices.append(f"Guard {name} ({guard.source}) is decided by lifeline {guard.owner}, "
                           "which this session does not have: its choice events here are not "
                           "decided.")
            continue
        others = [steps[e.index] for e in choosers if guard.owner and e.lifeline != guard.owner]
        if others:
            notices.append(f"Guard {name} is decided by {guard.owner} only; the choice "
                           f"event{'s' if len(others) > 1 else ''} at step"
                           f"{'s' if len(others) > 1 else ''} "
                           f"{', '.join(str(s) for s in others[:PROBLEMS_LISTED])} on other "
                           "lifelines are not decided.")
        usable[name] = guard
    return usable


def evaluate_guards(msc, guards: dict[str, GuardSource], problems: list[str]) -> list:
    """Every decision, one guard at a time, so a guard that cannot be evaluated (it does not
    parse, names a lifeline the session lacks) is reported without hiding the others."""
    decisions = []
    for guard in guards.values():
        spec = {"cpl": guard.text}
        if guard.owner:
            spec["owner"] = guard.owner
        try:
            decisions.extend(run_monitor(msc, {guard.name: spec}))
        except ValueError as exc:  # CplSyntaxError and MonitorError are ValueErrors
            problems.append(f"Guard {guard.name} ({guard.source}) cannot be evaluated: {exc}")
    decisions.sort(key=lambda d: (d.event_index, d.guard))
    return decisions


# ---------------------------------------------------------------------------------------------
# The rules' verdicts

@dataclass
class RuleVerdicts:
    results: list[SessionResult]
    detected: dict[tuple[int, int], int]    # (result id, step) -> violations detected there

    def so_far(self, r: SessionResult, step: int) -> str:
        """The rule's verdict as it stood after a step: violated once a violation was counted
        at or before it (the one verdict, never "satisfied" beside a counted violation), else
        TRAC's."""
        if any(n for (rid, at), n in self.detected.items() if rid == r.id and at <= step):
            return "violated"
        return r.trac_verdict_at(step)

    def at(self, step: int) -> list[msc_svg.VerdictMark]:
        return [msc_svg.VerdictMark(r.rule_version.rule.name, self.so_far(r, step),
                                    self.detected.get((r.id, step), 0)) for r in self.results]

    def changes(self, steps: set[int]) -> dict[int, list[msc_svg.VerdictMark]]:
        """Per step, the rules whose verdict changes there or that detect a violation there."""
        out: dict[int, list[msc_svg.VerdictMark]] = {}
        for r in self.results:
            name = r.rule_version.rule.name
            changed = {at: verdict for at, verdict in r.timeline}
            hits = {at for (rid, at) in self.detected if rid == r.id}
            for step in sorted((set(changed) | hits) & steps):
                verdict = self.so_far(r, step)
                out.setdefault(step, []).append(msc_svg.VerdictMark(
                    name, verdict, self.detected.get((r.id, step), 0)))
        return out

    def per_lifeline(self, msc, steps: list[int]) -> dict[str, list[msc_svg.VerdictMark]]:
        """Per lifeline, each rule's verdict after the lifeline's last event, and how many
        violations were detected at its events."""
        out = {}
        for name in msc.lifelines:
            own = {steps[i] for i in msc.by_lifeline[name]}
            if not own:
                continue
            last = max(own)
            out[name] = [msc_svg.VerdictMark(
                r.rule_version.rule.name, self.so_far(r, last),
                sum(n for (rid, at), n in self.detected.items() if rid == r.id and at in own))
                for r in self.results]
        return out


def rule_verdicts(run, session) -> RuleVerdicts:
    if run is None:
        return RuleVerdicts([], {})
    results = list(SessionResult.objects.filter(run=run, session=session)
                   .select_related("rule_version__rule")
                   .order_by("rule_version__rule__name", "rule_version_id"))
    detected = {(rid, at): n for rid, at, n in
                ViolationRecord.objects.filter(result__in=results)
                .values("result_id", "detected").annotate(n=Count("id"))
                .values_list("result_id", "detected", "n")} if results else {}
    return RuleVerdicts(results, detected)


# ---------------------------------------------------------------------------------------------
# The page

@require_safe
@login_required
def session_msc(request: HttpRequest, slug: str, session_id: int):
    workspace, roles = workspace_page(request, slug)
    session = TraceSession.objects.filter(workspace=workspace, id=session_id).first()
    if session is None:
        return _missing(request, workspace, f"There is no session {session_id} in this "
                                            "workspace.")
    problems: list[str] = []     # the request's mistakes (status 400)
    notices: list[str] = []      # what the log makes impossible to show
    try:
        run = _chosen_run(request, workspace, session, problems)
    except _Missing as exc:
        return _missing(request, workspace, str(exc))
    zoom = _zoom(request, problems)
    wanted_step = _number(request, "event", "step number", problems)

    rows = list(Event.objects.filter(session=session).order_by("step")
                .values(*EVENT_FIELDS)[:MAX_CHART_EVENTS + 1])
    if len(rows) > MAX_CHART_EVENTS:
        rows = rows[:MAX_CHART_EVENTS]
        notices.append(f"This session is long: the chart shows its first {MAX_CHART_EVENTS} "
                       f"events (steps {rows[0]['step']} to {rows[-1]['step']}). Messages "
                       "received after them show as in transit.")
    base = reverse("session_msc", args=[slug, session.id])
    keep = {"run": run.id if run else None, "zoom": zoom if zoom != DEFAULT_ZOOM else None}

    def url(**params) -> str:
        merged = {k: v for k, v in {**keep, **params}.items() if v is not None}
        return f"{base}?{urlencode(merged)}" if merged else base

    plain = url()
    select_prefix = plain + ("&" if "?" in plain else "?") + "event="

    context = {"workspace": workspace, "roles": roles, "session": session, "run": run,
               "run_options": _run_options(workspace, session, run), "zoom": zoom,
               "problems": problems, "notices": notices, "msc": None, "page_url": base,
               "session_url": reverse("session", args=[slug, session.id]) + (
                   f"?{urlencode({'run': run.id})}" if run else ""),
               "event_count": len(rows), "guards_url": reverse("guards", args=[slug])}
    msc = None
    if rows:
        ordered = chart_order(rows)
        steps = [r["step"] for r in ordered]
        try:
            msc = build_msc([canonical(r) for r in ordered])
        except MscError as exc:
            listed = exc.problems[:PROBLEMS_LISTED]
            context["msc_errors"] = [_msc_problem(p, steps) for p in listed]
            context["msc_errors_more"] = len(exc.problems) - len(listed)
    if msc is None:
        return render(request, "sessions/msc.html", context, status=400 if problems else 200)

    index_of_step = {step: index for index, step in enumerate(steps)}
    selected = None
    if wanted_step is not None:
        selected = index_of_step.get(wanted_step)
        if selected is None:
            problems.append(f"There is no step {wanted_step} in this chart; no event is "
                            "selected.")
    past = causal_past(msc, selected) if selected is not None else set()

    guard_problems: list[str] = []
    declared = workspace_guards(workspace, choice_names(rows))
    defined = guard_definitions(rows, guard_problems, declared)
    guards = owned_elsewhere(msc, defined, steps, guard_problems)
    decisions = evaluate_guards(msc, guards, guard_problems)
    notices.extend(guard_problems)
    undefined = sorted({g for e in msc.events for g in e.guards} - set(defined))
    if undefined:
        notices.append(f"No CPL definition for guard{'s' if len(undefined) > 1 else ''} "
                       f"{', '.join(undefined)}: declare it on this workspace's Causal guards "
                       "page, or add it to the log (data.guard on the choice event, or "
                       "data.guards), to see its value.")
    marks: dict[int, list[msc_svg.GuardMark]] = {}
    for d in decisions:
        marks.setdefault(d.event_index, []).append(msc_svg.GuardMark(
            d.guard, d.causal_value, d.sequential_value, d.disagrees))

    verdicts = rule_verdicts(run, session)
    by_step = verdicts.changes(set(index_of_step))
    chart = msc_svg.ChartInput(
        msc=msc, title=f"Message sequence chart of session {session.external_id}",
        link=lambda step: f"{select_prefix}{step}",
        texts=[msc_svg.event_text(e.source) for e in msc.events], steps=steps, guards=marks,
        verdicts={index_of_step[s]: m for s, m in by_step.items()},
        lifeline_verdicts=verdicts.per_lifeline(msc, steps), selected=selected, past=past,
        zoom=zoom)

    context.update({
        "msc": msc, "svg": mark_safe(msc_svg.render_svg(chart)),  # built with escape()
        "table_rows": mark_safe(msc_svg.render_table(chart)),
        "lifelines": msc.lifelines, "message_count": sum(
            1 for e in msc.events if e.kind == "send"),
        "in_transit": [msc.events[i] for i in msc.in_transit],
        "zoom_links": [{"level": z, "url": url(zoom=z if z != DEFAULT_ZOOM else None,
                                                event=wanted_step if selected is not None
                                                else None) + (f"#msc-e{wanted_step}"
                                                              if selected is not None else ""),
                        "current": z == zoom} for z in msc_svg.ZOOM_LEVELS],
        "guards": list(guards.values()),
        "decisions": [{"decision": d, "step": steps[d.event_index],
                       "url": f"{select_prefix}{steps[d.event_index]}#msc-e"
                              f"{steps[d.event_index]}"} for d in decisions],
        "lifeline_verdicts": [{"lifeline": name, "marks": m}
                              for name, m in chart.lifeline_verdicts.items()],
        "rules": [r.rule_version.rule.name for r in verdicts.results],
        "selection": _selection(msc, steps, selected, past, verdicts, marks, chart, url)
        if selected is not None else None,
    })
    return render(request, "sessions/msc.html", context, status=400 if problems else 200)


def _selection(msc, steps: list[int], selected: int, past: set[int], verdicts: RuleVerdicts,
               marks, chart, url) -> dict:
    """What the page says about the selected event and its causal past."""
    event = msc.events[selected]
    clock = msc.vector_clock(selected)
    per_lifeline = []
    for position, name in enumerate(msc.lifelines):
        seen = clock[position]
        latest = msc.by_lifeline[name][seen - 1] if seen else None
        per_lifeline.append({"lifeline": name, "seen": seen,
                             "total": len(msc.by_lifeline[name]),
                             "latest_step": steps[latest] if latest is not None else None})
    return {"event": event, "step": steps[selected],
            "text": chart.texts[selected] if chart.texts else "",
            "kind": msc_svg.KIND_WORDS.get(event.kind, event.kind),
            "past_size": len(past),
            "past_steps": sorted(steps[i] for i in past),
            "per_lifeline": per_lifeline, "guards": marks.get(selected, []),
            "verdicts": verdicts.at(steps[selected]),
            "clear_url": url()}


def _run_options(workspace, session, run) -> list[dict]:
    """The runs that audited the session, newest first, and the chosen one if it did not."""
    runs = list(AuditRun.objects.filter(workspace=workspace, results__session=session).audits()
                .with_kind().distinct().select_related("rule_set", "upload")
                .order_by("-created_at", "-id")[:RUNS_OFFERED])
    if run is not None and run not in runs:
        runs.insert(0, run)
    return [{"id": r.id, "label": run_label(r)} for r in runs]
