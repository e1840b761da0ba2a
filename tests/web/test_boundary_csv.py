"""Every CSV the studio serves goes through the one neutraliser (``studio.exports``).

The run comparison wrote its own CSV and neutralised only ``= + - @``, tab and CR: a session
named ``＝1+1`` or `` =1+1`` reached the spreadsheet raw.  Here the CSV endpoints are found by
asking every GET route (pages and API) for CSV, with sessions, a rule and upload errors named
to be run as formulas; every cell of every CSV answer is checked against an independent
description of what a spreadsheet runs.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from studio.audits.models import AuditRun
from studio.traces.models import UploadError
from tests.audits.helpers import add_rule, add_sessions, make_team, make_upload
from tests.web.test_report_pages import client_for

pytestmark = pytest.mark.django_db

# Text a spreadsheet would run, each behind a different disguise.
HOSTILE = [
    "=1+1", "+1+1", "-1+1", "@SUM(1)", "\t=1+1", "\r=1+1", "\n=1+1", " =1+1", "\u00a0=1+1",
    "\u200b=1+1", "\ufeff=1+1", "\u202e=1+1", "\u00ad=1+1", "\u2062=1+1", "\U000e0041=1+1",
    "\u3164=1+1", "\x7f=1+1", "\uff1d1+1", "\uff0b1", "\uff0d1", "\uff201", "\ufe661+1",
    "\ufe621", "\ufe631", "\ufe6b1", "\u22121+1", '=HYPERLINK("http://evil.example","x")',
]

_PARAMETER = re.compile(r"<(?:[^>:]+:)?(?P<name>[^>]+)>")
_SIGNS = "=+-@"


def spreadsheet_runs(cell: str) -> bool:
    """The oracle: a cell starting with tab, CR or LF, or whose first character that is
    neither blank nor drawn (whitespace, format, control or filler characters) reads as one of
    = + - @ (NFKC folds the full-width and small forms onto them; U+2212 is minus)."""
    if cell[:1] in ("\t", "\r", "\n"):
        return True
    for char in cell:
        name = unicodedata.name(char, "")
        if (char.isspace() or unicodedata.category(char) in ("Cf", "Cc", "Zs")
                or "FILLER" in name):
            continue
        return unicodedata.normalize("NFKC", char) in _SIGNS or char == "\u2212"
    return False


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.fixture
def hostile_world(django_capture_on_commit_callbacks):
    team = make_team()
    upload = make_upload(team)
    UploadError.objects.bulk_create([UploadError(upload=upload, line=line, reason=name,
                                                 pointer=name)
                                     for line, name in enumerate(HOSTILE, start=1)])
    # Each session deletes: version 1 is violated, version 2 satisfied, so the comparison of
    # the two runs lists every one of them.
    add_sessions(team, {name: [{"labels": ["delete"]}] for name in HOSTILE}, upload=upload)
    add_rule(team, "=evil_rule", "G !delete")
    team.before = _audit(team, django_capture_on_commit_callbacks)
    add_rule(team, "=evil_rule", "G !logout")
    team.after = _audit(team, django_capture_on_commit_callbacks)
    team.upload = upload
    return team


def _audit(team, capture) -> AuditRun:
    with capture(execute=True):
        response = client_for(team.auditor).post("/w/acme/audits/", {"rule_set": "",
                                                                     "upload": ""})
    assert response.status_code == 302, response.content[:300]
    run = AuditRun.objects.order_by("-id").first()
    assert run.status == "done"
    return run


def _get_routes(resolver: URLResolver | None = None, prefix: str = ""):
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _get_routes(entry, pattern)
        elif isinstance(entry, URLPattern) and "(?P<" not in pattern and "^" not in pattern:
            yield pattern


def _url(route: str, team) -> str:
    ids = {"slug": "acme", "upload_id": team.upload.id, "audit_id": team.before.id,
           "before_id": team.before.id, "after_id": team.after.id,
           "session_id": team.before.results.first().session_id,
           "rule_id": team.before.rule_versions.first().rule_id}
    path = "/" + _PARAMETER.sub(lambda m: str(ids.get(m["name"], 1)), route)
    # The comparison page names its runs in the query; every route is also asked for CSV.
    return f"{path}?format=csv&before={team.before.id}&after={team.after.id}"


def _csv_answers(team) -> dict[str, list[list[str]]]:
    client = client_for(team.auditor)
    found = {}
    for route in sorted(set(_get_routes())):
        if route.startswith("admin/") or route.startswith("accounts/logout"):
            continue
        url = _url(route, team)
        response = client.get(url)
        if response.status_code != 200 or "csv" not in response.get("Content-Type", ""):
            continue
        body = (b"".join(response.streaming_content) if response.streaming
                else response.content)
        found[url] = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    return found


def test_the_hostile_names_are_what_a_spreadsheet_runs():
    assert all(spreadsheet_runs(name) for name in HOSTILE)
    assert not any(spreadsheet_runs(name) for name in ("a=1", "'=1", "1-2", "x", ""))


def test_every_csv_answer_neutralises_every_cell(hostile_world):
    answers = _csv_answers(hostile_world)
    before, after, upload = hostile_world.before.id, hostile_world.after.id, hostile_world.upload.id
    found = {url.split("?")[0] for url in answers}
    # The walk found the CSVs there are (it cannot pass by finding none).
    assert {f"/w/acme/audits/{before}/report.csv", f"/w/acme/audits/{before}/violations.csv",
            f"/w/acme/uploads/{upload}/errors.csv", "/w/acme/audits/compare",
            f"/api/w/acme/audits/{before}/report.csv",
            f"/api/w/acme/audits/{before}/violations.csv",
            f"/api/w/acme/uploads/{upload}/errors.csv",
            f"/api/w/acme/audits/{before}/compare/{after}"} <= found, found
    raw = [(url, cell) for url, rows in answers.items() for row in rows for cell in row
           if spreadsheet_runs(cell) and not is_number(cell)]
    assert raw == []
    # And the hostile names are there, each behind the quote that makes it text.
    for url, rows in answers.items():
        if "compare" in url or "violations" in url or "errors" in url:
            cells = {cell for row in rows for cell in row}
            missing = [name for name in HOSTILE if "'" + name not in cells]
            assert missing == [], (url, missing)

