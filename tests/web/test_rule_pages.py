"""Rule pages through real requests: live parse feedback, the editor, review rules, diffs."""

import pytest

from studio.rules.models import Rule, RuleVersion
from studio.workspaces.models import Role
from studio.workspaces.services import add_member, create_workspace


@pytest.fixture
def team(people, sign_in):
    author, reviewer, outsider = people["ann"], people["rob"], people["eve"]
    workspace = create_workspace("Payments", owner=author, roles=(Role.AUTHOR,))
    add_member(workspace, reviewer, Role.REVIEWER)
    create_workspace("Elsewhere", owner=outsider)
    return {"ws": workspace, "author": sign_in(author), "reviewer": sign_in(reviewer),
            "outsider": sign_in(outsider)}


def test_live_check_marks_the_error_position(team):
    response = team["author"].post("/w/payments/formulas/check", {"formula": "G(p -> "},
                                   HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Line 1, column 7" in page and "ends too early" in page
    ok = team["author"].post("/w/payments/formulas/check",
                             {"formula": "G(tool_call:pay -> F approved) & G(data.amount < 5)"})
    page = ok.content.decode()
    assert "Reads as" in page and "tool_call:pay" in page
    # Nothing in the workspace produces `approved` or calls pay, and no event has data.amount.
    assert "Nothing in this workspace produces `approved`: no labeler" in page
    assert "Event fields the rule compares" in page and "no event has it" in page


def test_author_writes_and_submits_and_another_person_approves(team):
    created = team["author"].post("/w/payments/rules/", {
        "name": "pay_first", "formula": "!ship W paid", "description": "pay before shipping"})
    rule = Rule.objects.get(name="pay_first")
    assert created.status_code == 302 and created["Location"] == f"/w/payments/rules/{rule.id}/"
    url = f"/w/payments/rules/{rule.id}/"
    # A broken formula is refused with its position; nothing is saved.
    bad = team["author"].post(url, {"action": "save", "formula": "!ship W"})
    assert "line 1, column 8" in bad.content.decode()
    assert RuleVersion.objects.get(rule=rule).formula == "!ship W paid"
    team["author"].post(url, {"action": "submit", "formula": "!ship W (paid | prepaid)",
                              "acknowledgement": "labelers for these come next"})
    version = RuleVersion.objects.get(rule=rule)
    assert version.status == "in_review" and version.formula == "!ship W (paid | prepaid)"
    # The author cannot review (no reviewer role), the reviewer sees the review form.
    denied = team["author"].post(url, {"action": "approve"})
    assert denied.status_code == 403
    page = team["reviewer"].get(url).content.decode()
    assert "Approve" in page and "Reject" in page
    team["reviewer"].post(url, {"action": "approve", "comment": "looks right"})
    version.refresh_from_db()
    assert version.status == "approved" and version.review_comment == "looks right"
    # A second version shows its diff from the first.
    team["author"].post(url, {"action": "new_version"})
    second = RuleVersion.objects.get(rule=rule, number=2)
    team["author"].post(url + "?v=2", {"action": "save", "formula": "!ship W paid"})
    page = team["author"].get(url + "?v=2").content.decode()
    assert "Changes from version 1" in page and "<del>" in page
    assert second.status == "draft"


def test_rejecting_needs_a_reason(team):
    team["author"].post("/w/payments/rules/", {"name": "r", "formula": "G !drop"})
    rule = Rule.objects.get(name="r")
    url = f"/w/payments/rules/{rule.id}/"
    team["author"].post(url, {"action": "submit", "formula": "G !drop",
                              "acknowledgement": "a drop labeler comes next"})
    page = team["reviewer"].post(url, {"action": "reject", "comment": ""}).content.decode()
    assert "say why" in page
    assert RuleVersion.objects.get(rule=rule).status == "in_review"


def test_outsiders_get_404(team):
    team["author"].post("/w/payments/rules/", {"name": "r", "formula": "G !drop"})
    rule = Rule.objects.get(name="r")
    assert team["outsider"].get("/w/payments/rules/").status_code == 404
    assert team["outsider"].get(f"/w/payments/rules/{rule.id}/").status_code == 404
    assert team["outsider"].post("/w/payments/formulas/check", {"formula": "p"}).status_code == 404
    assert team["outsider"].get(f"/w/elsewhere/rules/{rule.id}/").status_code == 404


def test_approving_says_whether_live_sessions_are_checked_and_adds_the_rule_in_one_click(team):
    from studio.rules import services
    from studio.rules.models import RuleSet

    author, reviewer = team["author"], team["reviewer"]
    author.post("/w/payments/rules/", {"name": "pay_first", "formula": "!ship W paid"})
    rule = Rule.objects.get(name="pay_first")
    url = f"/w/payments/rules/{rule.id}/"
    author.post(url, {"action": "submit", "formula": "!ship W paid",
                      "acknowledgement": "labelers come next"})
    # No rule set is live yet: live sessions read every approved rule.
    approved = reviewer.post(url, {"action": "approve", "comment": "ok"}, follow=True)
    assert "Monitored live: no rule set is marked live" in approved.content.decode()

    live_set = services.create_rule_set(team["ws"], None, "Checkout", live=True)
    page = author.get(url).content.decode()
    assert "Not monitored live: add it to a live rule set." in page
    assert "Add it to “Checkout”" in page
    # A reviewer sees the note but no button; a rule author adds it in one click.
    assert "Add it to" not in reviewer.get(url).content.decode()
    assert reviewer.post(url, {"action": "add_to_live_set",
                               "rule_set": live_set.id}).status_code == 403
    assert author.post(url, {"action": "add_to_live_set", "rule_set": "x"}).status_code == 200
    added = author.post(url, {"action": "add_to_live_set", "rule_set": live_set.id}, follow=True)
    assert list(RuleSet.objects.get(pk=live_set.pk).rules.all()) == [rule]
    assert "Monitored live through the live rule set “Checkout”" in added.content.decode()
