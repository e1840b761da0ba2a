"""One meaning of "the newest approved version of each rule" and of "the workspace's labeling",
whichever surface asks: audits, live monitoring (and the guard, which reads live's context),
impact checks, evidence cases, the rules API and pages, the labeler try-it box."""

from __future__ import annotations

import json

import pytest

from studio.audits.services import prepared_rules, start_audit
from studio.evidence.impact import start_impact
from studio.live.context import context_for, live_versions
from studio.live.ingest import clear_caches
from studio.rules import monitoring
from studio.rules.models import Labeler, Rule, RuleSet, RuleVersion, VersionStatus
from studio.rules.setup_views import try_labels
from studio.traces.models import TraceSession
from tests.api.world import world  # noqa: F401

pytestmark = pytest.mark.django_db

A, D, R, W = (VersionStatus.APPROVED, VersionStatus.DRAFT, VersionStatus.REJECTED,
              VersionStatus.IN_REVIEW)
# Each rule's versions, numbered 1.. in order: drafts, rejected versions and versions in review
# are newer than the approved one in several, and never count.
HISTORIES = {
    "a_twice_then_draft": [A, A, D],
    "approved_then_rejected": [A, R],
    "draft_only": [D],
    "review_approved_review": [W, A, W],
    "rejected_only": [R],
    "approved_once": [A],
    "old_approved_new_approved": [A, R, D, A],
}


@pytest.fixture(autouse=True)
def _fresh_live_caches():
    clear_caches()
    yield
    clear_caches()


def _histories(workspace, author, histories) -> None:
    for name, statuses in histories.items():
        rule = Rule.objects.create(workspace=workspace, name=name)
        for number, status in enumerate(statuses, start=1):
            RuleVersion.objects.create(rule=rule, number=number, status=status, author=author,
                                       formula=f"G !p{number}")


def _oracle(workspace, rules=None) -> dict[str, int]:
    """Rule name -> the highest number among its approved versions, read from every version."""
    newest: dict[str, int] = {}
    for version in RuleVersion.objects.filter(rule__workspace=workspace).select_related("rule"):
        if rules is not None and version.rule.name not in rules:
            continue
        if version.status == VersionStatus.APPROVED:
            newest[version.rule.name] = max(newest.get(version.rule.name, 0), version.number)
    return newest


def _named(versions) -> dict[str, int]:
    return {v.rule.name: v.number for v in versions}


def test_every_surface_answers_the_same_newest_approved_version(world):
    _histories(world.acme, world.alice, HISTORIES)
    # Another workspace's newer approved versions of a same-named rule never leak in.
    _histories(world.beta, world.oscar, {"approved_once": [A, A, A], "draft_only": [A]})
    expected = _oracle(world.acme)
    assert expected == {"a_twice_then_draft": 2, "approved_then_rejected": 1,
                        "review_approved_review": 2, "approved_once": 1,
                        "old_approved_new_approved": 4}

    versions = monitoring.approved_versions(world.acme)
    assert _named(versions) == expected
    assert [v.rule.name for v in versions] == sorted(expected)  # ordered by rule name
    assert {r.name: v.number for r in Rule.objects.filter(workspace=world.acme)
            if (v := r.approved_version()) is not None} == expected
    assert _named(monitoring.live_versions(world.acme)) == expected
    assert {v.rule: v.id for v in live_versions(world.acme)} == {
        v.rule.name: v.id for v in versions}
    alice = world.as_("alice")
    listing = alice.get("w/acme/rules").json()
    assert {r["name"]: r["approved_version"] for r in listing if r["approved_version"]} == expected
    page = alice.client.get("/w/acme/rules/")
    assert {row["rule"].name: row["approved"].number for row in page.context["rules"]
            if row["approved"]} == expected

    # A rule set narrows it to its rules; a live rule set narrows what live monitors.
    chosen = ["a_twice_then_draft", "draft_only", "old_approved_new_approved"]
    rule_set = RuleSet.objects.create(workspace=world.acme, name="some")
    rule_set.rules.add(*Rule.objects.filter(workspace=world.acme, name__in=chosen))
    in_set = _oracle(world.acme, chosen)
    assert _named(monitoring.approved_versions(world.acme, rule_set)) == in_set
    assert {r["name"]: r["approved_version"] for r in
            alice.get(f"w/acme/rule-sets/{rule_set.id}").json()["rules"]} == {
        "a_twice_then_draft": 2, "draft_only": None, "old_approved_new_approved": 4}
    assert _named(monitoring.live_versions(world.acme)) == expected  # not live yet
    RuleSet.objects.filter(pk=rule_set.pk).update(live=True)
    clear_caches()
    assert _named(monitoring.live_versions(world.acme)) == in_set
    assert [v.rule for v in live_versions(world.acme)] == sorted(in_set)

    # A newer approval replaces the old answer everywhere.
    RuleVersion.objects.create(rule=Rule.objects.get(workspace=world.acme, name="draft_only"),
                               number=2, status=A, author=world.alice, formula="G !q")
    clear_caches()
    assert _named(monitoring.approved_versions(world.acme))["draft_only"] == 2
    assert _named(monitoring.live_versions(world.acme))["draft_only"] == 2


