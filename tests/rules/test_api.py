"""The rules API over HTTP: the review cycle, roles, error bodies, rule sets, labelers and the
formula checker."""

import pytest

from studio.rules.models import RuleVersion
from studio.workspaces.models import AuditLogEntry

pytestmark = pytest.mark.django_db

SHIP = "G (tool_call:ship -> O payment_confirmed)"
# Nothing in these workspaces produces tool_call:ship: submitting needs an acknowledgement.
ACKNOWLEDGED = {"acknowledgement": "the shipping logs are uploaded later"}


def create_rule(api, name="ship after payment", formula=SHIP, slug="acme"):
    response = api.post(f"w/{slug}/rules", {"name": name, "formula": formula})
    assert response.status_code == 201, response.json()
    return response.json()


def test_the_review_cycle_over_http(world):
    alice, rob = world.as_("alice"), world.as_("rob")

    rule = create_rule(alice)
    assert rule["latest_version"]["status"] == "draft"
    assert rule["approved_version"] is None
    base = f"w/acme/rules/{rule['id']}/versions"

    edited = alice.patch(f"{base}/1", {"english": "Ship only after payment is confirmed."})
    assert edited.status_code == 200 and edited.json()["english"].startswith("Ship only")
    assert alice.post(f"{base}/1/submit", ACKNOWLEDGED).json()["status"] == "in_review"
    assert alice.patch(f"{base}/1", {"formula": "G p"}).status_code == 409

    approved = rob.post(f"{base}/1/approve", {"comment": "ok"})
    assert approved.status_code == 200, approved.json()
    body = approved.json()
    assert (body["status"], body["reviewer"], body["review_comment"]) == ("approved", "rob", "ok")
    assert body["reviewed_at"].endswith("Z") or body["reviewed_at"].endswith("+00:00")

    second = alice.post(base, {})
    assert second.status_code == 201
    assert (second.json()["number"], second.json()["formula"]) == (2, SHIP)
    listing = alice.get("w/acme/rules").json()
    assert [(r["name"], r["version_count"], r["approved_version"]) for r in listing] == [
        ("ship after payment", 2, 1)]
    assert [v["number"] for v in alice.get(base).json()] == [1, 2]
    assert world.as_("aud").get(f"{base}/2").json()["status"] == "draft"


def test_a_bad_formula_answers_422_with_line_column_and_what_was_expected(world):
    response = world.as_("alice").post("w/acme/rules", {"name": "r", "formula": "G (p &\n q"})

    assert response.status_code == 422
    body = response.json()
    assert body["field"] == "formula"
    assert body["details"]["line"] == 2
    assert body["details"]["column"] == 3
    assert "')'" in body["details"]["expected"]
    assert body["detail"].startswith("the formula is not valid: line 2, column 3")


def test_reviewing_your_own_version_is_a_clear_403(world):
    ann = world.as_("ann")  # author and reviewer
    rule = create_rule(ann)
    base = f"w/acme/rules/{rule['id']}/versions/1"
    ann.post(f"{base}/submit", ACKNOWLEDGED)

    response = ann.post(f"{base}/approve", {})
    assert response.status_code == 403
    assert response.json()["detail"] == ("you wrote version 1 of rule 'ship after payment': "
                                         "another reviewer must approve it")
    assert RuleVersion.objects.get().status == "in_review"


@pytest.mark.parametrize("who, method, path, body", [
    ("aud", "post", "w/acme/rules", {"name": "x", "formula": "G p"}),
    ("rob", "post", "w/acme/rules", {"name": "x", "formula": "G p"}),
    ("alice", "post", "w/acme/rules/{rule}/versions/1/approve", {}),
    ("aud", "post", "w/acme/rules/{rule}/versions/1/reject", {"comment": "no"}),
    ("aud", "post", "w/acme/rule-sets", {"name": "s"}),
    ("rob", "post", "w/acme/labelers", {"atom": "a", "kind": "regex",
                                        "config": {"path": "output", "pattern": "x"}}),
])
def test_writes_need_their_role(world, who, method, path, body):
    rule = create_rule(world.as_("ann"))
    world.as_("ann").post(f"w/acme/rules/{rule['id']}/versions/1/submit", ACKNOWLEDGED)

    response = getattr(world.as_(who), method)(path.format(rule=rule["id"]), body)

    assert response.status_code == 403
    assert "role" in response.json()["detail"]


def test_reads_need_membership_only(world):
    rule = create_rule(world.as_("alice"))

    for path in ("w/acme/rules", f"w/acme/rules/{rule['id']}", "w/acme/rule-sets",
                 "w/acme/labelers"):
        assert world.as_("aud").get(path).status_code == 200
        assert world.as_("oscar").get(path).status_code == 404


def test_a_token_with_the_author_role_writes_and_is_named_as_author(world):
    api = world.as_("alice").__class__(token=world.token(world.acme, ["author"], by="alice",
                                                          name="ci"))
    rule = create_rule(api)

    assert rule["latest_version"]["author"] == "alice (token ci)"
    assert api.post(f"w/acme/rules/{rule['id']}/versions/1/approve").status_code == 403


