"""Every guard test starts and ends with empty caches: the live context, the guard policies and
the risk models this process read."""

import pytest

from studio.guard import learning
from studio.guard import services as guard_services
from studio.live.ingest import clear_caches


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_caches()
    guard_services.forget_policies()
    learning.clear_caches()
    yield
    clear_caches()
    guard_services.forget_policies()
    learning.clear_caches()
