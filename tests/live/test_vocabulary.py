"""The vocabulary's evidence as live deliveries record it: every stored event counted on the kind
of event carrying each field, with examples; duplicates are not counted; and, on Postgres,
concurrent deliveries and writers lose no increment and do not deadlock."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from studio.live.ingest import ingest
from studio.logic.vocabulary import Collector
from studio.rules.vocabulary import vocabulary_for
from studio.traces import vocabulary
from studio.traces.models import VocabularyEntry
from tests.live.conftest import Agent
from tests.live.test_concurrency import race

pytestmark = pytest.mark.django_db

REFUND, SEARCH = "tool_call:issue_refund", "tool_call:search_docs"


@pytest.fixture(autouse=True)
def _fresh_memory():
    vocabulary.forget_stored()
    yield
    vocabulary.forget_stored()


def rows(workspace) -> dict:
    return {(e.kind, e.name, e.json_type, e.carrier): (e.events, e.examples)
            for e in VocabularyEntry.objects.filter(workspace=workspace)}


def refund(i: int, amount) -> dict:
    return {"event_id": f"r{i}", "output": {"tool": "issue_refund", "args": {"amount": amount}}}


def search(i: int) -> dict:
    # A free top-level field goes into data.
    return {"event_id": f"q{i}", "output": {"tool": "search_docs", "args": {"q": "refund"}},
            "env": {"placeholder_args": {"amount": "$AMOUNT"}}}


def test_live_deliveries_count_every_stored_event_on_its_carrier(workspace, token):
    agent = Agent("acme", token=token)
    amounts = [10, 20, 20, 35.5, 40, 50, 60]
    assert agent.post("s1", [refund(0, amounts[0]), search(0)]).status_code == 200
    for i, amount in enumerate(amounts[1:], start=1):
        assert agent.post("s1", [refund(i, amount)]).status_code == 200
    assert agent.post("s2", [search(1), search(2),
                             {"input": "where is my money", "data": {"role": "user"},
                              "labels": ["complaint"]}]).status_code == 200
    # A redelivery stores nothing and counts nothing.
    assert agent.post("s1", [refund(3, 35.5), search(0)]).json()["duplicates"] == 2

    found = rows(workspace)
    assert found[("path", "output.args.amount", "number", REFUND)] == (
        7, [10, 20, 35.5, 40, 50])
    assert found[("path", "data.env.placeholder_args.amount", "string", SEARCH)] == (
        3, ["$AMOUNT"])
    assert not any(name == "output.args.amount" and carrier != REFUND
                   for _, name, _, carrier in found)
    assert found[("builtin", REFUND, "", REFUND)] == (7, [])
    assert found[("label", "complaint", "", "role:user")] == (1, [])
    assert found[("path", "input", "string", "role:user")] == (1, ["where is my money"])
    known = vocabulary_for(workspace)
    assert known.carriers_of("data.env.placeholder_args.amount") == {SEARCH: 3}
    assert known.examples_of("output.args.amount") == [10, 20, 35.5, 40, 50]


def test_a_delivery_whose_entries_are_known_and_full_costs_one_statement(
        workspace, django_assert_num_queries, django_capture_on_commit_callbacks):
    for i in range(6):  # the entries stored, their examples full (amount) or settled (tool)
        with django_capture_on_commit_callbacks(execute=True):
            ingest(workspace, "s1", [refund(i, i)])
    entries = {e for e in rows(workspace) if e[3] == REFUND}
    seen = Collector()
    seen.add(None, {"tool": "issue_refund", "args": {"amount": 99}}, {}, None)
    with django_assert_num_queries(1) as queries:
        vocabulary.record(workspace, seen.counts())
    assert "ON CONFLICT" in queries.captured_queries[0]["sql"]
    assert "RETURNING" not in queries.captured_queries[0]["sql"]
    found = rows(workspace)
    assert {e: found[e][0] for e in entries} == {e: 7 for e in entries}
    assert found[("path", "output.args.amount", "number", REFUND)][1] == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------------------------------------
# Concurrent writers (Postgres: SQLite serialises writers)

@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="needs Postgres row locks")
def test_concurrent_deliveries_lose_no_increment(workspace):
    assert connection.vendor == "postgresql"
    threads = 16

    def deliver(i):
        # Eight sessions, two deliveries each at once; tools and new fields shared between them.
        events = [refund(100 * i + k, i) for k in range(3)] + [search(100 * i)]
        events[0]["output"]["args"][f"note_{i % 4}"] = "x"
        return ingest(workspace, f"s{i % 8}", events)

    results = race(deliver, threads)
    assert sum(r["stored"] for r in results) == 4 * threads
    found = rows(workspace)
    assert found[("builtin", REFUND, "", REFUND)][0] == 3 * threads
    assert found[("path", "output.args.amount", "number", REFUND)][0] == 3 * threads
    assert len(found[("path", "output.args.amount", "number", REFUND)][1]) == 5
    assert found[("path", "data.env.placeholder_args.amount", "string", SEARCH)] == (
        threads, ["$AMOUNT"])
    for n in range(4):
        assert found[("path", f"output.args.note_{n}", "string", REFUND)] == (
            threads // 4, ["x"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="needs Postgres row locks")
def test_concurrent_writers_of_the_same_rows_in_any_order_neither_deadlock_nor_lose_counts(
        workspace):
    entries = [("path", f"data.f{k:02d}", "number", f"tool_call:t{k % 3}") for k in range(30)]
    threads = 12

    def write(i):
        order = entries if i % 2 else list(reversed(entries))
        with transaction.atomic():
            for _ in range(3):  # three batches a transaction, as a long upload's writer
                vocabulary.record(workspace, {e: (i + 1, [i, i + 100]) for e in order})
        return i

    race(write, threads)
    found = rows(workspace)
    total = 3 * sum(i + 1 for i in range(threads))
    assert {e: found[e][0] for e in entries} == {e: total for e in entries}
    assert all(len(set(found[e][1])) == 5 for e in entries)
