"""The closed-loop evaluation's bookkeeping (bench.guard_textworld) on a tiny fake game: no
TextWorld needed, and none imported."""

import json
import re
import sys

import pytest

from bench.guard_textworld import (
    DEFAULT_POLICY, DEFAULT_WITH_PREDICATE, EXACT_AS_DEFAULT, RULES, Condition, Episode,
    RulesFileError, Setup, View, WalkthroughAgent,
    event_for, forecast, goal, issue27_conditions, issue27_goal, issue27_table, learn_model,
    load_rules, prediction_quality, run_episode, summarize,
)
from studio.monitor import RuleSet
from studio.risk.guard import DTMC, EXACT, INJECT, RESAMPLE, SAMPLING, STOP, Policy

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
    s = setup(max_steps=6)
    s.model, _ = learn_model(game, ["g"], agent, s, episodes=10, seed=3)
    default = Condition("default policy, DTMC", DTMC, default_policy=True)
    assert default.policy(3).fallback == "best_accepted"
    assert not default.policy(3).act_on_unbacked
    finished = 0
    for seed in range(5):
        played = run_episode(game, "g", agent, default, s, seed=seed)
        # Policy()'s own 3 resamples: a stop only where all four draws of a step were drops
        # (1 chance in 16 a step), never a drop let through.
        assert not any(rule == "no_drop" for rule, _, _ in played.violations)
        finished += not played.stopped and played.steps == 6
    assert finished >= 3
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


# ---------------------------------------------------------------------------------------------
# Other rules and the game's data fields (issue 27's measurement)

WRITERS = {"rules": [
    {"name": "carry_two", "english": "Carry at most two things.", "formula": "G !overloaded",
     "labelers": [{"atom": "overloaded", "kind": "field",
                   "config": {"path": "env.inventory_count", "op": ">", "value": 2}}],
     "why": "a data field"},
    {"name": "knife_before_cut", "formula": "G(cut -> O take_knife)",
     "labelers": [{"atom": "cut", "kind": "regex",
                   "config": {"path": "output", "pattern": r"^\s*(chop|dice|slice)\b",
                              "flags": "i"}},
                  {"atom": "take_knife", "kind": "regex",
                   "config": {"path": "output", "pattern": r"^take knife\b"}}]},
    {"name": "no_chop_after_meal", "formula": "G(cut -> !(O prepare_meal))",
     "labelers": [{"atom": "cut", "kind": "regex",
                   "config": {"path": "output", "pattern": r"^\s*(chop|dice|slice)\b",
                              "flags": "i"}},
                  {"atom": "prepare_meal", "kind": "regex",
                   "config": {"path": "output", "pattern": "^prepare meal$"}}]},
]}


def writers_file(tmp_path, data=WRITERS):
    path = tmp_path / "rules.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


class FieldGame(FakeGame):
    """The fake game with an inventory: a take adds the thing, a drop removes it, and the
    fridge can be closed (``close fridge``) and opened again."""

    def reset(self, game):
        self.held, self.moves, self.fridge = [], 0, True
        return super().reset(game)

    def step(self, command):
        taken = re.match(r"^take (.+?)(?: from .+)?$", command)
        if taken and taken.group(1) not in self.held:
            self.held.append(taken.group(1))
        elif command.startswith("drop "):
            self.held = [h for h in self.held if h != command[5:]]
        elif command in ("close fridge", "open fridge"):
            self.fridge = command == "open fridge"
        if command not in ("look", "inventory"):
            self.moves += 1
        return super().step(command)

    def _view(self):
        view = super()._view()
        view.fields = {"score": self.done, "max_score": len(PLAN), "moves": self.moves,
                       "inventory": sorted(self.held), "inventory_count": len(self.held),
                       "fridge_open": self.fridge}
        return view