LABELERS = [
    ("refund", "regex", {"path": "output", "pattern": "refund"}, True),
    ("big", "field", {"path": "output.args.amount", "op": ">", "value": 100}, True),
    ("asked", "regex", {"path": "input", "pattern": "please", "flags": "i"}, True),
    ("off", "regex", {"path": "output", "pattern": "."}, False),  # disabled: never labels
]
EVENTS = [
    {"output": "a refund of 20"},
    {"output": {"tool": "pay", "args": {"amount": 500}}, "input": "Please pay"},
    {"output": {"tool": "ship", "args": {"amount": 5}}, "labels": ["given"]},
    {"input": "PLEASE", "stop_reason": "end_turn", "role": "assistant"},
    {},
]


def test_audits_live_guard_impact_and_the_try_box_label_alike(world):
    _histories(world.acme, world.alice, {"ships": [A, D]})
    for atom, kind, config, enabled in LABELERS:
        Labeler.objects.create(workspace=world.acme, atom=atom, kind=kind, config=config,
                               enabled=enabled)
    TraceSession.objects.create(workspace=world.acme, external_id="stored")
    expected = [sorted({*e.get("labels", []),
                        *(["refund"] if "refund" in json.dumps(e.get("output", "")) else []),
                        *(["big"] if isinstance(e.get("output"), dict)
                          and e["output"]["args"]["amount"] > 100 else []),
                        *(["asked"] if "please" in e.get("input", "").lower() else [])})
                for e in EVENTS]

    def atoms(labeling) -> list[list[str]]:  # without the built-in atoms, which all share
        return [[a for a in labeling(e) if ":" not in a] for e in EVENTS]

    assert atoms(monitoring.labeling_for(world.acme)) == expected
    assert atoms(context_for(world.acme).labeling) == expected  # the guard reads this one
    run = start_audit(world.acme, by=world.alice)
    assert atoms(prepared_rules(run)[1]) == expected
    draft = RuleVersion.objects.get(rule__name="ships", number=2)
    check = start_impact(draft, world.alice)
    assert atoms(prepared_rules(check.run)[1]) == expected
    assert [[a for a in try_labels(world.acme, json.dumps(e), "json")["atoms"] if ":" not in a]
            for e in EVENTS] == expected
    # And all of them with the built-in atoms too.
    full = [monitoring.labeling_for(world.acme)(e) for e in EVENTS]
    assert [context_for(world.acme).labeling(e) for e in EVENTS] == full
    assert [prepared_rules(run)[1](e) for e in EVENTS] == full

    # A labeler edited or disabled changes every surface's labeling alike.
    Labeler.objects.filter(workspace=world.acme, atom="refund").update(enabled=False)
    clear_caches()
    assert "refund" not in monitoring.labeling_for(world.acme)(EVENTS[0])
    assert "refund" not in context_for(world.acme).labeling(EVENTS[0])
    assert "refund" not in prepared_rules(start_audit(world.acme, by=world.alice))[1](EVENTS[0])
