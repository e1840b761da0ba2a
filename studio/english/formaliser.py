"""The offline English-to-LTL formaliser: structured English in, an LTLf formula out, no model.

Three stages:

1. **Lexing** (``lex``): the text is cut into words, numbers, quoted atoms and punctuation; the
   keyword phrases of ``lexicon.py`` become one token each ("at some point" -> EVENTUALLY),
   filler words are dropped ("the", "you", "is"), and every other word is a content word.
2. **Parsing** (``grammar.lark``, Earley): keywords give the sentence its shape, runs of content
   words fill the gaps as phrases.  The tree becomes a small syntax tree of clauses.
3. **Reading** (``_Reader``): each construction becomes a formula, mostly through the pattern
   builders of ``studio.logic.patterns`` and Dwyer et al.'s scoped patterns (adapted to LTLf).

A phrase names an atom: its content words joined by ``_`` ("take the knife" -> ``take_knife``);
a quoted "atom" is used verbatim; "the amount exceeds 10000" is the data atom
``data.amount > 10000``.  Text the grammar cannot read never raises: the answer says which words
could not be placed, at which character, and why.

The readings where English leaves room (rule authors see the formula and its explanation, so a
reading they did not mean shows up in review):

* "never P" and "do not P" are ``G !P``, "always P" and "P must hold" ``G P``, "eventually P"
  and "P must happen" ``F P``;
* with a modal and no time word, a state is an invariant and an action must happen once: "the
  truck must be at a location" is ``G``, "the agent must greet the customer" and "the report
  must be sent" are ``F`` (a verb, or a past participle after "be"); "hold" and "happen" say it
  explicitly.  "Every request must be answered" is a response from the subject to the predicate;
* "eventually" and "followed by" include the current step (``F``); "later", "then" and the
  links after the first of a chain are strictly later (``X F``), as in paper 000's tree formulas;
* "in the next step" is the strong ``X`` (a trigger at the last step is a violation); "must not
  ... in the next step" is the weak ``WX``;
* "within k steps" counts the trigger step (``F[0,k]``); "within the next k steps" does not
  (``F[1,k]``);
* "Q only after P", "P before Q", "no Q before P" and a top-level "do not Q until P" are
  precedence (``!Q W P``: a session without P must not do Q); "do not Q until after P" also
  forbids Q at the step of P; in a triggered obligation "until" is strong, as in the paper's
  constrained response ("whenever P, Q must not happen until R" is ``G (P -> (!Q U R))``);
* a leading "before R," "after Q," "between Q and R," or "after Q until R," is one of Dwyer et
  al.'s scopes; a trailing "after Q" and "between Q and R" too, but a trailing "before R" is
  precedence;
* "P without Q" is ``P & !O Q`` (Q has not happened up to now);
* "before" with no object ("the package must be unloaded before") is ``Y O`` (strictly earlier);
* a pronoun takes a noun phrase of the clause before ("take an item ... examine it");
  coordinated phrases share the words English leaves out ("go to the bedroom or kitchen");
* "P only in L1 or L2" and "only go to L1 or L2" restrict an action: ``G (P -> P_in_L1 | ...)``.

Where rules written by people who never saw this grammar leave the meaning open, every reading
is offered (at most ``MAX_READINGS``) rather than one silent guess: "within k steps" of a trigger
counting the trigger's step or not, a ban after an event from that step or the next, a top-level
"P until Q" strong or weak, "never P when Q" at that step or from then on, an earlier event
strict or not, a forbidden amount as a limit or a plain ban, a phrase that fits several
vocabulary entries (any of them, or one), words left over after grounding (they restrict the
event, or the phrase names something the logs lack).  A reading that holds on every session or
on none is never offered; when none is left the rule is refused.  A bare permission ("the agent
may read files") forbids nothing and is refused; "Only X may P" is "P only if X"; "at a time"
(how many are open together) is refused.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token as LarkToken, Transformer
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from studio.logic import formula as fm
from studio.logic.formula import (
    MAX_BOUND,
    WX,
    And,
    Atom,
    Compare,
    F,
    FBounded,
    Formula,
    G,
    GBounded,
    Implies,
    Not,
    O,
    Or,
    U,
    W,
    X,
    Y,
    S,
)
from studio.logic.patterns import absence, at_most_once, existence, precedence, universality
from . import lexicon
from .base import Formalisation

MAX_TEXT_LENGTH = 4000
# Counts nest one operator per occurrence; the parser reads formulas up to 200 levels deep.
MAX_COUNT = 20
# Searching for the words to leave out costs one parse per word: only for short sentences.
MAX_TOKENS_FOR_SEARCH = 60
MAX_TOKENS_FOR_PAIRS = 12
SEARCH_SECONDS = 0.5    # the search gives up (and names where the parser stopped) after this


# ---------------------------------------------------------------------------------------------
# Lexing

@dataclass
class Token:
    """One lexical unit: a keyword phrase, a content word, a number, a quoted atom, ..."""

    kind: str               # grammar terminal name, or DROP / UNPLACEABLE
    text: str               # the source text it covers
    start: int              # character offset in the English text
    value: object = None    # the word, the number, the atom, (op, style) for COMPARE
    after_determiner: bool = False   # a noun phrase starts here ("the knife")
    after_copula: bool = False       # a predicate starts here ("the door is closed")
    pronoun: bool = False


class NotUnderstood(Exception):
    """The English cannot be read; ``tokens`` are the words to blame."""

    def __init__(self, message: str, tokens=()):
        super().__init__(message)
        self.message = message
        self.tokens = [t for t in tokens if t is not None]


_RAW = re.compile(r"""
    (?P<quoted>"[^"\n]*"|“[^”\n]*”|`[^`\n]*`|(?<![\w'’])['‘][^'’‘\n]{1,40}['’](?![\w]))
  | (?P<stept>\b[tT]\s*\+\s*1\b)
  | (?P<number>[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|[$€£]?\d+(?:\.\d+)?[kKmM]?(?![\w]))
  | (?P<word>[\w][\w]*(?:[:.\-'’][\w]+)*(?:(?<=s)['’](?![\w]))?)
  | (?P<op>>=|<=|==|!=|=|>|<)
  | (?P<punct>[,;.:!?()→]|[—–]|(?<=\s)-(?=\s))
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE)

# Auxiliaries after which "that", "which" or "who" opens a relative clause, not a noun phrase.
_RELATIVE_VERBS = frozenset({"is", "are", "was", "were", "has", "have", "had", "hasn't",
                             "haven't", "isn't", "aren't", "wasn't", "weren't", "hadn't"})

_PUNCT = {",": "COMMA", ":": "COMMA", "→": "COMMA", ";": "SEP", ".": "SEP", "!": "SEP", "?": "SEP",
          "(": "LPAR", ")": "RPAR", "—": "COMMA", "–": "COMMA", "-": "COMMA"}


@dataclass
class _Raw:
    kind: str
    text: str
    start: int

    @property
    def key(self) -> str:
        """How the lexicon sees the token: lower case, straight apostrophes."""
        if self.kind == "stept":
            return "t+1"
        return self.text.lower().replace("’", "'")


def _raw_tokens(text: str) -> list[_Raw]:
    out = []
    for m in _RAW.finditer(text):
        kind = m.lastgroup
        if kind != "space":
            out.append(_Raw(kind, m.group(), m.start()))
    return out


def _number(text: str):
    digits = text.lstrip("$€£").replace(",", "")
    scale = {"k": 1000, "m": 1000000}.get(digits[-1:].lower(), 1)
    if scale != 1:
        # "150k", "$2m"
        value = float(digits[:-1]) * scale
        return int(value) if value == int(value) else value
    return float(digits) if "." in digits else int(digits)


# Words that make a rule's label ("On-call note:", "Hazard H-2:", "Runbook step 4:").
_HEADING_WORDS = frozenset({"note", "notes", "reminder", "hazard", "rule", "requirement", "step",
                            "policy", "runbook", "guideline", "memo", "ticket", "section",
                            "fyi", "important", "design", "control", "clause", "article",
                            "spec", "story", "finding", "observation", "criterion",
                            "criteria", "acceptance", "expected", "qa", "check", "test"})
_SOURCE_WORDS = ("per", "according")
_GREETINGS = frozenset({"hey team", "hey", "folks", "team", "hi team", "hi all", "all",
                        "everyone", "heads up", "reminder", "quick reminder", "friendly reminder",
                        "fyi", "note", "please note", "important", "guys", "hey folks",
                        "hello team", "ok", "okay", "so"})
# An identifier: "PAY-412", "H-2", "SUP-203", "R12".
_IDENTIFIER = re.compile(r"^[A-Za-z]{1,6}-?\d+(?:\.\d+)*$")


def _heading_end(raws: list[_Raw], i: int) -> int:
    """Where a sentence's label ends (after its colon), or a leading "Per compliance," (after
    its comma); 0 when the sentence has none.  A label is at most six words before a colon,
    none a keyword, with an identifier ("PAY-412", "H-2") or a label word ("note", "policy")
    in it: "Currency conversions over 1M:" is the rule's subject, not a label."""
    for j in range(i, min(len(raws), i + 8)):
        raw = raws[j]
        if raw.text in (":", ",") and j > i:
            head = raws[i:j]
            if raw.text == "," and " ".join(r.key for r in head) in _GREETINGS:
                return j + 1        # "Hey team, ...", "Folks, ..."
            if raw.text == "," and (head[0].key not in _SOURCE_WORDS or len(head) > 4
                                    or j + 1 >= len(raws)):
                return 0
            if raw.text == ":" and not any(
                    _IDENTIFIER.match(r.text) or r.key in _HEADING_WORDS for r in head):
                return 0
            if any(r.kind not in ("word", "number") for r in head) or any(
                    r.key in lexicon.PHRASES and lexicon.PHRASES[r.key] != "DROP"
                    and r.key not in _HEADING_WORDS for r in head):
                return 0
            return j + 1
        if raw.kind not in ("word", "number"):
            return 0
    return 0


def _is_value(raw: _Raw | None) -> bool:
    return raw is not None and (raw.kind in ("number", "quoted") or
                                (raw.kind == "word" and raw.key in lexicon.NUMBER_WORDS))


def _is_number(raw: _Raw | None) -> bool:
    return raw is not None and (raw.kind == "number" or
                                (raw.kind == "word" and raw.key in lexicon.NUMBER_WORDS))


def _match_phrase(raws: list[_Raw], i: int, previous_kind: str | None):
    """The longest lexicon phrase at ``raws[i]``: (length, spec) or None."""
    words = []
    for j in range(i, min(len(raws), i + lexicon.LONGEST_PHRASE)):
        if raws[j].kind not in ("word", "stept", "op"):
            break
        words.append(raws[j].key)
    for length in range(len(words), 0, -1):
        phrase = " ".join(words[:length])
        following = raws[i + length] if i + length < len(raws) else None
        after_value = raws[i + length + 1] if i + length + 1 < len(raws) else None
        if (phrase in lexicon.COMPARISON_PHRASES and _is_value(following)
                and not (after_value is not None and after_value.key == "times")
                and not (phrase in lexicon.COUNT_PHRASES and _counted_noun(after_value))):
            return length, "CMP"
        spec = lexicon.PHRASES.get(phrase)
        if spec is None:
            continue
        if spec in lexicon.AFTER_NUMBER_ONLY and previous_kind != "NUM":
            continue
        if spec in lexicon.BEFORE_NUMBER_ONLY and not _is_number(following):
            continue
        return length, spec
    return None


