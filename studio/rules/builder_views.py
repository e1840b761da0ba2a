"""The rule builder page: a rule from a specification pattern, a scope and events of the
workspace's own logs (``studio.grounding.builder``), read back in English beside its formula,
and created as a draft the way the rules page creates one (``services.create_rule``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from studio.errors import ServiceError
from studio.grounding.builder import (
    EVENT_SLOTS,
    MAX_CONDITIONS,
    PATTERNS,
    SCOPES,
    BuildError,
    build,
    slots_of,
)
from studio.grounding.builder_form import OPERATOR_WORDS, builder_options, parse_value
from studio.logic.formula import COMPARISONS
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import services
from .vocabulary import formula_warnings, vocabulary_for

# Nothing a form sends is kept longer than this (the builder refuses longer atoms and values
# with a message anyway).
FIELD_LIMIT = 1000
DEFAULT_COUNT = "3"
_DEFAULT_PATTERNS = {1: "absence", 2: "response", 3: "response_chain"}


@login_required
@require_http_methods(["GET", "POST"])
def rule_builder(request: HttpRequest, slug: str):
    """The builder, prefilled from the query string (GET) or the form (POST: the same names).

    Parameters (all optional):

    * ``pattern``: absence, existence, universality, response, bounded_response, precedence,
      response_chain, precedence_chain, at_most, at_least or exactly_once.  Without it: absence
      for one event (``p``), response for two (``p``, ``q``), response_chain for three;
    * ``scope``: globally (the default), before, after, between or after_until;
    * ``n``: the steps of bounded_response, the count of at_most/at_least (default 3);
    * ``p``, ``q``, ``r`` (the pattern's events) and ``start``, ``end`` (the scope's): an atom,
      e.g. ``p=tool_call:issue_refund``, ``q=role:user`` or a label;
    * ``p_path``, ``p_op``, ``p_value`` (likewise ``q_path`` ... ``end_value``): a condition on
      the slot's event, e.g. ``p_path=output.args.amount&p_op=>&p_value=500``; repeat the three
      for more conditions (the n-th of each belong together).  A value is read with the types
      the workspace's events hold at that field: ``500`` is a number where the field holds
      numbers, a text where it holds texts; ``"500"`` is always a text;
    * ``name`` and ``description``: the rule's name and English (by default the reading).

    POST with ``action=create`` creates the rule as a draft (authors only) and opens it; any
    other POST (and every htmx request, which gets the ``builder`` partial) only reads back.
    """
    workspace, roles = workspace_page(request, slug)
    data = request.POST if request.method == "POST" else request.GET
    creating = request.method == "POST" and data.get("action") == "create"
    if creating:
        workspace, roles = workspace_page(request, slug, Role.AUTHOR)
    vocabulary = vocabulary_for(workspace)
    context = _builder(data, vocabulary)
    context.update(workspace=workspace, roles=roles, can_create=Role.AUTHOR in roles)
    status = 200
    if creating:
        built = context["built"]
        if built is not None:
            try:
                rule = services.create_rule(
                    workspace, actor(request), context["name"] or context["suggested_name"],
                    built.text, context["description"] or built.english, built.english)
            except ServiceError as exc:
                context["errors"][exc.field or "general"] = exc.message
            else:
                messages.success(request, f"Rule {rule.name!r} created as a draft.")
                return redirect("rule", slug=slug, rule_id=rule.id)
        status = 422
    if request.headers.get("HX-Request") and not creating:
        return render(request, "rules/builder.html#builder", context)
    return render(request, "rules/builder.html", context, status=status)


def _text(data: QueryDict, key: str) -> str:
    return data.get(key, "")[:FIELD_LIMIT]


def _list(data: QueryDict, key: str) -> list[str]:
    return [value[:FIELD_LIMIT] for value in data.getlist(key)][:MAX_CONDITIONS + 1]


def _read_slot(data: QueryDict, name: str, vocabulary) -> tuple[dict, dict | None]:
    """A slot as the form shows it (atom, condition rows) and as the builder reads it."""
    atom = _text(data, name).strip()
    paths, ops, values = (_list(data, f"{name}_{part}") for part in ("path", "op", "value"))
    rows, conditions = [], []
    for index, path in enumerate(paths):
        path = path.strip()
        op = ops[index] if index < len(ops) else ""
        text = values[index] if index < len(values) else ""
        if not path:
            continue  # the empty row that adds a condition, or one cleared to remove it
        rows.append({"path": path, "op": op, "value": text})
        condition = {"path": path, "op": op}
        if text.strip():
            condition["value"] = parse_value(text, vocabulary.paths.get(path, ()))
        conditions.append(condition)
    slot = {"atom": atom, "conditions": conditions} if atom or conditions else None
    return {"atom": atom, "rows": rows}, slot


def _builder(data: QueryDict, vocabulary) -> dict:
    options = builder_options(vocabulary)
    errors: dict[str, str] = {}
    read = {name: _read_slot(data, name, vocabulary) for name in EVENT_SLOTS}
    pattern = _text(data, "pattern").strip()
    if not pattern:
        named = sum(1 for name in ("p", "q", "r") if read[name][1] is not None)
        pattern = _DEFAULT_PATTERNS.get(named, "response")
    scope = _text(data, "scope").strip() or "globally"
    if pattern not in PATTERNS:
        errors["pattern"] = f"unknown pattern {pattern[:60]!r}: choose one of the list"
        pattern = "response"
    if scope not in SCOPES:
        errors["scope"] = f"unknown scope {scope[:60]!r}: choose one of the list"
        scope = "globally"
    spec = PATTERNS[pattern]
    n_text = _text(data, "n").strip() or DEFAULT_COUNT
    n = None
    if spec.count:
        try:
            n = int(n_text)
        except ValueError:
            errors["n"] = "a whole number"
    needed = slots_of(pattern, scope)
    slots = {name: read[name][1] for name in needed if read[name][1] is not None}
    built = None
    missing = [name for name in needed if name not in slots]
    if not errors and not missing:
        try:
            built = build(pattern, scope, slots, n)
        except BuildError as exc:
            errors[exc.field] = exc.message
    help_ = {**spec.slot_help, **SCOPES[scope].slot_help}
    shown = [_slot_view(name, help_.get(name, ""), read[name][0], options, errors)
             for name in needed]
    kept = [_slot_view(name, "", read[name][0], options, errors)
            for name in EVENT_SLOTS if name not in needed]
    return {
        "options": options, "errors": errors, "pattern": pattern, "scope": scope,
        "patterns": list(PATTERNS.values()), "scopes": list(SCOPES.values()), "spec": spec,
        "n": n_text, "slots": shown, "kept": kept, "missing": missing, "built": built,
        "warnings": formula_warnings(built.formula, vocabulary) if built else [],
        "name": _text(data, "name").strip(), "description": _text(data, "description").strip(),
        "suggested_name": _suggested_name(pattern, scope, slots, n),
        "operators": [{"op": op, "words": OPERATOR_WORDS[op]} for op in COMPARISONS],
        "general_error": errors.get("slots") or errors.get("general"),
    }


def _suggested_name(pattern: str, scope: str, slots: dict, n) -> str:
    """A name for the rule when the author gives none: the pattern and its events."""
    def event_name(slot: dict) -> str:
        atom = slot.get("atom") or "a step"
        name = atom.split(":", 1)[1] if atom.startswith(("tool_call:", "role:")) else atom
        return name + (" (with conditions)" if slot.get("conditions") else "")

    events = ", ".join(event_name(slots[k]) for k in ("p", "q", "r") if k in slots)
    words = PATTERNS[pattern].name.replace("_", " ")
    if n is not None and PATTERNS[pattern].count:
        words += f" {n}"
    if scope != "globally":
        words += f" ({scope.replace('_', ' ')})"
    return f"{words}: {events}"[:services.NAME_MAX]


def _atom_groups(options: dict, chosen: str) -> list[dict]:
    groups = [
        {"label": "Tools the agent calls", "choices": [
            (t["atom"], f"calls {t['name']}") for t in options["tools"]]},
        {"label": "Messages by role", "choices": [
            (r["atom"], r["words"]) for r in options["roles"]]},
        {"label": "Labels", "choices": [(a["atom"], a["atom"]) for a in options["labels"]]},
        {"label": "Other events", "choices": [
            (a["atom"], a["words"]) for a in options["other_atoms"]]},
    ]
    known = {atom for g in groups for atom, _ in g["choices"]}
    if chosen and chosen not in known:
        groups.insert(0, {"label": "Not seen in this workspace", "choices": [
            (chosen, f"{chosen} (nothing in this workspace produces it yet)")]})
    return [g for g in groups if g["choices"]]


def _field_label(field: dict) -> str:
    shown = f"{field['name']} ({field['path']})"
    if field["examples"]:
        shown += " - e.g. " + ", ".join(str(v) for v in field["examples"][:3])
    return shown


def _field_groups(options: dict, atom: str, rows: list[dict]) -> list[dict]:
    tool = next((t for t in options["tools"] if t["atom"] == atom), None)
    own = tool["arguments"] if tool else []
    groups = []
    if own:
        groups.append({"label": f"Arguments of {tool['name']}",
                       "choices": [(f["path"], _field_label(f)) for f in own]})
    taken = {f["path"] for f in own}
    others = [f for f in options["fields"] if f["path"] not in taken]
    if others:
        groups.append({"label": "Fields of any event" if own else "Fields",
                       "choices": [(f["path"], _field_label(f)) for f in others]})
    known = taken | {f["path"] for f in others}
    unknown = [row["path"] for row in rows if row["path"] not in known]
    if unknown:
        groups.insert(0, {"label": "Not seen in this workspace", "choices": [
            (path, f"{path} (no event has it yet)") for path in dict.fromkeys(unknown)]})
    return groups


def _examples(options: dict, atom: str, path: str) -> list:
    tool = next((t for t in options["tools"] if t["atom"] == atom), None)
    for field in (tool["arguments"] if tool else []) + options["fields"]:
        if field["path"] == path and field["examples"]:
            return field["examples"]
    return []


def _slot_view(name: str, help_: str, form: dict, options: dict, errors: dict) -> dict:
    rows = [dict(row, index=i, examples=_examples(options, form["atom"], row["path"]),
                 errors={part: errors.get(f"slots.{name}.conditions[{i}].{part}")
                         for part in ("path", "op", "value")})
            for i, row in enumerate(form["rows"])]
    if len(rows) < MAX_CONDITIONS:
        rows.append({"path": "", "op": ">", "value": "", "index": len(rows), "examples": [],
                     "errors": {}, "blank": True})
    slot_errors = [message for field, message in errors.items()
                   if field in (f"slots.{name}", f"slots.{name}.atom",
                                f"slots.{name}.conditions")]
    return {"name": name, "help": help_, "atom": form["atom"], "rows": rows,
            "atom_groups": _atom_groups(options, form["atom"]),
            "field_groups": _field_groups(options, form["atom"], form["rows"]),
            "errors": slot_errors}
