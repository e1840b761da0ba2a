"""Setting a workspace up for auditing: the labelers that produce the atoms rules read (with a
box to try them on an event), and rule sets, which group rules and may monitor live sessions.

Reading these pages needs membership; changing anything needs the author role, as in the API.
Views validate the form and call rules.services; the try-it box answers htmx with a partial.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from studio.errors import ServiceError
from studio.labeling import LabelerConfigError, Labeling, make_labeler
from studio.labeling.llm import LLMError
from studio.logic.events import builtin_atoms
from studio.logic.formula import COMPARISONS, quote_atom
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.reads import rule_reads
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import services
from .models import Labeler, LabelerKind, Rule, RuleSet
from .monitoring import approved_numbers, approved_versions

KIND_NAMES = {LabelerKind.FIELD: "Field predicate", LabelerKind.REGEX: "Regular expression",
              LabelerKind.LLM: "LLM"}
OPERATOR_NAMES = {"==": "equals", "!=": "differs from", "<": "is less than",
                  "<=": "is at most", ">": "is greater than", ">=": "is at least"}
REGEX_FLAGS = (("i", "Ignore case"),
               ("m", "^ and $ also match at line breaks"),
               ("s", ". also matches a line break"))
# How each form field is named in error messages (the summary links to the field).
FIELD_NAMES = {"atom": "Atom", "kind": "Kind", "path": "JSON path", "op": "Operator",
               "value": "Value", "pattern": "Pattern", "flags": "Flags",
               "description": "Description", "config": "Settings",
               "instruction": "When the atom holds", "fields": "Fields shown to the model",
               "model": "Model", "batch_size": "Steps per request"}
BUILTIN_ATOMS = (
    ("tool_call:NAME", "tool_call:",
     "each tool the output calls (output.tool, output.name, or OpenAI-style output.tool_calls)"),
    ("stop_reason:R", "stop_reason:", "the event's stop_reason (also read from data or output)"),
    ("role:R", "role:", "the event's role (also read from data or output)"),
)
# The try-it box reads at most this much: it is a preview, not an upload.
TRY_TEXT_LIMIT = 200_000
TRY_MODES = {"json": "a JSON event", "output": "text the agent wrote (its output)",
             "input": "text the agent received (its input)"}


# ---------------------------------------------------------------------------------------------
# What approved rules read

def _rules_by_atom(workspace) -> dict[str, list[Rule]]:
    """Atom name -> the rules whose approved version reads it."""
    readers: dict[str, list[Rule]] = defaultdict(list)
    for version in approved_versions(workspace):
        try:
            formula = parse(version.formula)
        except FormulaSyntaxError:  # approved versions compiled when submitted; be safe anyway
            continue
        for name in rule_reads(formula).atoms:
            readers[name].append(version.rule)
    return readers


def _readers_of_prefix(readers: dict[str, list[Rule]], prefix: str) -> list[Rule]:
    """The rules reading some atom that starts with ``prefix`` (``tool_call:`` ...)."""
    rules = {rule.id: rule for atom, found in readers.items() if atom.startswith(prefix)
             for rule in found}
    return sorted(rules.values(), key=lambda rule: rule.name)


# ---------------------------------------------------------------------------------------------
# Labeler forms

def _value_from_text(text: str) -> Any:
    """A field predicate's value as typed: numbers, true, false, null and quoted strings are read
    as JSON; anything else is the text itself (so `passed` needs no quotes)."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):  # not JSON (or absurdly nested): the text itself
        return stripped


def _value_as_text(value: Any) -> str:
    """The inverse of ``_value_from_text``: what to put in the form so it reads back the same."""
    if isinstance(value, str) and _value_from_text(value) == value:
        return value
    return json.dumps(value, ensure_ascii=False)


def _blank_labeler_form() -> dict:
    return {"atom": "", "kind": LabelerKind.REGEX, "path": "", "op": "==", "value": "",
            "pattern": "", "flags": "", "description": "", "enabled": True, "instruction": "",
            "fields": "", "model": "", "batch_size": ""}


