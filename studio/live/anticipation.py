"""Anticipation off the request path, in the studio (issue 27, item 4).

A state's anticipatory verdict (``studio.monitor.anticipation``) can take seconds to search the
first time.  Requests (a guard decision, the Live page's rows) never wait for one: they ask with
``wait=False`` and a state not decided yet answers "not yet known", while its search is made
elsewhere, once:

* with the embedded default (no broker: tasks run in the process), on this process's background
  thread (``studio.monitor.anticipation_ahead.BackgroundSearches``, under the monitors' lock,
  which it lets go of every few dozen search steps);
* with a broker, by a worker (``worker.live.anticipate_state``), at most once a minute per
  state and process.

Either way the verdict is kept in the database (``rules.AnticipatedVerdict``, shared by every
process: a process reads its rule set's stored verdicts when it first anticipates them, and
asks again for a state still unknown at most once a second).  The states a rule set's sessions
reach first are searched ahead: when a rule version is approved or a rule set changes, and
when a process first builds its live context (``warm_workspace``, ``context_built``).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connection, transaction

from studio import tasks
from studio.caching import LruCache
from studio.monitor import RuleSet
from studio.monitor import anticipation as core
from studio.monitor.anticipation_ahead import BackgroundSearches, warm
from studio.rules.models import AnticipatedVerdict, RuleVersion, VersionStatus

from .context import MONITOR_LOCK, ON_BUILT, Context, context_for

log = logging.getLogger(__name__)

# States handed to a worker are not handed again for this long (per process).
RESEND_SECONDS = 60.0
LOAD_LIMIT = 20_000     # stored verdicts read per rule set when a process first needs them


class DatabaseStore:
    """``rules.AnticipatedVerdict`` as ``studio.monitor.anticipation``'s store."""

    def get(self, rule_key: str, state_key: str) -> dict | None:
        row = (AnticipatedVerdict.objects.filter(rule_key=rule_key, state_key=state_key)
               .values("value", "anticipated", "reason").first())
        return row

    def put(self, rule_key: str, state_key: str, data: dict) -> None:
        # A conflict is the same state decided by another process: the same verdict.
        AnticipatedVerdict.objects.bulk_create(
            [AnticipatedVerdict(rule_key=rule_key, state_key=state_key, **data)],
            ignore_conflicts=True)

    def load(self, rule_keys: list[str]) -> dict:
        rows = (AnticipatedVerdict.objects.filter(rule_key__in=rule_keys)
                .values_list("rule_key", "state_key", "value", "anticipated", "reason")
                [:LOAD_LIMIT])
        return {(r, s): {"value": v, "anticipated": a, "reason": why}
                for r, s, v, a, why in rows}


def embedded() -> bool:
    """No broker: tasks run in the process (the embedded default)."""
    return bool(getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False))


class _Background(BackgroundSearches):
    """The background thread of a web process; its database connection is closed after each
    job (it would otherwise stay open for the life of the process)."""

    def _run_job(self, job):
        try:
            super()._run_job(job)
        finally:
            connection.close()


class WorkerLater:
    """Hands undecided states to a worker (``worker.live.anticipate_state``)."""

    def __init__(self):
        self._sent: dict[tuple, float] = {}
        self._lock = threading.Lock()

    def __call__(self, anticipator, i: int, state, context) -> None:
        memory = anticipator._memory(state)
        key = (anticipator.keys[i], core.state_key(state.residual.text, memory, context))
        now = time.monotonic()
        with self._lock:
            if self._sent.get(key, 0.0) > now:
                return
            if len(self._sent) > 10_000:
                self._sent = {k: t for k, t in self._sent.items() if t > now}
            self._sent[key] = now + RESEND_SECONDS
        rule = anticipator.ruleset.rules[i]
        tasks.enqueue(tasks.ANTICIPATE_STATE, rule.formula.text, state.residual.text,
                      list(memory) if memory is not None else None,
                      core.context_json(context), after_commit=False,
                      unavailable=lambda exc: log.warning(
                          "anticipation: the broker is unavailable (%s); searched later", exc))


_BACKGROUND: BackgroundSearches | None = None


def background() -> BackgroundSearches | None:
    """This process's background searches (the embedded default), else None."""
    return _BACKGROUND


def configure() -> None:
    """Called once per process (``LiveConfig.ready``)."""
    global _BACKGROUND
    if embedded():
        _BACKGROUND = _Background(MONITOR_LOCK)
        core.configure(later=_BACKGROUND, store=DatabaseStore())
    else:
        _BACKGROUND = None
        core.configure(later=WorkerLater(), store=DatabaseStore())


# ---------------------------------------------------------------------------------------------
# Searching ahead


def context_built(context: Context) -> None:
    """A process built a live context: with the embedded default, its background thread
    searches the rule set's first states (a worker did it at approval otherwise)."""
    if _BACKGROUND is not None and context.ruleset.rules:
        _BACKGROUND.warm_later(core.anticipator_for(context.ruleset))


def warm_workspace(workspace_id: int) -> None:
    """Search the first states of the workspace's live rules ahead of requests: on the
    background thread (embedded), else by a worker (``worker.live.warm_anticipation``)."""
    if _BACKGROUND is not None:
        from studio.workspaces.models import Workspace

        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is not None:
            context_built(context_for(workspace))
        return
    tasks.enqueue(tasks.WARM_ANTICIPATION, workspace_id, after_commit=False,
                  unavailable=lambda exc: log.warning(
                      "anticipation: the broker is unavailable (%s); searched on use", exc))


def warm_now(workspace_id: int, seconds: float = 600.0) -> int:
    """The worker's side of ``warm_workspace``: search here (stored for every process)."""
    from studio.workspaces.models import Workspace

    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return 0
    context = context_for(workspace)
    return warm(core.anticipator_for(context.ruleset), MONITOR_LOCK,
                deadline=time.monotonic() + seconds)


_RULESETS: LruCache[str, RuleSet] = LruCache(64)


def decide_state(formula: str, residual: str, memory: list | None, context: list) -> str:
    """The worker's side of ``WorkerLater``: decide one state (stored for every process);
    its verdict's value."""
    ruleset = _RULESETS.get(formula)
    if ruleset is None:
        with MONITOR_LOCK:
            ruleset = RuleSet([("rule", formula)])
        _RULESETS.put(formula, ruleset)
    with MONITOR_LOCK:
        anticipator = core.anticipator_for(ruleset)
        state = ruleset.machines[0].state_from_json(residual, memory)
        verdict = anticipator.decide(0, state, core.context_from_json(context))
    return verdict.value


def _after_approval(sender, instance, **kwargs) -> None:
    if instance.status != VersionStatus.APPROVED:
        return
    rule_id = instance.rule_id

    def run():
        from studio.rules.models import Rule

        workspace_id = Rule.objects.filter(pk=rule_id).values_list("workspace_id",
                                                                    flat=True).first()
        if workspace_id is not None:
            try:
                warm_workspace(workspace_id)
            except Exception:  # noqa: BLE001 - the approval stands; searched on use instead
                log.exception("anticipation: searching ahead for workspace %s", workspace_id)

    transaction.on_commit(run)


def connect() -> None:
    from django.db.models.signals import post_save

    configure()
    if context_built not in ON_BUILT:
        ON_BUILT.append(context_built)
    post_save.connect(_after_approval, sender=RuleVersion, dispatch_uid="live-anticipate-ahead")
