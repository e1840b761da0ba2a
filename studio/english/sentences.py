"""Rewrites of a lexed text, sentence by sentence, before parsing (and the variants tried when the
first parse fails: an instruction, a colon that requires, a summary before a colon, a permission
before "but")."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from . import lexicon
from .tokens import Token


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
