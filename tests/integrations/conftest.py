"""What every integration test starts from: no monitor, context or guard policy cached from an
earlier test (each test's live server reads the database afresh), and the workspace's owner."""

from __future__ import annotations

import pytest

from studio.guard import services as guard_services
from studio.live.ingest import clear_caches

PASSWORD = "pw-owner-123"


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_caches()
    guard_services.forget_policies()
    yield
    clear_caches()
    guard_services.forget_policies()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner", password=PASSWORD)
