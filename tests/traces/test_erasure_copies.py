"""Erasure leaves no copies (issue 24, item 5): after an upload is erased over HTTP, nothing of
its data stays in the vocabulary (a tool name made from a value), in the rule test cases made
from its sessions or the audit-log entries describing them, or in the ground-truth labels of
its sessions - and the answer says what went, by kind.  What other uploads brought stays.

The audit log stays append-only but for that one change: the database lets a value become
"[erased]" and refuses anything else (Postgres; the trigger of workspaces migration 0007)."""

from __future__ import annotations

import io
import json

import pytest
from django.db import DatabaseError, connection, transaction

from studio.audits.groundtruth import import_labels
from studio.audits.models import GroundTruth
from studio.evidence import services as evidence
from studio.evidence.models import RuleCase
from studio.traces.models import TraceSession, VocabularyEntry
from studio.workspaces.models import AuditLogEntry
from studio.workspaces.redaction import ERASED, erased_except, redact

from .test_erasure import client_for, jsonl, team, upload, upload_root  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

SECRET_TOOL = "send_money_to_john_doe_ssn_123"


def log_text(workspace) -> str:
    return json.dumps([e.details for e in AuditLogEntry.objects.filter(workspace=workspace)])


def vocabulary(workspace) -> dict:
    return {(e.kind, e.name, e.json_type, e.carrier): e.events
            for e in VocabularyEntry.objects.filter(workspace=workspace)}


def test_erasing_an_upload_removes_every_copy_of_its_data_and_says_so(
        team, django_capture_on_commit_callbacks):  # noqa: F811 - the fixture
    capture = django_capture_on_commit_callbacks
    workspace = team.workspace
    auditor = client_for(team.auditor)
    secret_events = [
        {"session": "secret", "labels": ["delete"],
         "output": {"tool": SECRET_TOOL, "args": {"iban": "DE00 1234"}}},
        {"session": "secret", "labels": [], "output": {"tool": "search", "args": {"q": "x"}}},
        {"session": "shared", "labels": [], "output": {"tool": "search", "args": {"q": "y"}}},
    ]
    first = upload(auditor, jsonl(*secret_events), "a.jsonl", capture, audit=False)
    upload(auditor, jsonl({"session": "shared", "labels": ["delete"]},
                          {"session": "kept", "labels": ["delete"],
                           "output": {"tool": "search", "args": {"q": "z"}}}),
           "b.jsonl", capture, audit=False)
    before = vocabulary(workspace)
    assert any(SECRET_TOOL in name for _, name, _, _ in before)

    # Test cases made from the sessions: one from the erased steps (changed once, and failing a
    # version's check), one from steps another upload brought.
    rule = team.workspace.rules.get(name="no_delete")
    version = rule.versions.get()
    sessions = dict(TraceSession.objects.values_list("external_id", "id"))
    copied = evidence.case_from_session(rule, team.auditor, sessions["secret"], 0, 1,
                                        "comply")
    copied = evidence.change_case(copied, team.auditor, name=f"the {SECRET_TOOL} session",
                                  reason=f"about {SECRET_TOOL}")
    evidence.record_check(version, team.auditor)
    assert evidence.summary(evidence.check_version(version))["failing"]
    other = evidence.case_from_session(rule, team.auditor, sessions["kept"], None, None,
                                       "violate")
    # Ground truth for a session the erasure removes, and for one it does not.
    labels = "\n".join(json.dumps({"session": s, "rule": "no_delete", "violated": True,
                                   "note": f"{s} note"}) for s in ("secret", "kept"))
    import_labels(workspace, io.BytesIO(labels.encode()), "truth.jsonl", "jsonl", team.auditor)
    assert SECRET_TOOL in log_text(workspace)

    # The recount the commit enqueues is not run: the erasure itself leaves no copy.
    with capture(execute=False):
        response = auditor.delete(f"/api/w/erase/uploads/{first['id']}")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["sessions_removed"] == 1  # "secret"; "shared" keeps b's event
    removed_names = {name for _, name, _, _ in before} - {name for _, name, _, _ in
                                                         vocabulary(workspace)}

    # The vocabulary: what only the erased events showed is gone, the rest counts what is left.
    after = vocabulary(workspace)
    assert not any(SECRET_TOOL in name or SECRET_TOOL in carrier
                   for _, name, _, carrier in after)
    assert ("builtin", "tool_call:search", "", "tool_call:search") in after
    assert all(VocabularyEntry.objects.filter(workspace=workspace).values_list("events",
                                                                                flat=True))
    assert removed_names and answer["copies"]["vocabulary_entries"] >= 1
    # The cases: the copied one is gone, the other stays; their log keeps the facts, not the
    # values.
    assert not RuleCase.objects.filter(pk=copied.pk).exists()
    assert RuleCase.objects.filter(pk=other.pk).exists()
    assert answer["copies"]["test_cases"] == 1
    case_entries = AuditLogEntry.objects.filter(target_type="rulecase", target_id=copied.pk)
    actions = sorted(e.action for e in case_entries)
    assert actions == ["rule_case.changed", "rule_case.created", "rule_case.erased"]
    for entry in case_entries.exclude(action="rule_case.erased"):
        assert entry.details["rule"] == "no_delete"
        assert entry.details["name"] == ERASED
    check = AuditLogEntry.objects.get(action="rule_version.cases_checked")
    assert check.details["failing"][0]["name"] == ERASED
    assert answer["copies"]["log_entries_redacted"] == 3
    assert SECRET_TOOL not in log_text(workspace)
    assert "session secret" not in log_text(workspace)
    # Ground truth: the removed session's label goes, the other stays.
    assert list(GroundTruth.objects.values_list("session", flat=True)) == ["kept"]
    assert answer["copies"]["ground_truth_labels"] == 1
    # The erasure's own log entry says what went.
    erased = AuditLogEntry.objects.get(action="upload.erased")
    assert erased.details["copies"] == answer["copies"]


