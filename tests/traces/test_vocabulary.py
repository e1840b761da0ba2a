"""The vocabulary's evidence as uploads record it: every event counted on the kind of event that
carries each field, with example values; lines not stored are not counted; counts add up across
batches and uploads; ``rebuild`` recounts the same from the stored events (also after an
erasure)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection

from studio.rules.vocabulary import vocabulary_for
from studio.traces import erasure, loading, vocabulary
from studio.traces.models import Upload, VocabularyEntry
from tests.traces.test_uploads import jsonl, parsed

pytestmark = pytest.mark.django_db

REFUND, SEARCH = "tool_call:issue_refund", "tool_call:search_docs"
AMOUNTS = [10, 20, 20, 35.5, 40, 50, 60]

# issue_refund carries output.args.amount; search_docs carries an `amount` of its own, in the
# environment's placeholder arguments (a free top-level field: it goes into data); the user
# speaks in between.
LOG = [
    *({"session": "s1", "step": i, "output": {"tool": "issue_refund",
                                               "args": {"amount": amount, "order": f"o{i}"}}}
      for i, amount in enumerate(AMOUNTS)),
    *({"session": "s2", "step": i, "output": {"tool": "search_docs", "args": {"q": "refund"}},
       "env": {"placeholder_args": {"amount": "$AMOUNT"}}} for i in range(3)),
    {"session": "s2", "step": 3, "input": "where is my money", "data": {"role": "user"},
     "labels": ["complaint"]},
    {"session": "s2", "step": 4, "input": "still waiting", "data": {"role": "user"},
     "labels": ["complaint", "repeat"]},
]


@pytest.fixture(autouse=True)
def _fresh_memory():
    vocabulary.forget_stored()
    yield
    vocabulary.forget_stored()


def rows(workspace) -> dict:
    return {(e.kind, e.name, e.json_type, e.carrier): (e.events, e.examples)
            for e in VocabularyEntry.objects.filter(workspace=workspace)}


def check_log_counts(found: dict, times: int = 1) -> None:
    assert found[("path", "output.args.amount", "number", REFUND)] == (
        7 * times, [10, 20, 35.5, 40, 50])
    assert found[("path", "data.env.placeholder_args.amount", "string", SEARCH)] == (
        3 * times, ["$AMOUNT"])
    assert not any(name == "output.args.amount" and carrier != REFUND
                   for _, name, _, carrier in found)
    assert not any(name == "data.env.placeholder_args.amount" and carrier != SEARCH
                   for _, name, _, carrier in found)
    assert found[("builtin", REFUND, "", REFUND)] == (7 * times, [])
    assert found[("builtin", "role:user", "", "role:user")] == (2 * times, [])
    assert found[("label", "complaint", "", "role:user")] == (2 * times, [])
    assert found[("label", "repeat", "", "role:user")] == (1 * times, [])
    assert found[("path", "input", "string", "role:user")] == (
        2 * times, ["where is my money", "still waiting"])
    assert found[("path", "output.args.order", "string", REFUND)] == (
        7 * times, ["o0", "o1", "o2", "o3", "o4"])


@pytest.mark.parametrize("batch", [1000, 2])
def test_an_upload_counts_every_event_on_the_kind_of_event_carrying_each_field(
        auditor, acme, monkeypatch, batch):
    monkeypatch.setattr(loading, "FIRST_BATCH_EVENTS", batch)
    monkeypatch.setattr(loading, "BATCH_EVENTS", batch)
    upload = parsed(auditor, auditor.upload(jsonl(*LOG), "jsonl"))
    assert upload["events_stored"] == len(LOG)

    check_log_counts(rows(acme))
    known = vocabulary_for(acme)
    assert known.carriers_of("output.args.amount") == {REFUND: 7}
    assert known.carriers_of("data.env.placeholder_args.amount") == {SEARCH: 3}
    assert known.examples_of("output.args.amount", REFUND) == [10, 20, 35.5, 40, 50]
    assert known.events_of("complaint") == 2
    assert known.path_types("output.args.amount") == {"number"}


def test_a_second_upload_adds_its_events_and_lines_not_stored_are_not_counted(auditor, acme):
    parsed(auditor, auditor.upload(jsonl(*LOG), "jsonl"))
    # The same events again (another file): every line clashes with a stored step; nothing is
    # counted twice.
    again = parsed(auditor, auditor.upload(jsonl(*reversed(LOG)), "jsonl"))
    assert again["events_stored"] == 0
    check_log_counts(rows(acme))

    # New sessions, one line repeating a step of its session (not stored), one bad line.
    more = [dict(e, session="n" + e["session"]) for e in LOG]
    third = parsed(auditor, auditor.upload(jsonl(*more, more[0] | {"output": {
        "tool": "issue_refund", "args": {"amount": 999, "extra": True}}}, "broken"), "jsonl"))
    assert (third["events_stored"], third["lines_bad"]) == (len(LOG), 2)
    found = rows(acme)
    check_log_counts(found, times=2)
    assert not any(name == "output.args.extra" for _, name, _, _ in found)


def test_rebuild_recounts_what_the_uploads_recorded_and_what_is_left_after_an_erasure(
        auditor, acme):
    parsed(auditor, auditor.upload(jsonl(*LOG), "jsonl"))
    first = rows(acme)
    second = parsed(auditor, auditor.upload(
        jsonl(*[dict(e, session="n" + e["session"]) for e in LOG[:7]]), "jsonl"))
    recorded = rows(acme)
    assert recorded[("path", "output.args.amount", "number", REFUND)][0] == 14
    # A row as the migration left the vocabulary of a workspace loaded before it was counted.
    VocabularyEntry.objects.create(workspace=acme, kind="builtin", name=REFUND)

    call_command("rebuild_vocabulary", "acme")
    assert rows(acme) == recorded

    erasure.erase_upload(Upload.objects.get(pk=second["id"]))
    # in the erasure's transaction the upload's shares are taken off, and the entries it showed
    # take their examples from the shares left: what the first upload alone recorded
    assert rows(acme) == first
    vocabulary.rebuild(acme)
    check_log_counts(rows(acme))
    assert rows(acme) == first


def test_the_memory_of_what_is_stored_skips_only_examples_never_counts(acme):
    entry = ("path", "data.kind", "string", "")
    assert vocabulary.record(acme, {entry: (2, ["a", "b"])}) == 1
    vocabulary._remember(vocabulary._key(acme), {entry: ("a", "b")})
    vocabulary.record(acme, {entry: (3, ["b", "a"])})
    vocabulary.record(acme, {entry: (1, ["c", "d", "e", "f"])})
    assert rows(acme) == {entry: (6, ["a", "b", "c", "d", "e"])}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the writer thread is Postgres's")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["here", "child"])
def test_a_threaded_load_counts_the_same(auditor, acme, monkeypatch, settings, where):
    settings.PARSE_PROCESS_MIN_BYTES = 0 if where == "child" else 10**12
    monkeypatch.setattr(loading, "FIRST_BATCH_EVENTS", 3)
    monkeypatch.setattr(loading, "BATCH_EVENTS", 3)
    # A line repeating a stored step: read back from its COPY text and taken off the counts.
    repeated = LOG[1] | {"output": {"tool": "issue_refund", "args": {"amount": 7, "x": 1}}}
    upload = parsed(auditor, auditor.upload(jsonl(*LOG[:3], repeated, *LOG[3:]), "jsonl"))
    assert (upload["events_stored"], upload["lines_bad"]) == (len(LOG), 1)
    found = rows(acme)
    check_log_counts(found)
    assert not any(name == "output.args.x" for _, name, _, _ in found)


def test_an_erasure_leaves_no_example_of_its_events_and_recounts_when_it_commits(
        auditor, acme, django_capture_on_commit_callbacks):
    secret = {"session": "s9", "step": 0, "input": "my card is 4111 1111 1111 1111",
              "data": {"role": "user"}}
    parsed(auditor, auditor.upload(jsonl(*LOG), "jsonl"))
    second = parsed(auditor, auditor.upload(jsonl(secret), "jsonl"))
    assert rows(acme)[("path", "input", "string", "role:user")][1][-1] == secret["input"]

    with django_capture_on_commit_callbacks(execute=True):
        erasure.erase_upload(Upload.objects.get(pk=second["id"]))

    found = rows(acme)
    assert not any(secret["input"] in examples for _, examples in found.values())
    check_log_counts(found)     # recounted from the events left, examples refilled
