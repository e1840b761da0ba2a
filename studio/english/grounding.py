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
from dataclasses import dataclass

from studio.logic import formula as fm
from studio.logic.formula import Formula

# Words that say who acts, not what happens.
_ACTORS = frozenset({"agent", "assistant", "bot", "system", "model", "ai", "chatbot", "player",
                     "we", "you", "they", "it", "them", "tool", "call", "invoke", "use",
                     "perform", "make", "execute", "run", "trigger"})
# Verbs that say little on their own: a match on them alone grounds nothing.
_GENERIC = frozenset({"get", "do", "make", "set", "go", "have", "be", "take", "give", "put",
                      "send", "check"})
_SYNONYMS = {
    "transfer": "send", "wire": "send", "remit": "send",
    "fund": "money", "cash": "money",
    "check": "get", "fetch": "get", "retrieve": "get", "look": "get", "read": "get",
    "view": "get", "query": "get", "lookup": "get", "obtain": "get", "see": "get",
    "remove": "delete", "erase": "delete", "wipe": "delete",
    "mail": "email", "e-mail": "email",
    "ask": "request", "seek": "request",
    "inform": "notify", "alert": "notify", "tell": "notify", "contact": "notify",
    "reimburse": "refund", "access": "get", "pull": "get", "information": "data",
    "info": "data", "details": "data", "die": "dead", "death": "dead", "dy": "dead",
    "confirm": "verify", "validate": "verify", "authenticate": "verify",
    "id": "identity", "administrator": "admin", "adm": "admin",
    "reply": "respond", "answer": "respond", "response": "respond",
    "purchase": "buy",
    "pick": "take", "grab": "take", "collect": "take", "acquire": "take",
    "modify": "update", "change": "update", "edit": "update",
    "create": "open", "submit": "submit",
    "shut": "close", "end": "close", "lift": "close", "finish": "complete",
    "escalate": "escalate", "handoff": "escalate",
    "cook": "heat", "warm": "heat",
    "stock": "inventory",
    "chart": "record", "file": "record", "dossier": "record",
    "coupon": "coupon", "voucher": "coupon", "discount": "coupon",
    "notification": "notify", "warn": "warning",
    "dashboard": "metric", "monitor": "metric",
    "terminate": "terminate", "fire": "terminate", "dismiss": "terminate",
    "greet": "greeting", "hello": "greeting", "welcome": "greeting",
    "handover": "handoff", "transfer_to": "handoff",
    "prescription": "prescribe", "denial": "deny",
    "trade": "order",
    "commit": "commit",
    "payout": "pay", "disburse": "pay", "disbursement": "pay",
    # a noun and its verb, spelled apart
    "signature": "sign", "countersignature": "countersign", "complaint": "complain",
    "cancellation": "cancel", "confirmation": "verify",
    "provide": "give", "supply": "give", "promotional": "promo", "promotion": "promo",
    "command": "shell",     # what an agent runs is a shell command (``run_shell``)
    "speak": "say", "talk": "say",
    "revert": "restore", "reversion": "restore",
    # abbreviations the logs' names use for a word the English spells out
    "acknowledge": "ack", "acknowledgement": "ack", "acknowledgment": "ack",
    "authorization": "auth", "authorisation": "auth", "authorize": "auth",
    "authorise": "auth", "configuration": "config", "database": "db",
    "environment": "env", "percent": "pct", "percentage": "pct",
    "quantity": "qty", "production": "prod", "repository": "repo", "application": "app",
    "temperature": "temp", "number": "num", "document": "doc", "documents": "doc",
    "identifier": "id", "password": "pwd", "reservation": "booking",
}
# Units a field's name may end with ("co2_ppm", "battery_pct", "temp_c"): the English says the
# unit after the value, if at all.
_UNIT_WORDS = frozenset({"ppm", "pct", "percent", "c", "f", "usd", "eur", "gbp", "mg", "kg",
                         "g", "ml", "ms", "sec", "secs", "seconds", "min", "mins", "minutes",
                         "hours", "hrs", "days", "km", "miles", "cents", "dollars", "euros",
                         "kph", "mph", "kmh", "kw", "kwh", "mw", "mwh", "bps"})


