"""Every phrase of a reading with the entries of the logs it may mean, ranked by evidence.

The English reader (offline grammar or an LLM) proposes readings and says which phrase it
mapped onto which atom or field.  This module checks each mapping against what the logs showed
(``studio.logic.vocabulary.Vocabulary`` with its evidence) and answers, per phrase, a ranked
list of candidates, each with example values, how many events carry it and why it is offered:

* **Fields.**  A comparison tied to an event at its step (``tool_call:issue_refund & amount >
  500``) reads that event's own field first: of the paths named like the field, those the logs
  show on that event come first, most often carried first.  A path never seen on the event it
  is tied to (a field of another tool, or of another log) is only ever a candidate, with a
  warning that says where it was seen instead.
* **Events.**  An atom matched on words is offered with every other entry of the logs that
  shares a meaningful word with the phrase.  A match on one generic word only ("share" in
  ``share_file``, "amount") is never the first or the only answer: a better-matching entry, or
  else the phrase as a new atom ("nothing in your logs produces this: add a labeler"), comes
  first, the generic match after it with its warning.
* A phrase is *sure* only when one candidate stands out by evidence; otherwise the pages show
  the candidates as a choice, and the author's choice (``choices``) rewrites every reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from studio.logic import formula as fm
from studio.english.stems import stem, words_of
from studio.logic.formula import Formula
from studio.logic.parser import FormulaSyntaxError, parse
from studio.logic.vocabulary import MAX_EXAMPLES

# Words that name no event on their own: a match on them alone grounds nothing for sure.
GENERIC_WORDS = frozenset(w for word in (
    "get do make set go have be take give put send check share file data info detail "
    "amount update open add item note message value total text new full all any list "
    "record number type status result request process handle").split()
    for w in words_of(word))
MAX_CANDIDATES = 8
NEW_ATOM_WARNING = "nothing in your logs produces this: add a labeler"
ATOM_NAME = re.compile(r"[a-z_][a-z0-9_:.\-]*")

EVENT, FIELD = "event", "field"


@dataclass(frozen=True)
class Candidate:
    """One entry a phrase may mean: ``atom`` is its text in a formula (an atom or a data
    path), ``examples`` what the logs showed of it, ``events`` how many events carry it,
    ``why`` why it is offered, ``warning`` why it may be wrong, ``new`` when nothing in the
    logs produces it."""

    atom: str
    examples: tuple = ()
    events: int = 0
    why: str = ""
    warning: str = ""
    new: bool = False

    def as_dict(self) -> dict:
        return {"atom": self.atom, "examples": list(self.examples), "events": self.events,
                "why": self.why, "warning": self.warning, "new": self.new}


@dataclass(frozen=True)
class Phrase:
    """A phrase of the English and what it became: ``atom`` (the first candidate), whether it
    is ``grounded`` in the logs, whether the studio is ``sure`` of it, and the candidates."""

    phrase: str
    kind: str
    atom: str
    grounded: bool
    sure: bool
    candidates: tuple[Candidate, ...]
    proposed: str = ""          # what the reader proposed, before the evidence was weighed
    tied_to: str = ""           # fields: the event the comparison is tied to at its step
    chosen_by_author: bool = False

    @property
    def warning(self) -> str:
        return self.candidates[0].warning if self.candidates else ""

    def as_dict(self) -> dict:
        return {"phrase": self.phrase, "kind": self.kind, "atom": self.atom,
                "grounded": self.grounded, "sure": self.sure, "warning": self.warning,
                "proposed": self.proposed, "tied_to": self.tied_to,
                "chosen_by_author": self.chosen_by_author,
                "candidates": [c.as_dict() for c in self.candidates]}


@dataclass(frozen=True)
class Grounded:
    """The readings rewritten onto the chosen candidates (in order, duplicates dropped) and
    every phrase with its candidates; ``rejected`` names choices that could not be used."""

    readings: tuple[Formula, ...]
    phrases: tuple[Phrase, ...]
    rejected: tuple[str, ...] = ()
    origins: tuple[int, ...] = ()       # per reading: the index of the reader's reading it is
    renamed: tuple[tuple[str, str], ...] = ()   # atoms the evidence replaced, old -> new text
    paths_renamed: tuple[tuple[str, str], ...] = ()     # fields it replaced, old -> new path

    def relabel(self, label: str) -> str:
        """A label of a reader's trace (an atom, or a comparison's text) as the rewritten
        readings name it."""
        for old, new in self.renamed:
            if label == old:
                return new
        for old, new in self.paths_renamed:
            label = re.sub(r"(?<![\w.])" + re.escape(old) + r"(?![\w.])", new, label)
        return label

    @property
    def sure(self) -> bool:
        return all(p.sure for p in self.phrases)


def ground_by_evidence(readings: Sequence[Formula], mapping: Iterable, vocabulary,
                       choices: Mapping[str, str] | None = None) -> Grounded:
    """``readings`` (the reader's formulas, best first) grounded by ``vocabulary``'s evidence;
    ``mapping`` holds the reader's phrases (objects or dicts with ``phrase``, ``atom`` and
    ``grounded``); ``choices`` maps a phrase to the candidate the author picked."""
    choices = dict(choices or {})
    rejected: list[str] = []
    phrases: list[Phrase] = []
    atom_swap: dict[Formula, Formula] = {}
    mapped_paths: dict[str, str] = {}
    for m in mapping:
        phrase, atom, grounded = _fields(m)
        if _is_path(atom):
            mapped_paths.setdefault(atom, phrase)
            continue
        if not (_single_atom(atom) or _compound(atom)):
            continue    # a comparison or a formula the reader built on purpose: kept
        found = _event_phrase(phrase, atom, grounded, vocabulary)
        found = _apply_choice(found, choices, rejected)
        if any(p.phrase == found.phrase for p in phrases):
            continue
        phrases.append(found)
        if found.atom != atom:
            atom_swap[_parsed(atom)] = _parsed(found.atom)
    # values: a text compared with a field that never showed it
    for reading in readings:
        for node in _swap_atoms(reading, atom_swap).subformulas():
            if node.op != "cmp" or node in atom_swap:
                continue
            found = _value_phrase(node, vocabulary)
            if found is None or any(p.phrase == found.phrase for p in phrases):
                continue
            found = _apply_choice(found, choices, rejected)
            phrases.append(found)
            if found.atom != node.text:
                atom_swap[node] = _parsed(found.atom)
    # fields: each comparison's path with the event it is tied to
    known = frozenset(getattr(vocabulary, "atoms", ()) or ())
    path_swap: dict[str, str] = {}
    occurrences: dict[str, tuple[str, object]] = {}
    for reading in readings:
        for path, tied, value in _compared_paths(_swap_atoms(reading, atom_swap), known):
            # one phrase, one field in every reading: tied to the event some reading ties it
            # to (a call before a label or a role), the comparison's value kept for its type
            held = occurrences.get(path)
            if held is None or _tie_rank(tied) > _tie_rank(held[0]):
                occurrences[path] = (tied, value if held is None else held[1])
    for path, (tied, value) in occurrences.items():
        name = mapped_paths.get(path) or " ".join(_field_words(path)) or path
        found = _field_phrase(name, path, tied, value, vocabulary)
        found = _apply_choice(found, choices, rejected)
        phrases.append(found)
        if found.atom != path:
            path_swap[path] = found.atom
    for phrase in choices:
        if not any(p.phrase == phrase for p in phrases):
            rejected.append(f"no phrase {phrase!r} in this reading")
    rewritten: list[Formula] = []
    origins: list[int] = []
    for index, reading in enumerate(readings):
        new = _swap_paths(_swap_atoms(reading, atom_swap), path_swap)
        if new not in rewritten:
            rewritten.append(new)
            origins.append(index)
    return Grounded(tuple(rewritten), tuple(phrases), tuple(rejected), tuple(origins),
                    tuple((old.text, new.text) for old, new in atom_swap.items()),
                    tuple(path_swap.items()))


# ---------------------------------------------------------------------------------------------
# Events

def _specific(phrase: str) -> frozenset:
    """Generic words the phrase says by a specific word ("transfer" is a sending, "wire" too):
    those mean as much as any other word."""
    out = set()
    for raw in re.split(r"[^A-Za-z0-9]+", phrase):
        if not raw:
            continue
        canonical = words_of(raw)
        if len(canonical) == 1 and canonical[0] in GENERIC_WORDS and stem(raw) != canonical[0]:
            out.add(canonical[0])
    return frozenset(out)


def _entry_words(entry: str) -> set[str]:
    """The words of an entry: an atom's, or the union of a compound's atoms'."""
    if _single_atom(entry):
        return set(words_of(entry))
    return {w for g in _parsed(entry).subformulas() if g.op == "atom" for w in words_of(g.name)}


