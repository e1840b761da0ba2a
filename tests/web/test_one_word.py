"""One word for each verdict on every export and page of one audit (issue 26, item 2).

One audit of a small log (two rule versions, a run comparison and an impact check beside it):
every export (report CSV, violations CSV, report.json from the page and the API, the API's
results and lanes, the run comparison as JSON and CSV, the impact check) and every page of it
(report, evidence report, sessions list, each session with its residual panel at the last step,
the message chart, the run comparison, the impact check) says complied, violated or open, never
satisfied or pending; and the sessions, all finished, never read "still owed" or "a later step
can still break it" once their last step is behind them.  The JSON API keeps the old value
under ``<field>_was`` (and the totals' ``satisfied``/``pending``) for one release: those
deprecated fields are the only place the old names remain."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.test import Client

from studio.audits import services as audits
from studio.monitor.verdicts import OLD_NAMES_UNTIL
from studio.rules import services as rules
from tests.audits.helpers import add_rule, add_sessions, make_team

pytestmark = pytest.mark.django_db

OLD_WORDS = re.compile(r"\b(satisfied|pending)\b", re.IGNORECASE)
AFTER_THE_END = re.compile(r"still owed|can still break|later steps can still",
                           re.IGNORECASE)
VERDICT_WORDS = {"complied", "violated", "open"}
# Fields that hold a verdict in the JSON answers (their values must be one of the words).
VERDICT_FIELDS = {"verdict", "session_verdict", "final", "trac_verdict", "verdict_before",
                  "verdict_after", "verdicts"}
# Kept for one release with the old names (docs/api-verdicts.md).
DEPRECATED_KEYS = {"satisfied", "pending", "to_satisfied"}


@pytest.fixture
def world(django_capture_on_commit_callbacks):
    team = make_team()
    add_rule(team, "never_delete", "G !delete")           # complied with everywhere but b
    add_rule(team, "logs_out", "F logout")                # a ends without logging out
    answered = add_rule(team, "answered", "G(request -> F answer)")
    team.sessions = add_sessions(team, {
        "a": [{"labels": ["request"]}, {"labels": ["answer"]}, {"labels": []}],
        "b": [{"labels": ["delete"]}, {"labels": ["logout"]}],
        "c": [{"labels": ["request"]}, {"labels": ["answer", "logout"]}],
        # answered late: the draft (the next step) would call it violated
        "d": [{"labels": ["request"]}, {"labels": []}, {"labels": ["answer", "logout"]}],
    })
    with django_capture_on_commit_callbacks(execute=True):
        team.before = audits.start_audit(team.workspace, None, None, team.auditor)
    add_rule(team, "logs_out", "F logout | G !delete")    # version 2: a now complies
    with django_capture_on_commit_callbacks(execute=True):
        team.run = audits.start_audit(team.workspace, None, None, team.auditor)
    team.answered = answered.rule
    rules.new_version(answered.rule, team.author, "G(request -> X answer)")
    client = Client()
    client.force_login(team.reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"/api/w/acme/rules/{answered.rule.id}/versions/2/impact", "{}",
                              content_type="application/json")
    assert started.status_code == 202, started.content
    return team


def reader(team) -> Client:
    client = Client()
    client.force_login(team.reviewer)
    return client


def body(response) -> str:
    assert response.status_code == 200, response.content[:500]
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def visible(html: str) -> str:
    """What a person reads of a page: its text, without tags, scripts and styles."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.DOTALL)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def verdicts_in_json(value, path="") -> list[tuple[str, str]]:
    """(path, value) of every verdict a JSON answer gives, deprecated fields left out."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("_was") or key in DEPRECATED_KEYS:
                continue
            if key in VERDICT_FIELDS:
                items = item if isinstance(item, list) else [item]
                found += [(f"{path}.{key}", v) for v in items if v is not None]
            else:
                found += verdicts_in_json(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += verdicts_in_json(item, f"{path}[{i}]")
    return found


def without(value, dropped):
    """``value`` without the keys ``dropped`` says to drop, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, dropped) for k, v in value.items() if not dropped(k)}
    if isinstance(value, list):
        return [without(v, dropped) for v in value]
    return value


def deprecated(key: str) -> bool:
    return key.endswith("_was") or key in DEPRECATED_KEYS


def mid_session(key: str) -> bool:
    """A witness reads the steps of a violation, before the session's end: "still owed" is
    right there."""
    return key in ("witness", "witnesses")


def exports(team) -> dict[str, str]:
    client, run, before = reader(team), team.run.id, team.before.id
    return {
        "report.csv": body(client.get(f"/w/acme/audits/{run}/report.csv")),
        "violations.csv": body(client.get(f"/w/acme/audits/{run}/violations.csv")),
        "api report.csv": body(client.get(f"/api/w/acme/audits/{run}/report.csv")),
        "compare.csv": body(client.get(f"/api/w/acme/audits/{before}/compare/{run}",
                                       {"format": "csv"})),
        "page compare.csv": body(client.get("/w/acme/audits/compare",
                                            {"before": before, "after": run,
                                             "format": "csv"})),
    }


