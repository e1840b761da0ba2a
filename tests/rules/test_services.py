"""Rule services: versions and their review cycle, rule sets, labelers; each write logged."""

from datetime import UTC

import pytest

from studio.errors import Conflict, PermissionDenied, ServiceError
from studio.rules import services
from studio.rules.models import Labeler, RuleVersion, VersionStatus
from studio.rules.monitoring import approved_versions, labeling_for, live_versions
from studio.workspaces.acting import Actor
from studio.workspaces.models import ApiToken, AuditLogEntry

pytestmark = pytest.mark.django_db

SHIP = "G (tool_call:ship -> O payment_confirmed)"


def actions(workspace):
    return list(AuditLogEntry.objects.filter(workspace=workspace).values_list("action", flat=True))


def in_review(world, formula=SHIP, name="ship after payment"):
    rule = services.create_rule(world.acme, world.alice, name, formula)
    return services.submit_for_review(rule.versions.get(), world.alice, "warnings known")


# --- rules and drafts -------------------------------------------------------------------------

def test_a_new_rule_starts_with_a_draft_first_version_and_both_are_logged(world):
    rule = services.create_rule(world.acme, world.alice, "  ship after payment ", SHIP,
                                description="why")

    version = rule.versions.get()
    assert (rule.name, rule.created_by) == ("ship after payment", world.alice)
    assert (version.number, version.status, version.author) == (1, VersionStatus.DRAFT,
                                                                world.alice)
    assert version.formula == SHIP
    assert actions(world.acme)[-2:] == ["rule.created", "rule_version.created"]


@pytest.mark.parametrize("text, line, column, expected", [
    ("G (p ->", 1, 8, "'('"),
    ("p &\n  & q", 2, 3, "an atom"),
    ("G P", 1, 3, "an atom"),
])
def test_a_formula_that_does_not_parse_is_refused_with_its_position(world, text, line, column,
                                                                     expected):
    with pytest.raises(ServiceError) as caught:
        services.create_rule(world.acme, world.alice, "bad", text)

    error = caught.value
    assert (error.status, error.field) == (422, "formula")
    assert error.details["line"] == line and error.details["column"] == column
    assert expected in error.details["expected"]
    assert error.details["message"]
    assert f"line {line}, column {column}" in error.message
    assert not world.acme.rules.exists()


def test_a_future_operator_inside_a_past_one_is_refused(world):
    with pytest.raises(ServiceError) as caught:
        services.create_rule(world.acme, world.alice, "bad", "G (q -> O F p)")

    assert (caught.value.status, caught.value.field) == (422, "formula")
    assert "past operator" in caught.value.details["message"]
    assert set(caught.value.details) == {"line", "column", "message", "expected"}


def test_rule_names_are_unique_in_a_workspace_but_not_across(world):
    services.create_rule(world.acme, world.alice, "r", "G p")
    services.create_rule(world.beta, world.oscar, "r", "G p")

    with pytest.raises(Conflict) as caught:
        services.create_rule(world.acme, world.ann, "r", "F q")
    assert caught.value.field == "name"


def test_a_new_version_copies_the_latest_formula_and_waits_while_a_draft_is_open(world):
    version = in_review(world)
    rule = version.rule

    second = services.new_version(rule, world.ann)
    assert (second.number, second.formula, second.status) == (2, SHIP, VersionStatus.DRAFT)
    with pytest.raises(Conflict, match="still a draft"):
        services.new_version(rule, world.ann, "G q")

    services.update_draft(second, world.ann, formula="G !tool_call:ship")
    services.submit_for_review(second, world.ann, "warnings known")
    third = services.new_version(rule, world.alice, "F done")
    assert (third.number, third.formula) == (3, "F done")


def test_only_drafts_are_edited_or_submitted(world):
    version = in_review(world)

    with pytest.raises(Conflict, match="only drafts are edited"):
        services.update_draft(version, world.alice, formula="G p")
    with pytest.raises(Conflict, match="only drafts are submitted"):
        services.submit_for_review(version, world.alice, "warnings known")
    version.refresh_from_db()
    assert (version.formula, version.status) == (SHIP, VersionStatus.IN_REVIEW)


def test_editing_a_draft_validates_the_formula_and_logs_the_change(world):
    rule = services.create_rule(world.acme, world.alice, "r", "G p")
    draft = rule.versions.get()

    with pytest.raises(ServiceError) as caught:
        services.update_draft(draft, world.alice, formula="G (p")
    assert caught.value.details["expected"]

    services.update_draft(draft, world.alice, formula="G q", english="always q")
    draft.refresh_from_db()
    assert (draft.formula, draft.english) == ("G q", "always q")
    entry = AuditLogEntry.objects.filter(action="rule_version.updated").get()
    assert entry.details["formula"] == ["G p", "G q"]


