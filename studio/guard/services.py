"""The guard over live sessions: answer an agent's proposed next step with a decision.

A guard request names the event the agent proposes (optionally other sampled candidates, each
with a sampled continuation, and a decision id).  The session's monitors are brought up to date
as for the events route; the predictors run on copies (``studio.risk``); ``studio.risk.guard``
decides.  Nothing of the session changes: the agent posts the event it actually took to the events
route.  What is kept is the decision (``GuardDecision``), so that asking again with the same id
answers the same, a person can answer an ``ask_human``, and the record shows what was decided.

``taken``: the agent's events before the proposed one that the studio may not have stored yet
(each with its ``event_id``).  The guard decides as if they had been stored after the session
as it read it (``studio.live.reading.session_after``: the ones the read already included, by
their step numbers, are not applied twice) and answers which of them were already stored
(``stored``).  The route stores the others after answering (``studio.guard.api``), so an agent
need not wait for its last events to be written before asking about its next step.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from studio.caching import ExpiringValues
from studio.errors import PermissionDenied, ServiceError
from studio.live.context import MONITOR_LOCK, Context, context_for
from studio.live.context import refresh_ahead as context_refresh_ahead
from studio.live.events import SOURCE_LIVE, Clean, ItemError, checked_session_id, clean_event
from studio.live import storage
from studio.live.errors import SessionEnded
from studio.live.ingest import ingest
from studio.live.reading import SessionNow, label_event, seen_by, session_after, session_now
from studio.monitor.anticipation import NOT_YET_KNOWN_WORDS, doomed_now
from studio.monitor.explain import residual_reading
from studio.risk import guard as policy_rules
from studio.risk.guard import ALLOW, ASK_HUMAN, STOP, Assessment, Policy, PolicyError
from studio.risk.predictor import ANY_RULE
from studio.risk.sampling import sample_risk, violated_rules
from studio.rules.models import RuleSet
from studio.rules.services import roles_of
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Role, Workspace
from studio.workspaces.services import record

from . import waits
from .learning import current_model, live_policy
from .models import DecisionStatus, GuardDecision, GuardPolicy

log = logging.getLogger(__name__)

MAX_CANDIDATES = 32
DECISION_ID_MAX = 100
MAX_ATTEMPT = 1_000
MAX_WAIT_SECONDS = waits.MAX_WAIT_SECONDS
PENDING_PAGE = 50
PENDING_PAGE_MAX = 500
PENDING_OFFSET_MAX = 1_000_000
MAX_TAKEN = 64
REQUEST_FIELDS = ("event", "continuation", "candidates", "decision_id", "attempt", "taken",
                  "store_taken")
# The question a decision id names: ``taken`` is not part of it (asked again once those events
# were stored, it is the same question).
FINGERPRINT_FIELDS = ("event", "continuation", "candidates", "attempt")

# ---------------------------------------------------------------------------------------------
# Policies


def _rules_of(ruleset: RuleSet) -> list[str]:
    return sorted(ruleset.rules.values_list("name", flat=True))


def policy_of(ruleset: RuleSet) -> Policy:
    found = GuardPolicy.objects.filter(ruleset=ruleset).first()
    return Policy.from_json(found.policy if found else {})


def set_policy(ruleset: RuleSet, data: Any, actor=None) -> Policy:
    """Replace the rule set's guard policy (authors and admins); a policy that does not fit is
    refused with the field named (422)."""
    workspace = ruleset.workspace
    if not {Role.AUTHOR, Role.ADMIN} & roles_of(workspace, actor):
        raise PermissionDenied("only rule authors and administrators set guard policies")
    try:
        policy = Policy.from_json(data, _rules_of(ruleset))
    except PolicyError as exc:
        raise ServiceError(exc.message, field=exc.field, status=422) from None
    with transaction.atomic():
        GuardPolicy.objects.update_or_create(
            ruleset=ruleset,
            defaults={"policy": policy.to_json(), "updated_by": acting_user(actor)})
        record(workspace, actor, LogAction.GUARD_POLICY_SET, ruleset, ruleset=ruleset.name,
               policy=policy.to_json())
    forget_policies()
    return policy


_POLICIES: ExpiringValues[int, Policy] = ExpiringValues()


def forget_policies(**_signal) -> None:
    _POLICIES.clear()


def effective_policy(workspace: Workspace) -> Policy:
    """The policy live sessions are guarded by: that of the live rule set, or the combination
    of the live rule sets' policies (``studio.risk.guard.combine``); the defaults when no rule
    set is live.  Read again after ``LIVE_CONTEXT_SECONDS`` (or when a policy or rule set is
    saved in this process)."""
    return _POLICIES.get(workspace.pk, lambda: live_policy(workspace),
                         settings.LIVE_CONTEXT_SECONDS)


def refresh_ahead(workspace: Workspace) -> None:
    """Read the workspace's live context and policy again now if this process's copies expire
    within an eighth of ``LIVE_CONTEXT_SECONDS`` (after an answer was sent: the next question
    then finds them fresh, rather than paying the reads)."""
    context_refresh_ahead(workspace)
    _POLICIES.refresh_ahead(workspace.pk, lambda: live_policy(workspace),
                            settings.LIVE_CONTEXT_SECONDS)


# ---------------------------------------------------------------------------------------------
# Requests


@dataclass
class GuardRequest:
    event: Any
    continuation: list
    candidates: list[tuple[Any, list]]
    decision_id: str | None
    attempt: int
    fingerprint: str
    taken: list[dict] = field(default_factory=list)
    store_taken: bool = True


def _events_list(value: Any, field: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ServiceError(f"{field} must be an array of events", field=field, status=422)
    if len(value) > policy_rules.MAX_HORIZON:
        raise ServiceError(f"{field}: at most {policy_rules.MAX_HORIZON} events (longer than "
                           "any horizon)", field=field, status=413)
    return value


def parse_request(document: Any) -> GuardRequest:
    """The guard request's fields, each checked; the field at fault is named."""
    if not isinstance(document, dict):
        raise ServiceError("the body must be a JSON object with the proposed 'event'",
                           field="event", status=422)
    extra = sorted(set(document) - set(REQUEST_FIELDS))
    if extra:
        raise ServiceError(f"unknown field {extra[0]!r} (a guard request has: "
                           f"{', '.join(REQUEST_FIELDS)})", field=extra[0], status=422)
    if not isinstance(document.get("event"), dict):
        raise ServiceError("'event' (the proposed next event, an object) is required",
                           field="event", status=422)
    continuation = _events_list(document.get("continuation"), "continuation")
    raw_candidates = document.get("candidates")
    if raw_candidates is None:
        raw_candidates = []
    if not isinstance(raw_candidates, list):
        raise ServiceError("candidates must be an array of {event, continuation}",
                           field="candidates", status=422)
    if len(raw_candidates) > MAX_CANDIDATES:
        raise ServiceError(f"at most {MAX_CANDIDATES} candidates", field="candidates",
                           status=413)
    candidates = []
    for i, item in enumerate(raw_candidates):
        where = f"candidates[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("event"), dict):
            raise ServiceError(f"{where} must be an object with an 'event'", field=where,
                               status=422)
        unknown = sorted(set(item) - {"event", "continuation"})
        if unknown:
            raise ServiceError(f"{where}: unknown field {unknown[0]!r}",
                               field=f"{where}.{unknown[0]}", status=422)
        candidates.append((item["event"],
                           _events_list(item.get("continuation"), f"{where}.continuation")))
    decision_id = document.get("decision_id")
    if decision_id is not None:
        if (not isinstance(decision_id, str) or not 1 <= len(decision_id) <= DECISION_ID_MAX
                or not decision_id.isprintable()):
            raise ServiceError(f"decision_id must be printable text of 1 to {DECISION_ID_MAX} "
                               "characters", field="decision_id", status=422)
    attempt = document.get("attempt", 0)
    if isinstance(attempt, bool) or not isinstance(attempt, int) or not (
            0 <= attempt <= MAX_ATTEMPT):
        raise ServiceError(f"attempt must be a whole number from 0 to {MAX_ATTEMPT}",
                           field="attempt", status=422)
    store_taken = document.get("store_taken", True)
    if not isinstance(store_taken, bool):
        raise ServiceError("store_taken must be true or false", field="store_taken", status=422)
    fingerprint = hashlib.sha256(json.dumps(
        {k: document.get(k) for k in FINGERPRINT_FIELDS},
        sort_keys=True, ensure_ascii=True).encode()).hexdigest()
    return GuardRequest(document["event"], continuation, candidates, decision_id, attempt,
                        fingerprint, _taken(document.get("taken")), store_taken)


