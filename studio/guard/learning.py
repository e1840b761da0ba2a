"""Risk models kept fresh: learning the DTMC of the live rules from the stored sessions, and
handing the newest one to the guard.

At most one model per workspace is learned or waits for a worker at a time, and asking during
one never starts a second (docs/guard-models.md):

- ``request_model`` (under a lock on the workspace row) returns the record queued for the
  workspace, retargeted to the live rule versions if they changed (it has read nothing yet);
  else, while one runs, it notes on that record that one more is wanted once it finishes (its
  ``follow_up``: the newest versions asked for; many edits during one relearn leave one
  follow-up); else it makes a queued record and enqueues the Celery task after the commit.
- ``learn_model`` is the task's body: it claims the record (queued -> running by a conditional
  UPDATE, so a duplicate delivery does nothing), replays the workspace's stored sessions -
  finished ones (``finished_sessions``: uploaded, ended, or live and idle past the workspace's
  inactivity window), newest first, at most ``GUARD_MODEL_MAX_SESSIONS`` - through the record's
  rule versions and the workspace's labeling, learns the model (``studio.risk``) and stores it,
  counting progress every few sessions, and how many of the sessions ran behind the guard and
  how many proposed steps it refused in them (``GuardDecision``).  Any failure is stored on the
  record (failed, with the reason); nothing is lost silently.  Finishing, either way, queues the
  follow-up if one was wanted, in the same transaction.

The task runs at most once (it is not acknowledged late) on its own queue
(``GUARD_MODEL_QUEUE``), with a time limit (``GUARD_MODEL_TIME_LIMIT``): a worker killed while
learning leaves the record running, and one whose message the broker lost leaves it queued.
Either is taken as failed (the reason says so) once it is older than
``GUARD_MODEL_STALL_SECONDS`` - when the page, the next request or beat's sweep
(``expire_stalled``) looks at it - and its follow-up is queued then.

The live rules changing (a rule set marked live or not, its rules changed, a version approved, a
rule renamed or deleted), or the labelers, asks for a model again after the commit, for
workspaces that have learned one before (``connect_relearning``, called from the app's
``ready``); so does the end of the ``GUARD_MODEL_RELEARN_SESSIONS``-th live session ended since
the newest model was asked for (``relearn_after_sessions``).

Without a broker the task runs on a background thread of the process, a moment after it was
asked for (``studio.tasks.Background``, ``GUARD_MODEL_BACKGROUND_DELAY``), never inside the
request that asked; the record coalesces what is asked meanwhile as it does with a worker.

``current_model`` is what the guard asks on every request: a dictionary lookup once the model is
loaded, with the "which model is newest" query made at most once per
``GUARD_MODEL_CHECK_SECONDS`` per workspace and rule versions.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from datetime import timedelta
from itertools import groupby

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from studio import tasks
from studio.audits.services import answered_in_groups, monitor_event, session_events
from studio.caching import LruCache
from studio.errors import ServiceError
from studio.labeling.llm import LLMError
from studio.live.context import MONITOR_LOCK, context_for, live_versions
from studio.live.ending import session_ended
from studio.live.events import SOURCE_LIVE
from studio.risk.abstraction import Abstraction
from studio.risk.guard import Policy, combine
from studio.risk.predicates import (
    Predicate, PredicateError, ProposalData, predicates_from_json, propose,
)
from studio.risk.predictor import ANY_RULE, RiskModel, Traces, held_out_quality
from studio.rules.models import Labeler, Rule, RuleSet, RuleVersion, VersionStatus
from studio.rules.monitoring import ruleset_for
from studio.traces.models import TraceSession
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Workspace
from studio.workspaces.services import record

from .drawing import RiskPoint
from .models import GuardDecision, LearnedRiskModel, ModelPredicates, ModelStatus

log = logging.getLogger(__name__)

ACTIVE = (ModelStatus.QUEUED, ModelStatus.RUNNING)
SESSION_CHUNK = 200       # sessions whose events are streamed in one query
PROGRESS_EVERY = 25       # sessions between two progress updates
ERROR_LIMIT = 2000


def max_sessions() -> int:
    return settings.GUARD_MODEL_MAX_SESSIONS


def _stall_seconds() -> float:
    return settings.GUARD_MODEL_STALL_SECONDS


class NothingToLearn(ServiceError):
    status = 409


def key_of(versions) -> list[list]:
    """Rule versions as ``Context.versions_key`` lists them: ``[[rule, version id], ...]``."""
    return [[str(rule), int(version_id)] for rule, version_id in versions]


# ---------------------------------------------------------------------------------------------
# Asking for a model

def _stale(now) -> models.Q:
    cutoff = now - timedelta(seconds=_stall_seconds())
    running = models.Q(status=ModelStatus.RUNNING, started_at__lt=cutoff)
    if _learned_here():
        return running   # a queued record is adopted, not lost (``adopt_orphans``)
    return models.Q(status=ModelStatus.QUEUED, created_at__lt=cutoff) | running


def _learned_here() -> bool:
    """Whether models are learned on this process's background thread (no broker)."""
    return settings.GUARD_MODEL_IN_BACKGROUND and tasks.runs_in_background()


