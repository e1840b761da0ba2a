"""Ground-truth labels: the readers (JSONL and CSV, line numbers, nothing dropped silently), the
import service, the API routes, and the demo's labels derived from the TextWorld game's record."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from studio.audits import groundtruth
from studio.audits.groundtruth import Label, LineError, read_csv, read_jsonl
from studio.audits.models import GroundTruth
from studio.web.demo import make_groundtruth
from studio.workspaces import services as ws

from .helpers import add_sessions, make_team


def test_jsonl_lines_are_read_or_refused_with_their_numbers():
    lines = [b'{"session": 7, "rule": "r", "violated": false}\n', b"\n",
             b'{"session": "s", "rule": "r", "violated": 1}\n', b"[1]\n",
             b'{"session": "s", "rule": "", "violated": true}\n', b"\xff\xfe\n",
             b'{"session": "s\\ud800", "rule": "r", "violated": true}\n',
             b'{"session": "s", "rule": "r", "violated": true, "note": 5}\n',
             b'\xef\xbb\xbf{"session": "bom", "rule": "r", "violated": true}\n']
    got = list(read_jsonl(lines))
    assert got == [
        Label(1, "7", "r", False),
        LineError(3, "violated must be true or false, not 1"),
        LineError(4, 'a line must be a JSON object {"session": ..., "rule": ..., '
                     '"violated": true|false}'),
        LineError(5, "rule is missing or empty"),
        LineError(6, "not UTF-8 text"),
        LineError(7, "session must not contain a lone surrogate (such as \\ud800: half of a "
                     "UTF-16 pair, which no UTF-8 text can hold)"),
        LineError(8, "note must be text, not int"),
        # A byte-order mark is only skipped on line 1.
        LineError(9, "not valid JSON (Unexpected UTF-8 BOM (decode using utf-8-sig) at column "
                     "1)"),
    ]
    assert list(read_jsonl(['\ufeff{"session": "a", "rule": "r", "violated": true}'])) == [
        Label(1, "a", "r", True)]


def test_csv_columns_in_any_order_with_quoted_cells():
    text = ('Rule,Violated,Session,Note\n'
            'r,YES,"a, with comma",\n'
            'r,0,b,"two\nlines"\n'
            '\n'
            'r,,c,\n'
            'r,true\n')
    got = list(read_csv(io.StringIO(text)))
    assert got == [Label(2, "a, with comma", "r", True, ""),
                   Label(4, "b", "r", False, "two\nlines"),  # the record ends on line 4
                   LineError(6, "violated is missing"),
                   LineError(7, "session is missing or empty")]


@pytest.mark.django_db
def test_a_label_given_again_replaces_the_stored_one_and_absent_notes_are_kept():
    team = make_team()
    add_sessions(team, {"a": [{"labels": []}]})
    first = groundtruth.import_labels(team.workspace, io.BytesIO(
        b'{"session": "a", "rule": "r", "violated": true, "note": "seen by Kim"}\n'
        b'{"session": "b", "rule": "r", "violated": false}\n'), "one.jsonl", by=team.auditor)
    assert (first.created, first.sessions_not_loaded, first.unknown_rules) == (2, 1, ["r"])
    second = groundtruth.import_labels(team.workspace, io.BytesIO(
        b"session,rule,violated\na,r,false\nb,r,false\n"), "two.csv")
    assert (second.created, second.changed, second.unchanged) == (0, 1, 1)
    a = GroundTruth.objects.get(session="a")
    assert (a.violated, a.note, a.source, a.imported_by) == (False, "seen by Kim", "two.csv",
                                                             None)
    assert GroundTruth.objects.get(session="b").source == "one.jsonl"  # unchanged: untouched


@pytest.mark.django_db
def test_the_api_stores_labels_and_names_refused_ones_by_index():
    team = make_team()
    client = Client()
    client.force_login(team.auditor)
    body = {"labels": [{"session": "s1", "rule": "r", "violated": True},
                       {"session": "s2", "rule": "r"},
                       "nonsense",
                       {"session": "s3", "rule": "r", "violated": False, "note": "checked"}],
            "source": "review board"}
    response = client.post("/api/w/acme/ground-truth", json.dumps(body),
                           content_type="application/json")
    assert response.status_code == 207, response.content
    answer = response.json()
    assert answer["stored"] == 2 and [e["index"] for e in answer["errors"]] == [1, 2]
    assert answer["errors"][0]["reason"] == "violated is missing"
    listed = client.get("/api/w/acme/ground-truth", {"rule": "r"}).json()
    assert listed["count"] == 2
    assert listed["items"][1] == {"session": "s3", "rule": "r", "violated": False,
                                  "note": "checked", "source": "review board",
                                  "imported_at": listed["items"][1]["imported_at"],
                                  "imported_by": "auditor-acme"}
    ok = client.post("/api/w/acme/ground-truth", json.dumps({"labels": []}),
                     content_type="application/json")
    assert ok.status_code == 200 and ok.json()["stored"] == 0
    # Only auditors store labels; outsiders see nothing.
    author = Client()
    author.force_login(team.author)
    assert author.post("/api/w/acme/ground-truth", json.dumps(body),
                       content_type="application/json").status_code == 403
    outsider = Client()
    outsider.force_login(team.outsider)
    assert outsider.get("/api/w/acme/ground-truth").status_code == 404
    _, token = ws.create_token(team.workspace, "reader", ["author"], team.author)
    assert Client().get("/api/w/acme/ground-truth",
                        headers={"Authorization": f"Bearer {token}"}).json()["count"] == 2
    assert GroundTruth.objects.count() == 2


def step(n, command, action, inventory=((), ()), location=("kitchen", "kitchen"), facts=()):
    return {"session": "s", "step": n, "output": command,
            "env": {"logic_action": action, "inventory_before": list(inventory[0]),
                    "inventory_after": list(inventory[1]), "location_before": location[0],
                    "location_after": location[1], "facts_added": list(facts),
                    "facts_removed": []}}


def test_the_demo_labels_read_the_games_record_not_the_command_text():
    knife = (["apple"], ["apple", "knife"])
    held = (["apple", "knife"], ["apple", "knife"])
    events = [
        step(0, "take knife", "take", knife, facts=["in(knife, I)"]),
        # A refused command: the recorder repeats the previous step's action and facts.
        step(1, "slice tomato with knife", "take", held, facts=["in(knife, I)"]),
        step(2, "look", "look", held),
        step(3, "go west", "go west", held, ("kitchen", "hall"), ["at(P, hall)"]),
        step(4, "drop knife now", "drop", (["apple", "knife"], ["apple"]), ("hall", "hall"),
             ["at(knife, hall)"]),
    ]
    assert make_groundtruth.executed(events, 1) is None
    assert make_groundtruth.knife_needed(events)[0] is True  # the slice cut nothing
    assert make_groundtruth.no_drop(events)[0] is True
    assert make_groundtruth.stay_in_kitchen(events)[0] is True
    # The take at step 0 was followed by a refused command: undecided.
    assert make_groundtruth.take_then_examine(events[:3]) is None
    assert make_groundtruth.take_then_examine(events[2:]) == (False, "no take executed")
    events[1] = step(1, "go east", "go east", held, ("kitchen", "hall"), ["at(P, hall)"])
    assert make_groundtruth.take_then_examine(events)[0] is True


def test_the_shipped_demo_labels_are_what_the_script_derives():
    demo = make_groundtruth.HERE
    with open(demo / "textworld.jsonl", encoding="utf-8") as handle:
        derived = list(make_groundtruth.labels(handle))
    with open(demo / "textworld_groundtruth.jsonl", encoding="utf-8") as handle:
        shipped = [json.loads(line) for line in handle]
    assert derived == shipped
    sessions = {label["session"] for label in shipped}
    assert len(sessions) == 40
    decided = {rule: [x for x in shipped if x["rule"] == rule] for rule in make_groundtruth.RULES}
    assert {rule: len(found) for rule, found in decided.items()} == {
        "no_drop": 40, "stay_in_kitchen": 40, "knife_needed": 40, "take_then_examine": 34}
