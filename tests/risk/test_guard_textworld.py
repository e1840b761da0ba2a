"""The closed-loop evaluation's bookkeeping (bench.guard_textworld) on a tiny fake game: no
TextWorld needed, and none imported."""

import sys

import pytest

from bench.guard_textworld import (
    RULES, Condition, Episode, Setup, View, WalkthroughAgent, event_for, goal, learn_model,
    prediction_quality, run_episode, summarize,
)
from studio.monitor import RuleSet
from studio.risk.guard import DTMC, EXACT, INJECT, RESAMPLE, SAMPLING, STOP

PLAN = ["take carrot from counter", "take knife from counter", "chop carrot with knife",
        "prepare meal", "eat meal"]


class FakeGame:
    """A one-room cooking game: the plan's commands in order win it, eating the carrot loses
    it, anything else changes nothing."""

    def __init__(self, admissible=("examine carrot", "drop carrot", "look")):
        self.admissible = list(admissible)
        self.done = 0

    def reset(self, game):
        self.done, self.lost = 0, False
        return self._view()

    def step(self, command):
        if command == "eat carrot":
            self.lost = True
        elif self.done < len(PLAN) and command == PLAN[self.done]:
            self.done += 1
        return self._view()

    def _view(self):
        won = self.done == len(PLAN)
        return View(self.admissible, [] if self.lost else PLAN[self.done:], "kitchen", won,
                    self.lost, won or self.lost)


def setup(**kwargs):
    return Setup(RuleSet(RULES), **kwargs)


def test_no_textworld_is_imported():
    assert "textworld" not in sys.modules


def test_the_walkthrough_examines_what_was_just_taken():
    assert WalkthroughAgent.walkthrough(PLAN[1:], PLAN[0]) == "examine carrot"
    assert WalkthroughAgent.walkthrough(PLAN[1:], "take knife") == "examine knife"
    assert WalkthroughAgent.walkthrough(PLAN[1:], "examine carrot") == PLAN[1]
    assert WalkthroughAgent.walkthrough([], "look") is None


def test_labels_come_from_the_library_labelers():
    assert event_for("take knife from counter", "kitchen")["labels"] == [
        "in_kitchen", "take", "take_knife"]
    assert event_for("dice carrot with knife", "pantry")["labels"] == ["use_knife"]


def test_a_careful_agent_completes_without_violations():
    episode = run_episode(FakeGame(), "g", WalkthroughAgent(0.0), Condition("no guard", None),
                          setup(), seed=1)
    assert episode.completed and not episode.stopped and episode.violations == []
    assert episode.steps == len(PLAN) + 2   # an examine after each of the two takes


def test_violations_are_counted_per_step_and_the_episode_is_not_completed():
    game = FakeGame(admissible=["drop carrot"])
    episode = run_episode(game, "g", WalkthroughAgent(1.0), Condition("no guard", None),
                          setup(max_steps=4), seed=1)
    assert episode.steps == 4 and not episode.completed
    assert episode.violations == [("no_drop", s, False) for s in range(4)]
    row = summarize([episode, run_episode(FakeGame(), "g", WalkthroughAgent(0.0),
                                          Condition("no guard", None), setup(), seed=2)])
    assert row["violations_per_episode"] == 2.0
    assert row["episodes_with_violation"] == 0.5 and row["completion"] == 0.5
    assert row["violations_by_rule"]["no_drop"] == 4
    assert row["episodes_with_step_violation"] == 0.5 and row["open_at_end_per_episode"] == 0


def test_an_open_obligation_at_the_end_is_a_violation():
    game = FakeGame(admissible=["take carrot from counter"])
    episode = run_episode(game, "g", WalkthroughAgent(1.0), Condition("no guard", None),
                          setup(max_steps=1), seed=1)
    assert episode.violations == [("take_then_examine", 0, True)]
    row = summarize([episode])
    assert row["episodes_with_violation"] == 1.0 and row["episodes_with_step_violation"] == 0
    assert row["open_at_end_per_episode"] == 1.0


def test_the_exact_check_resamples_then_falls_back_to_stop():
    game = FakeGame(admissible=["drop carrot"])
    episode = run_episode(game, "g", WalkthroughAgent(1.0),
                          Condition("exact", EXACT, RESAMPLE), setup(max_resamples=3), seed=1)
    assert episode.stopped and episode.stopped_by_fallback
    assert episode.resamples == 3 and episode.steps == 0 and episode.violations == []
    assert not episode.completed


def test_stop_is_not_a_fallback_and_inject_is_counted():
    game = FakeGame(admissible=["drop carrot"])
    stopped = run_episode(game, "g", WalkthroughAgent(1.0), Condition("stop", EXACT, STOP),
                          setup(), seed=1)
    assert stopped.stopped and not stopped.stopped_by_fallback and stopped.resamples == 0
    injected = run_episode(game, "g", WalkthroughAgent(1.0, inject_factor=0.0),
                           Condition("inject", EXACT, INJECT), setup(), seed=1)
    # the hint makes this agent follow the walkthrough: one injection per slip caught
    assert injected.completed and injected.violations == []
    assert injected.injections >= 1 and injected.resamples == 0


