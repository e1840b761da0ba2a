"""Grounding the words a phrase has left over and data comparisons onto vocabulary paths: a
kind of event, a value, a field that changes, a day or month."""

from __future__ import annotations

import re

from studio.logic import formula as fm
from studio.logic.formula import Formula

from .ground_atoms import _acronyms, _score, ground_atom, ground_ties
from .lexicon import IRREGULAR_PARTICIPLES
from .stems import _STEMMED_GENERIC, _STEMMED_SYNONYMS, _UNIT_WORDS, _stem, stem, words_of

# Words a phrase may carry beyond its vocabulary entry without changing what it names.
_IGNORABLE = frozenset(_stem(w) for w in (
    "user", "customer", "client", "caller", "human", "person", "someone", "again", "first",
    "now", "immediately", "new", "current", "request", "any", "all", "every", "each", "some",
    "their", "his", "her", "own", "please", "also", "still", "just", "only", "explicitly"))


def ground_phrase(name: str, atoms, paths) -> tuple[Formula | None, list[str]]:
    """A phrase grounded as a formula: the best vocabulary atom, and what the rest of the
    phrase says when it says more ("wire funds to an unverified account" -> the transfer and
    ``!account_verified``; "send an email to an external address" -> the email and
    ``output.args.external == true``; "open the trapdoor" -> the opening and
    ``output.args.object == "trapdoor"``).  Also the words of the phrase that nothing grounds
    (the caller decides whether they only describe the event or restrict it).  (None, []) when
    nothing fits."""
    main = ground_atom(name, atoms)
    if main is None:
        return None, []
    covered = set(words_of(main))
    phrase = words_of(name)
    rest = [w for w in phrase if w not in covered and w not in _IGNORABLE]
    if not rest:
        return fm.Atom(main), []
    # Only the words after the entry's qualify it ("wire funds to an unverified account"); the
    # ones before name its kind ("start a deploy freeze" is not a deploy).
    last = max((k for k, w in enumerate(phrase) if w in covered), default=-1)
    after = [w for w in rest if w in phrase[last + 1:]]
    extra = _ground_rest(rest, atoms - {main}, paths, main, name, after)
    if extra is not None:
        used = {w for a in extra.subformulas() if a.op == "atom" for w in words_of(a.name)}
        # and the words a comparison took: a flag's name, an argument's value
        for c in (a.payload for a in extra.subformulas() if a.op == "cmp"):
            used |= set(words_of(c.left[1].rsplit(".", 1)[-1]))
            if isinstance(_const(c.right), str):
                used |= set(words_of(_const(c.right)))
        return fm.And(fm.Atom(main), extra), [w for w in rest if w not in after
                                              and w not in used and len(rest) > 1]
    return fm.Atom(main), rest


# Prepositions that open a qualifier restricting an event ("book a meeting outside business
# hours", "ship to an address ..."), unlike its subject ("the triage bot prescribes") or its
# object ("ship the order").
_RESTRICTING = frozenset({"outside", "to", "in", "with", "from", "without", "during", "at",
                          "on", "into", "within", "inside", "except", "beyond", "over", "under"})


# Words after an event that qualify it: "as root", "anything poisonous", "for longer than".
_QUALIFYING = re.compile(r"^(as|than|about|containing|including|unless|except)$"
                         r"|.{3,}(ous|ful|ive|able|ible|less|ical|ic)$")


# Adjectives before a noun ("an international flight", "a foreign account").
_ADJECTIVE = re.compile(r".{3,}(al|ous|ive|ic|ary|ble|ful|less|ern|ign|ese|ish|ent|ant)$")


def guess_kind(name: str, atom: str, leftover: list[str]) -> frozenset:
    """How much of a guess grounding ``name`` as ``atom`` is, with ``leftover`` unmatched:
    "loose" when the entry has words the phrase lacks ("the review is approved" ->
    ``tool_call:request_review``), "restricting" when a qualifier after the matched words
    ("as root", "to an unverified account") or a word before them ("an international flight",
    "no alcohol can go into the cart") may restrict the event; empty when the leftover only
    names its actor or object."""
    kinds = set()
    entry = set(words_of(atom))
    raw = [w for w in re.split(r"[_\s]+", name) if w]
    stems = [_STEMMED_SYNONYMS.get(_stem(w), _stem(w)) for w in raw]
    if entry - set(words_of(name)) - {_STEMMED_SYNONYMS.get(a, a) for a in _acronyms(name)}:
        kinds.add("loose")
    if not leftover:
        return frozenset(kinds)
    matched = [k for k, w in enumerate(stems) if w in entry]
    last_matched = max(matched, default=-1)
    after = [w.lower() for w in raw[last_matched + 1:]]
    before = [w for k, w in enumerate(stems) if matched and k < last_matched and w in leftover
              and _ADJECTIVE.search(raw[k].lower())]
    if any(w in _RESTRICTING or _QUALIFYING.search(w) for w in after) or before or any(
            w.lower().startswith(("un", "non")) and _stem(w) in leftover and len(w) > 5
            for w in raw):
        kinds.add("restricting")
    return frozenset(kinds)


