"""Audit-log actions are one enumeration: the writer refuses anything else, no call site hands it
a free string, and the stored strings are the ones stored before the enumeration existed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from studio.workspaces import services as ws
from studio.workspaces.actions import LogAction
from studio.workspaces.models import AuditLogEntry

STUDIO = Path(__file__).resolve().parents[2] / "studio"

# Every action written before the enumeration (stored rows, exports and the audit report carry
# these strings): none may change or go.
STORED_BEFORE = """
audit.failed audit.finished audit.requeued audit.resumed audit.started causal_guard.created
causal_guard.deleted causal_guard.updated ground_truth.imported guard.approved
guard.asked_human guard.denied guard.timed_out guard_policy.set label.corrected
label.correction_removed labeler.created labeler.deleted labeler.updated live_session.ended
llm_endpoint.removed llm_endpoint.set member.added member.removed member.roles_changed
risk_model.requested rule.created rule.updated rule_case.changed rule_case.created
rule_case.deleted rule_case.erased rule_library.installed rule_set.created rule_set.deleted
rule_set.live rule_set.not_live rule_set.rules_set rule_set.updated rule_version.approved
rule_version.cases_checked rule_version.created rule_version.impact_started
rule_version.rejected rule_version.submitted rule_version.updated session.erased token.created
token.revoked upload.audit_not_started upload.created upload.erased upload.failed
upload.parsed upload.resumed webhook_secret.created webhook_secret.revoked workspace.created
workspace.retention_changed
""".split()


def test_the_enumeration_keeps_every_stored_string():
    assert set(STORED_BEFORE) <= set(LogAction.values)
    assert len(set(LogAction.values)) == len(LogAction.values)


def test_the_writer_refuses_an_undeclared_action(db):
    workspace = ws.create_workspace("Log", slug="log")
    for action in ("upload.created ", "Upload.Created", "upload.deleted", ""):
        with pytest.raises(ValueError, match="unknown audit-log action"):
            ws.record(workspace, None, action)
    assert not AuditLogEntry.objects.filter(workspace=workspace).exclude(
        action=LogAction.WORKSPACE_CREATED).exists()


def test_the_stored_value_is_the_plain_string(db):
    workspace = ws.create_workspace("Log", slug="log")
    entry = ws.record(workspace, None, LogAction.RULE_VERSION_APPROVED, workspace, note="n")
    entry.refresh_from_db()
    assert type(entry.action) is str and entry.action == "rule_version.approved"
    assert AuditLogEntry.objects.filter(action="rule_version.approved").count() == 1
    # A caller holding the string (an old row's value, say) is accepted as the same action.
    assert ws.record(workspace, None, "rule_version.approved").action == "rule_version.approved"
    created = AuditLogEntry.objects.get(workspace=workspace, action="workspace.created")
    assert created.details == {"name": "Log"}


def _record_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "record":
            yield node


def _writes_record(source: str, tree: ast.AST) -> bool:
    # The module calls the audit-log writer (not, say, the vocabulary's record).
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("studio.workspaces.services",
                                                                 "services") \
                and any(a.name == "record" for a in node.names):
            return True
    return "def record(workspace" in source


def _call_sites():
    for path in sorted(STUDIO.rglob("*.py")):
        source = path.read_text()
        if "record(" not in source:
            continue
        tree = ast.parse(source, str(path))
        if _writes_record(source, tree):
            for call in _record_calls(tree):
                yield path, call


def test_no_free_string_reaches_the_writer():
    sites = list(_call_sites())
    assert len(sites) >= 55  # the check must see the call sites, or it proves nothing
    free = []
    for path, call in sites:
        action = call.args[2] if len(call.args) > 2 else next(
            (k.value for k in call.keywords if k.arg == "action"), None)
        if action is None:
            free.append(f"{path.relative_to(STUDIO.parent)}:{call.lineno}: no action")
            continue
        for part in ast.walk(action):
            if isinstance(part, (ast.JoinedStr, ast.BinOp)) or (
                    isinstance(part, ast.Constant) and isinstance(part.value, str)):
                free.append(f"{path.relative_to(STUDIO.parent)}:{call.lineno}: "
                            f"{ast.unparse(action)}")
                break
    assert not free, "audit-log actions written as free strings:\n" + "\n".join(free)


def test_every_declared_action_is_written_somewhere():
    # An action nobody writes is a stale declaration (or a call site the check above misses).
    written = set()
    for path in sorted(STUDIO.rglob("*.py")):
        source = path.read_text()
        if "LogAction." in source:
            tree = ast.parse(source, str(path))
            written |= {node.attr for node in ast.walk(tree)
                        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "LogAction"}
    assert set(LogAction.names) <= written