def _in_opening_trigger(tokens: list[Token]) -> bool:
    """Whether the sentence so far is an opening "if"/"whenever" clause with no comma yet."""
    here = tokens[next((k for k in range(len(tokens) - 1, -1, -1)
                        if tokens[k].kind == "SEP"), -1) + 1:]
    visible = [t for t in here if t.kind != "DROP"]
    return (len(visible) >= 2 and visible[0].kind in ("TRIGGER", "TRIGGER_NEXT")
            and all(t.kind in ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE") for t in visible[1:]))


def _already_follows(raws: list[_Raw], i: int) -> int:
    """The index after "has already" / "was previously" / "already" at ``raws[i]`` (a relative
    clause about an earlier event), or 0."""
    j = i
    if j < len(raws) and raws[j].key in _RELATIVE_VERBS:
        j += 1
    if j < len(raws) and raws[j].key in ("already", "previously", "earlier", "before"):
        j += 1
        if j < len(raws) and raws[j].key in ("been", "be"):
            j += 1
        return j if j < len(raws) and raws[j].kind == "word" else 0
    return 0


def _sentence_end(raws: list[_Raw], i: int) -> int:
    return next((j for j in range(i, len(raws)) if raws[j].kind == "punct"
                 and raws[j].text in ".;!?"), len(raws))


def _participle_follows(raws: list[_Raw], i: int) -> bool:
    """Whether a past participle comes at ``raws[i]`` ("been", "picked", "run", "verified"),
    past an adverb or two ("already", "first")."""
    for raw in raws[i:i + 3]:
        if raw.kind != "word":
            return False
        if raw.key in ("already", "first", "previously", "successfully", "properly", "all"):
            continue
        return (raw.key == "been" or raw.key in lexicon.IRREGULAR_PARTICIPLES
                or (len(raw.key) > 4 and raw.key.endswith("ed")))
    return False


def _counted_noun(raw: _Raw | None) -> bool:
    """"more than 3 login attempts": a plural noun after the number counts events, where
    "more than 5000 dollars" or "more than 5000 in one transfer" compares an amount."""
    return (raw is not None and raw.kind == "word" and len(raw.key) > 3
            and raw.key.endswith("s") and not raw.key.endswith("ss")
            and raw.key not in lexicon.UNITS and raw.key not in lexicon.PHRASES)


def lex(text: str) -> list[Token]:
    """The tokens of ``text``, DROP tokens included (they are placed: they carry no meaning)."""
    raws = _raw_tokens(text)
    tokens: list[Token] = []
    previous_kind: str | None = None   # last token the grammar sees
    sentence_start = True
    determiner_pending = False
    copula_pending = False
    message_verb_pending = False
    i = 0
    while i < len(raws):
        raw = raws[i]
        emitted: list[Token] = []
        # "Rule 3:" labels a rule; it is not part of it.
        if (sentence_start and raw.kind == "word" and raw.key == "rule" and i + 1 < len(raws)
                and _is_number(raws[i + 1])):
            end = i + 2
            if end < len(raws) and raws[end].text == ":":
                end += 1
            for r in raws[i:end]:
                tokens.append(Token("DROP", r.text, r.start))
            i = end
            continue
        heading = _heading_end(raws, i) if sentence_start else 0
        if heading:
            # "PAY-412: ...", "Hazard H-2: ...", "On-call note: ...", "Per compliance, ...":
            # a label or a source of the rule, not part of it
            for r in raws[i:heading]:
                tokens.append(Token("DROP", r.text, r.start))
            i = heading
            continue
        at_sentence_start, sentence_start = sentence_start, False
        if (at_sentence_start and raw.kind == "word" and raw.key in ("it", "they")
                and not any(t.kind == "WORD" for t in tokens) and i + 1 < len(raws)
                and (_match_phrase(raws, i + 1, None) or (0, ""))[1].split()[:1]
                in (["MODAL"], ["NOT"], ["NEVER"])):
            # "It must run the test suite": the agent the rule is about, named nowhere
            tokens.append(Token("DROP", raw.text, raw.start))
            i += 1
            continue
        if (at_sentence_start and raw.kind == "word" and raw.key in ("period", "absolutely")
                and (i + 1 == len(raws) or raws[i + 1].text in ".!")):
            # "Never drop a production database. Period.": emphasis, no rule
            tokens.append(Token("DROP", raw.text, raw.start))
            sentence_start = True
            i += 1
            continue
        if (raw.kind == "word" and raw.key == "between" and i + 4 < len(raws)
                and _is_number(raws[i + 1]) and raws[i + 3].key == "and"
                and (raws[i + 2].text == "%" or raws[i + 2].key in lexicon.UNITS)):
            # "between 10% and 90%": the unit after the first value too
            first_unit = Token("DROP", raws[i + 2].text, raws[i + 2].start)
            raws = raws[:i + 2] + raws[i + 3:]
        else:
            first_unit = None
        if (raw.kind == "word" and raw.key == "between" and not at_sentence_start
                and i + 3 < len(raws) and _is_number(raws[i + 1]) and raws[i + 2].key == "and"
                and _is_number(raws[i + 3])):
            # "the pH must stay between 6.8 and 7.4": a range of the field, ends included
            low, high = (lexicon.NUMBER_WORDS.get(r.key) if r.kind == "word"
                         else _number(r.text) for r in (raws[i + 1], raws[i + 3]))
            verb = bool(tokens) and (tokens[-1].kind == "HOLD" or (
                tokens[-1].kind == "DROP" and tokens[-1].text.lower() in lexicon.COPULAS))
            source = text[raw.start:raws[i + 3].start + len(raws[i + 3].text)]
            tokens.append(Token("COMPARE", source, raw.start,
                                ("between", "verb" if verb else "prep")))
            tokens.append(Token("VALUE", source, raws[i + 1].start, (low, high)))
            if first_unit is not None:
                tokens.append(first_unit)
            previous_kind = "VALUE"
            i += 4
            while i < len(raws) and (raws[i].key in lexicon.UNITS or raws[i].key in (
                    "inclusive", "inclusively", "°", "c", "f") or raws[i].text in ("%", "°")):
                tokens.append(Token("DROP", raws[i].text, raws[i].start))
                i += 1
            continue
        message = _message_phrase(raws, i) if raw.kind == "word" else None
        if message is not None:
            # "the agent's next message must include an apology": the next message of the
            # assistant (or its first in the session) carries it
            end, kind = message
            tokens.append(Token(kind, text[raw.start:raws[end - 1].start
                                          + len(raws[end - 1].text)], raw.start))
            previous_kind = kind
            message_verb_pending = True
            i = end
            continue
        if (message_verb_pending and raw.kind == "word" and raw.key in _MESSAGE_VERBS
                and tokens and tokens[-1].kind in ("MODAL", "NOT", "NEVER")):
            # "... must include an apology": what the message carries
            tokens.append(Token("DROP", raw.text, raw.start))
            message_verb_pending = False
            i += 1
            continue
        last_of = (raw.kind == "word" and raw.key == "after" and i + 2 < len(raws)
                   and raws[i + 1].key == "the"
                   and raws[i + 2].key in ("last", "latest", "most"))
        if ((raw.kind == "word" and raw.key == "since" or last_of) and not at_sentence_start
                and tokens and tokens[-1].kind in ("WORD", "NUM", "VALUE", "QUOTED")):
            # ("the tests passed after the most recent edit": since it)
            # "the tests have passed since the last edit": the latest edit came before them;
            # "opted in and has not opted out since": not since then
            end = i + 1
            while (end < len(raws) and raws[end].key in ("the", "last", "latest", "most",
                                                         "recent", "previous", "time", "then")):
                end += 1
            closes = end >= len(raws) or raws[end].kind == "punct"
            emitted.append(Token("SINCE_THEN" if closes else "SINCE",
                                 text[raw.start:raws[end - 1].start + len(raws[end - 1].text)],
                                 raw.start))
            for r in raws[i + 1:end]:
                tokens.append(Token("DROP", r.text, r.start))
            tokens.extend(emitted)
            previous_kind = emitted[-1].kind
            i = end
            continue
        if (raw.kind == "word" and raw.key == "once" and not at_sentence_start
                and _once_closes(raws, i)):
            # "it's only paid once", "attendance is taken once per session, not more": a
            # count, at most one
            only = [t for t in tokens[-4:] if t.kind == "ONLY"]
            for t in only:
                t.kind = "DROP"
            for part in ("AT_MOST", "NUM", "TIMES"):
                emitted.append(Token(part, raw.text, raw.start, 1 if part == "NUM" else None))
            tokens.extend(emitted)
            previous_kind = "TIMES"
            i += 1
            continue
        if (at_sentence_start and raw.kind == "word" and raw.key == "after"
                and i + 2 < len(raws) and _is_number(raws[i + 1])
                and raws[i + 2].kind == "word" and raws[i + 2].key not in lexicon.PHRASES):
            # "After three failed logins, lock the account": at the third one
            count = raws[i + 1]
            value = (lexicon.NUMBER_WORDS.get(count.key) if count.kind == "word"
                     else _number(count.text))
            tokens.append(Token("TRIGGER", raw.text, raw.start))
            tokens.append(Token("NTH", count.text, count.start))
            tokens.append(Token("NUM", count.text, count.start, value))
            previous_kind = "NUM"
            i += 2
            continue
        if at_sentence_start and raw.kind == "word" and raw.key == "once":
            # "Once the session is closed, ...": from then on.
            emitted.append(Token("AFTER", raw.text, raw.start))
            i += 1
        elif (raw.kind == "word" and raw.key == "only" and i + 2 < len(raws)
              and raws[i + 1].key == "once" and raws[i + 2].kind in ("word", "quoted")
              and raws[i + 2].key not in ("per", "a", "an", "every", "each", "in", "during")
              and any(r.key in _RELATIVE_VERBS for r in raws[i + 2:i + 8])):
            # "details are shared only once the identity has been verified": only after it
            emitted.append(Token("ONLY_AFTER", text[raw.start:raws[i + 1].start + 4],
                                 raw.start))
            i += 2
        elif (raw.kind == "word" and raw.key == "once" and i + 1 < len(raws)
              and raws[i + 1].kind in ("word", "quoted")
              and (raws[i + 1].key not in ("a", "an", "per", "every", "each", "more", "again")
                   or any(r.key in _RELATIVE_VERBS for r in raws[i + 2:i + 5]))):
            # "... can only be executed once the invoice is approved": after it
            if tokens and tokens[-1].kind == "ONLY":
                tokens[-1].kind = "ONLY_AFTER"
            else:
                emitted.append(Token("AFTER", raw.text, raw.start))
            i += 1
        elif (raw.kind == "word" and raw.key in ("that", "which", "who") and previous_kind == "WORD"
              and _already_follows(raws, i + 1)):
            # "an order that has already shipped": the object and what happened to it before
            end = _already_follows(raws, i + 1)
            emitted.append(Token("ALREADY_DONE", text[raw.start:raws[end - 1].start
                                                       + len(raws[end - 1].text)], raw.start))
            i = end
        elif (raw.kind == "word" and raw.key in ("that", "which", "who") and previous_kind == "WORD"
              and i + 1 < len(raws) and raws[i + 1].key in _RELATIVE_VERBS):
            # "refund orders that are flagged for fraud": an object qualified by the clause
            # after it; "every ticket that is opened": a subject the clause names an event of
            visible = [t for t in tokens if t.kind != "DROP"]
            is_object = len(visible) >= 2 and visible[-2].kind == "WORD"
            emitted.append(Token("AND" if is_object else "DROP", raw.text, raw.start))
            i += 1
        elif (raw.kind == "word" and raw.key in ("stop", "stops", "cease", "ceases", "quit")
              and i + 1 < len(raws) and raws[i + 1].key.endswith("ing")):
            # "the agent must stop heating": no more heating from then on
            emitted.append(Token("NEVER", raw.text, raw.start))
            i += 1
        elif (raw.kind == "word" and raw.key == "first" and tokens
              and (i + 1 == len(raws) or raws[i + 1].text in ".;,!")):
            # "the agent must log in first": at the start; "any withdrawal has to be confirmed
            # by the customer first": before it; "requires approval first": already said
            here = tokens[next((k for k in range(len(tokens) - 1, -1, -1)
                                if tokens[k].kind == "SEP"), -1) + 1:]
            if any(t.kind in ("REQUIRES", "WITHOUT", "BEFORE", "ONLY_AFTER", "PREVIOUSLY",
                              "IMMEDIATELY_BEFORE", "PRECEDED_BY", "UNLESS", "UNTIL", "ONLY_IF")
                   for t in here):
                tokens.append(Token("DROP", raw.text, raw.start))
                i += 1
                continue
            # after an opening "whenever P," or "once P,": before that event
            passive = any(t.kind == "WORD" and t.after_copula and _is_participle(t)
                          for t in here) or any(t.kind in ("TRIGGER", "AFTER") for t in here)
            emitted.append(Token("PREVIOUSLY" if passive else "AT_START", raw.text, raw.start))
            i += 1
        elif (at_sentence_start and raw.kind == "word" and raw.key == "any"
              and i + 1 < len(raws) and raws[i + 1].kind == "word"):
            # "Any withdrawal over 1000 has to be confirmed": every one
            emitted.append(Token("EVERY", raw.text, raw.start))
            i += 1
        elif (at_sentence_start and raw.kind == "word" and raw.key in ("to", "in order to")
              and i + 1 < len(raws) and raws[i + 1].kind == "word"
              and any(r.text == "," for r in raws[i:_sentence_end(raws, i)])):
            # "To unlock the chest, the key must have been picked up": what must come before
            # the unlocking; "To finish the task, the agent has to ...": only its purpose
            comma = next(j for j in range(i, len(raws)) if raws[j].text == ",")
            rest = raws[comma + 1:_sentence_end(raws, i)]
            earlier = any(r.key in ("first", "earlier", "already", "beforehand", "previously",
                                    "before")
                          or (r.key == "have" and _participle_follows(rest, k + 1))
                          for k, r in enumerate(rest))
            if earlier:
                emitted.append(Token("BEFORE", raw.text, raw.start))
                i += 1
            else:
                for r in raws[i:comma + 1]:
                    tokens.append(Token("DROP", r.text, r.start))
                sentence_start = True
                i = comma + 1
                continue
        elif (raw.kind == "word" and raw.key == "after" and i + 1 < len(raws)
              and raws[i + 1].kind in ("word", "quoted")
              and _in_opening_trigger(tokens)):
            # "if a health check fails after a deploy, roll back": the deploy came earlier
            emitted.append(Token("AND", raw.text, raw.start))
            emitted.append(Token("PREVIOUSLY", raw.text, raw.start))
            i += 1
        elif (not at_sentence_start and raw.kind == "word" and raw.key in ("while", "whilst")
              and i + 1 < len(raws) and raws[i + 1].kind in ("word", "quoted")):
            # "no flight may be booked while the passport is unverified": at every step where
            # it is; "migrations should only run while maintenance mode is on": only then
            here = tokens[next((k for k in range(len(tokens) - 1, -1, -1)
                                if tokens[k].kind == "SEP"), -1) + 1:]
            only = [t for t in here if t.kind == "ONLY"]
            if only and not any(t.kind in ("TRIGGER", "ONLY_IF") for t in here):
                only[-1].kind = "DROP"
                emitted.append(Token("ONLY_IF", raw.text, raw.start))
            elif any(t.kind in ("MODAL", "NOT", "NEVER", "FORBIDDEN", "ALWAYS") for t in here):
                emitted.append(Token("DURING", raw.text, raw.start))
            else:
                emitted.append(Token("AND", raw.text, raw.start))
            i += 1
        elif (at_sentence_start and raw.kind == "word" and raw.key in ("where", "wherever")
                and i + 1 < len(raws) and raws[i + 1].kind in ("word", "quoted")):
            # "Where a claimant is represented by counsel, ...": the lawyers' "if"
            emitted.append(Token("TRIGGER", raw.text, raw.start))
            i += 1
        elif at_sentence_start and raw.kind == "word" and raw.key in ("while", "whilst"):
            # "While the account is locked, ...": at every step where it is.
            emitted.append(Token("WHILE", raw.text, raw.start))
            i += 1
        elif (not at_sentence_start and raw.kind == "word" and raw.key == "throughout"
              and i + 2 < len(raws) and raws[i + 1].key in lexicon.DETERMINERS
              and raws[i + 2].kind == "word"):
            # "... below 30 throughout the experiment": at every step
            emitted.append(Token("ALWAYS", raw.text, raw.start))
            for r in raws[i + 1:i + 3]:
                tokens.append(Token("DROP", r.text, r.start))
            i += 3
        elif (at_sentence_start and raw.kind == "word" and raw.key == "throughout"
              and any(r.text == "," for r in raws[i:])):
            # "Throughout the game, ...": the whole session, which every rule covers already.
            j = i
            while raws[j].text != ",":
                j += 1
            for r in raws[i:j + 1]:
                tokens.append(Token("DROP", r.text, r.start))
            sentence_start = True
            i = j + 1
            continue
        elif previous_kind == "COMPARE" and _is_value(raw):
            value = (raw.text[1:-1] if raw.kind == "quoted" else
                     lexicon.NUMBER_WORDS.get(raw.key) if raw.kind == "word" else _number(raw.text))
            emitted.append(Token("VALUE", raw.text, raw.start, value))
            i += 1
            if (i + 1 < len(raws) and raws[i].text == "°"
                    and raws[i + 1].key in ("c", "f")):
                # "above 250 °C": the degree sign and the scale are the unit
                tokens.extend(emitted)
                previous_kind = "VALUE"
                emitted = [Token("DROP", raws[i].text, raws[i].start),
                           Token("DROP", raws[i + 1].text, raws[i + 1].start)]
                i += 2
            if i < len(raws) and (raws[i].key in lexicon.UNITS or raws[i].text == "%"):
                # "exceed 200 dollars", "above 100 mg": the unit is the field's, not an event
                tokens.extend(emitted)
                previous_kind = "VALUE"
                emitted = [Token("DROP", raws[i].text, raws[i].start)]
                i += 1
        elif raw.kind == "quoted":
            emitted.append(Token("QUOTED", raw.text, raw.start, raw.text[1:-1]))
            i += 1
        elif raw.kind == "number":
            emitted.append(Token("NUM", raw.text, raw.start, _number(raw.text)))
            i += 1
        elif raw.kind == "punct":
            kind = _PUNCT[raw.text]
            # "before." with nothing after it means "earlier": the package must be unloaded before.
            if kind in ("SEP", "COMMA") and tokens and tokens[-1].kind == "BEFORE":
                tokens[-1].kind = "PREVIOUSLY"
            emitted.append(Token(kind, raw.text, raw.start))
            if kind == "SEP":
                sentence_start = True
            i += 1
        elif raw.kind == "other":
            emitted.append(Token("UNPLACEABLE", raw.text, raw.start))
            i += 1
        else:  # word, stept, op
            match = _match_phrase(raws, i, previous_kind)
            if match is not None:
                length, spec = match
                covered = raws[i:i + length]
                source = text[covered[0].start:covered[-1].start + len(covered[-1].text)]
                start = covered[0].start
                if spec == "CMP":
                    phrase = " ".join(r.key for r in covered)
                    emitted.append(Token("COMPARE", source, start,
                                         lexicon.COMPARISON_PHRASES[phrase]))
                elif (spec == "REQUIRES" and " ".join(r.key for r in covered)
                      in lexicon.PERFECT_MODALS and _participle_follows(raws, i + length)):
                    # "the key must have been picked up": earlier than the step in question
                    emitted.append(Token("MODAL", source, start))
                    emitted.append(Token("PREVIOUSLY", source, start))
                elif spec == "BELOW_ZERO":
                    # "go negative": a comparison with zero, as "drop below 0" reads
                    emitted.append(Token("COMPARE", source, start, ("<", "verb")))
                    emitted.append(Token("VALUE", source, start, 0))
                elif spec == "RATIONALE":
                    # A purpose clause runs to the end of the sentence or clause, and takes the
                    # comma that introduces it.
                    if tokens and tokens[-1].kind == "COMMA":
                        tokens[-1].kind = "DROP"
                    j = i
                    while j < len(raws) and not (raws[j].kind == "punct"
                                                 and raws[j].text in ",.;!?"):
                        j += 1
                    for r in raws[i:j]:
                        tokens.append(Token("DROP", r.text, r.start))
                    i = j
                    continue
                else:
                    following = raws[i + length] if i + length < len(raws) else None
                    if (spec == "NEXT_STEP" and covered[-1].key == "after"
                            and following is not None and following.kind in ("word", "quoted")):
                        # "immediately after P, Q": Q at the step after P's
                        spec = "TRIGGER_NEXT"
                    if (spec.startswith("AT_LEAST ") and tokens and tokens[-1].kind in
                            ("AT_MOST", "AT_LEAST", "EXACTLY", "MORE_THAN", "FEWER_THAN")):
                        # "at most three times": "three times" is the count, not a minimum
                        spec = spec.removeprefix("AT_LEAST ")
                    for part in spec.split():
                        name, _, value = part.partition("=")
                        emitted.append(Token(name, source, start,
                                             (int(value) if value.isdigit() else value)
                                             if value else None))
                i += length
            elif raw.kind == "word" and raw.key in lexicon.NUMBER_WORDS:
                emitted.append(Token("NUM", raw.text, raw.start, lexicon.NUMBER_WORDS[raw.key]))
                i += 1
            elif (raw.kind == "word" and raw.key in lexicon.DETERMINERS
                  and not (raw.text == "A" and tokens and tokens[-1].kind == "WORD")):
                # ("event A" names an event; "take a knife" has an article)
                tokens.append(Token("DROP", raw.text, raw.start))
                determiner_pending = True
                i += 1
                continue
            elif raw.kind == "word" and (raw.key in lexicon.COPULAS
                                         or raw.key in lexicon.CONTRACTED_COPULAS):
                tokens.append(Token("DROP", raw.text, raw.start))
                copula_pending = True
                i += 1
                continue
            elif raw.kind == "word" and raw.key in lexicon.UNPLACEABLE:
                emitted.append(Token("UNPLACEABLE", raw.text, raw.start))
                i += 1
            elif raw.kind == "word":
                word = _word_name(raw.key)
                emitted.append(Token("WORD", raw.text, raw.start, word,
                                     after_determiner=determiner_pending,
                                     after_copula=copula_pending,
                                     pronoun=raw.key in lexicon.PRONOUNS))
                i += 1
            else:
                emitted.append(Token("UNPLACEABLE", raw.text, raw.start))
                i += 1
        if (emitted and emitted[-1].kind == "STEPS" and i + 1 < len(raws)
                and raws[i].key in ("of", "after", "following", "from")
                and raws[i + 1].kind in ("word", "quoted")):
            # "users must be notified within 5 steps of any account change": a response
            emitted.append(Token("TRIGGER", raws[i].text, raws[i].start))
            i += 1
        if (len(emitted) == 1 and emitted[0].kind == "NUM" and previous_kind in _COUNT_KINDS
                and i < len(raws) and raws[i].kind in ("word", "quoted")
                and _match_phrase(raws, i, "NUM") is None):
            # "no more than two invites", "exactly one flight": a count of the events named
            emitted.append(Token("TIMES", "", emitted[0].start))
        if any(t.kind != "DROP" for t in emitted):
            determiner_pending = False
            # "the details remain unverified": a state follows "stay" or "remain"
            copula_pending = emitted[-1].kind == "HOLD" and raw.key in lexicon.STATE_VERBS
        for t in emitted:
            tokens.append(t)
            if t.kind != "DROP":
                previous_kind = t.kind
    last = next((t for t in reversed(tokens) if t.kind != "DROP"), None)
    if last is not None and last.kind == "BEFORE":
        last.kind = "PREVIOUSLY"
    tokens = _opening_within(tokens)
    tokens = _opening_only(tokens)
    tokens = _means(tokens)
    # a sentence with nothing left in it ("Full stop.") leaves no empty sentence behind
    previous = "SEP"
    for t in tokens:
        if t.kind == "SEP" and previous == "SEP":
            t.kind = "DROP"
        if t.kind != "DROP":
            previous = t.kind
    return _opening_clause_commas(tokens)


# Words that open a subordinate clause at the start of a sentence ("Once P, Q").
_OPENERS = frozenset({"TRIGGER", "TRIGGER_NEXT", "AFTER", "WHILE", "UNLESS", "UNTIL", "BEFORE",
                      "DURING", "ONLY_AFTER"})
_MAIN_VERBS = frozenset({"MODAL", "NOT", "NEVER", "FORBIDDEN", "ALWAYS", "REQUIRES", "HOLD"})
_SUBJECT_PRONOUNS = frozenset({"you", "they", "we", "he", "she"})
_CLOSING_TIMINGS = frozenset({"NEXT_STEP", "WITHIN", "WITHIN_NEXT", "EVENTUALLY", "LATER",
                              "AT_END", "ALWAYS", "PREVIOUSLY"})


def _by_sentence(tokens: list[Token], rewrite: Callable[[list[Token]], None]) -> list[Token]:
    """The tokens with each sentence (up to and including its separator) rewritten in place
    by ``rewrite``; the last one too, though it may be empty."""
    out: list[Token] = []
    sentence: list[Token] = []
    for t in tokens:
        sentence.append(t)
        if t.kind == "SEP":
            rewrite(sentence)
            out.extend(sentence)
            sentence = []
    rewrite(sentence)
    out.extend(sentence)
    return out


def _opening_only(tokens: list[Token]) -> list[Token]:
    """"Only verified users may send money": the action, only if the subject's condition
    ("may send money only if verified users")."""
    def rewrite(sentence: list[Token]) -> None:
        visible = [t for t in sentence if t.kind != "DROP"]
        if (len(visible) >= 4 and visible[0].kind == "ONLY" and visible[1].kind == "WORD"
                and not visible[1].value in lexicon.NUMBER_WORDS):
            modal = next((k for k, t in enumerate(visible) if t.kind in ("MODAL", "NOT",
                                                                         "NEVER", "HAPPEN")),
                         None)
            subject = visible[1:modal] if modal else []
            if (modal and subject and all(t.kind == "WORD" for t in subject)
                    and all(t.kind not in ("ONLY", "ONLY_IF", "TRIGGER", "BEFORE", "AFTER",
                                           "UNTIL", "UNLESS") for t in visible[modal:])):
                end = len(visible) - 1 if visible[-1].kind == "SEP" else len(visible)
                condition = [replace(t, after_determiner=False) for t in subject]
                only_if = Token("ONLY_IF", visible[0].text, visible[0].start)
                rest = visible[modal:end]
                sentence[:] = rest + [only_if] + condition + visible[end:]

    return _by_sentence(tokens, rewrite)


def _means(tokens: list[Token]) -> list[Token]:
    """"A sanctions hit means no payment may be released": if there is a hit, no payment may
    be released (the subject before "means" is the condition)."""
    def rewrite(sentence: list[Token]) -> None:
        visible = [t for t in sentence if t.kind != "DROP"]
        means = next((k for k, t in enumerate(visible)
                      if t.kind == "WORD" and str(t.value) in ("means", "implies")), None)
        if (means and all(t.kind == "WORD" or t.kind in ("COMPARE", "VALUE", "NUM")
                          for t in visible[:means])
                and any(t.kind in ("MODAL", "NOT", "NEVER", "FORBIDDEN")
                        for t in visible[means + 1:])):
            trigger = Token("TRIGGER", visible[means].text, visible[0].start)
            comma = Token("COMMA", visible[means].text, visible[means].start)
            k = sentence.index(visible[means])
            after_that = k + 1 < len(sentence) and sentence[k + 1].kind == "WORD" and str(
                sentence[k + 1].value) == "that"
            sentence[:] = ([trigger] + sentence[:k] + [comma]
                           + sentence[k + 1 + (1 if after_that else 0):])

    return _by_sentence(tokens, rewrite)


def _opening_within(tokens: list[Token]) -> list[Token]:
    """"Within 3 steps of a refund, an email must be sent": the bound moves to the end of
    the sentence ("if a refund, an email must be sent within 3 steps")."""
    def rewrite(sentence: list[Token]) -> None:
        visible = [t for t in sentence if t.kind != "DROP"]
        kinds = [t.kind for t in visible[:4]]
        if kinds in (["WITHIN", "NUM", "STEPS", "TRIGGER"], ["WITHIN_NEXT", "NUM", "STEPS",
                                                            "TRIGGER"]):
            bound = visible[:3]
            rest = [t for t in sentence if not any(t is b for b in bound)]
            end = next((k for k in range(len(rest) - 1, -1, -1) if rest[k].kind == "SEP"),
                       len(rest))
            sentence[:] = rest[:end] + bound + rest[end:]

    return _by_sentence(tokens, rewrite)


def _opening_clause_commas(tokens: list[Token]) -> list[Token]:
    """"Once the label is printed the address can no longer be changed": the comma a writer
    left out after an opening clause, put back before the main clause's subject (a noun phrase
    or a pronoun after a content word that is not a preposition, the last one before the
    main clause's modal)."""
    def rewrite(sentence: list[Token]) -> None:
        # ", on the very next step." / ", within 3 steps." closing the sentence: a timing of
        # the clause before the comma
        visible = [t for t in sentence if t.kind != "DROP"]
        # a comma left before the full stop ("... — not before.", "..., no exceptions.")
        while len(visible) >= 2 and visible[-1].kind == "SEP" and visible[-2].kind == "COMMA":
            visible[-2].kind = "DROP"
            visible.pop(-2)
        if visible and visible[-1].kind == "COMMA":
            visible[-1].kind = "DROP"
            visible.pop()
        for k, t in enumerate(visible[:-1]):
            if (t.kind == "COMMA" and k > 0 and visible[k + 1].kind in _CLOSING_TIMINGS
                    and all(u.kind in _CLOSING_TIMINGS | {"NUM", "STEPS", "SEP", "TIMES"}
                            for u in visible[k + 1:])):
                t.kind = "DROP"
        visible = [t for t in sentence if t.kind != "DROP"]
        if (visible and visible[0].kind in _OPENERS
                and not any(t.kind in ("COMMA", "THEN") for t in visible)):
            verb = next((k for k in range(len(sentence) - 1, -1, -1)
                         if sentence[k].kind in _MAIN_VERBS), None)
            if verb is None:
                # "As soon as fraud is suspected the account gets locked": a main clause with
                # no modal; its subject is the noun phrase after the opening clause's verb
                verb = next((k for k, t in enumerate(sentence)
                             if t.kind in _CLOSING_TIMINGS | {"SEP"}), len(sentence))
            split = None
            previous = None
            for k, t in enumerate(sentence[:verb] if verb is not None else []):
                starts_subject = ((t.kind == "WORD" and t.after_determiner and t.text[:1] != "")
                                  or (t.kind == "DROP" and t.text.lower() in _SUBJECT_PRONOUNS)
                                  or (t.kind == "WORD" and t.pronoun))
                if (starts_subject and previous is not None and previous.kind == "WORD"
                        and previous.value not in lexicon.PREPOSITIONS):
                    # the determiner before the word, when there is one
                    split = k - 1 if k and sentence[k - 1].kind == "DROP" and \
                        sentence[k - 1].text.lower() in lexicon.DETERMINERS else k
                if t.kind != "DROP":
                    previous = t
            if split is not None:
                sentence.insert(split, Token("COMMA", "", sentence[split].start))

    return _by_sentence(tokens, rewrite)


_COUNT_KINDS = frozenset({"AT_MOST", "AT_LEAST", "EXACTLY", "MORE_THAN", "FEWER_THAN"})


def _word_name(word: str) -> str:
    """A word as part of an atom name: possessive 's dropped, odd characters made ``_``."""
    word = re.sub(r"'s$", "", word).replace("'", "")
    return re.sub(r"[^\w:.\-]", "_", word)


# ---------------------------------------------------------------------------------------------
# Parsing

@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="earley", lexer="basic", ambiguity="resolve",
                propagate_positions=False)


def _canonical(tokens: list[Token]) -> tuple[str, dict[int, Token]]:
    """The token stream as the grammar reads it, and which token sits at each offset."""
    parts: list[str] = []
    at: dict[int, Token] = {}
    offset = 0
    for index, token in enumerate(tokens):
        if token.kind == "DROP":
            continue
        if token.kind in ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE"):
            name = {"WORD": "w", "NUM": "n", "QUOTED": "q", "COMPARE": "c", "VALUE": "v"}[
                token.kind] + str(index)
        else:
            name = token.kind
        at[offset] = token
        parts.append(name)
        offset += len(name) + 1
    return " ".join(parts), at


# ---------------------------------------------------------------------------------------------
# The syntax tree the grammar's callbacks build

@dataclass(frozen=True)
class Leaf:
    words: tuple[Token, ...] = ()
    quoted: Token | None = None
    compare: Token | None = None
    value: Token | None = None

    @property
    def plain(self) -> bool:
        return self.quoted is None and self.compare is None


@dataclass(frozen=True)
class Connective:
    op: str                  # and, or, not, but_not, without
    items: tuple
    token: Token | None = None   # the keyword of a negation


@dataclass(frozen=True)
class Mod:
    name: str
    token: Token
    number: int | None = None


@dataclass
class Clause:
    segments: list           # props (Leaf / Connective) and Mods, in order

    @property
    def mods(self) -> list[Mod]:
        return [s for s in self.segments if isinstance(s, Mod)]

    def has(self, *names: str) -> bool:
        return any(m.name in names for m in self.mods)


@dataclass
class Sequence:
    """What a trigger requires: clauses joined by links ("eventually q and then r")."""

    parts: list
    links: list              # "followed", "followed_next" or "then", one per later part


@dataclass
class Until:
    left: Clause
    right: Clause
    after: bool


@dataclass
class Conditional:
    style: str               # first ("whenever P, Q"), last ("Q whenever P"), only_if
    trigger: list
    consequent: object
    timing: str = "now"      # "next" for "as soon as P, Q" and "immediately after P, Q"


@dataclass
class Guarded:
    """"While P, Q" (kind while: Q at every step where P holds) and "Unless P, Q" / "Q unless
    P" (kind unless: Q at every step where P does not hold, or has not happened)."""

    kind: str
    condition: list
    rules: object


@dataclass
class UntilFirst:
    """"Until P, Q": a ban lasts, or a state holds, until P."""

    condition: object
    rules: object


@dataclass
class Chain:
    parts: list
    links: list


@dataclass
class Precedence:
    """"first before second" (``kind`` before: first is a list of steps), "first only after
    second" (only_after: second is a list of steps), "first precedes second", "first is preceded
    by second" (preceded_by: second is a list of steps)."""

    kind: str
    first: object
    second: object


@dataclass
class Scope:
    kind: str
    args: tuple
    token: Token | None = None


@dataclass
class Scoped:
    scope: Scope
    rule: object


@dataclass
class Rules:
    rules: list


@dataclass
class Simple:
    clause: Clause


@dataclass
class AlwaysRule:
    rule: object


COUNTS = frozenset({"at_most", "at_least", "exactly", "more_than", "fewer_than"})
TEMPORAL = frozenset({"ALWAYS", "EVENTUALLY", "LATER", "NEXT_STEP", "IN_A_ROW", "PREVIOUSLY",
                      "within", "within_next", "AT_END", "AT_START", "nth"}) | COUNTS
# The last step of a session: no step follows it.
LAST_STEP = WX(fm.FALSE)
NEGATIONS = frozenset({"NOT", "NEVER", "FORBIDDEN"})


class _Tree(Transformer):
    """Grammar callbacks: canonical tokens in, syntax tree out.

    Leaves are made left to right, so a pronoun can take a noun phrase of an earlier clause.  A
    pronoun that starts its phrase is a subject and takes the earlier subject ("whenever the
    agent calls a tool, it must report": the agent); any other takes the earlier object ("if
    you take an item, examine it": the item); each falls back on the other."""

    def __init__(self, tokens_at: dict[int, Token], tokens: list[Token]):
        super().__init__()
        self.at = tokens_at
        self.tokens = tokens
        self.antecedents: list[tuple[bool, tuple[Token, ...]]] = []
        self.clause_phrases: list[tuple[bool, tuple[Token, ...]]] = []   # (is an object, words)

    def _referent(self, as_subject: bool, thing: bool = False) -> tuple[Token, ...]:
        """The noun phrase a pronoun stands for; "it" (``thing``) never stands for a person
        ("ask the user for the CVV ... repeat it": the CVV)."""
        def fit(phrases):
            if not thing:
                return phrases
            kept = [(o, w) for o, w in phrases
                    if not any(str(t.value).lower() in lexicon.PERSONS for t in w)]
            return kept or phrases
        return (_pick_referent(fit(self.antecedents), as_subject)
                or _pick_referent(fit(self.clause_phrases), as_subject))

    def _close_clause(self) -> None:
        if self.clause_phrases:
            self.antecedents = self.clause_phrases
        self.clause_phrases = []

    def _token(self, t: LarkToken) -> Token:
        if t.type in ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE"):
            return self.tokens[int(str(t)[1:])]
        return self.at[t.start_pos]

    # -- phrases
    def words(self, c):
        resolved: list[Token] = []
        for n, t in enumerate(c):
            token = self._token(t)
            if token.pronoun and n > 0 and token.text.lower() == "them" and any(
                    str(w.value).lower() in lexicon.PERSONS
                    for w in self._referent(as_subject=False)):
                # "hand them off to a human": the person is who the action is for, which the
                # logs do not name apart
                continue
            if (token.pronoun and n == 0 and token.text.lower() in ("it", "they")
                    and self.antecedents and not self.antecedents[0][0]
                    and str(self.antecedents[0][1][0].value).lower() in _ACTORS):
                # "whenever the agent runs the tests, it has to report back": the agent, whom
                # the rule is about anyway (not the tests)
                resolved.append(replace(self.antecedents[0][1][0], after_determiner=False,
                                        after_copula=False))
                continue
            if token.pronoun:
                # The referent's words, without starting a noun phrase of their own here.
                # ("It must run the tests": a subject naming nobody before it is the agent.)
                thing = token.text.lower() == "it"
                resolved.extend(replace(w, after_determiner=False, after_copula=False)
                                for w in self._referent(as_subject=n == 0, thing=thing))
                if n == 0 and len(c) > 1 and not self._referent(as_subject=True):
                    continue
            else:
                resolved.append(token)
        for k, token in enumerate(resolved):
            if token.after_determiner:
                # The noun phrase runs to the next preposition or article; a subject's last
                # word before the object's article is its verb ("the agent calls a tool").
                end = next((j for j in range(k + 1, len(resolved))
                            if resolved[j].value in lexicon.PREPOSITIONS
                            or resolved[j].after_determiner or resolved[j].after_copula),
                           len(resolved))
                if (k == 0 and end < len(resolved) and end - k > 1
                        and not resolved[end].after_copula):
                    end -= 1
                elif (k == 0 and end == len(resolved) and end > 1
                      and re.search(r"(?<!s)s$|ed$", str(resolved[-1].value))
                      and not any(w.after_copula for w in resolved)):
                    end -= 1    # "an order ships": the order
                self.clause_phrases.append((k > 0, tuple(resolved[k:end])))
        if (len(resolved) >= 2 and not any(t.after_determiner or t.after_copula or t.pronoun
                                           for t in resolved)
                and not any(t.pronoun for t in (self._token(x) for x in c))):
            # "approve refunds before issuing them": a bare object after its verb
            self.clause_phrases.append((True, tuple(resolved[1:])))
        if not resolved:
            raise NotUnderstood("a pronoun that refers to nothing named before it",
                                [self._token(t) for t in c])
        return Leaf(tuple(resolved))

    def quoted(self, c):
        # the words around a quoted value say what it names ("the account named "admin"")
        words = tuple(self._token(t) for t in c if t.type == "WORD")
        return Leaf(words=words, quoted=next(self._token(t) for t in c if t.type == "QUOTED"))

    def comparison(self, c):
        tokens = [self._token(t) for t in c]
        at = next(k for k, t in enumerate(tokens) if t.kind == "COMPARE")
        compare, value = tokens[at], tokens[at + 1]
        trailing = tuple(t for t in tokens[at + 2:] if t.kind == "WORD")
        if trailing and compare.value[1] != "prep":
            raise NotUnderstood("words after a comparison", trailing)
        # "send more than 5000 in one transfer": the words after the amount name the event too
        return Leaf(words=tuple(t for t in tokens[:at] if t.kind in ("WORD", "NUM")) + trailing,
                    compare=compare, value=value)

    def negated(self, c):
        return Connective("not", (c[1],), self._token(c[0]))

    def negation(self, c):  # ( prop )
        return c[1]

    def _items(self, c):
        return tuple(x for x in c if not isinstance(x, LarkToken))

    def any_of(self, c):
        return Connective("or", _distribute(self._items(c)))

    def all_of(self, c):
        return Connective("and", _distribute(self._items(c)))

    def none_of(self, c):
        # "neither P nor Q" negates the clause, like "never": the reader lifts the negation.
        a, b = self._items(c)
        return Connective("not", (Connective("or", (a, b)),), self._token(c[0]))

    def but_not(self, c):
        a, b = self._items(c)
        return Connective("but_not", (a, b))

    def without(self, c):
        a, b = self._items(c)
        return Connective("without", (a, b))

    def already_done(self, c):
        a, b = self._items(c)
        return Connective("already", (a, b))

    def since(self, c):
        a, b = self._items(c)
        return Connective("since", (a, b))

    def and_not_since(self, c):
        a, b = self._items(c)
        return Connective("not_since", (a, b))

    # -- clauses
    def _mod(self, c, name):
        number_token = next((t for t in c if t.type == "NUM"), None)
        number = self._token(number_token).value if number_token is not None else None
        return Mod(name, self._token(c[0]), number)

    def modifier(self, c):
        return self._mod(c, c[0].type)

    def within(self, c):
        return self._mod(c, "within")

    def within_next(self, c):
        return self._mod(c, "within_next")

    def nth(self, c):
        return self._mod(c, "nth")

    def at_most(self, c):
        return self._mod(c, "at_most")

    def at_least(self, c):
        return self._mod(c, "at_least")

    def exactly(self, c):
        return self._mod(c, "exactly")

    def more_than(self, c):
        return self._mod(c, "more_than")

    def fewer_than(self, c):
        return self._mod(c, "fewer_than")

    def modifiers(self, c):
        return c

    def clause(self, c):
        segments: list = []
        for x in c:
            if isinstance(x, list):
                segments.extend(x)
            elif not isinstance(x, LarkToken):  # a comma after leading modifiers
                segments.extend(_lift_negation(x))
        self._close_clause()
        return Clause(segments)

    def bare(self, c):
        self._close_clause()
        return Clause(_lift_negation(c[0]))

    # -- rules
    def simple(self, c):
        return Simple(c[0])

    def always_rule(self, c):
        return AlwaysRule(c[-1])

    def trigger(self, c):
        return [x for x in c if isinstance(x, Clause)]

    def sequence(self, c):
        parts = [x for x in c if isinstance(x, Clause)]
        links = [x for x in c if isinstance(x, str) and not isinstance(x, LarkToken)]
        return Sequence(parts, links)

    def until(self, c):
        a, b = [x for x in c if isinstance(x, Clause)]
        return Until(a, b, after=False)

    def until_after(self, c):
        a, b = [x for x in c if isinstance(x, Clause)]
        return Until(a, b, after=True)

    def _trigger_timing(self, c) -> str:
        return "next" if any(isinstance(t, LarkToken) and t.type == "TRIGGER_NEXT"
                             for t in c) else "now"

    def trigger_first(self, c):
        trigger = next(x for x in c if isinstance(x, list))
        return Conditional("first", trigger, c[-1], self._trigger_timing(c))

    def trigger_last(self, c):
        trigger, consequent = c[-1], c[0]
        forbidden = [m for part in trigger for m in part.mods if m.name == "FORBIDDEN"]
        if forbidden and isinstance(consequent, Sequence) and len(consequent.parts) == 1:
            # "sending an email right after deleting a file is forbidden": the verdict ends
            # the sentence but is about what the trigger calls for
            trigger = [Clause([x for x in part.segments
                               if not (isinstance(x, Mod) and x.name == "FORBIDDEN")])
                       for part in trigger]
            head = consequent.parts[0]
            consequent = Sequence([Clause([Mod("NOT", forbidden[0].token)] + head.segments)],
                                  [])
        return Conditional("last", trigger, consequent, self._trigger_timing(c))

    def while_first(self, c):
        trigger = next(x for x in c if isinstance(x, list))
        return Guarded("while", trigger, c[-1])

    def while_last(self, c):
        trigger = next(x for x in c if isinstance(x, list))
        return Guarded("while", trigger, c[0])

    def requires(self, c):
        return Precedence("requires", c[0], c[2])

    def requires_before(self, c):
        # "claims over $10,000 need an adjuster's approval before payout"
        parts = [x for x in c if not isinstance(x, LarkToken)]
        return Precedence("requires_before", (parts[0], parts[2]), parts[1])

    def only_after_before(self, c):
        # "background checks may be run only after an offer and before a start date"
        parts = [x for x in c if not isinstance(x, LarkToken)]
        return Precedence("only_after_before", parts[0], (parts[1], parts[2]))

    def unless_first(self, c):
        return Guarded("unless", [c[1]], c[-1])

    def unless_last(self, c):
        return Guarded("unless", [c[-1]], c[0])

    def until_first(self, c):
        return UntilFirst(c[1], c[-1])

    def only_after_first(self, c):
        rule = c[-1]
        if not isinstance(rule, Simple):
            raise NotUnderstood("after “only after P,” a single action (only after P may Q)",
                                [self._token(c[0])])
        return Precedence("only_after", rule.clause, c[1])

    def immediately_before(self, c):
        return Precedence("preceded_by_prev", c[2], c[0])

    def preceded_by_prev(self, c):
        return Precedence("preceded_by_prev", c[0], c[2])

    def only_if(self, c):
        return Conditional("only_if", c[-1], c[0])

    def followed(self, c):
        return "followed"

    def followed_next(self, c):
        return "followed_next"

    def then(self, c):
        return "then"

    def chain(self, c):
        parts = [x for x in c if isinstance(x, Clause)]
        links = [x for x in c if isinstance(x, str) and not isinstance(x, LarkToken)]
        return Chain(parts, links)

    def steps(self, c):
        return [x for x in c if isinstance(x, Clause)]

    def before(self, c):
        return Precedence("before", c[0], c[2])

    def only_after(self, c):
        return Precedence("only_after", c[0], c[2])

    def precedes(self, c):
        return Precedence("precedes", c[0], c[2])

    def preceded_by(self, c):
        return Precedence("preceded_by", c[0], c[2])

    # -- scopes and sentences
    def _scope(self, kind, c):
        args = tuple(x for x in c if isinstance(x, Clause))
        keyword = next((self._token(t) for t in c if isinstance(t, LarkToken)), None)
        return Scope(kind, args, keyword)

    def scope_global(self, c):
        return self._scope("global", c)

    def scope_before(self, c):
        return self._scope("before", c)

    def scope_after(self, c):
        return self._scope("after", c)

    def scope_between(self, c):
        return self._scope("between", c)

    def scope_after_until(self, c):
        return self._scope("after_until", c)

    def front_scoped(self, c):
        return Scoped(c[0], c[-1])

    def back_scoped(self, c):
        return Scoped(c[-1], c[0])

    def both_rules(self, c):
        return Rules([x for x in c if not isinstance(x, LarkToken)])

    def start(self, c):
        return [x for x in c if not isinstance(x, LarkToken)]


# Who a rule is about: a pronoun for one of them names no event.
_ACTORS = frozenset({"agent", "assistant", "bot", "chatbot", "system", "model", "ai",
                     "controller", "tutor"})


def _pick_referent(phrases: list[tuple[bool, tuple[Token, ...]]],
                   as_subject: bool) -> tuple[Token, ...]:
    for is_object, words in phrases:
        if is_object != as_subject:
            return words
    return phrases[0][1] if phrases else ()


def _timings(mods: list[Mod]) -> list[Mod]:
    """The timing modifiers, a repeated one once ("eventually ... at some later time step")."""
    out: list[Mod] = []
    for m in mods:
        if m.name in TEMPORAL and not any(o.name == m.name and o.number == m.number for o in out):
            out.append(m)
    return out


def _lift_negation(prop) -> list:
    """A phrase-level "not P" in a clause is the clause's negation: "you must not look around
    twice in a row" forbids the repetition, it does not ask for two steps without looking."""
    if isinstance(prop, Connective) and prop.op == "not" and prop.token is not None:
        return [Mod("NOT", prop.token)] + _lift_negation(prop.items[0])
    return [prop]


def _distribute(items: tuple) -> tuple:
    """Share the words English leaves out of coordinated phrases.

    * "go to the bedroom, workshop or greenhouse": the words before the first item's noun phrase
      ("go to", ending in a preposition) go to later items that are bare nouns, and "take the
      knife or the fork" lends "take" to "the fork";
    * "in areas a1, a2 or a3": the words before a numbered name go to later numbered names
      ("area" made singular);
    * "pick up, pour or dunk the yellow paint": the last item's noun phrase goes to earlier
      items that are bare verbs;
    * "the door is closed or locked": the subject before the first item's copula goes to later
      bare items, and "package1 or package2 is delivered" shares the predicate after the last
      item's copula.
    """
    if len(items) < 2 or not all(isinstance(x, Leaf) and x.plain for x in items):
        return items
    first, last = items[0], items[-1]
    out = list(items)

    def bare(item: Leaf) -> bool:
        return len(item.words) <= 2 and not any(w.after_determiner or w.after_copula
                                                for w in item.words)

    # "the door is closed or locked": the subject before the copula is shared.
    cop = next((k for k, w in enumerate(first.words) if w.after_copula), None)
    if cop and all(bare(x) for x in items[1:]):
        return (first,) + tuple(Leaf(first.words[:cop] + x.words) for x in items[1:])
    # "package1 or package2 is delivered": the predicate after the copula is shared.
    cop = next((k for k, w in enumerate(last.words) if w.after_copula), None)
    if cop and all(bare(x) and len(x.words) == 1 for x in items[:-1]):
        return tuple(Leaf(x.words + last.words[cop:]) for x in items[:-1]) + (last,)
    det = next((k for k, w in enumerate(first.words) if w.after_determiner), None)
    if det:
        prefix = first.words[:det]
        ends_in_preposition = prefix[-1].value in lexicon.PREPOSITIONS
        for n, item in enumerate(items[1:], 1):
            starts_noun_phrase = item.words[0].after_determiner
            bare_noun = (not any(w.after_determiner for w in item.words) and len(item.words) <= 2
                         and ends_in_preposition)
            if starts_noun_phrase or bare_noun:
                out[n] = Leaf(prefix + item.words)
        return tuple(out)
    if (len(first.words) >= 2 and _numbered(first.words[-1])
            and all(len(x.words) == 1 and _numbered(x.words[0]) for x in items[1:])):
        prefix = tuple(_singular(w) for w in first.words[:-1])
        return tuple(Leaf(prefix + x.words[-1:]) for x in items)
    det = next((k for k, w in enumerate(last.words) if w.after_determiner), None)
    # ("look around or look at the object": a verb with its own preposition keeps its object)
    if (det and last.words[det - 1].value not in lexicon.PREPOSITIONS
            and all(not any(w.after_determiner for w in x.words) and len(x.words) <= 2
                    for x in items[:-1])):
        suffix = last.words[det:]
        return tuple(Leaf(x.words + suffix) for x in items[:-1]) + (last,)
    return items


def _atom_names(f: Formula) -> set[str]:
    return {g.name for g in f.subformulas() if g.op == "atom"}


_UN_ADJECTIVES = frozenset({"unlit", "unpaid", "unsafe", "unseen", "unread", "unsent",
                            "unknown", "unfit", "unsigned", "unsaved", "unverified",
                            "unconfirmed", "unapproved", "unauthorized", "unauthorised",
                            "unauthenticated", "unresolved", "unanswered", "unacknowledged",
                            "unassigned", "unencrypted", "unprocessed", "unreviewed",
                            "unchecked", "unvalidated", "untested", "unreported", "unavailable",
                            "unhealthy", "unstable", "unreachable", "unattended"})


def _negated_adjective(word: str, after_copula: bool) -> bool:
    """"an unverified account", "the lantern is unlit": a state's negation; but "the package
    must be unloaded" names an action (unload), not a state that is not one."""
    word = word.lower()
    return word in _UN_ADJECTIVES or (word.startswith("un") and len(word) > 6
                                      and word.endswith("ed") and not after_copula)


def _numbered(word: Token) -> bool:
    value = str(word.value)
    return any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


def _singular(word: Token) -> Token:
    value = str(word.value)
    if len(value) > 3 and value.endswith("s") and not value.endswith("ss"):
        return replace(word, value=value[:-1])
    return word


# ---------------------------------------------------------------------------------------------
# Reading the tree as formulas

@dataclass
class _Rule:
    """A rule's formula and, for Dwyer's patterns, what scopes need to rewrite it."""

    formula: Formula
    kind: str = "other"      # universality, absence, existence, precedence, response
    p: Formula | None = None
    s: Formula | None = None


def _first_token(node) -> Token | None:
    if isinstance(node, Token):
        return node
    if isinstance(node, Leaf):
        return (node.words[0] if node.words else node.quoted or node.compare)
    if isinstance(node, Connective):
        return _first_token(node.items[0])
    if isinstance(node, Mod):
        return node.token
    if isinstance(node, Clause):
        return _first_token(node.segments[0]) if node.segments else None
    return None


class _Reader:
    """Reads the syntax tree as formulas.  Where English leaves two meanings open, ``choose``
    takes the one ``options`` names (the first by default) and records the choice, so the
    engine can read the sentence again with each other meaning."""

    def __init__(self, options: dict | None = None):
        self.atoms: list[str] = []
        self.options = options or {}
        self.consulted: dict[str, list[tuple[str, str]]] = {}
        self.kinds: list[str] = []
        self.state_trigger = False
        self.quoted: dict[str, str] = {}     # quoted atom -> the words around it
        self.trigger_atoms: set[str] = set()
        self.in_condition = False           # reading the condition of "P only if Q"

    def choose(self, key: str, choices: list[tuple[str, str]]) -> str:
        """One of ``choices`` ((value, what it means), the usual meaning first) for the open
        question ``key``."""
        self.consulted.setdefault(key, choices)
        value = self.options.get(key, choices[0][0])
        return value if any(v == value for v, _ in choices) else choices[0][0]

    def meaning(self) -> str:
        """What the choices made in this reading mean, in words."""
        parts = []
        for key, choices in self.consulted.items():
            value = self.options.get(key, choices[0][0])
            parts.extend(why for v, why in choices if v == value)
        return "; ".join(parts)

    # -- propositions
    def atom(self, words: tuple[Token, ...]) -> Formula:
        negated = [k for k, w in enumerate(words) if _negated_adjective(str(w.value),
                                                                      w.after_copula)]
        if (len(negated) == 1 and len(words) > 1
                and (words[negated[0]].after_copula
                     or (negated[0] == 0 and not any(w.after_copula for w in words)))):
            # "the lantern is unlit" is "the lantern is lit", negated (one atom for both); but
            # "wire funds to an unverified account" is a transfer, and the account not verified
            # (the grounding reads the un- word of a longer phrase)
            k = negated[0]
            positive = replace(words[k], value=str(words[k].value)[2:])
            return Not(self.atom(words[:k] + (positive,) + words[k + 1:]))
        name = "_".join(str(w.value) for w in words)
        name = re.sub(r"_+", "_", name).strip("_")
        if not name:
            raise NotUnderstood("a phrase with no words left to name an atom", words)
        if name not in self.atoms:
            self.atoms.append(name)
        return Atom(name)

    def leaf(self, leaf: Leaf) -> Formula:
        if leaf.quoted is not None:
            name = str(leaf.quoted.value)
            if not name.strip():
                raise NotUnderstood("an empty quoted atom", [leaf.quoted])
            if name not in self.atoms:
                self.atoms.append(name)
            if leaf.words:
                self.quoted.setdefault(name, "_".join(str(w.value) for w in leaf.words))
            return Atom(name)
        if leaf.compare is not None and leaf.compare.value[0] == "between":
            low, high = leaf.value.value
            path = ("path", _field_path(leaf.words) if leaf.compare.value[1] == "verb"
                    and leaf.words else "data.amount")
            within = And(Compare(path, ">=", ("const", low)),
                         Compare(path, "<=", ("const", high)))
            if leaf.compare.value[1] == "verb" or not leaf.words:
                return within
            return And(self.atom(leaf.words), within)
        if leaf.compare is not None:
            op, style = leaf.compare.value
            constant = ("const", leaf.value.value)
            if style == "verb":
                if not leaf.words:
                    raise NotUnderstood(f"“{leaf.compare.text}” needs what it compares before "
                                        "it (the amount exceeds 10000)", [leaf.compare])
                return Compare(("path", _field_path(leaf.words)), op, constant)
            amount = Compare(("path", "data.amount"), op, constant)
            return And(self.atom(leaf.words), amount) if leaf.words else amount
        return self.atom(leaf.words)

    def prop(self, node) -> Formula:
        if isinstance(node, Leaf):
            return self.leaf(node)
        items = [self.prop(x) for x in node.items]
        if node.op == "and":
            return And(*items)
        if node.op == "or":
            return Or(*items)
        if node.op == "not":
            return Not(items[0])
        if node.op == "but_not":
            return And(items[0], Not(items[1]))
        if node.op == "without":
            return And(items[0], Not(O(items[1])))
        if node.op == "since":
            # "P since the last Q": P came after the latest Q (or at all, when no Q came)
            return S(Not(items[1]), items[0])
        if node.op == "not_since":
            # "P and not Q since": Q has not come since P
            return S(Not(items[1]), items[0])
        if node.op == "already":
            # "cancel an order that has already shipped": the shipping came at or before it
            return And(items[0], O(items[1]))
        raise AssertionError(node.op)  # pragma: no cover

    # -- clauses
    def split(self, clause: Clause):
        """Props before and after ``only``, merged subject to predicate, and the modifiers."""
        before, after, only = [], [], False
        for s in clause.segments:
            if isinstance(s, Mod):
                if s.name == "ONLY":
                    only = True
            else:
                (after if only else before).append(s)
        return _merge(before), _merge(after), only, clause.mods

    def negative(self, mods: list[Mod]) -> bool:
        return sum(m.name in NEGATIONS for m in mods) % 2 == 1

    def subject(self, clause: Clause, extra: Formula | None = None) -> Formula:
        before, after, only, mods = self.split(clause)
        if after is not None:
            before = _merge([p for p in (before, after) if p is not None])
        if before is None:
            raise NotUnderstood("a rule part that names nothing", [_first_token(clause)])
        f = self.prop(before)
        return And(f, extra) if extra is not None else f

    def state(self, clause: Clause) -> Formula:
        """A clause as a condition on the current step (triggers, precedence arguments)."""
        f = self.subject(clause)
        mods = [m for m in clause.mods if m.name not in ("MODAL", "HOLD", "HAPPEN", "ONLY")]
        timing = [m for m in _timings(mods) if m.name != "ALWAYS"]
        if len(timing) > 1:
            raise NotUnderstood("two timings for one condition", [m.token for m in timing])
        if timing:
            t = timing[0]
            if t.name == "EVENTUALLY":
                f = F(f)
            elif t.name == "LATER":
                f = X(F(f))
            elif t.name == "PREVIOUSLY":
                how = self.choose("strict", [
                    ("strict", "the earlier event must be at a strictly earlier step"),
                    ("same", "the earlier event may be at the same step as the later one")])
                f = Y(O(f)) if how == "strict" else O(f)
            elif t.name == "NEXT_STEP":
                f = X(f)
            elif t.name == "nth" and 2 <= _bound(t, 2) <= 5:
                # "after three failed logins", "a second time": the Nth one, at this step
                f = And(f, Y(_past_at_least(f, _bound(t, 2) - 1)))
            elif t.name == "at_least" and _bound(t, 1) <= 5:
                # "only after at least two interviews have been logged": so many up to now
                f = _past_at_least(f, _bound(t, 1))
            else:
                raise NotUnderstood(f"“{t.token.text}” cannot qualify a condition", [t.token])
        return Not(f) if self.negative(mods) else f

    def consequent(self, clause: Clause, default: str, extra: Formula | None = None) -> Formula:
        """What a triggered obligation requires, from the trigger step.  ``default`` is the
        timing with no word for it: "now" for "whenever P, Q", "eventually" after "followed by",
        "later" for the later links of a chain."""
        message = self.in_message(clause, extra)
        if message is not None:
            return message
        before, after, only, mods = self.split(clause)
        f = self.subject(clause, extra)
        neg = self.negative(mods)
        timing = _timings(mods)
        if len(timing) > 1:
            raise NotUnderstood("two timings for one obligation", [m.token for m in timing])
        never = any(m.name == "NEVER" for m in mods)
        happen = any(m.name == "HAPPEN" for m in mods)
        if not timing and default == "next":
            if neg and never:
                # "as soon as P, stop Q" / "never Q": from that step on, or the next
                start = self.choose("after_step", [
                    ("same", "the ban starts at the step of the event"),
                    ("next", "the ban starts at the step after the event")])
                return G(Not(f)) if start == "same" else WX(G(Not(f)))
            return WX(Not(f)) if neg else X(f)
        if (not timing and default == "now" and not neg and any(m.name == "MODAL" for m in mods)
                and not any(m.name == "HOLD" for m in mods) and _names_an_action(clause)):
            # "whenever P, the agent must Q": an action the trigger calls for.
            choices = [("eventually", "the required action at that step or any later one"),
                       ("now", "the required action at that very step")]
            # while a state lasts ("whenever the light is red, the car must stop") the action
            # is due at once; an event calls for a later one (one event a step)
            when = self.choose("response", choices[::-1] if self.state_trigger else choices)
            return F(f) if when == "eventually" else f
        if (not timing and default == "now" and not neg and not mods and extra is None
                and not self.in_condition
                and _names_action_first(clause) and len(f.args) == 0 and "_" in str(f)):
            # "if a file is deleted, email the user": an instruction, due at once or later
            when = self.choose("response", [
                ("now", "the required action at that very step"),
                ("eventually", "the required action at that step or any later one")])
            return F(f) if when == "eventually" else f
        if not timing:
            if neg and never and default == "now":
                # "never push to prod when the build is red": not at such a step, or never
                # again from then on
                choices = [("ever", "never again from that step on"),
                           ("now", "not at that very step")]
                how = self.choose("never_when", choices[::-1] if self.state_trigger
                                  else choices)
                return G(Not(f)) if how == "ever" else Not(f)
            if neg:
                return G(Not(f)) if (never or happen or default != "now") else Not(f)
            if default == "eventually" or (default == "now" and happen):
                return F(f)
            if default == "later":
                return X(F(f))
            return f
        t = timing[0]
        name = t.name
        if name == "ALWAYS":
            return G(Not(f)) if neg else G(f)
        if name == "EVENTUALLY":
            return G(Not(f)) if neg else F(f)
        if name == "LATER":
            return WX(G(Not(f))) if neg else X(F(f))
        if name == "NEXT_STEP":
            return WX(Not(f)) if neg else X(f)
        if name in ("within", "within_next"):
            low = 1 if name == "within_next" else 0
            if low == 0 and default in ("now", "next", "eventually"):
                # "whenever P, Q within 3 steps": counted from P's step, or from the step after
                how = self.choose("within", [
                    ("counting", "the step of the trigger counts among the steps"),
                    ("after", "the steps are counted after the trigger's step")])
                low = 1 if how == "after" else 0
            high = _bound(t, max(low, 1) if low else 0)
            return GBounded(low, high, Not(f)) if neg else FBounded(low, high, f)
        if name == "PREVIOUSLY":
            how = self.choose("strict", [
                ("strict", "the earlier event must be at a strictly earlier step"),
                ("same", "the earlier event may be at the same step as the later one")])
            earlier = Y(O(f)) if how == "strict" else O(f)
            return Not(earlier) if neg else earlier
        if name == "AT_END":
            return F(And(Not(f) if neg else f, LAST_STEP))
        if name == "at_least" and self.in_condition and _bound(t, 1) <= 5:
            # "end a chat only if the customer has been abusive at least twice": so many up
            # to then
            earlier = _past_at_least(f, _bound(t, 1))
            return Not(earlier) if neg else earlier
        raise NotUnderstood(f"“{t.token.text}” cannot qualify what a trigger requires", [t.token])

    def in_message(self, clause: Clause, extra: Formula | None = None) -> Formula | None:
        """"the next message must include an apology": no assistant message until one that
        carries it (``!role:assistant W (role:assistant & apology)``); None for a clause that
        is not about the next or first message."""
        if not clause.has("NEXT_MESSAGE", "FIRST_MESSAGE"):
            return None
        mods = [m for m in clause.mods if m.name not in ("NEXT_MESSAGE", "FIRST_MESSAGE")]
        if _timings(mods):
            raise NotUnderstood("a timing for the next message", [m.token for m in mods])
        content = Clause([x for x in clause.segments
                          if not (isinstance(x, Mod) and x.name in ("NEXT_MESSAGE",
                                                                    "FIRST_MESSAGE"))])
        f = self.subject(content, extra)
        speaking = Atom("role:assistant")
        said = And(speaking, Not(f) if self.negative(mods) else f)
        return W(Not(speaking), said)

    def top(self, clause: Clause, extra: Formula | None = None) -> _Rule:
        """A clause that is a whole rule: "never P", "P must always hold", "P at most once"."""
        message = self.in_message(clause, extra)
        if message is not None:
            return _Rule(message)
        before, after, only, mods = self.split(clause)
        if only:
            if extra is not None:
                raise NotUnderstood("“only” inside a sequence", [m.token for m in mods
                                                               if m.name == "ONLY"])
            return self.restriction(clause, before, after)
        if (extra is None and not self.negative(mods) and _plural_subject(clause)
                and self.choose("plural", [
                    ("each", "each one needs it"),
                    ("once", "once in the session is enough")]) == "each"):
            # "abnormal lab results must be flagged to the care team": each result, flagged;
            # "refunds must be approved by a manager": each refund, approved first
            seg = clause.segments
            participle = next(x for x in seg[2:] if isinstance(x, Leaf) and x.words).words[0]
            if (str(participle.value).lower().startswith(_CHECKED_FIRST)
                    and not any(isinstance(x, Mod) and x.name != "MODAL" for x in seg)
                    and self.choose("plural_checked", [
                        ("before", "each one needs it before it (an approval, a check)"),
                        ("after", "each one needs it at that step or later")]) == "before"):
                trigger = self.prop(seg[0])
                checked = self.prop(_merge([x for x in seg[2:] if not isinstance(x, Mod)]))
                return _Rule(G(Implies(trigger, O(checked))))
            response = self.every(clause)
            if response is not None:
                return response
        if extra is None and (clause.has("EVERY") or (
                clause.has("PREVIOUSLY") and not self.negative(mods))):
            # "refunds of more than 100 must be approved first": each one, approved before
            response = self.every(clause)
            if response is not None:
                return response
        f = self.subject(clause, extra)
        neg = self.negative(mods)
        timing = _timings(mods)
        names = [m.name for m in timing]
        # "always" only stresses a count or "twice in a row".
        if len(timing) == 2 and "ALWAYS" in names and not {"EVENTUALLY", "LATER"} & set(names):
            timing = [m for m in timing if m.name != "ALWAYS"]
            names = [m.name for m in timing]
        # "before the session ends, the linter must have run at least once": "have run" only
        # says the run comes first
        if len(timing) >= 2 and "PREVIOUSLY" in names and (
                {"EVENTUALLY", "AT_END"} | COUNTS) & set(names):
            timing = [m for m in timing if m.name != "PREVIOUSLY"]
            names = [m.name for m in timing]
        # "at some point ... at least twice": the count covers the whole session
        if len(timing) == 2 and "EVENTUALLY" in names and COUNTS & set(names):
            timing = [m for m in timing if m.name != "EVENTUALLY"]
            names = [m.name for m in timing]
        if not timing:
            if neg:
                return _Rule(absence(f), "absence", p=f)
            if _permits(clause) and not clause.has("HOLD", "ALWAYS"):
                # "the agent may read files": a permission alone forbids nothing
                raise NotUnderstood("a permission (may, can) that forbids nothing: say what is "
                                    "not allowed, or when (only after ..., only if ...)",
                                    [m.token for m in clause.mods if m.name == "MODAL"])
            if clause.has("HAPPEN") or (not clause.has("HOLD") and _names_an_action(clause)):
                steps = self.actions(before, after, extra)
                if steps is not None:
                    return _Rule(steps)
                return _Rule(existence(f), "existence", p=f)
            return _Rule(universality(f), "universality", p=f)
        if len(timing) == 2 and not neg:
            if names == ["ALWAYS", "EVENTUALLY"] or names == ["ALWAYS", "LATER"]:
                return _Rule(G(F(f)))
            if names == ["EVENTUALLY", "ALWAYS"]:
                return _Rule(F(G(f)))
        if len(timing) > 1:
            raise NotUnderstood("these timings do not combine", [m.token for m in timing])
        t = timing[0]
        name = t.name
        if name == "ALWAYS":
            return (_Rule(absence(f), "absence", p=f) if neg
                    else _Rule(universality(f), "universality", p=f))
        if name == "EVENTUALLY":
            return (_Rule(absence(f), "absence", p=f) if neg
                    else _Rule(existence(f), "existence", p=f))
        if name == "LATER":
            return _Rule(absence(f), "absence", p=f) if neg else _Rule(X(F(f)))
        if name == "NEXT_STEP":
            return _Rule(WX(Not(f)) if neg else X(f))
        if name == "IN_A_ROW":
            twice = And(f, X(f))
            return _Rule(G(Not(twice)) if neg else F(twice))
        if name in ("within", "within_next"):
            low = 1 if name == "within_next" else 0
            high = _bound(t, low)
            return _Rule(GBounded(low, high, Not(f)) if neg else FBounded(low, high, f))
        if name in COUNTS:
            return _Rule(_count(f, t, neg))
        if name == "AT_END":
            return _Rule(F(And(Not(f) if neg else f, LAST_STEP)))
        if name == "AT_START":
            return _Rule(Not(f) if neg else f)
        raise NotUnderstood(f"“{t.token.text}” needs something to refer to (a trigger or an "
                            "event)", [t.token])

    def actions(self, before, after, extra) -> Formula | None:
        """"Take the key and unlock the door": two actions are two steps (one event a step),
        in the order written, or in any order; None when the clause is not such a list."""
        node = after if before is None else before
        if (extra is not None or after is not None or not isinstance(node, Connective)
                or node.op != "and" or len(node.items) > 4
                or not all(isinstance(x, Leaf) and x.plain and x.words
                           and not x.words[0].after_copula for x in node.items)):
            return None
        items = [self.leaf(x) for x in node.items]
        how = self.choose("and", [("sequence", "the actions one after the other, in this order"),
                                  ("any", "each action at some step, in any order")])
        if how == "any":
            return And(*[F(x) for x in items])
        f = items[-1]
        for x in reversed(items[:-1]):
            f = And(x, X(F(f)))
        return F(f)

    def every(self, clause: Clause) -> _Rule | None:
        """"Every request must eventually be answered": a response from the subject to the
        predicate (None when the clause has no subject and predicate to tell apart)."""
        segments = clause.segments
        every = next((k for k, x in enumerate(segments)
                      if isinstance(x, Mod) and x.name == "EVERY"), 0)
        if every and (any(isinstance(x, Mod) and x.name != "EVERY" for x in segments[:every])
                and every + 1 < len(segments)
                and all(not isinstance(x, Mod) for x in segments[every + 1:])):
            # "the agent must respond to every user message": each message calls for a reply
            trigger = self.prop(_merge(list(segments[every + 1:])))
            when = self.choose("every_object", [
                ("after", "the action answers each of them, at that step or later"),
                ("before", "the action comes before each of them (a review, an approval)")])
            if when == "before":
                return _Rule(G(Implies(trigger, O(self.subject(Clause(list(
                    segments[:every])))))))
            required = self.consequent(Clause(list(segments[:every])), "now")
            f = G(Implies(trigger, required))
            if required.op == "F":
                return _Rule(f, "response", p=trigger, s=required.args[0])
            return _Rule(f)
        split = next((k for k, x in enumerate(segments)
                      if isinstance(x, Mod) and x.name != "EVERY"), None)
        if split is None:
            return None
        subject = [x for x in segments[:split] if not isinstance(x, Mod)]
        rest = segments[split:]
        if not subject or not any(not isinstance(x, Mod) for x in rest):
            return None
        predicate = Clause(list(rest))
        trigger = self.prop(_merge(subject))
        default = "eventually" if _names_action_first(predicate) else "now"
        required = self.consequent(predicate, default)
        f = G(Implies(trigger, required))
        if required.op == "F":
            return _Rule(f, "response", p=trigger, s=required.args[0])
        return _Rule(f)

    def restriction(self, clause: Clause, action_node, places_node) -> _Rule:
        """"P only in L1 or L2", "you may only go to the kitchen or hallway": every P is one of
        the allowed ones.  A list joined by "and" is read as the allowed alternatives."""
        only = next(m.token for m in clause.mods if m.name == "ONLY")
        if places_node is None:
            raise NotUnderstood("“only” with nothing after it", [only])
        places = _alternatives(places_node)
        if places is None:
            raise NotUnderstood("after “only”, a list of places or objects", [only])
        if action_node is None:
            words = places[0].words
            k = next((k for k, w in enumerate(words) if k and w.value in lexicon.PREPOSITIONS),
                     None)
            if k is None:
                raise NotUnderstood("“only” needs what it restricts (only go to the kitchen)",
                                    [only])
            action = self.atom(words[:k])
            allowed = [self.leaf(p) for p in places]
        else:
            if not (isinstance(action_node, Leaf) and action_node.plain):
                raise NotUnderstood("“only” restricts one action", [only])
            action = self.atom(action_node.words)
            allowed = [self.leaf(Leaf(action_node.words + p.words)) for p in places]
        neg = self.negative(clause.mods)
        if neg or any(m.name in TEMPORAL - {"ALWAYS"} for m in clause.mods):
            raise NotUnderstood("“only” with another timing or a negation", [only])
        return _Rule(G(Implies(action, Or(*allowed))))

    # -- constructions
    def read(self, nodes) -> list[Formula]:
        """The formulas of a text's sentences (their pattern kinds kept for naming)."""
        rules = [self.rule(n) for n in nodes]
        self.kinds = [r.kind for r in rules]
        return [r.formula for r in rules]

    def rule(self, node) -> _Rule:
        if isinstance(node, Simple):
            return self.top(node.clause)
        if isinstance(node, AlwaysRule):
            return self.rule(node.rule)
        if isinstance(node, Conditional):
            return self.conditional(node)
        if isinstance(node, Chain):
            return self.chain(node)
        if isinstance(node, Precedence):
            return self.precedence(node)
        if isinstance(node, Until):
            return self.top_until(node)
        if isinstance(node, Rules):
            rules = _share_subject(node.rules)
            if (len(rules) == 2 and isinstance(rules[0], Conditional)
                    and rules[0].style == "first"
                    and isinstance(rules[1], (Simple, Precedence))
                    and self.choose("shared_trigger", [
                        ("shared", "the condition governs both parts of the sentence"),
                        ("apart", "the part after “and” is a rule of its own")]) == "shared"):
                # "if the score exceeds 0.8, the claim must be referred and must not be
                # paid": both are what the condition calls for
                conditional = self.conditional(rules[0]).formula
                condition, required = conditional.args[0].args
                second = (self.obligation(rules[1]) if isinstance(rules[1], Precedence)
                          else self.consequent(rules[1].clause, "now"))
                return _Rule(G(Implies(condition, And(required, second))))
            return _Rule(And(*[self.rule(r).formula for r in rules]))
        if isinstance(node, Scoped):
            return self.scoped(node)
        if isinstance(node, Guarded):
            return self.guarded(node)
        if isinstance(node, UntilFirst):
            return self.until_first(node)
        raise AssertionError(type(node))  # pragma: no cover

    def _simple_rules(self, node, keyword: str) -> list[Simple]:
        rules = node.rules if isinstance(node, Rules) else [node]
        rules = _share_subject(rules)
        for r in rules:
            if not isinstance(r, Simple):
                raise NotUnderstood(f"after “{keyword}”, a plain rule (never Q, Q must hold)",
                                    [_first_token(getattr(r, "clause", None))])
        return rules

    def now(self, clause: Clause) -> Formula:
        """What a clause requires at the current step ("While P, never Q": not Q while P)."""
        segments = []
        for x in clause.segments:
            if isinstance(x, Mod) and x.name in ("ALWAYS", "HAPPEN", "EVERY"):
                continue
            if isinstance(x, Mod) and x.name == "NEVER":
                x = Mod("NOT", x.token)
            segments.append(x)
        return self.consequent(Clause(segments), "now")

    def guarded(self, node: Guarded) -> _Rule:
        if node.kind == "while":
            condition = And(*[self.state(c) for c in node.condition])
        else:
            (clause,) = node.condition
            exception = self.state(clause)
            action = _names_action_first(clause)
            choices = [("now", "the exception must hold at that very step"),
                       ("before", "the exception must have happened at that step or before")]
            how = self.choose("unless", choices[::-1] if action else choices)
            condition = Not(exception) if how == "now" else Not(O(exception))
        rules = self._simple_rules(node.rules, node.kind)
        return _Rule(And(*[G(Implies(condition, self.now(r.clause))) for r in rules]))

    def until_first(self, node: UntilFirst) -> _Rule:
        release = self.state(node.condition)
        out = []
        for r in self._simple_rules(node.rules, "until"):
            if self.negative(r.clause.mods):
                out.append(self._precedence([release], self.subject(r.clause)).formula)
            else:
                out.append(W(self.now(r.clause), release))
        return _Rule(And(*out))

    def obligation(self, node, default: str = "now") -> Formula:
        """The consequent of a conditional."""
        if isinstance(node, Until):
            left, right = self.state(node.left), self.state(node.right)
            if left.op == "not" and not node.after:
                # "if P, do not Q until R": R may never come (the ban then lasts), or must come
                how = self.choose("until", [
                    ("strong", "the releasing event must come"),
                    ("weak", "the ban lasts for the rest of the session if the releasing "
                             "event never comes")])
                ban = U(left, right) if how == "strong" else W(left, right)
            else:
                ban = U(left, And(right, left)) if node.after else U(left, right)
            if self.trigger_atoms & _atom_names(right):
                # "if a test run fails, do not commit until the tests are re-run": the release
                # is a later occurrence of the trigger's own event, not the trigger itself
                return WX(ban) if ban.op == "W" else X(ban)
            return ban
        if isinstance(node, Precedence):
            # "if the request is ambiguous, the agent asks a clarifying question before doing
            # any searching": from the trigger on, no search until the question
            return self.precedence(node).formula
        parts, links = node.parts, node.links
        rest = self.chain_tail(parts[1:], links) if len(parts) > 1 else None
        return self.consequent(parts[0], default, rest)

    def chain_tail(self, parts: list[Clause], links: list[str], first_link: bool = False):
        """What the chain still requires at the step of the element before ``parts[0]``."""
        part, link = parts[0], links[0]
        inner = self.chain_tail(parts[1:], links[1:]) if len(parts) > 1 else None
        if any(m.name in TEMPORAL for m in part.mods):
            return self.consequent(part, "now", inner)
        if link == "followed_next":
            body = self.subject(part, inner)
            return WX(Not(body)) if self.negative(part.mods) else X(body)
        default = "eventually" if (link == "followed" and first_link) else "later"
        return self.consequent(part, default, inner)

    def conditional(self, node: Conditional) -> _Rule:
        trigger_parts, consequent = node.trigger, node.consequent
        if node.style == "last":
            first = consequent.parts[0] if isinstance(consequent, Sequence) else None
            if first is not None and first.has("ONLY") and len(consequent.parts) == 1:
                # "only P if Q": P is the trigger, Q what it requires.
                condition = self.state(first)
                required = And(*[self.consequent(c, "now") for c in trigger_parts])
                return _Rule(G(Implies(condition, required)))
        if node.style == "only_if":
            condition = self.state(consequent)
            self.in_condition = True
            required = And(*[self.consequent(c, "now") for c in trigger_parts])
            self.in_condition = False
            if not all(_describes_state(c) for c in trigger_parts) and required.op != "not":
                # "delete files only if the user approved": the approval may be earlier
                choices = [("now", "the condition at that very step"),
                           ("before", "the condition at that step or before it")]
                if self.choose("only_if", choices) == "before":
                    required = O(required)
            return _Rule(G(Implies(condition, required)))
        condition = And(*[self.state(c) for c in trigger_parts])
        self.trigger_atoms = {a.name for a in (condition.args if condition.op == "and"
                                               else (condition,)) if a.op == "atom"}
        self.state_trigger = all(_describes_state(c) for c in trigger_parts)
        required = self.obligation(consequent, node.timing)
        f = G(Implies(condition, required))
        if required.op == "F":
            return _Rule(f, "response", p=condition, s=required.args[0])
        return _Rule(f)

    def chain(self, node: Chain) -> _Rule:
        head = node.parts[0]
        if (head.has("MODAL") and not head.has("NEVER", "NOT", "FORBIDDEN")
                and node.links[0] == "then" and _names_an_action(head)):
            # "the agent must open a ticket and then notify the customer": both, in order.
            rest = self.chain_tail(node.parts[1:], node.links)
            return _Rule(F(And(self.subject(head), rest)))
        if head.has("EVENTUALLY", "LATER"):
            # "at some point P, followed by Q, and then R": one strictly later than the other.
            rest = self.chain_tail(node.parts[1:], node.links)
            return self.top(head, rest)
        if head.has("NEVER", "NOT", "FORBIDDEN"):
            raise NotUnderstood("a negated chain", [m.token for m in head.mods
                                                   if m.name in NEGATIONS])
        condition = self.state(head)
        required = self.chain_tail(node.parts[1:], node.links, first_link=True)
        if not head.mods and node.links[0] == "then":
            # "open a ticket and then notify the customer": each time, or the two steps once
            how = self.choose("chain", [
                ("every", "every time the first happens, the next must follow"),
                ("once", "the steps must happen, in this order, at least once")])
            if how == "once":
                return _Rule(F(And(condition, required)))
        f = G(Implies(condition, required))
        if required.op == "F":
            return _Rule(f, "response", p=condition, s=required.args[0])
        return _Rule(f)

    def precedence(self, node: Precedence) -> _Rule:
        kind = node.kind
        if kind == "before" and len(node.first) == 1 and node.first[0].has("ONLY"):
            # "tuition refunds may only be processed before the census date": none after it
            effect = self.state(Clause([x for x in node.first[0].segments
                                        if not (isinstance(x, Mod) and x.name == "ONLY")]))
            return _Rule(G(Implies(effect, Not(O(self.state(node.second))))))
        if kind == "before" and node.second.has("EVERY") and len(node.first) == 1:
            # "run the linter before every commit": each commit has its own run, since the
            # commit before it; or (the author picks) some run at any time before it
            cause, effect = self.state(node.first[0]), self.state(Clause(
                [x for x in node.second.segments if not (isinstance(x, Mod)
                                                         and x.name == "EVERY")]))
            how = self.choose("before_each", [
                ("since", "each one needs its own, since the one before it"),
                ("strict", "one at any earlier step is enough"),
                ("once", "one at that step or any earlier one is enough")])
            if how == "since":
                return _Rule(G(Implies(effect, Y(S(Not(effect), cause)))))
            return _Rule(G(Implies(effect, Y(O(cause)) if how == "strict" else O(cause))))
        if kind == "before":
            # "verified at some point before money is sent": "at some point" adds nothing
            steps = [Clause([x for x in c.segments
                             if not (isinstance(x, Mod) and x.name == "EVENTUALLY")])
                     for c in node.first]
            target = self.state(node.second)
            if node.second.has("FORBIDDEN"):
                # "putting Q before measuring P is a violation": the verdict closes the
                # sentence but is about the whole of it.
                target = self.state(Clause([x for x in node.second.segments
                                            if not (isinstance(x, Mod) and x.name == "FORBIDDEN")]))
                if len(steps) != 1:
                    raise NotUnderstood("a sequence that is forbidden before something",
                                        [_first_token(steps[1])])
                effect = self.state(steps[0])
                return self._precedence([target], effect)
            if len(steps) == 1:
                first = self.state(steps[0])
                if first.op == "not":
                    # "no Q before P", "Q must not happen before P"
                    return self._precedence([target], first.args[0])
                if first.op == "and":
                    # "greet and identify yourself before X": each of them before X.
                    return _Rule(And(*[precedence(c, target) for c in first.args]))
            return self._precedence([self.state(s) for s in steps], target)
        if kind == "only_after":
            return self._precedence([self.state(s) for s in node.second], self.state(node.first))
        if kind == "precedes":
            return self._precedence([self.state(node.first)], self.state(node.second))
        if kind == "preceded_by":
            return self._precedence([self.state(s) for s in node.second], self.state(node.first))
        if kind == "requires":
            # "transfers above 5000 require a second approval": each needs one before it
            effect, cause = self.state(node.first), self.state(node.second)
            if cause.op == "Y" and cause.args[0].op == "O":
                # "refunds need a sign-off beforehand": the earlier-ness is the requirement's
                cause = cause.args[0].args[0]
            how = self.choose("strict", [
                ("same", "the earlier event may be at the same step as the later one"),
                ("strict", "the earlier event must be at a strictly earlier step")])
            # "unlocking requires both a verified identity and a completed challenge": each
            # of them before it (one event a step: rarely both at one step)
            causes = cause.args if cause.op == "and" and all(
                c.op in ("atom", "not") for c in cause.args) else (cause,)
            earlier = And(*[c if c.op == "S" else O(c) if how == "same" else Y(O(c))
                            for c in causes])
            return _Rule(G(Implies(effect, earlier)))
        if kind == "requires_before":
            # the subject qualifies the event it must come before: the payout of such a claim
            subject, event = node.first
            effect = And(self.state(subject), self.state(event))
            cause = self.state(node.second)
            how = self.choose("strict", [
                ("same", "the earlier event may be at the same step as the later one"),
                ("strict", "the earlier event must be at a strictly earlier step")])
            return _Rule(G(Implies(effect, O(cause) if how == "same" else Y(O(cause)))))
        if kind == "only_after_before":
            effect = self.state(node.first)
            after_steps, before = node.second
            earlier = And(*[O(self.state(x)) for x in after_steps])
            return _Rule(G(Implies(effect, And(earlier, Not(O(self.state(before)))))))
        if kind == "preceded_by_prev":
            return _Rule(G(Implies(self.state(node.first), Y(self.state(node.second)))))
        raise AssertionError(kind)  # pragma: no cover

    def _precedence(self, causes: list[Formula], effect: Formula) -> _Rule:
        if len(causes) == 1 and causes[0].op == "S":
            # "the tests must have passed since the last edit before each deploy": a condition
            # on what came before, read at every deploy
            return _Rule(G(Implies(effect, causes[0])))
        if len(causes) == 1:
            how = self.choose("strict", [
                ("same", "the earlier event may be at the same step as the later one"),
                ("strict", "the earlier event must be at a strictly earlier step")])
            if how == "strict":
                return _Rule(W(Not(effect), And(causes[0], Not(effect))))
            return _Rule(precedence(causes[0], effect), "precedence", p=effect, s=causes[0])
        return _Rule(_precedence_chain(causes, effect))

    def top_until(self, node: Until) -> _Rule:
        left, right = self.state(node.left), self.state(node.right)
        if left.op == "not":
            # "do not ship until paid": the ban lasts until payment, which need not come.
            if node.after:
                return _Rule(W(left, And(right, left)))
            return _Rule(precedence(right, left.args[0]), "precedence", p=left.args[0], s=right)
        if node.after:
            raise NotUnderstood("“until after” is read only with a prohibition (do not P until "
                                "after Q)", [_first_token(node.right)])
        # "the light must stay on until the door is closed": the door may never close (the
        # state then lasts), or must close; a lasting state ("stay", "remain") reads weak first
        choices = [("strong", "the releasing event must come"),
                   ("weak", "the state lasts for the rest of the session if the releasing "
                            "event never comes")]
        how = self.choose("until_top", choices[::-1] if node.left.has("HOLD") else choices)
        return _Rule(U(left, right) if how == "strong" else W(left, right))

    def scoped(self, node: Scoped) -> _Rule:
        scope = node.scope
        rule_node = node.rule
        if scope.kind == "global":
            return self.rule(rule_node)
        if (scope.kind == "before" and isinstance(rule_node, Simple)
                and rule_node.clause.has("PREVIOUSLY")
                and not self.negative(rule_node.clause.mods)):
            # "before measuring, the thermometer must have been picked up": precedence
            clause = Clause([x for x in rule_node.clause.segments
                             if not (isinstance(x, Mod) and x.name == "PREVIOUSLY")])
            return self._precedence([self.subject(clause)], self.state(scope.args[0]))
        if (scope.kind == "after" and isinstance(rule_node, Simple)
                and (rule_node.clause.has("ONLY") or (_permits(rule_node.clause)
                                                      and not self.negative(
                                                          rule_node.clause.mods)))):
            # "after the user is authenticated, the agent may read files": not before
            # "you may only ship after payment": precedence, not a scope.
            effect = self.subject(rule_node.clause)
            return self._precedence([self.state(scope.args[0])], effect)
        inner = self.rule(rule_node)
        args = [self.state(a) for a in scope.args]
        if scope.kind == "after":
            (q,) = args
            which = self.choose("after", [("every", "from every occurrence of the event on"),
                                          ("first", "from the first occurrence of the event on")])
            body = inner.formula
            if inner.kind == "absence":
                # "once the game is over, no further moves": the ban may start at that step
                # or at the next one
                start = self.choose("after_step", [
                    ("same", "the ban starts at the step of the event"),
                    ("next", "the ban starts at the step after the event")])
                if start == "next":
                    body = WX(body)
            if which == "every":
                return _Rule(G(Implies(q, body)))
            return _Rule(W(Not(q), And(q, body)))
        if inner.kind == "other":
            raise NotUnderstood(f"a “{scope.token.text if scope.token else scope.kind}” scope on "
                                "a rule that is not one of the scoped patterns (never, always, "
                                "eventually, precedence, response)", [scope.token])
        kind = scope.kind
        if kind == "before":
            reading = self.choose("before", [
                ("until", "up to that event, whether or not it ever happens"),
                ("dwyer", "only in sessions where that event happens")])
            kind = "before_until" if reading == "until" else "before"
        if kind == "between" and inner.kind != "existence":
            reading = self.choose("between", [
                ("until", "up to the closing event, whether or not it comes"),
                ("dwyer", "only in stretches that the closing event ends")])
            kind = "after_until" if reading == "until" else "between"
        return _Rule(_scoped(inner, kind, args))


def _share_subject(rules: list) -> list:
    """"The robot must reach the goal and never hit an obstacle": a rule with no subject of its
    own takes the subject of the rule before it."""
    out = list(rules)
    for k in range(1, len(out)):
        before, this = out[k - 1], out[k]
        if not (isinstance(before, Simple) and isinstance(this, Simple)):
            continue
        segments = before.clause.segments
        first_mod = next((j for j, x in enumerate(segments) if isinstance(x, Mod)), 0)
        subject = [x for x in segments[:first_mod]]
        if subject and isinstance(this.clause.segments[0], Mod):
            out[k] = Simple(Clause(subject + this.clause.segments))
    return out


def _merge(props: list):
    """Subject and predicate as one proposition: "the color" + "red" -> color_red; a shared
    subject or predicate goes to every item of a list ("package1 or package2 is delivered")."""
    if not props:
        return None
    merged = props[0]
    for nxt in props[1:]:
        if isinstance(merged, Leaf) and merged.plain:
            merged = _map_leaves(nxt, lambda leaf, w=merged.words: replace(
                leaf, words=w + leaf.words), subject=True)
        elif isinstance(nxt, Leaf) and nxt.plain:
            merged = _map_leaves(merged, lambda leaf, w=nxt.words: _extend(leaf, w))
        elif isinstance(merged, Leaf) and merged.quoted is not None:
            continue  # a quoted atom is named already; words after it only describe it
        else:
            raise NotUnderstood("cannot tell how these two phrases combine",
                                [_first_token(merged), _first_token(nxt)])
    return merged


def _extend(leaf: Leaf, words: tuple) -> Leaf:
    if leaf.compare is not None and leaf.compare.value[1] == "prep":
        # "payments above 10000 must never be made": the words name the event compared
        return replace(leaf, words=leaf.words + words)
    if leaf.compare is not None:
        raise NotUnderstood("words after a comparison", words)
    if leaf.quoted is not None:
        return leaf
    return replace(leaf, words=leaf.words + words)


def _map_leaves(node, fn, subject: bool = False):
    """``fn`` applied to every phrase; a subject does not reach the object of "without"
    ("a refund must never be issued without manager approval")."""
    if isinstance(node, Leaf):
        return fn(node)
    # nor the event of "since" ("the tests have passed since code was edited": the code)
    items = tuple(x if (node.op in ("without", "since", "not_since") and k == 1
                        and (subject or node.op != "without"))
                  else _map_leaves(x, fn, subject) for k, x in enumerate(node.items))
    return Connective(node.op, items, node.token)


def _alternatives(node) -> list[Leaf] | None:
    if isinstance(node, Leaf):
        return [node] if node.plain else None
    if node.op in ("and", "or"):
        out = []
        for item in node.items:
            sub = _alternatives(item)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def _field_path(words: tuple[Token, ...]) -> str:
    if len(words) == 1 and "." in str(words[0].value):
        return str(words[0].value)
    return "data." + "_".join(str(w.value) for w in words)


# Participles of what comes before the thing checked: "refunds must be approved".
_CHECKED_FIRST = ("approv", "authori", "verifi", "review", "signed", "checked", "confirm",
                  "clear", "vetted", "screened", "validat", "cleared", "permitted", "allowed")


def _plural_subject(clause: Clause) -> bool:
    """"Refunds must be approved", "abnormal lab results must be flagged": a plural noun
    subject (each one) before a modal and a participle naming something else done to it."""
    seg = clause.segments
    if (len(seg) < 3 or not isinstance(seg[0], Leaf) or seg[0].quoted is not None
            or not seg[0].words
            or not isinstance(seg[1], Mod) or seg[1].name != "MODAL"
            or any(isinstance(x, Mod) and x.name not in ("MODAL", "EVENTUALLY", "within",
                                                        "within_next", "NEXT_STEP", "LATER",
                                                        "PREVIOUSLY")
                   for x in seg[1:])):
        return False
    last = str(seg[0].words[-1].value).lower()
    predicate = next((x for x in seg[2:] if isinstance(x, Leaf) and x.words), None)
    return (last.endswith("s") and not last.endswith(("ss", "us", "is")) and len(last) > 3
            and predicate is not None and predicate.words[0].after_copula
            and _is_participle(predicate.words[0]))


def _names_action_first(clause: Clause) -> bool:
    """Whether a predicate names an action ("greet the customer", "be answered") rather than a
    state ("be free", "be at the location"): a verb with no copula before it, or a past
    participle after one."""
    leaf = next((x for x in clause.segments if not isinstance(x, Mod)), None)
    while isinstance(leaf, Connective):
        leaf = leaf.items[0]
    if not isinstance(leaf, Leaf) or not leaf.plain or not leaf.words:
        return False
    word = leaf.words[0]
    if not word.after_copula:
        return not word.after_determiner and not _numbered(word)
    value = str(word.value)
    return (len(value) > 4 and value.endswith("ed")) or value in lexicon.IRREGULAR_PARTICIPLES


def _is_participle(word: Token) -> bool:
    value = str(word.value)
    return (len(value) > 4 and value.endswith("ed")) or value in lexicon.IRREGULAR_PARTICIPLES


def _describes_state(clause: Clause) -> bool:
    """A condition that describes a state ("the light is red", "the amount exceeds 10000"),
    not an event ("a file is deleted", "the user asks for a refund")."""
    for leaf in clause.segments:
        while isinstance(leaf, Connective):
            leaf = leaf.items[0]
        if not isinstance(leaf, Leaf):
            continue
        if leaf.compare is not None:
            return True
        copula = next((w for w in leaf.words if w.after_copula), None)
        if copula is not None:
            return not _is_participle(copula)
        return False
    return False


_PERMISSIONS = frozenset({"may", "can", "could", "is allowed to", "are allowed to",
                          "is permitted to", "are permitted to", "is allowed", "are allowed",
                          "is permitted", "are permitted"})


def _permits(clause: Clause) -> bool:
    """Whether the clause's modal only permits ("may", "can", "is allowed to")."""
    modals = [m for m in clause.mods if m.name == "MODAL"]
    return bool(modals) and all(m.token.text.lower() in _PERMISSIONS for m in modals)


def _names_an_action(clause: Clause) -> bool:
    """The predicate of "S must P" (what follows the first modifier) names an action."""
    segments = clause.segments
    first_mod = next((k for k, x in enumerate(segments) if isinstance(x, Mod)), None)
    if first_mod is None:
        return False
    return _names_action_first(Clause(segments[first_mod:]))


def _count(f: Formula, mod: Mod, negative: bool) -> Formula:
    """"at most k times", "at least k", "exactly k", "more than k", "fewer than k", or their
    negation ("never more than once" is at most once)."""
    k = mod.number
    if not isinstance(k, int) or not 0 <= k <= MAX_COUNT:
        raise NotUnderstood(f"a count from 0 to {MAX_COUNT} times", [mod.token])
    low, high = {"at_most": (0, k), "at_least": (k, None), "exactly": (k, k),
                 "more_than": (k + 1, None), "fewer_than": (0, k - 1)}[mod.name]
    if negative:
        if low > 0 and high is not None:
            raise NotUnderstood(f"a negated exact count (“{mod.token.text}”)", [mod.token])
        low, high = (high + 1, None) if high is not None else (0, low - 1)
    if high is not None and high < 0:
        raise NotUnderstood("a count below zero", [mod.token])
    parts = []
    if low > 0:
        parts.append(_at_least(f, low))
    if high is not None:
        parts.append(_at_most(f, high))
    return And(*parts)


def _bound(mod: Mod, low: int) -> int:
    k = mod.number
    if not isinstance(k, int) or k < low or k > MAX_BOUND:
        raise NotUnderstood(f"a number of steps from {low} to {MAX_BOUND}", [mod.token])
    return k


def _past_at_least(f: Formula, k: int) -> Formula:
    """``f`` at ``k`` different steps up to now: ``O (f & Y O f)`` for two."""
    g = O(f)
    for _ in range(k - 1):
        g = O(And(f, Y(g)))
    return g


def _at_most(f: Formula, k: int) -> Formula:
    """At most ``k`` steps where ``f`` holds: none until the first, then at most k-1 after it."""
    if k == 1:
        return at_most_once(f)
    if k == 0:
        return G(Not(f))
    return W(Not(f), And(f, WX(_at_most(f, k - 1))))


def _at_least(f: Formula, k: int) -> Formula:
    if k <= 0:
        return fm.TRUE
    if k == 1:
        return F(f)
    return F(And(f, X(_at_least(f, k - 1))))


def _precedence_chain(causes: list[Formula], effect: Formula) -> Formula:
    """``effect`` only once ``causes`` have happened in this order, each strictly after the
    previous; the last may share the step of ``effect``, as in single precedence."""
    if len(causes) == 1:
        return precedence(causes[0], effect)
    first, rest = causes[0], causes[1:]
    return W(Not(effect), And(first, Not(effect), X(_precedence_chain(rest, effect))))


def _scoped(rule: _Rule, kind: str, args: list[Formula]) -> Formula:
    """Dwyer et al.'s pattern formulas for the scopes before R, between Q and R and after Q
    until R, written for LTLf (G vacuous and F, U strong at the end of the session).  ``P`` is
    the pattern's proposition, ``S`` the cause (precedence) or the answer (response)."""
    p, s = rule.p, rule.s
    if kind == "before_until":
        # "Before R, ...": up to R, whether or not R ever comes ("not until then").
        (r,) = args
        if rule.kind == "absence":
            return W(Not(p), r)
        if rule.kind == "universality":
            return W(p, r)
        if rule.kind == "existence":
            return W(Not(r), p)
        if rule.kind == "precedence":
            return W(Not(p), Or(s, r))
        if rule.kind == "response":
            return W(Implies(p, U(Not(r), And(s, Not(r)))), r)
    if kind == "before":
        (r,) = args
        if rule.kind == "absence":
            return Implies(F(r), U(Not(p), r))
        if rule.kind == "universality":
            return Implies(F(r), U(p, r))
        if rule.kind == "existence":
            return W(Not(r), And(p, Not(r)))
        if rule.kind == "precedence":
            return Implies(F(r), U(Not(p), Or(s, r)))
        if rule.kind == "response":
            return Implies(F(r), U(Implies(p, U(Not(r), And(s, Not(r)))), r))
    opened = And(args[0], Not(args[1])) if kind in ("between", "after_until") else None
    if kind == "between":
        q, r = args
        closed = And(opened, F(r))
        if rule.kind == "absence":
            return G(Implies(closed, U(Not(p), r)))
        if rule.kind == "universality":
            return G(Implies(closed, U(p, r)))
        if rule.kind == "existence":
            return G(Implies(opened, W(Not(r), And(p, Not(r)))))
        if rule.kind == "precedence":
            return G(Implies(closed, U(Not(p), Or(s, r))))
        if rule.kind == "response":
            return G(Implies(closed, U(Implies(p, U(Not(r), And(s, Not(r)))), r)))
    if kind == "after_until":
        q, r = args
        if rule.kind == "absence":
            return G(Implies(opened, W(Not(p), r)))
        if rule.kind == "universality":
            return G(Implies(opened, W(p, r)))
        if rule.kind == "existence":
            return G(Implies(opened, U(Not(r), And(p, Not(r)))))
        if rule.kind == "precedence":
            return G(Implies(opened, W(Not(p), Or(s, r))))
        if rule.kind == "response":
            return G(Implies(opened, W(Implies(p, U(Not(r), And(s, Not(r)))), r)))
    raise AssertionError((kind, rule.kind))  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# The engine

class OfflineFormaliser:
    """The grammar-based engine: deterministic, instant, no model."""

    name = "offline"

    def formalise(self, english: str, vocabulary=None) -> Formalisation:
        if not isinstance(english, str):
            raise TypeError("formalise() takes the English text of a rule")
        if not english.strip():
            return self._fail("there is no rule to read: the text is empty")
        if len(english) > MAX_TEXT_LENGTH:
            return self._fail(f"the text is {len(english)} characters long; the offline "
                              f"formaliser reads rules of up to {MAX_TEXT_LENGTH}")
        tokens = lex(english)
        strays = [t for t in tokens if t.kind == "UNPLACEABLE"]
        if strays:
            return self._fail("could not place " + _quote_words(strays) + ": the offline grammar "
                              "has no reading for " + ("it" if len(strays) == 1 else "them"),
                              strays)
        if not any(t.kind not in ("DROP", "SEP", "COMMA") for t in tokens):
            return self._fail("there is no rule to read: only filler words", [])
        canonical, at = _canonical(tokens)
        summary = False
        try:
            tree = _parser().parse(canonical)
        except UnexpectedInput as exc:
            # "Take the key and unlock the door.": an instruction is an obligation; "Users
            # shouldn't be left waiting: a reply is expected within 4 steps of each message":
            # the words before the colon sum up the rule the rest states
            for variant, is_summary in ((_as_imperative(tokens), False),
                                        (_colon_requires(tokens), False),
                                        (_after_colon(tokens), True),
                                        (_after_permission(tokens), True)):
                if variant is None:
                    continue
                try:
                    canonical_variant, at_variant = _canonical(variant)
                    tree = _parser().parse(canonical_variant)
                except UnexpectedInput:
                    continue
                tokens, canonical, at, summary = (variant, canonical_variant, at_variant,
                                                  is_summary)
                break
            else:
                return self._syntax_failure(tokens, canonical, at, exc)
        try:
            nodes = _Tree(at, tokens).transform(tree)
            reader = _Reader()
            formulas = reader.read(nodes)
        except VisitError as exc:
            if isinstance(exc.orig_exc, NotUnderstood):
                return self._fail(exc.orig_exc.message, exc.orig_exc.tokens)
            raise
        except NotUnderstood as exc:
            return self._fail(exc.message, exc.tokens)
        read = [(And(*formulas), reader)] + _other_readings(nodes, reader)
        answer = _answer(read, vocabulary, self.name, english)
        lost = _numbers_no_reading_uses(tokens, answer)
        if lost:
            # "no bid priced above the market cap of 1,000": a reading without the 1,000 has
            # lost the limit the rule is about
            return self._fail("could not place " + _quote_words(lost) + ": no reading of the "
                              "rule uses " + ("it" if len(lost) == 1 else "them") + "; put the "
                              "number right after the comparison (above 1,000)", lost)
        if summary and answer.ok:
            said = ("the words before the colon are read as a summary of the rule after it"
                    if any(t.text == ":" for t in tokens) else
                    "the permission before “but” is read as forbidding nothing")
            answer = replace(answer, readings=tuple(
                replace(r, why="; ".join(x for x in (said, r.why) if x))
                for r in answer.readings))
        unsure = [m.phrase for m in answer.mapping if not m.grounded
                  and len(m.phrase.split()) >= MAX_INVENTED_WORDS]
        if vocabulary is not None and (getattr(vocabulary, "atoms", None) or
                                       getattr(vocabulary, "paths", None)) and unsure:
            # A long phrase that nothing in the logs matches is most often a clause the grammar
            # did not take apart ("reveal anyone's salary in a message to the user"): a guess
            # the author would have to catch, so the engine says where it is stuck instead.
            words = [t for t in tokens if t.kind == "WORD" and str(t.value) in
                     unsure[0].split()]
            return self._fail(f"could not tell what “{unsure[0]}” names: nothing in this "
                              "workspace's logs matches it, and it is too long to be one "
                              "event or state; split it, or name the atom in quotes", words)
        return answer

    def _fail(self, message: str, tokens=()) -> Formalisation:
        unplaced = tuple((t.text, t.start) for t in tokens if t is not None)
        return Formalisation(None, "", (), unplaced, message[:1].upper() + message[1:],
                             engine=self.name)

    def _syntax_failure(self, tokens, canonical, at, exc) -> Formalisation:
        """Which words keep the sentence from being read: the fewest whose removal lets it
        parse (one word, else two), next to where the parser stopped."""
        visible = [i for i, t in enumerate(tokens) if t.kind != "DROP"]
        content = ("WORD", "NUM", "QUOTED", "COMPARE", "VALUE", "SEP", "COMMA")
        if all(tokens[i].kind in content for i in visible):
            words = [tokens[i] for i in visible if tokens[i].kind not in ("SEP", "COMMA")]
            return self._fail("no rule here: the text names things but never says when they must "
                              "or must not hold (always, never, eventually, whenever ..., must, "
                              "before, at most once, ...)", words)
        stop = _stop_token(exc, at, tokens)
        culprits: list[int] = []
        if len(visible) <= MAX_TOKENS_FOR_SEARCH:
            culprits = _removable(tokens, visible, stop)
        if culprits:
            words = [tokens[i] for i in culprits]
            return self._fail("could not place " + _quote_words(words) + " in a rule pattern; "
                              "without " + ("it" if len(words) == 1 else "them") +
                              " the rest of the sentence can be read", words)
        if isinstance(exc, UnexpectedEOF) or stop is None:
            last = [tokens[visible[-1]]] if visible else []
            return self._fail("the rule ends too early: after " + _quote_words(last) +
                              " the grammar expects more", last)
        return self._fail("could not place " + _quote_words([stop]) + " here", [stop])


_MESSAGE_OWNERS = frozenset({"agent's", "assistant's", "bot's", "agent’s", "assistant’s",
                             "bot’s", "its", "their", "your", "the", "our"})
_MESSAGE_NOUNS = frozenset({"message", "reply", "response", "answer", "turn"})
_MESSAGE_VERBS = frozenset({"include", "includes", "mention", "mentions", "contain", "contains",
                            "carry", "carries", "have", "has", "state", "states", "tell",
                            "tells", "disclose", "discloses", "say", "says", "be", "give",
                            "gives", "offer", "offers", "repeat", "repeats"})
_SPEAKER_WORDS = frozenset({"assistant", "agent", "bot", "it", "chatbot"})


def _message_phrase(raws: list[_Raw], i: int) -> tuple[int, str] | None:
    """"the agent's next message (to the customer)", "the very next reply", "the first thing
    the assistant says (in a conversation)": where the phrase ends and NEXT_MESSAGE or
    FIRST_MESSAGE; None when no such phrase starts at ``raws[i]``."""
    keys = [r.key for r in raws[i:i + 10]]
    k = 0
    while k < len(keys) and keys[k] in _MESSAGE_OWNERS | {"very"}:
        k += 1
    if k >= len(keys) or keys[k] not in ("next", "following", "first"):
        return None
    kind = "FIRST_MESSAGE" if keys[k] == "first" else "NEXT_MESSAGE"
    k += 1
    if k < len(keys) and keys[k] in _MESSAGE_NOUNS:
        k += 1
    elif (k + 2 < len(keys) and keys[k] == "thing" and keys[k + 1] in ("the", "it")
          and (keys[k + 1] == "it" or keys[k + 2] in _SPEAKER_WORDS)):
        k += 2 if keys[k + 1] == "it" else 3
        if k < len(keys) and keys[k] in ("says", "writes", "sends", "say"):
            k += 1
        else:
            return None
    else:
        return None
    # "to the customer", "in any conversation": whom it is for, where
    while k + 1 < len(keys) and keys[k] in ("to", "in", "of") and keys[k + 1] in (
            "the", "a", "any", "each", "every", "them", "him", "her"):
        k += 2
        if k < len(keys) and raws[i + k].kind == "word" and keys[k] not in lexicon.PHRASES:
            k += 1
    return i + k, kind


def _once_closes(raws: list[_Raw], i: int) -> bool:
    """Whether "once" at ``raws[i]`` ends its clause ("paid once.", "once per session",
    "once, not more"): a count, not "once the payment clears"."""
    after = [r.key for r in raws[i + 1:i + 4]]
    return (not after or raws[i + 1].kind == "punct"
            or after[0] == "per" or after[:2] in (["a", "session"], ["each", "session"]))


_REQUIRED_MARKS = frozenset({"required", "mandatory", "compulsory", "needed", "first",
                             "obligatory", "a must"})


def _colon_requires(tokens: list[Token]) -> list[Token] | None:
    """"Currency conversions over 1M: manager sign-off required.", "Claim denial -> reason
    code mandatory.": the colon says the words before it require the words after it; None when
    the sentence is not of that shape."""
    colons = [k for k, t in enumerate(tokens) if t.kind == "COMMA" and t.text in (":", "→")]
    if len(colons) != 1:
        return None
    rest = [k for k in range(colons[0] + 1, len(tokens))
            if tokens[k].kind not in ("DROP", "SEP")]
    if len(rest) < 2 or tokens[rest[-1]].text.lower() not in _REQUIRED_MARKS:
        return None
    out = list(tokens)
    out[colons[0]] = replace(tokens[colons[0]], kind="REQUIRES")
    out[rest[-1]] = replace(tokens[rest[-1]], kind="DROP")
    return out


def _after_permission(tokens: list[Token]) -> list[Token] | None:
    """"You may give general information, but never legal advice": what a permission before
    "but" allows forbids nothing; the rule is after it.  None when the sentence does not open
    with a permission."""
    buts = [k for k, t in enumerate(tokens) if t.kind == "WORD" and str(t.value) == "but"]
    if len(buts) != 1:
        return None
    head = [t for t in tokens[:buts[0]] if t.kind not in ("DROP", "COMMA")]
    if (not any(t.kind == "MODAL" and t.text.lower() in ("may", "can", "is allowed to",
                                                         "are allowed to") for t in head)
            or any(t.kind in ("NOT", "NEVER", "FORBIDDEN", "SEP") for t in head)):
        return None
    return [replace(t, kind="DROP") if k <= buts[0] else t for k, t in enumerate(tokens)]


def _numbers_no_reading_uses(tokens: list[Token], answer: Formalisation) -> list[Token]:
    """The numbers of the English (limits, thresholds: above 5, or with a fraction; a count
    is written as the shape of the formula) that appear in no reading."""
    if not answer.ok:
        return []
    printed = {float(x) for r in answer.readings
               for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", r.text)}
    lost = []
    for t in tokens:
        if t.kind not in ("NUM", "VALUE") or not isinstance(t.value, (int, float)) \
                or isinstance(t.value, bool):
            continue
        n = float(t.value)
        if (n > 5 or n != int(n)) and n not in printed and n - 1 not in printed:
            lost.append(t)
    return lost


def _after_colon(tokens: list[Token]) -> list[Token] | None:
    """The tokens with everything up to the sentence's colon dropped, or None when there is
    no colon with a rule's worth of words after it."""
    colons = [k for k, t in enumerate(tokens) if t.kind == "COMMA" and t.text == ":"]
    if not colons or sum(t.kind == "WORD" for t in tokens[colons[-1] + 1:]) < 2:
        return None
    return [replace(t, kind="DROP") if k <= colons[-1] else t for k, t in enumerate(tokens)]


def _as_imperative(tokens: list[Token]) -> list[Token] | None:
    """The tokens with "must" before every sentence that is a list of bare verb phrases and
    no other keyword (an instruction: "Take the key and unlock the door."), or None."""
    out: list[Token] = []
    changed = False
    sentence: list[Token] = []

    def close():
        nonlocal changed
        visible = [t for t in sentence if t.kind not in ("DROP", "SEP")]
        # "Before sending money, verify the identity.": the main clause after an opening one
        if (visible and visible[0].kind in _OPENERS and not any(
                t.kind in _MAIN_VERBS | {"HAPPEN"} for t in visible)):
            comma = next((k for k, t in enumerate(visible) if t.kind == "COMMA"), None)
            if (comma is not None and comma + 1 < len(visible)
                    and visible[comma + 1].kind == "WORD"
                    and not visible[comma + 1].after_determiner
                    and not visible[comma + 1].pronoun):
                k = sentence.index(visible[comma + 1])
                sentence.insert(k, Token("MODAL", "", visible[comma + 1].start))
                changed = True
                out.extend(sentence)
                sentence.clear()
                return
        plain = all(t.kind in ("WORD", "NUM", "QUOTED", "COMMA", "AND", "AND_THEN", "THEN")
                    for t in visible)
        # two actions or more ("take the key and unlock the door"): a lone phrase stays
        # unread rather than become an obligation nobody wrote
        joined = any(t.kind in ("AND", "AND_THEN", "THEN") for t in visible)
        if (visible and visible[0].kind == "WORD" and plain and joined
                and not visible[0].after_determiner):
            k = sentence.index(visible[0])
            sentence.insert(k, Token("MODAL", "", visible[0].start))
            changed = True
        out.extend(sentence)
        sentence.clear()

    for t in tokens:
        sentence.append(t)
        if t.kind == "SEP":
            close()
    close()
    return out if changed else None


def _quote_words(tokens) -> str:
    return ", ".join(f"“{t.text}”" for t in tokens)


def _stop_token(exc, at, tokens) -> Token | None:
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        pos = exc.token.start_pos
        return at.get(pos)
    pos = getattr(exc, "pos_in_stream", None)
    if pos is not None and pos in at:
        return at[pos]
    return None


def _parses(tokens: list[Token], skip: set[int]) -> bool:
    kept = [t if i not in skip else replace(t, kind="DROP") for i, t in enumerate(tokens)]
    canonical, _ = _canonical(kept)
    if not canonical.strip():
        return False
    try:
        _parser().parse(canonical)
    except UnexpectedInput:
        return False
    return True


def _removable(tokens, visible, stop) -> list[int]:
    """The word nearest to where the parser stopped whose removal lets the sentence parse; else
    the first pair of words that does (for short sentences: pairs cost a parse each)."""
    stop_index = next((i for i, t in enumerate(tokens) if t is stop), len(tokens))
    candidates = sorted((i for i in visible if tokens[i].kind != "SEP"),
                        key=lambda i: (abs(i - stop_index), -i))
    deadline = time.monotonic() + SEARCH_SECONDS
    for i in candidates:
        if time.monotonic() > deadline:
            return []
        if _parses(tokens, {i}):
            return [i]
    if len(visible) > MAX_TOKENS_FOR_PAIRS:
        return []
    for a_pos, a in enumerate(visible):
        for b in visible[a_pos + 1:]:
            if time.monotonic() > deadline:
                return []
            if _parses(tokens, {a, b}):
                return [a, b]
    return []


_ENGINE = OfflineFormaliser()


def formalise(text: str, engine: str = "offline", vocabulary=None) -> Formalisation:
    """Read one English rule (several sentences are read as the conjunction of their rules).

    ``vocabulary``: what the workspace's logs produce (``.atoms``, ``.paths``); the atoms the
    English names are mapped onto it where they fit (``grounding``)."""
    if engine != "offline":
        raise ValueError(f"unknown engine {engine!r}; this module provides 'offline'")
    return _ENGINE.formalise(text, vocabulary=vocabulary)


# ---------------------------------------------------------------------------------------------
# Several readings, grounding and a name

MAX_READINGS = 4
# An invented atom this long (in words) is a clause the grammar did not take apart.
MAX_INVENTED_WORDS = 5
MAX_READS = 12           # sentences read again with other choices, at most
COMPARE_LENGTH = 8       # traces searched to tell two readings apart


def _other_readings(nodes, first: _Reader) -> list[tuple[Formula, _Reader]]:
    """The sentence read again with every other choice of the open questions its first
    reading met (one question changed at a time, then combinations, breadth first)."""
    out = []
    seen = {()}
    pending = []

    def push(options: dict, reader: _Reader) -> None:
        for key, choices in reader.consulted.items():
            if key in options:
                continue
            for value, _ in choices[1:]:
                new = {**options, key: value}
                frozen = tuple(sorted(new.items()))
                if frozen not in seen:
                    seen.add(frozen)
                    pending.append(new)

    push({}, first)
    reads = 0
    while pending and reads < MAX_READS:
        options = pending.pop(0)
        reads += 1
        reader = _Reader(options)
        try:
            f = And(*reader.read(nodes))
        except NotUnderstood:
            continue
        out.append((f, reader))
        push(options, reader)
    return out


_WORDS_LEFT = {"keep": "the words the logs do not show restrict the event (an invented atom "
                       "beside it)",
               "invent": "the phrase names something the logs do not show (an invented atom)",
               "one": "the phrase names only the first of the entries it matches equally well",
               "keep_arguments": "a word after the call names one of its arguments"}


def _answer(read: list, vocabulary, engine: str, english: str = "") -> Formalisation:
    from studio.logic.review import ReviewLimitError, distinguishing_trace, explain
    from .base import Reading
    from .grounding import ground, said_by_agent

    invented: list[str] = []
    quoted: dict[str, str] = {}
    for _, reader in read:
        invented.extend(a for a in reader.atoms if a not in invented)
        quoted.update(reader.quoted)
    candidates: list[tuple[Formula, str]] = []
    mapping: list = []
    guesses: set = set()
    for k, (f, reader) in enumerate(read):
        if vocabulary is None:
            candidates.append((f, reader.meaning()))
            continue
        grounded, this_mapping, partial = ground(f, invented, vocabulary, quoted=quoted)
        if k == 0:
            mapping, guesses = this_mapping, partial
        candidates.append((grounded, reader.meaning()))
    if guesses:
        # A phrase matched a vocabulary entry only in part: the words left over may restrict
        # the event, or the phrase may name something the logs do not show; the author picks.
        f, reader = read[0]
        wanted = ["keep"] if "restricting" in guesses else []
        wanted += ["invent"] if "loose" in guesses else []
        wanted += ["one"] if "tie" in guesses else []
        wanted += ["keep_arguments"] if "argument" in guesses else []
        room = max(1, MAX_READINGS - len(candidates))
        for words_left in wanted[:room]:
            other, _, _ = ground(f, invented, vocabulary, words_left, quoted)
            meaning = "; ".join(x for x in (reader.meaning(), _WORDS_LEFT[words_left]) if x)
            candidates.insert(min(len(candidates), MAX_READINGS - 1), (other, meaning))
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "the phrase is the vocabulary entry it matched")
            if x))
    spoken = (said_by_agent(candidates[0][0], mapping, english, vocabulary.atoms)
              if vocabulary is not None and getattr(vocabulary, "atoms", None) else None)
    if spoken is not None:
        # "never ask the customer for their PIN": the label on the assistant's messages, or on
        # any message (a user's too); named outright ("in assistant messages"), the first
        f_spoken, explicit = spoken
        why = "; ".join(x for x in (candidates[0][1], "only the assistant's messages count")
                        if x)
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "a message from anyone counts") if x))
        candidates.insert(0 if explicit else 1, (f_spoken, why))
    lasting = (state_between_events(candidates[0][0], vocabulary.atoms)
               if vocabulary is not None and getattr(vocabulary, "atoms", None) else None)
    if lasting is not None:
        # "while the enclosure door is open": from the opening until the closing, or (the
        # author picks) only at the step of the opening
        f_lasting, described = lasting
        during = _LASTING_WORDS.search(english.lower()) is not None
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "each event counts only at its own step") if x))
        candidates.insert(0 if during else 1, (f_lasting, "; ".join(
            x for x in (candidates[0][1].removesuffix("each event counts only at its own step")
                        .rstrip("; "), described) if x)))
    first_limit = limits_on_an_event(candidates[0][0])
    if first_limit is not candidates[0][0]:
        # "the battery's charge must stay between 10% and 90%": each event the words name,
        # or (the author picks) wherever the logs show the value
        anywhere = _limits_anywhere(first_limit)
        if anywhere is not None:
            candidates[0] = (candidates[0][0], "; ".join(
                x for x in (candidates[0][1], "the limit holds at each event the words name")
                if x))
            candidates.insert(1, (anywhere, "the limit holds at every step that shows the value, "
                                            "whatever the event"))
    plain, plain_why = candidates[0]
    candidates = [(limits_on_an_event(since_before_own_event(release_after_trigger(
        calls_at_separate_steps(one_call_a_step(as_limits(g)))))), why)
        for g, why in candidates]
    if as_limits(plain) is not plain:
        # "payments above 10000 must never be made": a payment whose amount the logs lack
        # breaks the limit, or (the author picks) only a payment shown above it does
        candidates[0] = (candidates[0][0], "; ".join(
            x for x in (candidates[0][1], "an event whose amount is missing breaks the rule")
            if x))
        candidates.insert(1, (release_after_trigger(one_call_a_step(plain)), "; ".join(
            x for x in (plain_why, "an event whose amount is missing does not break the rule")
            if x)))
    first, first_why = candidates[0]
    if limits_everywhere(first) is not first:
        candidates[:1] = [
            (first, "; ".join(x for x in (first_why, "a step where the amount is missing "
                                          "does not break the rule") if x)),
            (limits_everywhere(first), "; ".join(x for x in (first_why, "the amount must be "
                                                "present and within the limit at every step")
                                                if x))]
    kept: list[tuple[Formula, str]] = []
    impossible = 0
    for grounded, why in candidates:
        if any(g is grounded for g, _ in kept) or _trivial(grounded):
            continue
        if _no_log_can_mean(grounded):
            # "KYC before any deposit is accepted, and the account opened twice" read as a
            # deposit and an account opening at one step: no log has that, so the words were
            # taken apart wrongly
            impossible += 1
            continue
        distinct = True
        for g, _ in kept:
            try:
                if distinguishing_trace(g, grounded, max_length=COMPARE_LENGTH) is None:
                    distinct = False
                    break
            except ReviewLimitError:
                pass
        if distinct:
            kept.append((grounded, why))
        if len(kept) >= MAX_READINGS:
            break
    if candidates and _no_log_can_mean(candidates[0][0]):
        # the first reading's words were taken apart wrongly, and the others share its shape
        kept = []
    if not kept and impossible:
        return Formalisation(None, "", (), (), "Every reading of this rule needs two tool calls "
                             "(or two speakers) at one step, which no log has, or forbids or "
                             "calls for the very event that triggers it: the words were not "
                             "taken apart, or matched to the logs, the way they were meant; "
                             "split the sentence into one rule each, or name the events in "
                             "quotes", engine=engine)
    if not kept:
        return Formalisation(None, "", (), (), "Every reading of this rule holds on every "
                             "session, or on none: the words were not taken apart the way they "
                             "were meant (a scope bound that is the rule's own event?)",
                             engine=engine)
    readings = []
    for k, (f, why) in enumerate(kept):
        trace, against = (), None
        if len(kept) > 1:
            against = 1 if k == 0 else 0
            try:
                trace = tuple(distinguishing_trace(f, kept[against][0],
                                                   max_length=COMPARE_LENGTH) or ())
            except ReviewLimitError:
                trace = ()
        readings.append(Reading(f, f.text, explain(f), why if len(kept) > 1 else "",
                                trace, against))
    f = kept[0][0]
    atoms = tuple(dict.fromkeys(g.name for g in f.subformulas() if g.op == "atom"))
    ordered = [m.atom for m in mapping if m.atom in atoms]
    atoms = tuple(dict.fromkeys(ordered + [a for a in _ordered_atoms(read[0][1], f)
                                           if a in atoms] + list(atoms)))
    return Formalisation(f, f.text, atoms, engine=engine, readings=tuple(readings),
                         mapping=tuple(mapping), name=propose_name(f, read[0][1].kinds))


