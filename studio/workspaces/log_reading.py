"""Reading the audit log as a person does: filtered by who, what and when, newest first, each
entry's details in words.  Shared by the audit-log page and its CSV download."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from .actions import LogAction, action_label
from .models import ApiToken, AuditLogEntry, Workspace

# ``who`` values: a person by username, a token by id, or the studio itself (beat, workers).
PERSON, TOKEN, STUDIO = "person:", "token:", "studio"
STUDIO_WORDS = "the studio itself"
FILTERS = ("who", "action", "from", "to")


@dataclass
class LogFilter:
    """The filters as asked (kept for the form) and the errors of those that do not fit."""

    asked: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    query: Q = field(default_factory=Q)

    @property
    def active(self) -> bool:
        return any(self.asked.values())


def _day(text: str, name: str, errors: dict[str, str]) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        errors[name] = f"{text!r} is not a date: write it as YYYY-MM-DD, e.g. 2026-11-28."
        return None


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=dt_timezone.utc)


def read_filter(workspace: Workspace, params) -> LogFilter:
    """The filter ``params`` (a QueryDict or mapping) ask for; dates are whole UTC days, both
    ends included."""
    asked = {name: (params.get(name) or "").strip() for name in FILTERS}
    found = LogFilter(asked)
    who = asked["who"]
    if who == STUDIO:
        found.query &= Q(actor__isnull=True, actor_token__isnull=True)
    elif who.startswith(PERSON):
        found.query &= Q(actor__username=who[len(PERSON):], actor_token__isnull=True)
    elif who.startswith(TOKEN) and who[len(TOKEN):].isdigit():
        found.query &= Q(actor_token_id=int(who[len(TOKEN):]))
    elif who:
        found.errors["who"] = "Choose a person, a token or the studio itself from the list."
    if asked["action"]:
        if asked["action"] in LogAction.values:
            found.query &= Q(action=asked["action"])
        else:
            found.errors["action"] = "Choose an action from the list."
    start = _day(asked["from"], "from", found.errors)
    end = _day(asked["to"], "to", found.errors)
    if start and end and end < start:
        found.errors["to"] = "The last day comes before the first day."
    if start:
        found.query &= Q(at__gte=_start_of(start))
    if end:
        found.query &= Q(at__lt=_start_of(end + timedelta(days=1)))
    return found


def entries(workspace: Workspace, log_filter: LogFilter) -> QuerySet:
    """The entries the filter keeps, newest first."""
    return (AuditLogEntry.objects.filter(workspace=workspace).filter(log_filter.query)
            .select_related("actor", "actor_token").order_by("-at", "-id"))


def who_choices(workspace: Workspace) -> list[tuple[str, str]]:
    """(value, words) for everyone the filter can name: the people who are or were members or
    wrote to the log, the workspace's tokens, and the studio itself."""
    people = get_user_model().objects.filter(
        Q(memberships__workspace=workspace)
        | Q(pk__in=AuditLogEntry.objects.filter(workspace=workspace, actor__isnull=False)
            .values("actor_id"))).distinct().order_by("username")
    tokens = ApiToken.objects.filter(workspace=workspace).order_by("name", "id")
    return ([(PERSON + person.get_username(), person.get_username()) for person in people]
            + [(f"{TOKEN}{token.pk}", token_words(token)) for token in tokens]
            + [(STUDIO, STUDIO_WORDS)])


def action_choices() -> list[tuple[str, str]]:
    return sorted(LogAction.choices, key=lambda choice: choice[1])


def token_words(token: ApiToken) -> str:
    return f"token {token.name} (cs_{token.prefix}_…)"


def who_did(entry: AuditLogEntry) -> str:
    if entry.actor_token_id is not None:
        return token_words(entry.actor_token)
    if entry.actor_id is not None:
        return entry.actor.get_username()
    return STUDIO_WORDS


def _words(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(f"{_key(k)}: {_words(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(" ".join(map(_words, v)) if isinstance(v, (list, tuple)) else _words(v)
                         for v in value) or "none"
    return str(value)


def _key(name: str) -> str:
    return str(name).replace("_", " ")


def details_in_words(details) -> list[tuple[str, str]]:
    """Each detail as (what, value) in words: nested objects and lists flattened to text."""
    if not isinstance(details, dict):
        return [("details", _words(details))] if details else []
    return [(_key(name), _words(value)) for name, value in details.items()]


# The stored target type is the model's class name in lower case; these read better.
TARGET_WORDS = {"apitoken": "token", "auditrun": "audit", "causalguard": "causal guard",
                "groundtruth": "ground truth", "guarddecision": "guard decision",
                "impactcheck": "impact check", "labelcorrection": "label correction",
                "learnedriskmodel": "risk model",
                "llmendpoint": "LLM endpoint", "rulecase": "rule case", "ruleset": "rule set",
                "ruleversion": "rule version", "tracesession": "session",
                "webhooksecret": "webhook secret"}


def target_words(entry: AuditLogEntry) -> str:
    if not entry.target_type:
        return ""
    kind = TARGET_WORDS.get(entry.target_type, entry.target_type)
    return f"{kind} #{entry.target_id}" if entry.target_id else kind


def entry_row(entry: AuditLogEntry) -> dict:
    return {"entry": entry, "who": who_did(entry), "what": action_label(entry.action),
            "target": target_words(entry), "details": details_in_words(entry.details)}
