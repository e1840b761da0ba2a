"""studio.bulkwork: collection thresholds raised inside bulk work and put back after it."""

from __future__ import annotations

import gc
import threading

import pytest

from studio.bulkwork import BULK_THRESHOLDS, fewer_collections


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_thresholds_are_raised_inside_and_put_back_after_even_on_error(thresholds):
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold() == BULK_THRESHOLDS
        raise RuntimeError("the load failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_blocks_on_two_threads_put_them_back_when_the_last_leaves(thresholds):
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with fewer_collections():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=other)
    with fewer_collections():
        thread.start()
        assert inside.wait(5)
    assert gc.get_threshold() == BULK_THRESHOLDS  # the other thread is still inside
    leave.set()
    thread.join(5)
    assert gc.get_threshold() == (700, 10, 10)