# Irregular forms of verbs the logs name by their base ("going east" is ``tool_call:go``, "the
# email was sent" ``tool_call:send_email``, "the key is taken" ``tool_call:take``).
_IRREGULAR = {"going": "go", "goes": "go", "went": "go", "gone": "go", "sent": "send",
              "taken": "take", "took": "take", "eaten": "eat", "ate": "eat", "paid": "pay",
              "written": "write", "wrote": "write", "given": "give", "gave": "give",
              "shown": "show", "chosen": "choose", "chose": "choose", "sold": "sell",
              "bought": "buy", "doing": "do", "done": "do", "did": "do", "made": "make",
              "kept": "keep", "held": "hold", "spent": "spend", "withdrawn": "withdraw",
              "withdrew": "withdraw", "thrown": "throw", "threw": "throw", "driven": "drive",
              "drove": "drive", "begun": "begin", "began": "begin", "broken": "break",
              "broke": "break", "forgotten": "forget", "hidden": "hide", "frozen": "freeze",
              "froze": "freeze", "stolen": "steal", "spoken": "speak", "told": "tell",
              # too short for the suffix rules
              "died": "die", "dies": "die", "dying": "die"}


def _stem(word: str) -> str:
    word = _IRREGULAR.get(word.lower(), word)
    w = _stem_once(word.lower())
    w = _stem_once(w) if w.endswith("ment") else w
    if word.lower().endswith("s") and w.endswith(("ing", "ion")):
        w = _stem_once(w)   # meetings -> meeting -> meet, like book_meeting
    # noun and verb of one word alike: summary / summarize, apology / apologise
    for suffix in ("iz", "is", "y"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: len(w) - len(suffix)]
    return w