def test_rules_come_from_the_writers_file(tmp_path):
    rules = load_rules(writers_file(tmp_path))
    assert rules.names == ["carry_two", "knife_before_cut", "no_chop_after_meal"]
    assert not rules.examine_after_take and "3 rules" in rules.source
    event = event_for("chop carrot with knife", "kitchen", {"inventory_count": 3},
                      rules.labeling)
    assert event["labels"] == ["cut", "overloaded"]
    assert event["env"] == {"location_before": "kitchen", "inventory_count": 3}


@pytest.mark.parametrize("text, where", [
    ('{"rules": [', "line 1, column 12"),
    ('{"rules": []}', "non-empty list 'rules'"),
    ('{"rules": [{"name": "a"}]}', "rules[0].formula"),
    ('{"rules": [{"name": "a", "formula": "G p", "labelers": [{"atom": "p", "kind": "regex",'
     ' "config": {"path": "output", "pattern": "("}}]}]}', "rules[0].labelers[0]: pattern"),
    ('{"rules": [{"name": "a", "formula": "G p", "labelers": [{"atom": "p", "kind": "field",'
     ' "config": {"path": "x", "value": 1}}]}, {"name": "b", "formula": "G p", "labelers": '
     '[{"atom": "p", "kind": "field", "config": {"path": "x", "value": 2}}]}]}',
     "rules[1].labelers[0]: atom 'p' is labelled differently at"),
    ('{"rules": [{"name": "a", "formula": "G (p"}]}', "the rules do not read"),
])
def test_a_bad_rules_file_is_named_where(tmp_path, text, where):
    with pytest.raises(RulesFileError) as caught:
        load_rules(writers_file(tmp_path, text))
    assert where in str(caught.value)


def test_the_forecast_follows_the_command():
    before = {"score": 1, "max_score": 5, "moves": 3, "inventory": ["knife"],
              "inventory_count": 1, "fridge_open": True}
    taken = forecast(before, "take red apple from fridge")
    assert taken["inventory"] == ["knife", "red apple"] and taken["inventory_count"] == 2
    assert taken["moves"] == 4 and taken["score"] == 1
    assert forecast(before, "put knife on counter")["inventory_count"] == 0
    assert forecast(before, "drop knife")["inventory"] == []
    assert forecast(before, "close fridge")["fridge_open"] is False
    assert forecast({**before, "fridge_open": False}, "open fridge")["fridge_open"] is True
    assert forecast(before, "prepare meal")["inventory"] == ["knife", "meal"]
    assert forecast({}, "take knife") == {}
    assert before["inventory"] == ["knife"]     # not changed in place


def test_events_carry_the_fields_the_game_reports_after_the_step(tmp_path):
    rules = load_rules(writers_file(tmp_path))
    s = Setup(RuleSet(rules.rules), labeling=rules.labeling, ruleset_pairs=rules.rules)
    agent = WalkthroughAgent(0.0, examine_after_take=False)
    episode = run_episode(FieldGame(), "g", agent, Condition("no guard", None), s, seed=1,
                          keep_events=True)
    assert episode.completed and episode.violations == [] and episode.steps == len(PLAN)
    first, second = episode.events[:2]
    assert first["env"]["inventory"] == ["carrot"] and first["env"]["moves"] == 1
    assert second["env"]["inventory_count"] == 2 and second["env"]["location_before"] == \
        "kitchen"
    assert episode.forecast_misses == 0


def test_a_field_rule_is_checked_on_the_forecast_and_judged_on_the_game(tmp_path):
    rules = load_rules(writers_file(tmp_path))
    s = Setup(RuleSet(rules.rules), labeling=rules.labeling, ruleset_pairs=rules.rules,
              max_steps=6)
    game = FieldGame(admissible=["take apple", "take pear", "take plum"])
    agent = WalkthroughAgent(1.0, examine_after_take=False)
    unguarded = run_episode(game, "g", agent, Condition("no guard", None), s, seed=3)
    row = summarize([unguarded], rules.names)
    assert row["violations_by_rule"]["carry_two"] >= 1
    assert row["episodes_violating_rule"] == {"carry_two": 1, "knife_before_cut": 0,
                                              "no_chop_after_meal": 0}
    # the exact check sees a third take overload on the forecast and has it drawn again
    guarded = run_episode(game, "g", agent, Condition("exact", EXACT, RESAMPLE), s, seed=3)
    assert guarded.violations == [] and guarded.resamples >= 1
    assert guarded.forecast_misses == 0 and unguarded.forecast_misses == 0


