"""Session pages through real requests: the list with verdict badges, filters and pages; one
session's verdict lanes, timeline, residual at a selected step, violation witnesses; long
sessions paged; messages for mistakes; 404 for outsiders."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from studio.audits import services
from studio.audits.models import SessionResult, ViolationRecord
from studio.logic.parser import parse
from studio.logic.progression import Progressor, nnf
from studio.monitor import RuleSet, SessionMonitor
from tests.audits.helpers import add_rule, add_sessions, make_team, make_upload

pytestmark = pytest.mark.django_db

TAKE_EXAMINE = "G(take -> X examine)"


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    """An audit of the workspace's approved rules, its batches run in-process."""

    def start(team, upload=None):
        with django_capture_on_commit_callbacks(execute=True):
            run = services.start_audit(team.workspace, None, upload, team.auditor)
        run.refresh_from_db()
        assert run.status == "done", run.error
        return run

    return start


@pytest.fixture
def team(team):
    add_rule(team, "no_drop", "G !drop")
    add_rule(team, "examine_after_take", TAKE_EXAMINE)
    add_rule(team, "logs_out", "F logout")
    first, second = make_upload(team, "first.jsonl"), make_upload(team, "second.jsonl")
    add_sessions(team, {
        # drop at steps 2 and 4: no_drop is violated from step 2 on, with two violations.
        "alpha": [{"labels": ["take"], "input": "pick it up", "output": {"tool": "grab"}},
                  {"labels": ["examine"], "output": "x" * 500},
                  {"labels": ["drop"], "input": "<script>alert(1)</script>"},
                  {"labels": []},
                  {"labels": ["drop"]},
                  {"labels": ["logout"]}],
    }, upload=first)
    add_sessions(team, {
        # take and then no examine: examine_after_take fails at step 1; never logs out.
        "beta": [{"labels": ["take"]}, {"labels": []}],
        "gamma": [{"labels": ["logout"]}],
    }, upload=second)
    team.uploads = {"first": first, "second": second}
    return team


@pytest.fixture
def run(team, start):
    return start(team)


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def session_id(team, external) -> int:
    return team.workspace.sessions.get(external_id=external).id


def rows_of(page: str) -> dict[str, str]:
    """The list's table rows by session external id."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    out = {}
    for row in body.split("<tr>")[1:]:
        found = re.search(r'<th scope="row"><a [^>]*>([^<]*)</a>', row)
        if found:
            out[html.unescape(found.group(1))] = row
    return out


def cells(row: str) -> list[str]:
    """The words of each data cell of a row."""
    return [re.sub(r"<[^>]+>", " ", cell).split()
            for cell in re.findall(r"<td>(.*?)</td>", row, re.DOTALL)]


def lane_text(page: str, rule: str, step: int) -> str:
    """The screen-reader text of a rule's lane cell at a step."""
    lane = page.split(f'<span class="rule-name">{rule}</span>', 1)[1].split("</tr>", 1)[0]
    found = re.search(rf'<td class="lane [^"]*" data-step="{step}"[^>]*>.*?'
                      r'<span class="sr-only">([^<]*)</span></td>', lane, re.DOTALL)
    assert found, f"no cell for step {step} in lane {rule}"
    return found.group(1)


def timeline_row(page: str, step: int) -> str:
    found = re.search(rf'<tr id="step-{step}" data-step="{step}" class="([^"]*)">(.*?)</tr>',
                      page, re.DOTALL)
    assert found, f"no timeline row for step {step}"
    return found.group(1) + "|" + found.group(2)


# ---------------------------------------------------------------------------------------------
# The list


def test_the_list_shows_a_verdict_badge_per_rule(team, run):
    response = client_of(team.auditor).get("/w/acme/sessions/")
    assert response.status_code == 200
    page = response.content.decode()
    assert f"Verdicts of audit run #{run.id}" in page
    header = page.split("<thead>", 1)[1].split("</thead>", 1)[0]
    # Rule columns in the run's order (by name).
    assert [m for m in re.findall(r'class="rule-name">([^<]+)<', header)] == [
        "examine_after_take", "logs_out", "no_drop"]
    rows = rows_of(page)
    assert set(rows) == {"alpha", "beta", "gamma"}
    alpha, beta, gamma = (cells(rows[k]) for k in ("alpha", "beta", "gamma"))
    # steps, source, then examine_after_take, logs_out, no_drop.
    assert alpha[0] == ["6"] and alpha[1] == ["upload"]
    # An uploaded log is a finished session: each rule is violated or complied, never open.
    assert alpha[2] == ["✓", "complied"]
    assert alpha[3] == ["✓", "complied"]
    assert alpha[4] == ["✗", "violated", "2", "violations"]
    assert beta[2] == ["✗", "violated", "1", "violation"]
    assert beta[3] == ["✗", "violated", "1", "violation"]
    assert gamma[4] == ["✓", "complied"]


