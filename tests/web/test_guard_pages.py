"""Causal guards declared for the workspace: the Causal guards page (authors add and delete,
mistakes shown with their line and column) and the MSC page deciding choice events with them."""

from __future__ import annotations

import pytest

from studio.causal.examples import MERGE_GUARD
from studio.rules import guards
from studio.rules.models import CausalGuard
from tests.web.test_msc_page import (SVG, classes, client_of, event_links, merge,  # noqa: F401
                                     page, svg_of, team)

pytestmark = pytest.mark.django_db


def choice_label(response) -> tuple[str, set[str]]:
    """The guard text drawn at the merge scenario's choice event (step 9), and its classes."""
    choice = event_links(svg_of(response))[9]
    [label] = [t for t in choice.iter(f"{SVG}text") if "guard" in classes(t)]
    return label.text, classes(label)


def test_a_workspace_guard_decides_the_choice_instead_of_the_built_in_example(team, merge):
    session, _ = merge
    before = page(team, session)
    assert choice_label(before)[0] == "merge_ok: ✓ true · log: false ≠"
    assert "paper 001&#x27;s merge example (built in)" in before.content.decode()

    # The workspace's own merge_ok asks for another candidate: false in both readings.
    guards.create_guard(team.workspace, team.author, "merge_ok", 'cand == "c99"', "Committer")
    after = page(team, session)
    assert after.status_code == 200
    text, marks = choice_label(after)
    assert text == "merge_ok: ✗ false · log: false"
    assert "guard-false" in marks and "disagrees" not in marks
    body = after.content.decode()
    assert "this workspace&#x27;s causal guards</a>" in body
    assert "built in" not in body
    assert '<code class="formula">cand == &quot;c99&quot;</code>' in body


def test_a_workspace_guard_owned_by_an_absent_lifeline_is_said_not_to_decide(team, merge):
    session, _ = merge
    guards.create_guard(team.workspace, team.author, "merge_ok", MERGE_GUARD, "Reviewer")
    response = page(team, session)
    body = response.content.decode()
    assert "decided by lifeline Reviewer, which this session does not have" in body
    assert "No CPL definition" not in body
    assert not [t for t in event_links(svg_of(response))[9].iter(f"{SVG}text")
                if "guard" in classes(t)]


def test_the_guards_page_adds_shows_mistakes_and_deletes_for_authors_only(team, merge):
    session, _ = merge
    url = "/w/acme/guards/"
    assert f'href="{url}"' in page(team, session).content.decode()  # linked from the chart

    author = client_of(team.author)
    wrong = author.post(url, {"action": "create", "name": "merge_ok",
                              "cpl": "TestRunner.cand ==\n  & cand", "owner": "Committer"})
    assert wrong.status_code == 422
    text = wrong.content.decode()
    assert "line 2, column 3" in text and 'aria-invalid="true"' in text
    assert "  &amp; cand\n  ^" in text  # the caret under the mistake
    assert not CausalGuard.objects.exists()

    added = author.post(url, {"action": "create", "name": "merge_ok", "cpl": MERGE_GUARD,
                              "owner": "Committer", "description": "paper 001"})
    assert added.status_code == 302
    listing = author.get(url).content.decode()
    assert "<code>merge_ok</code>" in listing and "Declare guard" in listing

    auditor = client_of(team.auditor)
    seen = auditor.get(url).content.decode()
    assert "<code>merge_ok</code>" in seen and "Declare guard" not in seen
    guard = CausalGuard.objects.get()
    assert auditor.post(url, {"action": "delete", "guard": guard.id}).status_code == 403
    assert client_of(team.outsider).get(url).status_code == 404

    assert author.post(url, {"action": "delete", "guard": guard.id}).status_code == 302
    assert not CausalGuard.objects.exists()
