"""`manage.py audit`: its output schema, its error reporting and exit statuses, and streaming."""

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from studio.monitor.audit import Audit, RulesFileError, parse_rules_text

REPO = Path(__file__).resolve().parents[2]


def audit_cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "manage.py", "audit", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "rules.txt"
    path.write_text(
        "# payments\n"
        "\n"
        "pay_before_ship: !tool_call:ship W tool_call:pay\n"
        "big_needs_approval: G(output.args.amount > 10000 -> F approved)\n"
        "stop: F \"stop_reason:end_turn\"\n")
    return path


def test_json_report_has_the_documented_shape_and_verdicts(tmp_path, rules_file):
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"session": "s1", "step": 0, "labels": ["tool_call:ship"]},
        {"session": "s2", "labels": ["tool_call:pay"],
         "output": {"tool": "pay", "args": {"amount": 50000}}},
        {"session": "s1", "step": 1, "labels": ["stop_reason:end_turn"]},
        {"session": "s2", "labels": ["approved", "stop_reason:end_turn"]},
    ])
    done = audit_cli(log, "--rules", rules_file, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["session"] for s in report["sessions"]] == ["s1", "s2"]
    s1, s2 = report["sessions"]
    assert s1["steps"] == 2 and s2["steps"] == 2
    by_rule = {r["rule"]: r for r in s1["rules"]}
    assert by_rule["pay_before_ship"] == {
        "rule": "pay_before_ship", "verdict": "violated", "first_verdict_step": 0,
        "final": "violated", "residual": "false", "violations": [{"trigger": 0, "detected": 0}],
        "counting": "after_violation", "session_verdict": "violated",
        # The stored names under *_was until they are retired (docs/api-verdicts.md).
        "verdict_was": "violated", "final_was": "violated", "session_verdict_was": "violated"}
    assert by_rule["stop"]["verdict"] == "complied" and by_rule["stop"]["first_verdict_step"] == 1
    assert by_rule["stop"]["verdict_was"] == "satisfied"
    big = {r["rule"]: r for r in s2["rules"]}["big_needs_approval"]
    assert big["verdict"] == "open" and big["final"] == "complied"
    assert big["violations"] == [] and big["first_verdict_step"] is None
    # Still open for TRAC, but the log is a finished session: it complied.
    assert big["session_verdict"] == "complied" and big["counting"] == "per_instance"
    assert big["residual"].startswith("G ")


def test_pending_obligation_at_the_end_is_a_violation_of_the_final_verdict(tmp_path):
    rules = tmp_path / "r.txt"
    rules.write_text("respond: G(request -> F answer)\n")
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"session": "a", "labels": ["request"]}, {"session": "a", "labels": ["answer"]},
        {"session": "a", "labels": ["request"]}, {"session": "a", "labels": []}])
    report = json.loads(audit_cli(log, "--rules", rules, "--format", "json").stdout)
    (rule,) = report["sessions"][0]["rules"]
    assert rule["verdict"] == "open" and rule["final"] == "violated"
    assert rule["residual"] == "F answer & G (!request | F answer)"
    assert rule["violations"] == [{"trigger": 2, "detected": 3}]


def test_bad_lines_are_reported_with_their_numbers_and_the_rest_is_audited(tmp_path, rules_file):
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"session": "s", "labels": ["tool_call:pay"]},
        "{not json",
        ["a", "list"],
        {"labels": ["x"]},
        {"session": "s", "labels": "tool_call:ship"},
        {"session": "s", "step": "3"},
        {"session": "s", "labels": ["tool_call:ship"]},
    ])
    done = audit_cli(log, "--rules", rules_file, "--format", "json")
    assert done.returncode == 1
    errors = done.stderr
    for line, reason in [(2, "not valid JSON"), (3, "expected a JSON object, got an array"),
                         (4, "field 'session' is required"), (5, "field 'labels' must be a list"),
                         (6, "field 'step' must be a whole number")]:
        assert f"log.jsonl:{line}: {reason}" in errors
    assert "5 bad lines skipped" in errors
    (session,) = json.loads(done.stdout)["sessions"]
    assert session["steps"] == 2  # lines 1 and 7
    rule = {r["rule"]: r for r in session["rules"]}["pay_before_ship"]
    assert rule["verdict"] == "complied" and rule["first_verdict_step"] == 0
    # Met at step 0 (paid), so the ship at step 1 is fine: by default the rule restarts only
    # after a violation.  TRAC_R (Algorithm 2) restarts after the payment too and counts it.
    assert rule["violations"] == [] and rule["session_verdict"] == "complied"
    again = audit_cli(log, "--rules", rules_file, "--format", "json",
                      "--counting", "every_verdict")
    (session,) = json.loads(again.stdout)["sessions"]
    rule = {r["rule"]: r for r in session["rules"]}["pay_before_ship"]
    assert rule["violations"] == [{"trigger": 1, "detected": 1}]
    assert rule["counting"] == "every_verdict" and rule["session_verdict"] == "violated"