def test_filters_narrow_the_list(team, run):
    client = client_of(team.auditor)

    def listed(**params):
        response = client.get("/w/acme/sessions/", params)
        assert response.status_code == 200, response.content.decode()
        return set(rows_of(response.content.decode()))

    assert listed(rule="no_drop", verdict="violated") == {"alpha"}
    assert listed(rule="examine_after_take", verdict="violated") == {"beta"}
    assert listed(rule="logs_out", verdict="complied") == {"alpha", "gamma"}
    assert listed(rule="logs_out", verdict="satisfied") == {"alpha", "gamma"}  # an older link
    assert listed(rule="logs_out", verdict="final-violated") == {"beta"}
    assert listed(verdict="violated") == {"alpha", "beta"}  # any rule
    assert listed(verdict="any-violation", rule="no_drop") == {"alpha"}
    assert listed(q="AMM") == {"gamma"}
    assert listed(upload=team.uploads["second"].id) == {"beta", "gamma"}
    assert listed(upload=team.uploads["second"].id, verdict="violated") == {"beta"}
    assert listed(run=run.id, q="nothing like it") == set()
    # The session links carry the filters back to the list.
    page = client.get("/w/acme/sessions/", {"rule": "no_drop", "verdict": "violated"})
    link = re.search(r'<a href="(/w/acme/sessions/\d+/\?[^"]*)">alpha</a>',
                     page.content.decode()).group(1)
    detail = client.get(html.unescape(link)).content.decode()
    back = re.search(r'<a href="([^"]*)">All sessions</a>', detail).group(1)
    assert html.unescape(back) == (f"/w/acme/sessions/?run={run.id}&rule=no_drop"
                                   "&verdict=violated")


def test_bad_filter_values_get_a_message(team, run):
    client = client_of(team.auditor)
    for params, message in [
        ({"verdict": "sort-of"}, "“sort-of” is not a verdict to filter by"),
        ({"rule": "no_such_rule", "verdict": "violated"},
         "Rule “no_such_rule” was not audited in run"),
        ({"page": "two"}, "“two” is not a valid page number"),
        ({"page": "9"}, "There is no page 9: the list has 1 page."),
        ({"upload": "12345678"}, "There is no upload 12345678 in this workspace"),
        ({"run": "x1"}, "“x1” is not a valid audit run number"),
        ({"upload": "²"}, "“²” is not a valid upload number"),
        ({"run": "9" * 30}, f"“{'9' * 30}” is too large: no audit run number is that big"),
    ]:
        response = client.get("/w/acme/sessions/", params)
        assert response.status_code == 400, params
        assert html.escape(message) in response.content.decode(), params
    # An unknown run (or one of another workspace) is not found.
    response = client.get("/w/acme/sessions/", {"run": run.id + 1000})
    assert response.status_code == 404
    assert f"There is no audit run {run.id + 1000} in this workspace" in response.content.decode()


def test_the_list_is_paged_without_a_query_per_row(team, start):
    add_sessions(team, {f"bulk-{i:03d}": [{"labels": ["drop"] if i % 3 == 0 else []}]
                        for i in range(120)})
    run = start(team)
    client = client_of(team.auditor)
    first = client.get("/w/acme/sessions/")
    rows = rows_of(first.content.decode())
    assert len(rows) == 50 and "alpha" in rows and "bulk-046" in rows
    assert "page 1 of 3" in first.content.decode()
    with CaptureQueriesContext(connection) as full_page:
        second = client.get("/w/acme/sessions/", {"page": 2})
    with CaptureQueriesContext(connection) as short_page:
        last = client.get("/w/acme/sessions/", {"page": 3})
    assert len(rows_of(second.content.decode())) == 50
    assert set(rows_of(last.content.decode())) == {f"bulk-{i:03d}" for i in range(97, 120)}
    # 50 rows cost no more queries than 23.
    assert len(full_page.captured_queries) == len(short_page.captured_queries)
    assert f'href="/w/acme/sessions/?run={run.id}&amp;page=3"' in first.content.decode()
    violated = client.get("/w/acme/sessions/", {"rule": "no_drop", "verdict": "violated"})
    assert len(rows_of(violated.content.decode())) == 41  # alpha and every third bulk session


