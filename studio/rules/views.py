"""Rule pages: the list, the editor with live parse feedback, version history with diffs,
submission and review.  Views validate and call rules.services; htmx requests get partials."""

from __future__ import annotations

import difflib
import re
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from studio.errors import ServiceError
from studio.grounding import builder_form
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.progression import is_invariant
from studio.monitor import RuleError, compile_rule
from studio.monitor.verdicts import (COUNTING_LABELS, COUNTING_MODES, COUNTING_SENTENCES,
                                     PER_INSTANCE, default_counting)
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.llm import client_for
from studio.workspaces.models import Role

from . import authoring, services
from .models import Rule, RuleSet, RuleVersion, VersionStatus
from .monitoring import approved_by_rule, labeling_for, live_coverage
from .sampling import formula_flags, stored_sample
from .vocabulary import formula_warnings, reads_table, vocabulary_for


def describe_formula(workspace, text: str) -> dict:
    """What the editor shows: the pretty formula and its atoms, or where and why it fails."""
    if not text.strip():
        return {"empty": True}
    try:
        formula = parse(text)
        compile_rule("formula", formula)
    except FormulaSyntaxError as exc:
        lines = text.split("\n")
        line = lines[exc.line - 1] if 0 < exc.line <= len(lines) else ""
        cut = exc.column - 1
        return {"error": exc.message, "line": exc.line, "column": exc.column,
                "before": line[:cut], "at": line[cut:cut + 1] or " ", "after": line[cut + 1:],
                "expected": exc.expected}
    except RuleError as exc:
        return {"error": str(exc), "line": 1, "column": 1, "before": "", "at": "",
                "after": text, "expected": ()}
    known = vocabulary_for(workspace)
    reads = reads_table(formula, known)
    return {"pretty": formula.text, "atoms": reads["atoms"], "paths": reads["paths"],
            "warnings": formula_warnings(formula, known),
            "unlabelled": [a["atom"] for a in reads["atoms"] if not a["produced"]],
            "flags": formula_flags(workspace, formula)}


def counting_choices(formula_text: str, chosen: str) -> tuple[dict, list[dict]]:
    """The version's counting (``mode``, ``label``, ``sentence``) and the editor's choices, each
    saying whether it fits the formula (``per_instance`` needs ``G phi``) and which is the
    default for its form."""
    try:
        globally = is_invariant(parse(formula_text))
    except FormulaSyntaxError:
        globally = False
    default = default_counting(globally)
    mode = chosen if chosen in COUNTING_MODES else default
    choices = [{"mode": m, "label": COUNTING_LABELS[m], "sentence": COUNTING_SENTENCES[m],
                "fits": globally or m != PER_INSTANCE, "default": m == default}
               for m in COUNTING_MODES]
    return ({"mode": mode, "label": COUNTING_LABELS[mode],
             "sentence": COUNTING_SENTENCES[mode]}, choices)


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][\w:.\-]*|\d+|<->|->|\S')