def common_words(known: set) -> frozenset:
    """Words that several tools and labels of this workspace share ("customer" in
    ``customer_confirmed`` and ``customer_vulnerable``): one of them alone tells no entry from
    another."""
    seen: dict[str, int] = {}
    for entry in known:
        if not entry.startswith("role:"):
            for w in set(words_of(entry)):
                seen[w] = seen.get(w, 0) + 1
    return frozenset(w for w, n in seen.items() if n >= 2)


def _event_phrase(phrase: str, atom: str, grounded: bool, vocabulary) -> Phrase:
    words = set(words_of(phrase))
    specific = _specific(phrase)
    known = set(getattr(vocabulary, "atoms", ()) or ())
    common = common_words(known)
    entries = sorted(known | ({atom} if grounded and _compound(atom) else set()))
    scored: list[tuple[tuple, str, list]] = []
    for entry in entries:
        if entry.startswith("role:"):
            continue
        shared = sorted(words & _entry_words(entry))
        if shared:
            scored.append((_strength(shared, entry, specific, words, common), entry, shared))
    scored.sort(key=lambda s: (s[0], _events(vocabulary, s[1])), reverse=True)
    by_entry = {entry: (score, shared) for score, entry, shared in scored}
    values = value_candidates(phrase, vocabulary)
    invented = Candidate(_new_name(phrase, atom, grounded, known), why=(
        f"“{phrase}” as a new fact of its own"), warning=NEW_ATOM_WARNING, new=True)
    original_score, original_shared = by_entry.get(atom, ((0, 0, 0.0), []))
    strong = [(s, e, sh) for s, e, sh in scored if s[0] > 0]
    produced = atom in known or (_compound(atom) and _atoms_of(atom) <= known)
    proposed_is_strong = grounded and produced and original_score[0] > 0
    out: list[Candidate] = []
    if proposed_is_strong:
        out.append(_event_candidate(atom, original_shared, vocabulary, specific, words, common))
        rivals = [e for s, e, _ in strong if e != atom and s[:2] >= original_score[:2]
                  and not (_compound(atom) and e in _atoms_of(atom))]
        sure = not rivals
    elif grounded and produced and atom not in by_entry:
        # matched by what the reader knows and words alone do not show (initials, a
        # synonym): kept first, not sure
        out.append(_event_candidate(atom, [], vocabulary, specific, words, common))
        sure = False
    elif grounded and produced:
        # the reader's match shares only generic words with the phrase
        if strong:
            out.append(_event_candidate(strong[0][1], strong[0][2], vocabulary, specific,
                                        words, common))
        out.append(invented)
        sure = False
    elif atom in known:
        out.append(_event_candidate(atom, original_shared, vocabulary, specific, words, common))
        sure = bool(original_score[0] > 0) and not [e for _, e, _ in strong if e != atom]
    elif values and not strong:
        # no entry is named like the phrase, but the logs show one of its words as a value
        out.append(values[0])
        sure = False
    else:
        out.append(Candidate(atom, why=f"“{phrase}” as a new fact of its own",
                             warning=NEW_ATOM_WARNING, new=True))
        sure = not strong and not values
    for value in values:
        if len(out) < MAX_CANDIDATES and all(c.atom != value.atom for c in out):
            out.append(value)
    for _, entry, shared in scored:
        if len(out) >= MAX_CANDIDATES:
            break
        if all(c.atom != entry for c in out):
            out.append(_event_candidate(entry, shared, vocabulary, specific, words, common))
    if all(not c.new for c in out) and len(out) < MAX_CANDIDATES + 1:
        out.append(invented)
    refined = own_values(phrase, out[0], vocabulary) if not out[0].new else []
    outcome = _outcomes(phrase, out[0], vocabulary)
    if outcome:
        # "successfully verified": what the call's answer said, not the call
        out = outcome + [c for c in out if all(c.atom != o.atom for o in outcome)]
        out = out[:MAX_CANDIDATES + 1]
        sure = False
    elif refined:
        # "passcodes delivered by email": the call, with the value its own argument shows
        out = refined + [c for c in out if all(c.atom != r.atom for r in refined)]
        out = out[:MAX_CANDIDATES + 1]
        sure = False
    first = out[0]
    # a new atom is never sure: nothing in the logs says what it is
    return Phrase(phrase, EVENT, first.atom, not first.new, sure and not first.new, tuple(out),
                  proposed=atom)