def test_steps_must_increase_within_a_session(tmp_path, rules_file):
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"session": "s", "step": 5}, {"session": "s", "step": 3}, {"session": "s", "step": 6}])
    done = audit_cli(log, "--rules", rules_file, "--format", "json")
    assert done.returncode == 1
    assert "log.jsonl:2: session 's': step 3 comes after step 5" in done.stderr
    assert json.loads(done.stdout)["sessions"][0]["steps"] == 2


def test_a_bad_rule_names_file_line_and_column_and_audits_nothing(tmp_path):
    rules = tmp_path / "rules.txt"
    rules.write_text("# ok\nfine: G p\nbroken: G(p -> F q\n")
    log = write_jsonl(tmp_path / "log.jsonl", [{"session": "s"}])
    done = audit_cli(log, "--rules", rules, "--format", "json")
    assert done.returncode == 2
    assert done.stdout == ""
    # "broken: G(p -> F q": the last character is in column 18, the end is column 19.
    assert f"{rules}:3:19: rule 'broken': the formula ends too early; expected" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("text, line, column, fragment", [
    ("no colon here\n", 1, 1, "expected `name: formula`"),
    ("a: G p\na: F q\n", 2, 1, "already defined on line 1"),
    ("x: p && q\n", 1, 7, "unexpected &"),
    ("x: G(q -> O F p)\n", 1, 4, "past operator"),
    ("# only comments\n\n", 1, 1, "no rules found"),
    ("  bad name!: p\n", 1, 3, "bad rule name"),
])
def test_rules_file_errors(text, line, column, fragment):
    with pytest.raises(RulesFileError) as caught:
        parse_rules_text(text, "rules.txt")
    assert (caught.value.line, caught.value.column) == (line, column)
    assert fragment in caught.value.message


def test_missing_files_exit_2_without_a_traceback(tmp_path, rules_file):
    done = audit_cli(tmp_path / "nope.jsonl", "--rules", rules_file)
    assert done.returncode == 2 and "cannot read log" in done.stderr
    done = audit_cli(tmp_path / "nope.jsonl", "--rules", tmp_path / "none.txt")
    assert done.returncode == 2 and "cannot read rules" in done.stderr
    assert "Traceback" not in done.stderr


def test_several_logs_continue_sessions_and_text_format_reads_well(tmp_path, rules_file):
    first = write_jsonl(tmp_path / "a.jsonl", [{"session": "s", "labels": ["tool_call:pay"]}])
    second = write_jsonl(tmp_path / "b.jsonl", [{"session": "s", "labels": ["tool_call:ship"]}])
    done = audit_cli(first, second, "--rules", rules_file)
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == "session s (2 steps)"
    assert "pay_before_ship     complied at step 0; at end complied" in done.stdout


def test_the_audit_keeps_sessions_not_events(tmp_path):
    """Memory depends on the sessions, not on the number of lines."""
    rules = parse_rules_text("resp: G(p -> F q)\nnever: G !r\n")

    def peak(lines):
        log = write_jsonl(tmp_path / f"log{lines}.jsonl", (
            {"session": "one", "labels": ["p"] if i % 3 else ["q"], "input": "x" * 200,
             "data": {"i": i}} for i in range(lines)))
        tracemalloc.start()
        audit = Audit(rules)
        audit.add_file(log)
        audit.report()
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top

    small, large = peak(5_000), peak(40_000)
    assert large < 1.5 * small + 200_000, (small, large)