def adopt_orphans(workspace: Workspace) -> int:
    """Without a broker a queued model waits on the background thread of the process that
    asked for it; if that process ended first (a command such as load_demo, a restart), no
    thread holds it.  This process takes such records on (claiming is atomic, so two processes
    taking one learn it once); returns how many.  One query when none is queued."""
    if not _learned_here():
        return 0
    grace = timezone.now() - timedelta(seconds=settings.GUARD_MODEL_BACKGROUND_DELAY + 5)
    adopted = 0
    for pk in (LearnedRiskModel.objects.filter(workspace=workspace, status=ModelStatus.QUEUED,
                                               created_at__lt=grace)
               .values_list("pk", flat=True)):
        if not tasks.BACKGROUND.holds(tasks.LEARN_RISK_MODEL, (pk,)):
            _enqueue(pk)
            adopted += 1
    return adopted


STALLED_REASONS = {
    ModelStatus.QUEUED: "no worker took this model in time (the task queue may have lost it); "
                        "learn again",
    ModelStatus.RUNNING: "the worker stopped before it finished (killed, or past the time "
                         "limit); learn again",
}


def mark_stalled(workspace: Workspace) -> int:
    """Mark failed the workspace's records whose task is taken as lost (see the module's doc),
    queueing the follow-ups they carried; returns how many.  One query when none is."""
    adopt_orphans(workspace)
    if not LearnedRiskModel.objects.filter(_stale(timezone.now()), workspace=workspace).exists():
        return 0
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
        return _expire_stalled(workspace.pk)


def _expire_stalled(workspace_id: int) -> int:
    """``mark_stalled`` under the workspace's lock."""
    now = timezone.now()
    expired = 0
    for pk, status, follow_up in (LearnedRiskModel.objects.filter(_stale(now),
                                                                  workspace_id=workspace_id)
                                  .values_list("id", "status", "follow_up")):
        if LearnedRiskModel.objects.filter(pk=pk, status=status).update(
                status=ModelStatus.FAILED, finished_at=now, error=STALLED_REASONS[status],
                follow_up=None):
            expired += 1
            if follow_up:
                _queue_follow_up(workspace_id, follow_up)
    return expired


def expire_stalled() -> int:
    """``mark_stalled`` for every workspace that has a stalled record (beat's sweep: so that a
    follow-up waiting behind a lost task starts without anyone looking)."""
    expired = 0
    for workspace_id in set(LearnedRiskModel.objects.filter(_stale(timezone.now()))
                            .values_list("workspace_id", flat=True)):
        with transaction.atomic():
            Workspace.objects.select_for_update().filter(pk=workspace_id).first()
            expired += _expire_stalled(workspace_id)
    return expired


def _wanted(versions, follow_up) -> list[list]:
    """The rule versions a record stands for: its follow-up's when one waits behind it."""
    return key_of((follow_up or {}).get("versions") or versions)


