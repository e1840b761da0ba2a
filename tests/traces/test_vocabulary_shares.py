"""Each upload's share of the vocabulary (``VocabularyShare``) and what an erasure does with it,
against two references: an oracle written here from ``collect_event`` (which entries each event
left shows, counted by hand) and a full rebuild from the events left (``vocabulary.rebuild``),
after random uploads, upload erasures and session erasures.

An upload erasure takes the upload's shares off without reading an event and must leave the
vocabulary - counts and examples, entries and shares - exactly what a rebuild finds.  A session
erasure (events of several uploads) reads its events; its counts must be exact in its own
transaction, and the recount it enqueues brings the examples back."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.logic import vocabulary as pure
from studio.traces import erasure, vocabulary
from studio.traces.models import (Event, TraceSession, Upload, UploadError, VocabularyEntry,
                                  VocabularyShare)
from tests.traces.test_uploads import jsonl, parsed

pytestmark = pytest.mark.django_db

SESSIONS = ["a", "b", "c", "d"]
TOOLS = ["pay", "refund", "search"]
KEYS = ["amount", "to", "note"]
VALUES = [1, 2, 3, 2.5, "x", "y", "z", "w", "v", "u", True]

event = st.fixed_dictionaries(
    {"session": st.sampled_from(SESSIONS),
     "output": st.one_of(
         st.builds(lambda tool, args: {"tool": tool, "args": args}, st.sampled_from(TOOLS),
                   st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES),
                                   max_size=2)),
         st.just("ok"))},
    optional={"labels": st.lists(st.sampled_from(["late", "risky"]), max_size=2, unique=True),
              "input": st.sampled_from(["hello", "help", 7])})
upload = st.tuples(st.just("upload"), st.lists(event, min_size=1, max_size=6))
operation = st.one_of(
    upload,
    st.tuples(st.just("erase upload"), st.integers(0, 5)),
    st.tuples(st.just("erase session"), st.sampled_from(SESSIONS)))
# A few uploads first (so an erasure has shares to take examples from, in their order), then
# anything.
operations = st.builds(lambda first, then: first + then, st.lists(upload, min_size=2, max_size=4),
                       st.lists(operation, min_size=1, max_size=4))


def entries(workspace) -> dict:
    return {(e.kind, e.name, e.json_type, e.carrier): (e.events, e.examples)
            for e in VocabularyEntry.objects.filter(workspace=workspace)}


def shares(workspace) -> dict:
    return {(s.upload_id, s.entry.kind, s.entry.name, s.entry.json_type, s.entry.carrier):
            (s.events, s.examples)
            for s in VocabularyShare.objects.filter(entry__workspace=workspace)
            .select_related("entry")}


def oracle(workspace) -> tuple[Counter, Counter]:
    """Per entry, and per (upload, entry), how many of the events left show it: each event's
    entries as ``collect_event`` finds them, on its carrier."""
    total, by_upload = Counter(), Counter()
    for upload_id, input_, output, data, labels in (
            Event.objects.filter(workspace=workspace)
            .values_list("upload_id", "input", "output", "data", "labels")):
        found: set = set()
        pure.collect_event(input_, output, data, labels, found)
        carrier = pure.carrier_of(output, data)
        for kind, name, type_ in found:
            total[(kind, name, type_, carrier)] += 1
            by_upload[(upload_id, kind, name, type_, carrier)] += 1
    return total, by_upload


def counts_of(found: dict) -> Counter:
    return Counter({key: events for key, (events, _) in found.items()})


def empty(workspace) -> None:
    """Start an example afresh (the test's transaction holds every example's rows)."""
    VocabularyEntry.objects.filter(workspace=workspace).delete()
    Event.objects.filter(workspace=workspace).delete()
    TraceSession.objects.filter(workspace=workspace).delete()
    UploadError.objects.filter(upload__workspace=workspace).delete()
    Upload.objects.filter(workspace=workspace).delete()
    vocabulary.forget_stored()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(operations=operations)
def test_the_vocabulary_after_uploads_and_erasures_is_what_a_rebuild_finds(
        auditor, acme, django_capture_on_commit_callbacks, operations):
    empty(acme)
    uploads: list[int] = []
    for number, (what, arg) in enumerate(operations):
        if what == "upload":
            # Steps of their own: every line is stored, and each file differs from the others.
            lines = [dict(e, step=number * 100 + i) for i, e in enumerate(arg)]
            uploads.append(parsed(auditor, auditor.upload(jsonl(*lines), "jsonl"))["id"])
            continue
        with django_capture_on_commit_callbacks(execute=False) as after_commit:
            if what == "erase upload":
                if not uploads:
                    continue
                upload = Upload.objects.get(pk=uploads.pop(arg % len(uploads)))
                erasure.erase_upload(upload)
            else:
                session = TraceSession.objects.filter(workspace=acme, external_id=arg).first()
                if session is None:
                    continue
                erasure.erase_session(session)
            # In the erasure's own transaction (before any recount): the counts are exact.
            total, by_upload = oracle(acme)
            assert counts_of(entries(acme)) == total, operations[:number + 1]
            assert counts_of(shares(acme)) == by_upload, operations[:number + 1]
            if what == "erase upload":  # nothing to recount: the examples are exact too
                incremental = entries(acme), shares(acme)
                vocabulary.rebuild(acme)
                assert (entries(acme), shares(acme)) == incremental, operations[:number + 1]
        # What the commit runs (a recount; forgetting what this process remembers stored),
        # with what those callbacks defer in turn.
        with django_capture_on_commit_callbacks(execute=True):
            for callback in after_commit:
                callback()

    # After whatever the erasures enqueued: everything as a rebuild finds it.
    total, by_upload = oracle(acme)
    assert counts_of(entries(acme)) == total
    assert counts_of(shares(acme)) == by_upload
    incremental = entries(acme), shares(acme)
    assert all(len(examples) <= pure.MAX_EXAMPLES for _, examples in incremental[0].values())
    vocabulary.rebuild(acme)
    assert (entries(acme), shares(acme)) == incremental


def test_an_upload_erased_leaves_no_example_of_its_own(auditor, acme):
    """A value only the erased upload held goes from every entry's examples, and the values of
    the upload left come in its place, at once (no recount)."""
    first = parsed(auditor, auditor.upload(jsonl(*[
        {"session": "s", "step": i, "output": {"tool": "pay", "args": {"to": f"secret-{i}"}}}
        for i in range(5)]), "jsonl"))
    parsed(auditor, auditor.upload(jsonl(*[
        {"session": "t", "step": i, "output": {"tool": "pay", "args": {"to": f"kept-{i}"}}}
        for i in range(3)]), "jsonl"))
    key = ("path", "output.args.to", "string", "tool_call:pay")
    assert entries(acme)[key] == (8, [f"secret-{i}" for i in range(5)])
    with_values = erasure.erase_upload(Upload.objects.get(pk=first["id"]))
    assert with_values.events == 5
    assert entries(acme)[key] == (3, ["kept-0", "kept-1", "kept-2"])
    assert "secret" not in json.dumps(list(VocabularyShare.objects.values_list("examples",
                                                                               flat=True)))