def test_submitting_records_when(world):
    version = in_review(world)

    assert version.status == VersionStatus.IN_REVIEW and version.submitted_at is not None
    assert actions(world.acme)[-1] == "rule_version.submitted"


# --- review -----------------------------------------------------------------------------------

def test_a_reviewer_approves_and_the_log_keeps_who_which_and_when_in_utc(world):
    version = in_review(world)

    services.approve(version, world.rob, "looks right")

    version.refresh_from_db()
    assert (version.status, version.reviewer, version.review_comment) == (
        VersionStatus.APPROVED, world.rob, "looks right")
    entry = AuditLogEntry.objects.get(action="rule_version.approved")
    assert (entry.actor, entry.target_type, entry.target_id) == (world.rob, "ruleversion",
                                                                  version.id)
    assert entry.details["number"] == 1 and entry.details["rule"] == "ship after payment"
    assert entry.details["formula"] == SHIP
    assert entry.at.utcoffset().total_seconds() == 0 and entry.at.tzinfo in (UTC, entry.at.tzinfo)
    assert entry.details["reviewed_at"].endswith("+00:00")
    assert approved_versions(world.acme) == [version]


def test_nobody_reviews_their_own_version(world):
    rule = services.create_rule(world.acme, world.ann, "mine", "G p")  # ann is also a reviewer
    version = services.submit_for_review(rule.versions.get(), world.ann, "warnings known")

    with pytest.raises(PermissionDenied, match="you wrote version 1 of rule 'mine'"):
        services.approve(version, world.ann)
    with pytest.raises(PermissionDenied, match="another reviewer must reject it"):
        services.reject(version, world.ann, "no")
    version.refresh_from_db()
    assert version.status == VersionStatus.IN_REVIEW


def test_not_through_a_token_either(world):
    # ann wrote the version; a token she made acts for her.
    rule = services.create_rule(world.acme, world.ann, "mine", "G p")
    version = services.submit_for_review(rule.versions.get(), world.ann, "warnings known")
    world.token(world.acme, roles=["reviewer"], by="ann", name="ann's bot")
    token = ApiToken.objects.get(name="ann's bot")

    with pytest.raises(PermissionDenied, match="you wrote"):
        services.approve(version, Actor(token=token))


def test_a_version_written_by_a_token_is_not_approved_by_the_same_token(world):
    world.token(world.acme, name="ci", by="ann")  # ann holds every role, so does the token
    token = ApiToken.objects.get(name="ci")
    rule = services.create_rule(world.acme, Actor(token=token), "from ci", "G p")
    version = services.submit_for_review(rule.versions.get(), Actor(token=token), "warnings known")
    assert (version.author, version.author_token) == (world.ann, token)

    with pytest.raises(PermissionDenied):
        services.approve(version, Actor(token=token))
    with pytest.raises(PermissionDenied):
        services.approve(version, world.ann)  # the person behind the token, likewise
    services.approve(version, world.rob)


def test_only_reviewers_review(world):
    version = in_review(world)

    for who in (world.alice, world.aud, world.oscar):
        with pytest.raises(PermissionDenied, match="reviewer role"):
            services.approve(version, who)


def test_only_versions_in_review_are_approved_or_rejected(world):
    rule = services.create_rule(world.acme, world.alice, "r", "G p")
    draft = rule.versions.get()

    with pytest.raises(Conflict, match="only versions in review"):
        services.approve(draft, world.rob)
    services.submit_for_review(draft, world.alice, "warnings known")
    services.approve(draft, world.rob)
    with pytest.raises(Conflict, match="is approved"):
        services.reject(draft, world.rita, "too late")


def test_a_rejection_says_why(world):
    version = in_review(world)

    with pytest.raises(ServiceError) as caught:
        services.reject(version, world.rob, "   ")
    assert caught.value.field == "comment"

    services.reject(version, world.rob, "payment is not an atom we produce")
    version.refresh_from_db()
    assert version.status == VersionStatus.REJECTED
    assert AuditLogEntry.objects.get(action="rule_version.rejected").details["comment"] == (
        "payment is not an atom we produce")
    assert approved_versions(world.acme) == []


# --- rule sets --------------------------------------------------------------------------------

def test_rule_sets_take_rules_of_their_own_workspace_only(world):
    mine = services.create_rule(world.acme, world.alice, "a", "G p")
    theirs = services.create_rule(world.beta, world.oscar, "b", "G p")

    with pytest.raises(ServiceError) as caught:
        services.create_rule_set(world.acme, world.alice, "set", rule_ids=[mine.id, theirs.id])
    assert caught.value.field == "rule_ids" and str(theirs.id) in caught.value.message
    assert not world.acme.rule_sets.exists()

    rule_set = services.create_rule_set(world.acme, world.alice, "set", rule_ids=[mine.id])
    assert list(rule_set.rules.all()) == [mine]
    with pytest.raises(ServiceError):
        services.set_rules(rule_set, world.alice, [theirs.id])
    assert list(rule_set.rules.all()) == [mine]


