"""`manage.py audit --anticipate`: every rule gets `complete` and `complete_step` (issue 17)."""

import json
import subprocess
import sys
from pathlib import Path

from studio.monitor.audit import Audit, render_text

REPO = Path(__file__).resolve().parents[2]

RULES = [
    ("no_overdraft", "G(data.balance >= 0) & F(data.balance < 0 & data.balance > 10)", None),
    ("granted_after_request", "G(grant -> O request)", None),
    ("eventually_done", "F done", None),
    ("answers", "G(ask -> F answer)", None),
]


def _events():
    return [
        {"session": "a", "labels": ["grant"], "data": {"balance": 5}},
        {"session": "a", "labels": ["request"], "data": {"balance": 5}},
        {"session": "b", "labels": ["request"], "data": {"balance": 1}},
        {"session": "b", "labels": ["done", "ask"], "data": {"balance": 1}},
    ]


def test_audit_reports_complete_verdicts_and_the_step_they_became_certain(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    audit = Audit(RULES, anticipate=True)
    audit.add_file(log)
    report = audit.report()
    a, b = ({r["rule"]: r for r in s["rules"]} for s in report["sessions"])
    # Progression never decides the first rule; no continuation can satisfy it.
    assert a["no_overdraft"]["verdict"] == "pending"
    assert (a["no_overdraft"]["complete"], a["no_overdraft"]["complete_step"]) == (
        "permanently_violated", 0)
    assert "`data.balance < 0` and `data.balance > 10`" in a["no_overdraft"]["complete_reason"]
    assert (a["granted_after_request"]["complete"],
            a["granted_after_request"]["complete_step"]) == ("permanently_violated", 0)
    # Once a request was seen, no grant can violate G(grant -> O request) any more.
    assert (b["granted_after_request"]["complete"],
            b["granted_after_request"]["complete_step"]) == ("permanently_satisfied", 0)
    # A log's sessions have ended: the last step (1) settles what was not certain before it,
    # so a finished session never reads "a later step can still break it".
    assert (a["eventually_done"]["complete"], a["eventually_done"]["complete_step"]) == (
        "permanently_violated", 1)
    assert (b["eventually_done"]["complete"], b["eventually_done"]["complete_step"]) == (
        "permanently_satisfied", 1)
    assert (b["answers"]["complete"], b["answers"]["complete_step"]) == (
        "permanently_violated", 1)
    assert (a["answers"]["complete"], a["answers"]["complete_step"]) == (
        "permanently_satisfied", 1)
    assert a["answers"]["complete_reason"] == "the session has ended, nothing owed"
    assert "complete: broken for good since step 0" in render_text(report)


def test_without_the_flag_the_report_is_unchanged(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    audit = Audit(RULES)
    audit.add_file(log)
    assert all("complete" not in r for s in audit.report()["sessions"] for r in s["rules"])


def test_the_command_line_flag(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    rules = tmp_path / "rules.txt"
    rules.write_text("".join(f"{name}: {text}\n" for name, text, _ in RULES))
    done = subprocess.run([sys.executable, "manage.py", "audit", str(log), "--rules", str(rules),
                           "--format", "json", "--anticipate"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    first = {r["rule"]: r for r in report["sessions"][0]["rules"]}
    assert first["no_overdraft"]["complete"] == "permanently_violated"
    assert first["no_overdraft"]["complete_step"] == 0
