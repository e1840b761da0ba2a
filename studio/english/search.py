"""Which words keep a sentence from being read: the search behind the reader's error messages,
bounded by a number of steps (never by a clock)."""

from __future__ import annotations

from dataclasses import replace

from lark.exceptions import UnexpectedInput, UnexpectedToken

from .syntax import _canonical, _parser
from .tokens import Token


MAX_TOKENS_FOR_PAIRS = 12
# The search gives up (and names where the parser stopped) after this many steps, one step a
# token through the parser (a parse costs about as much as the sentence is long): a count,
# not a clock, so the message never depends on how busy the machine is.  300 costs at most
# about 0.5 s of CPU on the longest sentences of the test and bench sets (the time limit it
# replaces).
SEARCH_STEPS = 300


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
    steps_left = SEARCH_STEPS
    for i in candidates:
        if steps_left < len(visible):
            return []
        steps_left -= len(visible)
        if _parses(tokens, {i}):
            return [i]
    if len(visible) > MAX_TOKENS_FOR_PAIRS:
        return []
    for a_pos, a in enumerate(visible):
        for b in visible[a_pos + 1:]:
            if steps_left < len(visible):
                return []
            steps_left -= len(visible)
            if _parses(tokens, {a, b}):
                return [a, b]
    return []
