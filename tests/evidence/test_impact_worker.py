"""The impact check on a real Celery worker: started in a process with a broker, its batches run
by ``celery worker`` (Postgres and Redis needed: skipped without them, like the audits' worker
test), with the same summary as the in-process run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from django.db import connection

from studio.evidence.impact import impact_result
from studio.evidence.models import ImpactCheck
from studio.rules import services as rules
from tests.audits.helpers import add_rule, add_sessions, make_team, random_sessions


@pytest.mark.django_db(transaction=True)
def test_an_impact_check_runs_on_a_real_worker(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs Postgres: the worker must share the test database")
    from tests.audits.test_worker_kill import Workers, _database_url, _redis_or_skip

    _redis_or_skip()
    team = make_team("impactworker")
    approved = add_rule(team, "retried", "G(error -> X retry)")
    add_sessions(team, random_sessions(11, 40, high=30))
    draft = rules.new_version(approved.rule, team.author, "G(error -> F[0,2] retry)")
    queue = f"impact-test-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "DATABASE_URL": _database_url(),
           "CELERY_BROKER_URL": "redis://127.0.0.1:6379/7", "CELERY_QUEUE": queue,
           "DJANGO_SETTINGS_MODULE": "studio.settings", "PYTHONUNBUFFERED": "1",
           "AUDIT_BATCH_SIZE": "7"}
    workers = Workers(env, queue, tmp_path)
    try:
        workers.start()
        script = ("import django\n"
                  "django.setup()\n"
                  "import worker  # noqa: F401 - the Celery app, configured from settings\n"
                  "from studio.evidence.impact import start_impact\n"
                  "from studio.rules.models import RuleVersion\n"
                  f"print(start_impact(RuleVersion.objects.get(pk={draft.pk}), None).id)\n")
        producer = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                  text=True, timeout=120, check=False)
        assert producer.returncode == 0, producer.stderr
        check = ImpactCheck.objects.get(pk=int(producer.stdout.split()[-1]))
        assert check.run.batches_total > 1
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            result = impact_result(ImpactCheck.objects.get(pk=check.pk))
            if result["summary"] is not None or result["progress"]["status"] == "failed":
                break
            time.sleep(0.2)
        assert result["summary"] is not None, f"{result['progress']}\n{workers.output()}"
    finally:
        workers.stop_all()
    summary = result["summary"]
    assert summary["sessions_compared"] == 40
    # The in-process answer over the same sessions (tasks run here after commit) is the same.
    from studio.evidence.impact import start_impact

    again = impact_result(start_impact(draft, None))
    def plain(found):  # result row ids differ between the runs
        return {**found, "sessions_list": [
            {k: v for k, v in c.items() if not k.startswith("result_")}
            for c in found["sessions_list"]]}

    assert plain(again["summary"]) == plain(summary)
    assert summary["sessions_changed"] > 0
