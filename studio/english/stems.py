"""The words of a name, stemmed, with the synonyms and generic verbs grounding weighs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path


# The word lists, one entry a line with why it is there (read once, at import).
_WORDS = tomllib.loads((Path(__file__).with_name("words") / "stems.toml").read_text("utf-8"))
# Words that say who acts, not what happens.
_ACTORS = frozenset(_WORDS["actors"])
# Verbs that say little on their own: a match on them alone grounds nothing.
_GENERIC = frozenset(_WORDS["generic"])
# Words a policy writer uses for the logs' word (in the file's order: a later one wins).
_SYNONYMS: dict[str, str] = _WORDS["synonyms"]
# Units a field's name may end with ("co2_ppm", "battery_pct", "temp_c").
_UNIT_WORDS = frozenset(_WORDS["units"])
# Irregular forms of verbs the logs name by their base ("sent" -> "send").
_IRREGULAR: dict[str, str] = _WORDS["irregular"]


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


# Phrases about what the other side does: "a dispute the customer raises" is not the agent's.
_OTHER_SIDE = frozenset({"user", "users", "customer", "customers", "client", "clients",
                         "caller", "patient", "patients", "candidate", "candidates",
                         "claimant", "student", "students", "applicant", "traveler",
                         "traveller", "shopper", "member", "employee", "kid", "child"})
