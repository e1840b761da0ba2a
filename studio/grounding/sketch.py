"""Readings sketched from the events a sentence names, for English the grammar cannot read.

When the reader refuses a sentence ("Store credit: $300 max per credit.", "Max three identity
checks per conversation."), the author still named things the logs contain: a call, a label, a
value, a limit.  ``sketch`` finds them by evidence (the words of the workspace's own tools and
labels, the values their fields show, the numbers with the word that makes them a limit) and
builds the few rules of the common shapes that use them: a ban, a limit on a number, a count, an
order of two events, a response within some steps.  Every sketched reading says that it was
sketched; none is ever sure: the author picks one, or builds the rule from its parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from studio.english.base import Formalisation, Reading
from studio.english.ground_atoms import Grounding
from studio.english.stems import words_of
from studio.logic import formula as fm
from studio.logic.formula import Formula
from studio.logic.parser import parse
from studio.logic.wording import explain

from .candidates import GENERIC_WORDS, common_words, own_values, value_candidates

SKETCHED = ("sketched from the events and limits the sentence names (the grammar could not "
            "read it): check it")
MAX_READINGS = 4

_NUMBER = r"[$£€]?\s?(\d[\d,]*(?:\.\d+)?)\s?(%|k\b)?"
# words that make a number a limit: (regex, comparison that breaks the rule)
_LIMITS = (
    (r"(?:over|above|more than|exceed(?:s|ing)?|greater than|higher than|in excess of)", ">"),
    (r"(?:max(?:imum)?|at most|up to|capped at|limited to|no more than|not more than|"
     r"cannot exceed|must not exceed|ceiling of)", ">"),
    (r"(?:under|below|less than|lower than|fewer than)", "<"),
    (r"(?:at least|minimum(?: of)?|min\.?|no less than|not less than)", "<"),
)
_AFTER_LIMIT = (r"max(?:imum)?", ">")
_NEGATION = re.compile(r"\b(never|not|no|cannot|can't|mustn't|prohibited|forbidden|"
                       r"isn't|aren't|won't|nobody|none)\b", re.IGNORECASE)
_ORDER_AFTER = re.compile(r"\b(only after|only once|after|once|unless|until|without|before|"
                          r"prior to|first)\b", re.IGNORECASE)
_WITHIN = re.compile(r"\bwithin\s+(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
                     r"(?:steps?|turns?|messages?|events?)", re.IGNORECASE)
_COUNT = re.compile(r"\b(?:max(?:imum)?|at most|no more than|not more than|up to|only)\s+"
                    r"(one|two|three|four|five|\d+)\b(?!\s?[%$£€])", re.IGNORECASE)
_ATOM = re.compile(r"[a-z_][a-z0-9_:.\-]*")
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}


@dataclass(frozen=True)
class Mention:
    atom: str               # the entry (an atom, or a call with its own value)
    at: int                 # where in the sentence its first word stands
    phrase: str


def sketch(english: str, vocabulary) -> tuple[list[tuple[Formula, str]], list[Grounding]]:
    """Readings (formula, why) built from what ``english`` names in ``vocabulary``, best
    first, and the phrases they were built from (for the candidates)."""
    mentions = _mentions(english, vocabulary)
    if not mentions:
        return [], []
    events = [fm.Atom(m.atom) if _ATOM.fullmatch(m.atom) else _parse(m.atom)
              for m in mentions]
    first = events[0]
    negated = bool(_NEGATION.search(english))
    out: list[Formula] = []
    limit = _limit(english, mentions[0], vocabulary)
    if limit is not None:
        out.append(fm.G(fm.Not(fm.And(first, limit))))
    count = _count(english)
    if count is not None:
        out.append(_at_most(first, count))
    within = _WITHIN.search(english)
    if within and len(events) >= 2:
        n = _WORD_NUMBERS.get(within.group(1).lower()) or int(within.group(1))
        out.append(fm.G(fm.Implies(events[0], fm.FBounded(1, n, events[1]))))
    if len(events) >= 2 and _ORDER_AFTER.search(english):
        later, earlier = _order(english, mentions, events)
        out.append(fm.G(fm.Implies(later, fm.O(earlier))))
        out.append(fm.G(fm.Implies(later, fm.Y(fm.O(earlier)))))
    if negated or not out:
        out.append(fm.G(fm.Not(first)))
    if len(events) >= 2 and not within:
        out.append(fm.G(fm.Implies(events[0], fm.F(events[1]))))
    unique: list[Formula] = []
    for f in out:
        if f not in unique:
            unique.append(f)
    mapping = [Grounding(m.phrase, m.atom, True) for m in mentions]
    return [(f, SKETCHED) for f in unique[:MAX_READINGS]], mapping


def _mentions(english: str, vocabulary) -> list[Mention]:
    """The calls and labels the sentence names by their meaningful words, in the order it
    names them; a call narrowed by a value its own events show when the sentence names it."""
    known = sorted(a for a in (getattr(vocabulary, "atoms", ()) or ())
                   if not a.startswith(("role:", "stop_reason:")))
    if not known:
        return []
    common = common_words(set(known))
    tokens = [(m.start(), m.group(0)) for m in re.finditer(r"[A-Za-z][A-Za-z\-']*", english)]
    stems = [(at, words_of(word)) for at, word in tokens]
    found: list[Mention] = []
    for atom in known:
        entry = set(words_of(atom))
        hits = [(at, w) for at, ws in stems for w in ws if w in entry]
        meaningful = {w for _, w in hits if w not in GENERIC_WORDS}
        if not meaningful or (len(meaningful) == 1 and meaningful <= common
                              and len(entry) > 1 and len({w for _, w in hits}) < 2):
            continue
        at = min(at for at, w in hits if w in meaningful)
        score = len({w for _, w in hits}) / max(len(entry), 1)
        found.append((Mention(atom, at, _phrase_at(english, at)), score))
    # the best entry for each place of the sentence
    best: dict[int, tuple[Mention, float]] = {}
    for mention, score in found:
        held = best.get(mention.at)
        if held is None or score > held[1] or (score == held[1]
                                               and _events(vocabulary, mention.atom)
                                               > _events(vocabulary, held[0].atom)):
            best[mention.at] = (mention, score)
    ordered = [m for m, _ in sorted(best.values(), key=lambda x: x[0].at)]
    seen, out = set(), []
    for m in ordered:
        if m.atom in seen:
            continue
        seen.add(m.atom)
        narrowed = own_values(english, _Chosen(m.atom), vocabulary)
        out.append(Mention(narrowed[0].atom, m.at, m.phrase) if narrowed else m)
    if not out:
        values = value_candidates(english, vocabulary)
        if values:
            out.append(Mention(values[0].atom, 0, english[:40]))
    return out[:3]


@dataclass(frozen=True)
class _Chosen:
    atom: str
    new: bool = False


def _phrase_at(english: str, at: int) -> str:
    words = re.findall(r"[A-Za-z][A-Za-z\-']*", english[at:])[:3]
    return " ".join(words).lower()


def _events(vocabulary, atom: str) -> int:
    counter = getattr(vocabulary, "events_of", None)
    return counter(atom) if counter is not None else 0


def _limit(english: str, mention: Mention, vocabulary) -> Formula | None:
    """``field op N`` for a number the sentence makes a limit ("over $500", "$300 max"), on
    a number field the named event carries (its own arguments first)."""
    text = english.lower()
    op = number = None
    for words, breaks in _LIMITS:
        m = re.search(words + r"\s+(?:of\s+|a\s+)?" + _NUMBER, text)
        if m:
            op, number = breaks, m.group(1)
            break
    if number is None:
        m = re.search(_NUMBER + r"\s+" + _AFTER_LIMIT[0], text)
        if m:
            op, number = _AFTER_LIMIT[1], m.group(1)
    if number is None:
        return None
    value = float(number.replace(",", ""))
    value = int(value) if value.is_integer() else value
    field = _number_field(mention.atom, vocabulary)
    if field is None:
        return None
    return fm.Compare(("path", field), op, ("const", value))


def _number_field(atom: str, vocabulary) -> str | None:
    call = atom.split(" & ", 1)[0]
    paths = getattr(vocabulary, "paths", {}) or {}
    numbers = [p for p in paths if "number" in paths[p]]
    if not numbers:
        return None
    carriers = getattr(vocabulary, "carriers_of", None)

    def rank(path: str) -> tuple:
        on = carriers(path).get(call, 0) if carriers is not None else 0
        named = any(w in ("amount", "total", "limit", "price", "valu", "sum", "fee")
                    for w in words_of(path.rsplit(".", 1)[-1]))
        return (on > 0, path.startswith("output.args."), named, on)

    best = max(numbers, key=rank)
    return best if rank(best)[0] or len(numbers) == 1 else None


def _count(english: str) -> int | None:
    m = _COUNT.search(english)
    if not m:
        return None
    word = m.group(1).lower()
    return _WORD_NUMBERS.get(word) or int(word)


def _at_most(event: Formula, n: int) -> Formula:
    """At most ``n`` steps with ``event`` in the session."""
    body = fm.G(fm.Not(event))
    for _ in range(n):
        body = fm.G(fm.Implies(event, fm.WX(body)))
    return body


def _order(english: str, mentions: list[Mention], events: list[Formula]):
    """(the later event, the one that must come before it) from the order words."""
    text = english.lower()
    first_at, second_at = mentions[0].at, mentions[1].at
    cue = _ORDER_AFTER.search(text)
    word = cue.group(1).lower() if cue else ""
    if word in ("before", "prior to", "first") and cue.start() < second_at:
        if cue.start() < first_at:
            # "before changing the address, verify identity": the first named comes later
            return events[0], events[1]
        # "verify identity before changing the address": the second named comes later
        return events[1], events[0]
    # "only after", "once", "until", "unless", "without": the first named needs the second
    return events[0], events[1]


def _parse(text: str) -> Formula:
    return parse(text)


def with_sketch(result: Formalisation, english: str, vocabulary) -> Formalisation:
    """``result`` as it is when the reader read the sentence; otherwise the readings sketched
    from what it names (none: ``result`` unchanged), the reader's reason kept in the message."""
    if result.ok:
        return result
    found, mapping = sketch(english, vocabulary)
    if not found:
        return result
    readings = tuple(Reading(f, f.text, explain(f), why) for f, why in found)
    reason = result.message.rstrip(".") if result.message else "it has no reading for it"
    message = (f"The grammar could not read this sentence ({reason}). The readings below were "
               "sketched from the events and limits it names: check each one, or build the "
               "rule from its parts.")
    atoms = tuple(sorted({g.name for f, _ in found for g in f.subformulas() if g.op == "atom"}))
    return Formalisation(readings[0].formula, readings[0].text, atoms, result.unplaced,
                         message, result.engine, readings, tuple(mapping), result.name)


def sketched(result: Formalisation) -> bool:
    """Whether ``result``'s readings were sketched (never sure: the grammar did not read it)."""
    return bool(result.readings) and all(r.why == SKETCHED for r in result.readings)
