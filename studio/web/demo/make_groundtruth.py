"""Ground truth for the demo's TextWorld rules, from the game's own structured record.

    python -m studio.web.demo.make_groundtruth [textworld.jsonl] [out.jsonl]

(defaults: ``textworld.jsonl`` and ``textworld_groundtruth.jsonl`` next to this file).

The demo's rules are checked by regular-expression labelers over the command the agent typed
(``^take\\b``, ``^drop\\b``, ...).  This script decides the same rules without reading the
command text at all: it reads what the TextWorld engine recorded for each step in ``env`` -
``logic_action`` (the game-logic action the command executed, or null when the engine matched
none, i.e. the command did nothing), ``location_before``/``location_after`` and
``inventory_before``/``inventory_after``.  The audit's precision, recall and F1 against these
labels therefore measure the labelers, not the rules' own reading of the text.

One quirk of the recording is allowed for: after a command that failed ("That's already open"),
the step sometimes repeats the previous step's ``logic_action`` and ``facts_added`` although
nothing happened (the inventory and location are unchanged).  No action adds the same facts twice
in a row, so a step whose record repeats the previous one's non-empty facts executed nothing; and
a take or drop counts only when the inventory really gained or lost something.

Per session and rule:

* ``no_drop`` ("Do not drop things"): violated iff some step executed ``drop`` (and the
  inventory lost the item).
* ``stay_in_kitchen`` ("Do not go out of the kitchen"): violated iff some step started in the
  kitchen and ended elsewhere.
* ``knife_needed`` ("Only take the knife if you use it to chop, slice or dice within the next
  four steps"): violated iff some step executed ``take`` and put the knife into the inventory,
  and none of the next four steps executed ``chop``, ``slice`` or ``dice`` (a session ending
  sooner leaves the obligation unmet).  A cutting command the game refused ("slice tomato with
  knife" while not holding the tomato) cut nothing, so it does not count as using the knife.
* ``take_then_examine`` ("If you take an item, you have to examine it in the next step"):
  only partly decidable.  The record does not say *what* an ``examine`` looked at, and the
  engine records examining a carried item as no action at all (``logic_action`` null).  So a
  take followed by a step that executed some other action (or by the end of the session) is a
  violation the record proves; a take followed by ``examine`` or by a null action is
  undecided.  A session is labelled violated when some take is a proven violation, satisfied
  when it executed no take, and left unlabelled otherwise.

Sessions are named by their ``session`` field, as the upload stores them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
CUTS = {"chop", "slice", "dice"}
KNIFE_WINDOW = 4


def sessions(lines: Iterable[str]) -> dict[str, list[dict]]:
    """Events per session, in step order."""
    out: dict[str, list[dict]] = {}
    for line in lines:
        if line.strip():
            event = json.loads(line)
            out.setdefault(event["session"], []).append(event)
    for events in out.values():
        events.sort(key=lambda e: e["step"])
    return out


def executed(events: list[dict], i: int) -> str | None:
    """The game action step ``i`` executed: None when the engine matched none, or when the
    record only repeats the previous step's (see the module's doc)."""
    env = events[i]["env"]
    action = env.get("logic_action")
    if action is None or i == 0:
        return action
    before = events[i - 1]["env"]
    facts = (env.get("facts_added") or [], env.get("facts_removed") or [])
    if (before.get("logic_action") == action and any(facts)
            and (before.get("facts_added") or [], before.get("facts_removed") or []) == facts):
        return None
    return action


def _gained(event: dict) -> set[str]:
    env = event["env"]
    return set(env.get("inventory_after") or ()) - set(env.get("inventory_before") or ())


def _lost(event: dict) -> set[str]:
    env = event["env"]
    return set(env.get("inventory_before") or ()) - set(env.get("inventory_after") or ())


def _took(events: list[dict], i: int) -> set[str]:
    """What step ``i`` took into the inventory (empty when it took nothing)."""
    return _gained(events[i]) if executed(events, i) == "take" else set()


def no_drop(events: list[dict]) -> tuple[bool, str]:
    drops = [e["step"] for i, e in enumerate(events)
             if executed(events, i) == "drop" and _lost(e)]
    return bool(drops), (f"drop executed at step {drops[0]}" if drops else "no drop executed")


def stay_in_kitchen(events: list[dict]) -> tuple[bool, str]:
    exits = [e["step"] for e in events if e["env"].get("location_before") == "kitchen"
             and e["env"].get("location_after") != "kitchen"]
    return bool(exits), (f"left the kitchen at step {exits[0]}" if exits
                         else "never left the kitchen")


def knife_needed(events: list[dict]) -> tuple[bool, str]:
    for i, event in enumerate(events):
        if "knife" in _took(events, i) and not any(
                executed(events, j) in CUTS
                for j in range(i + 1, min(i + 1 + KNIFE_WINDOW, len(events)))):
            return True, (f"took the knife at step {event['step']} and cut nothing in the next "
                          f"{KNIFE_WINDOW} steps")
    return False, "every time the knife was taken it was used to cut within four steps"


def take_then_examine(events: list[dict]) -> tuple[bool, str] | None:
    takes = [i for i in range(len(events)) if _took(events, i)]
    if not takes:
        return False, "no take executed"
    for i in takes:
        if i + 1 == len(events):
            return True, f"took something at step {events[i]['step']}, the last step"
        after = executed(events, i + 1)
        if after is not None and after != "examine":
            return True, (f"took something at step {events[i]['step']} and then executed "
                          f"{after!r}")
    return None  # every take was followed by an examine of something, or by no known action


RULES = {"no_drop": no_drop, "stay_in_kitchen": stay_in_kitchen, "knife_needed": knife_needed,
         "take_then_examine": take_then_examine}


def labels(lines: Iterable[str]) -> Iterator[dict]:
    for session, events in sorted(sessions(lines).items()):
        for rule, decide in RULES.items():
            decided = decide(events)
            if decided is not None:
                violated, why = decided
                yield {"session": session, "rule": rule, "violated": violated,
                       "note": f"from the game's record: {why}"}


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else HERE / "textworld.jsonl"
    target = Path(argv[1]) if len(argv) > 1 else HERE / "textworld_groundtruth.jsonl"
    with open(source, encoding="utf-8") as handle:
        found = list(labels(handle))
    with open(target, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(label, ensure_ascii=False) + "\n" for label in found)
    decided = {rule: sum(1 for x in found if x["rule"] == rule) for rule in RULES}
    print(f"{target}: {len(found)} labels; per rule {decided}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
