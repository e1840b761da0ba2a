"""The message sequence chart page through real requests: the merge scenario of paper 001
(figure 2) uploaded as multi-agent JSONL and audited; lifelines, messages, the in-transit update
drawn dashed, the guard's values at the choice event in both readings, the rules' verdicts; the
causal past of a selected event; escaping; mistakes; outsiders."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from django.test import Client

from studio.audits import services as audits
from studio.causal import build_msc, causal_past
from studio.causal.examples import MERGE_CHOICE_INDEX, UPDATE_SEND_INDEX, merge_scenario
from studio.traces import intake, loading
from studio.traces.models import TraceSession
from tests.audits.helpers import add_rule, add_sessions, make_team

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"
DEMO = Path(__file__).resolve().parents[2] / "studio" / "web" / "demo" / "msc_merge.jsonl"
NO_FAILURE = 'G !(data.status == "failed")'


def jsonl(events) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in events).encode()


@pytest.fixture
def team(team, settings, tmp_path):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    add_rule(team, "no_failure", NO_FAILURE)
    return team


def upload_and_audit(team, content: bytes, capture, name="merge.jsonl"):
    """The log through the upload services, then an audit of the workspace's rules."""
    with capture(execute=False):
        upload, created = intake.create_upload(team.workspace, io.BytesIO(content), "jsonl",
                                               by=team.auditor, filename=name)
    assert created
    upload = loading.parse_upload(upload.id)
    assert upload.status == "parsed" and upload.lines_bad == 0, upload.error
    with capture(execute=True):
        run = audits.start_audit(team.workspace, None, upload, team.auditor)
    run.refresh_from_db()
    assert run.status == "done", run.error
    return upload, run


@pytest.fixture
def merge(team, django_capture_on_commit_callbacks):
    _, run = upload_and_audit(team, jsonl(merge_scenario()), django_capture_on_commit_callbacks)
    session = TraceSession.objects.get(workspace=team.workspace, external_id="msc-merge-demo")
    return session, run


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(team, session, **params):
    return client_of(team.auditor).get(f"/w/acme/sessions/{session.id}/msc", params)


def svg_of(response) -> ET.Element:
    text = response.content.decode()
    found = re.search(r"<svg .*?</svg>", text, re.S)
    assert found, "no chart on the page"
    return ET.fromstring(found.group(0))  # also proves the SVG is well-formed XML


def classes(element) -> set[str]:
    return set(element.get("class", "").split())


def event_links(root) -> dict[int, ET.Element]:
    return {int(a.get("id")[len("msc-e"):]): a for a in root.iter(f"{SVG}a")}


# ---------------------------------------------------------------------------------------------

