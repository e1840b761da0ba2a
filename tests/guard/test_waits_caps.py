"""The caps on waiting polls against a model of the leases (hypothesis): a claim is admitted
exactly when the token and the workspace each hold fewer than their cap of the waits counted
now, where a wait counts from its start until it is released, and a wait never released (its
request crashed) counts only in the window it started in and the next, never for ever."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.guard import waits

PER_TOKEN, PER_WORKSPACE = 3, 5

operations = st.lists(st.one_of(
    st.tuples(st.just("claim"), st.integers(0, 2), st.integers(0, 2)),  # workspace, token
    st.tuples(st.just("release"), st.integers(0, 50), st.none()),        # the n-th lease held
    st.tuples(st.just("crash"), st.integers(0, 50), st.none()),          # never released
    st.tuples(st.just("later"), st.floats(0, 50), st.none())),           # seconds pass
    max_size=60)


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def time(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    found = Clock()
    monkeypatch.setattr(waits, "time", found)
    return found


# The clock fixture is set afresh at the start of every example.
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations)
def test_a_claim_is_admitted_exactly_when_the_model_says(clock, ops):
    cache.clear()
    clock.now = 1_000_000.0
    held = []      # (lease, workspace, token, window)
    crashed = []   # (workspace, token, window)
    with override_settings(GUARD_WAITS_PER_TOKEN=PER_TOKEN,
                           GUARD_WAITS_PER_WORKSPACE=PER_WORKSPACE):
        for op, a, b in ops:
            window = int(clock.now // waits.WINDOW_SECONDS)
            if op == "claim":
                counted = [(w, t) for _, w, t, _ in held] + [
                    (w, t) for w, t, started in crashed if started >= window - 1]
                by_token = sum(1 for w, t in counted if (w, t) == (a, b))
                by_workspace = sum(1 for w, _ in counted if w == a)
                admitted = by_token < PER_TOKEN and by_workspace < PER_WORKSPACE
                try:
                    lease = waits.claim(a, b)
                except waits.TooManyWaits as exc:
                    assert not admitted, "refused though under both caps"
                    cap = ("GUARD_WAITS_PER_TOKEN" if by_token >= PER_TOKEN
                           else "GUARD_WAITS_PER_WORKSPACE")
                    assert cap in exc.message and exc.retry_after >= 1
                else:
                    assert admitted, "admitted beyond a cap"
                    held.append((lease, a, b, window))
            elif op in ("release", "crash") and held:
                lease, w, t, started = held.pop(a % len(held))
                if op == "release":
                    waits.release(lease)
                else:
                    crashed.append((w, t, started))
            elif op == "later":
                clock.now += a
                # A real wait ends within its window and the next (it lasts 30 s at most);
                # the model's waits that would have outlived that are released now.
                window = int(clock.now // waits.WINDOW_SECONDS)
                for item in [h for h in held if h[3] < window - 1]:
                    held.remove(item)
                    waits.release(item[0])
