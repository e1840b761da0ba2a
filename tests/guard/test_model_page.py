"""The risk model page: status and progress (polled while learning), learning again (roles,
CSRF), the model drawn with every text escaped, and live sessions' risk over time."""

from __future__ import annotations

import random
import re

import pytest
from django.test import Client
from django.urls import reverse

from studio.guard import drawing, learning
from studio.guard.models import LearnedRiskModel, ModelStatus
from studio.monitor import RuleSet as CompiledRules
from studio.risk.abstraction import Abstraction
from studio.risk.predictor import RiskModel
from studio.traces.models import TraceSession
from studio.workspaces.models import Role
from studio.workspaces.services import add_member, create_user
from tests.audits.helpers import add_rule, add_sessions, make_team

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script>"
RULES = [("approval", "G(pay -> O approved)"), ("quiet", f'G !"{HOSTILE}"'),
         ("reply", "G(ask -> F answer)")]
ATOMS = ["pay", "approved", "ask", "answer", HOSTILE]


def logs(count: int, seed: int = 0) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    return {f"s{seed}-{i:03d}": [{"labels": rng.sample(ATOMS, rng.randint(0, 2))}
                                 for _ in range(rng.randint(1, 6))]
            for i in range(count)}


@pytest.fixture
def team_slug():
    return "page"


@pytest.fixture
def team(team):
    for name, formula in RULES:
        add_rule(team, name, formula)
    return team


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(team, name="guard_model") -> str:
    return reverse(name, kwargs={"slug": team.workspace.slug})


@pytest.fixture
def ready(team, django_capture_on_commit_callbacks):
    add_sessions(team, logs(60))
    with django_capture_on_commit_callbacks(execute=True):
        made = learning.request_model(team.workspace, team.author)
    made.refresh_from_db()
    assert made.status == ModelStatus.READY, made.error
    return made


def test_outsiders_get_404_and_members_see_the_page(team):
    outsider = client_for(team.outsider)
    assert outsider.get(url(team)).status_code == 404
    assert outsider.get(url(team, "guard_model_progress")).status_code == 404
    assert outsider.post(url(team, "guard_model_learn")).status_code == 404
    assert not LearnedRiskModel.objects.exists()
    assert Client().get(url(team)).status_code == 302   # to sign in
    page = client_for(team.auditor).get(url(team))
    assert page.status_code == 200
    text = page.content.decode()
    assert "No model has been learned yet." in text
    assert "Learn again" not in text          # auditors do not learn models
    assert "Learn again" in client_for(team.author).get(url(team)).content.decode()


def test_the_model_is_drawn_with_every_text_escaped(team, ready):
    text = client_for(team.auditor).get(url(team)).content.decode()
    assert HOSTILE not in text and "alert(1)" in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="risk-model"' in text
    assert f"Model #{ready.pk}, learned" in text and "The guard uses it for the live rules." in text
    # Unsafe states are marked and name their rule; states short of samples say so.
    assert re.search(r'class="gm-state gm-step gm-unsafe[^"]*"', text)
    assert "breaks: approval" in text
    assert re.search(r"\d+ of \d+ samples", text) and "gm-few" in text
    assert "The drawn states as a table" in text
    # What a waiting rule still owes is said in words, the formula one click away.
    assert "reply: still owed: the next step or a later one is labelled answer" in text
    assert "seen too few times for its chances to be trusted" in text


def test_a_model_whose_rule_versions_are_gone_says_so(team, ready):
    from studio.rules.models import RuleVersion

    RuleVersion.objects.filter(rule__name="reply").delete()
    learning.clear_caches()
    text = client_for(team.auditor).get(url(team)).content.decode()
    assert "It cannot be drawn: the rule versions this model is for no longer exist: reply" in text
    assert "The live rules have changed since" in text


def test_the_drawing_caps_states_and_hides_small_edges(monkeypatch):
    monkeypatch.setattr(drawing, "MAX_STATES", 12)
    rules = CompiledRules([("approval", "G(pay -> O approved)"), ("reply", "G(ask -> F answer)")])
    rng = random.Random(3)
    sessions = [[{"labels": rng.sample(["pay", "approved", "ask", "answer", "a", "b"],
                                       rng.randint(0, 3))} for _ in range(rng.randint(1, 12))]
                for _ in range(300)]
    model = RiskModel.learn(Abstraction(rules, exclusions=()), sessions)
    picture = drawing.draw_model(model)
    assert len(model.states) > drawing.MAX_STATES
    assert len(picture.rows) == drawing.MAX_STATES
    assert picture.states_hidden == len(model.states) - drawing.MAX_STATES
    assert picture.rows[0].kind == "start"
    assert picture.edges_small + picture.edges_to_hidden > 0
    assert str(picture.svg).count('<g class="gm-edge') == picture.edges_drawn


