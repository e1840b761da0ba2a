"""Lexing: English text in, tokens out (keyword phrases, content words, numbers, quoted atoms)."""

from __future__ import annotations

import re

from . import lexicon
from .sentences import (_COUNT_KINDS, _means, _opening_clause_commas, _opening_only,
    _opening_within, _word_name)
from .tokens import _is_participle, _number, _PUNCT, _Raw, _raw_tokens, _RELATIVE_VERBS, Token


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