# Tool arguments that hold the name of what the call acts on ("open the trapdoor", "go north",
# "deploy from the main branch"): a word of the phrase that nothing else grounds is their value.
_NAMING_ARGUMENTS = frozenset({"object", "target", "item", "direction", "destination", "room",
                               "location", "place", "branch", "side", "entity", "name",
                               "username", "recipient", "environment", "env", "branch"})
# Prepositions beside those that restrict an event: never part of a value.
_LINKING = frozenset({"as", "for", "by", "of", "than", "via", "about"})
# Arguments that say where a call goes, written after it with a preposition ("send to the
# patient", "go north"): a word before the call's words is never their value.
_PLACE_ARGUMENTS = frozenset({"recipient", "destination", "direction", "room", "location",
                              "place"})
# Outcomes a call's result reports ("a KYC check fails", "the tests pass"), as the logs word
# them: the status field's value.
_OUTCOMES = {"fail": "failed", "pass": "passed", "succe": "succeeded", "succeed": "succeeded",
             "declin": "declined", "reject": "rejected", "approv": "approved",
             "clear": "clear", "error": "error"}
_STATUS_FIELDS = ("status", "result", "outcome", "state")


def _ground_rest(rest: list[str], atoms, paths, main: str = "", name: str = "",
                 after: list[str] | None = None) -> Formula | None:
    """What the words of a phrase beyond its entry's say: a second entry, flags of the call,
    the values of its arguments.  Each says something of its own words, so all of them hold
    together ("force-pushing to main" -> ``force == true`` and ``branch == "main"``; "a
    sandbag put on the pedestal" -> ``on == "pedestal"`` and ``object == "sandbag"``)."""
    negated = [w[2:] if w.startswith("un") and len(w) > 5 else w for w in rest]
    flipped = negated != rest
    # a second entry only from the words after the first ("wire funds to an unverified
    # account"): the words before name its kind ("start a deploy freeze" is not a deploy)
    qualifier = {w[2:] if w.startswith("un") and len(w) > 5 else w
                 for w in (rest if after is None else after)}
    for candidate in sorted(atoms):
        entry = set(words_of(candidate))
        if entry and entry <= qualifier:
            return fm.Not(fm.Atom(candidate)) if flipped else fm.Atom(candidate)
    parts: list[Formula] = []
    used: set[str] = set()
    for candidate in sorted(paths):
        if "boolean" not in _path_type(paths[candidate]):
            continue
        field = set(words_of(candidate.rsplit(".", 1)[-1]))
        if field and field <= set(negated) and not field & used:
            parts.append(fm.Compare(("path", candidate), "==", ("const", not flipped)))
            used |= field | {"un" + w for w in field}
    for word in rest:
        when = _CALENDAR.get(word)
        fields = [p for p in sorted(paths) if when and "string" in _path_type(paths[p])
                  and set(p.rsplit(".", 1)[-1].lower().split("_")) & _CALENDAR_FIELDS[when[1]]]
        if len(fields) == 1:
            # "no deploys on Fridays": a day of the week is the value of the field that names
            # the day, written as a name is ("Friday")
            parts.append(fm.Compare(("path", fields[0]), "==", ("const", when[0])))
            used |= {word}
    if not main.startswith("tool_call:"):
        return fm.And(*parts) if parts else None
    strings = sorted(p for p in paths if "string" in _path_type(paths[p]))
    outcomes = [w for w in rest if w in _OUTCOMES]
    if len(outcomes) == 1 and len(rest) == 1:
        status = [p for p in strings if p.rsplit(".", 1)[-1] in _STATUS_FIELDS]
        if len(status) == 1:
            return fm.Compare(("path", status[0]), "==", ("const", _OUTCOMES[outcomes[0]]))
    raw_all = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    for k, word in enumerate(raw_all[:-1]):
        field = f"output.args.{word}"
        if field in strings and word in _RESTRICTING | {"via", "for", "by"}:
            # "cook with the oven" when the call's arguments have a "with": its value
            value = " ".join(raw_all[k + 1:])
            parts.append(fm.Compare(("path", field), "==", ("const", value)))
            used |= {_STEMMED_SYNONYMS.get(_stem(w), _stem(w)) for w in raw_all[k:]}
            strings = [p for p in strings if p != field]
            break
    own = set(words_of(main))
    for path in [p for p in strings if p.startswith("output.args.")]:
        field = path.rsplit(".", 1)[-1]
        spots = [k for k, w in enumerate(raw_all) if k and w in (field, field + "s")]
        before = raw_all[spots[0] - 1] if spots and "_" not in field else ""
        stem = _STEMMED_SYNONYMS.get(_stem(before), _stem(before)) if before else ""
        if (before and stem not in own and stem not in used and not _not_a_value(before)
                and before not in _RESTRICTING | _LINKING and not before.isdigit()):
            # "routed through the dock lane": the argument named by its own word, its
            # value the word before it
            parts.append(fm.Compare(("path", path), "==", ("const", before)))
            used |= {stem, _stem(field)}
            strings = [p for p in strings if p != path]
    naming = [p for p in strings if p.startswith("output.args.")
              and p.rsplit(".", 1)[-1] in _NAMING_ARGUMENTS]
    # the value is a word after the call's words ("push to main"), else before them ("sell
    # orders"), never a word of another call ("starting a deploy freeze" is no value "deploy")
    entry_words = {w for a in atoms if a.startswith("tool_call:") for w in words_of(a)}
    raw_of = {_STEMMED_SYNONYMS.get(_stem(w), _stem(w)): w.lower()
              for w in re.split(r"[_\s]+", name) if w}
    # a value names a thing: not a participle ("a refund is issued"), nor "further", "new"
    raw_words = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    # "issued twice for the same order": what the event is for is not an argument's value
    after_for = {_STEMMED_SYNONYMS.get(_stem(w), _stem(w))
                 for k, w in enumerate(raw_words) if "for" in raw_words[:k]}

    def fits(w: str) -> bool:
        # (nor a generic verb: "marketing emails must not go to anyone" has no value "go")
        return (w not in entry_words and w not in after_for and w not in used
                and w not in _STEMMED_GENERIC and not _not_a_value(raw_of.get(w, w)))
    pool = [w for w in (after or []) if fits(w)]
    if not pool:
        # before the call's words a value names what it acts on ("sell orders", "production
        # deploys"), not where it goes ("patient records" are not sent to the patient)
        pool = [w for w in rest if fits(w)]
        naming = [p for p in naming if p.rsplit(".", 1)[-1] not in _PLACE_ARGUMENTS]
    named = [p for p in naming if set(words_of(p.rsplit(".", 1)[-1])) <= set(pool)]
    if len(named) == 1 or len(naming) == 1:
        path = (named or naming)[0]
        values = [w for w in pool if w not in words_of(path.rsplit(".", 1)[-1])]
        # several words are one value only when they end the phrase ("pick up the brass
        # key"), not when more follows them ("opening the level means ...")
        tail = [w for w in (after or []) if w not in words_of(path.rsplit(".", 1)[-1])]
        value = _written_value(values, name) if len(values) == 1 or values == tail else None
        if value is not None:
            parts.append(fm.Compare(("path", path), "==", ("const", value)))
    return fm.And(*parts) if parts else None


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
# A day's or month's name, by its stem, and the words of a field that holds it.
_CALENDAR = {**{_stem(d.lower()): (d, "day") for d in _DAYS},
             **{_stem(m.lower()): (m, "month") for m in _MONTHS if m != "May"}}