def test_the_merge_chart_shows_lifelines_messages_transit_and_the_guard(team, merge):
    session, run = merge
    response = page(team, session)
    assert response.status_code == 200
    root = svg_of(response)
    assert root.find(f"{SVG}title").text == "Message sequence chart of session msc-merge-demo"
    assert "3 lifelines" in root.find(f"{SVG}desc").text
    heads = [t.text for t in root.iter(f"{SVG}text") if "head-label" in classes(t)]
    assert heads == ["TestRunner", "Orchestrator", "Committer"]

    lines = [e for e in root.iter() if "msg" in classes(e)]
    assert len(lines) == 3  # report-1, proposal-1 delivered; report-2 in transit
    transit = [e for e in lines if "in-transit" in classes(e)]
    assert len(transit) == 1
    assert "report-2" in transit[0].find(f"{SVG}title").text
    assert transit[0].get("marker-end") == "url(#msc-arrow-open)"
    css = (Path(__file__).resolve().parents[2] / "static" / "css" / "msc.css").read_text()
    assert re.search(r"\.msc \.msg\.in-transit \{[^}]*stroke-dasharray", css)  # drawn dashed

    # The choice event (step 9): the guard holds causally, a sequential log says it does not.
    events = event_links(root)
    assert set(events) == set(range(10))
    choice = events[9]
    assert {"ev", "ev-choice"} <= classes(choice)
    guard = [t for t in choice.iter(f"{SVG}text") if "guard" in classes(t)]
    assert len(guard) == 1 and {"guard-true", "disagrees"} <= classes(guard[0])
    assert guard[0].text == "merge_ok: ✓ true · log: false ≠"
    assert "merge_ok: true (causal), false (sequential log), the readings disagree" in (
        choice.find(f"{SVG}title").text)
    body = response.content.decode()
    assert "paper 001&#x27;s merge example (built in)" in body
    assert 'class="disagrees"' in body
    # The rule's verdict: the failure is at step 6, on the TestRunner.
    failing = events[6]
    verdict = [t for t in failing.iter(f"{SVG}tspan") if "verdict-violated" in classes(t)]
    assert verdict and "no_failure" in verdict[0].text
    foot = {t.text for t in root.iter(f"{SVG}text") if "foot-verdict" in classes(t)}
    assert "✗ no_failure: violated, 1 detected here" in foot      # TestRunner
    assert "… no_failure: open" in foot                        # Orchestrator, before step 6
    # The table says it all in words.
    assert re.search(r'<tr id="row-7"><th scope="row"><a href="[^"]*event=7#selection">7</a>'
                     r"</th><td>TestRunner</td><td>send</td><td>report-2 <span class=\"tag "
                     r'tag-transit">in transit</span></td><td>Committer</td>', body)


def test_selecting_an_event_highlights_exactly_its_causal_past(team, merge):
    session, _ = merge
    scenario = merge_scenario()
    msc = build_msc(scenario)

    # An independent computation: everything that reaches the event backwards along the local
    # order and from a receive to its send.
    def reachable(target: int) -> set[int]:
        sends = {e["message"]["id"]: i for i, e in enumerate(scenario)
                 if e.get("message", {}).get("kind") == "send"}
        seen, todo = set(), [target]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            earlier = [j for j in range(i) if scenario[j]["lifeline"] == scenario[i]["lifeline"]]
            if earlier:
                todo.append(earlier[-1])
            message = scenario[i].get("message")
            if message and message["kind"] == "receive":
                todo.append(sends[message["id"]])
        return seen

    for index in (MERGE_CHOICE_INDEX, UPDATE_SEND_INDEX, 4, 0):
        step = scenario[index]["step"]
        expected = {scenario[i]["step"] for i in causal_past(msc, index)}
        assert expected == {scenario[i]["step"] for i in reachable(index)}
        response = page(team, session, event=step)
        assert response.status_code == 200
        events = event_links(svg_of(response))
        marked = {s for s, a in events.items() if "in-past" in classes(a)}
        assert marked == expected, step
        assert [s for s, a in events.items() if "is-selected" in classes(a)] == [step]
    # The decision cannot see the failure (step 6) nor the update (step 7) still in transit.
    response = page(team, session, event=9)
    root = svg_of(response)
    assert "has-selection" in classes(root)
    marked = {s for s, a in event_links(root).items() if "in-past" in classes(a)}
    assert marked == {0, 1, 2, 3, 4, 5, 8, 9}
    body = response.content.decode()
    assert "Its causal past holds <strong>8</strong> events" in body
    assert "Steps in the causal past: 0, 1, 2, 3, 4, 5, 8, 9" in body
    assert re.search(r"<th scope=\"row\">TestRunner</th><td>3 of 5</td><td>step 2</td>", body)
    # Zoom links keep the selection; the chart's size follows the zoom.
    assert re.search(r'href="/w/acme/sessions/%d/msc\?run=\d+&amp;zoom=50&amp;event=9#msc-e9"'
                     % session.id, body)
    small = svg_of(page(team, session, event=9, zoom=50))
    assert int(small.get("width")) * 2 in (int(root.get("width")), int(root.get("width")) + 1)
    assert small.get("viewBox") == root.get("viewBox")