def _labeler_form_of(labeler: Labeler) -> dict:
    config = labeler.config if isinstance(labeler.config, dict) else {}
    return {"atom": labeler.atom, "kind": labeler.kind, "path": str(config.get("path", "")),
            "op": str(config.get("op", "==")),
            "value": _value_as_text(config["value"]) if "value" in config else "",
            "pattern": str(config.get("pattern", "")), "flags": str(config.get("flags", "")),
            "description": labeler.description, "enabled": labeler.enabled,
            # An LLM labeler's settings (its config's own "description" is the instruction).
            "instruction": str(config.get("description", "")) if labeler.kind == "llm" else "",
            "fields": ", ".join(map(str, config.get("fields") or [])),
            "model": str(config.get("model") or ""),
            "batch_size": str(config.get("batch_size") or "")}


def _labeler_form_from(post) -> dict:
    form = {key: post.get(key, "") for key in
            ("atom", "kind", "path", "op", "value", "pattern", "description", "instruction",
             "fields", "model", "batch_size")}
    form["flags"] = "".join(sorted(set(post.getlist("flags"))))
    form["enabled"] = post.get("enabled") == "on"
    return form


def _config_from(form: dict) -> dict:
    """The stored config of the chosen kind; the other kind's fields are ignored."""
    if form["kind"] == LabelerKind.FIELD:
        config = {"path": form["path"].strip(), "op": form["op"]}
        if form["value"].strip():  # blank: the labeler says a value is required
            config["value"] = _value_from_text(form["value"])
        return config
    if form["kind"] == LabelerKind.REGEX:
        config = {"path": form["path"].strip(), "pattern": form["pattern"]}
        if form["flags"]:
            config["flags"] = form["flags"]
        return config
    if form["kind"] == LabelerKind.LLM:
        config = {"description": form["instruction"].strip()}
        fields = [f.strip() for f in form["fields"].split(",") if f.strip()]
        if fields:
            config["fields"] = fields
        if form["model"].strip():
            config["model"] = form["model"].strip()
        batch = form["batch_size"].strip()
        if batch:
            # Not a whole number: passed on as text so the labeler names the field.
            config["batch_size"] = int(batch) if batch.isdigit() else batch
        return config
    return {}  # an unknown kind: the labeler names the kind field


def _form_field(service_field: str | None, kind: str = "") -> str:
    """The form field a service error is about: ``config.pattern`` -> ``pattern`` (an LLM
    labeler's ``config.description`` is the form's instruction field)."""
    name = (service_field or "").removeprefix("config.").split(".")[0].split("[")[0]
    if kind == LabelerKind.LLM and (service_field or "").startswith("config.description"):
        return "instruction"
    return name if name in FIELD_NAMES else "general"


def _save_labeler(request, workspace, form: dict, labeler: Labeler | None) -> tuple[Any, dict]:
    """Create or update through the services; (labeler or None, errors by form field)."""
    config = _config_from(form)
    if isinstance(config.get("value"), (dict, list)):
        # Refused here, before the service walks a possibly very deep structure.
        return None, {"value": "must be a string, number, boolean or null"}
    try:
        if labeler is None:
            saved = services.create_labeler(workspace, actor(request), form["atom"],
                                            form["kind"], config, form["description"],
                                            form["enabled"])
        else:
            # An unchanged description is left out: the service logs any description it is given.
            description = (form["description"] if form["description"] != labeler.description
                           else None)
            saved = services.update_labeler(labeler, actor(request), atom=form["atom"],
                                            kind=form["kind"], config=config,
                                            description=description)
    except ServiceError as exc:
        return None, {_form_field(exc.field, form["kind"]): exc.message}
    return saved, {}


def _error_summary(errors: dict) -> list[dict]:
    return [{"field": field, "name": FIELD_NAMES.get(field), "message": message}
            for field, message in errors.items()]


def _config_summary(labeler: Labeler) -> str:
    config = labeler.config if isinstance(labeler.config, dict) else {}
    if labeler.kind == LabelerKind.FIELD:
        value = json.dumps(config.get("value"), ensure_ascii=False)
        return f"{config.get('path', '?')} {config.get('op', '==')} {value}"
    if labeler.kind == LabelerKind.LLM:
        fields = ", ".join(map(str, config.get("fields") or ["input", "output"]))
        return f"an LLM asked, from {fields}: {config.get('description', '?')}"
    flags = config.get("flags") or ""
    return f"{config.get('path', '?')} matches /{config.get('pattern', '')}/{flags}"