def json_exports(team) -> dict[str, object]:
    client, run, before = reader(team), team.run.id, team.before.id
    out = {
        "report.json": json.loads(body(client.get(f"/w/acme/audits/{run}/report.json"))),
        "api report.json": json.loads(body(client.get(f"/api/w/acme/audits/{run}/report.json"))),
        "results": json.loads(body(client.get(f"/api/w/acme/audits/{run}/results"))),
        "compare.json": json.loads(body(client.get(f"/api/w/acme/audits/{before}/compare/{run}"))),
        "page compare.json": json.loads(body(client.get(
            "/w/acme/audits/compare", {"before": before, "after": run, "format": "json"}))),
        "impact": json.loads(body(client.get(
            f"/api/w/acme/rules/{team.answered.id}/versions/2/impact", {"witnesses": "true"}))),
    }
    for name, session in team.sessions.items():
        out[f"lanes {name}"] = json.loads(body(client.get(
            f"/api/w/acme/audits/{run}/sessions/{session.id}")))
    return out


def pages(team) -> dict[str, str]:
    client, run, before = reader(team), team.run.id, team.before.id
    out = {
        "report": body(client.get(f"/w/acme/audits/{run}/")),
        "evidence": body(client.get(f"/w/acme/audits/{run}/evidence")),
        "sessions": body(client.get("/w/acme/sessions/", {"run": run})),
        "compare": body(client.get("/w/acme/audits/compare", {"before": before, "after": run})),
        "impact": body(client.get(f"/w/acme/rules/{team.answered.id}/impact", {"v": 2})),
    }
    for name, session in team.sessions.items():
        last = session.steps - 1
        out[f"session {name}"] = body(client.get(f"/w/acme/sessions/{session.id}/",
                                                 {"run": run}))
        out[f"residual {name} at its end"] = body(client.get(
            f"/w/acme/sessions/{session.id}/residual", {"run": run, "step": last}))
        out[f"message chart {name}"] = body(client.get(f"/w/acme/sessions/{session.id}/msc",
                                                       {"run": run}))
    return out


def test_every_export_says_complied_violated_or_open(world):
    files = exports(world)
    for name, text in files.items():
        assert not OLD_WORDS.search(text), (name, OLD_WORDS.search(text), text[:600])
        assert not AFTER_THE_END.search(text), (name, text[:600])
    table = list(csv.reader(io.StringIO(files["report.csv"])))
    verdict_columns = [i for i, h in enumerate(table[0]) if h.endswith((" verdict", " final"))]
    said = {row[i] for row in table[1:] for i in verdict_columns}
    assert said <= VERDICT_WORDS and {"complied", "violated"} <= said, said
    compared = list(csv.DictReader(io.StringIO(files["compare.csv"])))
    assert compared and {r["verdict_before"] for r in compared} | {
        r["verdict_after"] for r in compared} <= VERDICT_WORDS

    for name, document in json_exports(world).items():
        given = verdicts_in_json(document)
        assert given, name  # the walk found the verdicts
        assert {v for _, v in given} <= VERDICT_WORDS, (name, given)
        text = json.dumps(without(document, deprecated))
        assert not OLD_WORDS.search(text), (name, OLD_WORDS.search(text))
        at_the_end = json.dumps(without(document, lambda k: deprecated(k) or mid_session(k)))
        assert not AFTER_THE_END.search(at_the_end), (name, AFTER_THE_END.search(at_the_end))


def test_every_page_says_complied_violated_or_open(world):
    for name, html in pages(world).items():
        text = visible(html)
        assert not OLD_WORDS.search(text), (name, text[max(0, OLD_WORDS.search(text).start()
                                                           - 200):][:400])
        found = AFTER_THE_END.search(text)
        if name != "impact":  # its witnesses read the steps before the end
            assert not found, (name, text[max(0, found.start() - 200):][:400])
        assert re.search(r"\b(complied|violated)\b", text), name
    # The finished session that complied says so, with nothing owed.
    panel = visible(pages(world)["residual c at its end"])
    assert "complied, nothing owed" in panel


def test_the_old_names_stay_one_release_under_deprecated_fields(world):
    client = reader(world)
    report = json.loads(body(client.get(f"/api/w/acme/audits/{world.run.id}/report.json")))
    (never_delete,) = [r for r in report["rules"] if r["rule"] == "never_delete"]
    assert (never_delete["complied"], never_delete["satisfied"]) == (3, 3)
    assert (never_delete["open"], never_delete["pending"]) == (0, 0)
    session = report["sessions"][0]
    assert [{"complied": "satisfied"}.get(v, v) for v in session["verdicts"]] == (
        session["verdicts_was"])
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert schema["ResultOut"]["properties"]["verdict_was"]["deprecated"] is True
    assert OLD_NAMES_UNTIL in schema["ReportRule"]["properties"]["satisfied"]["description"]