# ---------------------------------------------------------------------------------------------
# One session


def test_lanes_show_the_verdict_at_each_step(team, run):
    page = client_of(team.auditor).get(
        f"/w/acme/sessions/{session_id(team, 'alpha')}/").content.decode()
    assert lane_text(page, "no_drop", 0) == "open at this step after step 0"
    assert lane_text(page, "no_drop", 1) == "open at this step after step 1"
    assert lane_text(page, "no_drop", 2) == (
        "violated after step 2, 1 violation detected at step 2")
    assert lane_text(page, "no_drop", 3) == "violated after step 3"
    assert lane_text(page, "no_drop", 4) == (
        "violated after step 4, 1 violation detected at step 4")
    assert lane_text(page, "logs_out", 4) == "open at this step after step 4"
    assert lane_text(page, "logs_out", 5) == "complied after step 5"
    # The timeline: labels as the run's labeling gives them (built-in tool_call atom too),
    # values escaped, long values cut with the rest in <details>.
    assert "tool_call:grab" in timeline_row(page, 0) and "take" in timeline_row(page, 0)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "<details" in timeline_row(page, 1) and "x" * 500 in timeline_row(page, 1)
    # Both violations of no_drop are listed with a link to their witness.
    listed = page.split('id="violations-heading"', 1)[1].split("</section>", 1)[0]
    assert listed.count("Triggered at step 2, detected at step 2.") == 1
    assert listed.count("Triggered at step 4, detected at step 4.") == 1
    assert "None: no rule was violated" not in listed
    # The answer first: the violations in sentences, then the lanes, then the steps.
    assert (page.index('id="violations-heading"') < page.index('id="lanes-heading"')
            < page.index('id="timeline-heading"'))


def independent_residual(formula: str, label_sets: list[set]) -> str:
    """Progression of the formula through the steps, without the monitor's automata."""
    progress = Progressor()
    residual = nnf(parse(formula))
    for labels in label_sets:
        residual = progress(residual, frozenset(labels))
    return residual.text