def _taken(value: Any) -> list[dict]:
    """``taken``: at most ``MAX_TAKEN`` events, each an object with an ``event_id`` (by which the
    studio tells whether it stored it already)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ServiceError("taken must be an array of the events taken before the proposed one",
                           field="taken", status=422)
    if len(value) > MAX_TAKEN:
        raise ServiceError(f"taken: at most {MAX_TAKEN} events (post more through the events "
                           "route first)", field="taken", status=413)
    for i, raw in enumerate(value):
        if not isinstance(raw, dict):
            raise ServiceError(f"taken[{i}] must be an event (a JSON object)", field=f"taken[{i}]",
                               status=422)
        event_id = raw.get("event_id")
        if not isinstance(event_id, str) or not event_id.strip():
            raise ServiceError(f"taken[{i}].event_id is required (text): it tells whether the "
                               "studio stored the event already", field=f"taken[{i}].event_id",
                               status=422)
    return value


# ---------------------------------------------------------------------------------------------
# Deciding


def _clean(raw: Any, session: str, field: str) -> Clean:
    try:
        return clean_event(raw, session)
    except ItemError as exc:
        where = f"{field}.{exc.field}" if exc.field else field
        raise ServiceError(f"{field}: {exc.message}", field=where, status=422) from None


def _model(workspace: Workspace, context: Context):
    """The newest risk model learned for exactly the live rule versions, or None."""
    return current_model(workspace, context.versions_key)


def _assess(context: Context, now: SessionNow, event: dict, policy: Policy, model,
            sampled: dict | None, doomed_before: set[str],
            unknown: set[str] | None = None) -> Assessment:
    """One candidate's assessment (``event``: the candidate, labelled).  ``doomed_before``:
    the rules no continuation of the session could meet before the step, or not known yet
    (the same for every candidate: the step is not blamed for them); ``unknown`` collects the
    rules whose anticipation is not known yet after it (searched off the request path)."""
    monitor = now.monitor(context)
    learned, backed = None, False
    if model is not None:
        # The horizon counts the proposed step as the first (as sampling does); the model's
        # horizon counts the steps after the state the proposed step leads to.
        with MONITOR_LOCK:   # stepping stored states parses formulas: one at a time
            answer = model.predict(monitor, event, policy.horizon - 1,
                                   guarded=policy.guarded_risk, recent=_recent(now, model))
        learned = {name: value for name, value in answer.risk.items() if name != ANY_RULE}
        backed = answer.backed
    with MONITOR_LOCK:
        changes = monitor.feed(event)
        # Anticipation (issue 17): a step after which no continuation can satisfy a rule
        # violates it, even where progression has not reached false.  A state never decided
        # before is not searched here (issue 27, item 4): it is not yet known, and searched
        # off the request path.
        doomed, pending = doomed_now(monitor, event)
        doomed -= doomed_before
    if unknown is not None:
        unknown |= pending
    # Violated by the step: TRAC's verdict turning violated or a violation found (as
    # ``rules_if`` says; only this is read here, so the rules' states are not built).
    hit = violated_rules(changes) | doomed
    violates = {rule.name: rule.name in hit for rule in context.ruleset.rules}
    return Assessment(violates, sampled, learned, backed)


def _recent(now: SessionNow, model) -> list:
    """The session's last event, when the model's predicates read the last actions (``now``
    holds it only when labelers read it: else it is read here, one query)."""
    if not model.abstraction.history or not now.steps:
        return []
    if now.previous is not None:
        return [now.previous]
    return [storage.event_before(now.pk, now.steps)] if now.pk is not None else []


def _labelled(context: Context, now: SessionNow, request: GuardRequest,
              policy: Policy) -> list[list[dict]]:
    """Every sample (the proposed event, then each other candidate), each its candidate then
    its continuation within the horizon, checked and labelled (each event once)."""
    samples = [[request.event, *request.continuation]]
    samples += [[event, *continuation] for event, continuation in request.candidates]
    labelled = []
    for s, sample in enumerate(samples):
        where = "" if s == 0 else f"candidates[{s - 1}]."
        steps, previous = [], now.previous
        for k, raw in enumerate(sample[:policy.horizon]):
            field = f"{where}event" if k == 0 else f"{where}continuation[{k - 1}]"
            event = now.monitor_event(_clean(raw, now.external_id, field), k)
            # Labelled here, outside the monitors' lock (a labeler may ask a model).
            steps.append(label_event(context, event, previous))
            previous = event
        labelled.append(steps)
    return labelled


def _sampled(context: Context, now: SessionNow, request: GuardRequest, policy: Policy,
             labelled: list[list[dict]]) -> dict | None:
    """TRAC_P+I: the share of samples (the proposed event and the other candidates, each with
    its continuation) whose extension violates each rule within the horizon."""
    if not request.continuation and not request.candidates:
        return None
    with MONITOR_LOCK:   # the monitors intern formulas: one thread at a time
        answer = sample_risk(context.ruleset, None, labelled, policy.horizon,
                             monitor=now.monitors(context))
    return answer.risk


class _Others(Sequence):
    """The other candidates' assessments, made the first time the decision reads one (most
    decisions - allow, resample, inject - never do)."""

    def __init__(self, make: Callable[[], list[Assessment]], count: int):
        self._make, self._count, self._made = make, count, None

    def _all(self) -> list[Assessment]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self):
        return iter(self._all())


def _requires(now: SessionNow, context: Context):
    """What a rule still requires before the proposed step, in words (asked only for the rules
    at risk: the residuals are read the first time)."""
    read: dict[str, str] = {}

    def reading(name: str) -> str:
        if not read:
            read.update(now.residuals(context))
        return residual_reading(read[name]) if name in read else ""

    return reading


def _poll_path(workspace: Workspace, session: str, decision_id: str) -> str:
    from django.urls import reverse

    return reverse("api:guard_decision", kwargs={
        "slug": workspace.slug, "session_id": session, "decision_id": decision_id})


def _answer_of(row: GuardDecision) -> dict:
    answer = dict(row.answer)
    answer.setdefault("unbacked", [])   # decisions stored before the field existed
    answer.update({"decision_id": row.decision_id, "status": row.status,
                   "decision": row.decision})
    if row.status != DecisionStatus.PENDING and row.answer.get("decision") == ASK_HUMAN:
        answer["decided_by"] = row.decided_by.get_username() if row.decided_by else None
        answer["note"] = row.note
    return answer


@dataclass
class Decided:
    """A guard decision: the ``answer``, and - for a settled decision not stored yet -
    ``record``, the row for ``store_decided`` (the route stores it once the answer is sent)."""

    answer: dict
    record: GuardDecision | None
    request: GuardRequest | None = None


def guard(workspace: Workspace, session_external_id: str, document: Any, actor=None,
          context: Context | None = None) -> dict:
    """Decide on the proposed next step of a live session, and store the decision before
    answering.  Raises ``ServiceError`` for a request that does not fit (the field named),
    ``SessionEnded`` for an ended session, ``LabelerUnavailable`` when its events cannot be
    labelled now (the caller answers 503)."""
    decided = decide(workspace, session_external_id, document, actor, context)
    if decided.record is not None:
        try:
            _insert_decided(decided.record)
        except IntegrityError:
            # The id was decided meanwhile: a retry racing the first request.
            existing = _existing(workspace, decided.record.session, decided.record.decision_id)
            return _repeat(existing, decided.request)
    return decided.answer


def store_decided(decided: Decided) -> None:
    """Store the settled decision ``decide`` left to store (the route calls it after sending
    the answer).  When the same id was stored first (a retry racing the first request), that
    first one is kept."""
    if decided.record is None:
        return
    try:
        _insert_decided(decided.record)
    except IntegrityError:
        log.info("guard decision %s of session %s was stored by a request racing it; the first "
                 "is kept", decided.record.decision_id, decided.record.session)


def decide(workspace: Workspace, session_external_id: str, document: Any, actor=None,
           context: Context | None = None) -> Decided:
    """``guard``'s decision, with a settled one on Postgres left to store (``record``): the
    agent need not wait for it.  A question for a person is stored before answering (the Live
    page shows it, the agent polls it), as is every decision on other databases."""
    request = parse_request(document)
    session = checked_session_id(session_external_id)
    context = context or context_for(workspace)
    policy = effective_policy(workspace)
    # The taken events are checked first, and their ids looked up with the read; so is
    # whether the decision id was answered already (a repeat gets the first answer).
    taken = [_clean(raw, session, f"taken[{i}]") for i, raw in enumerate(request.taken)]
    also = ([(_decided_sql(), [workspace.pk, session, request.decision_id])]
            if request.decision_id is not None else [])
    try:
        now = session_now(workspace, session, context, [c.event_id for c in taken], also)
    except SessionEnded:
        # A question answered before the session ended is still answered as it was.
        existing = _existing(workspace, session, request.decision_id)
        if existing is None:
            raise
        return Decided(_repeat(existing, request), None, request)
    if also and now.also[0]:
        existing = _existing(workspace, session, request.decision_id)
        if existing is not None:
            return Decided(_repeat(existing, request), None, request)
    now, stored = _after_taken(context, now, taken)
    model = _model(workspace, context)
    labelled = _labelled(context, now, request, policy)
    sampled = _sampled(context, now, request, policy, labelled)
    with MONITOR_LOCK:
        doomed, unknown = doomed_now(now.monitors(context))
        ended_violates = policy_rules.violated_if_ended(now.monitors(context))
    doomed |= unknown   # not known before the step: the step is not blamed for it
    pending: set[str] = set()
    proposed = _assess(context, now, labelled[0][0], policy, model, sampled, doomed, pending)
    others = _Others(lambda: [_assess(context, now, sample[0], policy, model, None, doomed)
                              for sample in labelled[1:]], len(labelled) - 1)
    decision = policy_rules.decide(policy, proposed, others, request.attempt,
                                   _requires(now, context), ended_violates)
    answer = decision.to_json()
    # Rules whose anticipation is not known yet (before or after this step): decided on the
    # exact check alone, and said so (never a guess).
    pending |= unknown
    answer["not_yet_known"] = sorted(pending)
    if pending:
        answer["reason"] += (f"; whether this step leaves {', '.join(sorted(pending))} "
                             f"impossible to meet is {NOT_YET_KNOWN_WORDS} (worked out in the "
                             "background; asking again shortly has it)")
    answer["session"] = session
    answer["steps"] = now.steps
    answer["learned_model"] = model is not None
    # The agent's loop needs the limit to count its own resamples against.
    answer["max_resamples"] = policy.max_resamples
    decision_id = request.decision_id or uuid.uuid4().hex
    pending = decision.decision == ASK_HUMAN
    answer["poll"] = _poll_path(workspace, session, decision_id) if pending else None
    answer["human_default"] = policy.human_default if pending else None
    row = GuardDecision(
        workspace=workspace, session=session, decision_id=decision_id,
        request_hash=request.fingerprint, proposed=request.event, answer=answer,
        decision=decision.decision,
        status=DecisionStatus.PENDING if pending else DecisionStatus.DECIDED,
        expires_at=(timezone.now() + timedelta(seconds=policy.human_timeout_seconds)
                    if pending else None))
    if not pending and connection.vendor == "postgresql" and not connection.in_atomic_block:
        # A decision the agent acts on at once is a record, not a promise: stored after the
        # answer (``store_decided``), in one round trip that does not wait for the disk (a
        # crash loses at most the last moment's records; the agent's events are durable).
        answer = _answer_of(row)
        answer["stored"] = stored
        return Decided(answer, row, request)
    try:
        with transaction.atomic():
            # A question for a person is durable: someone will answer it.
            row.save()
            if pending:
                record(workspace, actor, LogAction.GUARD_ASKED_HUMAN, row, session=session,
                       decision_id=decision_id, reason=decision.reason,
                       rules=[e["rule"] for e in decision.at_risk])
    except IntegrityError:
        # The id was decided meanwhile (a retry racing the first request).
        existing = _existing(workspace, session, decision_id)
        return Decided(_repeat(existing, request), None, request)
    answer = _answer_of(row)
    answer["stored"] = stored
    return Decided(answer, None, request)


def store_taken(workspace: Workspace, session_external_id: str, document: dict, answer: dict,
                actor=None) -> None:
    """Store the taken events of an answered guard request (``document``, as ``guard`` read it)
    that ``answer`` did not find stored, through the events route's own service (idempotent by
    event id: one stored meanwhile is stored once).  Called once the answer has been sent."""
    if document.get("store_taken") is False:
        return   # the agent stores them later (a later question, or the events route)
    stored = set(answer.get("stored") or ())
    left = [event for event in document.get("taken") or () if event["event_id"] not in stored]
    if left:
        ingest(workspace, session_external_id, left, SOURCE_LIVE, actor)


def _insert_decided(row: GuardDecision) -> None:
    """Store a settled decision (Postgres, outside any transaction) in one round trip: its
    own transaction, committed without waiting for the disk.  IntegrityError: the id was
    decided meanwhile (the transaction is rolled back)."""
    fields = [f for f in GuardDecision._meta.concrete_fields if not f.primary_key]
    values = [f.get_db_prep_save(f.pre_save(row, True), connection) for f in fields]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    insert = (f"INSERT INTO {storage.quoted_table(GuardDecision)} ({columns}) "
              f"VALUES ({', '.join(['%s'] * len(fields))})")
    try:
        storage.run_together([("BEGIN", []), ("SET LOCAL synchronous_commit TO OFF", []),
                              (insert, values), ("COMMIT", [])])
    except IntegrityError:
        # The insert failed inside the transaction begun above, and the COMMIT after it was
        # skipped: the transaction is still open (and aborted) - end it.
        storage.run("ROLLBACK", [])
        raise


def _decided_sql() -> str:
    """Whether a decision id was answered in a session (parameters: workspace id, session,
    decision id): read with the session (``session_now``'s ``also``)."""
    return (f"EXISTS (SELECT 1 FROM {storage.quoted_table(GuardDecision)} WHERE "
            "workspace_id = %s AND session = %s AND decision_id = %s)")


def _existing(workspace: Workspace, session: str, decision_id: str | None
              ) -> GuardDecision | None:
    if decision_id is None:
        return None
    return GuardDecision.objects.filter(workspace=workspace, session=session,
                                        decision_id=decision_id).first()


def _after_taken(context: Context, now: SessionNow,
                 cleans: list[Clean]) -> tuple[SessionNow, list[str]]:
    """The session as if the taken events (``cleans``) the read did not include followed it,
    and the ids of those stored in this session (before or after the read; in the order
    given).  An id stored in another session is not applied (the events route refuses it
    there)."""
    if not cleans:
        return now, []
    known = now.known
    seen = seen_by(now, known)
    here = {event_id for event_id, (session_pk, _) in known.items()
            if now.pk is not None and session_pk == now.pk}
    stored, applied, follow = [], set(), []
    for clean in cleans:
        if clean.event_id in applied:
            continue   # a repeat in the list: stored once, so applied once
        applied.add(clean.event_id)
        if clean.event_id in here:
            stored.append(clean.event_id)
        if clean.event_id in seen:
            continue   # the monitors read it already
        if clean.event_id in known and clean.event_id not in here:
            continue   # stored in another session: never one of this session's events
        follow.append(clean)
    return session_after(now, context, follow), stored


def _repeat(existing: GuardDecision, request: GuardRequest) -> dict:
    if existing.request_hash != request.fingerprint:
        raise ServiceError(f"decision_id {existing.decision_id!r} was used for another request "
                           "in this session: use a new id for a new question",
                           field="decision_id", status=409)
    _expire(existing)
    answer = _answer_of(existing)
    answer["repeated"] = True
    # Not looked up for a repeat: the route stores the taken events (again: nothing twice), and
    # the next question confirms them.
    answer["stored"] = []
    return answer


# ---------------------------------------------------------------------------------------------
# A person in the loop


def _time_out(locked: GuardDecision) -> None:
    """Apply the policy's default to a locked pending decision past its deadline."""
    default = locked.answer.get("human_default") or STOP
    locked.status = DecisionStatus.TIMED_OUT
    locked.decision = default if default in (ALLOW, STOP) else STOP
    locked.decided_at = timezone.now()
    locked.note = "nobody answered in time: the policy's default applies"
    locked.save(update_fields=["status", "decision", "decided_at", "note"])
    record(locked.workspace, None, LogAction.GUARD_TIMED_OUT, locked, session=locked.session,
           decision_id=locked.decision_id, decision=locked.decision)


def _overdue(row: GuardDecision) -> bool:
    return (row.status == DecisionStatus.PENDING and row.expires_at is not None
            and row.expires_at <= timezone.now())


def _expire(row: GuardDecision) -> GuardDecision:
    """A pending decision past its deadline takes the policy's default (recorded once)."""
    if not _overdue(row):
        return row
    with transaction.atomic():
        locked = GuardDecision.objects.select_for_update().get(pk=row.pk)
        if _overdue(locked):
            _time_out(locked)
    row.refresh_from_db()
    return row


def check_wait(wait: float) -> float:
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not (
            0 <= wait <= MAX_WAIT_SECONDS):
        raise ServiceError(f"wait must be 0 to {MAX_WAIT_SECONDS} seconds", field="wait",
                           status=422)
    return float(wait)


def decision_row(workspace: Workspace, session_external_id: str,
                 decision_id: str) -> GuardDecision:
    """The decision with this id as it stands now (past its deadline: the policy's default
    applied); 404 when there is none."""
    session = checked_session_id(session_external_id)
    row = GuardDecision.objects.filter(workspace=workspace, session=session,
                                       decision_id=decision_id).first()
    if row is None:
        raise ServiceError(f"no guard decision {decision_id!r} in session {session!r}",
                           field="decision_id", status=404)
    return _expire(row)


def decision(workspace: Workspace, session_external_id: str, decision_id: str) -> dict:
    """The decision with this id, as answered to a poll (never waits: the poll's view waits
    asynchronously, ``studio.guard.waits``)."""
    return answer_of(decision_row(workspace, session_external_id, decision_id))


def answer_of(row: GuardDecision) -> dict:
    return _answer_of(row)


def seconds_to_wait(row: GuardDecision, wait: float) -> float:
    """How long a poll asking to wait ``wait`` seconds waits for this row: not past its
    deadline (then the policy's default applies), nothing for a settled one."""
    if row.status != DecisionStatus.PENDING:
        return 0.0
    if row.expires_at is not None:
        wait = min(wait, max((row.expires_at - timezone.now()).total_seconds(), 0) + 0.01)
    return max(wait, 0.0)


def _overdue_rows(workspace: Workspace, limit: int = 500) -> None:
    """Pending decisions past their deadline take the policy's default (so that a page of
    pending decisions is full)."""
    overdue = (GuardDecision.objects.filter(workspace=workspace, status=DecisionStatus.PENDING,
                                            expires_at__lte=timezone.now())
               .order_by("created_at", "pk")[:limit])
    for row in overdue:
        _expire(row)


def pending_count(workspace: Workspace) -> int:
    """How many decisions wait for a person (overdue ones take their default first)."""
    _overdue_rows(workspace)
    return GuardDecision.objects.filter(workspace=workspace,
                                        status=DecisionStatus.PENDING).count()


def pending_decisions(workspace: Workspace, limit: int = PENDING_PAGE,
                      offset: int = 0) -> list[GuardDecision]:
    """A page of the decisions waiting for a person, oldest first (overdue ones take their
    default first, so they are not on it)."""
    limit = max(1, min(int(limit), PENDING_PAGE_MAX))
    offset = max(0, min(int(offset), PENDING_OFFSET_MAX))
    _overdue_rows(workspace)
    rows = (GuardDecision.objects.filter(workspace=workspace, status=DecisionStatus.PENDING)
            .order_by("created_at", "pk")[offset:offset + limit])
    return [row for row in map(_expire, rows) if row.status == DecisionStatus.PENDING]


def resolve(workspace: Workspace, pk: int, actor, approve: bool, note: str = "") -> GuardDecision:
    """A reviewer approves (the agent may go ahead: ``allow``) or denies (``stop``) a pending
    decision; recorded in the audit log.  An answered or expired one is a conflict (409)."""
    if Role.REVIEWER not in roles_of(workspace, actor):
        raise PermissionDenied("only reviewers answer the guard's questions")
    if not isinstance(note, str) or len(note) > 2_000:
        raise ServiceError("note: at most 2,000 characters", field="note", status=422)
    with transaction.atomic():
        row = (GuardDecision.objects.select_for_update()
               .filter(workspace=workspace, pk=pk).first())
        if row is None:
            raise ServiceError("no such guard decision", field="decision", status=404)
        was = row.status
        if _overdue(row):
            _time_out(row)
        elif was == DecisionStatus.PENDING:
            row.status = DecisionStatus.APPROVED if approve else DecisionStatus.DENIED
            row.decision = ALLOW if approve else STOP
            row.decided_by = acting_user(actor)
            row.decided_at = timezone.now()
            row.note = note.strip()
            row.save(update_fields=["status", "decision", "decided_by", "decided_at", "note"])
            record(workspace, actor,
                   LogAction.GUARD_APPROVED if approve else LogAction.GUARD_DENIED, row,
                   session=row.session, decision_id=row.decision_id, note=row.note)
            settled = row.pk
            transaction.on_commit(lambda: waits.notify_settled(settled))
            return row
    if row.status == DecisionStatus.TIMED_OUT and was == DecisionStatus.PENDING:
        raise ServiceError("the agent's wait ran out: the policy's default was applied",
                           field="decision", status=409)
    raise ServiceError(f"already answered ({was})", field="decision", status=409)


def proposed_summary(row: GuardDecision) -> Mapping:
    """What a person sees of a pending decision: the proposed action and the rules at risk."""
    output = row.proposed.get("output") if isinstance(row.proposed, dict) else None
    tool = output.get("tool") if isinstance(output, dict) else None
    return {"tool": tool, "event": row.proposed, "reason": row.answer.get("reason", ""),
            "rules": row.answer.get("rules_at_risk", [])}
