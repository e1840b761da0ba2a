"""The pages show one verdict per session and rule, in words: the Sessions list's badges, the
session page's lane badge and residual panel, and the audit report's matrix.  The property test
overwrites a stored result with every combination it can hold and renders the real views; none
may say "complied" where a violation was counted, nor "still open" for a finished session."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from studio.audits import services
from studio.audits.models import AuditRun, RunStatus, SessionResult
from studio.monitor.verdicts import COUNTING_MODES
from studio.traces.models import TraceSession
from tests.audits.helpers import add_rule, add_sessions

pytestmark = pytest.mark.django_db

WORDS = ("violated", "complied", "open")


def audit(team, capture):
    with capture(execute=True):
        return services.start_audit(team.workspace, None, None, team.auditor)


def page_of(team, url: str, **params) -> str:
    client = Client()
    client.force_login(team.auditor)
    response = client.get(url, params)
    assert response.status_code == 200, response.content.decode()[:2000]
    return response.content.decode()


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def verdicts_in(fragment: str) -> set[str]:
    """The verdict words a piece of a page says."""
    said = text(fragment)
    return {w for w in WORDS if re.search(rf"\b{w}\b", said)}


@pytest.fixture
def stored(team, django_capture_on_commit_callbacks):
    """One audited (session, rule) whose stored fields each example overwrites."""
    version = add_rule(team, "rule", "G p")
    session = add_sessions(team, {"s": [{"labels": ["p"]}]})["s"]
    run = audit(team, django_capture_on_commit_callbacks)
    return run, session, version, SessionResult.objects.get(run=run)


def shown(team, run, session) -> dict[str, set[str]]:
    listed = page_of(team, "/w/acme/sessions/", run=run.id)
    row = listed.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    detail = page_of(team, f"/w/acme/sessions/{session.id}/", run=run.id)
    lane = detail.split('class="lane-rule"', 1)[1].split("</th>", 1)[0]
    panel = detail.split('id="residual-panel"', 1)[1].split("</section>", 1)[0]
    report = page_of(team, f"/w/acme/audits/{run.id}/")
    cell = report.split('class="cell ', 1)[1].split("</td>", 1)[0]
    return {"list": verdicts_in(row), "lane": verdicts_in(lane),
            "panel": verdicts_in(panel), "report": verdicts_in(cell)}


@hypothesis_settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(violations=st.integers(0, 3), final=st.sampled_from(["satisfied", "violated"]),
       settled=st.sampled_from(["pending", "satisfied", "violated"]),
       open_=st.booleans(), counting=st.sampled_from(COUNTING_MODES))
def test_no_page_shows_complied_where_a_violation_was_counted(
        team, stored, violations, final, settled, open_, counting):
    run, session, version, result = stored
    SessionResult.objects.filter(pk=result.pk).update(violation_count=violations, final=final,
                                                      verdict=settled)
    TraceSession.objects.filter(pk=session.pk).update(source="live" if open_ else "upload",
                                                      ended_at=None)
    type(version).objects.filter(pk=version.pk).update(counting=counting)

    seen = shown(team, run, session)

    if violations:
        expected = "violated"
    elif not open_:
        expected = "complied" if final == "satisfied" else "violated"
    else:
        expected = ("complied" if settled == "satisfied" and counting in (
            "first", "after_violation") else "open")
    for surface, words in seen.items():
        assert words == {expected}, (surface, seen)


def test_the_property_test_reads_real_pages(team, stored):
    # Guard against a vacuous property: the fixture's own result reads back as stored.
    run, session, _, _ = stored
    assert shown(team, run, session) == {k: {"complied"} for k in ("list", "lane", "panel",
                                                                    "report")}


def test_the_residual_panel_at_a_detection_step_says_so_and_explains_it(
        team, django_capture_on_commit_callbacks):
    add_rule(team, "pay after checking", "!tool_call:pay W tool_call:check")
    session = add_sessions(team, {"s": [{"labels": ["tool_call:look"]},
                                        {"labels": ["tool_call:pay"]},
                                        {"labels": ["tool_call:check"]}]})["s"]
    run = audit(team, django_capture_on_commit_callbacks)
    page = page_of(team, f"/w/acme/sessions/{session.id}/", run=run.id, step=1)
    panel = text(page.split('id="residual-panel"', 1)[1].split("</section>", 1)[0])
    assert "violated 1 violation detected at this step" in panel
    assert ("Step 1: the agent called pay; no call to check happened before it." in panel)
    assert "Rest of the session: can no longer be met (since step 1)" in panel
    assert "complied" not in panel
    # The formula stays one click away.
    assert re.search(r"<details[^>]*><summary[^>]*>Formula</summary><code[^>]*>false</code>",
                     page)
    # Before the payment the rule was not decided yet (the session was still running then).
    before = text(page_of(team, f"/w/acme/sessions/{session.id}/residual", run=run.id, step=0))
    assert "open at this step" in before and "session still open" not in before
    assert ("still owed: from the next step on, no call to pay before the first call to check "
            "(and none at all if that never happens).") in before


def test_the_list_opens_on_the_newest_run_with_results_and_reaches_every_session(
        team, django_capture_on_commit_callbacks):
    add_rule(team, "never delete", "G !delete")
    add_sessions(team, {"audited": [{"labels": ["delete"]}]})
    run = audit(team, django_capture_on_commit_callbacks)
    # A later run with no results, and a multi-agent session no run covered.
    empty = AuditRun.objects.create(workspace=team.workspace, status=RunStatus.DONE)
    chart = add_sessions(team, {"chart": [{"labels": []}]})["chart"]
    chart.events.update(message_id="m1", message_kind="send", message_peer="B")

    page = page_of(team, "/w/acme/sessions/")
    assert f"Verdicts of audit run #{run.id} (the newest run with results" in text(page)
    assert empty.id != run.id and "chart" not in text(page.split("<tbody>", 1)[1])
    found = re.search(r'<a href="([^"]*all=1[^"]*)">List every session</a>', page)
    assert found, "no way to reach the sessions outside the run"
    every = page_of(team, found.group(1).replace("&amp;", "&"))
    row = every.split(">chart</a>", 1)[1].split("</tr>", 1)[0]
    assert "not audited in this run" in row
    assert f'href="/w/acme/sessions/{chart.id}/msc"' in every.split(">chart</a>", 1)[1]
    # The session page of a session without results opens on its steps.
    assert "Steps" in page_of(team, f"/w/acme/sessions/{chart.id}/")
