"""studio.caching.LruCache against a plain model of an LRU map: a dict of entries and a list of
keys, least recently used first."""

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.caching import ExpiringValues, LruCache

KEYS = st.integers(0, 6)
OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("put"), KEYS, st.integers()),
    st.tuples(st.just("put_if_absent"), KEYS, st.integers()),
    st.tuples(st.just("pop"), KEYS),
    st.tuples(st.just("contains"), KEYS),
    st.tuples(st.just("clear"),),
), max_size=60)


class Model:
    def __init__(self, limit):
        self.limit = limit
        self.values: dict = {}
        self.order: list = []  # least recently used first

    def _use(self, key):
        if key in self.order:
            self.order.remove(key)
        self.order.append(key)

    def _evict(self):
        while len(self.order) > self.limit:
            del self.values[self.order.pop(0)]

    def get(self, key):
        if key not in self.values:
            return None
        self._use(key)
        return self.values[key]

    def put(self, key, value):
        self.values[key] = value
        self._use(key)
        self._evict()

    def put_if_absent(self, key, value):
        if key not in self.values:
            self.put(key, value)
        else:
            self._use(key)
        return self.values[key]

    def pop(self, key):
        if key in self.order:
            self.order.remove(key)
        return self.values.pop(key, None)

    def contains(self, key):
        return key in self.values

    def clear(self):
        self.values.clear()
        self.order.clear()


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), OPERATIONS)
def test_the_cache_behaves_as_the_model_of_an_lru_map(limit, operations):
    cache, model = LruCache(limit), Model(limit)
    for name, *args in operations:
        if name == "contains":
            assert (args[0] in cache) == model.contains(*args)
            continue
        assert getattr(cache, name)(*args) == getattr(model, name)(*args), (name, args)
        assert cache.keys() == model.order
        assert len(cache) == len(model.order) <= limit
    assert {k: cache.get(k) for k in model.order[::-1]} == {k: model.values[k]
                                                             for k in model.order[::-1]}


def test_a_cache_keeps_at_least_one_entry():
    with pytest.raises(ValueError, match="at least one entry"):
        LruCache(0)


def test_threads_sharing_a_cache_never_exceed_its_limit():
    cache = LruCache(50)

    def work(offset):
        for i in range(2000):
            cache.put((offset, i % 120), i)
            cache.get((offset, (i * 7) % 120))
            cache.put_if_absent((offset, (i * 3) % 120), i)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == len(set(cache.keys())) == 50


def test_expiring_values_are_read_again_once_expired_and_ahead_of_time_when_asked():
    reads = []

    def load():
        reads.append(len(reads))
        return f"value {len(reads)}"

    values = ExpiringValues()
    assert values.get("k", load, 60) == "value 1"
    assert values.get("k", load, 60) == "value 1" and len(reads) == 1   # kept
    values.refresh_ahead("k", load, 60)
    assert len(reads) == 1                      # far from expiring: not read again
    values.entries["k"] = (time.monotonic() + 5, "value 1")   # within an eighth of 60 s
    values.refresh_ahead("k", load, 60)
    assert values.entries["k"][1] == "value 2" and values.entries["k"][0] > time.monotonic() + 50
    values.entries["k"] = (time.monotonic() - 1, "value 2")   # expired
    assert values.get("k", load, 60) == "value 3"
    assert values.get("k", load, 0) == "value 4" and values.get("k", load, 0) == "value 5"
    values.refresh_ahead("absent", load, 60)    # nothing kept: nothing read ahead
    values.clear()
    assert len(reads) == 5 and values.entries == {}
