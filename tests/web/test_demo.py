"""`manage.py load_demo` loads real logs, approved rules and finished audits with violations."""

from django.core.management import call_command

from studio.audits.models import AuditRun, SessionResult
from studio.rules.models import RuleVersion


def test_demo_shows_real_violations(transactional_db, settings, tmp_path):
    # transactional: audits are enqueued on commit, as when the command runs for real
    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo")
    assert AuditRun.objects.count() == 3
    assert set(AuditRun.objects.values_list("status", flat=True)) == {"done"}
    assert RuleVersion.objects.exclude(status="approved").count() == 0
    # Written once the logs were loaded: every rule reads atoms and fields the demo produces.
    assert {v.rule.name: v.submitted_warnings for v in RuleVersion.objects.all()
            if v.submitted_warnings} == {}
    violated = {r["rule_version__rule__name"] for r in
                SessionResult.objects.filter(violation_count__gt=0).values("rule_version__rule__name")}
    # The perturbed TextWorld sessions were made to break these rules (shared/data/README.md).
    assert {"no_drop", "take_then_examine", "stay_in_kitchen", "knife_needed"} <= violated
    # The guard's risk model of the live rules is asked for (learned at once without a broker).
    from studio.guard.models import LearnedRiskModel

    assert LearnedRiskModel.objects.filter(workspace__slug="demo").count() == 1
    call_command("load_demo")  # a second run changes nothing
    assert AuditRun.objects.count() == 3
    assert LearnedRiskModel.objects.count() == 1


def test_demo_has_the_merge_scenario_with_its_flagged_guard(transactional_db, settings, tmp_path):
    from django.test import Client

    from studio.traces.models import Event, TraceSession

    settings.UPLOAD_ROOT = tmp_path
    call_command("load_demo")
    merge = TraceSession.objects.get(external_id="msc-merge-demo")
    assert Event.objects.filter(session=merge).exclude(message_id="").exists()
    client = Client()
    assert client.login(username="ann", password="demo-password")
    page = client.get(f"/w/demo/sessions/{merge.id}/msc").content.decode()
    assert "TestRunner" in page and "Committer" in page
    assert "≠" in page  # the choice where the log order and the causal past disagree
    assert "this workspace&#x27;s causal guards</a>" in page  # declared, not a fallback
