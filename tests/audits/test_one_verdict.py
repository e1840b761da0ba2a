"""One verdict per session and rule in every answer outside the pages: the results and lanes
of the API, report.json (``verdicts`` per session, version numbers with their ids), the CSV,
the totals, and the evidence report's counting sentence.  The property test stores every
combination a result can hold and reads every surface back."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from studio.audits import services
from studio.audits.models import SessionResult
from studio.monitor.verdicts import COUNTING_MODES, COUNTING_SENTENCES, PER_INSTANCE
from studio.traces.models import TraceSession

from .helpers import add_rule, add_sessions

pytestmark = pytest.mark.django_db

CHECK_FIRST = "!tool_call:pay W tool_call:check"


def audit(team, capture):
    with capture(execute=True):
        return services.start_audit(team.workspace, None, None, team.auditor)


def get(team, path, **params):
    client = Client()
    client.force_login(team.auditor)
    return client.get(f"/api/w/acme/{path}", params)


def test_the_counting_decides_the_verdict_and_every_export_says_the_same(
        team, django_capture_on_commit_callbacks):
    # "Check the account before the first payment": checked, paid, paid again.  Counted after
    # each violation (the default for a rule that is not G) the rule was met and stays met;
    # counted after every verdict, the second payment without a new check is a violation.
    add_rule(team, "check first", CHECK_FIRST, approved=False)  # version 1, never audited
    add_rule(team, "check first", CHECK_FIRST)
    add_rule(team, "check again", CHECK_FIRST, counting="every_verdict")
    sessions = add_sessions(team, {"s": [{"labels": ["tool_call:check"]},
                                         {"labels": ["tool_call:pay"]},
                                         {"labels": ["tool_call:pay"]}]})
    run = audit(team, django_capture_on_commit_callbacks)

    report = get(team, f"audits/{run.id}/report.json").json()
    assert [(r["rule"], r["rule_version"], r["counting"]) for r in report["rules"]] == [
        ("check again", 1, "every_verdict"), ("check first", 2, "after_violation")]
    assert report["rules"][1]["rule_version_id"] == SessionResult.objects.get(
        run=run, rule_version__rule__name="check first").rule_version_id
    assert report["sessions"][0]["verdicts"] == ["violated", "complied"]
    assert report["sessions"][0]["verdicts_was"] == ["violated", "satisfied"]
    assert report["sessions"][0]["violations"] == [2, 0]  # each payment after the check
    assert [(r["complied"], r["violated"], r["open"]) for r in report["rules"]] == [
        (0, 1, 0), (1, 0, 0)]

    csv_text = b"".join(get(team, f"audits/{run.id}/report.csv").streaming_content).decode()
    table = list(csv.reader(io.StringIO(csv_text)))
    assert table[1][3:] == ["violated", "complied", "2", "complied", "complied", "0"]

    lanes = get(team, f"audits/{run.id}/sessions/{sessions['s'].id}").json()["rules"]
    assert [(lane["rule"], lane["rule_version"], lane["session_verdict"], lane["verdict"])
            for lane in lanes] == [("check again", 1, "violated", "complied"),
                                   ("check first", 2, "complied", "complied")]
    assert lanes[0]["counting_sentence"] == COUNTING_SENTENCES["every_verdict"]


def test_the_evidence_report_says_how_each_rule_counts(team, django_capture_on_commit_callbacks):
    add_rule(team, "check first", CHECK_FIRST, counting="first")
    add_rule(team, "never delete", "G !delete")
    add_sessions(team, {"s": [{"labels": []}]})
    run = audit(team, django_capture_on_commit_callbacks)
    client = Client()
    client.force_login(team.auditor)

    page = client.get(f"/w/acme/audits/{run.id}/evidence").content.decode()

    assert "How violations are counted" in page
    assert COUNTING_SENTENCES["first"] in page
    assert COUNTING_SENTENCES[PER_INSTANCE] in page


# --- no surface shows complied where a violation was counted ----------------------------------

@pytest.fixture
def stored(team, django_capture_on_commit_callbacks):
    """One audited (session, rule) whose stored fields each example overwrites."""
    version = add_rule(team, "rule", "G p")
    session = add_sessions(team, {"s": [{"labels": ["p"]}]})["s"]
    run = audit(team, django_capture_on_commit_callbacks)
    return run, session, version, SessionResult.objects.get(run=run)


def surfaces(team, run, session) -> dict[str, str | int]:
    """What each answer says of the one (session, rule): verdict words, or counts."""
    base = f"audits/{run.id}"
    report = get(team, f"{base}/report.json").json()
    table = list(csv.reader(io.StringIO(
        b"".join(get(team, f"{base}/report.csv").streaming_content).decode())))
    filtered = {v: get(team, f"{base}/results", session_verdict=v).json()["count"]
                for v in ("complied", "violated", "open")}
    return {"results": get(team, f"{base}/results").json()["items"][0]["session_verdict"],
            "lanes": get(team, f"{base}/sessions/{session.id}").json()["rules"][0][
                "session_verdict"],
            "report": report["sessions"][0]["verdicts"][0],
            "csv": table[1][3],
            "totals complied": report["rules"][0]["complied"],
            "filter complied": filtered["complied"],
            "filters total": sum(filtered.values())}


@hypothesis_settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(violations=st.integers(0, 3), final=st.sampled_from(["satisfied", "violated"]),
       settled=st.sampled_from(["pending", "satisfied", "violated"]),
       open_=st.booleans(), counting=st.sampled_from(COUNTING_MODES))
def test_no_surface_shows_complied_where_a_violation_was_counted(
        team, stored, violations, final, settled, open_, counting):
    run, session, version, result = stored
    SessionResult.objects.filter(pk=result.pk).update(violation_count=violations, final=final,
                                                      verdict=settled)
    TraceSession.objects.filter(pk=session.pk).update(source="live" if open_ else "upload",
                                                      ended_at=None)
    type(version).objects.filter(pk=version.pk).update(counting=counting)

    seen = surfaces(team, run, session)

    assert seen["filters total"] == 1, seen  # every result has exactly one verdict
    words = {seen[k] for k in ("results", "lanes", "report", "csv")}
    assert len(words) == 1, seen  # the same everywhere
    if violations:
        assert words == {"violated"}, seen
        assert (seen["totals complied"], seen["filter complied"]) == (0, 0), seen
    if not open_:
        assert words != {"open"}, seen  # a finished session is decided


def test_the_property_test_reads_a_real_api_answer(team, stored):
    # Guard against a vacuous property: the fixture's own result reads back as stored.
    run, session, _, _ = stored
    assert surfaces(team, run, session)["results"] == "complied"
    assert json.loads(get(team, f"audits/{run.id}/report.json").content)["sessions"]


def test_trac_verdict_at_a_step_reads_the_timeline_of_changes():
    # A model method on an unsaved result: the session page's lanes and the message chart read it.
    from studio.audits.models import SessionResult

    result = SessionResult(timeline=[[3, "violated"]])
    assert [result.trac_verdict_at(step) for step in (0, 2, 3, 9)] == [
        "pending", "pending", "violated", "violated"]
    assert SessionResult(timeline=[]).trac_verdict_at(5) == "pending"
