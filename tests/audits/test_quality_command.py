"""`manage.py labeling_quality`: per rule and overall (micro and macro) precision, recall and F1
of a hand-made audit against hand-computed figures; exit status 2 when there is nothing to
measure; and the overall figures of studio.audits.quality on their own."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from studio.audits import quality
from studio.audits.models import AuditBatch, AuditRun, GroundTruth, SessionResult
from tests.audits.helpers import add_rule, add_sessions, make_team

# Per rule and session: (found violating, truly violating); None: no label.
AUDIT = {
    # TP 1, FP 1, FN 1, TN 1 (s5 unlabelled): P 1/2, R 1/2, F1 1/2.
    "alpha": {"s1": (True, True), "s2": (True, False), "s3": (False, True), "s4": (False, False),
              "s5": (True, None)},
    # TP 3, FN 1, TN 1: P 1, R 3/4, F1 6/7.
    "beta": {"s1": (True, True), "s2": (True, True), "s3": (True, True), "s4": (False, True),
             "s5": (False, False)},
    # TN 5: precision, recall and F1 undefined.
    "gamma": {s: (False, False) for s in ("s1", "s2", "s3", "s4", "s5")},
    # No label at all: not listed.
    "delta": {s: (True, None) for s in ("s1", "s2", "s3", "s4", "s5")},
}
# Micro: TP 4, FP 1, FN 2, TN 7 over 14 labelled pairs of 15 audited: P 4/5, R 4/6, F1 8/11.
# Macro over the rules defining each figure: P (1/2 + 1)/2 = 3/4 and R (1/2 + 3/4)/2 = 5/8 over
# alpha and beta; F1 (1/2 + 6/7)/2 = 19/28 over the same two (gamma defines none).

EXPECTED_TEXT = """\
Audit {id}: agreement with ground truth over 3 rules with labels
rule                             labelled  audited  TP  FP  FN  TN  precision  recall    F1  labels outside
alpha                                   4        5   1   1   1   1       0.50    0.50  0.50               0
beta                                    5        5   3   0   1   1       1.00    0.75  0.86               0
gamma                                   5        5   0   0   0   5          —       —     —               1
Overall (micro-average)                14       15   4   1   2   7       0.80    0.67  0.73               1
Mean over rules (macro-average)                                          0.75    0.62  0.68