def _no_log_can_mean(f: Formula) -> bool:
    """Whether ``f`` joins two different tool calls, or two roles, with "and" at one step: one
    step is one event, so such a part never holds (or its negation always does); or bans the
    very event that triggers it from that step on (``G (a -> !a W x)``), or answers it with
    itself (``G (a -> F a)``): the trigger and the other event were grounded onto one entry."""
    for g in f.subformulas():
        if g.op == "implies" and g.args[0].op == "atom":
            banned = g.args[1]
            if banned.op in ("W", "U"):
                banned = banned.args[0]
            if banned.op == "not" and banned.args[0] == g.args[0]:
                return True
            # "whenever a payment is declined, tell the customer within two steps" read as
            # the decline calling for another decline: the response grounded onto the trigger
            due = g.args[1]
            while due.op in ("X", "F", "F[]"):
                due = due.args[0]
            if due is not g.args[1] and due == g.args[0]:
                return True
        if g.op == "and":
            calls = {a.name for a in g.args if a.op == "atom" and a.name.startswith("tool_call:")}
            roles = {a.name for a in g.args if a.op == "atom" and a.name.startswith("role:")}
            if len(calls) >= 2 or len(roles) >= 2:
                return True
    return False


def _trivial(f: Formula) -> bool:
    """Whether ``f`` holds on every session or on none: no rule anyone means."""
    from studio.logic.review import ReviewLimitError, distinguishing_trace

    if f is fm.TRUE or f is fm.FALSE:
        return True
    if any(g.op in ("U", "W") and g.args[1] is fm.FALSE for g in f.subformulas()):
        # "!p W (p & !p)": the grounding named both sides of a precedence with one entry
        return True
    try:
        return (distinguishing_trace(f, fm.TRUE, max_length=COMPARE_LENGTH) is None
                or distinguishing_trace(f, fm.FALSE, max_length=COMPARE_LENGTH) is None)
    except ReviewLimitError:
        return False


