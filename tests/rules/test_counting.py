"""How a rule version counts violations: chosen or defaulted when it is written, stored with it,
shown over HTTP (the version, its review aids, the editor) and never changed behind a version's
back (a different counting on a version that is not a draft is a new version)."""

import pytest

from studio.errors import ServiceError
from studio.monitor.verdicts import COUNTING_SENTENCES
from studio.rules import services
from studio.rules.models import RuleVersion, VersionStatus

pytestmark = pytest.mark.django_db

PAY = "!tool_call:pay W tool_call:check"   # not G: counted again after each violation
SHIP = "G (tool_call:ship -> O payment_confirmed)"   # G phi: every step's obligation


def version_of(body):
    return body["latest_version"] if "latest_version" in body else body


def test_each_form_gets_its_default_counting_and_says_it_in_english(world):
    alice = world.as_("alice")
    pay = alice.post("w/acme/rules", {"name": "check first", "formula": PAY}).json()
    ship = alice.post("w/acme/rules", {"name": "ship", "formula": SHIP}).json()

    assert version_of(pay)["counting"] == "after_violation"
    assert version_of(pay)["counting_sentence"] == COUNTING_SENTENCES["after_violation"]
    assert version_of(ship)["counting"] == "per_instance"
    stored = RuleVersion.objects.get(rule_id=pay["id"])
    assert stored.counting == "after_violation"  # resolved when written, not left empty


def test_a_chosen_counting_is_stored_and_shown_per_version(world):
    alice = world.as_("alice")
    rule = alice.post("w/acme/rules", {"name": "check first", "formula": PAY,
                                       "counting": "first"}).json()
    base = f"w/acme/rules/{rule['id']}/versions"

    assert alice.get(f"{base}/1").json()["counting"] == "first"
    edited = alice.patch(f"{base}/1", {"counting": "every_verdict"})
    assert edited.status_code == 200, edited.json()
    assert edited.json()["counting"] == "every_verdict"
    assert "again and again" in edited.json()["counting_sentence"]
    assert [v["counting"] for v in alice.get(base).json()] == ["every_verdict"]


@pytest.mark.parametrize("formula, counting, says", [
    (PAY, "per_instance", "G phi"),
    (PAY, "twice", "unknown counting"),
    (SHIP, "sometimes", "unknown counting"),
])
def test_a_counting_that_does_not_exist_or_fit_answers_422_naming_the_field(world, formula,
                                                                             counting, says):
    alice = world.as_("alice")
    created = alice.post("w/acme/rules", {"name": "r", "formula": formula, "counting": counting})

    assert created.status_code == 422
    assert created.json()["field"] == "counting"
    assert says in created.json()["detail"]
    rule = alice.post("w/acme/rules", {"name": "r", "formula": formula}).json()
    patched = alice.patch(f"w/acme/rules/{rule['id']}/versions/1", {"counting": counting})
    assert (patched.status_code, patched.json()["field"]) == (422, "counting")


def test_changing_the_counting_of_an_approved_version_makes_a_new_version(world):
    rule = services.create_rule(world.acme, world.alice, "check first", PAY)
    RuleVersion.objects.filter(rule=rule).update(status=VersionStatus.APPROVED)
    alice = world.as_("alice")
    base = f"w/acme/rules/{rule.id}/versions"

    assert alice.patch(f"{base}/1", {"counting": "first"}).status_code == 409
    second = alice.post(base, {"counting": "first"})

    assert second.status_code == 201, second.json()
    assert (second.json()["number"], second.json()["formula"],
            second.json()["counting"]) == (2, PAY, "first")
    assert alice.get(f"{base}/1").json()["counting"] == "after_violation"  # unchanged


def test_a_new_version_carries_a_chosen_counting_and_follows_a_default(world):
    rule = services.create_rule(world.acme, world.alice, "check first", PAY, counting="first")
    RuleVersion.objects.filter(rule=rule).update(status=VersionStatus.APPROVED)
    assert services.new_version(rule, world.alice, "!tool_call:pay W tool_call:verify"
                                ).counting == "first"

    ship = services.create_rule(world.acme, world.alice, "ship", "tool_call:ship")
    assert ship.versions.get().counting == "after_violation"
    draft = services.update_draft(ship.versions.get(), world.alice, formula=SHIP)
    assert draft.counting == "per_instance"  # nobody chose the old default: it follows the form


def test_a_formula_that_stops_being_g_drops_per_instance_for_the_default(world):
    rule = services.create_rule(world.acme, world.alice, "ship", SHIP, counting="per_instance")
    draft = services.update_draft(rule.versions.get(), world.alice, formula=PAY)

    assert draft.counting == "after_violation"
    with pytest.raises(ServiceError) as refused:
        services.update_draft(draft, world.alice, formula=PAY, counting="per_instance")
    assert refused.value.field == "counting"


def test_the_review_answer_says_the_counting_in_one_sentence(world):
    rule = services.create_rule(world.acme, world.alice, "check first", PAY, counting="first")
    RuleVersion.objects.filter(rule=rule).update(status=VersionStatus.APPROVED)
    services.new_version(rule, world.alice, counting="every_verdict")
    alice = world.as_("alice")

    first = alice.get(f"w/acme/rules/{rule.id}/versions/1/review").json()
    second = alice.get(f"w/acme/rules/{rule.id}/versions/2/review").json()

    assert first["counting"] == {"mode": "first", "label": "first verdict only",
                                 "sentence": COUNTING_SENTENCES["first"]}
    assert second["counting"]["mode"] == "every_verdict"
    assert second["counting_before"] == "first verdict only"


def test_the_editor_offers_the_countings_and_saves_the_chosen_one(world, client):
    rule = services.create_rule(world.acme, world.alice, "check first", PAY)
    client.force_login(world.alice)
    url = f"/w/acme/rules/{rule.id}/"

    page = client.get(url).content.decode()
    assert 'name="counting"' in page
    assert COUNTING_SENTENCES["after_violation"] in page
    assert "again after each violation" in page and "first verdict only" in page

    saved = client.post(url + "?v=1", {"action": "save", "formula": PAY, "counting": "first"})
    assert saved.status_code == 302
    assert RuleVersion.objects.get(rule=rule).counting == "first"
    aids = client.get(f"/w/acme/rules/{rule.id}/review-aids?v=1").content.decode()
    assert COUNTING_SENTENCES["first"] in aids
