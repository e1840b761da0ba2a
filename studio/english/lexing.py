"""Lexing: English text in, tokens out (keyword phrases, content words, numbers, quoted atoms).

Each construction the lexer knows is a small rule in ``lex_rules.RULES``, tried in order on
every word; ``lex`` only walks the text and runs the passes over whole sentences after it."""

from __future__ import annotations

from .lex_rules import DONE, EMITTED, OPENING_RULES, RULES, Lexer, after_emitting
from .sentences import _means, _opening_clause_commas, _opening_only, _opening_within
from .tokens import _raw_tokens, Token


def lex(text: str) -> list[Token]:
    """The tokens of ``text``, DROP tokens included (they are placed: they carry no meaning)."""
    lx = Lexer(text, _raw_tokens(text))
    while lx.i < len(lx.raws):
        lx.emitted = []
        lx.word_raw = lx.raw
        if any(rule(lx) == DONE for rule in OPENING_RULES):
            continue
        lx.at_sentence_start, lx.sentence_start = lx.sentence_start, False
        outcome = next(outcome for rule in RULES if (outcome := rule(lx)) is not None)
        if outcome == EMITTED:
            after_emitting(lx)
    tokens = lx.tokens
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