def request_model(workspace: Workspace, actor=None, reason: str = "on demand",
                  again: bool = False) -> LearnedRiskModel:
    """A model to learn for the workspace's live rule versions: the record queued for the
    workspace (retargeted to them), else the one running (with a follow-up for them, unless it
    is learning them already and not ``again``: the labelers changed since it started), else a
    new one, enqueued after commit.  ``NothingToLearn`` when no approved rule is monitored
    live."""
    key = key_of((v.rule, v.id) for v in live_versions(workspace))
    if not key:
        raise NothingToLearn("no approved rule is monitored live, so there is no model to "
                             "learn; approve a rule (or mark a rule set live) first")
    user = acting_user(actor)
    with transaction.atomic():
        # One request (or finishing task) at a time per workspace decides what is learned.
        Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
        _expire_stalled(workspace.pk)
        active = list(LearnedRiskModel.objects.filter(workspace=workspace, status__in=ACTIVE)
                      .only("id", "versions", "status", "follow_up").order_by("-id"))
        queued = [r for r in active if r.status == ModelStatus.QUEUED]
        running = [r for r in active if r.status == ModelStatus.RUNNING]
        if queued:
            found = queued[0]
            if key_of(found.versions) == key:
                return LearnedRiskModel.objects.get(pk=found.pk)
            # Conditional: a worker claims a record without this lock, and one claimed has
            # read its versions (then it is the running one below).
            if LearnedRiskModel.objects.filter(pk=found.pk, status=ModelStatus.QUEUED).update(
                    versions=key, reason=reason[:200], requested_by=user):
                record(workspace, actor, LogAction.RISK_MODEL_REQUESTED, found, versions=key,
                       reason=reason, retargeted=True)
                return LearnedRiskModel.objects.get(pk=found.pk)
            found.status = ModelStatus.RUNNING
            running = [found]
        if running:
            # It stays running while this lock is held: finishing takes the lock too.
            found = running[0]
            again = again or bool((found.follow_up or {}).get("again"))
            if key_of(found.versions) == key and not again:
                if found.follow_up is not None:   # the rules went back to what it learns
                    LearnedRiskModel.objects.filter(pk=found.pk).update(follow_up=None)
                return LearnedRiskModel.objects.get(pk=found.pk)
            waiting = found.follow_up
            if (waiting is None or _wanted(found.versions, waiting) != key
                    or (again and not waiting.get("again"))):
                LearnedRiskModel.objects.filter(pk=found.pk).update(follow_up={
                    "versions": key, "reason": reason[:200],
                    "requested_by": user.pk if user is not None else None, "again": again})
                record(workspace, actor, LogAction.RISK_MODEL_REQUESTED, found, versions=key,
                       reason=reason, after_running=True)
            return LearnedRiskModel.objects.get(pk=found.pk)
        made = LearnedRiskModel.objects.create(workspace=workspace, versions=key,
                                               reason=reason[:200], requested_by=user)
        record(workspace, actor, LogAction.RISK_MODEL_REQUESTED, made, versions=key, reason=reason)
        _enqueue(made.pk)
    return made


def _queue_follow_up(workspace_id: int, follow_up: dict) -> LearnedRiskModel:
    """The model a finished (or stalled) one carried as its follow-up, queued and enqueued after
    the commit.  Called under the workspace's lock, with nothing else queued or running."""
    from django.contrib.auth import get_user_model

    asked_by = follow_up.get("requested_by")
    if asked_by is not None and not get_user_model().objects.filter(pk=asked_by).exists():
        asked_by = None   # the person left meanwhile
    made = LearnedRiskModel.objects.create(
        workspace_id=workspace_id, versions=key_of(follow_up["versions"]),
        reason=str(follow_up.get("reason") or "asked for while another was learned")[:200],
        requested_by_id=asked_by)
    _enqueue(made.pk)
    return made


def _enqueue(record_id: int) -> None:
    """Learn the model in a worker (its own queue), once the current transaction commits."""

    def unavailable(exc) -> None:
        log.warning("risk model %s: the broker is unavailable (%s)", record_id, exc)
        LearnedRiskModel.objects.filter(pk=record_id, status=ModelStatus.QUEUED).update(
            status=ModelStatus.FAILED, finished_at=timezone.now(),
            error="the task queue is unavailable, so the model was not queued; learn again "
                  "once it is back")

    limit = settings.GUARD_MODEL_TIME_LIMIT
    # Without a broker, off the request path: on the process's background thread, a moment
    # later (a burst of triggers meanwhile finds this record queued and coalesces into it).
    background = (settings.GUARD_MODEL_BACKGROUND_DELAY if settings.GUARD_MODEL_IN_BACKGROUND
                  else None)
    # Past the soft limit the task stops and stores why; the hard one ends its process.
    tasks.enqueue(tasks.LEARN_RISK_MODEL, record_id, unavailable=unavailable,
                  soft_time_limit=limit, time_limit=limit + 30, background=background)


