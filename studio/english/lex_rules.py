"""The lexer's rules: how each English construction becomes tokens, one small function a
construction, tried in the order of ``RULES`` (``lexing.lex`` runs them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import lexicon
from .lex_context import (_already_follows, _heading_end, _in_opening_trigger, _is_number,
    _is_value, _match_phrase, _message_phrase, _MESSAGE_VERBS, _once_closes, _participle_follows,
    _sentence_end)
from .sentences import _COUNT_KINDS, _word_name
from .tokens import _is_participle, _number, _PUNCT, _Raw, _RELATIVE_VERBS, Token


# ---------------------------------------------------------------------------------------------
# The lexer's rules: one small function a construction, tried in the order of ``RULES``

@dataclass
class Lexer:
    """Where the lexer is in a text, and what the words before the current one said."""

    text: str
    raws: list[_Raw]
    tokens: list[Token] = field(default_factory=list)
    i: int = 0                          # the raw token being read
    previous_kind: str | None = None    # last token the grammar sees
    sentence_start: bool = True
    at_sentence_start: bool = False     # the current word opens a sentence
    determiner_pending: bool = False
    copula_pending: bool = False
    message_verb_pending: bool = False
    emitted: list[Token] = field(default_factory=list)   # what the current word became
    first_unit: Token | None = None     # "between 10% and 90%": the unit after the first value
    word_raw: _Raw | None = None        # the raw token the current step started at

    @property
    def raw(self) -> _Raw:
        return self.raws[self.i]

    def word(self, *keys: str) -> bool:
        """Whether the current raw token is a word, one of ``keys`` when given."""
        return self.raw.kind == "word" and (not keys or self.raw.key in keys)

    def drop(self, raws) -> None:
        self.tokens.extend(Token("DROP", r.text, r.start) for r in raws)

    def source(self, end: int) -> str:
        """The text from the current raw token to the raw token before ``end``."""
        return self.text[self.raw.start:self.raws[end - 1].start + len(self.raws[end - 1].text)]

    def emit(self, kind: str, value=None, text: str | None = None) -> None:
        self.emitted.append(Token(kind, self.raw.text if text is None else text, self.raw.start,
                                  value))

    def since_last_sentence(self) -> list[Token]:
        return self.tokens[next((k for k in range(len(self.tokens) - 1, -1, -1)
                                 if self.tokens[k].kind == "SEP"), -1) + 1:]


# What a rule did with the current word: nothing (None), read it whole (DONE: the word's tokens
# are placed), or emitted its tokens (EMITTED: the common bookkeeping after a word follows).
DONE = "done"
EMITTED = "emitted"


# -- rules tried before the sentence start is consumed

def _rule_label(lx: Lexer):
    """"Rule 3:" labels a rule; it is not part of it."""
    raws, i = lx.raws, lx.i
    if not (lx.sentence_start and lx.word("rule") and i + 1 < len(raws)
            and _is_number(raws[i + 1])):
        return None
    end = i + 2
    if end < len(raws) and raws[end].text == ":":
        end += 1
    lx.drop(raws[i:end])
    lx.i = end
    return DONE


def _heading(lx: Lexer):
    """"PAY-412: ...", "Hazard H-2: ...", "On-call note: ...", "Per compliance, ...": a label
    or a source of the rule, not part of it."""
    heading = _heading_end(lx.raws, lx.i) if lx.sentence_start else 0
    if not heading:
        return None
    lx.drop(lx.raws[lx.i:heading])
    lx.i = heading
    return DONE


OPENING_RULES = (_rule_label, _heading)


# -- rules that read a whole construction

def _unnamed_subject(lx: Lexer):
    """"It must run the test suite": the agent the rule is about, named nowhere."""
    raws, i = lx.raws, lx.i
    if not (lx.at_sentence_start and lx.word("it", "they")
            and not any(t.kind == "WORD" for t in lx.tokens) and i + 1 < len(raws)
            and (_match_phrase(raws, i + 1, None) or (0, ""))[1].split()[:1]
            in (["MODAL"], ["NOT"], ["NEVER"])):
        return None
    lx.drop([lx.raw])
    lx.i += 1
    return DONE


def _emphasis(lx: Lexer):
    """"Never drop a production database. Period.": emphasis, no rule."""
    raws, i = lx.raws, lx.i
    if not (lx.at_sentence_start and lx.word("period", "absolutely")
            and (i + 1 == len(raws) or raws[i + 1].text in ".!")):
        return None
    lx.drop([lx.raw])
    lx.sentence_start = True
    lx.i += 1
    return DONE


def _first_unit(lx: Lexer):
    """"between 10% and 90%": the unit after the first value too (set aside; never reads the
    word itself)."""
    raws, i = lx.raws, lx.i
    if (lx.word("between") and i + 4 < len(raws)
            and _is_number(raws[i + 1]) and raws[i + 3].key == "and"
            and (raws[i + 2].text == "%" or raws[i + 2].key in lexicon.UNITS)):
        lx.first_unit = Token("DROP", raws[i + 2].text, raws[i + 2].start)
        lx.raws = raws[:i + 2] + raws[i + 3:]
    else:
        lx.first_unit = None
    return None


def _between_range(lx: Lexer):
    """"the pH must stay between 6.8 and 7.4": a range of the field, ends included."""
    raws, i, tokens = lx.raws, lx.i, lx.tokens
    if not (lx.word("between") and not lx.at_sentence_start
            and i + 3 < len(raws) and _is_number(raws[i + 1]) and raws[i + 2].key == "and"
            and _is_number(raws[i + 3])):
        return None
    raw = lx.raw
    low, high = (lexicon.NUMBER_WORDS.get(r.key) if r.kind == "word"
                 else _number(r.text) for r in (raws[i + 1], raws[i + 3]))
    verb = bool(tokens) and (tokens[-1].kind == "HOLD" or (
        tokens[-1].kind == "DROP" and tokens[-1].text.lower() in lexicon.COPULAS))
    source = lx.source(i + 4)
    tokens.append(Token("COMPARE", source, raw.start, ("between", "verb" if verb else "prep")))
    tokens.append(Token("VALUE", source, raws[i + 1].start, (low, high)))
    if lx.first_unit is not None:
        tokens.append(lx.first_unit)
    lx.previous_kind = "VALUE"
    i += 4
    while i < len(raws) and (raws[i].key in lexicon.UNITS or raws[i].key in (
            "inclusive", "inclusively", "°", "c", "f") or raws[i].text in ("%", "°")):
        tokens.append(Token("DROP", raws[i].text, raws[i].start))
        i += 1
    lx.i = i
    return DONE


def _message(lx: Lexer):
    """"the agent's next message must include an apology": the next message of the assistant
    (or its first in the session) carries it."""
    message = _message_phrase(lx.raws, lx.i) if lx.word() else None
    if message is None:
        return None
    end, kind = message
    lx.tokens.append(Token(kind, lx.source(end), lx.raw.start))
    lx.previous_kind = kind
    lx.message_verb_pending = True
    lx.i = end
    return DONE


def _message_verb(lx: Lexer):
    """"... must include an apology": what the message carries."""
    if not (lx.message_verb_pending and lx.word() and lx.raw.key in _MESSAGE_VERBS
            and lx.tokens and lx.tokens[-1].kind in ("MODAL", "NOT", "NEVER")):
        return None
    lx.drop([lx.raw])
    lx.message_verb_pending = False
    lx.i += 1
    return DONE


def _since(lx: Lexer):
    """"the tests have passed since the last edit": the latest edit came before them ("the
    tests passed after the most recent edit": since it); "opted in and has not opted out
    since": not since then."""
    raws, i, tokens = lx.raws, lx.i, lx.tokens
    last_of = (lx.word("after") and i + 2 < len(raws) and raws[i + 1].key == "the"
               and raws[i + 2].key in ("last", "latest", "most"))
    if not ((lx.word("since") or last_of) and not lx.at_sentence_start
            and tokens and tokens[-1].kind in ("WORD", "NUM", "VALUE", "QUOTED")):
        return None
    end = i + 1
    while (end < len(raws) and raws[end].key in ("the", "last", "latest", "most",
                                                 "recent", "previous", "time", "then")):
        end += 1
    closes = end >= len(raws) or raws[end].kind == "punct"
    lx.emit("SINCE_THEN" if closes else "SINCE", text=lx.source(end))
    lx.drop(raws[i + 1:end])
    tokens.extend(lx.emitted)
    lx.previous_kind = lx.emitted[-1].kind
    lx.i = end
    return DONE


def _once_count(lx: Lexer):
    """"it's only paid once", "attendance is taken once per session, not more": a count, at
    most one."""
    if not (lx.word("once") and not lx.at_sentence_start and _once_closes(lx.raws, lx.i)):
        return None
    for t in [t for t in lx.tokens[-4:] if t.kind == "ONLY"]:
        t.kind = "DROP"
    for part in ("AT_MOST", "NUM", "TIMES"):
        lx.emit(part, 1 if part == "NUM" else None)
    lx.tokens.extend(lx.emitted)
    lx.previous_kind = "TIMES"
    lx.i += 1
    return DONE


def _after_count(lx: Lexer):
    """"After three failed logins, lock the account": at the third one."""
    raws, i = lx.raws, lx.i
    if not (lx.at_sentence_start and lx.word("after") and i + 2 < len(raws)
            and _is_number(raws[i + 1])
            and raws[i + 2].kind == "word" and raws[i + 2].key not in lexicon.PHRASES):
        return None
    count = raws[i + 1]
    value = (lexicon.NUMBER_WORDS.get(count.key) if count.kind == "word"
             else _number(count.text))
    lx.tokens.append(Token("TRIGGER", lx.raw.text, lx.raw.start))
    lx.tokens.append(Token("NTH", count.text, count.start))
    lx.tokens.append(Token("NUM", count.text, count.start, value))
    lx.previous_kind = "NUM"
    lx.i += 2
    return DONE


# -- rules that read one word (or a few) into tokens

def _once_opening(lx: Lexer):
    """"Once the session is closed, ...": from then on."""
    if not (lx.at_sentence_start and lx.word("once")):
        return None
    lx.emit("AFTER")
    lx.i += 1
    return EMITTED


def _only_once(lx: Lexer):
    """"details are shared only once the identity has been verified": only after it."""
    raws, i = lx.raws, lx.i
    if not (lx.word("only") and i + 2 < len(raws)
            and raws[i + 1].key == "once" and raws[i + 2].kind in ("word", "quoted")
            and raws[i + 2].key not in ("per", "a", "an", "every", "each", "in", "during")
            and any(r.key in _RELATIVE_VERBS for r in raws[i + 2:i + 8])):
        return None
    lx.emit("ONLY_AFTER", text=lx.text[lx.raw.start:raws[i + 1].start + 4])
    lx.i += 2
    return EMITTED


def _once_after(lx: Lexer):
    """"... can only be executed once the invoice is approved": after it."""
    raws, i = lx.raws, lx.i
    if not (lx.word("once") and i + 1 < len(raws)
            and raws[i + 1].kind in ("word", "quoted")
            and (raws[i + 1].key not in ("a", "an", "per", "every", "each", "more", "again")
                 or any(r.key in _RELATIVE_VERBS for r in raws[i + 2:i + 5]))):
        return None
    if lx.tokens and lx.tokens[-1].kind == "ONLY":
        lx.tokens[-1].kind = "ONLY_AFTER"
    else:
        lx.emit("AFTER")
    lx.i += 1
    return EMITTED


def _already_done(lx: Lexer):
    """"an order that has already shipped": the object and what happened to it before."""
    if not (lx.word("that", "which", "who") and lx.previous_kind == "WORD"
            and _already_follows(lx.raws, lx.i + 1)):
        return None
    end = _already_follows(lx.raws, lx.i + 1)
    lx.emit("ALREADY_DONE", text=lx.source(end))
    lx.i = end
    return EMITTED


def _relative_clause(lx: Lexer):
    """"refund orders that are flagged for fraud": an object qualified by the clause after it;
    "every ticket that is opened": a subject the clause names an event of."""
    raws, i = lx.raws, lx.i
    if not (lx.word("that", "which", "who") and lx.previous_kind == "WORD"
            and i + 1 < len(raws) and raws[i + 1].key in _RELATIVE_VERBS):
        return None
    visible = [t for t in lx.tokens if t.kind != "DROP"]
    is_object = len(visible) >= 2 and visible[-2].kind == "WORD"
    lx.emit("AND" if is_object else "DROP")
    lx.i += 1
    return EMITTED


def _stop_doing(lx: Lexer):
    """"the agent must stop heating": no more heating from then on."""
    raws, i = lx.raws, lx.i
    if not (lx.word("stop", "stops", "cease", "ceases", "quit")
            and i + 1 < len(raws) and raws[i + 1].key.endswith("ing")):
        return None
    lx.emit("NEVER")
    lx.i += 1
    return EMITTED


# What already says "before" in a sentence, so that a closing "first" adds nothing.
_EARLIER_KINDS = frozenset({"REQUIRES", "WITHOUT", "BEFORE", "ONLY_AFTER", "PREVIOUSLY",
                            "IMMEDIATELY_BEFORE", "PRECEDED_BY", "UNLESS", "UNTIL", "ONLY_IF"})


def _first(lx: Lexer):
    """"the agent must log in first": at the start; "any withdrawal has to be confirmed by the
    customer first": before it; "requires approval first": already said."""
    raws, i = lx.raws, lx.i
    if not (lx.word("first") and lx.tokens
            and (i + 1 == len(raws) or raws[i + 1].text in ".;,!")):
        return None
    here = lx.since_last_sentence()
    if any(t.kind in _EARLIER_KINDS for t in here):
        lx.drop([lx.raw])
        lx.i += 1
        return DONE
    # after an opening "whenever P," or "once P,": before that event
    passive = any(t.kind == "WORD" and t.after_copula and _is_participle(t)
                  for t in here) or any(t.kind in ("TRIGGER", "AFTER") for t in here)
    lx.emit("PREVIOUSLY" if passive else "AT_START")
    lx.i += 1
    return EMITTED


def _any(lx: Lexer):
    """"Any withdrawal over 1000 has to be confirmed": every one."""
    if not (lx.at_sentence_start and lx.word("any")
            and lx.i + 1 < len(lx.raws) and lx.raws[lx.i + 1].kind == "word"):
        return None
    lx.emit("EVERY")
    lx.i += 1
    return EMITTED


# Words of a purpose clause's main clause saying the purpose needs something done earlier.
_EARLIER_WORDS = ("first", "earlier", "already", "beforehand", "previously", "before")


def _purpose(lx: Lexer):
    """"To unlock the chest, the key must have been picked up": what must come before the
    unlocking; "To finish the task, the agent has to ...": only its purpose."""
    raws, i = lx.raws, lx.i
    if not (lx.at_sentence_start and lx.word("to", "in order to")
            and i + 1 < len(raws) and raws[i + 1].kind == "word"
            and any(r.text == "," for r in raws[i:_sentence_end(raws, i)])):
        return None
    comma = next(j for j in range(i, len(raws)) if raws[j].text == ",")
    rest = raws[comma + 1:_sentence_end(raws, i)]
    earlier = any(r.key in _EARLIER_WORDS
                  or (r.key == "have" and _participle_follows(rest, k + 1))
                  for k, r in enumerate(rest))
    if earlier:
        lx.emit("BEFORE")
        lx.i += 1
        return EMITTED
    lx.drop(raws[i:comma + 1])
    lx.sentence_start = True
    lx.i = comma + 1
    return DONE


def _after_in_trigger(lx: Lexer):
    """"if a health check fails after a deploy, roll back": the deploy came earlier."""
    raws, i = lx.raws, lx.i
    if not (lx.word("after") and i + 1 < len(raws)
            and raws[i + 1].kind in ("word", "quoted") and _in_opening_trigger(lx.tokens)):
        return None
    lx.emit("AND")
    lx.emit("PREVIOUSLY")
    lx.i += 1
    return EMITTED


def _while_inside(lx: Lexer):
    """"no flight may be booked while the passport is unverified": at every step where it
    is; "migrations should only run while maintenance mode is on": only then."""
    raws, i = lx.raws, lx.i
    if not (not lx.at_sentence_start and lx.word("while", "whilst")
            and i + 1 < len(raws) and raws[i + 1].kind in ("word", "quoted")):
        return None
    here = lx.since_last_sentence()
    only = [t for t in here if t.kind == "ONLY"]
    if only and not any(t.kind in ("TRIGGER", "ONLY_IF") for t in here):
        only[-1].kind = "DROP"
        lx.emit("ONLY_IF")
    elif any(t.kind in ("MODAL", "NOT", "NEVER", "FORBIDDEN", "ALWAYS") for t in here):
        lx.emit("DURING")
    else:
        lx.emit("AND")
    lx.i += 1
    return EMITTED


def _where(lx: Lexer):
    """"Where a claimant is represented by counsel, ...": the lawyers' "if"."""
    if not (lx.at_sentence_start and lx.word("where", "wherever")
            and lx.i + 1 < len(lx.raws) and lx.raws[lx.i + 1].kind in ("word", "quoted")):
        return None
    lx.emit("TRIGGER")
    lx.i += 1
    return EMITTED


def _while_opening(lx: Lexer):
    """"While the account is locked, ...": at every step where it is."""
    if not (lx.at_sentence_start and lx.word("while", "whilst")):
        return None
    lx.emit("WHILE")
    lx.i += 1
    return EMITTED


def _throughout_inside(lx: Lexer):
    """"... below 30 throughout the experiment": at every step."""
    raws, i = lx.raws, lx.i
    if not (not lx.at_sentence_start and lx.word("throughout")
            and i + 2 < len(raws) and raws[i + 1].key in lexicon.DETERMINERS
            and raws[i + 2].kind == "word"):
        return None
    lx.emit("ALWAYS")
    lx.drop(raws[i + 1:i + 3])
    lx.i += 3
    return EMITTED


def _throughout_opening(lx: Lexer):
    """"Throughout the game, ...": the whole session, which every rule covers already."""
    raws, i = lx.raws, lx.i
    if not (lx.at_sentence_start and lx.word("throughout")
            and any(r.text == "," for r in raws[i:])):
        return None
    j = i
    while raws[j].text != ",":
        j += 1
    lx.drop(raws[i:j + 1])
    lx.sentence_start = True
    lx.i = j + 1
    return DONE


def _compared_value(lx: Lexer):
    """The value after a comparison ("above 250 °C", "exceed 200 dollars"), its unit dropped."""
    raw = lx.raw
    if not (lx.previous_kind == "COMPARE" and _is_value(raw)):
        return None
    raws = lx.raws
    value = (raw.text[1:-1] if raw.kind == "quoted" else
             lexicon.NUMBER_WORDS.get(raw.key) if raw.kind == "word" else _number(raw.text))
    lx.emit("VALUE", value)
    lx.i += 1
    i = lx.i
    if i + 1 < len(raws) and raws[i].text == "°" and raws[i + 1].key in ("c", "f"):
        # "above 250 °C": the degree sign and the scale are the unit
        lx.tokens.extend(lx.emitted)
        lx.previous_kind = "VALUE"
        lx.emitted = [Token("DROP", raws[i].text, raws[i].start),
                      Token("DROP", raws[i + 1].text, raws[i + 1].start)]
        lx.i = i = i + 2
    if i < len(raws) and (raws[i].key in lexicon.UNITS or raws[i].text == "%"):
        # "exceed 200 dollars", "above 100 mg": the unit is the field's, not an event
        lx.tokens.extend(lx.emitted)
        lx.previous_kind = "VALUE"
        lx.emitted = [Token("DROP", raws[i].text, raws[i].start)]
        lx.i += 1
    return EMITTED


def _quoted(lx: Lexer):
    if lx.raw.kind != "quoted":
        return None
    lx.emit("QUOTED", lx.raw.text[1:-1])
    lx.i += 1
    return EMITTED


def _number_token(lx: Lexer):
    if lx.raw.kind != "number":
        return None
    lx.emit("NUM", _number(lx.raw.text))
    lx.i += 1
    return EMITTED


def _punctuation(lx: Lexer):
    if lx.raw.kind != "punct":
        return None
    kind = _PUNCT[lx.raw.text]
    # "before." with nothing after it means "earlier": the package must be unloaded before.
    if kind in ("SEP", "COMMA") and lx.tokens and lx.tokens[-1].kind == "BEFORE":
        lx.tokens[-1].kind = "PREVIOUSLY"
    lx.emit(kind)
    if kind == "SEP":
        lx.sentence_start = True
    lx.i += 1
    return EMITTED


def _other(lx: Lexer):
    if lx.raw.kind != "other":
        return None
    lx.emit("UNPLACEABLE")
    lx.i += 1
    return EMITTED


# -- keyword phrases of the lexicon, by what their spec asks

def _compare_phrase(lx: Lexer, covered, source, start, length):
    phrase = " ".join(r.key for r in covered)
    lx.emitted.append(Token("COMPARE", source, start, lexicon.COMPARISON_PHRASES[phrase]))


def _perfect_modal(lx: Lexer, covered, source, start, length):
    """"the key must have been picked up": earlier than the step in question."""
    lx.emitted.append(Token("MODAL", source, start))
    lx.emitted.append(Token("PREVIOUSLY", source, start))


def _below_zero(lx: Lexer, covered, source, start, length):
    """"go negative": a comparison with zero, as "drop below 0" reads."""
    lx.emitted.append(Token("COMPARE", source, start, ("<", "verb")))
    lx.emitted.append(Token("VALUE", source, start, 0))


def _rationale(lx: Lexer, covered, source, start, length):
    """A purpose clause runs to the end of the sentence or clause, and takes the comma that
    introduces it."""
    if lx.tokens and lx.tokens[-1].kind == "COMMA":
        lx.tokens[-1].kind = "DROP"
    j = lx.i
    while j < len(lx.raws) and not (lx.raws[j].kind == "punct" and lx.raws[j].text in ",.;!?"):
        j += 1
    lx.drop(lx.raws[lx.i:j])
    lx.i = j
    return DONE


def _keywords(lx: Lexer, spec, covered, source, start, length):
    """The tokens a phrase's spec names ("AT_MOST NUM=1 TIMES")."""
    following = lx.raws[lx.i + length] if lx.i + length < len(lx.raws) else None
    if (spec == "NEXT_STEP" and covered[-1].key == "after"
            and following is not None and following.kind in ("word", "quoted")):
        # "immediately after P, Q": Q at the step after P's
        spec = "TRIGGER_NEXT"
    if (spec.startswith("AT_LEAST ") and lx.tokens and lx.tokens[-1].kind in
            ("AT_MOST", "AT_LEAST", "EXACTLY", "MORE_THAN", "FEWER_THAN")):
        # "at most three times": "three times" is the count, not a minimum
        spec = spec.removeprefix("AT_LEAST ")
    for part in spec.split():
        name, _, value = part.partition("=")
        lx.emitted.append(Token(name, source, start,
                                (int(value) if value.isdigit() else value) if value else None))


# Specs read by a function of their own (the others are keyword tokens, ``_keywords``).
_SPECIAL_SPECS = {"CMP": _compare_phrase, "BELOW_ZERO": _below_zero, "RATIONALE": _rationale}


def _phrase(lx: Lexer):
    """A keyword phrase of the lexicon ("at some point" -> EVENTUALLY)."""
    match = _match_phrase(lx.raws, lx.i, lx.previous_kind)
    if match is None:
        return None
    length, spec = match
    covered = lx.raws[lx.i:lx.i + length]
    source = lx.text[covered[0].start:covered[-1].start + len(covered[-1].text)]
    start = covered[0].start
    if (spec == "REQUIRES" and " ".join(r.key for r in covered) in lexicon.PERFECT_MODALS
            and _participle_follows(lx.raws, lx.i + length)):
        read = _perfect_modal
    else:
        read = _SPECIAL_SPECS.get(spec)
    if read is None:
        _keywords(lx, spec, covered, source, start, length)
    elif read(lx, covered, source, start, length) == DONE:
        return DONE
    lx.i += length
    return EMITTED


# -- single words

def _number_word(lx: Lexer):
    if not (lx.word() and lx.raw.key in lexicon.NUMBER_WORDS):
        return None
    lx.emit("NUM", lexicon.NUMBER_WORDS[lx.raw.key])
    lx.i += 1
    return EMITTED


def _determiner(lx: Lexer):
    """"take a knife": an article, and a noun phrase after it ("event A" names an event)."""
    if not (lx.word() and lx.raw.key in lexicon.DETERMINERS
            and not (lx.raw.text == "A" and lx.tokens and lx.tokens[-1].kind == "WORD")):
        return None
    lx.drop([lx.raw])
    lx.determiner_pending = True
    lx.i += 1
    return DONE


def _copula(lx: Lexer):
    """"the door is closed": a predicate follows."""
    if not (lx.word() and (lx.raw.key in lexicon.COPULAS
                           or lx.raw.key in lexicon.CONTRACTED_COPULAS)):
        return None
    lx.drop([lx.raw])
    lx.copula_pending = True
    lx.i += 1
    return DONE


def _unplaceable_word(lx: Lexer):
    if not (lx.word() and lx.raw.key in lexicon.UNPLACEABLE):
        return None
    lx.emit("UNPLACEABLE")
    lx.i += 1
    return EMITTED


def _content_word(lx: Lexer):
    if not lx.word():
        return None
    lx.emit("WORD", _word_name(lx.raw.key))
    last = lx.emitted[-1]
    last.after_determiner = lx.determiner_pending
    last.after_copula = lx.copula_pending
    last.pronoun = lx.raw.key in lexicon.PRONOUNS
    lx.i += 1
    return EMITTED


def _unplaceable(lx: Lexer):
    lx.emit("UNPLACEABLE")
    lx.i += 1
    return EMITTED


# The constructions the lexer knows, in the order they are tried on each word: the first that
# applies reads it.  Earlier entries are the more specific readings of the same word.
RULES = (
    _unnamed_subject, _emphasis, _first_unit, _between_range, _message, _message_verb, _since,
    _once_count, _after_count,
    _once_opening, _only_once, _once_after, _already_done, _relative_clause, _stop_doing,
    _first, _any, _purpose, _after_in_trigger, _while_inside, _where, _while_opening,
    _throughout_inside, _throughout_opening, _compared_value, _quoted, _number_token,
    _punctuation, _other, _phrase, _number_word, _determiner, _copula, _unplaceable_word,
    _content_word, _unplaceable,
)


def after_emitting(lx: Lexer) -> None:
    """What every word that emitted tokens leaves for the words after it."""
    raws, i, emitted = lx.raws, lx.i, lx.emitted
    if (emitted and emitted[-1].kind == "STEPS" and i + 1 < len(raws)
            and raws[i].key in ("of", "after", "following", "from")
            and raws[i + 1].kind in ("word", "quoted")):
        # "users must be notified within 5 steps of any account change": a response
        emitted.append(Token("TRIGGER", raws[i].text, raws[i].start))
        lx.i += 1
    if (len(emitted) == 1 and emitted[0].kind == "NUM" and lx.previous_kind in _COUNT_KINDS
            and lx.i < len(raws) and raws[lx.i].kind in ("word", "quoted")
            and _match_phrase(raws, lx.i, "NUM") is None):
        # "no more than two invites", "exactly one flight": a count of the events named
        emitted.append(Token("TIMES", "", emitted[0].start))
    if any(t.kind != "DROP" for t in emitted):
        lx.determiner_pending = False
        # "the details remain unverified": a state follows "stay" or "remain"
        lx.copula_pending = (emitted[-1].kind == "HOLD"
                             and lx.word_raw.key in lexicon.STATE_VERBS)
    for t in emitted:
        lx.tokens.append(t)
        if t.kind != "DROP":
            lx.previous_kind = t.kind