_CALENDAR_FIELDS = {"day": {"weekday", "day", "dow", "wday"}, "month": {"month"}}


# Arguments that say what kind of thing a call acts on: a word before the thing's noun is their
# value ("alcohol" in "no alcohol goes into the cart", "marketing emails").
_KIND_ARGUMENTS = frozenset({"category", "type", "kind", "class", "genre", "tier"})


def _carrier(grounded: Formula, leftover: list[str], calls) -> str | None:
    """The call a label is carried by when a phrase names both ("handoff notes must not include
    patient names": ``contains_patient_name`` on ``tool_call:write_handoff_note``): the phrase
    grounded as a label, and the words left over name the call."""
    if (grounded.op != "atom" or not leftover
            or not re.match(r"(contains?|includes?|has|with)_", grounded.name)):
        return None         # only a label of what something carries (``contains_pii``)
    call = ground_atom("_".join(leftover), calls) if calls else None
    if call is None:
        return None
    # the call's verb ("forwarded" -> forward_email), or all the words after it ("handoff
    # notes" -> write_handoff_note)
    entry = words_of(call)
    named = entry[0] in leftover or (len(entry) > 1 and set(entry[1:]) <= set(leftover))
    return call if named else None


def _value_fields(strings: list[str]) -> list[str]:
    """The text arguments a word of the English may be the value of, beside a call named
    loosely: those that name what a call acts on, or the only one there is if it says what
    kind of thing that is."""
    naming = [p for p in strings if p.rsplit(".", 1)[-1] in _NAMING_ARGUMENTS]
    if naming:
        return naming
    return [p for p in strings if len(strings) == 1
            and p.rsplit(".", 1)[-1].split("_")[-1] in _KIND_ARGUMENTS]