def test_predictors_run_in_the_loop_and_record_risks():
    game = FakeGame()
    agent = WalkthroughAgent(0.5)
    s = setup(samples=4)
    s.model, stats = learn_model(game, ["g"], agent, s, episodes=30, seed=100)
    assert stats["states"] == len(s.model.states) > 2
    baseline = run_episode(game, "g", agent, Condition("no guard", None), s, seed=7,
                           record=(DTMC, SAMPLING))
    assert len(baseline.risks[DTMC]) == len(baseline.risks[SAMPLING]) == baseline.steps
    for condition in (Condition("d", DTMC, RESAMPLE, 0.5), Condition("s", SAMPLING, RESAMPLE,
                                                                      0.5)):
        guarded = run_episode(game, "g", agent, condition, s, seed=7)
        # every drop proposed violates at once, so the guard never lets one through
        assert not any(rule == "no_drop" for rule, _, _ in guarded.violations)
    again = run_episode(game, "g", agent, Condition("s", SAMPLING, RESAMPLE, 0.5), s, seed=7)
    assert again.to_json() == guarded.to_json()   # seeded: the same episode twice


def test_the_default_policy_runs_in_the_loop_and_never_lets_a_drop_through():
    """An agent that drops the carrot unless it happens to look: the default policy (its
    unbacked DTMC estimates reported, not acted on) resamples the drops and lets the looks go
    ahead; the papers' conditions keep acting on every estimate and stopping."""
    game = FakeGame(admissible=["drop carrot", "look"])
    agent = WalkthroughAgent(1.0)
    s = setup(max_resamples=10, max_steps=6)   # 11 drops in a row: 1 chance in 2,048
    s.model, _ = learn_model(game, ["g"], agent, s, episodes=10, seed=3)
    default = Condition("default policy, DTMC", DTMC, default_policy=True)
    assert default.policy(3).fallback == "best_accepted"
    assert not default.policy(3).act_on_unbacked
    for seed in range(5):
        played = run_episode(game, "g", agent, default, s, seed=seed)
        assert not played.stopped
        assert not any(rule == "no_drop" for rule, _, _ in played.violations)
        assert played.steps == 6
    papers = Condition("exact", EXACT, RESAMPLE)
    assert papers.policy(3).act_on_unbacked and papers.policy(3).fallback == STOP


def episode(risks, violations):
    return Episode(len(risks), False, False, False, False, 0, 0, violations, [],
                   {DTMC: risks})


def test_precision_recall_and_lead_time():
    # step:      0    1    2    3     4    5
    risks = [0.0, 0.6, 0.2, 0.9, None, 0.7]
    # violations detected at steps 3 and 5; window 3: steps 1-3 and 3-5 lead to one
    found = prediction_quality([episode(risks, [("r", 3, False), ("r", 5, True)])], DTMC, 0.5)
    # alarms at 1, 3, 5 (all true); steps 2 and 4 true without an alarm; step 0 false
    assert found["precision"] == 1.0 and found["recall"] == pytest.approx(3 / 5)
    # violation at 3: first alarm in 1..3 is at 1 (lead 2); at 5: first alarm in 3..5 is 3
    assert found["mean_lead_steps"] == 2.0 and found["violations_missed"] == 0
    assert found["steps_unknown_state"] == 1
    quiet = prediction_quality([episode([0.9, 0.1], [])], DTMC, 0.5)
    assert quiet["precision"] == 0.0 and quiet["recall"] is None
    missed = prediction_quality([episode([0.0, 0.0, 0.0], [("r", 2, False)])], DTMC, 0.5)
    assert missed["recall"] == 0.0 and missed["violations_missed"] == 1
    assert missed["mean_lead_steps"] is None


def test_the_goal_compares_with_the_unguarded_run():
    base = {"episodes_with_violation": 0.5, "episodes_with_step_violation": 0.4,
            "completion": 0.6}

    def row(bad, at_step, done):
        return {"episodes_with_violation": bad, "episodes_with_step_violation": at_step,
                "completion": done}

    met = goal(row(0.04, 0.0, 0.55), base)
    assert met["goal_met"] and met["goal_met_steps"]
    assert met["fewer_violating_episodes"] == pytest.approx(0.92)
    assert met["completion_kept"] == pytest.approx(0.55 / 0.6)
    # obligations left open at the end count in the first reading only
    split = goal(row(0.06, 0.02, 0.6), base)
    assert not split["goal_met"] and split["goal_met_steps"]
    assert not goal(row(0.0, 0.0, 0.5), base)["goal_met_steps"]   # completion 83% of 60%
    nothing = goal(row(0.0, 0.0, 0.5), {**row(0.0, 0.0, 0.0)})
    assert nothing["goal_met"] is False and nothing["completion_kept"] is None
