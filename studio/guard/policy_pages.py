"""A rule set's guard policy page, ``/w/<slug>/rule-sets/<id>/guard-policy/``: the policy in
words for every member, and a form for authors and admins.  The form is checked by the service
the API uses (``services.set_policy``): its message is shown beside the field it names, the input
kept, and a saved policy is recorded in the audit log by that service."""

from __future__ import annotations

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from studio.errors import PermissionDenied as ServicePermissionDenied
from studio.errors import ServiceError
from studio.risk.guard import (ALLOW, ASK_HUMAN, BEST_ACCEPTED, BEST_OF_N, HUMAN_DEFAULTS, INJECT,
                               INTERVENTIONS, RESAMPLE, STOP, SWITCH, Policy)
from studio.rules.models import RuleSet
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import services

POLICY_EDITORS = frozenset({Role.AUTHOR, Role.ADMIN})
# The form lists the default first.
FALLBACKS = (BEST_ACCEPTED, SWITCH, ASK_HUMAN, STOP, ALLOW)

# What each decision does, as a compliance officer would say it (the API's name in brackets).
DECISION_WORDS = {
    RESAMPLE: "ask the agent for another step (resample)",
    BEST_OF_N: "take the safest of the agent's other proposals (best of n)",
    INJECT: "remind the agent of the rule, then let it try again (inject)",
    SWITCH: "hand the step to the safer model (switch)",
    ASK_HUMAN: "ask a person to approve or deny (ask a person)",
    STOP: "stop the agent (stop)",
    ALLOW: "let the step go ahead (allow)",
    BEST_ACCEPTED: "take the least risky of the proposals that break no rule now; stop only "
                   "if every one does (best accepted)",
}

_WHOLE = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _number(text: str):
    """The typed number, or the text itself so that the service names what does not fit."""
    text = text.strip()
    return float(text) if _NUMBER.fullmatch(text) else text


def _whole(text: str):
    text = text.strip()
    return int(text) if _WHOLE.fullmatch(text) else text


def _rule_set(workspace, rule_set_id: int) -> RuleSet:
    found = RuleSet.objects.filter(workspace=workspace, pk=rule_set_id).first()
    if found is None:
        raise Http404("no such rule set")
    return found


def _form_of(policy: Policy, rules: list[str]) -> dict:
    return {"threshold": f"{policy.threshold:g}", "horizon": str(policy.horizon),
            "interventions": {rule: policy.interventions.get(rule, "") for rule in rules},
            "default_intervention": policy.default_intervention,
            "max_resamples": str(policy.max_resamples), "fallback": policy.fallback,
            "safer_model": policy.safer_model,
            "human_timeout_seconds": str(policy.human_timeout_seconds),
            "human_default": policy.human_default, "guarded_risk": policy.guarded_risk,
            "act_on_unbacked": policy.act_on_unbacked}


def _posted_form(post, rules: list[str]) -> dict:
    return {"threshold": post.get("threshold", ""), "horizon": post.get("horizon", ""),
            "interventions": {rule: post.get(f"intervention_{i}", "")
                              for i, rule in enumerate(rules)},
            "default_intervention": post.get("default_intervention", ""),
            "max_resamples": post.get("max_resamples", ""), "fallback": post.get("fallback", ""),
            "safer_model": post.get("safer_model", ""),
            "human_timeout_seconds": post.get("human_timeout_seconds", ""),
            "human_default": post.get("human_default", ""),
            "guarded_risk": post.get("guarded_risk") == "on",
            "act_on_unbacked": post.get("act_on_unbacked") == "on"}


def _policy_data(form: dict) -> dict:
    """The policy as the API's JSON: numbers typed as numbers, a rule left to the default left
    out of ``interventions``."""
    return {"threshold": _number(form["threshold"]), "horizon": _whole(form["horizon"]),
            "interventions": {rule: choice for rule, choice in form["interventions"].items()
                              if choice},
            "default_intervention": form["default_intervention"],
            "max_resamples": _whole(form["max_resamples"]), "fallback": form["fallback"],
            "safer_model": form["safer_model"],
            "human_timeout_seconds": _whole(form["human_timeout_seconds"]),
            "human_default": form["human_default"], "guarded_risk": form["guarded_risk"],
            "act_on_unbacked": form["act_on_unbacked"]}


def _choices(values) -> list[tuple[str, str]]:
    return [(value, DECISION_WORDS[value]) for value in values]


def _page(request, workspace, roles, ruleset, rules, *, form=None, errors=None, status=200):
    policy = services.policy_of(ruleset)
    form = form or _form_of(policy, rules)
    errors = errors or {}
    return render(request, "guard/policy.html", {
        "workspace": workspace, "roles": roles, "rule_set": ruleset, "policy": policy,
        "can_edit": bool(roles & POLICY_EDITORS), "form": form, "errors": errors,
        "rule_rows": [{"index": i, "rule": rule, "chosen": form["interventions"].get(rule, ""),
                       "error": errors.get(f"interventions.{rule}"),
                       "in_force": DECISION_WORDS[policy.intervention_for(rule)]}
                      for i, rule in enumerate(rules)],
        "interventions": _choices(INTERVENTIONS), "fallbacks": _choices(FALLBACKS),
        "human_defaults": _choices(HUMAN_DEFAULTS),
        "default_words": DECISION_WORDS[policy.default_intervention],
        "fallback_words": DECISION_WORDS[policy.fallback],
        "human_default_words": DECISION_WORDS[policy.human_default],
    }, status=status)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def guard_policy(request: HttpRequest, slug: str, rule_set_id: int):
    workspace, roles = workspace_page(request, slug)
    ruleset = _rule_set(workspace, rule_set_id)
    rules = sorted(ruleset.rules.values_list("name", flat=True))
    if request.method != "POST":
        return _page(request, workspace, roles, ruleset, rules)
    if not roles & POLICY_EDITORS:
        raise PermissionDenied("only rule authors and administrators set guard policies")
    form = _posted_form(request.POST, rules)
    try:
        services.set_policy(ruleset, _policy_data(form), actor(request))
    except ServicePermissionDenied as exc:
        raise PermissionDenied(exc.message) from None
    except ServiceError as exc:
        return _page(request, workspace, roles, ruleset, rules, form=form,
                     errors={exc.field or "policy": exc.message}, status=exc.status)
    messages.success(request, f"The guard policy of {ruleset.name} is saved (and written to "
                              "the audit log).")
    return redirect("guard_policy", slug=workspace.slug, rule_set_id=ruleset.pk)
