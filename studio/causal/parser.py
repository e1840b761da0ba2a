"""Parse CPL guard text into interned formulas.

``parse_cpl(text)`` returns a :class:`CplFormula` or raises :class:`CplSyntaxError` with the
1-based ``line`` and ``column`` of the problem and what was ``expected`` there; nothing else
escapes.  The grammar is ``cpl.lark`` (lark LALR(1)); the callbacks build formulas directly.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer

from studio.logic.lark_errors import SemanticError as _SemanticError
from studio.logic.lark_errors import join, parse_with_positions
from studio.logic.parser import FormulaSyntaxError

from . import formula as cf
from .formula import CplFormula

MAX_FORMULA_LENGTH = 20_000
MAX_DEPTH = 200

# How the grammar's terminals read in an error message.
_TERMINAL_NAMES = {
    "IFF": "'<->'", "IMPLIES": "'->'", "OR": "'|'", "AND": "'&'", "NOT": "'!'",
    "SINCE": "'S'", "YESTERDAY": "'Y'", "ONCE": "'O'", "HISTORICALLY": "'H'", "PAST": "'P'",
    "AT": "'@'", "COMPARE": "a comparison (== != < <= > >=)", "TRUE": "'true'",
    "FALSE": "'false'", "NULL": "'null'", "NAME": "a name", "STRING": "a quoted string",
    "NUMBER": "a number", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "DOT": "'.'", "$END": "the end of the formula",
}


class CplSyntaxError(FormulaSyntaxError):
    """A guard that does not parse.  ``line`` and ``column`` are 1-based; ``context()`` shows the
    line with a caret, as for rule formulas."""

    def __init__(self, line: int, column: int, expected: tuple[str, ...] = (), message: str = "",
                 text: str = ""):
        expected = tuple(expected)
        super().__init__(message or (f"expected {join(expected)}" if expected
                                     else "syntax error"), line, column, expected, text)


def _decode_string(token: Token) -> str:
    try:
        return json.loads(str(token))
    except ValueError as exc:
        raise _SemanticError(f"bad escape in quoted string ({exc})", token) from None


class _Build(Transformer):
    """LALR callbacks: tokens and children in, formulas (and terms) out."""

    def _guard(self, f: CplFormula, token) -> CplFormula:
        if f.depth > MAX_DEPTH:
            raise _SemanticError(f"formula nests deeper than {MAX_DEPTH} levels", token)
        return f

    def true(self, c):
        return cf.TRUE

    def false(self, c):
        return cf.FALSE

    def name(self, c):
        token = c[0]
        if token.type == "STRING":
            text = _decode_string(token)
            if not text:
                raise _SemanticError("a name cannot be the empty string", token)
            return (text, token)
        return (str(token), token)

    def local_variable(self, c):
        return ("var", None, str(c[0]))

    def lifeline_variable(self, c):
        (lifeline, _), (variable, _) = c
        return ("var", lifeline, variable)

    def number(self, c):
        text = str(c[0])
        try:
            value = float(text) if any(ch in text for ch in ".eE") else int(text)
        except ValueError:  # more digits than Python converts
            raise _SemanticError(f"number {text[:20]}... is too long", c[0]) from None
        if isinstance(value, float) and math.isinf(value):
            raise _SemanticError(f"number {text[:20]} is out of range", c[0])
        return ("const", value)

    def string(self, c):
        return ("const", _decode_string(c[0]))

    def true_value(self, c):
        return ("const", True)

    def false_value(self, c):
        return ("const", False)

    def null_value(self, c):
        return ("const", None)

    def truth(self, c):
        return cf.Truth(c[0])

    def comparison(self, c):
        left, op, right = c
        if left[0] == "const" and right[0] == "const":
            raise _SemanticError("a comparison needs a variable on at least one side", op)
        spelled = {"=": "==", "≠": "!=", "≤": "<=", "≥": ">="}.get(str(op), str(op))
        return cf.Compare(left, spelled, right)

    def not_(self, c):
        return self._guard(cf.Not(c[1]), c[0])

    def yesterday(self, c):
        return self._guard(cf.Y(c[1]), c[0])

    def once(self, c):
        return self._guard(cf.Once(c[1]), c[0])

    def historically(self, c):
        return self._guard(cf.Historically(c[1]), c[0])

    def at(self, c):
        (lifeline, _) = c[1]
        return self._guard(cf.At(lifeline, c[2]), c[0])

    def past(self, c):
        return self._guard(cf.Past(c[1]), c[0])

    def past_on(self, c):
        (lifeline, _) = c[1]
        return self._guard(cf.Past(c[2], lifeline), c[0])

    def since(self, c):
        return self._guard(cf.S(c[0], c[2]), c[1])

    def implies(self, c):
        return self._guard(cf.Implies(c[0], c[2]), c[1])

    def iff(self, c):
        return self._guard(cf.Iff(c[0], c[2]), c[1])

    def or_(self, c):
        return self._guard(cf.Or(*c[::2]), c[1])

    def and_(self, c):
        return self._guard(cf.And(*c[::2]), c[1])


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = Path(__file__).with_name("cpl.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", transformer=_Build(),
                propagate_positions=False, maybe_placeholders=False)


def parse_cpl(text: str) -> CplFormula:
    """Parse one CPL formula.  Raises :class:`CplSyntaxError` on any bad input."""
    if not isinstance(text, str):
        raise CplSyntaxError(1, 1, (), "a formula must be text")
    if len(text) > MAX_FORMULA_LENGTH:
        raise CplSyntaxError(1, 1, (), f"formula is {len(text)} characters long; the limit is "
                             f"{MAX_FORMULA_LENGTH}", text)
    if not text.strip():
        raise CplSyntaxError(1, 1, ("a formula",), "empty formula", text)
    return parse_with_positions(_parser().parse, text, _TERMINAL_NAMES, _cpl_error)


def _cpl_error(message: str, line: int, column: int, expected: tuple[str, ...],
               text: str) -> CplSyntaxError:
    return CplSyntaxError(line, column, expected, message, text)