def formula_diff(old: str, new: str) -> list[tuple[str, str]]:
    """Token-level diff: [(op, text)] with op in equal / del / ins."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("equal", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("del", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("ins", " ".join(b[j1:j2])))
    return out


@login_required
@require_http_methods(["GET", "POST"])
def rule_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    # Prefilled from the English-to-LTL panel's "use this formula" link.
    form = {k: request.GET.get(k, "")[:authoring.ENGLISH_LIMIT]
            for k in ("name", "formula", "description")}
    errors = {}
    if request.method == "POST":
        workspace, roles = workspace_page(request, slug, Role.AUTHOR)
        form = {k: request.POST.get(k, "") for k in form}
        try:
            rule = services.create_rule(workspace, actor(request), form["name"], form["formula"],
                                        form["description"])
        except ServiceError as exc:
            errors[exc.field or "general"] = exc.message
        else:
            messages.success(request, f"Rule {rule.name!r} created as a draft.")
            return redirect("rule", slug=slug, rule_id=rule.id)
    rules = []
    approved = approved_by_rule(workspace)
    for rule in Rule.objects.filter(workspace=workspace).prefetch_related("versions"):
        versions = sorted(rule.versions.all(), key=lambda v: v.number)
        rules.append({"rule": rule, "latest": versions[-1] if versions else None,
                      "approved": approved.get(rule.id)})
    return render(request, "rules/list.html", {
        "workspace": workspace, "roles": roles, "rules": rules, "form": form, "errors": errors,
        "check": describe_formula(workspace, form["formula"])})


@login_required
@require_POST
def formalise_english(request: HttpRequest, slug: str):
    """htmx (or a plain form post): an English rule read as a formula, each phrase with the
    candidates the logs offer (``choice:PHRASE`` fields carry the author's picks, which
    rewrite every reading), each reading with what it would flag on stored sessions, and a
    link that starts a new rule from it."""
    workspace, roles = workspace_page(request, slug)
    english = request.POST.get("english", "")
    engine = request.POST.get("engine", "offline")
    choices = {key[len("choice:"):]: value for key, value in request.POST.items()
               if key.startswith("choice:") and value}
    context = {"workspace": workspace, "roles": roles, "english": english, "engine": engine}
    try:
        known = tuple(sorted(labeling_for(workspace).declared_atoms))
        vocabulary = vocabulary_for(workspace)
        context["reading"] = authoring.formalise(english, engine, known, vocabulary, choices,
                                                 stored_sample(workspace),
                                                 client=lambda: client_for(workspace))
    except ServiceError as exc:
        context["error"] = exc.message
    reading = context.get("reading") or {}
    if reading.get("ok"):
        context["use_query"] = urlencode({"formula": reading["formula"],
                                          "description": english.strip(),
                                          "name": reading["name"]})
        # one link per reading: the author picks the meaning they intended
        for item in reading["readings"]:
            item["use_query"] = urlencode({"formula": item["formula"],
                                           "description": english.strip(),
                                           "name": reading["name"]})
        for phrase in reading["mapping"]:
            if phrase["candidates"] and phrase["candidates"][0]["new"]:
                phrase["labeler_query"] = urlencode({
                    "atom": phrase["atom"], "description": f"“{phrase['phrase']}” in: "
                                                          f"{english.strip()[:300]}"})
    if reading and (not reading.get("ok") or not reading.get("sure")):
        context["builder_query"] = builder_prefill(reading)
    template = ("rules/_formalised.html" if request.headers.get("HX-Request")
                else "rules/formalise.html")
    return render(request, template, context)


def builder_prefill(reading: dict) -> str:
    """The rule builder's query string with what a doubtful or refused reading understood:
    the first reading's pattern and events with their conditions, or the events it named."""
    events = [p["atom"] for p in reading.get("mapping", ()) if p["kind"] == "event"]
    first = None
    if reading.get("ok") and reading.get("formula"):
        try:
            first = parse(reading["formula"])
        except FormulaSyntaxError:
            first = None
    return urlencode(builder_form.prefill(first, events), doseq=True)


@login_required
@require_http_methods(["GET"])
def review_aids(request: HttpRequest, slug: str, rule_id: int):
    """The review aids of a version (``?v=N``), compared with the version before it; loaded by
    htmx into the rule page, or a page of its own without JavaScript."""
    workspace, roles = workspace_page(request, slug)
    rule = get_object_or_404(Rule, workspace=workspace, id=rule_id)
    versions = list(rule.versions.order_by("number"))
    wanted = request.GET.get("v", "")
    selected = next((v for v in versions if wanted.isdigit() and v.number == int(wanted)),
                    versions[-1])
    previous = next((v for v in reversed(versions) if v.number < selected.number), None)
    context = {"workspace": workspace, "roles": roles, "rule": rule, "selected": selected,
               "previous": previous}
    try:
        context["aids"] = authoring.review_aids(selected.formula,
                                                previous.formula if previous else None,
                                                selected.counting or None,
                                                previous.counting if previous else None)
        context["aids"]["flags"] = formula_flags(workspace, parse(selected.formula))
    except ServiceError as exc:
        context["error"] = exc.message
    template = ("rules/_aids.html" if request.headers.get("HX-Request")
                else "rules/review_aids.html")
    return render(request, template, context)


@login_required
@require_POST
def formula_check(request: HttpRequest, slug: str):
    """htmx: live feedback for the formula being typed."""
    workspace, _ = workspace_page(request, slug)
    return render(request, "rules/_check.html",
                  {"check": describe_formula(workspace, request.POST.get("formula", ""))})