def _written_value(values: list[str], name: str) -> str | None:
    """An argument's value as the phrase writes it: one word ("take the lamp" -> "lamp"), or
    words that follow one another in the phrase ("pick up the brass key" -> "brass key")."""
    if not values:
        return None
    raw = [w for w in re.split(r"[_\s]+", name) if w]
    stems = [_STEMMED_SYNONYMS.get(_stem(w), _stem(w)) for w in raw]
    if len(values) == 1:
        found = [w for w, st in zip(raw, stems) if _stem(w) == values[0] or st == values[0]]
        return found[-1].lower() if found else None
    for k in range(len(stems) - len(values) + 1):
        if stems[k:k + len(values)] == values:
            return " ".join(w.lower() for w in raw[k:k + len(values)])
    return None


_NOT_VALUES = frozenset({"further", "another", "new", "more", "other", "again", "also", "any",
                         "anyone", "anybody", "anything", "someone", "something", "else",
                         "same", "next", "previous", "last", "first", "single", "each",
                         "every", "all", "only", "out", "off", "up", "down", "back",
                         "action", "step", "thing", "event", "time", "call", "tool", "turn",
                         "ok", "okay", "sure", "fine", "allowed"})


_NOT_VALUE_STEMS = frozenset(_stem(w) for w in _NOT_VALUES)
_COMPASS = frozenset({"north", "south", "east", "west", "northeast", "northwest", "southeast",
                      "southwest", "up", "down", "left", "right"})


def _not_a_value(word: str) -> bool:
    return (word in _NOT_VALUES or word in IRREGULAR_PARTICIPLES
            or (len(word) > 4 and word.endswith("ed")) or word.endswith("ing"))


def _flipped_state(name: str, atoms) -> Formula | None:
    """``!door_locked`` for "door unlocked" when the logs record the state without "un" and
    nothing records the phrase as it is written."""
    raw = [w for w in re.split(r"[_\s]+", name) if w]
    if not any(w.lower().startswith("un") and len(w) > 5 for w in raw):
        return None
    positive = "_".join(w[2:] if w.lower().startswith("un") and len(w) > 5 else w for w in raw)
    states = [a for a in atoms if not a.startswith(("tool_call:", "role:"))]
    for candidate in ground_ties(positive, states):
        entry = set(words_of(candidate))
        if (entry and entry <= set(words_of(positive)) and not entry <= set(words_of(name))
                and not set(words_of(positive)) - entry - _IGNORABLE):
            return fm.Not(fm.Atom(candidate))
    return None


# States that last until a call undoes them, and that call's verb: "the chest stays shut" is
# "the chest is not opened", "answers stay hidden" "answers are not shown".
_OPPOSITE_CALLS = {"shut": "open", "closed": "open", "hidden": "show", "locked": "unlock",
                   "sealed": "open", "unopened": "open", "concealed": "show",
                   "private": "share", "confidential": "share"}


def _opposite_call(name: str, atoms, paths) -> Formula | None:
    """``!(tool_call:open & output.args.object == "chest")`` for "chest shut": a phrase that
    ends with a state word, when no entry of the logs records that state and a call does what
    ends it.  None otherwise."""
    raw = [w for w in re.split(r"[_\s]+", name) if w]
    if len(raw) < 2 or raw[-1].lower() not in _OPPOSITE_CALLS:
        return None
    state = words_of(raw[-1])
    if any(set(state) & set(words_of(a)) for a in atoms):
        return None         # the logs name the state (``door_locked``) or the call that makes it
    verb = _OPPOSITE_CALLS[raw[-1].lower()]
    calls = {a for a in atoms if a.startswith("tool_call:") and _stem(verb) in words_of(a)}
    if not calls:
        return None
    grounded, _ = ground_phrase("_".join([verb] + raw[:-1]), calls, paths)
    return fm.Not(grounded) if grounded is not None else None