A session counts as found violating when its verdict at the end is violated; only labelled \
sessions count. Micro-average: the counts summed over rules. Macro-average: the plain mean of the \
rules' own figures, each over the rules where it is defined (precision: 2, recall: 2, F1: 2). — \
marks a ratio with nothing to divide by.
"""


def make_audit(team, status: str = "done") -> AuditRun:
    sessions = add_sessions(team, {s: [{"labels": []}] for s in ("s1", "s2", "s3", "s4", "s5")})
    run = AuditRun.objects.create(workspace=team.workspace, status=status, sessions_total=5,
                                  sessions_done=5 if status == "done" else 2)
    batch = AuditBatch.objects.create(run=run, index=0, session_ids=[s.id for s in
                                                                       sessions.values()])
    for rule, cells in AUDIT.items():
        version = add_rule(team, rule, "G !p")
        run.rule_versions.add(version)
        for session, (found, truly) in cells.items():
            verdict = "violated" if found else "satisfied"
            SessionResult.objects.create(run=run, batch=batch, session=sessions[session],
                                         rule_version=version, steps=1, verdict=verdict,
                                         final=verdict, residual="true")
            if truly is not None:
                GroundTruth.objects.create(workspace=team.workspace, session=session, rule=rule,
                                           violated=truly, imported_at=timezone.now())
    # A label of a session this audit did not cover: counted apart, never in the figures.
    GroundTruth.objects.create(workspace=team.workspace, session="elsewhere", rule="gamma",
                               violated=True, imported_at=timezone.now())
    return run


def run_command(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("labeling_quality", *[str(a) for a in args], stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_the_text_table_equals_the_hand_computed_figures():
    run = make_audit(make_team())
    out, err = run_command(run.id)
    assert out == EXPECTED_TEXT.format(id=run.id)
    assert err == ""


@pytest.mark.django_db
def test_the_json_document_equals_the_hand_computed_figures():
    run = make_audit(make_team())
    out, _ = run_command(run.id, "--format", "json")
    document = json.loads(out)
    assert document["audit"] == run.id and document["status"] == "done"
    rules = {r["rule"]: r for r in document["rules"]}
    assert list(rules) == ["alpha", "beta", "gamma"]
    assert [rules["beta"][k] for k in ("tp", "fp", "fn", "tn", "labelled", "audited")] == [
        3, 0, 1, 1, 5, 5]
    assert rules["beta"]["f1"] == pytest.approx(6 / 7)
    assert rules["gamma"]["precision"] is None and rules["gamma"]["labels_outside_run"] == 1
    overall = document["overall"]
    micro, macro = overall["micro"], overall["macro"]
    assert overall["rules"] == 3 and overall["audited"] == 15
    assert [micro[k] for k in ("tp", "fp", "fn", "tn", "labelled")] == [4, 1, 2, 7, 14]
    assert micro["precision"] == pytest.approx(4 / 5)
    assert micro["recall"] == pytest.approx(4 / 6)
    assert micro["f1"] == pytest.approx(8 / 11)
    assert macro["precision"] == pytest.approx(3 / 4)
    assert macro["recall"] == pytest.approx(5 / 8)
    assert macro["f1"] == pytest.approx(19 / 28)
    assert (macro["precision_rules"], macro["recall_rules"], macro["f1_rules"]) == (2, 2, 2)


@pytest.mark.django_db
def test_an_unfinished_audit_is_measured_with_a_warning():
    run = make_audit(make_team(), status="running")
    out, err = run_command(run.id)
    assert out == EXPECTED_TEXT.format(id=run.id)
    assert err.strip() == (f"audit {run.id} is running: the figures cover the 2 of 5 sessions "
                           "audited so far")


@pytest.mark.django_db
def test_nothing_to_measure_exits_with_status_2():
    team = make_team()
    with pytest.raises(CommandError) as caught:
        run_command(987654)
    assert caught.value.returncode == 2 and str(caught.value) == "no audit with id 987654"

    run = make_audit(team)
    GroundTruth.objects.all().delete()
    with pytest.raises(CommandError) as caught:
        run_command(run.id)
    assert caught.value.returncode == 2
    assert f"audit {run.id} has no ground truth: no label names any of its rules" in str(
        caught.value)

    # Labels of its rules, but only for sessions it did not audit.
    GroundTruth.objects.create(workspace=team.workspace, session="elsewhere", rule="alpha",
                               violated=True, imported_at=timezone.now())
    with pytest.raises(CommandError) as caught:
        run_command(run.id)
    assert caught.value.returncode == 2
    assert "labels name its rules, but none of the sessions it audited" in str(caught.value)


# ---------------------------------------------------------------------------------------------
# quality.overall, pure

def test_overall_of_the_hand_made_audit():
    alpha, beta, gamma = (quality.Confusion(1, 1, 1, 1), quality.Confusion(3, 0, 1, 1),
                          quality.Confusion(tn=5))
    figures = quality.overall([alpha, beta, gamma, quality.Confusion()])
    assert figures.rules == 3  # a rule without a labelled session adds nothing
    assert figures.micro == quality.Confusion(4, 1, 2, 7)
    assert figures.macro_precision == quality.Mean(pytest.approx(3 / 4), 2)
    assert figures.macro_f1 == quality.Mean(pytest.approx(19 / 28), 2)
    nothing = quality.overall([])
    assert nothing.micro == quality.Confusion() and nothing.macro_f1 == quality.Mean(None, 0)


per_rule = st.lists(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=20), max_size=6)


@given(per_rule)
def test_micro_pools_every_pair_and_macro_is_the_mean_of_defined_figures(rules):
    counts = [quality.confusion(pairs) for pairs in rules]
    figures = quality.overall(counts)
    assert figures.micro == quality.confusion(p for pairs in rules for p in pairs)
    f1s = [c.f1 for c in counts if c.f1 is not None]
    assert figures.macro_f1.rules == len(f1s)
    if f1s:
        assert figures.macro_f1.value == pytest.approx(sum(f1s) / len(f1s))
        assert min(f1s) <= figures.macro_f1.value <= max(f1s) + 1e-12
    else:
        assert figures.macro_f1.value is None
    assert figures.as_dict()["micro"] == figures.micro.as_dict()
