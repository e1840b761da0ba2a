"""The live page through real requests: events posted through the live API with a token show up
as each rule's current verdict and residual, the polled rows follow, and outsiders get 404."""

from __future__ import annotations

import html as html_module
import re

import pytest
from django.test import Client

from studio.live.ingest import clear_caches
from studio.rules.models import RuleSet
from studio.workspaces import services as workspace_services
from tests.live.conftest import Agent, approve

pytestmark = pytest.mark.django_db

RULES = [
    ("pay_before_ship", "!tool_call:ship W tool_call:pay"),
    ("no_delete", "G !tool_call:delete"),
]


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_caches()
    yield
    clear_caches()


@pytest.fixture
def setup(django_user_model):
    owner = django_user_model.objects.create_user(username="owner", password="pw-owner-123")
    outsider = django_user_model.objects.create_user(username="eve", password="pw-eve-12345")
    workspace = workspace_services.create_workspace("Acme", owner=owner, slug="acme")
    workspace_services.create_workspace("Elsewhere", owner=outsider, slug="elsewhere")
    versions = {name: approve(workspace, owner, name, formula) for name, formula in RULES}
    _, token = workspace_services.create_token(workspace, "agent", ["auditor"], by=owner)
    people = {}
    for name, user in [("owner", owner), ("outsider", outsider)]:
        people[name] = Client()
        people[name].force_login(user)
    return {"workspace": workspace, "agent": Agent("acme", token=token), "versions": versions,
            **people}


def rule_states(html: str, session: str) -> dict[str, str]:
    """``rule -> "verdict words | residual in words | formula"`` for one session's row of the
    live table."""
    row = re.search(rf'<th scope="row">(?:<a [^>]*>)?{re.escape(session)}(?:</a>)?</th>(.*?)</tr>',
                    html, re.DOTALL)
    assert row, f"no row for {session}"
    states = {}
    for rule, verdict, reading, residual in re.findall(
            r'<span class="rule-name">([^<]+)</span>\s*<span class="badge-verdict [^"]+">'
            r'<span aria-hidden="true">[^<]*</span> ([^<]+)</span>.*?'
            r'<span class="residual">Rest of the session: ([^<]*)</span>.*?'
            r'<code class="formula">([^<]*)</code>', row.group(1), re.DOTALL):
        states[rule] = f"{verdict} | {html_module.unescape(reading)} | {residual}"
    return states


def test_a_sessions_verdict_changes_as_events_arrive(setup):
    owner, agent = setup["owner"], setup["agent"]
    empty = owner.get("/w/acme/live/").content.decode()
    assert "No live sessions yet" in empty
    assert "http://testserver/api/w/acme/live/sessions/SESSION_ID/events" in empty
    assert 'hx-get="/w/acme/live/rows?page=1" hx-trigger="every 2s"' in empty
    assert not re.search(r"\sstyle\s*=|<script(?![^>]*\bsrc=)", empty)

    assert agent.post("agent-7", [{"event_id": "e1", "output": {"tool": "search"}}]
                      ).status_code == 200
    page = owner.get("/w/acme/live/").content.decode()
    owes_no_delete = ("open | still owed: from the next step "
                      "on, never: the agent calls delete. | G !tool_call:delete")
    assert rule_states(page, "agent-7") == {
        "no_delete": owes_no_delete,
        "pay_before_ship": "open | still owed: from the next "
                           "step on, no call to ship before the first call to pay (and none at "
                           "all if that never happens). | !tool_call:ship W tool_call:pay",
    }
    assert agent.post("agent-7", [{"event_id": "e2", "output": {"tool": "ship"}}]
                      ).status_code == 200
    rows = owner.get("/w/acme/live/rows?page=1")
    assert rows.status_code == 200 and "<html" not in rows.content.decode()
    states = rule_states(rows.content.decode(), "agent-7")
    assert states["pay_before_ship"] == "violated | can no longer be met | false"
    assert states["no_delete"] == owes_no_delete
    # A repeated delivery changes nothing; the row also says how many events and violations.
    agent.post("agent-7", [{"event_id": "e2", "output": {"tool": "ship"}}])
    html = owner.get("/w/acme/live/rows").content.decode()
    assert rule_states(html, "agent-7")["pay_before_ship"] == (
        "violated | can no longer be met | false")
    assert re.search(r"agent-7(</a>)?</th>\s*<td>2</td>", html)


def test_the_most_recently_active_session_comes_first(setup):
    agent = setup["agent"]
    agent.post("older", [{"event_id": "o1", "output": "hello"}])
    agent.post("newer", [{"event_id": "n1", "output": "hello"}])
    html = setup["owner"].get("/w/acme/live/rows").content.decode()
    assert html.index(">newer<") < html.index(">older<")
    agent.post("older", [{"event_id": "o2", "output": "again"}])
    html = setup["owner"].get("/w/acme/live/rows").content.decode()
    assert html.index(">older<") < html.index(">newer<")


def test_a_state_built_for_earlier_rule_versions_is_shown_and_said_to_be_stale(setup):
    setup["agent"].post("s1", [{"event_id": "e1", "output": {"tool": "delete"}}])
    approve(setup["workspace"], None, "no_delete", "G !tool_call:drop")  # a newer version
    html = setup["owner"].get("/w/acme/live/rows").content.decode()
    assert rule_states(html, "s1")["no_delete"] == "violated | can no longer be met | false"
    assert "Monitored against earlier rule versions" in html


def test_automatic_updates_can_be_stopped(setup):
    page = setup["owner"].get("/w/acme/live/?auto=off").content.decode()
    assert "hx-trigger" not in page and "Automatic updates are off" in page
    assert 'href="?page=1">Turn them on</a>' in page


def test_sessions_of_uploads_are_not_live(setup):
    from tests.audits.helpers import Team, add_sessions

    add_sessions(Team(setup["workspace"]), {"uploaded": [{"labels": []}]})
    assert ">uploaded<" not in setup["owner"].get("/w/acme/live/rows").content.decode()
    RuleSet.objects.create(workspace=setup["workspace"], name="none live")
    assert setup["owner"].get("/w/acme/live/").status_code == 200


def test_outsiders_get_404(setup):
    setup["agent"].post("s1", [{"event_id": "e1", "output": "hi"}])
    outsider = setup["outsider"]
    assert outsider.get("/w/acme/live/").status_code == 404
    assert outsider.get("/w/acme/live/rows").status_code == 404
    assert ">s1<" not in outsider.get("/w/elsewhere/live/rows").content.decode()
    assert Client().get("/w/acme/live/").status_code == 302
    assert setup["owner"].post("/w/acme/live/").status_code == 405