def _path_type(types) -> set:
    return {str(t).lower() for t in (types or ())}


def ground_path(path: str, value, paths: dict, fallback: bool = True) -> str | None:
    """A vocabulary path for a comparison's field (``data.amount`` -> ``output.args.amount``)
    whose type fits the compared value."""
    if path in paths:
        return path
    field_words = words_of(path.removeprefix("data."))
    # a field may be named by the initials of the words ("debt-to-income ratio" -> ``dti_pct``)
    field_words += sorted(_acronyms(path.removeprefix("data.").replace(".", "_"))
                          - set(field_words))
    wanted = "string" if isinstance(value, str) else "boolean" if isinstance(value, bool) \
        else "number"
    best, best_score = None, None
    for candidate in sorted(paths):
        types = _path_type(paths[candidate])
        if types and wanted not in types and not ({"integer", "float"} & types
                                                  and wanted == "number"):
            continue
        last = words_of(candidate.rsplit(".", 1)[-1])
        if len(last) > 1 and last[-1] in _UNIT_WORDS:
            last = last[:-1]    # "co2_ppm" is the co2
        score = _score(field_words, last)
        if score is not None and score[0] == 1 and (best_score is None or score > best_score):
            best, best_score = candidate, score
    if best is None and fallback and not isinstance(value, bool):
        # "a dose above 100 mg" with one number field in the logs (``output.args.dose_mg``):
        # the only field the comparison can read
        fitting = [c for c in paths if wanted in _path_type(paths[c])
                   or (wanted == "number" and {"integer", "float"} & _path_type(paths[c]))]
        if len(fitting) == 1:
            return fitting[0]
    return best


_CHANGES = {"decreas": "<", "drop": "<", "fall": "<", "shrink": "<", "go_down": "<",
            "increas": ">", "ris": ">", "grow": ">", "go_up": ">", "chang": "!=",
            "updat": "!="}


# Words after a change that only say what it is measured against ("increase from the
# previous step", "goes up compared with the last reading").
_RELATIVE = frozenset(_stem(w) for w in ("compared", "previous", "prior", "last", "step",
                                          "steps", "reading", "readings", "next", "before",
                                          "from", "than", "since", "one", "value", "turn"))


def ground_change(name: str, paths: dict) -> Formula | None:
    """"the balance decreases" -> ``data.balance < prev(data.balance)`` when a number path
    ends with the subject's words; "the status failed" -> ``data.status == "failed"`` when a
    string path does."""
    words = words_of(name)
    if len(words) < 2:
        return None
    raw = [w for w in re.split(r"[_\s]+", name) if w]
    for candidate in sorted(paths, key=len):
        types = _path_type(paths[candidate])
        field = words_of(candidate.rsplit(".", 1)[-1])
        if len(field) > 1 and field[-1] in _UNIT_WORDS:
            field = field[:-1]      # "speed_kph" is the speed
        if not field or not set(field) <= set(words[:-1]):
            continue
        last = words[-1]
        if "number" in types or "integer" in types or "float" in types:
            op = _CHANGES.get(last)
            if op is None:
                op = _change_after(field, words, raw)
            if op is not None:
                return fm.Compare(("path", candidate), op, ("prev", candidate))
        if "string" in types and words.index(field[-1]) == len(words) - 2 and raw:
            return fm.Compare(("path", candidate), "==", ("const", raw[-1]))
    return None


def _change_after(field: list[str], words: list[str], raw: list[str]) -> str | None:
    """The comparison a change word right after a field says, when what follows it only says
    what it is measured against ("its reported speed must not increase from the previous
    step", "the cart total goes up compared with the previous step")."""
    end = max(k for k, w in enumerate(words) if w in field)
    after = words[end + 1:]
    if not after:
        return None
    op = _CHANGES.get(after[0])
    if op is None and after[0] == "go":
        # "goes up", "goes down": the particle words_of leaves out
        lowered = [w.lower() for w in raw]
        k = next((k for k, w in enumerate(lowered) if _stem(w) == "go"), None)
        particle = lowered[k + 1] if k is not None and k + 1 < len(lowered) else ""
        op = {"up": ">", "down": "<"}.get(particle)
    if op is None or not set(after[1:]) <= _RELATIVE:
        return None
    return op


def _const(operand):
    return operand[1] if operand and operand[0] == "const" else None