def test_rule_sets_are_renamed_filled_and_marked_live(world):
    version = in_review(world)
    services.approve(version, world.rob)
    other = services.create_rule(world.acme, world.alice, "other", "G q")
    services.approve(services.submit_for_review(other.versions.get(), world.alice,
                                                "warnings known"), world.rob)
    rule_set = services.create_rule_set(world.acme, world.alice, "live set")
    services.create_rule_set(world.acme, world.alice, "taken")

    with pytest.raises(Conflict):
        services.update_rule_set(rule_set, world.alice, name="taken")
    services.update_rule_set(rule_set, world.alice, name="production", description="d")
    services.set_rules(rule_set, world.alice, [version.rule_id])
    assert {v.rule.name for v in live_versions(world.acme)} == {"ship after payment", "other"}
    services.set_live(rule_set, world.alice, True)

    rule_set.refresh_from_db()
    assert (rule_set.name, rule_set.description, rule_set.live) == ("production", "d", True)
    assert [v.rule.name for v in live_versions(world.acme)] == ["ship after payment"]
    assert actions(world.acme)[-3:] == ["rule_set.updated", "rule_set.rules_set",
                                        "rule_set.live"]
    services.delete_rule_set(rule_set, world.alice)
    assert actions(world.acme)[-1] == "rule_set.deleted"


def test_a_rule_added_to_a_rule_set_joins_its_rules_once(world):
    first = services.create_rule(world.acme, world.alice, "first", "G p")
    second = services.create_rule(world.acme, world.alice, "second", "G q")
    rule_set = services.create_rule_set(world.acme, world.alice, "live set",
                                        rule_ids=[first.id], live=True)
    services.add_rule(rule_set, world.alice, second)
    services.add_rule(rule_set, world.alice, second)  # already in: nothing changes
    assert sorted(rule_set.rules.values_list("name", flat=True)) == ["first", "second"]
    assert actions(world.acme).count("rule_set.rules_set") == 1


# --- labelers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, config, field", [
    ("regex", {"path": "output", "pattern": "(unclosed"}, "config.pattern"),
    ("regex", {"path": "output", "pattern": "x", "flags": "q"}, "config.flags"),
    ("regex", {"path": "", "pattern": "x"}, "config.path"),
    ("field", {"path": "data.amount", "op": "~", "value": 1}, "config.op"),
    ("field", {"path": "data.amount", "op": ">"}, "config.value"),
    ("field", {"path": "data.amount", "op": ">", "value": [1]}, "config.value"),
    ("field", {"path": "data.x", "value": 1, "colour": "red"}, "config"),
    ("sql", {}, "kind"),
    ("regex", {"path": "output", "pattern": "a\x00b"}, "config.pattern"),
    ("field", {"path": "data.x", "value": float("nan")}, "config.value"),
])
def test_labeler_errors_name_the_field(world, kind, config, field):
    with pytest.raises(ServiceError) as caught:
        services.create_labeler(world.acme, world.alice, "big_payment", kind, config)

    assert (caught.value.status, caught.value.field) == (422, field)
    assert not Labeler.objects.exists()


def test_labelers_are_created_updated_and_deleted_as_a_whole(world):
    labeler = services.create_labeler(world.acme, world.alice, " big_payment ", "field",
                                      {"path": "output.args.amount", "op": ">", "value": 10000})
    assert labeler.atom == "big_payment"
    assert labeling_for(world.acme).produces("big_payment")
    with pytest.raises(Conflict):
        services.create_labeler(world.acme, world.alice, "big_payment", "regex",
                                {"path": "output", "pattern": "x"})

    # Changing the kind alone leaves a field config under a regex kind: refused.
    with pytest.raises(ServiceError) as caught:
        services.update_labeler(labeler, world.alice, kind="regex")
    assert caught.value.field == "config"
    services.update_labeler(labeler, world.alice, kind="regex",
                            config={"path": "output", "pattern": "(?i)refund"}, enabled=False)
    labeler.refresh_from_db()
    assert (labeler.kind, labeler.enabled) == ("regex", False)
    assert not labeling_for(world.acme).produces("big_payment")

    services.delete_labeler(labeler, world.alice)
    assert not Labeler.objects.exists()
    assert actions(world.acme)[-3:] == ["labeler.created", "labeler.updated", "labeler.deleted"]


def test_every_write_names_its_actor_in_the_log(world):
    in_review(world)

    entries = AuditLogEntry.objects.filter(action__startswith="rule")
    assert {e.actor for e in entries} == {world.alice}
    assert RuleVersion.objects.get().author == world.alice
