"""From stored rules and labelers to the pure monitors: what audits and live ingestion share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import models

from studio.labeling import Labeling, labeling_from_snapshot
from studio.monitor import RuleSet

from .models import Labeler, RuleVersion
from .models import RuleSet as StoredRuleSet


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
    """The newest approved version of each rule (of the rule set, or of the workspace), ordered
    by rule name, in one query."""
    versions = RuleVersion.objects.newest_approved().select_related("rule")
    if rule_set is not None:
        versions = versions.filter(rule__rule_sets=rule_set)
    else:
        versions = versions.filter(rule__workspace=workspace)
    return list(versions.order_by("rule__name"))


def approved_by_rule(workspace) -> dict[int, RuleVersion]:
    """Rule id -> its newest approved version, for pages and API answers listing many rules."""
    return {version.rule_id: version for version in approved_versions(workspace)}


def approved_numbers(workspace) -> dict[int, int]:
    """Rule id -> the number of its newest approved version (rules with none are absent)."""
    return {version.rule_id: version.number for version in approved_versions(workspace)}


def live_versions(workspace) -> list[RuleVersion]:
    """What live sessions are monitored against: the newest approved version of each rule of
    the rule sets marked live, else of every rule; ordered by rule name, in one query."""
    in_live_set = models.Exists(StoredRuleSet.rules.through.objects.filter(
        rule_id=models.OuterRef("rule_id"), ruleset__live=True))
    no_live_set = ~models.Exists(StoredRuleSet.objects.filter(workspace=workspace, live=True))
    return list(RuleVersion.objects.newest_approved().filter(rule__workspace=workspace)
                .filter(models.Q(in_live_set) | models.Q(no_live_set))
                .select_related("rule").order_by("rule__name"))


@dataclass(frozen=True)
class LiveCoverage:
    """Whether live sessions are checked against a rule, and through which rule sets: what a
    reviewer who approves it needs to know ("not monitored live: add it to a live rule set")."""

    every_rule: bool  # the workspace marks no rule set live: live sessions read every rule
    including: tuple  # the live rule sets that hold the rule
    could_add: tuple  # the live rule sets that do not (one click adds the rule to one)

    @property
    def monitored(self) -> bool:
        return self.every_rule or bool(self.including)

    @property
    def sentence(self) -> str:
        if self.every_rule:
            return ("Monitored live: no rule set is marked live, so live sessions are checked "
                    "against every approved rule.")
        if self.including:
            names = ", ".join(f"“{s.name}”" for s in self.including)
            plural = "s" if len(self.including) > 1 else ""
            return f"Monitored live through the live rule set{plural} {names}."
        return "Not monitored live: add it to a live rule set."


def live_coverage(rule) -> LiveCoverage:
    live_sets = list(StoredRuleSet.objects.filter(workspace_id=rule.workspace_id, live=True)
                     .order_by("name"))
    holding = set(rule.rule_sets.filter(live=True).values_list("id", flat=True))
    return LiveCoverage(every_rule=not live_sets,
                        including=tuple(s for s in live_sets if s.id in holding),
                        could_add=tuple(s for s in live_sets if s.id not in holding))


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