def own_values(phrase: str, chosen: Candidate, vocabulary) -> list[Candidate]:
    """The chosen call narrowed by a value its own events show that the phrase names and the
    call's name does not ("pushes to main" -> ``tool_call:git_push & output.args.branch ==
    "main"``): the call's arguments first, then the event's other text fields."""
    call = chosen.atom
    if not (call.startswith("tool_call:") and _single_atom(call)
            and getattr(vocabulary, "evidence", ())):
        return []
    text = phrase.lower()
    name_words = set(words_of(call))
    found = []
    for path in sorted(getattr(vocabulary, "paths", {}) or {},
                       key=lambda q: (not q.startswith("output."), q)):
        if "string" not in vocabulary.paths[path] or not vocabulary.carriers_of(path).get(call):
            continue
        for value in vocabulary.examples_of(path, call):
            if not isinstance(value, str) or len(value) < 2 or value.lower() in _NOT_VALUES:
                continue
            if set(words_of(value)) <= name_words:
                continue
            if re.search(r"(?<![a-z0-9])" + re.escape(value.lower()) + r"(?![a-z0-9])", text):
                formula = fm.And(fm.Atom(call), fm.Compare(("path", path), "==", ("const", value)))
                found.append(Candidate(
                    formula.text, tuple(vocabulary.examples_of(path, call)),
                    vocabulary.carriers_of(path)[call],
                    f"{_event_name(call)} whose {path.rsplit('.', 1)[-1]} is “{value}”, a value "
                    f"its own events show",
                    "" if path.startswith("output.") else
                    f"{path} is a field of the whole event, not of the call's arguments"))
    return found[:3]


