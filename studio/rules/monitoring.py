"""From stored rules and labelers to the pure monitors: what audits and live ingestion share."""

from __future__ import annotations

from collections.abc import Iterable

from studio.labeling import Labeling, labeling_from_snapshot
from studio.monitor import RuleSet

from .models import Labeler, Rule, RuleVersion, VersionStatus


def labeler_snapshot(workspace) -> list[dict]:
    """The workspace's enabled labelers as plain data (an audit run stores this, so every batch
    labels events the same way whatever is edited later)."""
    enabled = Labeler.objects.filter(workspace=workspace, enabled=True).order_by("atom")
    return [{"kind": labeler.kind, "atom": labeler.atom, "config": labeler.config}
            for labeler in enabled]


def labeling_for(workspace) -> Labeling:
    """The workspace's labeling function: event labels, built-in atoms, enabled labelers."""
    return labeling_from_snapshot(labeler_snapshot(workspace))


def approved_versions(workspace, rule_set=None) -> list[RuleVersion]:
    """The newest approved version of each rule (of the rule set, or of the workspace)."""
    rules = rule_set.rules.all() if rule_set is not None else Rule.objects.filter(
        workspace=workspace)
    versions = []
    for rule in rules.order_by("name"):
        version = (rule.versions.filter(status=VersionStatus.APPROVED)
                   .order_by("-number").first())
        if version is not None:
            versions.append(version)
    return versions


def live_versions(workspace) -> list[RuleVersion]:
    """What live sessions are monitored against: the rule sets marked live, else every rule."""
    live_sets = list(workspace.rule_sets.filter(live=True))
    if not live_sets:
        return approved_versions(workspace)
    seen: dict[int, RuleVersion] = {}
    for rule_set in live_sets:
        for version in approved_versions(workspace, rule_set):
            seen[version.id] = version
    return sorted(seen.values(), key=lambda v: v.rule.name)


def rule_pairs(versions: Iterable[RuleVersion]) -> list[tuple[str, str, str | None]]:
    """``(rule name, formula, counting)`` of each version: what a ``RuleSet`` is built from.
    Two versions of one rule (an impact check audits them together) are named apart by their
    numbers."""
    versions = list(versions)
    names = [v.rule.name for v in versions]
    return [(v.rule.name if names.count(v.rule.name) == 1 else f"{v.rule.name} v{v.number}",
             v.formula, v.counting or None) for v in versions]


def ruleset_for(versions: Iterable[RuleVersion]) -> RuleSet:
    """Monitors for the given versions, each named by its rule."""
    return RuleSet(rule_pairs(versions))
