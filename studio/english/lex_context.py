"""What the words around a word tell the lexer: a rule's heading, a keyword phrase of the lexicon,
a message phrase, whether a sentence goes on with a participle or a value."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from . import lexicon
from .tokens import _Raw, _RELATIVE_VERBS, Token


# The word lists, one entry a line with why it is there (read once, at import).
_WORDS = tomllib.loads((Path(__file__).with_name("words") / "headings.toml").read_text("utf-8"))
# Words that make a rule's label ("On-call note:", "Hazard H-2:", "Runbook step 4:").
_HEADING_WORDS = frozenset(_WORDS["heading_words"])
_SOURCE_WORDS = tuple(_WORDS["source_words"])
_GREETINGS = frozenset(_WORDS["greetings"])
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


# "the agent's next message must include an apology": its owner, noun and verb
_MESSAGE_OWNERS = frozenset(_WORDS["message_owners"])
_MESSAGE_NOUNS = frozenset(_WORDS["message_nouns"])
_MESSAGE_VERBS = frozenset(_WORDS["message_verbs"])
_SPEAKER_WORDS = frozenset(_WORDS["speaker_words"])


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
