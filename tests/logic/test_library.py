"""The rule library (studio.logic.library): every entry parses, compiles and lists its atoms; the
English is the paper's; the interpreted formulas mean what their notes say; and the TextWorld
labelers agree with the game's own record on the shared TextWorld log.

Measured on the shared log (985 steps, 40 sessions; 949 steps with a record, see
``recorded_action``), precision / recall of each labeler against the record:

    take 0.989 / 1.000 (2 false positives: "take tomato" refused as too much to carry, and
    "take knife from table" with no knife there), take_knife 0.988 / 1.000 (the latter),
    use_knife 0.988 / 1.000 ("slice tomato with knife" refused: the tomato was not held),
    examine, drop, go and in_kitchen 1.000 / 1.000.

The regular expressions read what the agent typed, so a command the game refuses is still
labelled; the game's record says nothing happened.  Over the whole audit, against the demo's
ground truth derived from the same record, the library's four rules reach micro F1 0.995 (one
knife_needed violation missed because of that refused slice).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from studio.audits import quality
from studio.labeling import Labeling, make_labeler
from studio.logic import library
from studio.logic.parser import parse
from studio.monitor import compile_rule
from studio.monitor.audit import Audit

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_LOG = REPO_ROOT.parent / "shared" / "data" / "textworld.jsonl"
DEMO_LOG = REPO_ROOT / "studio" / "web" / "demo" / "textworld.jsonl"  # a copy shipped with the demo
GROUND_TRUTH = REPO_ROOT / "studio" / "web" / "demo" / "textworld_groundtruth.jsonl"
PAPER = REPO_ROOT.parent / "shared" / "papers" / "000_e21eac4de0436db9.txt"
LOG = SHARED_LOG if SHARED_LOG.exists() else DEMO_LOG

CUTS = {"chop", "slice", "dice"}
MIN_AGREEMENT = 0.95


# ---------------------------------------------------------------------------------------------
# The entries

def test_counts_per_domain():
    counts = {domain: len(library.rules_for(domain)) for domain in library.DOMAINS}
    # IPC-Trucks: F.1.2's 27 and F.3.2's 10 others; TextWorld 4; ScienceWorld F.1.2's 5 and
    # F.3.2's 4 others.
    assert counts == {"ipc_trucks": 37, "textworld": 4, "scienceworld": 9}
    assert len(library.RULES) == sum(counts.values())


@pytest.mark.parametrize("entry", library.RULES, ids=lambda e: e.name)
def test_every_entry_parses_compiles_and_lists_its_atoms(entry):
    formula = parse(entry.formula)
    compile_rule(entry.name, formula)  # past operators hold only what the monitor allows
    atoms = {f.name for f in formula.subformulas() if f.op == "atom"}
    assert entry.atoms == tuple(sorted(atoms))
    assert not [a for a in formula.atoms if not isinstance(a, str) and a.op == "cmp"], (
        "library rules read atoms only: data atoms would tie them to one log format")
    # Printing then parsing gives the same formula.
    assert parse(formula.text) is formula
    assert entry.domain in library.DOMAINS
    assert re.fullmatch(r"[a-z][a-z0-9_]{2,99}", entry.name)
    assert entry.english and entry.english == entry.english.strip()
    assert entry.source.startswith(("Appendix F.1.2", "Appendix F.3.2"))
    assert "text copy" in entry.note  # every formula says it was rebuilt from the prose


def test_names_are_unique_across_domains():
    names = [e.name for e in library.RULES]
    assert len(names) == len(set(names))


def _normalised(text: str) -> str:
    # The text copy keeps LaTeX's "$t+1$" and puts a space before commas after math.
    text = text.replace("$", "")
    text = re.sub(r"\s+", " ", text)
    return text.replace(" ,", ",")


@pytest.mark.skipif(not PAPER.exists(), reason="the paper's text copy is not next to the repo")
def test_the_english_is_the_papers():
    paper = _normalised(PAPER.read_text(encoding="utf-8"))
    missing = [e.name for e in library.RULES if _normalised(e.english) not in paper]
    assert missing == []


def test_interpreted_entries_say_what_was_decided():
    interpreted = {e.name for e in library.RULES if e.interpreted}
    assert interpreted == {"trucks_deliver_after_unload", "take_then_examine", "knife_needed",
                           "stay_in_kitchen", "sw_go_through_opened_door",
                           "sw_allowed_rooms_with_art_studio", "sw_look_after_pick_up",
                           "sw_look_after_pour_mix_dunk"}


def test_unknown_domains_are_named():
    with pytest.raises(ValueError, match="ipc_trucks, textworld, scienceworld"):
        library.rules_for("minecraft")


# ---------------------------------------------------------------------------------------------
# What the interpreted formulas mean, on small traces

def _final(tmp_path, name: str, formula: str, steps: list[list[str]]) -> dict:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"session": "s", "labels": labels}) + "\n"
                           for labels in steps), encoding="utf-8")
    audit = Audit([(name, formula)])
    audit.add_file(log)
    assert not audit.errors
    return audit.report()["sessions"][0]["rules"][0]


def _entry(name: str) -> library.LibraryRule:
    return next(e for e in library.RULES if e.name == name)


def test_an_idle_knife_is_reported_at_the_fourth_next_step(tmp_path):
    rule = _entry("knife_needed")
    idle = _final(tmp_path, rule.name, rule.formula,
                  [["take_knife"], [], [], [], [], []])
    assert idle["final"] == "violated"
    assert [(v["trigger"], v["detected"]) for v in idle["violations"]] == [(0, 4)]
    used = _final(tmp_path, rule.name, rule.formula,
                  [["take_knife"], [], [], [], ["use_knife"], []])
    assert used["final"] == "satisfied" and used["violations"] == []


def test_leaving_the_kitchen_is_a_go_taken_in_it(tmp_path):
    rule = _entry("stay_in_kitchen")
    walk_in = _final(tmp_path, rule.name, rule.formula,
                     [["go"], ["go"], ["in_kitchen"], ["in_kitchen"]])
    assert walk_in["final"] == "satisfied"
    walk_out = _final(tmp_path, rule.name, rule.formula, [["go"], ["in_kitchen", "go"], ["go"]])
    assert walk_out["final"] == "violated"


def test_a_package_is_delivered_only_once_unloaded_and_not_loaded_again(tmp_path):
    rule = _entry("trucks_deliver_after_unload")
    ok = [["load:package3"], ["unload:package3"], ["deliver:package3"]]
    assert _final(tmp_path, rule.name, rule.formula, ok)["final"] == "satisfied"
    never_unloaded = [["load:package3"], ["deliver:package3"]]
    assert _final(tmp_path, rule.name, rule.formula, never_unloaded)["final"] == "violated"
    loaded_again = [["load:package3"], ["unload:package3"], ["load:package3"],
                    ["deliver:package3"]]
    assert _final(tmp_path, rule.name, rule.formula, loaded_again)["final"] == "violated"


def test_delivery_order_is_precedence(tmp_path):
    rule = _entry("trucks_deliver_package2_before_package1")
    assert _final(tmp_path, rule.name, rule.formula,
                  [["deliver:package2"], ["deliver:package1"]])["final"] == "satisfied"
    assert _final(tmp_path, rule.name, rule.formula,
                  [["deliver:package1"], ["deliver:package2"]])["final"] == "violated"


# ---------------------------------------------------------------------------------------------
# The TextWorld labelers against the game's record

def test_the_textworld_labelers_cover_exactly_the_atoms_of_the_textworld_rules():
    declared = [lab.atom for lab in library.labelers_for("textworld")]
    read = {a for e in library.rules_for("textworld") for a in e.atoms}
    assert sorted(declared) == sorted(read)
    for lab in library.LABELERS:
        assert make_labeler(lab.kind, lab.atom, lab.config).atom == lab.atom
    assert library.labelers_for("ipc_trucks") == library.labelers_for("scienceworld") == []


def _sessions() -> dict[str, list[dict]]:
    sessions: dict[str, list[dict]] = defaultdict(list)
    with open(LOG, encoding="utf-8") as handle:
        for line in handle:
            event = json.loads(line)
            sessions[event["session"]].append(event)
    for events in sessions.values():
        events.sort(key=lambda e: e["step"])
    return sessions


def recorded_action(events: list[dict], i: int) -> str | None:
    """What the game's record says step ``i`` executed: its logic action, "" when it executed
    nothing, None when the record does not say.

    The recorder leaves ``logic_action`` null for commands the engine maps to no game action
    (examining a carried item, say): those steps are left out of the measure.  After a command
    the game refused ("That's already open.", "You're carrying too many things already."), it
    repeats the previous step's record; such a step executed nothing.  It is recognised without
    reading the labelers' text: the record repeats the previous one and either changes facts
    (no action adds the same facts twice in a row) or the command was not among the game's
    admissible commands.
    """
    env = events[i]["env"]
    action = env.get("logic_action")
    if action is None or i == 0:
        return action
    before = events[i - 1]["env"]
    record = (action, env["facts_added"], env["facts_removed"])
    repeated = record == (before["logic_action"], before["facts_added"], before["facts_removed"])
    if repeated and (env["facts_added"] or env["facts_removed"]
                     or events[i]["output"] not in env["admissible_before"]):
        return ""
    return action


def record_truth(events: list[dict], i: int) -> dict[str, bool] | None:
    """Each TextWorld atom's truth at step ``i`` by the game's record; None when unrecorded."""
    action = recorded_action(events, i)
    if action is None:
        return None
    env = events[i]["env"]
    verb = action.split()[0] if action else ""
    gained = set(env["inventory_after"]) - set(env["inventory_before"])
    return {"take": verb == "take", "examine": verb == "examine", "drop": verb == "drop",
            "go": verb == "go", "take_knife": verb == "take" and "knife" in gained,
            "use_knife": verb in CUTS, "in_kitchen": env["location_before"] == "kitchen"}


def as_studio_event(event: dict) -> dict:
    """The event as the studio's labelers read it: the log's ``env`` filed under ``data`` and
    also readable at the top (studio.traces.models.monitor_event)."""
    return {**event, "data": {"env": event["env"]}, "labels": None}


def test_each_textworld_labeler_fires_where_the_games_record_says(capsys):
    labelers = [make_labeler(lab.kind, lab.atom, lab.config)
                for lab in library.labelers_for("textworld")]
    counts = {lab.atom: quality.Confusion() for lab in labelers}
    measured = unrecorded = 0
    for events in _sessions().values():
        previous = None
        for i, raw in enumerate(events):
            event = as_studio_event(raw)
            truth = record_truth(events, i)
            if truth is None:
                unrecorded += 1
            else:
                measured += 1
                for lab in labelers:
                    counts[lab.atom] = counts[lab.atom].add(bool(lab(event, previous)),
                                                            truth[lab.atom])
            previous = event
    assert measured + unrecorded == 985
    assert unrecorded <= 0.05 * (measured + unrecorded)
    with capsys.disabled():
        print(f"\nTextWorld labelers on {LOG.name}: {measured} steps with a record, "
              f"{unrecorded} without")
        for atom, c in counts.items():
            print(f"  {atom:<11} P {quality.ratio_text(c.precision, 3)}  "
                  f"R {quality.ratio_text(c.recall, 3)}  F1 {quality.ratio_text(c.f1, 3)}  "
                  f"(TP {c.tp} FP {c.fp} FN {c.fn} TN {c.tn})")
    for atom, c in counts.items():
        assert c.tp >= 50, f"{atom}: too few occurrences to measure ({c})"
        assert c.precision >= MIN_AGREEMENT and c.recall >= MIN_AGREEMENT, f"{atom}: {c}"
    # The misses are the refused commands the module doc lists, and nothing else.
    assert (counts["take"].fp, counts["take_knife"].fp, counts["use_knife"].fp) == (2, 1, 1)
    assert sum(c.fn for c in counts.values()) == 0


def test_the_kitchen_labeler_agrees_with_the_room_the_observation_names():
    # in_kitchen reads the game's location; the text the agent saw names the same room.
    declared = next(lab for lab in library.LABELERS if lab.atom == "in_kitchen")
    kitchen = make_labeler(declared.kind, declared.atom, declared.config)
    for events in _sessions().values():
        for raw in events:
            rooms = re.findall(r"-= (.+?) =-", raw["input"])
            says_kitchen = bool(rooms) and rooms[-1] == "Kitchen"
            assert kitchen(as_studio_event(raw), None) == says_kitchen, raw["session"]


def test_the_textworld_rules_with_these_labelers_agree_with_the_demo_ground_truth(tmp_path):
    """End to end: the library's rules over the log labelled by the library's labelers, against
    the labels the demo derives from the game's record (studio/web/demo/make_groundtruth.py)."""
    labeling = Labeling([make_labeler(lab.kind, lab.atom, lab.config)
                         for lab in library.labelers_for("textworld")], builtins=False)
    labelled = tmp_path / "labelled.jsonl"
    with open(labelled, "w", encoding="utf-8") as out:
        for session, events in _sessions().items():
            previous = None
            for raw in events:
                event = as_studio_event(raw)
                out.write(json.dumps({"session": session, "step": raw["step"],
                                      "labels": labeling(event, previous)}) + "\n")
                previous = event
    audit = Audit([(e.name, e.formula) for e in library.rules_for("textworld")])
    audit.add_file(labelled)
    assert not audit.errors
    found = {(s["session"], r["rule"]): r["final"] == "violated"
             for s in audit.report()["sessions"] for r in s["rules"]}
    with open(GROUND_TRUTH, encoding="utf-8") as handle:
        labels = [json.loads(line) for line in handle]
    per_rule = quality.by_rule((t["rule"], found[(t["session"], t["rule"])], t["violated"])
                               for t in labels)
    overall = quality.overall(per_rule.values())
    assert overall.micro == quality.Confusion(tp=105, fp=0, fn=1, tn=48)
    assert overall.micro.f1 == pytest.approx(210 / 211)
    # The one miss: "slice tomato with knife" refused, read as a cut (see the module doc).
    assert per_rule["knife_needed"] == quality.Confusion(tp=7, fn=1, tn=32)
    assert overall.macro_f1.value == pytest.approx((3 + 14 / 15) / 4)


def test_the_library_imports_without_django():
    script = ("import json, sys; import studio.logic.library; "
              "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'django')))")
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
