"""The English reader's tokens: what the lexer cuts a text into, and the error it raises."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import lexicon


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


def _is_participle(word: Token) -> bool:
    value = str(word.value)
    return (len(value) > 4 and value.endswith("ed")) or value in lexicon.IRREGULAR_PARTICIPLES