@login_required
@require_http_methods(["GET", "POST"])
def rule_detail(request: HttpRequest, slug: str, rule_id: int):
    workspace, roles = workspace_page(request, slug)
    rule = get_object_or_404(Rule, workspace=workspace, id=rule_id)
    versions = list(rule.versions.select_related("author", "reviewer").order_by("number"))
    selected = versions[-1]
    wanted = request.GET.get("v")
    if wanted and wanted.isdigit():
        selected = next((v for v in versions if v.number == int(wanted)), selected)
    previous = next((v for v in reversed(versions) if v.number < selected.number), None)
    errors = {}
    if request.method == "POST":
        outcome = _act(request, workspace, rule, selected, errors)
        if outcome is not None:
            return outcome
    me = request.user
    counting, choices = counting_choices(selected.formula,
                                         request.POST.get("counting") or selected.counting)
    # A refused submission answers 400, as the API does (the page shows why).
    status = 400 if "acknowledgement" in errors or "cases" in errors else 200
    return render(request, "rules/detail.html", status=status, context={
        "counting": counting, "counting_choices": choices,
        "workspace": workspace, "roles": roles, "rule": rule, "versions": versions,
        "selected": selected, "previous": previous, "errors": errors,
        "diff": formula_diff(previous.formula, selected.formula) if previous else None,
        "check": describe_formula(workspace, request.POST.get("formula", selected.formula)),
        "can_edit": Role.AUTHOR in roles and selected.status == VersionStatus.DRAFT,
        "can_review": (Role.REVIEWER in roles and selected.status == VersionStatus.IN_REVIEW
                       and selected.author_id != me.id),
        "own_version_in_review": (selected.status == VersionStatus.IN_REVIEW
                                  and selected.author_id == me.id),
        "is_author_role": Role.AUTHOR in roles,
        "acknowledgement": request.POST.get("acknowledgement", ""),
        # Once a version is approved: whether live sessions are checked against the rule.
        "live": live_coverage(rule) if any(v.status == VersionStatus.APPROVED
                                           for v in versions) else None,
    })


def _act(request, workspace, rule, version: RuleVersion, errors: dict):
    action = request.POST.get("action")
    needed = {"save": Role.AUTHOR, "submit": Role.AUTHOR, "new_version": Role.AUTHOR,
              "approve": Role.REVIEWER, "reject": Role.REVIEWER,
              "add_to_live_set": Role.AUTHOR}.get(action)
    if needed is None:
        errors["general"] = "Unknown action."
        return None
    workspace_page(request, workspace.slug, needed)
    who = actor(request)
    try:
        if action == "save":
            services.update_draft(version, who, formula=request.POST.get("formula", ""),
                                  counting=request.POST.get("counting") or None)
            messages.success(request, f"Draft version {version.number} saved.")
        elif action == "submit":
            services.update_draft(version, who, formula=request.POST.get("formula",
                                                                          version.formula),
                                  counting=request.POST.get("counting") or None)
            services.submit_for_review(version, who,
                                       request.POST.get("acknowledgement", ""))
            messages.success(request, f"Version {version.number} submitted for review.")
        elif action == "new_version":
            created = services.new_version(rule, who,
                                           counting=request.POST.get("counting") or None)
            messages.success(request, f"Draft version {created.number} started.")
            return redirect(f"{request.path}?v={created.number}")
        elif action == "approve":
            services.approve(version, who, request.POST.get("comment", ""))
            messages.success(request, f"Version {version.number} approved. "
                             f"{live_coverage(rule).sentence}")
        elif action == "add_to_live_set":
            chosen = request.POST.get("rule_set", "")
            live_set = (RuleSet.objects.filter(workspace=workspace, live=True,
                                               pk=int(chosen)).first()
                        if chosen.isdigit() else None)
            if live_set is None:
                errors["general"] = "Choose one of the live rule sets."
                return None
            services.add_rule(live_set, who, rule)
            messages.success(request, f"Rule “{rule.name}” added to the live rule set "
                             f"“{live_set.name}”: live sessions are checked against it.")
        else:
            services.reject(version, who, request.POST.get("comment", ""))
            messages.success(request, f"Version {version.number} rejected.")
    except ServiceError as exc:
        errors[exc.field or "general"] = exc.message
        return None
    return redirect(f"{request.path}?v={version.number}")