def _stem_once(w: str) -> str:
    for suffix, repl in (("ification", "ify"), ("ication", "icate"), ("ization", "ize"),
                         ("isation", "ise"), ("ation", "ate"), ("ies", "y"),
                         ("ied", "y"), ("ing", ""), ("ment", ""), ("ions", ""), ("ion", ""),
                         ("als", ""), ("al", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix in ("s", "es") and w.endswith("ss"):
                break       # access, process: no plural
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 3 and w[-1] == w[-2] and (w[-1] not in "aeiousl" or w[-1] == "l" and len(w) > 5):
        w = w[:-1]          # logging -> logg -> log, cancelled -> cancell -> cancel
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]          # approve / approv(ed) / approv(al)
    return w


# The stem of one word as ``words_of`` takes it, before synonyms (``studio.grounding``).
stem = _stem

_STEMMED_SYNONYMS = {_stem(k): _stem(v) for k, v in _SYNONYMS.items()}
_STEMMED_ACTORS = frozenset(_stem(w) for w in _ACTORS)
_STEMMED_GENERIC = frozenset(_STEMMED_SYNONYMS.get(_stem(w), _stem(w)) for w in _GENERIC)


def words_of(name: str) -> list[str]:
    """The canonical words of an atom name or phrase (``tool_call:`` and actors left out)."""
    name = re.sub(r"^(tool_call|tool|role|stop_reason|event|action):", "", name)
    # "log in" is the login, "sign out" the logout
    name = re.sub(r"(?i)(?<![a-z])(log|logs|logged|logging|sign|signs|signed|signing)"
                  r"[_\s]?(in|on)(?![a-z])", "login", name)
    name = re.sub(r"(?i)(?<![a-z])(log|logs|logged|logging|sign|signs|signed|signing)"
                  r"[_\s]?(out|off)(?![a-z])", "logout", name)
    # "personal data" is what the logs call PII
    name = re.sub(r"(?i)(?<![a-z])personal(ly)?[_\s](identifiable[_\s])?(data|information|"
                  r"info|details)(?![a-z])", "pii", name)
    # "opted out" is not "opted in" ("in" and "out" alone say nothing)
    name = re.sub(r"(?i)(?<![a-z])(opt|opts|opted|opting)[_\s]?(in|out)(?![a-z])",
                  lambda m: "opt" + m.group(2).lower(), name)
    out = []
    for raw in re.split(r"[_:.\-\s]+", name):
        if not raw or raw.isdigit():
            continue
        stem = _stem(raw)
        stem = _STEMMED_SYNONYMS.get(stem, stem)
        if stem in _STEMMED_ACTORS or stem in ("the", "a", "an", "to", "for", "of", "on", "in",
                                               "one", "singl", "any", "with", "from", "by",
                                               "is", "are", "be", "ha", "have", "been",
                                               "dollar", "euro", "usd", "eur", "pound",
                                               "up", "out", "off", "at", "into", "about"):
            continue
        out.append(stem)
    return out


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


# Words a message phrase may carry beside its role ("a user message", "the assistant replies").
_ROLE_WORDS = frozenset(_stem(w) for w in ("message", "messages", "turn", "speak", "speaks",
                                            "say", "says", "write", "writes", "respond", "reply",
                                            "replies", "answer"))


_SPEAKERS = {"assistant": "role:assistant", "agent": "role:assistant", "bot": "role:assistant",
             "chatbot": "role:assistant", "ai": "role:assistant", "model": "role:assistant",
             "user": "role:user", "customer": "role:user", "client": "role:user",
             "caller": "role:user"}
_SPEAKING = frozenset({"message", "messages", "reply", "replies", "respond", "responds",
                       "response", "answer", "answers", "say", "says", "said", "write", "writes",
                       "speak", "speaks", "talk", "talks", "turn", "in", "back", "to", "again",
                       "something", "anything", "user", "customer", "them", "acknowledge",
                       "acknowledges", "acknowledged", "replied", "answered", "responded",
                       "tell", "tells", "told", "inform", "informs", "informed", "report",
                       "reports", "reported", "by", "about", "it", "get", "gets"})
# Verbs of a message: "the assistant tells the customer about it" is an assistant message,
# whatever it is about (when the logs have no label for what is said).
_TELLING = frozenset({"tell", "tells", "told", "inform", "informs", "informed", "reply",
                      "replies", "replied", "respond", "responds", "responded", "answer",
                      "answers", "answered", "acknowledge", "acknowledges", "acknowledged",
                      "report", "reports", "say", "says", "write", "writes"})
# What the other side says, by its own words ("an applicant question", "a passenger
# message"), not what it is told ("the shopper is told").
_QUESTIONS = frozenset({"question", "questions", "query", "queries", "asks", "message",
                        "messages", "says", "writes", "reply", "replies", "turn"})
_PEOPLE = frozenset({"applicant", "applicants", "passenger", "passengers", "guest", "guests",
                     "buyer", "buyers", "tenant", "tenants", "learner", "learners", "parent",
                     "parents", "shoppers", "members", "travellers", "travelers"})
_FILLERS = frozenset({"in", "back", "to", "again", "them", "user", "customer", "by", "about",
                      "it", "get", "gets", "a", "an", "the"})


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
    from .lexicon import IRREGULAR_PARTICIPLES
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


GROUNDINGS = ("drop", "keep", "invent")


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
    in the logs it is that field's value on the event the words name."""
    atoms = frozenset(getattr(vocabulary, "atoms", ()) or ())
    paths = dict(getattr(vocabulary, "paths", {}) or {})
    mapping: list[Grounding] = []
    renamed: dict[str, str] = {}
    changed: dict[str, Formula] = {}
    partial: set[str] = set()
    every_atom = atoms
    # One step is one event: phrases joined at one step name one event, phrases at different
    # places of the rule (a trigger and its response) name different ones.
    present = {g.name for g in f.subformulas() if g.op == "atom"}
    best_of = ({n: ground_atom(n, atoms) for n in invented if n not in atoms and n in present}
               if atoms else {})
    same_step = _same_step(f)
    for name in invented:
        atoms = every_atom
        phrase = name.replace("_", " ")
        if name in atoms:
            mapping.append(Grounding(phrase, name, True))
            continue
        context = (quoted or {}).get(name)
        if context is not None:
            value = _quoted_value(name, context, atoms, paths)
            said = _quoted_label(name, atoms) if value is None else None
            if said is not None:
                # "between the executive saying 'pause' and saying 'resume'": the quoted word
                # names the label the logs put on it (``pause_requested``); the label has
                # more words than were quoted, so the quoted word itself is offered beside it
                partial.add("loose")
                if words_left != "invent":
                    mapping.append(Grounding(f"“{name}”", said, True))
                    changed[name] = fm.Atom(said)
                    continue
            if value is not None:
                mapping.append(Grounding(f"{context.replace('_', ' ')} “{name}”", value.text,
                                         True))
                changed[name] = value
            else:
                mapping.append(Grounding(phrase, name, False))
            continue
        excluded = _named_elsewhere(name, best_of, same_step.get(name, set()), atoms)
        if excluded:
            # the entry this phrase matched is what another phrase of the rule names, at
            # another place of it ("whenever a file is deleted, the agent must log it": the
            # logging is not the deletion), or one the phrase fits no better than the event
            # it is joined with at one step ("claims over $10,000 ... before payout")
            atoms = atoms - excluded
            partial.add("loose")
        calls = sorted(a for a in atoms if a.startswith("tool_call:"))
        call = ground_atom(name, calls) if calls else None
        spoken = _speaker(name, atoms) if call is None or _tells_about(name, call) else None
        if spoken is not None:
            # "the assistant replies": a message of that role
            mapping.append(Grounding(phrase, spoken, True))
            changed[name] = fm.Atom(spoken)
            continue
        calls = sorted(a for a in atoms if a.startswith("tool_call:"))
        if (len(calls) > 1 and not words_of(name)
                and re.search(r"(^|_)tools?(_|$)", name.lower())):
            # "no tools get called": any of the calls the logs record
            grounded = fm.Or(*[fm.Atom(a) for a in calls])
            mapping.append(Grounding(phrase, grounded.text, True))
            changed[name] = grounded
            continue
        if (not calls and "role:tool" in atoms and not words_of(name)
                and re.search(r"(^|_)tools?(_|$)", name.lower())):
            # "the agent must stop calling tools" when the logs record no call by name: the
            # tools' messages are what a call leaves in them
            mapping.append(Grounding(phrase, "role:tool", True))
            changed[name] = fm.Atom("role:tool")
            continue
        tied = ground_ties(name, atoms) if atoms else []
        if len(tied) > 1 and len({words_of(t)[0] for t in tied if words_of(t)}) > 1:
            # "the user asks for flights": as much a booking as a search, so neither is sure
            partial.add("loose")
        if len(tied) > 1 and len({words_of(t)[0] for t in tied if words_of(t)}) == 1:
            # "no other booking": any of the entries the phrase names equally well, or (the
            # author picks) the first of them only
            partial.add("tie")
            if words_left != "one":
                grounded = fm.Or(*[fm.Atom(t) for t in tied])
                mapping.append(Grounding(phrase, grounded.text, True))
                changed[name] = grounded
                continue
        # "the account balance changes": a change of a number the logs record, before any
        # call that merely shares a word with it (``tool_call:get_balance``)
        change = ground_change(name, paths) if paths else None
        if change is not None and change.payload.right[0] == "prev":
            mapping.append(Grounding(phrase, change.text, True))
            changed[name] = change
            continue
        flipped = _flipped_state(name, atoms) if atoms else None
        if flipped is not None:
            # "the door is unlocked": the logs' ``door_locked``, negated
            mapping.append(Grounding(phrase, flipped.text, True))
            changed[name] = flipped
            continue
        opposite = _opposite_call(name, atoms, paths) if atoms else None
        if opposite is not None:
            # "the chest stays shut": no opening of the chest; a guess, so the invented state
            # is offered beside it
            mapping.append(Grounding(phrase, opposite.text, True))
            partial.add("loose")
            if words_left == "invent":
                mapping[-1] = Grounding(phrase, name, False)
                continue
            changed[name] = opposite
            continue
        grounded, leftover = ground_phrase(name, atoms, paths) if atoms else (None, [])
        if grounded is None and paths:
            grounded = change
        if grounded is None and _contact_call(name, calls) is not None:
            # "the agent must not contact them again": the one call that sends someone a
            # message; a guess, so the invented atom is offered beside it
            partial.add("loose")
            if words_left != "invent":
                contact = _contact_call(name, calls)
                mapping.append(Grounding(phrase, contact, True))
                changed[name] = fm.Atom(contact)
                continue
        if grounded is None and _tool_result(name, atoms):
            # "every shell command must be followed by its result": the tool's message
            mapping.append(Grounding(phrase, "role:tool", True))
            changed[name] = fm.Atom("role:tool")
            continue
        if grounded is None and _reply(name, atoms):
            # "every user message must be answered": by a message of the assistant
            mapping.append(Grounding(phrase, "role:assistant", True))
            changed[name] = fm.Atom("role:assistant")
            continue
        if grounded is None:
            mapping.append(Grounding(phrase, name, False))
            continue
        kinds = guess_kind(name, next((a.name for a in grounded.subformulas()
                                       if a.op == "atom"), ""), leftover)
        used = {a.name for a in grounded.subformulas() if a.op == "atom"}
        if leftover and any(c not in used for c in ground_ties("_".join(leftover),
                                                                   set(calls) - used)):
            # "no payout on a denied claim": the words left over name another call of the
            # logs, so the phrase is not surely the one it matched best
            kinds = kinds | {"loose"}
        carrier = _carrier(grounded, leftover, calls)
        if carrier is not None:
            # "handoff notes must not include patient names": a label the logs put on what
            # a call carries, and the words left over name that call; the label may hold
            # only on it
            kinds = kinds | {"restricting"}
        written = {_STEMMED_SYNONYMS.get(_stem(w), _stem(w)): w.lower()
                   for w in re.split(r"[_\s]+", name) if w}
        # a value names a thing: not a generic verb ("no alcohol can go into the cart"), nor
        # a unit ("written for 90 days")
        # nor a preposition ("commands as root"), nor a word of a call ("starting a deploy
        # freeze" is no value "deploy")
        call_words = {w for a in calls for w in words_of(a)}
        values = [w for w in leftover if w not in _NOT_VALUE_STEMS
                  and not _not_a_value(written.get(w, w)) and w not in _STEMMED_GENERIC
                  and written.get(w, w) not in _UNIT_WORDS | _RESTRICTING | _LINKING
                  and w not in call_words]
        labels = [a for a in atoms if not a.startswith(("tool_call:", "role:"))]
        if (values and grounded.op == "atom" and grounded.name.startswith("tool_call:")
                and labels and ground_atom("_".join(values), labels)):
            # "don't store SSNs in the applicant notes": the words left over name a label
            # the logs record (``contains_ssn``), which may restrict the call
            kinds = kinds | {"restricting"}
        texts = [p for p in paths if p.startswith("output.args.")
                 and "string" in _path_type(paths[p])]
        if (values and not kinds - {"loose"} and grounded.op == "atom"
                and grounded.name.startswith("tool_call:") and texts
                and (not kinds or _value_fields(texts))):
            # "go north" with the call's arguments in the logs: the word may be one's value
            # (also when the call is named loosely, "alcohol goes into the cart" ->
            # add_to_cart, if an argument can hold it)
            kinds = kinds | {"argument"}
        if kinds:
            partial.update(kinds)
            if words_left == "invent" and kinds != {"argument"}:
                mapping.append(Grounding(phrase, name, False))
                continue
            if ((words_left == "keep" and "restricting" in kinds)
                    or (words_left == "keep_arguments" and kinds & {"restricting", "argument"})):
                rest = "_".join(w for w in re.split(r"[_\s]+", name)
                                if w and _STEMMED_SYNONYMS.get(_stem(w), _stem(w)) in leftover)
                rest = rest or "_".join(leftover)
                mapping.append(Grounding(phrase, grounded.text, True))
                # the qualifier may be a state the logs record ("anything poisonous" ->
                # ``item_poisonous``), or an argument's value ("go north", "take the lamp")
                naming = sorted(p for p in paths if p.startswith("output.args.")
                                and "string" in _path_type(paths[p])
                                and p.rsplit(".", 1)[-1] in _NAMING_ARGUMENTS)
                # the value's words as written, one word or several in a row ("take the
                # silver key"), without those that name no thing ("going west is allowed")
                spoken = _written_value([w for w in leftover if w in values], name)
                raw_stems = [_STEMMED_SYNONYMS.get(_stem(w), _stem(w))
                             for w in re.split(r"[_\s]+", name) if w]
                said = words_of(spoken) if spoken is not None else []
                if len(said) > 1 and raw_stems[-1] != said[-1]:
                    spoken = None   # several words are a value only at the phrase's end
                entry = set(words_of(next((a.name for a in grounded.subformulas()
                                           if a.op == "atom"), "")))
                last = (len(raw_stems) - 1 - raw_stems[::-1].index(said[-1])
                        if said and said[-1] in raw_stems else len(raw_stems))
                before = any(w in entry for w in raw_stems[last + 1:])
                if before:
                    # a word before the call names what it acts on ("camera footage is
                    # shared"), not where it goes
                    naming = [p for p in naming if p.rsplit(".", 1)[-1] not in _PLACE_ARGUMENTS]
                if "restricting" not in kinds and naming and spoken is not None:
                    wanted = "direction" if spoken in _COMPASS else "object"
                    path = next((p for p in naming if p.endswith("." + wanted)), naming[0])
                    value = fm.Compare(("path", path), "==", ("const", spoken))
                    mapping.append(Grounding(spoken, value.text, True))
                    changed[name] = fm.And(grounded, value)
                    continue
                if carrier is not None:
                    mapping.append(Grounding(rest.replace("_", " "), carrier, True))
                    changed[name] = fm.And(fm.Atom(carrier), grounded)
                    continue
                states = [a for a in atoms if not a.startswith(("tool_call:", "role:"))]
                state = ground_atom(rest, states) if states else None
                if state is not None:
                    mapping.append(Grounding(rest.replace("_", " "), state, True))
                    changed[name] = fm.And(grounded, fm.Atom(state))
                    continue
                # or the value of the one argument the logs record as text ("an international
                # flight" -> ``output.args.route_type == "international"``)
                strings = [p for p in paths if p.startswith("output.args.")
                           and "string" in _path_type(paths[p])]
                field = strings[0].rsplit(".", 1)[-1] if strings else ""
                if (len(strings) == 1 and spoken is not None
                        and not set(words_of(spoken)) & set(words_of(field))
                        and not re.search(r"(^|_)ids?$", field)
                        and ("loose" not in kinds or field.split("_")[-1] in _KIND_ARGUMENTS)):
                    # (never the argument's own name, nor an identifier: "appointment
                    # reminders" is no appointment_id "appointment"; beside a call named
                    # loosely, only a field that says what kind of thing it is: "no alcohol
                    # goes into the cart" -> category)
                    value = fm.Compare(("path", strings[0]), "==", ("const", spoken))
                    mapping.append(Grounding(spoken, value.text, True))
                    changed[name] = fm.And(grounded, value)
                    continue
                mapping.append(Grounding(rest.replace("_", " "), rest, False))
                changed[name] = fm.And(grounded, fm.Atom(rest))
                continue
        mapping.append(Grounding(phrase, grounded.text, True))
        changed[name] = grounded
    atoms = every_atom
    _speakers_apart(changed, mapping, atoms)
    path_renamed: dict[str, str] = {}

    def visit(g: Formula) -> Formula:
        if g.op == "atom":
            if g.name in changed:
                return changed[g.name]
            return fm.Atom(renamed.get(g.name, g.name))
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
            subjects = _compared_subjects(g, invented, every_atom, paths)
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

    return visit(f), mapping, partial


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
    from .lexicon import IRREGULAR_PARTICIPLES
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
# Phrases about what the other side does: "a dispute the customer raises" is not the agent's.
_OTHER_SIDE = frozenset({"user", "users", "customer", "customers", "client", "clients",
                         "caller", "patient", "patients", "candidate", "candidates",
                         "claimant", "student", "students", "applicant", "traveler",
                         "traveller", "shopper", "member", "employee", "kid", "child"})


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