def _labeler_rows(labelers, readers: dict[str, list[Rule]]) -> list[dict]:
    return [{"labeler": labeler, "kind_name": KIND_NAMES.get(labeler.kind, labeler.kind),
             "spelling": quote_atom(labeler.atom), "summary": _config_summary(labeler),
             "rules": readers.get(labeler.atom, [])}
            for labeler in labelers]


def _atoms_of_rules(readers: dict[str, list[Rule]], labelers: list[Labeler]) -> list[dict]:
    """Every atom the approved rules read, and what produces it."""
    by_atom = {labeler.atom: labeler for labeler in labelers}
    builtin_prefixes = tuple(prefix for _, prefix, _ in BUILTIN_ATOMS)
    rows = []
    for atom, rules in sorted(readers.items()):
        labeler = by_atom.get(atom)
        if labeler is not None:
            source = "labeler" if labeler.enabled else "disabled"
        elif atom.startswith(builtin_prefixes):
            source = "builtin"
        else:
            source = None
        rows.append({"atom": atom, "rules": rules, "source": source, "labeler": labeler})
    return rows


# ---------------------------------------------------------------------------------------------
# The try-it box

def _read_event(text: str, mode: str) -> tuple[dict | None, dict | None]:
    """(event, None) or (None, the error to show)."""
    if mode != "json":
        # Browsers send line breaks as CRLF; labelers see what the agent would have written.
        return {mode: text.replace("\r\n", "\n")}, None
    try:
        event = json.loads(text)
    except RecursionError:
        return None, {"message": "Not usable: the JSON is nested too deeply."}
    except json.JSONDecodeError as exc:
        lines = text.split("\n")
        line = lines[exc.lineno - 1].rstrip("\r") if 0 < exc.lineno <= len(lines) else ""
        cut = exc.colno - 1
        return None, {"message": f"Not valid JSON: line {exc.lineno}, column {exc.colno}: "
                                 f"{exc.msg}.",
                      "line": exc.lineno, "column": exc.colno, "before": line[:cut],
                      "at": line[cut:cut + 1] or " ", "after": line[cut + 1:]}
    if not isinstance(event, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(event), "a number")
        return None, {"message": f"An event is a JSON object such as {{\"output\": \"...\"}}, "
                                 f"not {kind}."}
    return event, None


def try_labels(workspace, text: str, mode: str) -> dict:
    """What the try-it box shows: the atoms true for the event, and why each holds or not."""
    mode = mode if mode in TRY_MODES else "json"
    result: dict[str, Any] = {"text": text, "mode": mode}
    if not text.strip():
        return {**result, "empty": True}
    if len(text) > TRY_TEXT_LIMIT:
        return {**result, "error": {"message": f"That is {len(text):,} characters; the try-it "
                                               f"box reads at most {TRY_TEXT_LIMIT:,}."}}
    event, error = _read_event(text, mode)
    if error is not None:
        return {**result, "error": error}
    enabled, checks = [], []
    for labeler in Labeler.objects.filter(workspace=workspace).order_by("atom"):
        try:
            run = make_labeler(labeler.kind, labeler.atom, labeler.config)
        except LabelerConfigError:  # a stored config the labelers no longer accept
            run = None
        holds = None
        if run is not None:
            try:
                holds = run(event, None)
            except LLMError:  # no endpoint, or it failed: the check shows no answer
                run = None
        if run is not None and labeler.enabled:
            enabled.append(run)
        checks.append({"labeler": labeler, "holds": holds, "summary": _config_summary(labeler)})
    # Labelled as audits and live monitoring label (monitoring.labeling_for): the event's own
    # labels, the built-in atoms, the enabled labelers.
    atoms = Labeling(enabled)(event)
    given = event.get("labels")
    return {**result, "atoms": atoms, "checks": checks,
            "given": [a for a in given if isinstance(a, str)] if isinstance(given, list) else [],
            "builtin": builtin_atoms(event)}


# ---------------------------------------------------------------------------------------------
# Labeler pages

def _access(workspace, roles) -> dict:
    """What every page here shows about the viewer: may they change things, and if not why."""
    return {"workspace": workspace, "roles": roles, "role_names": sorted(roles),
            "can_manage": Role.AUTHOR in roles}


def _labeler_page_context(workspace, roles) -> dict:
    return {**_access(workspace, roles),
            "kind_names": KIND_NAMES,
            "operators": [(op, OPERATOR_NAMES[op]) for op in COMPARISONS],
            "regex_flags": REGEX_FLAGS, "try_modes": TRY_MODES}