_COMPLEMENT = {">": "<=", "<": ">=", ">=": "<", "<=": ">"}


def as_limits(f: Formula) -> Formula:
    """A forbidden amount read as the limit it sets: "never refund more than 200" is ``G
    (refund -> amount <= 200)`` and "the balance must never go below zero" ``G (balance >=
    0)`` (an event whose amount is missing does not meet the limit), not ``G !(refund &
    amount > 200)``, which a refund with no amount would satisfy."""
    if not f.args:
        return f
    if f.op == "not" and f.args[0].op == "and" and len(f.args[0].args) == 2:
        limit, event = sorted(f.args[0].args, key=lambda a: a.op != "cmp")
        if limit.op == "cmp" and limit.payload.op in _COMPLEMENT and event.op == "atom":
            c = limit.payload
            return Implies(event, Compare(c.left, _COMPLEMENT[c.op], c.right))
    return fm.rebuild(f, tuple(as_limits(a) for a in f.args))


def _calls(f: Formula) -> set[str]:
    """The tool calls a conjunction (or a single atom) asserts at its step."""
    items = f.args if f.op == "and" else (f,)
    return {a.name for a in items if a.op == "atom" and a.name.startswith("tool_call:")}


def one_call_a_step(f: Formula) -> Formula:
    """``a & X F b`` as ``a & F b`` when a and b are different tool calls: one event a step, so
    "b strictly later" and "b at that step or later" are the same on every log, and the second
    is the plainer formula (how people write "run the tests, then commit")."""
    if not f.args:
        return f
    args = tuple(one_call_a_step(a) for a in f.args)
    if f.op == "and":
        here = set().union(*(_calls(a) for a in args if a.op != "X"))
        fixed = []
        for a in args:
            if (here and a.op == "X" and a.args[0].op == "F"
                    and _calls(a.args[0].args[0]) and not _calls(a.args[0].args[0]) & here):
                a = a.args[0]
            fixed.append(a)
        args = tuple(fixed)
    return fm.rebuild(f, args)


