"""Grounding one phrase onto a vocabulary atom (or a speaker's role): scores, ties, closest ties."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .stems import _OTHER_SIDE, _stem, _STEMMED_GENERIC, _STEMMED_SYNONYMS, _SYNONYMS, words_of


@dataclass(frozen=True)
class Grounding:
    """How one phrase of the English was named: a vocabulary entry, or an invented atom."""

    phrase: str
    atom: str
    grounded: bool

    def as_dict(self) -> dict:
        return {"phrase": self.phrase, "atom": self.atom, "grounded": self.grounded}


def _score(phrase: list[str], entry: list[str], specific: frozenset = frozenset()) -> tuple | None:
    if not entry or not phrase:
        return None
    shared = [w for w in entry if w in phrase]
    coverage = len(set(shared)) / len(set(entry))
    # (a generic verb the phrase says by a specific word, "a transfer goes out", means more)
    meaningful = [w for w in shared if w not in _STEMMED_GENERIC or w in specific]
    precision = len(set(shared)) / len(set(phrase))
    if coverage >= 0.5 and precision == 1:
        meaningful = meaningful or shared     # the phrase is all in the entry ("send" alone)
    if coverage < 1 and not (coverage >= 0.5 and meaningful):
        return None
    if coverage < 1 and len(set(entry)) > 1 and not meaningful:
        return None
    in_order = [w for w in phrase if w in entry] == [w for w in entry if w in phrase]
    return (coverage, precision, in_order)


# The word lists, one entry a line with why it is there (read once, at import).
_WORDS = tomllib.loads((Path(__file__).with_name("words") / "speakers.toml").read_text("utf-8"))
# Words a message phrase may carry beside its role ("a user message", "the assistant replies").
_ROLE_WORDS = frozenset(_stem(w) for w in _WORDS["role_words"])
# Which role a speaker word names.
_SPEAKERS: dict[str, str] = _WORDS["speakers"]
# Words a phrase naming only who speaks may have beside the speaker.
_SPEAKING = frozenset(_WORDS["speaking"])
# Verbs of a message: "the assistant tells the customer about it" is an assistant message,
# whatever it is about (when the logs have no label for what is said).
_TELLING = frozenset(_WORDS["telling"])
# What the other side says, by its own words ("an applicant question", "a passenger
# message"), not what it is told ("the shopper is told").
_QUESTIONS = frozenset(_WORDS["questions"])
# People on the other side a domain names instead of "user".
_PEOPLE = frozenset(_WORDS["people"])
# Words that say nothing of a message beyond who speaks.
_FILLERS = frozenset(_WORDS["fillers"])


def _speaker(name: str, atoms) -> str | None:
    """``role:assistant`` for "the assistant replies", ``role:user`` for "the user writes in":
    a phrase that only names who speaks (the role word itself is dropped as an actor
    elsewhere)."""
    raw = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    if ("role:user" in atoms and len(raw) > 1 and ((
            raw[0] in _OTHER_SIDE | _PEOPLE and all(w in _QUESTIONS for w in raw[1:]))
            or (len(raw) == 3 and raw[0] in _QUESTIONS and raw[1] == "from"
                and raw[2] in _OTHER_SIDE | _PEOPLE))):
        # "an applicant question", "a message from a passenger": whoever the other side
        # is, it speaks in the user's messages
        return "role:user"
    roles = [_SPEAKERS[w] for w in raw if w in _SPEAKERS]
    if not roles or roles[0] not in atoms:
        return None
    rest = [w for w in raw if w not in _SPEAKERS]
    if not rest and len(raw) == 1:
        return roles[0]         # "only the assistant may ...": who acts
    if (roles[0] == "role:assistant" and len(raw) > 1 and raw[0] in _SPEAKERS
            and raw[1] in _TELLING):
        return roles[0]         # "the assistant tells the customer about it"
    if not rest or not all(w in _SPEAKING for w in rest):
        return None
    if not any(w in _SPEAKING and w not in _FILLERS for w in rest):
        return None
    return roles[0]


def _tells_about(name: str, call: str) -> bool:
    """Whether a phrase is its speaker telling something ("the assistant tells the customer
    about the card payment") rather than the call it matched by what is told about
    (``tool_call:charge_card``): the call is not itself a telling ("the agent reports the
    fraud" is ``tool_call:report_fraud``)."""
    raw = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    if len(raw) < 2 or raw[0] not in _SPEAKERS or raw[1] not in _TELLING:
        return False
    verb = _STEMMED_SYNONYMS.get(_stem(raw[1]), _stem(raw[1]))
    return verb not in words_of(call) and _stem(raw[1]) not in words_of(call)


_RESULT_WORDS = frozenset({"result", "results", "output", "outputs"})


def _tool_result(name: str, atoms) -> bool:
    """Whether a phrase only says a call's result comes ("its result", "the tool output") when
    the logs record the tools' messages (``role:tool``)."""
    raw = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    return ("role:tool" in atoms and any(w in _RESULT_WORDS for w in raw)
            and all(w in _RESULT_WORDS | _FILLERS | {"its", "tool", "tools", "returned",
                                                    "call", "command"} for w in raw))


def _reply(name: str, atoms) -> str | None:
    """``role:assistant`` for a phrase that only says a reply comes ("a reply", "answered",
    "report back to the user") when the logs record the assistant's messages."""
    raw = [w.lower() for w in re.split(r"[_\s]+", name) if w]
    if ("role:assistant" in atoms and raw and all(w in _TELLING or w in _FILLERS for w in raw)
            and any(w in _TELLING for w in raw)):
        return "role:assistant"
    return None


def _role_fits(phrase: list[str], candidate: str) -> bool:
    """A role atom names who speaks, not what is said: "the user reports a problem" is not
    ``role:user`` (it is something the user says), "a user message" is."""
    if not candidate.startswith("role:"):
        return True
    return set(phrase) <= set(words_of(candidate)) | _ROLE_WORDS


def _acronyms(name: str) -> set[str]:
    """The initials of two or three consecutive words ("pull requests" -> "pr"), which an
    entry may use for them (``tool_call:merge_pr``), and two words written as one ("hand
    off" -> ``handoff``, "roll back" -> ``rollback``)."""
    raw = [w.lower() for w in re.split(r"[_\s\-]+", name) if w and w[0].isalpha()]
    out = set()
    for n in (2, 3):
        for k in range(len(raw) - n + 1):
            out.add("".join(w[0] for w in raw[k:k + n]))
    for k in range(len(raw) - 1):
        out.add(_stem(raw[k] + raw[k + 1]))
    return out


# Short words of English that are no one's initials ("go", "it", "all").
_SHORT_WORDS = frozenset({
    "a", "am", "an", "as", "at", "be", "by", "do", "go", "he", "hi", "id", "if", "in", "is",
    "it", "me", "my", "no", "of", "ok", "on", "or", "so", "to", "up", "us", "we", "all", "and",
    "any", "are", "can", "did", "due", "for", "get", "got", "had", "has", "her", "him", "his",
    "how", "its", "may", "new", "nor", "not", "now", "off", "old", "one", "our", "out", "own",
    "per", "put", "run", "say", "see", "set", "she", "the", "too", "two", "use", "via", "was",
    "way", "who", "why", "yes", "yet", "you", "day", "end", "few", "let", "log", "top", "try"})


def _spelled_out(said: set[str], candidate: str) -> list[str]:
    """The words of an entry that the phrase writes as their initials ("a PO is issued" ->
    ``tool_call:create_purchase_order``'s "purchase order")."""
    raw = [w.lower() for w in re.split(r"[_:\s]+", re.sub(r"^(tool_call|role):", "", candidate))
           if w]
    out: list[str] = []
    said = said - _SHORT_WORDS
    for n in (2, 3):
        for k in range(len(raw) - n + 1):
            if "".join(w[0] for w in raw[k:k + n]) in said:
                out += words_of("_".join(raw[k:k + n]))
    return out


def ground_atom(name: str, vocabulary_atoms) -> str | None:
    """The vocabulary atom an invented name stands for, or None."""
    tied = ground_ties(name, vocabulary_atoms)
    return tied[0] if tied else None


def ground_ties(name: str, vocabulary_atoms) -> list[str]:
    """Every vocabulary atom that fits an invented name best, equally well ("a booking" is
    ``tool_call:book_flight`` as much as ``tool_call:book_hotel``); empty when none fits."""
    if name in vocabulary_atoms:
        return [name]
    phrase = words_of(name)
    entry_words = {w for a in vocabulary_atoms for w in words_of(a)}
    joined = {_STEMMED_SYNONYMS.get(a, a) for a in _acronyms(name)}
    phrase += [a for a in joined if a in entry_words and a not in phrase]
    best: list[str] = []
    best_score = None
    said = {w.lower() for w in re.split(r"[_\s\-]+", name) if w}
    for w in sorted(said):
        # "the rebooking" is a booking again (``book_appointment``) when the logs name no
        # rebooking
        full = _STEMMED_SYNONYMS.get(_stem(w), _stem(w))
        again = _STEMMED_SYNONYMS.get(_stem(w[2:]), _stem(w[2:]))
        if (w.startswith("re") and len(w) >= 6 and full not in entry_words
                and again in entry_words and w not in _SYNONYMS and full in phrase):
            phrase = [again if x == full else x for x in phrase]
    specific = frozenset(_STEMMED_SYNONYMS[_stem(w)] for w in said
                         if _STEMMED_SYNONYMS.get(_stem(w), _stem(w)) in _STEMMED_GENERIC
                         and _stem(w) not in _STEMMED_GENERIC
                         and _STEMMED_SYNONYMS.get(_stem(w)) not in (None, _stem(w)))
    for candidate in sorted(vocabulary_atoms):
        if not _role_fits(phrase, candidate):
            continue
        score = _score(phrase + _spelled_out(said, candidate), words_of(candidate), specific)
        if score is None:
            continue
        if best_score is None or score > best_score:
            best, best_score = [candidate], score
        elif score == best_score:
            best.append(candidate)
    if len(best) > 1 and sum(c.startswith("tool_call:") for c in best) == 1:
        # one word for a call and a state ("log in": ``tool_call:login``, ``logged_in``): the
        # words as written tell them apart ("logging in" the call, "logged in" the state)
        raw = [w.lower() for w in re.split(r"[_\s]+", name) if len(w) > 2]
        action = any(w.endswith("ing") for w in raw)
        state = any(w.endswith("ed") for w in raw)

        def closeness(candidate: str) -> tuple:
            written = set(re.split(r"[_:\s]+", candidate.lower()))
            call = candidate.startswith("tool_call:")
            return (call and action) or (not call and state)
        top = max(closeness(c) for c in best)
        best = [c for c in best if closeness(c) == top]
    if len(best) > 1:
        best = _closest_ties(name, best)
    return best


# Words that say how something turned out, well or badly.
_OUTCOME_SIDE = {**{w: True for w in ("pass", "passes", "passed", "passing", "succeed",
                                      "succeeds", "succeeded", "success", "successful",
                                      "successfully", "verified", "approved", "cleared",
                                      "accepted", "valid")},
                 **{w: False for w in ("fail", "fails", "failed", "failing", "failure",
                                       "rejected", "declined", "denied", "invalid", "error",
                                       "errored")}}


# Particles that words_of leaves out ("switch on", "lights off") but that tell two entries
# apart: ``tool_call:switch_on`` and ``tool_call:switch_off`` have the same words otherwise.
_PARTICLES = frozenset({"on", "off", "up", "down", "in", "out"})


def _closest_ties(name: str, tied: list[str]) -> list[str]:
    """Of entries that fit a phrase equally well by their words, the ones closest to how it is
    written: the one whose particle the phrase says ("the stove is switched on" is
    ``switch_on``, not ``switch_off``); the one that has the phrase's own word rather than a
    synonym ("apply a discount" is ``apply_discount`` before ``apply_coupon``); the one whose
    other words are only generic verbs, of calls ("emailing" is ``send_email`` before
    ``draft_email``).
    Each step keeps every entry when none is closer."""
    raw = [w.lower() for w in re.split(r"[_\s\-]+", name) if w]
    said = set(raw) & _PARTICLES
    if said:
        parts = {t: set(re.split(r"[_:\s]+", t.lower())) & _PARTICLES for t in tied}
        closer = [t for t in tied if parts[t] and parts[t] <= said]
        if closer:
            tied = closer
    polarity = {_OUTCOME_SIDE[w] for w in raw if w in _OUTCOME_SIDE}
    if len(polarity) == 1:
        # "the customer has passed the check": the entry that says it went well, not the one
        # that says it failed (``otp_verified``, not ``otp_failed``)
        side = polarity.pop()
        agree = [t for t in tied if not any(_OUTCOME_SIDE.get(w, side) != side
                                            for w in re.split(r"[_:\s]+", t.lower()))]
        if agree:
            tied = agree
    own = {_stem(w) for w in raw}

    def literal(t: str) -> int:
        written = re.split(r"[_:\s]+", re.sub(r"^(tool_call|role):", "", t.lower()))
        return sum(_stem(w) in own for w in written)
    top = max(literal(t) for t in tied)
    tied = [t for t in tied if literal(t) == top]
    if len(tied) > 1 and all(t.startswith("tool_call:") for t in tied):
        phrase = set(words_of(name))
        plain = [t for t in tied if set(words_of(t)) - phrase <= _STEMMED_GENERIC]
        if plain and len(plain) < len(tied):
            tied = plain
    shared = set.intersection(*(set(words_of(t)) for t in tied)) if tied else set()
    if len(tied) > 1 and shared and all(t.startswith("tool_call:") for t in tied):
        # "reminder emails": a word before a noun names its kind, so of calls that do one
        # thing (send) the one named by the kind (``send_reminder``) comes before the one
        # named by the noun (``send_email``)
        stems = words_of(name)

        def first(t: str) -> int:
            own = [k for k, w in enumerate(stems) if w in set(words_of(t)) - shared]
            return min(own, default=len(stems))
        tied = sorted(tied, key=first)
    return tied
