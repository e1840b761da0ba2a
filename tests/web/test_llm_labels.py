"""LLM labelers in audits and on the session page, against a local OpenAI-compatible server
started by the tests: steps asked about in batches, answers cached in the database so a second
audit costs nothing, their provenance shown next to each label, and an auditor's correction
flipping a verdict."""

from __future__ import annotations

import math

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from studio.audits import services
from studio.audits.models import LabelCorrection, LabelProvenance, RunStatus, SessionResult
from studio.rules import services as rule_services
from studio.rules.models import LLMCacheEntry
from studio.workspaces.models import AuditLogEntry
from tests.audits.helpers import add_labeler, add_rule, add_sessions
from tests.labeling.chat_server import ChatServer, Reply, keyword_labeler

pytestmark = pytest.mark.django_db

MODEL = "gpt-test"
LEAK = {"description": "the agent reveals a password", "batch_size": 4}


@pytest.fixture
def llm(monkeypatch):
    """The endpoint: a step holds ``leak`` when its text says "password"."""
    server = ChatServer(keyword_labeler("password")).start()
    monkeypatch.setenv("LLM_BASE_URL", server.url)
    monkeypatch.setenv("LLM_MODEL", MODEL)
    monkeypatch.setenv("LLM_MAX_RETRIES", "0")
    forget_prepared()
    yield server
    server.stop()
    forget_prepared()


def forget_prepared():
    # Runs share compiled rules and labelers per thread (with the answers the labelers keep in
    # memory): forgetting them shows what the database cache alone does.
    getattr(services._prepared, "cache", {}).clear()


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    def start(team):
        with django_capture_on_commit_callbacks(execute=True):
            run = services.start_audit(team.workspace, None, None, team.auditor)
        run.refresh_from_db()
        return run

    return start


@pytest.fixture
def team_slug():
    return "llm"


@pytest.fixture
def team(team):
    add_rule(team, "no_leak", "G !leak")
    add_labeler(team, "leak", "llm", LEAK)
    team.sessions = add_sessions(team, {
        "chatty": [{"input": "hello", "output": "hi, how can I help?"},
                   {"input": "my account?", "output": "looking it up"},
                   {"input": "and?", "output": "your password is hunter2"},
                   {"input": "thanks", "output": "anything else?"},
                   {"input": "no", "output": "bye"},
                   {"input": "", "output": "session closed"}],
        "careful": [{"input": f"question {n}", "output": f"answer {n}"} for n in range(5)],
    })
    return team


def verdict(run, team, session) -> SessionResult:
    return SessionResult.objects.get(run=run, session=team.sessions[session])


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page_url(team, session, run, step=None) -> str:
    query = f"?run={run.id}" + (f"&step={step}" if step is not None else "")
    return f"/w/{team.workspace.slug}/sessions/{team.sessions[session].id}/{query}"


def test_an_audit_asks_about_its_steps_in_batches_and_a_second_audit_costs_nothing(
        team, llm, start):
    run = start(team)
    assert run.status == RunStatus.DONE, run.error
    assert llm.count == math.ceil(11 / LEAK["batch_size"])
    assert {r["model"] for r in llm.requests} == {MODEL}
    assert verdict(run, team, "chatty").verdict == "violated"
    # G !leak stays pending while a session runs; at its end (LTLf) it is satisfied.
    assert verdict(run, team, "careful").final == "satisfied"
    # The run pinned the model it labelled with.
    assert run.labelers == [{"kind": "llm", "atom": "leak", "config": {**LEAK, "model": MODEL}}]
    # Every answer is kept with its provenance, true or false.
    answers = list(LabelProvenance.objects.filter(run=run).order_by("session_id", "step")
                   .values_list("step", "value", "model", "confidence", "labeler"))
    assert len(answers) == 11
    assert [a[0] for a in answers if a[1]] == [2]
    assert {a[2:] for a in answers} == {(MODEL, 0.82, "llm")}
    assert LLMCacheEntry.objects.filter(model=MODEL).count() == 11

    forget_prepared()
    again = start(team)
    assert again.status == RunStatus.DONE
    assert llm.count == 3  # every answer came from the database cache
    assert verdict(again, team, "chatty").verdict == "violated"
    assert LabelProvenance.objects.filter(run=again).count() == 11