# Opposite events that bound a state: the door is open from "door_opened" until "door_closed".
_OPPOSITES = (("open", "close"), ("opened", "closed"), ("on", "off"), ("start", "stop"),
              ("started", "stopped"), ("start", "end"), ("started", "ended"),
              ("start", "finish"), ("started", "finished"), ("enable", "disable"),
              ("enabled", "disabled"), ("lock", "unlock"), ("locked", "unlocked"),
              ("alert", "cleared"), ("raised", "cleared"), ("detected", "cleared"),
              ("flagged", "cleared"), ("alert", "resolved"), ("opened", "resolved"),
              ("begin", "end"), ("pause", "resume"), ("paused", "resumed"),
              ("announced", "lifted"), ("declared", "lifted"), ("activated", "deactivated"),
              ("activate", "deactivate"), ("suspend", "reinstate"), ("suspended", "reinstated"),
              ("checkout", "checkin"), ("checked_out", "checked_in"), ("hold", "release"))
_LASTING_WORDS = re.compile(r"\b(while|whilst|as long as|during|is active|are active|is open|"
                            r"is on|is running|in progress|is ongoing|until)\b")


def _opposite(name: str, atoms) -> tuple[str, str] | None:
    """The atom that ends the state ``name`` begins (``door_opened`` -> ``door_closed``), with
    the words of the state; None when the logs have no such pair."""
    bare = re.sub(r"^(tool_call:)", "", name)
    parts = bare.split("_")
    for start, end in _OPPOSITES:
        if start not in parts:
            continue
        k = parts.index(start)
        for other in (parts[:k] + [end] + parts[k + 1:], parts[:k] + parts[k + 1:] + [end],
                      [end] + parts[:k] + parts[k + 1:]):
            for prefix in ("tool_call:", ""):
                candidate = prefix + "_".join(p for p in other if p)
                if candidate != name and candidate in atoms:
                    subject = " ".join(p for p in parts if p != start) or bare
                    return candidate, subject.replace("_", " ")
    return None