def test_log_text_is_escaped_everywhere(team, django_capture_on_commit_callbacks):
    hostile = "<script>alert(1)</script>"
    events = [
        {"session": "evil", "step": 0, "lifeline": f"A{hostile}", "output": hostile,
         "message": {"id": f"m{hostile}", "peer": f"B{hostile}", "kind": "send"}},
        {"session": "evil", "step": 1, "lifeline": f"B{hostile}", "input": {"x": hostile},
         "message": {"id": f"m{hostile}", "peer": f"A{hostile}", "kind": "receive"}},
        {"session": "evil", "step": 2, "lifeline": f"B{hostile}",
         "data": {"choice": f"g{hostile}", "guard": f"x == \"{hostile}\""}},
    ]
    upload_and_audit(team, jsonl(events), django_capture_on_commit_callbacks, "evil.jsonl")
    session = TraceSession.objects.get(workspace=team.workspace, external_id="evil")
    response = page(team, session, event=2)
    assert response.status_code == 200
    body = response.content.decode()
    assert "<script>alert" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    root = svg_of(response)
    heads = [t.text for t in root.iter(f"{SVG}text") if "head-label" in classes(t)]
    assert heads == [f"A{hostile}", f"B{hostile}"]  # text, not markup, once parsed


def test_an_outsider_gets_404_and_mistakes_get_messages(team, merge):
    session, run = merge
    outsider = client_of(team.outsider)
    assert outsider.get(f"/w/acme/sessions/{session.id}/msc").status_code == 404
    other = make_team("other")
    foreign = add_sessions(other, {"x": [{"lifeline": "a"}]})["x"]
    auditor = client_of(team.auditor)
    assert auditor.get(f"/w/acme/sessions/{foreign.id}/msc").status_code == 404
    assert auditor.get(f"/w/acme/sessions/{session.id}/msc", {"run": 999999}).status_code == 404
    anonymous = Client().get(f"/w/acme/sessions/{session.id}/msc")
    assert anonymous.status_code == 302

    response = page(team, session, event=77, zoom=33)
    assert response.status_code == 400
    body = response.content.decode()
    assert "There is no step 77 in this chart" in body
    assert "“33” is not a zoom level" in body
    assert "<svg" in body  # the chart is still shown
    response = page(team, session, event="x")
    assert response.status_code == 400 and "“x” is not a valid step number" in (
        response.content.decode())


def test_a_log_that_is_not_an_msc_says_why(team, django_capture_on_commit_callbacks):
    events = [{"session": "broken", "step": 0, "lifeline": "B",
               "message": {"id": "m1", "peer": "A", "kind": "receive"}}]
    upload_and_audit(team, jsonl(events), django_capture_on_commit_callbacks, "broken.jsonl")
    session = TraceSession.objects.get(workspace=team.workspace, external_id="broken")
    response = page(team, session)
    assert response.status_code == 200
    body = response.content.decode()
    assert "do not form a message sequence chart" in body
    assert "step 0, lifeline B, message m1: receive without its send" in body
    assert "<svg" not in body


def test_single_agent_sessions_chart_on_one_lifeline(team):
    session = add_sessions(team, {"plain": [{"output": "a"}, {"output": "b"}]})["plain"]
    response = page(team, session)
    assert response.status_code == 200
    heads = [t.text for t in svg_of(response).iter(f"{SVG}text")
             if "head-label" in classes(t)]
    assert heads == ["(no lifeline)"]


@pytest.mark.skipif(not DEMO.exists(), reason="the demo log is not there yet")
def test_the_demo_log_charts(team, django_capture_on_commit_callbacks):
    upload_and_audit(team, DEMO.read_bytes(), django_capture_on_commit_callbacks,
                     "msc_merge.jsonl")
    for session in TraceSession.objects.filter(workspace=team.workspace):
        response = page(team, session)
        assert response.status_code == 200
        root = svg_of(response)
        assert any("ev-choice" in classes(a) for a in root.iter(f"{SVG}a"))
        assert any("guard" in classes(t) for t in root.iter(f"{SVG}text"))
