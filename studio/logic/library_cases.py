"""Test cases of the rule library (``studio.logic.library``): for every rule of paper 000's
experiments, short sessions that must violate it (with the step the violation must be detected
at) and sessions that must comply, written from the paper's English.  Pure data, no Django.

Each case is ``LibraryCase(name, expect, steps, at_step)``; a step is the list of atoms true at
it.  Installing a rule from the library installs its cases (``studio.evidence.services``); a
test checks that each rule passes all of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .cases import COMPLY, VIOLATE
from .library import RULES, TRUCK_AREAS


@dataclass(frozen=True)
class LibraryCase:
    name: str
    expect: str
    steps: tuple[tuple[str, ...], ...]
    at_step: int | None = None

    def as_steps(self) -> list[dict]:
        return [{"atoms": sorted(step), "data": {}} for step in self.steps]


def _v(name: str, steps, at_step: int | None) -> LibraryCase:
    return LibraryCase(name, VIOLATE, tuple(tuple(s) for s in steps), at_step)


def _c(name: str, steps) -> LibraryCase:
    return LibraryCase(name, COMPLY, tuple(tuple(s) for s in steps))


# ---------------------------------------------------------------------------------------------
# IPC-Trucks: the rule families are built from patterns, so are their cases.

def _truck_cases(name: str, formula: str) -> list[LibraryCase]:
    if m := re.fullmatch(r"trucks_load_only_(\w+)", name):
        allowed = {"a1": 1, "a1_a2": 2, "a1_to_a3": 3}[m.group(1)]
        deepest = TRUCK_AREAS[allowed]
        last_allowed = TRUCK_AREAS[allowed - 1]
        # Loading into an allowed area reads no atom of the rule: a step where none holds.
        return [_c(f"loading only into a1 to {last_allowed}", [[], []]),
                _v(f"loading into {deepest} is reported at once",
                   [[], ["load_area:" + deepest]], 1)]
    if m := re.fullmatch(r"trucks_deliver_package(\d+)_before_package(\d+)", name):
        first, second = m.groups()
        return [_c(f"package{first} delivered, then package{second}",
                   [[f"deliver:package{first}"], [f"deliver:package{second}"]]),
                _c("neither delivered", [[]]),
                _v(f"package{second} delivered first",
                   [[], [f"deliver:package{second}"], [f"deliver:package{first}"]], 1)]
    if m := re.fullmatch(r"trucks_load_package(\d+)_at_most_once", name):
        load = f"load:package{m.group(1)}"
        return [_c("loaded once", [[load], [], []]),
                _v("loaded twice: reported at the second load", [[load], [], [load]], 2)]
    if name in ("trucks_load_into_free_area",) or re.fullmatch(
            r"trucks_(un)?load_a\d_needs_a\d_free", name):
        m = re.fullmatch(r"trucks_(un)?load_(a\d)_needs_(a\d)_free", name)
        verb, area, free = ("", "a2", "a2") if m is None else (m.group(1) or "", m.group(2),
                                                               m.group(3))
        act = f"{verb}load_area:{area}"
        return [_c(f"{act} while {free} is free", [[act, f"free:{free}"]]),
                _v(f"{act} while {free} is taken", [[], [act]], 1)]
    if name in ("trucks_load_back_to_front", "trucks_unload_front_first"):
        act = ("load_area:a3" if name == "trucks_load_back_to_front" else "unload_area:a3")
        return [_c(f"{act} with a1 and a2 free", [[act, "free:a1", "free:a2"]]),
                _v(f"{act} with a2 taken", [[act, "free:a1"]], 0)]
    if name == "trucks_deliver_after_unload":
        return [_c("package1 unloaded, then delivered",
                   [["load:package1"], ["unload:package1"], ["deliver:package1"]]),
                _v("package1 delivered while still loaded",
                   [["load:package1"], ["deliver:package1"]], 1)]
    if name == "trucks_deliver_at_truck_location":
        return [_c("delivering at l2 with the truck at l2", [["deliver_at:l2", "truck_at:l2"]]),
                _v("delivering at l2 with the truck at l1",
                   [["truck_at:l1"], ["deliver_at:l2", "truck_at:l1"]], 1)]
    raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# TextWorld and ScienceWorld: written one by one from the English.

_WRITTEN: dict[str, list[LibraryCase]] = {
    "take_then_examine": [
        _c("take, then examine", [["take"], ["examine"]]),
        _v("take, then something else", [["take"], []], 1),
        _v("take at the last step", [[], ["take"]], 1),
    ],
    "knife_needed": [
        _c("the knife is used three steps later", [["take_knife"], [], [], ["use_knife"]]),
        _v("the knife is not used within four steps",
           [["take_knife"], [], [], [], [], [], []], 4),
    ],
    "no_drop": [
        _c("nothing dropped", [[], []]),
        _v("a drop", [[], ["drop"]], 1),
    ],
    "stay_in_kitchen": [
        _c("going elsewhere, then staying in the kitchen", [["go"], ["in_kitchen"]]),
        _v("going out of the kitchen", [["in_kitchen"], ["go", "in_kitchen"]], 1),
    ],
    "sw_go_through_opened_door": [
        _c("open the door, then go", [["open_door"], ["go"]]),
        _v("open the door, then wait", [["open_door"], []], 1),
    ],
    "sw_look_around_after_entering": [
        _c("go, then look around", [["go"], ["look_around"]]),
        _v("go, then go again", [["go"], ["go"]], 1),
    ],
    "sw_no_look_around_twice": [
        _c("look around once, also at the end", [["look_around"], [], ["look_around"]]),
        _v("look around twice in a row", [["look_around"], ["look_around"]], 1),
    ],
    "sw_allowed_rooms": [
        _c("going to the kitchen", [["go", "go_to:kitchen"]]),
        _v("going elsewhere", [["go", "go_to:kitchen"], ["go"]], 1),
    ],
    "sw_measure_before_boxing": [
        _c("measure, then box", [["measure:substance_b"], ["put_in_box:substance_b"]]),
        _c("neither", [[]]),
        _v("box before measuring", [[], ["put_in_box:substance_b"]], 1),
    ],
    "sw_allowed_rooms_with_art_studio": [
        _c("going to the art studio", [["go", "go_to:art_studio"]]),
        _v("going elsewhere", [["go"]], 0),
    ],
    "sw_look_after_pick_up": [
        _c("pick up, then look at it", [["pick_up"], ["look_at"]]),
        _v("pick up, then nothing", [["pick_up"], []], 1),
    ],
    "sw_look_after_pour_mix_dunk": [
        _c("mix, then look around", [["mix"], ["look_around"]]),
        _v("pour, then pour again", [["pour"], ["pour"], ["look_at"]], 1),
    ],
    "sw_no_yellow_paint": [
        _c("no yellow paint touched", [[], []]),
        _v("pour the yellow paint", [[], ["pour:yellow_paint"]], 1),
    ],
}


def cases_for(rule_name: str) -> list[LibraryCase]:
    """The library's test cases of the library rule named ``rule_name`` (KeyError if none)."""
    if rule_name in _WRITTEN:
        return list(_WRITTEN[rule_name])
    rule = next((r for r in RULES if r.name == rule_name), None)
    if rule is None or rule.domain != "ipc_trucks":
        raise KeyError(rule_name)
    return _truck_cases(rule.name, rule.formula)