def test_an_upload_without_copies_removes_none(team, django_capture_on_commit_callbacks):  # noqa: F811
    capture = django_capture_on_commit_callbacks
    auditor = client_for(team.auditor)
    first = upload(auditor, jsonl({"session": "a", "labels": ["x"]}), "a.jsonl", capture,
                   audit=False)
    upload(auditor, jsonl({"session": "b", "labels": ["x"]}), "b.jsonl", capture, audit=False)
    with capture(execute=True):
        answer = auditor.delete(f"/api/w/erase/uploads/{first['id']}").json()
    assert answer["copies"] == {"vocabulary_entries": 0, "test_cases": 0,
                                "log_entries_redacted": 0, "ground_truth_labels": 0,
                                "impact_summaries": 0}
    assert vocabulary(team.workspace)[("label", "x", "", "")] == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the trigger is Postgres's")
def test_the_log_lets_a_value_be_erased_and_refuses_every_other_change(team):  # noqa: F811
    entry = AuditLogEntry.objects.create(
        workspace=team.workspace, action="rule_case.created", target_type="rulecase",
        target_id=1, details={"rule": "r", "name": "n", "steps": [{"a": 1}, {"b": 2}]})
    table = AuditLogEntry._meta.db_table

    def update(sql: str, params: list) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {sql} WHERE id = %s", [*params, entry.pk])

    refused = [
        ("details = %s::jsonb", [json.dumps({"rule": "r", "name": "other",
                                             "steps": [{"a": 1}, {"b": 2}]})]),
        ("details = %s::jsonb", [json.dumps({"rule": "r", "name": ERASED})]),  # a key gone
        ("details = %s::jsonb", [json.dumps({"rule": "r", "name": ERASED,
                                             "steps": [{"a": 1}]})]),  # an element gone
        ("details = %s::jsonb", [json.dumps({"rule": "r", "name": ERASED, "steps": [],
                                             "new": ERASED})]),
        ("action = %s", ["rule_case.deleted"]),
    ]
    for sql, params in refused:
        with pytest.raises(DatabaseError, match="append-only"):
            update(sql, params)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [entry.pk])
    # Values erased, at any depth: allowed.
    update("details = %s::jsonb", [json.dumps({"rule": "r", "name": ERASED,
                                               "steps": [{"a": ERASED}, ERASED]})])
    assert redact([AuditLogEntry.objects.get(pk=entry.pk)], erased_except(["rule"])) == 1
    entry.refresh_from_db()
    assert entry.details == {"rule": "r", "name": ERASED, "steps": ERASED}


@pytest.mark.parametrize("shared", [True, False], ids=["shares kept", "shares not kept"])
@pytest.mark.parametrize("erased", ["most", "least"])
def test_the_vocabulary_left_is_what_a_recount_finds_whichever_side_is_read(
        team, django_capture_on_commit_callbacks, monkeypatch, erased, shared):  # noqa: F811
    """An upload whose share of the vocabulary is kept has it taken off, no event read.  One
    stored before shares were kept (``vocabulary_shared`` false) has the smaller side counted:
    the erased events (their counts taken off), or the events left when they are fewer (the
    entries set to their counts).  Either way the vocabulary is then what a full recount
    finds."""
    from studio.traces import erasure, vocabulary as stored
    from studio.traces.models import Upload

    capture = django_capture_on_commit_callbacks
    auditor = client_for(team.auditor)
    most = upload(auditor, jsonl(
        *[{"session": f"m{i % 3}", "labels": ["x"], "output": {"tool": "pay", "args": {"n": i}}}
          for i in range(9)],
        {"session": "shared", "labels": ["only_most"], "output": {"tool": "most_only_tool"}}),
        "most.jsonl", capture, audit=False)
    least = upload(auditor, jsonl(
        {"session": "shared", "labels": ["x"], "output": {"tool": "pay", "args": {"n": "one"}}},
        {"session": "l", "labels": ["only_least"]}), "least.jsonl", capture, audit=False)
    if not shared:
        Upload.objects.filter(workspace=team.workspace).update(vocabulary_shared=False)
    before = vocabulary(team.workspace)
    recounts, read = [], []
    monkeypatch.setattr(erasure, "recount_names_left", lambda workspace: recounts.append(1)
                        or stored.recount_names_left(workspace))
    real_read = stored._read
    monkeypatch.setattr(stored, "_read", lambda *a, **k: read.append(1) or real_read(*a, **k))
    gone = most if erased == "most" else least
    with capture(execute=False):
        answer = auditor.delete(f"/api/w/erase/uploads/{gone['id']}").json()
    assert len(recounts) == (not shared and erased == "most")
    assert bool(read) == (not shared)
    left = vocabulary(team.workspace)
    gone_name = "only_most" if erased == "most" else "only_least"
    assert gone_name in {name for _, name, _, _ in before}
    assert gone_name not in {name for _, name, _, _ in left}
    assert answer["copies"]["vocabulary_entries"] == len(before) - len(left)
    examples = {(e.kind, e.name, e.json_type, e.carrier): e.examples
                for e in VocabularyEntry.objects.filter(workspace=team.workspace)}
    stored.rebuild(team.workspace)
    assert vocabulary(team.workspace) == left
    if shared:  # the examples too, without the recount
        assert examples == {(e.kind, e.name, e.json_type, e.carrier): e.examples
                            for e in VocabularyEntry.objects.filter(workspace=team.workspace)}