_SUCCESS = frozenset("successfully successful succeeded succeeds passed passes pass verified "
                     "approved confirmed captured cleared valid".split())
_FAILURE = frozenset("failed fails failure declined rejected denied invalid unsuccessful "
                     "unverified".split())


def _outcomes(phrase: str, chosen: Candidate, vocabulary) -> list[Candidate]:
    """When the phrase says how a call turned out ("identity successfully verified", "the card
    is declined"), the fields of the tools' answers that say so: a true/false field named like
    the call or the outcome (``output.result.verified == true``), or a text field that shows
    the outcome word as a value (``output.result.status == "declined"``)."""
    if not getattr(vocabulary, "evidence", ()):
        return []
    said = {w.lower() for w in re.findall(r"[A-Za-z]+", phrase)}
    negated = bool(said & {"not", "never", "cannot", "unable"})
    good, bad = said & _SUCCESS, said & _FAILURE
    if not (good or bad):
        return []
    wanted = bool(good) and not bad and not negated
    words = set(words_of(chosen.atom)) | set(words_of(" ".join(good | bad)))
    out = []
    for path in sorted(getattr(vocabulary, "paths", {}) or {}):
        types = vocabulary.paths[path]
        if not vocabulary.carriers_of(path).get("role:tool"):
            continue
        field_words = set(_field_words(path))
        if "boolean" in types and field_words & words:
            formula = fm.Compare(("path", path), "==", ("const", wanted))
            out.append(Candidate(formula.text, tuple(vocabulary.examples_of(path)),
                                 vocabulary.events_of(path),
                                 f"the tools' answers say {path.rsplit('.', 1)[-1]} is "
                                 f"{str(wanted).lower()}: the outcome the phrase names",
                                 "an answer of a tool, not its call: check it is the call you "
                                 "mean"))
        elif "string" in types:
            for value in vocabulary.examples_of(path):
                if isinstance(value, str) and value.lower() in (good | bad):
                    formula = fm.Compare(("path", path), "==", ("const", value))
                    out.append(Candidate(formula.text, tuple(vocabulary.examples_of(path)),
                                         vocabulary.events_of(path),
                                         f"“{value}” is what the tools' answers say in "
                                         f"{path}", "an answer of a tool, not its call: check "
                                                    "it is the call you mean"))
    return out[:3]


