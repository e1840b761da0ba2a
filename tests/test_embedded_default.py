"""The README's run command on its embedded default - SQLite, tasks in-process, the demo loaded -
in processes of their own, whatever database the rest of the suite uses.  CI runs on Postgres, so
without this the SQLite path goes untested: a migration SQLite could not run, an upload erasure
answering 500 and the demo's risk model queued for ever all once passed a green CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Run by ``manage.py shell``: the pages a newcomer opens first, an audit's report, then an
# erasure of an upload; prints what it saw as JSON.
CHECKS = r"""
import json
from django.test import Client
from studio.audits.models import AuditRun
from studio.guard.models import LearnedRiskModel
from studio.traces.models import Event, TraceSession, Upload

client = Client(raise_request_exception=False, HTTP_HOST="127.0.0.1")
assert client.login(username="ann", password="demo-password")
pages = ["/w/demo/", "/w/demo/sessions/", "/w/demo/live/", "/w/demo/log/", "/w/demo/uploads/",
         "/w/demo/guard/model", "/api/w/demo/rules"]
pages += [f"/w/demo/audits/{run.pk}/" for run in AuditRun.objects.all()[:3]]
status = {page: client.get(page).status_code for page in pages}
upload = Upload.objects.filter(workspace__slug="demo").order_by("pk").first()
status["erase"] = client.delete(f"/api/w/demo/uploads/{upload.pk}").status_code
empty = TraceSession.objects.filter(workspace__slug="demo", steps__gt=0).exclude(
    pk__in=Event.objects.values("session_id")).count()
print(json.dumps({"status": status, "empty_sessions_left": empty,
                  "events_of_upload": Event.objects.filter(upload_id=upload.pk).count(),
                  "models": list(LearnedRiskModel.objects.values_list("status", flat=True))}))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_the_run_command_works_on_the_embedded_default(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABASE_URL", "CELERY_", "REDIS_", "PYTEST_", "DJANGO_"))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'studio.sqlite3'}",
               UPLOAD_ROOT=str(tmp_path / "uploads"), DJANGO_SETTINGS_MODULE="studio.settings")

    def manage(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"manage.py {args[0]}: {done.stderr[-3000:]}"
        return done.stdout

    manage("migrate", "--no-input")
    loaded = manage("load_demo")
    assert "risk model:" in loaded and "states learned" in loaded, loaded
    seen = json.loads(manage("shell", "-c", CHECKS).strip().splitlines()[-1])
    assert all(code == 200 for code in seen["status"].values()), seen
    assert seen["events_of_upload"] == 0 and seen["empty_sessions_left"] == 0, seen
    assert seen["models"] and set(seen["models"]) == {"ready"}, seen
