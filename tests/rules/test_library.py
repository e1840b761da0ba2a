"""Installing the rule library: drafts (or submitted for review) with the paper's English, the
TextWorld labelers, nothing approved, nothing added twice; the load_library command and the form
on the rules page."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from studio.errors import ServiceError
from studio.logic import library
from studio.logic.parser import parse
from studio.logic.reads import rule_reads
from studio.rules import services
from studio.rules.library import install_library
from studio.rules.models import Labeler, Rule, RuleVersion, VersionStatus
from studio.traces import vocabulary
from studio.workspaces.models import AuditLogEntry

pytestmark = pytest.mark.django_db


def logs_show(workspace, domain: str) -> None:
    """The workspace's vocabulary as if its logs showed every atom and path the domain's rules
    read (each path holding the kind of value it is compared with), so that submitting them
    needs no acknowledgement."""
    found = {}
    for entry in library.rules_for(domain):
        reads = rule_reads(parse(entry.formula))
        found.update({("label", atom, "", ""): (1, []) for atom in reads.atoms})
        found.update({("path", p.path, p.compared_with, ""): (1, []) for p in reads.paths})
    vocabulary.record(workspace, found)


def statuses(workspace) -> set[str]:
    return set(RuleVersion.objects.filter(rule__workspace=workspace)
               .values_list("status", flat=True))


def test_installing_a_domain_adds_its_rules_as_drafts_and_its_labelers(world):
    result = install_library(world.acme, world.alice, "textworld")

    entries = library.rules_for("textworld")
    assert result.rules_created == [e.name for e in entries] and result.rules_skipped == []
    assert result.labelers_created == [lab.atom for lab in library.labelers_for("textworld")]
    for entry in entries:
        rule = Rule.objects.get(workspace=world.acme, name=entry.name)
        version = rule.versions.get()
        assert (version.formula, version.english) == (entry.formula, entry.english)
        assert (version.status, version.author) == (VersionStatus.DRAFT, world.alice)
        assert entry.source in rule.description and entry.note in rule.description
    stored = {lab.atom: (lab.kind, lab.config) for lab in Labeler.objects.filter(
        workspace=world.acme)}
    assert stored == {lab.atom: (lab.kind, lab.config)
                      for lab in library.labelers_for("textworld")}
    assert statuses(world.acme) == {VersionStatus.DRAFT}
    logged = AuditLogEntry.objects.get(workspace=world.acme, action="rule_library.installed")
    assert logged.actor == world.alice and logged.details["domain"] == "textworld"


def test_installing_again_adds_nothing_and_keeps_what_the_workspace_has(world):
    # The workspace already has a rule and a labeler of the library's names, its own way.
    services.create_rule(world.acme, world.alice, "no_drop", "G !(drop & fragile)")
    services.create_labeler(world.acme, world.alice, "go", "regex",
                            {"path": "output", "pattern": "^(go|walk)\\b"})

    first = install_library(world.acme, world.alice, "textworld")
    assert first.rules_skipped == ["no_drop"] and first.labelers_skipped == ["go"]
    assert Rule.objects.get(name="no_drop").versions.get().formula == "G !(drop & fragile)"
    assert Labeler.objects.get(atom="go").config["pattern"] == "^(go|walk)\\b"
    rules_before = Rule.objects.count()
    labelers_before = Labeler.objects.count()

    second = install_library(world.acme, world.alice, "textworld")
    assert second.rules_created == [] and second.labelers_created == []
    assert len(second.rules_skipped) == 4 and len(second.labelers_skipped) == 7
    assert (Rule.objects.count(), Labeler.objects.count()) == (rules_before, labelers_before)
    assert "0 rules added as drafts; 4 rules already in the workspace" in second.summary()


def test_it_never_approves_not_even_for_a_reviewer(world):
    # ann holds every role; submitting leaves the versions in review for someone else.
    logs_show(world.acme, "scienceworld")
    result = install_library(world.acme, world.ann, "scienceworld", submit=True)
    assert len(result.rules_created) == 9 and result.labelers_created == []
    assert statuses(world.acme) == {VersionStatus.IN_REVIEW}
    actions = set(AuditLogEntry.objects.filter(workspace=world.acme)
                  .values_list("action", flat=True))
    assert "rule_version.approved" not in actions and "rule_version.submitted" in actions
    # A reviewer other than the installer can approve one, as with any rule.
    version = RuleVersion.objects.filter(rule__workspace=world.acme).first()
    services.approve(version, world.rob)


def test_every_domain_installs_and_the_rules_compile_in_the_studio(world):
    for domain in library.DOMAINS:
        install_library(world.acme, world.alice, domain)
    assert Rule.objects.filter(workspace=world.acme).count() == len(library.RULES)
    assert not Rule.objects.filter(workspace=world.beta).exists()


def test_an_unknown_domain_is_refused(world):
    with pytest.raises(ServiceError) as caught:
        install_library(world.acme, world.alice, "chess")
    assert caught.value.field == "domain" and "textworld" in caught.value.message
    assert not Rule.objects.exists()


# ---------------------------------------------------------------------------------------------
# manage.py load_library

def run_command(*args) -> str:
    out = io.StringIO()
    call_command("load_library", *args, stdout=out)
    return out.getvalue()


def test_the_command_installs_then_reports_everything_already_there(world):
    output = run_command("textworld", "--workspace", "acme", "--as", "alice")
    assert output.startswith("TextWorld: 4 rules added as drafts; 7 labelers added.")
    assert "  + rule take_then_examine" in output and "  + labeler use_knife" in output
    again = run_command("textworld", "--workspace", "acme", "--as", "alice", "--submit")
    assert "  = rule knife_needed (already there)" in again
    assert statuses(world.acme) == {VersionStatus.DRAFT}  # --submit submits only what it adds


def test_the_command_can_submit_for_review(world):
    logs_show(world.acme, "ipc_trucks")
    run_command("ipc_trucks", "--workspace", "acme", "--as", "alice", "--submit")
    assert statuses(world.acme) == {VersionStatus.IN_REVIEW}
    assert Rule.objects.filter(workspace=world.acme).count() == 37


@pytest.mark.parametrize("args, message", [
    (("chess", "--workspace", "acme", "--as", "alice"),
     "unknown domain 'chess'; the library has ipc_trucks (37 rules); textworld (4 rules)"),
    (("textworld", "--workspace", "nowhere", "--as", "alice"), "no workspace with slug"),
    (("textworld", "--workspace", "acme", "--as", "nobody"), "no user named 'nobody'"),
    (("textworld", "--workspace", "acme", "--as", "rob"),
     "rob does not hold the author role in workspace 'acme'"),
    (("textworld", "--workspace", "beta", "--as", "alice"),
     "alice does not hold the author role in workspace 'beta'"),
])
def test_the_command_refuses_with_status_2(world, args, message):
    with pytest.raises(CommandError) as caught:
        run_command(*args)
    assert caught.value.returncode == 2
    assert message in str(caught.value)
    assert not Rule.objects.exists() and not Labeler.objects.exists()


# ---------------------------------------------------------------------------------------------
# The form on the rules page

def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_authors_see_the_library_form_with_every_domain(world):
    page = client_for(world.alice).get("/w/acme/rules/").content.decode()
    assert "Add rules from the library" in page
    section = page[page.index('id="library-heading"'):]
    assert re.findall(r'name="domain" value="([a-z_]+)"', section) == list(library.DOMAINS)
    assert 'action="/w/acme/rules/library"' in section
    assert not re.search(r"\sstyle\s*=|\son[a-z]+\s*=", section)
    reviewer_page = client_for(world.rob).get("/w/acme/rules/").content.decode()
    assert "Add rules from the library" not in reviewer_page


def test_the_form_installs_rules_and_says_what_it_added(world):
    client = client_for(world.alice)
    response = client.post("/w/acme/rules/library", {"domain": "textworld"}, follow=True)
    assert response.redirect_chain == [("/w/acme/rules/", 302)]
    page = response.content.decode()
    assert "TextWorld: 4 rules added as drafts; 7 labelers added." in page
    for entry in library.rules_for("textworld"):
        assert f">{entry.name}</a>" in page
    assert statuses(world.acme) == {VersionStatus.DRAFT}

    again = client.post("/w/acme/rules/library", {"domain": "textworld", "submit": "1"},
                        follow=True).content.decode()
    assert "4 rules already in the workspace left as they are" in again
    assert Rule.objects.filter(workspace=world.acme).count() == 4


def test_the_form_can_submit_for_review(world):
    logs_show(world.acme, "scienceworld")
    client_for(world.alice).post("/w/acme/rules/library", {"domain": "scienceworld",
                                                           "submit": "1"})
    assert statuses(world.acme) == {VersionStatus.IN_REVIEW}


def test_the_form_refuses_non_authors_outsiders_and_unknown_domains(world):
    assert client_for(world.rob).post("/w/acme/rules/library",
                                      {"domain": "textworld"}).status_code == 403
    assert client_for(world.oscar).post("/w/acme/rules/library",
                                        {"domain": "textworld"}).status_code == 404
    assert client_for(world.alice).get("/w/acme/rules/library").status_code == 405
    response = client_for(world.alice).post("/w/acme/rules/library", {"domain": "chess"},
                                            follow=True)
    assert "Choose a domain of the library (IPC-Trucks, TextWorld, ScienceWorld)." in (
        response.content.decode())
    assert not Rule.objects.exists()


def test_rules_with_warnings_are_left_as_drafts_and_named(world):
    # Nothing in a new workspace's logs shows the library's atoms: each rule has warnings,
    # which only its author can acknowledge, on its page.
    result = install_library(world.acme, world.ann, "scienceworld", submit=True)

    assert sorted(result.rules_with_warnings) == sorted(result.rules_created)
    assert statuses(world.acme) == {VersionStatus.DRAFT}
    assert "9 rules left as drafts" in result.summary()
    assert "warnings to acknowledge" in result.summary()