def state_between_events(f: Formula, atoms) -> tuple[Formula, str] | None:
    """``f`` with each atom that begins a state the logs also end read as the state (``!door_
    closed S door_opened`` for ``door_opened``) outside past operators, and the state's words;
    None when no atom of ``f`` has an opposite in the logs."""
    found: dict[str, Formula] = {}
    described = []
    present = {g.name for g in f.subformulas() if g.op == "atom"}
    for g in f.subformulas():
        if g.op == "atom" and g.name not in found:
            pair = _opposite(g.name, atoms)
            # a rule that names the ending event already says how long the state lasts
            if pair is not None and pair[0] not in present:
                found[g.name] = S(Not(Atom(pair[0])), g)
                described.append(f"“{_words(g.name)}” lasts until “{_words(pair[0])}”")
    if not found:
        return None

    def visit(g: Formula) -> Formula:
        if g.op == "atom":
            return found.get(g.name, g)
        if g.op in ("Y", "O", "H", "S", "Z") or not g.args:
            return g
        return fm.rebuild(g, tuple(visit(a) for a in g.args))

    return visit(f), "; ".join(described)


def _words(name: str) -> str:
    return name.removeprefix("tool_call:").replace("_", " ")


def limits_on_an_event(f: Formula) -> Formula:
    """``G (set_thermostat & target >= 16 & target <= 28)`` as ``G (set_thermostat -> target
    >= 16 & target <= 28)``: "thermostat setpoints must stay between 16 and 28" limits each
    setting; it does not ask every step to be one."""
    if f.op == "and":
        return fm.rebuild(f, tuple(limits_on_an_event(a) for a in f.args))
    if f.op != "G" or f.args[0].op != "and":
        return f
    parts = f.args[0].args
    calls = [p for p in parts if p.op == "atom" and p.name.startswith("tool_call:")]
    limits = [p for p in parts if p.op == "cmp"]
    if len({c.name for c in calls}) != 1 or len(calls) + len(limits) != len(parts) or not limits:
        return f
    return G(Implies(calls[0], And(*limits)))