def value_candidates(phrase: str, vocabulary) -> list[Candidate]:
    """Text fields whose example values include a word of the phrase ("EU customers" ->
    ``data.customer.region == "EU"``), the most often carried first."""
    if not getattr(vocabulary, "evidence", ()):
        return []
    said = {w.lower() for w in re.split(r"[^A-Za-z0-9\-]+", phrase) if len(w) > 1}
    said -= _NOT_VALUES
    out = []
    for path in sorted(getattr(vocabulary, "paths", {}) or {}):
        if "string" not in vocabulary.paths[path] or path.startswith("input"):
            continue
        for value in vocabulary.examples_of(path):
            if isinstance(value, str) and value.lower() in said:
                events = vocabulary.events_of(path)
                text = fm.Compare(("path", path), "==", ("const", value)).text
                carriers = vocabulary.carriers_of(path)
                where = ", ".join(_event_name(c) for c in list(carriers)[:2] if c)
                out.append(Candidate(text, tuple(vocabulary.examples_of(path)), events,
                                     f"“{value}” is a value of {path}"
                                     + (f" (on {where})" if where else ""),
                                     "a value your logs show, not a fact of its own: check "
                                     "the field is the one you mean"))
    out.sort(key=lambda c: -c.events)
    return out


# Words too common to be read as a field's value.
_NOT_VALUES = frozenset("a an the to of in on at by for from with and or not no never any all "
                        "must may should can is are be been was were it its this that their "
                        "they them he she we you our your agent assistant customer user "
                        "member members customers".split())


def _meaningful(shared, specific: frozenset, phrase_words: set, common: frozenset) -> list:
    """The shared words that tell this entry apart: not generic (unless the phrase says them by
    a specific word), and, when the phrase says much more, not a word several entries share."""
    meaningful = [w for w in shared if w not in GENERIC_WORDS or w in specific]
    said = {w for w in phrase_words if w not in GENERIC_WORDS}
    if len(meaningful) == 1 and meaningful[0] in common and len(said) >= 3:
        return []
    return meaningful


def _strength(shared: list[str], entry: str, specific: frozenset = frozenset(),
              phrase_words: set = frozenset(), common: frozenset = frozenset()) -> tuple:
    meaningful = _meaningful(shared, specific, phrase_words, common)
    entry_words = _entry_words(entry) or {entry}
    return (len(meaningful), len(shared), round(len(shared) / len(entry_words), 3))


def _event_candidate(entry: str, shared: list[str], vocabulary,
                     specific: frozenset = frozenset(), phrase_words: set = frozenset(),
                     common: frozenset = frozenset()) -> Candidate:
    events = _events(vocabulary, entry)
    meaningful = _meaningful(shared, specific, phrase_words, common)
    if not shared:
        why = "the reader's choice"
    else:
        why = f"shares {_quoted(shared)} with the phrase"
    warning = ""
    if shared and not meaningful:
        kind = "generic" if all(w in GENERIC_WORDS for w in shared) else "common"
        warning = (f"matches only the {kind} word{'s' if len(shared) > 1 else ''} "
                   f"{_quoted(shared)}"
                   + (", which several entries of your logs share" if kind == "common" else "")
                   + f": check that {_event_name(entry)} is what you mean")
    if getattr(vocabulary, "evidence", ()) and not events and not warning:
        warning = "declared, but no stored event shows it yet"
    return Candidate(entry, tuple(_event_examples(entry, vocabulary)), events, why, warning)


