"""The words of a name, stemmed, with the synonyms and generic verbs grounding weighs."""

from __future__ import annotations

import re


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


# Phrases about what the other side does: "a dispute the customer raises" is not the agent's.
_OTHER_SIDE = frozenset({"user", "users", "customer", "customers", "client", "clients",
                         "caller", "patient", "patients", "candidate", "candidates",
                         "claimant", "student", "students", "applicant", "traveler",
                         "traveller", "shopper", "member", "employee", "kid", "child"})