_NEGATED_OP = {">": "<=", "<": ">=", ">=": "<", "<=": ">", "==": "!=", "!=": "=="}


def _limits_anywhere(f: Formula) -> Formula | None:
    """``G (call -> x >= 10 & x <= 90)`` as ``G !(x < 10 | x > 90)``: no step shows a value
    outside the limits (a step without the value passes); None for any other shape."""
    if f.op != "G" or f.args[0].op != "implies":
        return None
    limits = f.args[0].args[1]
    parts = limits.args if limits.op == "and" else (limits,)
    if not all(p.op == "cmp" for p in parts):
        return None
    broken = [Compare(p.payload.left, _NEGATED_OP[p.payload.op], p.payload.right) for p in parts]
    return G(Not(Or(*broken)))


def calls_at_separate_steps(f: Formula) -> Formula:
    """``F (lock_doors & lights_off)`` as ``F lock_doors & F lights_off`` when every part is a
    different tool call: one event a step, so "lock the doors and turn off the lights within
    five steps" asks for each call within the five steps, never both at one step."""
    if not f.args:
        return f
    args = tuple(calls_at_separate_steps(a) for a in f.args)
    if f.op in ("F", "F[]") and args[0].op == "and":
        parts = args[0].args
        names = {p.name for p in parts if p.op == "atom" and p.name.startswith("tool_call:")}
        if len(names) == len(parts) > 1:
            if f.op == "F":
                return And(*[F(p) for p in parts])
            low, high = f.payload
            return And(*[FBounded(low, high, p) for p in parts])
    return fm.rebuild(f, args)


