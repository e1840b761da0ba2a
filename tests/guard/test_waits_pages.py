"""Every decision waiting for a person can be reached, a page at a time (issue 24, item 8):
through the API (limit/offset, X-Total-Count) and on the page (Older/Newer)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from studio.guard.models import DecisionStatus, GuardDecision
from tests.live.conftest import RULES, approve, owner, workspace  # noqa: F401

pytestmark = pytest.mark.django_db

PENDING = 45


@pytest.fixture
def staff(owner):
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def decisions(workspace):
    later = timezone.now() + timedelta(hours=1)
    rows = [GuardDecision.objects.create(
        workspace=workspace, session=f"s{i}", decision_id=f"d{i}", request_hash="h",
        proposed={"output": {"tool": f"tool{i}", "args": {}}},
        answer={"decision": "ask_human", "reason": "asked", "rules_at_risk": [],
                "human_default": "stop"},
        decision="ask_human", status=DecisionStatus.PENDING, expires_at=later)
        for i in range(PENDING)]
    # One overdue: it takes its default and is on no page.
    overdue = rows[7]
    overdue.expires_at = timezone.now() - timedelta(seconds=1)
    overdue.save()
    return [row.decision_id for row in rows if row.pk != overdue.pk]


def test_the_api_pages_through_every_pending_decision_oldest_first(staff, workspace, decisions):
    url = f"/api/w/{workspace.slug}/guard/decisions"
    first = staff.get(url)
    assert first.status_code == 200 and len(first.json()) == 44  # default 50 a page
    assert first["X-Total-Count"] == "44"
    seen = []
    for offset in range(0, 60, 20):
        page = staff.get(f"{url}?limit=20&offset={offset}")
        assert page.status_code == 200 and page["X-Total-Count"] == "44"
        seen += [row["decision_id"] for row in page.json()]
    assert seen == decisions
    assert staff.get(f"{url}?limit=0").status_code == 200  # clamped to at least one
    assert len(staff.get(f"{url}?limit=5000").json()) == 44
    assert staff.get(f"{url}?limit=x").status_code == 422


def test_the_page_shows_twenty_at_a_time_with_older_and_newer(staff, workspace, decisions):
    url = f"/w/{workspace.slug}/guard/pending"
    first = staff.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "Waiting for a person (44)" in first and "Showing 1&ndash;20 of 44" in first
    assert "?page=2" in first and "Older" not in first
    last = staff.get(f"{url}?page=3").content.decode()  # a page of its own without htmx
    assert "Showing 41&ndash;44 of 44" in last and "Newer" not in last and "Older" in last
    assert "Back to Live" in last
    shown = []
    for page in (1, 2, 3):
        body = staff.get(f"{url}?page={page}", headers={"HX-Request": "true"}).content.decode()
        shown += [i for i in range(PENDING) if f"Session s{i}</strong>" in body]
    assert [f"d{i}" for i in shown] == decisions
    assert "Showing 41&ndash;44" in staff.get(f"{url}?page=99").content.decode()