def _event_examples(entry: str, vocabulary) -> list[str]:
    """What the logs showed with an event: a tool's own arguments with example values, or the
    kinds of event a label was seen on."""
    if not getattr(vocabulary, "evidence", ()):
        return []
    out = []
    if entry.startswith("tool_call:"):
        for path in sorted(getattr(vocabulary, "paths", {}) or {}):
            if not path.startswith("output.") or path.count(".") < 1:
                continue
            if entry not in vocabulary.carriers_of(path):
                continue
            values = vocabulary.examples_of(path, entry, limit=3)
            if values:
                out.append(f"{path.rsplit('.', 1)[-1]}: {_values(values)}")
            if len(out) >= 3:
                break
        return out
    carriers = vocabulary.carriers_of(entry)
    for carrier, count in sorted(carriers.items(), key=lambda kv: -kv[1])[:3]:
        out.append(f"on {_event_name(carrier) if carrier else 'other events'} ({count})")
    return out


def _events(vocabulary, entry: str) -> int:
    counter = getattr(vocabulary, "events_of", None)
    return counter(entry) if counter is not None else 0


def _new_name(phrase: str, atom: str, grounded: bool, known: set) -> str:
    if not grounded and atom not in known:
        return atom
    name = re.sub(r"[^a-z0-9]+", "_", phrase.lower()).strip("_") or "new_fact"
    if not re.match(r"[a-z_]", name):
        name = "x_" + name
    return name if name not in known else name + "_new"


# ---------------------------------------------------------------------------------------------
# Values

VALUE = "value"


def _value_phrase(node: Formula, vocabulary) -> Phrase | None:
    """A comparison of a text field with a value the field never showed, when the logs show
    every value it took (fewer than ``MAX_EXAMPLES`` distinct ones): the same value spelled
    otherwise on that field, or another field that shows the value's words."""
    c = node.payload
    if c.op not in ("==", "!=") or c.left[0] != "path" or c.right[0] != "const":
        return None
    path, value = c.left[1], c.right[1]
    if not isinstance(value, str) or not getattr(vocabulary, "evidence", ()):
        return None
    seen = [v for v in vocabulary.examples_of(path) if isinstance(v, str)]
    if value in seen or not seen or len(vocabulary.examples_of(path)) >= MAX_EXAMPLES:
        return None
    phrase = f"“{value}”"
    out: list[Candidate] = []
    same = [v for v in seen if v.lower() == value.lower()]
    for v in same:
        text = fm.Compare(("path", path), c.op, ("const", v)).text
        out.append(Candidate(text, tuple(seen), vocabulary.events_of(path),
                             f"the value as {path} spells it"))
    for candidate in value_candidates(value, vocabulary):
        if c.op == "!=":
            continue
        if all(o.atom != candidate.atom for o in out):
            out.append(candidate)
    warning = (f"{path} never shows “{value}”: the values it shows are "
               f"{_values(seen)}")
    out.append(Candidate(node.text, tuple(seen), 0, "the value as the rule says it", warning))
    sure = bool(same) and len(out) == 2
    first = out[0]
    return Phrase(phrase, VALUE, first.atom, first.atom != node.text, sure, tuple(out),
                  proposed=node.text)


# ---------------------------------------------------------------------------------------------
# Fields

_UNIT_WORDS = frozenset(w for word in ("usd eur gbp pct percent cents dollars euros kg mg ms "
                                        "sec secs seconds minutes hours days").split()
                         for w in words_of(word))


def _field_words(path: str) -> list[str]:
    last = path.rsplit(".", 1)[-1]
    words = words_of(last)
    if len(words) > 1 and words[-1] in _UNIT_WORDS:
        words = words[:-1]
    return words


def _field_phrase(name: str, path: str, tied: str, value, vocabulary) -> Phrase:
    paths = dict(getattr(vocabulary, "paths", {}) or {})
    wanted = _json_type(value)
    mine = set(_field_words(path))
    options = []
    for candidate in sorted(paths):
        if wanted and not _type_fits(wanted, paths[candidate]):
            continue
        theirs = set(_field_words(candidate))
        if candidate == path or (mine and theirs and (mine <= theirs or theirs <= mine)):
            options.append(candidate)
    if path not in options:
        options.insert(0, path)
    has_evidence = bool(getattr(vocabulary, "evidence", ()))

    def rank(candidate: str) -> tuple:
        carriers = vocabulary.carriers_of(candidate) if has_evidence else {}
        on_tied = carriers.get(tied, 0) if tied else 0
        own = tied and candidate.startswith("output.") and on_tied
        return (on_tied > 0, bool(own), on_tied, sum(carriers.values()),
                candidate == path, -len(candidate))

    options.sort(key=rank, reverse=True)
    out = [_field_candidate(c, path, tied, vocabulary, has_evidence, paths) for c in options]
    out = out[:MAX_CANDIDATES]
    first = out[0]
    if has_evidence and tied:
        on_tied = [c for c in options if vocabulary.carriers_of(c).get(tied)]
        sure = len(on_tied) == 1 and options[0] == on_tied[0]
    else:
        sure = len([c for c in options if c in paths]) == 1 and options[0] in paths
    grounded = first.atom in paths
    return Phrase(name, FIELD, first.atom, grounded, sure, tuple(out), proposed=path,
                  tied_to=tied)