def _conjuncts(f: Formula) -> list[Formula]:
    return list(f.args) if f.op == "and" else [f]


def release_after_trigger(f: Formula) -> Formula:
    """"If a test run fails, do not commit until the tests are re-run": once the words are
    grounded, the release (a test run) may be the trigger's own event, which would end the ban
    at the very step it starts; the release is then a later occurrence, so the ban starts at the
    next step (``WX`` for a weak until, ``X`` for a strong one)."""
    if not f.args:
        return f
    args = tuple(release_after_trigger(a) for a in f.args)
    if f.op == "implies" and args[1].op in ("U", "W"):
        here = {a for a in _conjuncts(args[0]) if a.op == "atom"}
        release = {a for a in _conjuncts(args[1].args[1]) if a.op == "atom"}
        if here & release:
            args = (args[0], WX(args[1]) if args[1].op == "W" else X(args[1]))
    if f.op == "and":
        # "never refund an order that was already refunded": the earlier refund is another
        # one, strictly before (at the same step it would be this one)
        here = {a for a in args if a.op == "atom"}
        args = tuple(Y(a) if a.op == "O" and here & {
            b for b in a.args[0].subformulas() if b.op == "atom"} else a for a in args)
    if f.op == "and":
        # "once a refund is issued (the first one), no further refunds": the ban beside its
        # own event starts at the next step
        here = {a for a in args if a.op == "atom"}
        args = tuple(WX(a) if a.op == "G" and a.args[0].op == "not" and here & {
            b for b in a.args[0].subformulas() if b.op == "atom"} else a for a in args)
    if f.op == "implies" and args[1].op == "G" and args[1].args[0].op == "not":
        # "once a refund has gone through, no other refund": a ban on the trigger's own event
        # starts at the next step (from the trigger's step on, the trigger would break it)
        here = {a for a in _conjuncts(args[0]) if a.op == "atom"}
        banned = {a for a in args[1].args[0].subformulas() if a.op == "atom"}
        if here & banned:
            args = (args[0], WX(args[1]))
    return fm.rebuild(f, args)


def since_before_own_event(f: Formula) -> Formula:
    """"Don't migrate unless a backup has been taken since the last migration": at a
    migration the last migration is an earlier one, so the "since" is read from the step
    before (``G (migrate -> Y (!migrate S backup))``), else no migration could ever pass."""
    def visit(g: Formula) -> Formula:
        if g.op == "implies":
            outside = {a.name for a in g.args[0].subformulas() if a.op == "atom"}
            if outside:
                return fm.rebuild(g, (g.args[0], wrap(g.args[1], outside)))
            return g
        if not g.args:
            return g
        return fm.rebuild(g, tuple(visit(a) for a in g.args))

    def wrap(g: Formula, events: set) -> Formula:
        if (g.op == "S" and g.args[0].op == "not" and g.args[0].args[0].op == "atom"
                and g.args[0].args[0].name in events):
            return Y(g)
        if g.op in ("Y", "O", "H", "S") or not g.args:
            return g
        return fm.rebuild(g, tuple(wrap(a, events) for a in g.args))

    if not any(g.op == "S" for g in f.subformulas()):
        return f
    # "unless P, never E" reads G (!P -> !E): the same as G (E -> P)
    f = _unless_as_condition(f)
    return visit(f)


def _unless_as_condition(f: Formula) -> Formula:
    if f.op == "G" and f.args[0].op == "implies" and f.args[0].args[0].op == "not" and \
            f.args[0].args[1].op == "not" and f.args[0].args[0].args[0].op == "S":
        return G(Implies(f.args[0].args[1].args[0], f.args[0].args[0].args[0]))
    if f.op == "and":
        return fm.rebuild(f, tuple(_unless_as_condition(a) for a in f.args))
    return f


def limits_everywhere(f: Formula) -> Formula:
    """Every forbidden amount read as a limit that holds at every step: "the balance must never
    go below zero" as ``G (balance >= 0)``, which a step without a balance breaks, where ``G
    !(balance < 0)`` lets it pass (the author says which is meant)."""
    if not f.args:
        return f
    if f.op == "not" and f.args[0].op == "cmp" and f.args[0].payload.op in _COMPLEMENT:
        c = f.args[0].payload
        return Compare(c.left, _COMPLEMENT[c.op], c.right)
    return fm.rebuild(f, tuple(limits_everywhere(a) for a in f.args))


def _ordered_atoms(reader: _Reader, f: Formula) -> list[str]:
    return list(reader.atoms)


def propose_name(f: Formula, kinds: list[str]) -> str:
    """A short snake_case name for a rule: its pattern and the atoms it is about."""
    names = []
    for g in f.subformulas():
        if g.op == "atom":
            names.append(g.name)
        elif g.op == "cmp":
            names.append(g.payload.left[1].rsplit(".", 1)[-1])
    words: list[str] = []
    for name in names:
        name = re.sub(r"^(tool_call|role|stop_reason):", "", name)
        for w in re.split(r"[^a-z0-9]+", name.lower()):
            if w and w not in words and w not in ("agent", "user", "the"):
                words.append(w)
    kind = kinds[0] if len(kinds) == 1 else "other"
    prefix = {"absence": "never", "universality": "always", "existence": "must"}.get(kind, "")
    core = "_".join(words[:4]) or "rule"
    if kind == "precedence" and len(words) >= 2:
        core = "_".join(words[:4])
    name = f"{prefix}_{core}" if prefix else core
    return name[:48].strip("_")