def test_progress_is_polled_while_learning_and_the_page_reloads_once_done(team):
    made = learning.request_model(team.workspace, team.author)   # queued: no task ran
    client = client_for(team.auditor)
    text = client.get(url(team)).content.decode()
    poll = f'{url(team, "guard_model_progress")}?shown={made.pk}'
    assert f'hx-get="{poll}"' in text and "Waiting for a worker." in text
    LearnedRiskModel.objects.filter(pk=made.pk).update(status=ModelStatus.RUNNING,
                                                       progress_total=40, progress_done=10)
    part = client.get(poll, headers={"HX-Request": "true"})
    assert part.status_code == 200
    assert "10 of 40 sessions read." in part.content.decode()
    assert "<html" not in part.content.decode()
    LearnedRiskModel.objects.filter(pk=made.pk).update(status=ModelStatus.FAILED,
                                                       error="the <b>solver</b> gave up")
    done = client.get(poll, headers={"HX-Request": "true"})
    assert done.status_code == 204 and done["HX-Refresh"] == "true"
    text = client.get(url(team)).content.decode()
    assert "Learning failed." in text and "the &lt;b&gt;solver&lt;/b&gt; gave up" in text
    assert "guard/model/progress" not in text   # no more polling


def test_learning_again_takes_a_post_with_csrf_and_the_right_role(
        team, django_capture_on_commit_callbacks):
    add_sessions(team, logs(10))
    learn = url(team, "guard_model_learn")
    assert client_for(team.author).get(learn).status_code == 405
    assert client_for(team.auditor).post(learn).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(team.author)
    assert strict.post(learn).status_code == 403
    assert not LearnedRiskModel.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(team.author).post(learn)
    assert answer.status_code == 302 and answer["Location"] == url(team)
    made = LearnedRiskModel.objects.get()
    assert made.status == ModelStatus.READY and made.requested_by == team.author
    assert made.reason == "asked for on the page"
    admin = create_user("admin-page")
    add_member(team.workspace, admin, Role.ADMIN)
    with django_capture_on_commit_callbacks(execute=True):
        client_for(admin).post(learn)
    assert LearnedRiskModel.objects.count() == 2


def test_nothing_to_learn_is_said_on_the_page(db):
    team = make_team("bare")
    answer = client_for(team.author).post(url(team, "guard_model_learn"), follow=True)
    assert "no approved rule is monitored live" in answer.content.decode()


def test_live_sessions_risk_over_time(team, ready):
    live_logs = {"agent-1": [{"labels": ["ask"]}, {"labels": []}, {"labels": ["pay"]},
                             {"labels": ["answer"]}],
                 "agent-2": [{"labels": ["approved"]}]}
    made = add_sessions(team, live_logs)
    TraceSession.objects.filter(pk__in=[s.pk for s in made.values()]).update(source="live")
    text = client_for(team.auditor).get(url(team)).content.decode()
    assert text.count('class="risk-chart"') == 2
    assert "At step 2 the session broke approval." in text
    assert re.search(r"Now, after step 3, it is (&lt;|&gt;)?\d+%\.", text)
    assert "threshold 50%" in text


def test_risk_words_for_a_compliance_officer():
    points = [drawing.RiskPoint(0, 0.1, True, []), drawing.RiskPoint(1, 0.2, False, []),
              drawing.RiskPoint(4, 0.4, True, []), drawing.RiskPoint(5, None, False, []),
              drawing.RiskPoint(6, 0.05, True, [])]
    words = drawing.risk_words(points, 0.3, 5)
    assert words[0] == ("After step 4 the chance of breaking a rule within 5 steps rose to 40% "
                        "(the guard's threshold is 30%).")
    assert words[1] == "After step 5 it fell back below the threshold, to 5%." or \
        "After step 6 it fell back below the threshold, to 5%." in words
    assert any("After step 5 the session reached a state the model never saw" in w
               for w in words)
    assert "Now, after step 6, it is 5%." in words
    assert any("fewer samples than the PAC bound" in w for w in words)
    assert drawing.risk_words(points[2:3], 0.3, 5)[0].startswith(
        "After step 4 the chance of breaking a rule within 5 steps was already 40%")
    calm = drawing.risk_words(points[:2], 0.3, 1)
    assert calm[0].startswith("The chance of breaking a rule within 1 step stayed below")
    chart = str(drawing.draw_risk(points, 0.3, "a <label>"))
    assert "&lt;label&gt;" in chart and chart.count("<circle") == 4


def test_the_live_page_links_to_the_model(team):
    text = client_for(team.auditor).get(reverse("live", kwargs={"slug": "page"})).content
    assert url(team).encode() in text