def _field_candidate(candidate: str, path: str, tied: str, vocabulary, has_evidence: bool,
                     paths: Mapping) -> Candidate:
    if candidate not in paths and (vocabulary.path_types(candidate)
                                   if hasattr(vocabulary, "path_types") else None) is None:
        return Candidate(candidate, why="the field as the rule names it", new=True,
                         warning="no stored event has this field: the comparison is false "
                                 "at every step")
    if not has_evidence:
        return Candidate(candidate, why="a field named like the rule's",
                         warning="" if not tied else
                         "the logs were stored before the studio kept where each field is "
                         "seen: rebuild the vocabulary to know")
    carriers = vocabulary.carriers_of(candidate)
    events = sum(carriers.values())
    if tied and carriers.get(tied):
        examples = vocabulary.examples_of(candidate, tied)
        why = (f"{_event_name(tied)}'s own {candidate.rsplit('.', 1)[-1]}: "
               f"{carriers[tied]} of its events carry it")
        return Candidate(candidate, tuple(examples), carriers[tied], why)
    examples = vocabulary.examples_of(candidate)
    where = ", ".join(f"{_event_name(c) if c else 'other events'} ({n})"
                      for c, n in sorted(carriers.items(), key=lambda kv: -kv[1])[:3])
    if tied:
        warning = (f"never seen on {_event_name(tied)}: a field of {where or 'no event'}")
        why = "a field named like the rule's, on other events"
    else:
        warning = "" if len(carriers) <= 1 else f"seen on several kinds of event: {where}"
        why = f"a field named like the rule's, seen on {where or 'no event'}"
    return Candidate(candidate, tuple(examples), events, why, warning)


