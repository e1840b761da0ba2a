"""The audit-log page and its CSV through real requests: who may read it, newest first and
paged, the filters (who, what, when), details in words, and a CSV that is the filtered log,
safe in a spreadsheet."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timezone
from unittest import mock

import pytest
from django.test import Client

from studio.workspaces import services as ws
from studio.workspaces.actions import LogAction
from tests.api.world import world  # noqa: F401

LOG = "/w/acme/log/"
CSV = "/w/acme/log/entries.csv"


def _as(world, name: str) -> Client:
    client = Client()
    client.force_login(world.users[name])
    return client


def _rows(html: str) -> list[str]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0] if "<tbody>" in html else ""
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def _csv(response) -> list[dict]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def _at(day: str):
    """Entries recorded inside this block are stamped at noon UTC of ``day``."""
    moment = datetime.fromisoformat(day).replace(hour=12, tzinfo=timezone.utc)
    return mock.patch("django.utils.timezone.now", return_value=moment)


@pytest.mark.parametrize("url", [LOG, CSV])
def test_admins_and_auditors_read_it_other_members_403_outsiders_404(world, url):
    assert _as(world, "ann").get(url).status_code == 200      # admin
    assert _as(world, "aud").get(url).status_code == 200      # auditor
    assert _as(world, "alice").get(url).status_code == 403    # author
    assert _as(world, "rob").get(url).status_code == 403      # reviewer
    assert _as(world, "oscar").get(url).status_code == 404    # another workspace's member
    assert _as(world, "oscar").get(url.replace("acme", "nowhere")).status_code == 404
    assert Client().get(url).status_code == 302               # signed out: to the sign-in page


def test_the_navigation_links_it_for_readers_only(world):
    auditor = _as(world, "aud").get("/w/acme/").content.decode()
    # In the sections bar of every page, and among the workspace page's cards.
    assert auditor.count('href="/w/acme/log/"') == 2
    assert 'href="/w/acme/log/"' not in _as(world, "alice").get("/w/acme/").content.decode()


def test_newest_first_and_paged(world):
    for n in range(60):
        ws.record(world.acme, world.ann, LogAction.RULE_CREATED, None, name=f"rule {n}")
    page = _as(world, "ann").get(LOG).content.decode()
    rows = _rows(page)
    assert len(rows) == 50 and "rule 59" in rows[0] and "rule 10" in rows[-1]
    assert "Rule created" in rows[0] and "Page 1 of 2" in page
    second = _rows(_as(world, "ann").get(LOG + "?page=2").content.decode())
    # The world's own entries (workspace and members) are the oldest.
    assert "rule 9" in second[0] and "Workspace created" in second[-1]


def test_filter_by_person_token_or_the_studio(world):
    token, _ = ws.create_token(world.acme, "nightly job", ["auditor"], by=world.ann)
    ws.record(world.acme, token, LogAction.UPLOAD_CREATED, None, filename="night.jsonl")
    ws.record(world.acme, None, LogAction.LIVE_SESSION_ENDED, None, session="s-1")
    ws.record(world.acme, world.alice, LogAction.RULE_CREATED, None, name="refunds")
    ann = _as(world, "ann")

    by_token = _rows(ann.get(LOG, {"who": f"token:{token.pk}"}).content.decode())
    assert len(by_token) == 1 and "Log uploaded" in by_token[0] and "nightly job" in by_token[0]
    by_studio = _rows(ann.get(LOG, {"who": "studio"}).content.decode())
    # The world's members were added by nobody signed in: the studio too.
    assert "Live session ended" in by_studio[0] and "Rule created" not in str(by_studio)
    assert all("the studio itself" in row for row in by_studio)
    by_alice = _rows(ann.get(LOG, {"who": "person:alice"}).content.decode())
    assert len(by_alice) == 1 and "Rule created" in by_alice[0]
    # A person's own entries leave out those of their tokens.
    by_ann = str(_rows(ann.get(LOG, {"who": "person:ann"}).content.decode()))
    assert "Log uploaded" not in by_ann and f"Token created (token #{token.pk})" in by_ann
    choices = ann.get(LOG).content.decode()
    assert f'value="token:{token.pk}"' in choices and 'value="person:alice"' in choices


def test_filter_by_action_in_words_and_by_dates(world):
    with _at("2026-03-01"):
        ws.record(world.acme, world.ann, LogAction.RULE_SET_LIVE, None, ruleset="payments")
    with _at("2026-03-05"):
        ws.record(world.acme, world.ann, LogAction.RULE_SET_NOT_LIVE, None, ruleset="payments")
    with _at("2026-03-09"):
        ws.record(world.acme, world.ann, LogAction.RULE_SET_LIVE, None, ruleset="refunds")
    ann = _as(world, "ann")
    page = ann.get(LOG).content.decode()
    assert '<option value="rule_set.live">Rule set made live</option>' in page

    live = _rows(ann.get(LOG, {"action": "rule_set.live"}).content.decode())
    assert len(live) == 2 and "refunds" in live[0] and "payments" in live[1]
    march = _rows(ann.get(LOG, {"from": "2026-03-05", "to": "2026-03-09"}).content.decode())
    assert [r.split(" ")[0] for r in march] == ["2026-03-09", "2026-03-05"]
    one_day = _rows(ann.get(LOG, {"from": "2026-03-05", "to": "2026-03-05"}).content.decode())
    assert len(one_day) == 1 and "Rule set no longer live" in one_day[0]
    both = _rows(ann.get(LOG, {"action": "rule_set.live", "to": "2026-03-04"}).content.decode())
    assert len(both) == 1 and "payments" in both[0]


def test_a_filter_that_does_not_fit_is_named_beside_its_field_and_kept(world):
    ann = _as(world, "ann")
    page = ann.get(LOG, {"from": "5 March", "action": "rule.created"})
    html = page.content.decode()
    assert page.status_code == 400
    assert 'id="from-error"' in html and "is not a date" in html
    assert 'value="5 March"' in html and '<option value="rule.created" selected>' in html
    backwards = ann.get(LOG, {"from": "2026-03-09", "to": "2026-03-01"})
    assert backwards.status_code == 400 and 'id="to-error"' in backwards.content.decode()
    assert ann.get(LOG, {"action": "rule.exploded"}).status_code == 400
    assert ann.get(LOG, {"who": "somebody"}).status_code == 400
    assert ann.get(CSV, {"from": "yesterday"}).status_code == 400


def test_every_action_has_its_own_words():
    labels = [label for _, label in LogAction.choices]
    assert len(set(labels)) == len(labels)
    for member in LogAction:
        # Not Django's default label (made from the member's name): someone wrote words.
        assert member.label != member.name.replace("_", " ").title(), member


def test_details_are_words_not_json(world):
    ws.record(world.acme, world.ann, LogAction.GUARD_POLICY_SET, None, ruleset="payments",
              policy={"threshold": 0.3, "interventions": {"refund-cap": "stop"},
                      "guarded_risk": False}, versions=[["refund-cap", 4]])
    html = _as(world, "ann").get(LOG).content.decode()
    row = _rows(html)[0]
    assert "Guard policy changed" in row
    assert "<summary>Details</summary>" in html
    # Nested objects read "name: value", separated by semicolons (jsonb keeps its own order).
    for words in ("threshold: 0.3", "interventions: refund-cap: stop", "guarded risk: no"):
        assert words in row
    assert "refund-cap 4" in row
    main = html.split('<main id="main">', 1)[1]
    assert "{" not in main and "&quot;" not in main


def test_the_csv_is_the_filtered_log_with_formulas_neutralised(world):
    # Usernames may start with + - or @: a spreadsheet would read this one as a formula.
    plus = ws.create_user("+1-1")
    ws.add_member(world.acme, plus, "auditor")
    token, _ = ws.create_token(world.acme, "nightly job", ["auditor"], by=world.ann)
    ws.record(world.acme, plus, LogAction.UPLOAD_CREATED, None, filename="=cmd|'/c calc'!A1")
    ws.record(world.acme, token, LogAction.UPLOAD_CREATED, None, filename="night.jsonl")
    for n in range(70):  # more than one page: the CSV holds them all
        ws.record(world.acme, world.alice, LogAction.RULE_CREATED, None, name=f"r{n}")
    ann = _as(world, "ann")

    response = ann.get(CSV, {"who": "person:+1-1"})
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="audit-log-acme.csv"' in response["Content-Disposition"]
    rows = _csv(response)
    assert len(rows) == 1
    row = rows[0]
    assert row["who"] == "'+1-1"
    assert row["what"] == "Log uploaded" and row["action"] == "upload.created"
    assert row["details"] == "filename: =cmd|'/c calc'!A1"
    assert row["details (JSON)"] == "{\"filename\": \"=cmd|'/c calc'!A1\"}"
    assert datetime.fromisoformat(row["when (UTC)"]).tzinfo is not None

    by_token = _csv(ann.get(CSV, {"who": f"token:{token.pk}"}))
    assert [(r["who"], r["details"]) for r in by_token] == [
        (f"token nightly job (cs_{token.prefix}_…)", "filename: night.jsonl")]

    alice = _csv(ann.get(CSV, {"who": "person:alice", "action": "rule.created"}))
    assert len(alice) == 70
    assert [r["details"] for r in alice[:2]] == ["name: r69", "name: r68"]
    # The page links the download with the same filters.
    assert 'href="/w/acme/log/entries.csv?who=person%3Aalice"' in ann.get(
        LOG, {"who": "person:alice"}).content.decode()