def test_rule_sets_over_http(world):
    alice = world.as_("alice")
    a, b = create_rule(alice, "a"), create_rule(alice, "b")
    foreign = create_rule(world.as_("oscar"), "c", slug="beta")

    created = alice.post("w/acme/rule-sets", {"name": "prod", "rule_ids": [a["id"]]})
    assert created.status_code == 201
    set_id = created.json()["id"]
    assert [r["name"] for r in created.json()["rules"]] == ["a"]

    refused = alice.put(f"w/acme/rule-sets/{set_id}/rules", {"rule_ids": [foreign["id"]]})
    assert refused.status_code == 422 and refused.json()["field"] == "rule_ids"
    filled = alice.put(f"w/acme/rule-sets/{set_id}/rules", {"rule_ids": [a["id"], b["id"]]})
    assert [r["name"] for r in filled.json()["rules"]] == ["a", "b"]

    patched = alice.patch(f"w/acme/rule-sets/{set_id}", {"name": "production", "live": True})
    assert (patched.json()["name"], patched.json()["live"]) == ("production", True)
    assert alice.post("w/acme/rule-sets", {"name": "production"}).status_code == 409
    assert alice.delete(f"w/acme/rule-sets/{set_id}").status_code == 204
    assert alice.get(f"w/acme/rule-sets/{set_id}").status_code == 404


def test_labelers_over_http_name_the_field_at_fault(world):
    alice = world.as_("alice")

    bad = alice.post("w/acme/labelers", {"atom": "refund", "kind": "regex",
                                         "config": {"path": "output", "pattern": "(refund"}})
    assert bad.status_code == 422
    assert bad.json()["field"] == "config.pattern"
    assert "not a valid regular expression" in bad.json()["detail"]

    created = alice.post("w/acme/labelers", {"atom": "refund", "kind": "regex",
                                             "config": {"path": "output", "pattern": "refund",
                                                        "flags": "i"}})
    assert created.status_code == 201
    labeler_id = created.json()["id"]
    patched = alice.patch(f"w/acme/labelers/{labeler_id}", {"enabled": False})
    assert patched.json()["enabled"] is False
    assert alice.get("w/acme/labelers").json()[0]["atom"] == "refund"
    assert alice.delete(f"w/acme/labelers/{labeler_id}").status_code == 204
    assert alice.get(f"w/acme/labelers/{labeler_id}").status_code == 404


def test_the_formula_checker_says_what_produces_each_atom(world):
    alice = world.as_("alice")
    alice.post("w/acme/labelers", {"atom": "payment_confirmed", "kind": "field",
                                   "config": {"path": "data.status", "op": "==",
                                              "value": "paid"}})
    before = AuditLogEntry.objects.count()

    body = world.as_("aud").post("w/acme/formulas/check", {
        "text": "G((tool_call:ship->O payment_confirmed) & !mystery & "
                "output.args.amount <= 100)"}).json()

    assert body["ok"] is True and body["error"] is None
    assert body["formula"].startswith("G ")
    assert "□" in body["unicode"]
    assert body["atoms"] == [
        {"atom": "mystery", "produced": False, "source": None},
        {"atom": "payment_confirmed", "produced": True, "source": "labeler"},
        {"atom": "tool_call:ship", "produced": False, "source": None},
    ]
    assert body["comparisons"] == ["output.args.amount <= 100"]
    # No event of the workspace has called ship or had an amount: nothing produces them yet.
    assert {(w["code"], w["subject"]) for w in body["warnings"]} >= {
        ("unknown_atom", "tool_call:ship"), ("unknown_atom", "mystery"),
        ("unknown_path", "output.args.amount")}
    assert body["instance_level"] is True
    assert AuditLogEntry.objects.count() == before  # stores nothing


def test_the_formula_checker_answers_errors_with_their_position(world):
    alice = world.as_("alice")

    syntax = alice.post("w/acme/formulas/check", {"text": "G (p U)"})
    assert syntax.status_code == 200
    assert syntax.json()["ok"] is False
    assert syntax.json()["error"]["line"] == 1 and syntax.json()["error"]["column"] == 7
    assert syntax.json()["error"]["expected"]

    past = alice.post("w/acme/formulas/check", {"text": "H F p"}).json()
    assert past["ok"] is False and "past operator" in past["error"]["message"]
    assert past["atoms"] == [{"atom": "p", "produced": False, "source": None}]


def test_an_outsider_cannot_check_formulas_against_a_workspace(world):
    assert world.as_("oscar").post("w/acme/formulas/check", {"text": "p"}).status_code == 404


def test_odd_input_is_refused_cleanly_not_with_a_server_error(world):
    alice = world.as_("alice")
    rule = create_rule(alice)

    assert alice.get(f"w/acme/rules/{10**30}").status_code == 422
    assert alice.get(f"w/acme/rules/{rule['id']}/versions/{10**30}").status_code == 422
    assert alice.post("w/acme/rule-sets", {"name": "s", "rule_ids": [10**30]}).status_code == 422
    nul = alice.post("w/acme/rules", {"name": "a\x00b", "formula": "G p"})
    assert nul.status_code == 422
    labeler = alice.post("w/acme/labelers", {"atom": "a", "kind": "regex",
                                             "config": {"path": "output\x00", "pattern": "x"}})
    assert (labeler.status_code, labeler.json()["field"]) == (422, "config.path")
    nul_in_path = alice.get("w/ac%00me/rules")  # the boundary's: tests/web/test_boundary_paths
    assert (nul_in_path.status_code, nul_in_path.json()["field"]) == (400, "slug")


def test_a_compile_error_reads_without_the_rule_name(world):
    body = world.as_("alice").post("w/acme/formulas/check", {"text": "O F p"}).json()

    assert body["error"]["message"].startswith("the past operator in `O F p`")