def _json_type(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def _type_fits(wanted: str, types) -> bool:
    types = {str(t).lower() for t in (types or ())}
    return not types or wanted in types or (wanted == "number" and bool({"integer", "float"}
                                                                         & types))


def _compared_paths(f: Formula, known: frozenset,
                    tied: str = "") -> list[tuple[str, str, object]]:
    """Every ``(path, tied event, compared constant)`` of ``f``'s comparisons; the tied event is
    the tool call (else the label or role) conjoined with the comparison at its step."""
    out: list = []
    if f.op == "cmp":
        c = f.payload
        for side, other in ((c.left, c.right), (c.right, c.left)):
            if side[0] in ("path", "prev"):
                out.append((side[1], tied, other[1] if other[0] == "const" else None))
        return out
    if f.op == "and":
        tied_here = _tied_event(f, known) or tied
        for a in f.args:
            out.extend(_compared_paths(a, known, tied_here if a.op == "cmp" else ""))
        return out
    for a in f.args:
        out.extend(_compared_paths(a, known, ""))
    return out


def _tied_event(conjunction: Formula, known: frozenset) -> str:
    """The event a conjunction's comparisons are tied to: of the atoms beside them that the
    logs produce, the tool call, else a label, else the role."""
    atoms = [a.name for a in conjunction.args if a.op == "atom" and a.name in known]
    for prefix in ("tool_call:",):
        for name in atoms:
            if name.startswith(prefix):
                return name
    labels = [n for n in atoms if not n.startswith(("role:", "stop_reason:"))]
    if labels:
        return labels[0]
    return next((n for n in atoms if n.startswith("role:")), "")


# ---------------------------------------------------------------------------------------------
# Rewriting

def _swap_atoms(f: Formula, swap: Mapping[Formula, Formula]) -> Formula:
    """``f`` with every node that is a key of ``swap`` (an atom, a comparison, an and/or of
    atoms the reader built) replaced by its value."""
    if not swap:
        return f
    found = swap.get(f)
    if found is not None:
        return found
    if f.op == "atom":
        return f
    if not f.args:
        return f
    return fm.rebuild(f, tuple(_swap_atoms(a, swap) for a in f.args))


def _swap_paths(f: Formula, swap: Mapping[str, str]) -> Formula:
    if not swap:
        return f
    if f.op == "cmp":
        c = f.payload
        left, right = c.left, c.right
        if left[0] in ("path", "prev") and left[1] in swap:
            left = (left[0], swap[left[1]])
        if right[0] in ("path", "prev") and right[1] in swap:
            right = (right[0], swap[right[1]])
        return fm.Compare(left, c.op, right)
    if not f.args:
        return f
    return fm.rebuild(f, tuple(_swap_paths(a, swap) for a in f.args))


def _tie_rank(tied: str) -> int:
    if not tied:
        return 0
    return 3 if tied.startswith("tool_call:") else 1 if tied.startswith("role:") else 2


def _apply_choice(found: Phrase, choices: dict, rejected: list) -> Phrase:
    wanted = choices.get(found.phrase)
    if wanted is None:
        return found
    wanted = wanted.strip()
    if wanted == found.atom:
        # the page posts every picker: keeping the first candidate is no choice of its own
        return found
    chosen = next((c for c in found.candidates if c.atom == wanted), None)
    if chosen is None:
        valid = _is_path(wanted) if found.kind == FIELD else _event_formula(wanted)
        if not valid:
            rejected.append(f"{found.phrase!r}: {wanted!r} is not "
                            f"{'a field path' if found.kind == FIELD else 'an atom name'}")
            return found
        chosen = Candidate(wanted, why="your choice", new=True,
                           warning=NEW_ATOM_WARNING if found.kind == EVENT else "")
    rest = tuple(c for c in found.candidates if c.atom != wanted)
    return Phrase(found.phrase, found.kind, chosen.atom, not chosen.new, True,
                  (chosen, *rest), found.proposed, found.tied_to, chosen_by_author=True)


# ---------------------------------------------------------------------------------------------
# Small helpers

def _fields(m) -> tuple[str, str, bool]:
    if isinstance(m, Mapping):
        return m["phrase"], m["atom"], bool(m.get("grounded"))
    return m.phrase, m.atom, bool(m.grounded)


def _single_atom(text: str) -> bool:
    return bool(ATOM_NAME.fullmatch(text)) and not _is_path(text)


def _compound(text: str) -> bool:
    """An and/or of atoms (the reader's "any of these calls")."""
    if _single_atom(text):
        return False
    try:
        f = parse(text)
    except FormulaSyntaxError:
        return False
    return all(g.op in ("atom", "and", "or") for g in f.subformulas())


def _atoms_of(text: str) -> set[str]:
    return {g.name for g in _parsed(text).subformulas() if g.op == "atom"}


def _event_formula(text: str) -> bool:
    """An atom name, or a formula of one step (atoms and comparisons, no temporal operator)."""
    if _single_atom(text):
        return True
    try:
        f = parse(text)
    except FormulaSyntaxError:
        return False
    return all(g.op in ("atom", "cmp", "and", "or", "not", "true", "false")
               for g in f.subformulas())


def _is_path(text: str) -> bool:
    return bool(re.fullmatch(r"(input|output|data)(\.[A-Za-z0-9_\-]+)+", text))


def _parsed(text: str) -> Formula:
    try:
        return parse(text)
    except FormulaSyntaxError:
        return fm.Atom(text)


def _event_name(atom: str) -> str:
    for prefix, words in (("tool_call:", ""), ("role:", "")):
        if atom.startswith(prefix):
            name = atom[len(prefix):]
            return name if prefix == "tool_call:" else {
                "user": "user messages", "assistant": "assistant messages",
                "tool": "tool results"}.get(name, f"{name} messages")
    return atom


def _quoted(words: list[str]) -> str:
    return ", ".join(f"“{w}”" for w in words)


def _values(values: list) -> str:
    return ", ".join(str(v) if not isinstance(v, str) else f"“{v}”" for v in values)