def test_an_audit_needs_an_endpoint_and_says_so(team, monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    with pytest.raises(services.ServiceError) as refused:
        services.start_audit(team.workspace, None, None, team.auditor)
    assert "the LLM labelers (leak) need an endpoint" in refused.value.message
    assert "set LLM_BASE_URL" in refused.value.message


def test_a_failing_endpoint_fails_the_run_with_a_clear_reason(team, llm, start):
    llm.responder = lambda request: Reply(status=500, body='{"error": {"message": "GPU on fire"}}')
    run = start(team)
    assert run.status == RunStatus.FAILED
    assert "LLMError: the LLM endpoint" in run.error
    assert "it answered 500: GPU on fire" in run.error
    assert "Traceback" not in run.error


def test_llm_labelers_are_declared_through_the_services(team):
    labeler = rule_services.create_labeler(team.workspace, team.author, "asks_consent", "llm",
                                           {"description": "the agent asks for consent",
                                            "fields": ["output"]})
    assert labeler.kind == "llm"
    with pytest.raises(services.ServiceError) as refused:
        rule_services.create_labeler(team.workspace, team.author, "x", "llm",
                                     {"description": "d", "batch_size": 500})
    assert refused.value.field == "config.batch_size"


def test_the_session_page_shows_where_each_llm_label_came_from(team, llm, start):
    run = start(team)
    requests = llm.count
    forget_prepared()
    with CaptureQueriesContext(connection) as queries:
        page = client_of(team.auditor).get(page_url(team, "chatty", run, step=2))
    assert page.status_code == 200
    # The replays (labels, residual) read the stored answers in one query, not one per step.
    cache_table = LLMCacheEntry._meta.db_table
    assert sum(cache_table in q["sql"] for q in queries.captured_queries) == 1
    text = page.content.decode()
    assert "· llm · gpt-test · 0.82" in text
    assert text.count('class="small muted label-answer"') == 6  # one answer per step
    assert "Correct a label" in text and 'name="value" value="false"' in text
    assert llm.count == requests  # the page replays the run from the cached answers

    # Only auditors correct labels: the author sees the answers, not the forms.
    author_page = client_of(team.author).get(page_url(team, "chatty", run)).content.decode()
    assert "· llm · gpt-test · 0.82" in author_page and "Correct a label" not in author_page


def test_a_correction_through_the_page_flips_the_verdict(team, llm, start):
    run = start(team)
    requests = llm.count
    assert verdict(run, team, "chatty").verdict == "violated"
    assert verdict(run, team, "chatty").violation_count == 1
    url = f"/w/{team.workspace.slug}/sessions/{team.sessions['chatty'].id}/labels"
    auditor = client_of(team.auditor)

    answer = auditor.post(url, {"run": run.id, "step": 2, "atom": "leak", "value": "false"})
    assert answer.status_code == 303
    assert answer["Location"].endswith("step=2#step-2")
    result = verdict(run, team, "chatty")
    assert (result.verdict, result.final, result.violation_count) == ("pending", "satisfied",
                                                                      0)
    assert llm.count == requests  # recomputed from the cached answers
    correction = LabelCorrection.objects.get()
    assert (correction.atom, correction.value, correction.corrected_by) == (
        "leak", False, team.auditor)
    logged = AuditLogEntry.objects.filter(action="label.corrected").get()
    assert logged.actor == team.auditor
    assert logged.details["step"] == 2 and logged.details["value"] is False
    assert logged.details["labeler_answer"] is True and logged.details["run"] == run.id

    page = auditor.get(answer["Location"]).content.decode()
    assert "Step 2: leak does not hold. The verdicts of audit run" in page
    assert "corrected by auditor-llm" in page
    # The LLM's answer is still shown, next to the correction that overrides it.
    assert "· llm · gpt-test · 0.82 · overridden by a correction" in page
    assert "remove<span class=\"sr-only\"> the correction of leak at step 2" in page

    # The evidence report tells a regulator a person overrode a label, who and when.
    evidence = auditor.get(f"/w/{team.workspace.slug}/audits/{run.id}/evidence").content.decode()
    section = evidence.split('id="corrections-heading"', 1)[1].split("</section>", 1)[0]
    assert "1 correction" in section and "auditor-llm" in section
    assert "<code>chatty</code>" in section and "<code>leak</code>" in section
    assert "<td>does not hold</td>" in section  # in words, as the session page says it

    # Audits run later use the correction too.
    later = start(team)
    assert verdict(later, team, "chatty").final == "satisfied"

    # Removing it gives the verdict back to the labeler.
    auditor.post(url, {"run": run.id, "step": 2, "atom": "leak", "value": "clear"})
    assert verdict(run, team, "chatty").verdict == "violated"
    assert not LabelCorrection.objects.exists()
    assert AuditLogEntry.objects.filter(action="label.correction_removed").count() == 1

    # A missed label can be added as well.
    auditor.post(url, {"run": run.id, "step": 0, "atom": "leak", "value": "true"})
    assert verdict(run, team, "chatty").violation_count == 2


def test_only_auditors_correct_and_mistakes_get_messages(team, llm, start):
    run = start(team)
    url = f"/w/{team.workspace.slug}/sessions/{team.sessions['chatty'].id}/labels"
    assert client_of(team.author).post(url, {"run": run.id, "step": 2, "atom": "leak",
                                             "value": "false"}).status_code == 403
    assert client_of(team.outsider).post(url, {"run": run.id, "step": 2, "atom": "leak",
                                               "value": "false"}).status_code == 404
    auditor = client_of(team.auditor)
    for form, message in [({"step": 99, "value": "false"}, "has no step 99"),
                          ({"step": 2, "value": "maybe"}, "Choose whether the atom holds"),
                          ({"step": "two", "value": "false"}, "is not a valid step number"),
                          ({"step": 2, "value": "false", "atom": " "}, "Name the atom")]:
        answer = auditor.post(url, {"run": run.id, "atom": "leak", **form}, follow=True)
        assert message in answer.content.decode(), form
    assert not LabelCorrection.objects.exists()
    assert verdict(run, team, "chatty").verdict == "violated"
    assert auditor.post(url, {"run": 10**9, "step": 2, "atom": "leak",
                              "value": "false"}).status_code == 404