def test_the_residual_at_a_selected_step_matches_progression(team, run):
    client = client_of(team.auditor)
    alpha = session_id(team, "alpha")
    page = client.get(f"/w/acme/sessions/{alpha}/", {"step": 0}).content.decode()
    expected = independent_residual(TAKE_EXAMINE, [{"take"}])
    assert "examine" in expected and expected != parse(TAKE_EXAMINE).text
    panel = page.split('id="residual-panel"', 1)[1].split("</section>", 1)[0]
    assert "After step 0" in panel
    shown = dict(re.findall(r"<dt>([^<]+)</dt>\s*<dd>.*?<code class=\"formula residual\">"
                            r"([^<]*)</code>", panel, re.DOTALL))
    assert html.unescape(shown["examine_after_take"]) == expected
    assert html.unescape(shown["no_drop"]) == independent_residual("G !drop", [{"take"}])
    # The obligation step 0 opened is still open, owing examine.
    assert "From step 0: still owed: the next step is labelled examine." in panel
    assert "is-selected" in timeline_row(page, 0).split("|")[0]
    assert 'aria-current="step"' in timeline_row(page, 0)

    # After the drop at step 2, a fresh monitor agrees, and the htmx partial shows the same.
    monitor = SessionMonitor(RuleSet([("no_drop", "G !drop"), ("take", TAKE_EXAMINE)]))
    for labels in (["take", "tool_call:grab"], ["examine"], ["drop"]):
        monitor.feed({"labels": labels})
    partial = client.get(f"/w/acme/sessions/{alpha}/residual", {"run": run.id, "step": 2},
                         HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    body = partial.content.decode()
    assert "<html" not in body and 'data-step="2"' in body
    shown = dict(re.findall(r"<dt>([^<]+)</dt>\s*<dd>.*?<code class=\"formula residual\">"
                            r"([^<]*)</code>", body, re.DOTALL))
    results = {r.rule: r for r in monitor.results()}
    assert shown["no_drop"] == results["no_drop"].residual.text == "false"
    assert html.unescape(shown["examine_after_take"]) == results["take"].residual.text
    # The step links ask htmx for that partial and push the page's own URL.
    assert (f'hx-get="/w/acme/sessions/{alpha}/residual?run={run.id}&amp;step=3"'
            in page)


def test_a_violation_link_highlights_its_witness(team, run):
    client = client_of(team.auditor)
    beta = session_id(team, "beta")
    violation = ViolationRecord.objects.get(result__session_id=beta,
                                            result__rule_version__rule__name="examine_after_take")
    assert (violation.trigger, violation.detected) == (0, 1)
    page = client.get(f"/w/acme/sessions/{beta}/").content.decode()
    link = f"/w/acme/sessions/{beta}/?run={run.id}&amp;violation={violation.id}#step-1"
    assert f'href="{link}"' in page
    assert "is-witness" not in page.split('id="timeline-heading"', 1)[1]

    page = client.get(html.unescape(link)).content.decode()
    witness_steps = {w["step"] for w in violation.witness}
    assert witness_steps == {0, 1}
    for step in (0, 1):
        classes, row = timeline_row(page, step).split("|", 1)
        assert "is-witness" in classes and "tag-witness" in row
    assert "tag-trigger" in timeline_row(page, 0) and "tag-detected" in timeline_row(page, 1)
    assert "is-selected" in timeline_row(page, 1).split("|")[0]  # opened on the detection
    panel = page.split('id="witness-heading"', 1)[1].split("</section>", 1)[0]
    # The witness sits with the violations, above the lanes.
    assert (page.index('id="violations-heading"') < page.index('id="witness-heading"')
            < page.index('id="lanes-heading"'))
    for entry in violation.witness:
        assert html.escape(entry["residual"]) in panel
    # The same session under a violation of another session: a message, no witness.
    alpha = session_id(team, "alpha")
    wrong = client.get(f"/w/acme/sessions/{alpha}/", {"violation": violation.id})
    assert wrong.status_code == 400
    assert f"Violation {violation.id} is not one of this session" in wrong.content.decode()
    assert 'id="witness-heading"' not in wrong.content.decode()


def test_a_long_session_shows_one_page_of_steps(team, run, start):
    events = [{"labels": ["drop"] if i % 250 == 7 else []} for i in range(1000)]
    add_sessions(team, {"long": events})
    run = start(team)
    client = client_of(team.auditor)
    long = session_id(team, "long")
    response = client.get(f"/w/acme/sessions/{long}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert len(re.findall(r'<tr id="step-\d+"', page)) == 100
    assert 'id="step-99"' in page and 'id="step-100"' not in page
    assert len(re.findall(r'<td class="lane ', page)) == 100 * 3  # lanes: the same window
    # Selecting a step opens its page; the lanes follow.
    response = client.get(f"/w/acme/sessions/{long}/", {"run": run.id, "step": 757})
    page = response.content.decode()
    rows = [int(s) for s in re.findall(r'<tr id="step-(\d+)"', page)]
    assert rows == list(range(700, 800))
    assert lane_text(page, "no_drop", 757) == (
        "violated after step 757, 1 violation detected at step 757")
    assert 'aria-current="page" class="current"><span class="sr-only">Page </span>8<' in page
    assert "After step 757" in page
    last = client.get(f"/w/acme/sessions/{long}/", {"page": 10}).content.decode()
    assert [int(s) for s in re.findall(r'<tr id="step-(\d+)"', last)] == list(range(900, 1000))


def test_steps_and_pages_out_of_range_get_a_message(team, run):
    client = client_of(team.auditor)
    alpha = session_id(team, "alpha")
    response = client.get(f"/w/acme/sessions/{alpha}/", {"step": 99})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Step 99 is beyond the end of this session: its steps run from 0 to 5." in page
    assert 'id="step-0"' in page  # the timeline is still there
    for params, message in [({"step": "-1"}, "“-1” is not a valid step number"),
                            ({"step": str(2**40)}, f"Step {2**40} is beyond the end"),
                            ({"violation": str(2**40)}, f"Violation {2**40} is not one of"),
                            ({"page": "0"}, "“0” is not a valid page number"),
                            ({"page": "4"}, "There is no page 4 of steps")]:
        response = client.get(f"/w/acme/sessions/{alpha}/", params)
        assert response.status_code == 400 and html.escape(message) in response.content.decode()
    partial = client.get(f"/w/acme/sessions/{alpha}/residual", {"step": 6})
    assert partial.status_code == 400
    assert "Step 6 is beyond the end" in partial.content.decode()
    missing = client.get("/w/acme/sessions/999999/")
    assert missing.status_code == 404
    assert "There is no session 999999 in this workspace." in missing.content.decode()


def test_a_clean_session_says_so_first(team, run):
    """gamma logs out and neither drops nor takes: the answer on top is that nothing was
    violated, before the lanes; rules without violations are not listed one by one."""
    page = client_of(team.auditor).get(
        f"/w/acme/sessions/{session_id(team, 'gamma')}/").content.decode()
    listed = page.split('id="violations-heading"', 1)[1].split("</section>", 1)[0]
    assert "None: no rule was violated in this session." in listed
    assert "<h3>" not in listed
    assert page.index('id="violations-heading"') < page.index('id="lanes-heading"')


def test_a_session_without_results_still_shows_its_steps(team, run):
    add_sessions(team, {"late": [{"labels": ["drop"], "input": "arrived after the audit"}]})
    page = client_of(team.auditor).get(
        f"/w/acme/sessions/{session_id(team, 'late')}/").content.decode()
    assert f"Audit run #{run.id} has no results for this session" in page
    assert "arrived after the audit" in page and 'id="step-0"' in page
    assert SessionResult.objects.filter(session__external_id="late").count() == 0


def test_json_values_show_indented_and_text_as_it_came(team, run):
    """Indented JSON wraps at its own lines in a narrow column, never inside its tokens."""
    add_sessions(team, {"calls": [{"labels": [], "input": "pay {the bill}",
                                   "output": {"tool": "pay", "args": {"to": "UK12"}}}]})
    page = client_of(team.auditor).get(
        f"/w/acme/sessions/{session_id(team, 'calls')}/").content.decode()
    shown = re.search(r'<pre class="value json"><code>(.*?)</code></pre>', page, re.DOTALL)
    assert shown, "the JSON output is not shown as indented JSON"
    text = html.unescape(shown.group(1))
    assert json.loads(text) == {"tool": "pay", "args": {"to": "UK12"}}  # keys in stored order
    assert text == json.dumps(json.loads(text), indent=2) and '\n    "to": "UK12"\n' in text
    assert '<code class="value">pay {the bill}</code>' in page  # text is not reformatted


def test_pages_work_before_any_audit(team):
    client = client_of(team.auditor)
    listed = client.get("/w/acme/sessions/").content.decode()
    assert "No audit has run in this workspace yet" in listed
    assert set(rows_of(listed)) == {"alpha", "beta", "gamma"}
    page = client.get(f"/w/acme/sessions/{session_id(team, 'beta')}/", {"step": 1})
    assert page.status_code == 200 and 'id="step-1"' in page.content.decode()


def test_outsiders_and_other_workspaces_get_404(team, run, start):
    alpha = session_id(team, "alpha")
    outsider = client_of(team.outsider)
    for url in ("/w/acme/sessions/", f"/w/acme/sessions/{alpha}/",
                f"/w/acme/sessions/{alpha}/residual?step=0"):
        assert outsider.get(url).status_code == 404, url
    assert Client().get("/w/acme/sessions/").status_code == 302  # sign in first
    # A member of both workspaces cannot reach one's sessions or runs through the other.
    other = make_team("other")
    add_rule(other, "no_drop", "G !drop")
    theirs = add_sessions(other, {"theirs": [{"labels": ["drop"]}]})["theirs"]
    their_run = start(other)
    member = client_of(team.auditor)
    assert member.get(f"/w/acme/sessions/{theirs.id}/").status_code == 404
    assert member.get(f"/w/acme/sessions/{alpha}/", {"run": their_run.id}).status_code == 404
    assert member.get("/w/acme/sessions/", {"run": their_run.id}).status_code == 404


def test_pages_obey_the_content_security_policy(team, run):
    client = client_of(team.auditor)
    beta = session_id(team, "beta")
    violation = ViolationRecord.objects.filter(result__session_id=beta).first()
    for url in ("/w/acme/sessions/", f"/w/acme/sessions/{beta}/?violation={violation.id}",
                f"/w/acme/sessions/{beta}/residual?step=0"):
        response = client.get(url)
        page = response.content.decode()
        assert "'unsafe-inline'" not in response["Content-Security-Policy"]
        assert "style=" not in page and "<style" not in page
        assert not re.search(r"<script(?![^>]*\bsrc=)", page), url  # only scripts from files
        assert not re.search(r"<[^>]+\son[a-z]+=", page), url  # no inline event handlers
        assert "{#" not in page and "{%" not in page, url  # no template text leaks