# ---------------------------------------------------------------------------------------------
# Learning (the task's body)

class _Failed(Exception):
    """A reason to fail that is already worded for a person."""


class ModelUnreadable(Exception):
    """A stored model that cannot be loaded (its rule versions deleted, or data this version
    does not read); the message says why, for a person."""


def learn_model(record_id: int, phases: dict[str, float] | None = None) -> str:
    """Learn the model of record ``record_id``.  Returns "ready", "failed" or "gone" (not
    queued: already learned, failed, running elsewhere or deleted - nothing done).  Either way
    the follow-up asked for meanwhile is queued as the record is finished.  ``phases``, when
    given, gets the seconds each phase took (also logged)."""
    phases = {} if phases is None else phases
    claimed = LearnedRiskModel.objects.filter(pk=record_id, status=ModelStatus.QUEUED).update(
        status=ModelStatus.RUNNING, started_at=timezone.now(), progress_done=0, error="")
    if not claimed:
        return "gone"
    row = LearnedRiskModel.objects.select_related("workspace").get(pk=record_id)
    try:
        model, used, found = _learn(row, phases)
        with _phase(phases, "encoding the model"):
            data = model.to_json(compact=True)
    except Exception as exc:  # noqa: BLE001 - every failure is stored, worded for a person
        if not isinstance(exc, _Failed):
            log.exception("risk model %s failed", record_id)
        _finish(row, status=ModelStatus.FAILED, finished_at=timezone.now(), error=_reason(exc))
        return "failed"
    with _phase(phases, "storing the model"):
        stored = _finish(row, status=ModelStatus.READY, finished_at=timezone.now(), model=data,
                         sessions=used["sessions"], events=used["events"],
                         states=len(model.states), progress_done=used["sessions"],
                         guarded_sessions=used["guarded_sessions"],
                         refused_steps=used["refused_steps"], **found)
    log.info("risk model %s: %d states from %d sessions; %s", record_id, len(model.states),
             used["sessions"], ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
    if not stored:
        return "gone"   # taken as stalled meanwhile; its failure stands
    forget_newest(row.workspace_id)
    return "ready"


def _finish(row: LearnedRiskModel, **fields) -> bool:
    """Store the running record's outcome and queue its follow-up, if one was asked for, in one
    transaction under the workspace's lock (as ``request_model`` decides under it); False when
    the record no longer runs (taken as stalled meanwhile: its follow-up went then)."""
    with transaction.atomic():
        Workspace.objects.select_for_update().filter(pk=row.workspace_id).first()
        follow_up = (LearnedRiskModel.objects.filter(pk=row.pk, status=ModelStatus.RUNNING)
                     .values_list("follow_up", flat=True).first())
        if not LearnedRiskModel.objects.filter(pk=row.pk, status=ModelStatus.RUNNING).update(
                follow_up=None, **fields):
            return False
        if follow_up:
            _queue_follow_up(row.workspace_id, follow_up)
    return True


@contextmanager
def _phase(phases: dict[str, float], name: str):
    started = time.perf_counter()
    try:
        yield
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - started


def _timed(rows, phases: dict[str, float], name: str):
    """``rows`` as they come, the time spent waiting for each added to ``phases[name]``."""
    rows = iter(rows)
    clock = time.perf_counter
    while True:
        started = clock()
        try:
            row = next(rows)
        except StopIteration:
            phases[name] = phases.get(name, 0.0) + clock() - started
            return
        phases[name] = phases.get(name, 0.0) + clock() - started
        yield row


def _reason(exc: Exception) -> str:
    if isinstance(exc, _Failed):
        text = str(exc)
    elif isinstance(exc, SoftTimeLimitExceeded):
        text = (f"learning took longer than its limit of {settings.GUARD_MODEL_TIME_LIMIT:g} s "
                "(GUARD_MODEL_TIME_LIMIT); learn from fewer sessions "
                "(GUARD_MODEL_MAX_SESSIONS) or allow it longer")
    elif isinstance(exc, LLMError):
        text = f"a labeler could not label the sessions' events ({exc.message}); learn again " \
               "later"
    else:
        text = f"learning stopped on an unexpected error ({type(exc).__name__}: {exc})"
    return text[:ERROR_LIMIT]


def ruleset_of(versions) -> object:
    """The compiled rules of ``versions`` (``[[rule, version id], ...]``), in that order, as
    live monitoring builds them.  ``_Failed`` when a version no longer exists."""
    key = key_of(versions)
    found = {v.id: v for v in RuleVersion.objects.filter(id__in=[i for _, i in key])
             .select_related("rule")}
    missing = [f"{rule} (version id {i})" for rule, i in key if i not in found]
    if missing:
        raise _Failed(f"the rule versions this model is for no longer exist: "
                      f"{', '.join(missing)}")
    with MONITOR_LOCK:   # compiling interns formulas: one thread at a time
        return ruleset_for([found[i] for _, i in key])


PROPOSAL_MAX_STEPS = 60_000   # steps of the training sessions the proposer reads, at most


def live_predicates(workspace: Workspace) -> tuple[Predicate, ...]:
    """The model predicates of the workspace's live rule sets, in rule set order, each once (a
    stored list that no longer reads is left out, logged)."""
    out: list[Predicate] = []
    for ruleset_id, stored in (ModelPredicates.objects
                               .filter(ruleset__workspace=workspace, ruleset__live=True)
                               .order_by("ruleset_id").values_list("ruleset_id", "predicates")):
        try:
            found = predicates_from_json(stored)
        except PredicateError as exc:
            log.warning("rule set %s: its model predicates do not read (%s)", ruleset_id, exc)
            continue
        out += [p for p in found if p not in out]
    return tuple(out)


def live_policy(workspace: Workspace) -> Policy:
    """The policy the live rule sets combine to (``studio.risk.guard.combine``), read now; the
    defaults when no rule set is live.  The guard reads it through a short cache
    (``services.effective_policy``); a model measures its alarms at its horizon and threshold."""
    parts = []
    for ruleset in (RuleSet.objects.filter(workspace=workspace, live=True)
                    .prefetch_related("rules").select_related("guard_policy")):
        stored = getattr(ruleset, "guard_policy", None)
        parts.append((Policy.from_json(stored.policy if stored else {}),
                      [r.name for r in ruleset.rules.all()]))
    return combine(parts) if parts else Policy()


def _learn(row: LearnedRiskModel, phases: dict[str, float]
           ) -> tuple[RiskModel, dict, dict]:
    workspace = row.workspace
    with _phase(phases, "rules and sessions to read"):
        ruleset = ruleset_of(row.versions)
        labeling = context_for(workspace).labeling
        predicates = live_predicates(workspace)
        policy = live_policy(workspace)
        try:
            abstraction = Abstraction(ruleset, row.atoms, predicates=predicates)
        except ValueError as exc:
            raise _Failed(f"the picked atoms do not fit the rules: {exc}") from None
        # The guard asks the model for the steps after the one proposed (services._assess).
        horizon = max(1, policy.horizon - 1)
        proposals = ProposalData(horizon, PROPOSAL_MAX_STEPS)
        ids = list(finished_sessions(workspace).filter(steps__gt=0)
                   .order_by("-id").values_list("id", flat=True)[:max_sessions()])
        LearnedRiskModel.objects.filter(pk=row.pk).update(progress_total=len(ids))
    traces = Traces(abstraction)
    done = events = 0
    marks = {"guarded_sessions": 0, "refused_steps": 0}
    label = labeling.label
    for start in range(0, len(ids), SESSION_CHUNK):
        _count_decisions(workspace, ids[start:start + SESSION_CHUNK], marks)
        rows = session_events(ids[start:start + SESSION_CHUNK])
        if labeling.batched_labelers:
            rows = answered_in_groups(rows, labeling, None)
        rows = _timed(rows, phases, "reading events (and batched labelers)")
        for _, session_rows in groupby(rows, key=lambda r: r[0]):
            session_rows = list(session_rows)   # read here, so that reading is timed apart
            with _phase(phases, "labelling"):
                labelled, previous = [], None
                for session_row in session_rows:
                    event = monitor_event(session_row)
                    labelled.append(label(event, previous))
                    previous = event
            with _phase(phases, "replaying the monitors"), MONITOR_LOCK:
                # (the monitors intern formulas: one thread at a time)
                numbers = traces.add(labelled)
            if not proposals.full:
                with _phase(phases, "steps for proposals"):
                    proposals.add(labelled, [traces.states[i] for i in numbers])
            done += 1
            events += len(labelled)
            if done % PROGRESS_EVERY == 0:
                LearnedRiskModel.objects.filter(pk=row.pk).update(progress_done=done)
    LearnedRiskModel.objects.filter(pk=row.pk).update(progress_done=done)
    bounds = {"min_visits": settings.GUARD_MODEL_MIN_STATE_VISITS,
              "max_states": settings.GUARD_MODEL_MAX_STATES}
    with MONITOR_LOCK:
        model = traces.model(phases=phases, **bounds)
        with _phase(phases, "alarm quality on held-out sessions"):
            quality = held_out_quality(traces, horizon, policy.threshold, **bounds)
    with _phase(phases, "proposing predicates"):
        proposed = propose(proposals, exclude=predicates, skip_atoms=abstraction.readable)
    found = {"predicates": [p.to_json() for p in predicates], "quality": quality.to_json(),
             "proposals": [p.to_json() for p in proposed]}
    return model, {"sessions": done, "events": events, **marks}, found


def finished_sessions(workspace: Workspace, now=None) -> models.QuerySet:
    """The sessions a model learns from: every one but the live sessions still open - except
    those idle past the workspace's ``live_inactivity_minutes``, which the idle sweep would end
    (their events are all there; without beat, as on the embedded default, no sweep ends them).
    An open live session that is still active is left out: its end is not known yet."""
    sessions = TraceSession.objects.filter(workspace=workspace)
    still_open = models.Q(source=SOURCE_LIVE, ended_at__isnull=True)
    minutes = workspace.live_inactivity_minutes
    if minutes > 0:
        cutoff = (now or timezone.now()) - timedelta(minutes=minutes)
        idle = (models.Q(last_event_at__lt=cutoff)
                | models.Q(last_event_at__isnull=True, created_at__lt=cutoff))
        still_open &= ~idle
    return sessions.exclude(still_open)


def _count_decisions(workspace: Workspace, ids: list[int], marks: dict) -> None:
    """Add to ``marks`` how many of the sessions ``ids`` an agent ran behind the guard and how
    many of its proposals the guard refused there (every answer but allow, as it stands now: a
    person's approval is an allow)."""
    external = list(TraceSession.objects.filter(pk__in=ids, source=SOURCE_LIVE)
                    .values_list("external_id", flat=True))
    if not external:
        return
    decisions = (GuardDecision.objects.filter(workspace=workspace, session__in=external)
                 .values_list("session", "decision"))
    guarded = set()
    for session, decision in decisions:
        guarded.add(session)
        marks["refused_steps"] += decision != "allow"
    marks["guarded_sessions"] += len(guarded)


# ---------------------------------------------------------------------------------------------
# The newest model, for the guard

_LOCK = threading.Lock()
_NEWEST: dict[tuple, tuple[float, int | None]] = {}   # (workspace, versions) -> (until, id)
_MODELS_MAX = 16
_MODELS: LruCache[int, RiskModel] = LruCache(_MODELS_MAX)  # record id -> loaded model


def forget_newest(workspace_id: int | None = None) -> None:
    """Forget which model is newest (for one workspace, or all): a model became ready here."""
    with _LOCK:
        for key in [k for k in _NEWEST if workspace_id is None or k[0] == workspace_id]:
            del _NEWEST[key]


def clear_caches() -> None:
    with _LOCK:
        _NEWEST.clear()
    _MODELS.clear()


def newest_ready_id(workspace: Workspace, versions) -> int | None:
    """The id of the newest ready model learned for exactly ``versions`` (one query)."""
    key = key_of(versions)
    candidates = (LearnedRiskModel.objects
                  .filter(workspace=workspace, status=ModelStatus.READY)
                  .order_by("-finished_at", "-id").values_list("id", "versions")[:50])
    for pk, stored in candidates:
        if key_of(stored) == key:
            return pk
    return None


def current_model(workspace: Workspace, versions_key) -> RiskModel | None:
    """The newest ready model learned for exactly these rule versions (``[[rule, version id],
    ...]``, as ``Context.versions_key``), or None.  Loaded once per process and kept (by record
    id); which record is newest is asked at most once per ``GUARD_MODEL_CHECK_SECONDS``.  Its
    risks are solved when first asked, per rule and horizon (``RiskModel.risks``), and kept.
    A stored model that cannot be loaded counts as none (logged once): the guard goes on with
    its other predictors."""
    key = (workspace.pk, tuple(map(tuple, key_of(versions_key))))
    now = time.monotonic()
    with _LOCK:
        cached = _NEWEST.get(key)
    if cached is not None and cached[0] > now:
        pk = cached[1]
    else:
        pk = newest_ready_id(workspace, versions_key)
        ttl = settings.GUARD_MODEL_CHECK_SECONDS
        if ttl > 0:
            with _LOCK:
                _NEWEST[key] = (now + ttl, pk)
    if pk is None:
        return None
    model = _MODELS.get(pk)
    if model is not None:
        return model if model is not _UNREADABLE else None
    try:
        model = load_model(pk)
    except ModelUnreadable as exc:
        log.warning("risk model %s cannot be loaded: %s", pk, exc)
        model = _UNREADABLE
    model = _MODELS.put_if_absent(pk, model)
    return model if model is not _UNREADABLE else None


_UNREADABLE = object()   # in _MODELS: a record whose model cannot be loaded


def load_model(pk: int) -> RiskModel:
    """The stored model of ready record ``pk`` (kept once ``current_model`` has loaded it).
    ``ModelUnreadable`` when it cannot be loaded."""
    with _LOCK:
        found = _MODELS.get(pk)
    if found is not None and found is not _UNREADABLE:
        return found
    versions, data = LearnedRiskModel.objects.values_list("versions", "model").get(pk=pk)
    try:
        ruleset = ruleset_of(versions)
        with MONITOR_LOCK:
            return RiskModel.from_json(data, ruleset)
    except _Failed as exc:
        raise ModelUnreadable(str(exc)) from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ModelUnreadable(f"the stored model does not read as one ({type(exc).__name__}: "
                              f"{exc})") from None


# ---------------------------------------------------------------------------------------------
# Learning again when the live rules change

def relearn_if_rules_changed(workspace_id: int, labelers: bool = False
                             ) -> LearnedRiskModel | None:
    """After a change to rules or rule sets: if the workspace has learned a model before and the
    newest one (whatever its status; the follow-up it carries, if any) is for other versions
    than the live ones, ask for one.  After a change to labelers (``labelers``), ask for one
    whatever the versions: the same rules now read other atoms.  (One already queued for the
    live versions, or running for them with the labelers unchanged, is the one.)"""
    newest = (LearnedRiskModel.objects.filter(workspace_id=workspace_id).order_by("-id")
              .values_list("versions", "follow_up").first())
    if newest is None:
        return None
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return None
    key = key_of((v.rule, v.id) for v in live_versions(workspace))
    if not key or (key == _wanted(*newest) and not labelers):
        return None
    try:
        return request_model(workspace, None, "the labelers changed" if labelers
                             else "the live rules changed", again=labelers)
    except NothingToLearn:
        return None


SESSIONS_ENDED = "live sessions ended since the last model"


def relearn_after_sessions(workspace_id: int) -> LearnedRiskModel | None:
    """After a live session ended: for a workspace that has learned a model before, ask for
    one again (``again``: the same rules, more sessions) once ``GUARD_MODEL_RELEARN_SESSIONS``
    live sessions have ended since its newest model was asked for.  Nothing while that model is
    still queued (it will read them) or runs with a follow-up already asked for."""
    every = settings.GUARD_MODEL_RELEARN_SESSIONS
    if every <= 0:
        return None
    newest = (LearnedRiskModel.objects.filter(workspace_id=workspace_id).order_by("-id")
              .values("created_at", "status", "follow_up").first())
    if newest is None or newest["status"] == ModelStatus.QUEUED:
        return None
    if newest["status"] == ModelStatus.RUNNING and (newest["follow_up"] or {}).get("again"):
        return None
    ended = TraceSession.objects.filter(workspace_id=workspace_id, source=SOURCE_LIVE,
                                        ended_at__gte=newest["created_at"]).count()
    if ended < every:
        return None
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return None
    try:
        return request_model(workspace, None, SESSIONS_ENDED, again=True)
    except NothingToLearn:
        return None


def _session_ended(sender, workspace_id: int, **kwargs) -> None:
    def run():
        try:
            relearn_after_sessions(workspace_id)
        except Exception:  # noqa: BLE001 - the session stays ended; the page offers learning
            log.exception("asking for a risk model after sessions ended in workspace %s",
                          workspace_id)

    transaction.on_commit(run)


def _after_commit(workspace_id: int | None = None, labelers: bool = False,
                  rule_id: int | None = None) -> None:
    """Look once the transaction has committed (nothing is read here: a signal handler must not
    add queries to the change it follows)."""
    if workspace_id is None and rule_id is None:
        return

    def run():
        try:
            found = workspace_id
            if found is None:
                found = (Rule.objects.filter(pk=rule_id).values_list("workspace_id", flat=True)
                         .first())
            if found is not None:
                relearn_if_rules_changed(found, labelers)
        except Exception:  # noqa: BLE001 - the rule change stands; the page offers learning
            log.exception("asking for a risk model after a change in workspace %s (rule %s)",
                          workspace_id, rule_id)

    transaction.on_commit(run)


def _rule_version_changed(sender, instance, **kwargs):
    if kwargs.get("signal_name") == "save" and instance.status != VersionStatus.APPROVED:
        return
    rule = sender._meta.get_field("rule")
    if rule.is_cached(instance) and instance.rule is not None:
        _after_commit(instance.rule.workspace_id)
    else:
        _after_commit(rule_id=instance.rule_id)


def _saved_version(sender, instance, **kwargs):
    _rule_version_changed(sender, instance, signal_name="save")


def _has_workspace(sender, instance, **kwargs):
    _after_commit(getattr(instance, "workspace_id", None))


def _labeler_changed(sender, instance, **kwargs):
    _after_commit(instance.workspace_id, labelers=True)


def _members_changed(sender, instance, action, **kwargs):
    if action in ("post_add", "post_remove", "post_clear"):
        _after_commit(getattr(instance, "workspace_id", None))


def connect_relearning() -> None:
    """Connect the signals that ask for a model again when the live rules may have changed."""
    from django.db.models.signals import m2m_changed, post_delete, post_save

    post_save.connect(_saved_version, sender=RuleVersion, dispatch_uid="guard-learn-version")
    post_delete.connect(_rule_version_changed, sender=RuleVersion,
                        dispatch_uid="guard-learn-del-version")
    for model in (Rule, RuleSet):
        post_save.connect(_has_workspace, sender=model,
                          dispatch_uid=f"guard-learn-{model.__name__}")
        post_delete.connect(_has_workspace, sender=model,
                            dispatch_uid=f"guard-learn-del-{model.__name__}")
    m2m_changed.connect(_members_changed, sender=RuleSet.rules.through,
                        dispatch_uid="guard-learn-ruleset-rules")
    post_save.connect(_labeler_changed, sender=Labeler, dispatch_uid="guard-learn-labeler")
    post_delete.connect(_labeler_changed, sender=Labeler, dispatch_uid="guard-learn-del-labeler")
    session_ended.connect(_session_ended, dispatch_uid="guard-learn-sessions-ended")


# ---------------------------------------------------------------------------------------------
# A session's risk over time, for the page

REPLAY_MAX_EVENTS = 2000   # longer sessions are not replayed for the page


def session_risks(model: RiskModel, session_id: int, labeling, horizon: int,
                  guarded: bool = False) -> list:
    """Per stored event of the session (at most REPLAY_MAX_EVENTS), the risk of breaking any
    rule within ``horizon`` steps from the state it led to (read as the guard's policy reads
    it: ``guarded``), as ``drawing.RiskPoint``."""
    labelled, steps, previous = [], [], None
    for row in session_events([session_id]):
        event = monitor_event(row)
        labelled.append(labeling.label(event, previous))
        steps.append(row[1])
        previous = event
    with MONITOR_LOCK:
        trace = model.abstraction.session(labelled)[1:len(labelled) + 1]
        answers = [model.answer(state, horizon, guarded) for state in trace]
    rules = model.abstraction.rules
    return [RiskPoint(step, answer.risk[ANY_RULE], answer.backed,
                      [name for name, v in zip(rules, state.violated) if v])
            for step, state, answer in zip(steps, trace, answers)]
