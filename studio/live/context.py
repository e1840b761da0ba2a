"""What a workspace's live sessions are monitored against - its live rule versions, compiled, and
its labeling - read once per ``settings.LIVE_CONTEXT_SECONDS`` and shared by every session.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass

from django.conf import settings

from studio.caching import ExpiringValues, LruCache
from studio.labeling import Labeling, labeling_from_snapshot
from studio.monitor import RuleSet
from studio.monitor.verdicts import effective_counting
from studio.rules import monitoring
from studio.workspaces.models import Workspace

# In-process caches.  Compiled rule sets are shared by every session monitored against the same
# rule versions (their automata grow as they run).  The formula core interns formulas in a table
# that is not thread-safe, so all monitor work of the process runs under one lock (it is pure
# Python under the GIL: the lock costs no parallelism).

MONITOR_LOCK = threading.RLock()
_RULESETS_MAX = 64
_RULESETS: LruCache[tuple, RuleSet] = LruCache(_RULESETS_MAX)
_LABELINGS_MAX = 256
_LABELINGS: LruCache[tuple, Labeling] = LruCache(_LABELINGS_MAX)

# A workspace's live context (its live rule versions and labeling) is read for
# settings.LIVE_CONTEXT_SECONDS before the two queries run again.  Saving or deleting a rule,
# version, rule set, labeler or workspace clears this process's entries (see apps.py); other
# server processes follow within the TTL, and a session whose saved state was made for other
# versions is rebuilt by replay, so results never mix rule versions.
_CONTEXTS: ExpiringValues[int, Context] = ExpiringValues()
# Called with each context this process builds (``anticipation`` searches its rules ahead).
ON_BUILT: list = []


def clear() -> None:
    """Forget this module's caches (``studio.live.ingest.clear_caches`` forgets them all)."""
    _RULESETS.clear()
    _LABELINGS.clear()
    _CONTEXTS.clear()


def forget_contexts(**_signal) -> None:
    _CONTEXTS.clear()


def cached_ruleset(versions: list[LiveVersion]) -> RuleSet:
    """The compiled rules (as ``studio.rules.monitoring.ruleset_for`` builds them)."""
    key = tuple((v.rule, v.id) for v in versions)
    found = _RULESETS.get(key)
    if found is not None:
        return found
    with MONITOR_LOCK:
        built = RuleSet([(v.rule, v.formula, v.counting or None) for v in versions])
    _RULESETS.put(key, built)
    return built


# ---------------------------------------------------------------------------------------------
# What a workspace's live sessions are monitored against

@dataclass(frozen=True)
class LiveVersion:
    id: int
    rule: str
    formula: str
    counting: str = ""


@dataclass
class Context:
    versions: list[LiveVersion]
    ruleset: RuleSet
    labeling: Labeling

    @property
    def versions_key(self) -> list[list]:
        return [[v.rule, v.id] for v in self.versions]

    @functools.cached_property
    def counting(self) -> dict[str, str]:
        """Per rule, the counting its version uses (``effective_counting``)."""
        return {v.rule: effective_counting(v.counting, v.formula) for v in self.versions}


def live_versions(workspace: Workspace) -> list[LiveVersion]:
    """``studio.rules.monitoring.live_versions`` as plain data (a context outlives its request)."""
    return [LiveVersion(v.id, v.rule.name, v.formula, v.counting)
            for v in monitoring.live_versions(workspace)]


def _labeling(workspace: Workspace) -> Labeling:
    """``studio.rules.monitoring.labeling_for``, built once per set of labeler declarations."""
    snapshot = monitoring.labeler_snapshot(workspace)
    key = tuple((d["atom"], d["kind"], json.dumps(d["config"], sort_keys=True))
                for d in snapshot)
    found = _LABELINGS.get(key)
    if found is None:
        found = labeling_from_snapshot(snapshot)
        _LABELINGS.put(key, found)
    return found


def context_for(workspace: Workspace) -> Context:
    return _CONTEXTS.get(workspace.pk, lambda: _build(workspace),
                         settings.LIVE_CONTEXT_SECONDS)


def _build(workspace: Workspace) -> Context:
    versions = live_versions(workspace)
    context = Context(versions, cached_ruleset(versions), _labeling(workspace))
    for hook in ON_BUILT:
        hook(context)
    return context


def refresh_ahead(workspace: Workspace) -> None:
    """Read the workspace's context again now if this process's copy expires within an eighth
    of ``LIVE_CONTEXT_SECONDS``: called after an answer has been sent, so that the next
    request finds it fresh instead of spending a few milliseconds re-reading it on its own
    time (it is never older than the setting allows either way)."""
    _CONTEXTS.refresh_ahead(workspace.pk, lambda: _build(workspace),
                            settings.LIVE_CONTEXT_SECONDS)