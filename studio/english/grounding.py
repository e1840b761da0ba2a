"""Grounding: the atoms an English rule names, mapped onto what the workspace's logs produce.

The reader names an atom after the words of its phrase ("the agent sends money" ->
``agent_sends_money``).  When a vocabulary is given (any object with ``.atoms``, an iterable of
atom names, and ``.paths``, a mapping of dotted data paths to sets of JSON type names), each such
name is matched against the vocabulary by its words: stemmed ("verifies", "verified" and
"verification" are one word), with a few synonyms a policy writer uses for the same action
("transfer" / "send", "check" / "get"), ignoring who does it ("the agent", "the user").  A name
is grounded when every word of a vocabulary entry is in the phrase, or half of them and a word
that is not a generic verb; the entry covering the most of the phrase wins, then the one whose
words come in the phrase's order ("verify the identity" -> ``tool_call:verify_identity``,
"identity is verified" -> ``identity_verified``).  Otherwise the atom is invented, and the
answer says so.  Data comparisons ``data.amount > 10000`` are moved onto a vocabulary path that
ends with the same field and holds the compared value's type (``output.args.amount``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from studio.logic import formula as fm
from studio.logic.formula import Formula

from .ground_atoms import (_PEOPLE, Grounding, _reply, _score, _speaker, _tells_about, _tool_result,
                           ground_atom, ground_ties)
from .ground_phrases import (_COMPASS, _KIND_ARGUMENTS, _LINKING, _NAMING_ARGUMENTS,
                             _NOT_VALUE_STEMS, _PLACE_ARGUMENTS, _RESTRICTING, _carrier, _const,
                             _flipped_state, _not_a_value, _opposite_call, _path_type,
                             _value_fields, _written_value, ground_change, ground_path,
                             ground_phrase, guess_kind)
from .lexicon import IRREGULAR_PARTICIPLES
from .stems import _OTHER_SIDE, _STEMMED_GENERIC, _STEMMED_SYNONYMS, _UNIT_WORDS, _stem, words_of

GROUNDINGS = ("drop", "keep", "invent")


@dataclass
class _Grounder:
    """What grounding one rule's phrases shares: the vocabulary, the choice for words left
    over, and the answer so far (each phrase's mapping, what its atom becomes)."""

    every_atom: frozenset
    paths: dict
    words_left: str
    quoted: dict
    best_of: dict                   # the entry each phrase matches best, all atoms considered
    same_step: dict                 # the phrases joined with each one at one step
    mapping: list = field(default_factory=list)
    changed: dict = field(default_factory=dict)
    partial: set = field(default_factory=set)

    def name_as(self, p: _Phrase, grounded: Formula, phrase: str | None = None,
                shown: str | None = None) -> bool:
        """Grounds ``p`` as ``grounded`` (``shown``: the entry's name, for a single atom)."""
        self.mapping.append(Grounding(p.phrase if phrase is None else phrase,
                                      grounded.text if shown is None else shown, True))
        self.changed[p.name] = grounded
        return True

    def invent(self, p: _Phrase) -> bool:
        self.mapping.append(Grounding(p.phrase, p.name, False))
        return True


@dataclass
class _Phrase:
    """One invented atom being grounded, and what the ways tried so far found out."""

    name: str
    phrase: str
    atoms: frozenset                # the entries it may name (less those named elsewhere)
    calls: list = field(default_factory=list)
    change: Formula | None = None   # a change of a number the logs record


_TOOLS = re.compile(r"(^|_)tools?(_|$)")


def _in_vocabulary(g: _Grounder, p: _Phrase) -> bool:
    if p.name not in p.atoms:
        return False
    g.mapping.append(Grounding(p.phrase, p.name, True))
    return True


def _quoted_atom(g: _Grounder, p: _Phrase) -> bool:
    context = g.quoted.get(p.name)
    if context is None:
        return False
    value = _quoted_value(p.name, context, p.atoms, g.paths)
    said = _quoted_label(p.name, p.atoms) if value is None else None
    if said is not None:
        # "between the executive saying 'pause' and saying 'resume'": the quoted word names
        # the label the logs put on it (``pause_requested``); the label has more words than
        # were quoted, so the quoted word itself is offered beside it
        g.partial.add("loose")
        if g.words_left != "invent":
            return g.name_as(p, fm.Atom(said), f"“{p.name}”", said)
    if value is not None:
        return g.name_as(p, value, f"{context.replace('_', ' ')} “{p.name}”")
    return g.invent(p)


def _not_named_elsewhere(g: _Grounder, p: _Phrase) -> bool:
    """Sets aside the entry this phrase matched when another phrase of the rule names it, at
    another place of it ("whenever a file is deleted, the agent must log it": the logging is
    not the deletion), or one the phrase fits no better than the event it is joined with at
    one step ("claims over $10,000 ... before payout").  Never grounds the phrase itself."""
    excluded = _named_elsewhere(p.name, g.best_of, g.same_step.get(p.name, set()), p.atoms)
    if excluded:
        p.atoms = p.atoms - excluded
        g.partial.add("loose")
    p.calls = sorted(a for a in p.atoms if a.startswith("tool_call:"))
    return False


def _speaker_role(g: _Grounder, p: _Phrase) -> bool:
    """"the assistant replies": a message of that role."""
    call = ground_atom(p.name, p.calls) if p.calls else None
    spoken = (_speaker(p.name, p.atoms) if call is None or _tells_about(p.name, call)
              else None)
    return spoken is not None and g.name_as(p, fm.Atom(spoken), shown=spoken)


def _any_call(g: _Grounder, p: _Phrase) -> bool:
    """"no tools get called": any of the calls the logs record."""
    if not (len(p.calls) > 1 and not words_of(p.name) and _TOOLS.search(p.name.lower())):
        return False
    return g.name_as(p, fm.Or(*[fm.Atom(a) for a in p.calls]))


def _tool_messages(g: _Grounder, p: _Phrase) -> bool:
    """"the agent must stop calling tools" when the logs record no call by name: the tools'
    messages are what a call leaves in them."""
    if not (not p.calls and "role:tool" in p.atoms and not words_of(p.name)
            and _TOOLS.search(p.name.lower())):
        return False
    return g.name_as(p, fm.Atom("role:tool"), shown="role:tool")


def _tied_entries(g: _Grounder, p: _Phrase) -> bool:
    """"the user asks for flights": as much a booking as a search, so neither is sure; "no
    other booking": any of the entries the phrase names equally well, or (the author picks)
    the first of them only."""
    tied = ground_ties(p.name, p.atoms) if p.atoms else []
    if len(tied) < 2:
        return False
    first_words = {words_of(t)[0] for t in tied if words_of(t)}
    if len(first_words) > 1:
        g.partial.add("loose")
        return False
    if len(first_words) == 1:
        g.partial.add("tie")
        if g.words_left != "one":
            return g.name_as(p, fm.Or(*[fm.Atom(t) for t in tied]))
    return False


def _number_change(g: _Grounder, p: _Phrase) -> bool:
    """"the account balance changes": a change of a number the logs record, before any call
    that merely shares a word with it (``tool_call:get_balance``)."""
    p.change = ground_change(p.name, g.paths) if g.paths else None
    return (p.change is not None and p.change.payload.right[0] == "prev"
            and g.name_as(p, p.change))


def _flipped(g: _Grounder, p: _Phrase) -> bool:
    """"the door is unlocked": the logs' ``door_locked``, negated."""
    flipped = _flipped_state(p.name, p.atoms) if p.atoms else None
    return flipped is not None and g.name_as(p, flipped)


def _opposite(g: _Grounder, p: _Phrase) -> bool:
    """"the chest stays shut": no opening of the chest; a guess, so the invented state is
    offered beside it."""
    opposite = _opposite_call(p.name, p.atoms, g.paths) if p.atoms else None
    if opposite is None:
        return False
    g.partial.add("loose")
    if g.words_left == "invent":
        return g.invent(p)
    return g.name_as(p, opposite)


def _contact(g: _Grounder, p: _Phrase) -> bool:
    """"the agent must not contact them again": the one call that sends someone a message; a
    guess, so the invented atom is offered beside it."""
    contact = _contact_call(p.name, p.calls)
    if contact is None:
        return False
    g.partial.add("loose")
    return g.words_left != "invent" and g.name_as(p, fm.Atom(contact), shown=contact)


def _tool_result_message(g: _Grounder, p: _Phrase) -> bool:
    """"every shell command must be followed by its result": the tool's message."""
    return _tool_result(p.name, p.atoms) and g.name_as(p, fm.Atom("role:tool"), shown="role:tool")


def _reply_message(g: _Grounder, p: _Phrase) -> bool:
    """"every user message must be answered": by a message of the assistant."""
    return bool(_reply(p.name, p.atoms)) and g.name_as(p, fm.Atom("role:assistant"),
                                                       shown="role:assistant")


# When no vocabulary entry matches the phrase's words, these are tried in order.
_UNMATCHED = (_contact, _tool_result_message, _reply_message, _Grounder.invent)


def _best_entry(g: _Grounder, p: _Phrase) -> bool:
    """The entry matching the phrase's words best, and what its words left over say."""
    grounded, leftover = ground_phrase(p.name, p.atoms, g.paths) if p.atoms else (None, [])
    if grounded is None and g.paths:
        grounded = p.change
    if grounded is None:
        return any(way(g, p) for way in _UNMATCHED)
    kinds, carrier, values = _matched_in_part(g, p, grounded, leftover)
    if kinds:
        g.partial.update(kinds)
        if g.words_left == "invent" and kinds != {"argument"}:
            return g.invent(p)
        if ((g.words_left == "keep" and "restricting" in kinds)
                or (g.words_left == "keep_arguments" and kinds & {"restricting", "argument"})):
            return _keep_words_left(g, p, grounded, leftover, kinds, carrier, values)
    return g.name_as(p, grounded)


# The ways a phrase is grounded, tried in order: the first that names it wins.
WAYS = (_in_vocabulary, _quoted_atom, _not_named_elsewhere, _speaker_role, _any_call,
        _tool_messages, _tied_entries, _number_change, _flipped, _opposite, _best_entry)


def _written(name: str) -> dict[str, str]:
    return {_STEMMED_SYNONYMS.get(_stem(w), _stem(w)): w.lower()
            for w in re.split(r"[_\s]+", name) if w}


def _matched_in_part(g: _Grounder, p: _Phrase, grounded: Formula, leftover: list[str]):
    """How the phrase is grounded only in part (``guess_kind``'s kinds, and "argument"), the
    label a call carries that the words left over name, and the words left that may be a
    value."""
    calls = p.calls
    kinds = guess_kind(p.name, next((a.name for a in grounded.subformulas()
                                     if a.op == "atom"), ""), leftover)
    used = {a.name for a in grounded.subformulas() if a.op == "atom"}
    if leftover and any(c not in used for c in ground_ties("_".join(leftover),
                                                           set(calls) - used)):
        # "no payout on a denied claim": the words left over name another call of the logs,
        # so the phrase is not surely the one it matched best
        kinds = kinds | {"loose"}
    carrier = _carrier(grounded, leftover, calls)
    if carrier is not None:
        # "handoff notes must not include patient names": a label the logs put on what a call
        # carries, and the words left over name that call; the label may hold only on it
        kinds = kinds | {"restricting"}
    written = _written(p.name)
    # a value names a thing: not a generic verb ("no alcohol can go into the cart"), nor a unit
    # ("written for 90 days"), nor a preposition ("commands as root"), nor a word of a call
    # ("starting a deploy freeze" is no value "deploy")
    call_words = {w for a in calls for w in words_of(a)}
    values = [w for w in leftover if w not in _NOT_VALUE_STEMS
              and not _not_a_value(written.get(w, w)) and w not in _STEMMED_GENERIC
              and written.get(w, w) not in _UNIT_WORDS | _RESTRICTING | _LINKING
              and w not in call_words]
    labels = [a for a in p.atoms if not a.startswith(("tool_call:", "role:"))]
    if (values and grounded.op == "atom" and grounded.name.startswith("tool_call:")
            and labels and ground_atom("_".join(values), labels)):
        # "don't store SSNs in the applicant notes": the words left over name a label the logs
        # record (``contains_ssn``), which may restrict the call
        kinds = kinds | {"restricting"}
    texts = [q for q in g.paths if q.startswith("output.args.")
             and "string" in _path_type(g.paths[q])]
    if (values and not kinds - {"loose"} and grounded.op == "atom"
            and grounded.name.startswith("tool_call:") and texts
            and (not kinds or _value_fields(texts))):
        # "go north" with the call's arguments in the logs: the word may be one's value (also
        # when the call is named loosely, "alcohol goes into the cart" -> add_to_cart, if an
        # argument can hold it)
        kinds = kinds | {"argument"}
    return kinds, carrier, values


def _keep_words_left(g: _Grounder, p: _Phrase, grounded: Formula, leftover, kinds, carrier,
                     values) -> bool:
    """The phrase as its best entry and, beside it, what the words left over name: an
    argument's value, the label the call carries, a state, or an invented atom."""
    name, atoms, paths = p.name, p.atoms, g.paths
    rest = "_".join(w for w in re.split(r"[_\s]+", name)
                    if w and _STEMMED_SYNONYMS.get(_stem(w), _stem(w)) in leftover)
    rest = rest or "_".join(leftover)
    g.mapping.append(Grounding(p.phrase, grounded.text, True))
    # the qualifier may be a state the logs record ("anything poisonous" -> ``item_poisonous``),
    # or an argument's value ("go north", "take the lamp")
    naming = sorted(q for q in paths if q.startswith("output.args.")
                    and "string" in _path_type(paths[q])
                    and q.rsplit(".", 1)[-1] in _NAMING_ARGUMENTS)
    # the value's words as written, one word or several in a row ("take the silver key"),
    # without those that name no thing ("going west is allowed")
    spoken = _written_value([w for w in leftover if w in values], name)
    raw_stems = [_STEMMED_SYNONYMS.get(_stem(w), _stem(w)) for w in re.split(r"[_\s]+", name)
                 if w]
    said = words_of(spoken) if spoken is not None else []
    if len(said) > 1 and raw_stems[-1] != said[-1]:
        spoken = None   # several words are a value only at the phrase's end
    entry = set(words_of(next((a.name for a in grounded.subformulas() if a.op == "atom"), "")))
    last = (len(raw_stems) - 1 - raw_stems[::-1].index(said[-1])
            if said and said[-1] in raw_stems else len(raw_stems))
    if any(w in entry for w in raw_stems[last + 1:]):
        # a word before the call names what it acts on ("camera footage is shared"), not
        # where it goes
        naming = [q for q in naming if q.rsplit(".", 1)[-1] not in _PLACE_ARGUMENTS]
    if "restricting" not in kinds and naming and spoken is not None:
        wanted = "direction" if spoken in _COMPASS else "object"
        path = next((q for q in naming if q.endswith("." + wanted)), naming[0])
        value = fm.Compare(("path", path), "==", ("const", spoken))
        g.mapping.append(Grounding(spoken, value.text, True))
        g.changed[name] = fm.And(grounded, value)
        return True
    if carrier is not None:
        g.mapping.append(Grounding(rest.replace("_", " "), carrier, True))
        g.changed[name] = fm.And(fm.Atom(carrier), grounded)
        return True
    states = [a for a in atoms if not a.startswith(("tool_call:", "role:"))]
    state = ground_atom(rest, states) if states else None
    if state is not None:
        g.mapping.append(Grounding(rest.replace("_", " "), state, True))
        g.changed[name] = fm.And(grounded, fm.Atom(state))
        return True
    # or the value of the one argument the logs record as text ("an international flight" ->
    # ``output.args.route_type == "international"``)
    strings = [q for q in paths if q.startswith("output.args.")
               and "string" in _path_type(paths[q])]
    field_name = strings[0].rsplit(".", 1)[-1] if strings else ""
    if (len(strings) == 1 and spoken is not None
            and not set(words_of(spoken)) & set(words_of(field_name))
            and not re.search(r"(^|_)ids?$", field_name)
            and ("loose" not in kinds or field_name.split("_")[-1] in _KIND_ARGUMENTS)):
        # (never the argument's own name, nor an identifier: "appointment reminders" is no
        # appointment_id "appointment"; beside a call named loosely, only a field that says
        # what kind of thing it is: "no alcohol goes into the cart" -> category)
        value = fm.Compare(("path", strings[0]), "==", ("const", spoken))
        g.mapping.append(Grounding(spoken, value.text, True))
        g.changed[name] = fm.And(grounded, value)
        return True
    g.mapping.append(Grounding(rest.replace("_", " "), rest, False))
    g.changed[name] = fm.And(grounded, fm.Atom(rest))
    return True


def ground(f: Formula, invented: list[str], vocabulary, words_left: str = "drop",
           quoted: dict | None = None) -> tuple[Formula, list[Grounding], set]:
    """``f`` with its invented atoms and data fields moved onto the vocabulary, the mapping of
    every phrase (grounded or invented), and how some phrase was grounded only in part
    (``guess_kind``: "loose", "restricting"; empty when none was).

    A phrase grounded in part ("book a meeting outside business hours" ->
    ``tool_call:book_meeting``, "outside business hours" matching nothing) is a guess: with
    ``words_left`` "drop" the leftover words only describe the event, with "keep" they name an
    invented atom beside it, with "invent" the whole phrase stays an invented atom.  ``quoted``
    maps a quoted atom to the words around it ("the account named "admin""): with a string field
    in the logs it is that field's value on the event the words name.  Each phrase is tried
    against ``WAYS`` in order."""
    atoms = frozenset(getattr(vocabulary, "atoms", ()) or ())
    paths = dict(getattr(vocabulary, "paths", {}) or {})
    # One step is one event: phrases joined at one step name one event, phrases at different
    # places of the rule (a trigger and its response) name different ones.
    present = {g.name for g in f.subformulas() if g.op == "atom"}
    best_of = ({n: ground_atom(n, atoms) for n in invented if n not in atoms and n in present}
               if atoms else {})
    grounder = _Grounder(atoms, paths, words_left, quoted or {}, best_of, _same_step(f))
    for name in invented:
        phrase = _Phrase(name, name.replace("_", " "), atoms)
        any(way(grounder, phrase) for way in WAYS)
    _speakers_apart(grounder.changed, grounder.mapping, atoms)
    return _ground_comparisons(f, grounder, invented), grounder.mapping, grounder.partial


def _ground_comparisons(f: Formula, grounder: _Grounder, invented: list[str]) -> Formula:
    """``f`` with each phrase's atom replaced by what it became, and its data comparisons moved
    onto the vocabulary's paths (the mapping records them)."""
    atoms, paths, mapping, changed = (grounder.every_atom, grounder.paths, grounder.mapping,
                                      grounder.changed)
    path_renamed: dict[str, str] = {}

    def visit(g: Formula) -> Formula:
        if g.op == "atom":
            if g.name in changed:
                return changed[g.name]
            return fm.Atom(g.name)
        if g.op == "cmp":
            c = g.payload
            left = c.left
            if left[0] == "path" and paths and atoms and left[1].startswith("data."):
                named = ground_path(left[1], _const(c.right), paths, fallback=False)
                event = ground_atom(left[1].removeprefix("data."), atoms)
                target = ground_path(left[1], _const(c.right), paths)
                extra_words = set(words_of(left[1].removeprefix("data."))) - set(
                    words_of((named or "").rsplit(".", 1)[-1]))
                if event is not None and target is not None and (named is None or (
                        extra_words and set(words_of(event)) <= extra_words)):
                    # "the amount of any refund must not exceed 500": the refund's amount
                    # "no single refund may exceed 200": the refund's amount
                    mapping.append(Grounding(left[1].removeprefix("data.").replace("_", " "),
                                             f"{event} & {target}", True))
                    return fm.And(fm.Atom(event), fm.Compare(("path", target), c.op, c.right))
            if left[0] in ("path", "prev") and paths:
                target = ground_path(left[1], _const(c.right), paths)
                if target is not None and target != left[1]:
                    if left[1] not in path_renamed:
                        path_renamed[left[1]] = target
                        mapping.append(Grounding(left[1].removeprefix("data.").replace("_", " "),
                                                 target, True))
                    compare = fm.Compare((left[0], target), c.op, c.right)
                    if left[0] == "path" and _latest(left[1]) and c.op in _OPPOSITE_OP:
                        # "the latest battery reading is above 50%": the last step that shows
                        # the value showed it above 50, whatever the steps since show
                        other = fm.Compare(("path", target), _OPPOSITE_OP[c.op], c.right)
                        return fm.S(fm.Not(other), compare)
                    return compare
            return g
        if g.op == "and" and paths:
            subjects = _compared_subjects(g, invented, atoms, paths)
            if subjects:
                # "the booking was made less than 24 hours ago": the phrase names what the
                # compared field measures the age of (``booking_age_hours``), not an event
                for a in subjects:
                    mapping[:] = [m for m in mapping
                                  if m.phrase != a.name.replace("_", " ")]
                return fm.And(*[visit(a) for a in g.args if a not in subjects])
        if not g.args:
            return g
        return fm.rebuild(g, tuple(visit(a) for a in g.args))

    return visit(f)


_OPPOSITE_OP = {">": "<=", "<": ">=", ">=": "<", "<=": ">", "==": "!=", "!=": "=="}


def _latest(path: str) -> bool:
    """Whether a compared field is named as its latest value ("the latest battery reading",
    "the most recent score")."""
    raw = [w.lower() for w in re.split(r"[_.\s]+", path.removeprefix("data."))]
    return "latest" in raw or any(a == "most" and b == "recent" for a, b in zip(raw, raw[1:]))


# Words that say a comparison measures how old something is ("made less than 24 hours ago").
_AGE_WORDS = frozenset({"ago", "old", "age", "since"})
_AGE_FIELD_WORDS = frozenset(_stem(w) for w in ("age", "hours", "days", "minutes", "mins",
                                                 "seconds", "secs", "elapsed", "since", "old"))


def _compared_subjects(g: Formula, invented, atoms, paths) -> list[Formula]:
    """The invented atoms of a conjunction that only name what a compared field measures the
    age of: the phrase says "ago" (or "old"), the field's name is an age, and every other
    word of the phrase that is neither a generic verb nor a participle is a word of the
    field's name."""
    fields = []
    for c in (a.payload for a in g.args if a.op == "cmp"):
        if c.left[0] in ("path", "prev"):
            target = ground_path(c.left[1], _const(c.right), paths)
            if target is not None:
                fields.append(set(words_of(target.rsplit(".", 1)[-1])))
    fields = [f for f in fields if f & _AGE_FIELD_WORDS]
    out = []
    for a in g.args:
        if a.op != "atom" or a.name not in invented or a.name in atoms:
            continue
        raw = {w.lower() for w in re.split(r"[_\s]+", a.name) if w}
        # (nor the participle that says how it came about: "placed", "made", "opened")
        done = {_STEMMED_SYNONYMS.get(_stem(w), _stem(w)) for w in raw if _participle(w)}
        words = (set(words_of(a.name)) - _STEMMED_GENERIC - {_stem(w) for w in _AGE_WORDS}
                 - done)
        if raw & _AGE_WORDS and words and any(words <= f for f in fields):
            out.append(a)
    return out


def _participle(word: str) -> bool:
    return word in IRREGULAR_PARTICIPLES or (len(word) > 4 and word.endswith("ed"))


# Verbs of getting in touch with someone: a call that sends them a message.
_CONTACTING = frozenset({"contact", "contacts", "contacted", "contacting", "message",
                         "messages", "messaged", "messaging", "reach", "reaches", "reached",
                         "reaching", "text", "texts", "texted", "texting", "ping", "pinged"})
_MESSAGE_WORDS = frozenset(_stem(w) for w in ("message", "email", "sms", "text", "mail",
                                               "notification", "chat"))


def _contact_call(name: str, calls) -> str | None:
    """``tool_call:send_participant_message`` for "contact them again": the one call of the
    logs that sends someone a message, when the phrase only says it gets in touch."""
    raw = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    if not set(raw) & _CONTACTING:
        return None
    sending = [c for c in calls if _stem("send") in words_of(c)
               and set(words_of(c)) & _MESSAGE_WORDS]
    return sending[0] if len(sending) == 1 else None


_AGENT_WORDS = frozenset({"agent", "agents", "assistant", "assistants", "bot", "bots",
                          "chatbot", "ai", "model"})


def _speakers_apart(changed: dict, mapping: list, atoms) -> None:
    """"Agents may talk about a competitor only if the customer raised the competitor first":
    two phrases grounded on one label the messages carry (``mentions_competitor``), said by
    two sides; the phrases' speakers tell them apart (``role:assistant & ...``,
    ``role:user & ...``), else the rule would compare the label with itself."""
    if not {"role:assistant", "role:user"} <= set(atoms):
        return
    by_label: dict[str, list[tuple[str, str]]] = {}
    for name, g in changed.items():
        if g.op != "atom" or g.name.startswith(("tool_call:", "role:")):
            continue
        first = next((w.lower() for w in re.split(r"[_\s]+", name) if w), "")
        role = ("role:assistant" if first in _AGENT_WORDS
                else "role:user" if first in _OTHER_SIDE | _PEOPLE | {"users", "customers"}
                else None)
        by_label.setdefault(g.name, []).append((name, role))
    for label, said in by_label.items():
        roles = {r for _, r in said}
        if len(said) < 2 or None in roles or len(roles) < 2:
            continue
        for name, role in said:
            changed[name] = fm.And(fm.Atom(role), fm.Atom(label))
            phrase = name.replace("_", " ")
            mapping[:] = [Grounding(phrase, changed[name].text, True) if m.phrase == phrase
                          else m for m in mapping]


def _same_step(f: Formula) -> dict[str, set[str]]:
    """For each atom of ``f``, the atoms joined with it by "and" at one step."""
    out: dict[str, set[str]] = {}
    for g in f.subformulas():
        if g.op != "and":
            continue
        names = {a.name for a in g.args if a.op == "atom"}
        for n in names:
            out.setdefault(n, set()).update(names - {n})
    return out


def _named_elsewhere(name: str, best_of: dict, siblings: set, atoms) -> set[str]:
    """The entries a phrase should not be grounded on, by what the other phrases of its rule
    name: one a phrase at another place names in full, when the words the entry leaves over
    name another entry ("the agent must log it" after "a file is deleted" is
    ``tool_call:write_log``, not ``tool_call:delete_file`` again: ``G (a -> F a)`` is almost
    never meant); and, beside a phrase joined with it at one step (one step is one event), the
    calls that fit it no better than the call that phrase names ("claims over $10,000 ...
    before payout": ``tool_call:pay_claim``, not ``tool_call:get_claim``)."""
    best = best_of.get(name)
    if best is None:
        return set()
    words = words_of(name)
    phrase = set(words)
    for sibling in siblings:
        other = best_of.get(sibling)
        if (other is None or other == best or not other.startswith("tool_call:")
                or not best.startswith("tool_call:")):
            continue
        fit = _score(words, words_of(other))
        if fit is not None and fit == _score(words, words_of(best)):
            return {a for a in atoms if a.startswith("tool_call:") and a != other
                    and _score(words, words_of(a)) == fit}
    claimed = {b for n, b in best_of.items() if b is not None and n != name
               and n not in siblings and set(words_of(b)) <= set(words_of(n))}
    if best not in claimed:
        return set()
    left = phrase - set(words_of(best))
    alternative = ground_atom(name, atoms - {best})
    if (alternative is None or alternative in claimed
            or not set(words_of(alternative)) & left or not words_of(best)):
        return set()
    # Only when the phrase does not say the entry's own action ("log it" after "a file is
    # deleted" names what the deletion acts on, not the deletion), or when its head names the
    # other entry and the entry's words come after it ("stop pushing promotions at them",
    # them being who asked to cancel); a phrase that says the entry's verb or starts with it
    # is that entry again ("a refund gone through for an order" after "another refund").
    first = {a: min((k for k, w in enumerate(words) if w in set(words_of(a))), default=99)
             for a in (best, alternative)}
    if words_of(best)[0] not in phrase or first[alternative] < first[best]:
        return {best}
    return set()


def _quoted_label(word: str, atoms) -> str | None:
    """The label (neither a call nor a role) a quoted word names by its own words ("saying
    'pause'" -> ``pause_requested``), when exactly one does."""
    labels = [a for a in atoms if not a.startswith(("tool_call:", "role:"))]
    said = set(words_of(word))
    named = [a for a in labels if said and said <= set(words_of(a))]
    return named[0] if len(named) == 1 else None


def _quoted_value(value: str, context: str, atoms, paths) -> Formula | None:
    """"reset the password of the account named "admin"": the call the words name, with the
    one string field of the logs that can hold the quoted value."""
    strings = [p for p in paths if "string" in _path_type(paths[p])]
    named = [p for p in strings if set(words_of(p.rsplit(".", 1)[-1])) & set(words_of(context))]
    fields = named if len(named) == 1 else strings
    if len(fields) != 1:
        return None
    compare = fm.Compare(("path", fields[0]), "==", ("const", value))
    event = ground_atom(context, atoms) if atoms else None
    return fm.And(fm.Atom(event), compare) if event is not None else compare


# Words that put a rule in what the agent says: "never ask the customer for their PIN",
# "card numbers never appear in assistant messages", "no promises of compensation".
_SAID_BY_AGENT = frozenset({"assistant", "bot", "chatbot", "message", "messages", "reply",
                            "replies", "say", "says", "said", "chat", "response", "responses",
                            "answer", "answers"})
_SPEECH_ACTS = frozenset({"ask", "asks", "asking", "tell", "tells", "telling", "mention",
                          "mentions", "promise", "promises", "promising", "disclose",
                          "discloses", "reveal", "reveals", "repeat", "repeats", "quote",
                          "quotes", "echo", "echoed", "statement", "statements", "advice",
                          "advise", "claim", "claims", "recommend", "recommends", "suggest",
                          "suggests", "tutor", "offer", "offers", "offered", "blame",
                          "blames", "apology", "apologies", "apologise", "apologize", "greet",
                          "greeting", "agents", "insult", "insults", "threaten", "threatens",
                          "state", "states", "stating"})


def said_by_agent(f: Formula, mapping: list[Grounding], english: str,
                  atoms) -> tuple[Formula, bool] | None:
    """``f`` with each label the agent's messages carry read on the assistant's messages only
    (``contains_pii`` -> ``role:assistant & contains_pii``), and whether the English names the
    assistant's messages outright (then that reading comes first); None when the rule is not
    about what the agent says.  A label is a vocabulary atom that is neither a call nor a role,
    grounded from a phrase that does not name the other side ("a dispute the customer raises")."""
    if "role:assistant" not in atoms:
        return None
    words = {w.lower().strip(".,;:!?\"'()") for w in english.split()}
    explicit = bool(words & _SAID_BY_AGENT)
    if not explicit and not words & _SPEECH_ACTS:
        return None
    def by_other_side(phrase: str) -> bool:
        # "a dispute the customer raises", not "ask the customer for their PIN"
        # (nor "state the price to the customer": who is spoken to)
        words = phrase.lower().split()
        return any(w in _OTHER_SIDE and (k == 0 or words[k - 1] not in _SPEECH_ACTS | {"to"})
                   for k, w in enumerate(words))

    labels = {m.atom for m in mapping if m.grounded and m.atom in atoms and ":" not in m.atom
              and not by_other_side(m.phrase)}
    if explicit:
        # "no diagnosis statements from the bot": what the logs have no label for yet, said
        # by the assistant
        labels |= {m.atom for m in mapping if not m.grounded and ":" not in m.atom
                   and not by_other_side(m.phrase)
                   and set(m.phrase.lower().split()) & (_SAID_BY_AGENT | {"agent"})}
    present = {g.name for g in f.subformulas() if g.op == "atom"}
    if "role:assistant" in present or not labels & present:
        return None
    speaking = fm.Atom("role:assistant")

    def visit(g: Formula) -> Formula:
        if g.op == "atom":
            return fm.And(speaking, g) if g.name in labels else g
        if not g.args:
            return g
        return fm.rebuild(g, tuple(visit(a) for a in g.args))

    return visit(f), explicit
