"""The rule library: the behavioural constraints of paper 000's experiments, ready to install.

Pure data, no Django.  Three domains, in the paper's order:

* ``ipc_trucks``: the IPC-5 Trucks domain's qualitative preferences (Appendix F.1.2, the 20-package
  auditing problem) and the finer-grained rules of the 5-package steering problem (Appendix
  F.3.2) that the auditing set does not already state;
* ``textworld``: the four TextWorld cooking rules (Appendix F.1.2), with declarative labelers for
  the shared TextWorld log (``../shared/data/textworld.jsonl``);
* ``scienceworld``: the five ScienceWorld rules of the auditing experiment (Appendix F.1.2,
  use-thermometer task) and the rules of the steering experiment (Appendix F.3.2, mix-paint task)
  that differ from them.

Each :class:`LibraryRule` carries the paper's English exactly as printed (without the list labels
"Rule 1:" ..., which move to ``source``; the text copy's math markup such as ``$t+1$`` and its
stray spaces undone), the formula in the studio's rule language, the atoms the formula reads
and a note on where it comes from.  **Every formula is a reconstruction**: in the text copy of
the paper, Appendices F.1.2 and F.3.2 keep the English of each rule but none of the LTL, so each
formula was rebuilt from the prose.  ``interpreted`` marks the entries where that took a choice
the prose leaves open (which atoms stand for a binding such as "that door", what happens at the
end of a log, a room layout that differs from ours); the note says which.  The others are direct
instances of the specification patterns of Table 2 and ``studio.logic.patterns`` (absence,
precedence, at most once, next-step response).

Atom names follow one scheme per domain: ``verb:object`` for an action on a named thing
(``load:package1``, ``go_to:kitchen``), a bare verb for the action itself (``take``, ``go``), and
state propositions read from the environment at the step (``free:a1``, ``in_kitchen``).

:class:`LibraryLabeler` entries are in the declaration format ``studio.labeling.make_labeler``
accepts (``kind``, ``atom``, ``config``); they cover every atom of the TextWorld rules.  The
other two domains ship no labelers: the studio has no logs of them, and their atoms (areas of a
truck, rooms of a house) are only decidable from each environment's own state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .formula import Formula
from .parser import parse

PAPER = "paper 000"


@dataclass(frozen=True)
class LibraryRule:
    domain: str
    name: str
    english: str          # exactly as the paper prints it
    formula: str          # the studio's rule language; parses with studio.logic.parser.parse
    atoms: tuple[str, ...]  # the propositions the formula reads, sorted
    source: str           # the paper's section, e.g. "Appendix F.1.2"
    note: str             # how the formula was obtained from the prose
    interpreted: bool = False  # the prose left a choice open; the note says which

    def parsed(self) -> Formula:
        return parse(self.formula)


@dataclass(frozen=True)
class LibraryLabeler:
    domain: str
    atom: str
    kind: str             # "regex" or "field", as make_labeler takes them
    config: dict[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class Domain:
    key: str
    title: str
    description: str


DOMAINS: dict[str, Domain] = {d.key: d for d in (
    Domain("ipc_trucks", "IPC-Trucks",
           "Moving packages between locations by truck: loading areas, delivery order, loading "
           "each package at most once (IPC-5 qualitative preferences)."),
    Domain("textworld", "TextWorld",
           "The cooking games: examine what you take, use the knife you take, do not drop "
           "things, do not leave the kitchen; with labelers for the TextWorld log."),
    Domain("scienceworld", "ScienceWorld",
           "Science experiments in a house: go through doors you open, look around on entering "
           "a room, stay in the allowed rooms, measure before boxing, keep off the yellow paint."),
)}

_DIRECT_NOTE = ("The text copy of the paper keeps this rule's English but not its LTL; rebuilt "
               "from the prose as the {pattern} pattern.")


def _rule(domain: str, name: str, english: str, formula: str, source: str, note: str,
          interpreted: bool = False) -> LibraryRule:
    atoms = tuple(sorted(f.name for f in parse(formula).subformulas() if f.op == "atom"))
    return LibraryRule(domain, name, english, formula, atoms, source, note, interpreted)


# ---------------------------------------------------------------------------------------------
# IPC-Trucks
#
# The 20-package auditing problem: truck areas a1 (next to the door) to a4 (deepest), locations
# l1 to l5.  One action a step, as the prompt asks ("You can only execute one action at each
# step"): LOAD package into area at location, UNLOAD, DRIVE, DELIVER.
#   load:packageN / unload:packageN / deliver:packageN   the step's action and its package
#   load_area:aK / unload_area:aK                         the area it loads into / unloads from
#   deliver_at:lK                                         the location a delivery names
#   free:aK, truck_at:lK                                  the state when the action is taken

TRUCK_AREAS = ("a1", "a2", "a3", "a4")
TRUCK_LOCATIONS = ("l1", "l2", "l3", "l4", "l5")
TRUCK_PACKAGES = tuple(f"package{n}" for n in range(1, 21))
_AUDIT = "Appendix F.1.2"
_STEER = "Appendix F.3.2"


def _only_areas(allowed: int) -> str:
    deeper = [f"load_area:{a}" for a in TRUCK_AREAS[allowed:]]
    return f"G !{deeper[0]}" if len(deeper) == 1 else f"G !({' | '.join(deeper)})"


def _conjoin_always(clauses: list[str]) -> str:
    return "G(" + " & ".join(f"({c})" for c in clauses) + ")"


def _trucks() -> list[LibraryRule]:
    rules: list[LibraryRule] = []
    area_note = ("The text copy keeps no LTL for this rule; rebuilt from the prose as absence "
                 "of loading into the deeper areas of the 20-package problem's trucks (areas "
                 "a1 to a4), which is \"only in ...\" for every load.")
    for allowed, name, english in (
            (1, "trucks_load_only_a1",
             "Packages should always be loaded only in area a1 (never in areas deeper than a1)"),
            (2, "trucks_load_only_a1_a2",
             ("Packages should always be loaded only in areas a1 or a2 (never in areas deeper "
              "than a2)")),
            (3, "trucks_load_only_a1_to_a3",
             ("Packages should always be loaded only in areas a1, a2, or a3 (never in areas "
              "deeper than a3)"))):
        rules.append(_rule("ipc_trucks", name, english, _only_areas(allowed), _AUDIT,
                           area_note + " Appendix F.3.2 states the same rule for the 5-package "
                                       "problem."))
    order_note = _DIRECT_NOTE.format(pattern="precedence (!q W p)") + (
        " One action a step, so \"before\" cannot mean the same step; a log that never "
        "delivers {first} satisfies the rule as long as {then} is not delivered either.")
    for first, then, source in ((2, 1, _AUDIT), (3, 2, _AUDIT), (6, 5, _AUDIT), (11, 10, _AUDIT),
                                (16, 15, _AUDIT), (19, 18, _AUDIT), (20, 19, _AUDIT),
                                (5, 4, _STEER)):
        english = f"package{first} should be delivered before package{then} is delivered"
        note = order_note.format(first=f"package{first}", then=f"package{then}")
        if source == _STEER:
            english += "."
            note += " From the 5-package steering problem."
        rules.append(_rule("ipc_trucks", f"trucks_deliver_package{first}_before_package{then}",
                           english, f"!deliver:package{then} W deliver:package{first}", source,
                           note))
    for n in (1, 2, 3, 5, 6, 10, 11, 15, 16, 18, 19, 20):
        rules.append(_rule(
            "ipc_trucks", f"trucks_load_package{n}_at_most_once",
            f"Package{n} should be loaded into a truck at most once",
            f"G(load:package{n} -> WX G !load:package{n})", _AUDIT,
            _DIRECT_NOTE.format(pattern="at most once (G(p -> WX G !p))")
            + " WX: a load at the last step of a log is not a violation."))
    rules.append(_rule(
        "ipc_trucks", "trucks_load_into_free_area",
        "When loading a package, the target area in the truck must be free.",
        _conjoin_always([f"load_area:{a} -> free:{a}" for a in TRUCK_AREAS]), _AUDIT,
        "The text copy keeps no LTL for this rule; rebuilt from the prose as one implication "
        "per area of the 20-package problem, free:aK being the state when the load is taken. "
        "Appendix F.3.2 splits it into one rule per area (the trucks_load_aK_needs_aK_free "
        "entries)."))
    closer = {a: TRUCK_AREAS[:i] for i, a in enumerate(TRUCK_AREAS)}
    for name, verb, english in (
            ("trucks_load_back_to_front", "load",
             ("When loading a package, all areas closer to the exit than the target area must "
              "also be free (packages must be loaded from back to front)")),
            ("trucks_unload_front_first", "unload",
             ("When unloading a package, all areas closer to the exit than the target area must "
              "also be free (packages must be loaded from back to front)"))):
        clauses = [f"{verb}_area:{a} -> " + " & ".join(f"free:{c}" for c in closer[a])
                   for a in TRUCK_AREAS[1:]]
        rules.append(_rule(
            "ipc_trucks", name, english, _conjoin_always(clauses), _AUDIT,
            "The text copy keeps no LTL for this rule; rebuilt from the prose: an area is closer "
            "to the exit than every deeper one (a1 nearest), so each area's clause needs all "
            "shallower areas free when the action is taken. The paper's parenthesis says "
            "\"loaded\" for the unloading rule too; the rule is read as written, about "
            "unloading."))
    rules.append(_rule(
        "ipc_trucks", "trucks_deliver_after_unload",
        "When delivering a package, the package should be unloaded before.",
        _conjoin_always([f"deliver:{p} -> (!load:{p} S unload:{p})" for p in TRUCK_PACKAGES]),
        _AUDIT,
        "The text copy keeps no LTL for this rule; rebuilt from the prose with past operators, "
        "one clause per package of the 20-package problem: the package was unloaded at some "
        "earlier step and not loaded again since (S, since). \"Unloaded before\" alone (O, "
        "once) would accept a package loaded back into the truck after its unloading.",
        interpreted=True))
    rules.append(_rule(
        "ipc_trucks", "trucks_deliver_at_truck_location",
        "When delivering a package, the truck must be at the delivery location.",
        _conjoin_always([f"deliver_at:{loc} -> truck_at:{loc}" for loc in TRUCK_LOCATIONS]),
        _AUDIT,
        "The text copy keeps no LTL for this rule; rebuilt from the prose as one implication "
        "per location of the 20-package problem (l1 to l5), truck_at being the truck's "
        "location when the delivery is made."))
    split_note = ("The text copy keeps no LTL for this rule; rebuilt from the prose as G(p -> q) "
                  "with the state when the action is taken. From the 5-package steering "
                  "problem; the auditing set states it as part of {whole}.")
    for verb, target, needed in (("load", "a1", "a1"), ("load", "a2", "a2"),
                                 ("load", "a3", "a3"), ("load", "a2", "a1"),
                                 ("load", "a3", "a1"), ("load", "a3", "a2"),
                                 ("unload", "a2", "a1"), ("unload", "a3", "a1"),
                                 ("unload", "a3", "a2")):
        if verb == "load":
            english = f"When loading a package in area {target}, {needed} must be free."
            whole = ("trucks_load_into_free_area" if target == needed
                     else "trucks_load_back_to_front")
        else:
            english = f"When unloading a package from area {target}, {needed} must be free."
            whole = "trucks_unload_front_first"
        rules.append(_rule("ipc_trucks", f"trucks_{verb}_{target}_needs_{needed}_free", english,
                           f"G({verb}_area:{target} -> free:{needed})", _STEER,
                           split_note.format(whole=whole)))
    return rules


# ---------------------------------------------------------------------------------------------
# TextWorld
#
# The names are those of the demo workspace and of its ground-truth file, so installing the
# library next to the demo adds nothing twice and the labels apply to either.

def _textworld() -> list[LibraryRule]:
    return [
        _rule("textworld", "take_then_examine",
              "If you take an item, you have to examine it in the next step.",
              "G(take -> X examine)", _AUDIT + ", TextWorld rule 1",
              "The text copy keeps no LTL for this rule; rebuilt from the prose as next-step "
              "response. Propositional atoms cannot say the examined item is the one taken "
              "(\"examine it\"): any examine answers the take. X is strong, so a take at the "
              "last step of a log is a violation (the next step never comes).",
              interpreted=True),
        _rule("textworld", "knife_needed",
              "Only take the knife if you will use it to chop, slice, or dice something "
              "within the next four steps. If the knife is taken and none of these actions "
              "occur by the fourth next step, then the knife was taken unnecessarily and a "
              "violation must be reported at that step (not earlier).",
              "G(take_knife -> F[1,4] use_knife)", _AUDIT + ", TextWorld rule 2",
              "The text copy keeps no LTL for this rule; rebuilt from the prose as bounded "
              "response over the four steps after the take (F[1,4]), so an unused knife is "
              "reported at the fourth next step, as the rule asks. A log that ends sooner "
              "leaves the obligation unmet and is reported at its last step (LTLf: the steps of "
              "the window must exist); the paper does not say what happens then.",
              interpreted=True),
        _rule("textworld", "no_drop", "Do not drop things.", "G !drop",
              _AUDIT + ", TextWorld rule 3", _DIRECT_NOTE.format(pattern="absence (G !p)")),
        _rule("textworld", "stay_in_kitchen",
              "Do not go out of the kitchen. This means you should not use an action "
              "that go in some directions. Every go action goes out of kitchen.",
              "G !(go & in_kitchen)", _AUDIT + ", TextWorld rule 4",
              "The text copy keeps no LTL for this rule. In the paper's games the agent is in "
              "the kitchen throughout (\"Every go action goes out of kitchen\"), where the rule "
              "is G !go. The shared TextWorld log starts in other rooms and walks to the "
              "kitchen, so the rule forbids a go taken while in the kitchen (in_kitchen: the "
              "game's location before the action); in the paper's setting the two agree.",
              interpreted=True),
    ]


# Regular expressions over the command the agent typed (``output``), and the game's own location
# for the one state proposition.  The commands of the cooking games start with their verb.
TEXTWORLD_LABELERS = [
    LibraryLabeler("textworld", "take", "regex", {"path": "output", "pattern": r"^take\b"},
                   "The agent takes something (the command starts with take)."),
    LibraryLabeler("textworld", "examine", "regex", {"path": "output", "pattern": r"^examine\b"},
                   "The agent examines something."),
    LibraryLabeler("textworld", "drop", "regex", {"path": "output", "pattern": r"^drop\b"},
                   "The agent drops something."),
    LibraryLabeler("textworld", "go", "regex", {"path": "output", "pattern": r"^go\b"},
                   "The agent moves to another room (go north, go east, ...)."),
    LibraryLabeler("textworld", "take_knife", "regex",
                   {"path": "output", "pattern": r"^take knife\b"},
                   "The agent takes the knife (from wherever it lies)."),
    LibraryLabeler("textworld", "use_knife", "regex",
                   {"path": "output", "pattern": r"^(chop|slice|dice)\b.*\bwith knife\b"},
                   "The agent chops, slices or dices something with the knife."),
    LibraryLabeler("textworld", "in_kitchen", "field",
                   {"path": "env.location_before", "op": "==", "value": "kitchen"},
                   "The agent is in the kitchen when it acts (the game's recorded location)."),
]


# ---------------------------------------------------------------------------------------------
# ScienceWorld
#
#   open_door, go, look_around, look_at, pick_up, pour, mix, dunk   the step's action
#   go_to:ROOM                 the room a go action enters (living_room, kitchen, ...)
#   measure:substance_b        measuring substance B's temperature with the thermometer
#   put_in_box:substance_b     putting substance B into a box
#   pick_up:yellow_paint, pour:yellow_paint, dunk:yellow_paint   acting on the yellow paint

def _rooms_rule(name: str, english: str, rooms: tuple[str, ...], source: str, note: str,
                interpreted: bool) -> LibraryRule:
    allowed = " | ".join(f"go_to:{room}" for room in rooms)
    return _rule("scienceworld", name, english, f"G(go -> {allowed})", source, note,
                 interpreted)


def _scienceworld() -> list[LibraryRule]:
    look_note = ("The text copy keeps no LTL for this rule; rebuilt from the prose as next-step "
                 "response; X is strong, so the action at the last step of a log is a "
                 "violation.")
    rooms_note = ("The text copy keeps no LTL for this rule; rebuilt from the prose as: every go "
                  "enters one of the allowed rooms (go_to:ROOM names the room entered).")
    return [
        _rule("scienceworld", "sw_go_through_opened_door",
              "If you open a door at step t, then you must go through that door at step "
              "t+1. You may not delay or do any other action in between.",
              "G(open_door -> X go)", _AUDIT + ", ScienceWorld rule 1",
              "The text copy keeps no LTL for this rule; rebuilt from the prose as next-step "
              "response. Propositional atoms cannot bind \"that door\": any go at the next step "
              "answers; a labeler that compares the room entered with the door opened can "
              "produce a stricter atom. Appendix F.3.2 repeats the rule word for word.",
              interpreted=True),
        _rule("scienceworld", "sw_look_around_after_entering",
              "If you go into a room at step t, then at step t+1 you must look around to "
              "familiarize yourself with your surroundings.",
              "G(go -> X look_around)", _AUDIT + ", ScienceWorld rule 2",
              look_note + " Appendix F.3.2 repeats the rule word for word."),
        _rule("scienceworld", "sw_no_look_around_twice",
              "You must not look around twice in a row.",
              "G(look_around -> WX !look_around)", _AUDIT + ", ScienceWorld rule 3",
              "The text copy keeps no LTL for this rule; rebuilt from the prose: a look around "
              "is not followed by another at the next step (WX: a look around at the last step "
              "is fine). Appendix F.3.2 repeats it, adding \"It wastes time.\""),
        _rooms_rule("sw_allowed_rooms",
                    "You may only go to the following rooms: living room, kitchen and "
                    "hallway. Going to any other room is forbidden.",
                    ("living_room", "kitchen", "hallway"), _AUDIT + ", ScienceWorld rule 4",
                    rooms_note + " The use-thermometer task of the auditing experiment.",
                    interpreted=False),
        _rule("scienceworld", "sw_measure_before_boxing",
              "You must measure the temperature of substance B with a thermometer before "
              "you put substance B into a box. Putting substance B into a box before measuring "
              "its temperature is a violation.",
              "!put_in_box:substance_b W measure:substance_b",
              _AUDIT + ", ScienceWorld rule 5",
              _DIRECT_NOTE.format(pattern="precedence (!q W p)")
              + " \"Substance B\" is the task's substance; a log that never measures it may "
                "still never box it."),
        _rooms_rule("sw_allowed_rooms_with_art_studio",
                    "You may only go to the following rooms: living room, kitchen, art "
                    "studio and hallway. Don't go to the bedroom, workshop, or greenhouse.",
                    ("living_room", "kitchen", "art_studio", "hallway"),
                    _STEER + ", ScienceWorld rule 4",
                    rooms_note + " The mix-paint task of the steering experiment, which also "
                                 "allows the art studio. The rule names three forbidden rooms; "
                                 "it is read as its first sentence says, as a list of the only "
                                 "allowed ones.",
                    interpreted=True),
        _rule("scienceworld", "sw_look_after_pick_up",
              "When you pick up an object at step t, you must look around or look at "
              "it at the next step to see the result.",
              "G(pick_up -> X (look_around | look_at))", _STEER + ", ScienceWorld rule 5",
              look_note + " Propositional atoms cannot say the object looked at is the one "
                          "picked up (\"look at it\"). The mix-paint task.",
              interpreted=True),
        _rule("scienceworld", "sw_look_after_pour_mix_dunk",
              "When you perform pouring, mixing or dunking actions at step t, you must "
              "look around or look at the object at the next step to see the result.",
              "G(pour | mix | dunk -> X (look_around | look_at))",
              _STEER + ", ScienceWorld rule 6",
              look_note + " As for picking up, the object looked at is not bound. The mix-paint "
                          "task.",
              interpreted=True),
        _rule("scienceworld", "sw_no_yellow_paint",
              "You should not interact with yellow paint directly. Don't pick it up, "
              "pour or dunk it.",
              "G !(pick_up:yellow_paint | pour:yellow_paint | dunk:yellow_paint)",
              _STEER + ", ScienceWorld rule 7",
              _DIRECT_NOTE.format(pattern="absence (G !p)")
              + " \"Interact directly\" is read as the three actions the rule lists. The "
                "mix-paint task."),
    ]


RULES: list[LibraryRule] = _trucks() + _textworld() + _scienceworld()
LABELERS: list[LibraryLabeler] = list(TEXTWORLD_LABELERS)


def rules_for(domain: str) -> list[LibraryRule]:
    """The library's rules of ``domain``; ValueError naming the domains for an unknown one."""
    _check(domain)
    return [r for r in RULES if r.domain == domain]


def labelers_for(domain: str) -> list[LibraryLabeler]:
    _check(domain)
    return [lab for lab in LABELERS if lab.domain == domain]


def _check(domain: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"unknown library domain {domain!r}; the domains are "
                         f"{', '.join(DOMAINS)}")


__all__ = ["DOMAINS", "LABELERS", "RULES", "Domain", "LibraryLabeler", "LibraryRule",
           "labelers_for", "rules_for"]