@login_required
@require_http_methods(["GET", "POST"])
def labeler_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    form, errors = _blank_labeler_form(), {}
    # prefilled from a reading whose phrase nothing in the logs produces (``?atom=&description=``)
    for key in ("atom", "description"):
        form[key] = request.GET.get(key, "")[:500] or form[key]
    tried = try_labels(workspace, "", "json")
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "try":  # reads only: any member may try
            tried = try_labels(workspace, request.POST.get("event", ""),
                               request.POST.get("mode", "json"))
            if request.headers.get("HX-Request"):
                return render(request, "rules/_labels_tried.html",
                              {"workspace": workspace, "tried": tried, "try_modes": TRY_MODES})
        elif action == "create":
            workspace, roles = workspace_page(request, slug, Role.AUTHOR)
            form = _labeler_form_from(request.POST)
            labeler, errors = _save_labeler(request, workspace, form, None)
            if labeler is not None:
                state = "" if labeler.enabled else " (disabled)"
                messages.success(request, f"Labeler for {labeler.atom!r} added{state}.")
                return redirect("labeler", slug=slug, labeler_id=labeler.id)
            status = 422
        else:
            errors["general"] = "Unknown action."
            status = 400
    labelers = list(Labeler.objects.filter(workspace=workspace).order_by("atom"))
    readers = _rules_by_atom(workspace)
    builtins = [{"shown": shown, "where": where, "rules": _readers_of_prefix(readers, prefix)}
                for shown, prefix, where in BUILTIN_ATOMS]
    return render(request, "rules/labelers.html", {
        **_labeler_page_context(workspace, roles), "form": form, "errors": errors,
        "error_summary": _error_summary(errors), "rows": _labeler_rows(labelers, readers),
        "builtins": builtins, "rule_atoms": _atoms_of_rules(readers, labelers),
        "tried": tried, "form_action": "create"}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def labeler_detail(request: HttpRequest, slug: str, labeler_id: int):
    workspace, roles = workspace_page(request, slug)
    labeler = get_object_or_404(Labeler, workspace=workspace, id=labeler_id)
    form, errors = _labeler_form_of(labeler), {}
    status = 200
    if request.method == "POST":
        workspace, roles = workspace_page(request, slug, Role.AUTHOR)
        action = request.POST.get("action")
        if action in ("enable", "disable"):
            try:
                services.update_labeler(labeler, actor(request), enabled=action == "enable")
            except ServiceError as exc:  # a stored config that no longer validates
                errors[_form_field(exc.field)] = exc.message
            else:
                messages.success(request, f"Labeler for {labeler.atom!r} {action}d.")
                return redirect("labeler", slug=slug, labeler_id=labeler.id)
        elif action == "save":
            form = _labeler_form_from(request.POST)
            saved, errors = _save_labeler(request, workspace, form, labeler)
            if saved is not None:
                messages.success(request, f"Labeler for {saved.atom!r} saved.")
                return redirect("labeler", slug=slug, labeler_id=labeler.id)
        else:
            errors["general"] = "Unknown action."
        status = 422 if action in ("save", "enable", "disable") else 400
    readers = _rules_by_atom(workspace)
    row = _labeler_rows([labeler], readers)[0]
    return render(request, "rules/labeler.html", {
        **_labeler_page_context(workspace, roles), "labeler": labeler, "row": row,
        "form": form, "errors": errors, "error_summary": _error_summary(errors),
        "form_action": "save"}, status=status)


# ---------------------------------------------------------------------------------------------
# Rule set pages

def _rule_ids_from(post, errors: dict) -> list[int]:
    raw = post.getlist("rule_ids")
    if any(not value.isdigit() for value in raw):
        errors["rule_ids"] = "Choose rules from the list."
        return []
    return [int(value) for value in raw]


def _rule_choices(workspace, chosen: set[int]) -> list[dict]:
    approved = approved_numbers(workspace)
    return [{"rule": rule, "approved": approved.get(rule.id), "chosen": rule.id in chosen}
            for rule in Rule.objects.filter(workspace=workspace).order_by("name")]


def _live_summary(workspace) -> dict:
    """What live sessions are monitored against right now (see monitoring.live_versions)."""
    live_sets = list(RuleSet.objects.filter(workspace=workspace, live=True).order_by("name"))
    return {"live_sets": live_sets,
            "approved_count": len(approved_numbers(workspace)) if not live_sets else None}


@login_required
@require_http_methods(["GET", "POST"])
def rule_set_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    form = {"name": "", "description": "", "live": False}
    chosen: set[int] = set()
    errors: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        workspace, roles = workspace_page(request, slug, Role.AUTHOR)
        form = {"name": request.POST.get("name", ""),
                "description": request.POST.get("description", ""),
                "live": request.POST.get("live") == "on"}
        rule_ids = _rule_ids_from(request.POST, errors)
        chosen = set(rule_ids)
        if not errors:
            try:
                rule_set = services.create_rule_set(workspace, actor(request), form["name"],
                                                    form["description"], rule_ids, form["live"])
            except ServiceError as exc:
                errors[exc.field or "general"] = exc.message
            else:
                messages.success(request, f"Rule set {rule_set.name!r} created.")
                return redirect("rule_set", slug=slug, rule_set_id=rule_set.id)
        status = 422
    approved = approved_numbers(workspace)
    rule_sets = []
    for rule_set in RuleSet.objects.filter(workspace=workspace).prefetch_related("rules"):
        rules = sorted(rule_set.rules.all(), key=lambda r: r.name)
        rule_sets.append({"rule_set": rule_set, "rules": rules,
                          "unapproved": [r for r in rules if r.id not in approved]})
    return render(request, "rules/rule_sets.html", {
        **_access(workspace, roles), "rule_sets": rule_sets, "form": form, "errors": errors,
        "choices": _rule_choices(workspace, chosen), **_live_summary(workspace)},
        status=status)


@login_required
@require_http_methods(["GET", "POST"])
def rule_set_detail(request: HttpRequest, slug: str, rule_set_id: int):
    workspace, roles = workspace_page(request, slug)
    rule_set = get_object_or_404(RuleSet, workspace=workspace, id=rule_set_id)
    errors: dict[str, str] = {}
    chosen = set(rule_set.rules.values_list("id", flat=True))
    details = {"name": rule_set.name, "description": rule_set.description}
    status = 200
    if request.method == "POST":
        workspace, roles = workspace_page(request, slug, Role.AUTHOR)
        action = request.POST.get("action")
        who = actor(request)
        try:
            if action == "rules":
                rule_ids = _rule_ids_from(request.POST, errors)
                chosen = set(rule_ids)
                if not errors:
                    services.set_rules(rule_set, who, rule_ids)
                    messages.success(request, f"Rules of {rule_set.name!r} saved.")
                    return redirect("rule_set", slug=slug, rule_set_id=rule_set.id)
            elif action == "live":
                live = request.POST.get("live") == "1"
                services.set_live(rule_set, who, live)
                messages.success(request, f"{rule_set.name!r} now monitors live sessions."
                                 if live else
                                 f"{rule_set.name!r} no longer monitors live sessions.")
                return redirect("rule_set", slug=slug, rule_set_id=rule_set.id)
            elif action == "details":
                details = {"name": request.POST.get("name", ""),
                           "description": request.POST.get("description", "")}
                services.update_rule_set(rule_set, who, details["name"], details["description"])
                messages.success(request, "Name and description saved.")
                return redirect("rule_set", slug=slug, rule_set_id=rule_set.id)
            elif action == "delete":
                if request.POST.get("confirm") != "on":
                    errors["confirm"] = "Tick the box to confirm the deletion."
                else:
                    name = rule_set.name
                    services.delete_rule_set(rule_set, who)
                    messages.success(request, f"Rule set {name!r} deleted.")
                    return redirect("rule_sets", slug=slug)
            else:
                errors["general"] = "Unknown action."
        except ServiceError as exc:
            errors[exc.field or "general"] = exc.message
        status = 422 if action in ("rules", "live", "details", "delete") else 400
    approved = approved_numbers(workspace)
    rules = [{"rule": rule, "approved": approved.get(rule.id)}
             for rule in sorted(rule_set.rules.all(), key=lambda rule: rule.name)]
    return render(request, "rules/rule_set.html", {
        **_access(workspace, roles), "rule_set": rule_set, "rules": rules,
        "choices": _rule_choices(workspace, chosen), "details": details, "errors": errors,
        **_live_summary(workspace)}, status=status)