def summary_row(name, bad, done, predictor=DTMC, stopped=0):
    return {"condition": name, "predictor": predictor,
            "summary": {"episodes_with_violation": bad, "episodes_with_step_violation": bad,
                        "completion": done, "stopped_episodes": stopped,
                        "resamples_per_episode": 1.0}}


def test_issue_27s_goal_is_read_against_the_check_and_the_unguarded_agent():
    rows = [summary_row("no guard", 0.8, 0.5, None), summary_row("exact check, resample",
                                                                 0.3, 0.6, EXACT),
            summary_row(DEFAULT_POLICY, 0.08, 0.6), summary_row("tight", 0.0, 0.55),
            summary_row("tuned", 0.02, 0.61), summary_row("loose", 0.05, 0.7)]
    goals = issue27_goal(rows)
    assert goals["completion_bar"] == 0.6
    assert goals["default_policy_met"] is True
    # "tight" completes less than the check: not counted; "tuned" is the best above the bar
    assert goals["best_tuned"] == "tuned" and goals["best_tuned_met"] is True
    assert goals["rows"]["tight"] == {"limit": 0.02, "completes_enough": False, "met": False}
    text = issue27_table(rows, goals)
    assert "| guard, default policy, DTMC | 8.0% | 8.0% | 60.0% | 0 | 1.00 | <= 8%: yes" in text
    assert "Default policy (<= 8%): met" in text
    rows[2] = summary_row(DEFAULT_POLICY, 0.09, 0.7)
    assert issue27_goal(rows)["default_policy_met"] is False
    # with 90% of the unguarded agent's completion above the check's, that is the bar
    rows[0] = summary_row("no guard", 0.8, 0.75, None)
    assert issue27_goal(rows)["completion_bar"] == pytest.approx(0.675)
    # the default policy is held to the check with its own number of resamples
    rows[0] = summary_row("no guard", 0.8, 0.5, None)
    rows[2] = summary_row(DEFAULT_POLICY, 0.08, 0.58)
    assert issue27_goal(rows)["default_policy_met"] is False           # below the check's 60%
    rows.append(summary_row(EXACT_AS_DEFAULT, 0.1, 0.55, EXACT))
    goals = issue27_goal(rows)
    assert goals["default_completion_bar"] == 0.55 and goals["completion_bar"] == 0.6
    assert goals["default_policy_met"] is True and EXACT_AS_DEFAULT not in goals["rows"]
    # the default policy with a proposed predicate is held to the default's goal, not a tuned one
    rows.append(summary_row(DEFAULT_WITH_PREDICATE, 0.05, 0.55))
    goals = issue27_goal(rows)
    assert goals["rows"][DEFAULT_WITH_PREDICATE] == {"limit": 0.08, "completes_enough": True,
                                                     "met": True}
    assert goals["best_tuned"] == "tuned"


def test_the_default_policy_condition_is_the_products_policy():
    default = next(c for c in issue27_conditions() if c.name == DEFAULT_POLICY)
    assert default.policy(5, 3, guarded=False) == Policy()
    exact = Condition("exact", EXACT, RESAMPLE, 0.5).policy(5, 3)
    assert (exact.threshold, exact.horizon, exact.max_resamples, exact.fallback) == \
        (0.5, 3, 5, STOP)
    same = next(c for c in issue27_conditions() if c.name == EXACT_AS_DEFAULT).policy(5, 3)
    assert same.max_resamples == Policy().max_resamples and same.fallback == STOP
    read = {c.name: c.policy(5, 3).guarded_risk for c in issue27_conditions() if c.predictor}
    assert read["resample, DTMC 0.3, guarded_risk true"] is True
    assert read["resample, DTMC 0.3, guarded_risk false"] is False
