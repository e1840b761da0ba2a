"""Parse rule text into formulas.

``parse(text)`` returns an interned :class:`Formula` or raises :class:`FormulaSyntaxError` naming
the line, the column and what was expected there.  Nothing else escapes: the parser is fuzzed for
it.  The grammar lives in ``grammar.lark`` and is parsed with lark's LALR(1) parser, whose
callbacks build formulas directly (no intermediate tree).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer

from . import formula as fm
from . import invisible
from .formula import Formula
from .lark_errors import SemanticError as _SemanticError
from .lark_errors import parse_with_positions

MAX_FORMULA_LENGTH = 20_000
MAX_DEPTH = 200

# How the grammar's terminals read in an error message.
_TERMINAL_NAMES = {
    "IFF": "'<->'", "IMPLIES": "'->'", "OR": "'|'", "AND": "'&'", "NOT": "'!'",
    "UNTIL": "'U'", "WEAK_UNTIL": "'W'", "RELEASE": "'R'", "SINCE": "'S'",
    "NEXT": "'X'", "WEAK_NEXT": "'WX'", "EVENTUALLY": "'F'", "ALWAYS": "'G'",
    "YESTERDAY": "'Y'", "WEAK_YESTERDAY": "'Z'", "ONCE": "'O'", "HISTORICALLY": "'H'",
    "COMPARE": "a comparison (== != < <= > >=)", "TRUE": "'true'", "FALSE": "'false'",
    "NULL": "'null'", "PREV": "'prev'", "NAME": "an atom", "STRING": "a quoted string",
    "INT": "a whole number", "NUMBER": "a number", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "$END": "the end of the formula",
}
_OPERAND_START = ("NAME", "STRING", "TRUE", "FALSE", "LPAR", "NOT", "NEXT", "ALWAYS", "EVENTUALLY")


class FormulaSyntaxError(ValueError):
    """A rule that does not parse.  ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, line: int, column: int, expected: tuple[str, ...] = (),
                 text: str = ""):
        self.message = message
        self.line = line
        self.column = column
        self.expected = expected
        self.text = text
        super().__init__(f"line {line}, column {column}: {message}")

    def context(self) -> str:
        """The offending line with a caret under the column."""
        lines = self.text.split("\n")  # lark counts lines by \n only
        src = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        return src + "\n" + " " * (self.column - 1) + "^"


class _Build(Transformer):
    """LALR callbacks: tokens and children in, formulas out."""

    def _guard(self, f: Formula, token) -> Formula:
        if f.depth > MAX_DEPTH:
            raise _SemanticError(f"formula nests deeper than {MAX_DEPTH} levels", token)
        return f

    def true(self, c):
        return fm.TRUE

    def false(self, c):
        return fm.FALSE

    def atom(self, c):
        return fm.Atom(str(c[0]))

    def quoted_atom(self, c):
        name = _decode_string(c[0], "atom")
        if not name:
            raise _SemanticError("an atom cannot be the empty string", c[0])
        return fm.Atom(name)

    def field(self, c):
        return ("path", str(c[0]))

    def previous_field(self, c):
        return ("prev", str(c[1]))

    def number(self, c):
        text = str(c[0])
        try:
            value = float(text) if any(ch in text for ch in ".eE") else int(text)
        except ValueError:  # more digits than Python converts
            raise _SemanticError(f"number {text[:20]}... is too long", c[0]) from None
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise _SemanticError(f"number {text[:20]} is out of range", c[0])
        return ("const", value)

    def string(self, c):
        return ("const", _decode_string(c[0], "quoted text"))

    def true_value(self, c):
        return ("const", True)

    def false_value(self, c):
        return ("const", False)

    def null_value(self, c):
        return ("const", None)

    def comparison(self, c):
        left, op, right = c
        return fm.Compare(left, str(op), right)

    def bounds(self, c):
        for token in c:
            if len(token) > 6:
                raise _SemanticError(
                    f"bound {str(token)[:20]} is too large (at most {fm.MAX_BOUND} steps)", token)
        low, high = int(c[0]), int(c[1])
        if low > high:
            raise _SemanticError(f"bounds [{low},{high}]: the lower bound exceeds the upper", c[0])
        if high > fm.MAX_BOUND:
            raise _SemanticError(f"bound {high} is too large (at most {fm.MAX_BOUND} steps)", c[1])
        return (low, high)

    def _unary(self, ctor, c):
        return self._guard(ctor(c[1]), c[0])

    def not_(self, c):
        return self._unary(fm.Not, c)

    def next(self, c):
        return self._unary(fm.X, c)

    def weak_next(self, c):
        return self._unary(fm.WX, c)

    def eventually(self, c):
        return self._unary(fm.F, c)

    def always(self, c):
        return self._unary(fm.G, c)

    def eventually_bounded(self, c):
        return self._guard(fm.FBounded(*c[1], c[2]), c[0])

    def always_bounded(self, c):
        return self._guard(fm.GBounded(*c[1], c[2]), c[0])

    def yesterday(self, c):
        return self._unary(fm.Y, c)

    def weak_yesterday(self, c):
        return self._unary(fm.Z, c)

    def once(self, c):
        return self._unary(fm.O, c)

    def historically(self, c):
        return self._unary(fm.H, c)

    def _binary(self, ctor, c):
        return self._guard(ctor(c[0], c[2]), c[1])

    def iff(self, c):
        return self._binary(fm.Iff, c)

    def implies(self, c):
        return self._binary(fm.Implies, c)

    def until(self, c):
        return self._binary(fm.U, c)

    def weak_until(self, c):
        return self._binary(fm.W, c)

    def release(self, c):
        return self._binary(fm.R, c)

    def since(self, c):
        return self._binary(fm.S, c)

    def or_(self, c):
        return self._guard(fm.Or(*c[::2]), c[1])

    def and_(self, c):
        return self._guard(fm.And(*c[::2]), c[1])


def _decode_string(token: Token, what: str) -> str:
    try:
        text = json.loads(str(token))
    except ValueError as exc:
        raise _SemanticError(f"bad escape in quoted string ({exc.msg})", token) from None
    if "\x00" in text:  # no database column can hold it (rule warnings, vocabulary)
        raise _SemanticError(f"the {what} contains NUL (\\u0000, written as an escape) at "
                             f"column {token.column}; remove it", token)
    found = invisible.find_invisible(text, allowed=_ESCAPED_CONTROLS)
    if found is not None:  # written as an escape: the printed formula would hide it
        raise _SemanticError(f"the {what} contains {invisible.describe(text[found])} (written "
                             f"as an escape) at column {token.column}; remove it", token)
    return text


# Characters that change how text is displayed without being seen (Trojan Source: an atom
# that reads as one name and is another) and lone surrogates, which are not characters: the
# one rule of studio.logic.invisible.  Between tokens a formula may break lines and indent.
_LAYOUT = "\t\n\r\f"
# Inside quotes, controls below U+0020 print back as escapes (``"\\n"``), so they stay seen;
# NUL is refused before (no database column holds it).
_ESCAPED_CONTROLS = "".join(chr(code) for code in range(1, 0x20))
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NAME_CHAR = re.compile(r"[a-z0-9_:.\-]")
_COMPARE_BEFORE = re.compile(r"(?:==|!=|<=|>=|<|>)\s*$")


class _Place:
    """Where a refused character is, as a token would say it."""

    def __init__(self, line: int, column: int):
        self.line = line
        self.column = column


def _refuse_invisible(text: str) -> None:
    """Refuse invisible characters (format and control characters, lone surrogates: the rule
    of studio.logic.invisible) anywhere in the text, naming the line and column and whether
    they sit in an atom."""
    pos = invisible.find_invisible(text, allowed=_LAYOUT)
    if pos is None:
        return
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    # Touching an atom's letters, it is part of what the reader takes for that atom.
    touching = text[pos - 1:pos] + text[pos + 1:pos + 2]
    what = "atom" if _NAME_CHAR.search(touching) else "formula"
    for quoted in _QUOTED.finditer(text):
        if quoted.start() < pos < quoted.end():
            # A quoted string after a comparison operator is a value; elsewhere an atom.
            value = _COMPARE_BEFORE.search(text, 0, quoted.start()) is not None
            what = "quoted text" if value else "atom"
            break
    raise _SemanticError(f"the {what} contains {invisible.describe(text[pos])} at column "
                         f"{column}; retype it", _Place(line, column))


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("grammar.lark")).read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", transformer=_Build(),
                propagate_positions=False, maybe_placeholders=False)


@lru_cache(maxsize=8192)
def _parse_text(text: str):
    # Live monitors are saved as residual text and read back on every delivery: the same few
    # texts over and over.  Formulas are interned, so the memo changes nothing but the time
    # (and keeps at most this many formulas alive); errors are raised afresh, never cached.
    _refuse_invisible(text)
    return _parser().parse(text)


def parse(text: str) -> Formula:
    """Parse one formula.  Raises :class:`FormulaSyntaxError` on any bad input."""
    if not isinstance(text, str):
        raise FormulaSyntaxError("a formula must be text", 1, 1)
    if len(text) > MAX_FORMULA_LENGTH:
        raise FormulaSyntaxError(
            f"formula is {len(text)} characters long; the limit is {MAX_FORMULA_LENGTH}", 1, 1,
            text=text)
    if not text.strip():
        raise FormulaSyntaxError("empty formula", 1, 1, ("a formula",), text)
    return parse_with_positions(_parse_text, text, _TERMINAL_NAMES, FormulaSyntaxError,
                                _capital_hint)


def _capital_hint(char: str) -> str:
    if char.isupper():
        return (" (operators are single capitals X WX F G U W R Y Z O H S; atoms start "
                "lower-case)")
    return ""


def to_text(f: Formula, unicode: bool = False) -> str:
    """The canonical text of ``f``; with ``unicode`` the boolean and temporal symbols."""
    if not unicode:
        return f.text
    return _render_unicode(f)


_UNICODE_BINARY = {"implies": " → ", "iff": " ↔ ", "U": " U ", "W": " W ", "R": " R ", "S": " S "}
_UNICODE_UNARY = {"not": "¬", "X": "○ ", "F": "◇ ", "G": "□ "}


def _render_unicode(f: Formula) -> str:
    op = f.op
    if op in ("true", "false", "atom", "cmp"):
        return f.text
    prec = fm.PRECEDENCE[op]

    def wrap(g: Formula, min_prec: int) -> str:
        inner = _render_unicode(g)
        return inner if fm.PRECEDENCE[g.op] >= min_prec else "(" + inner + ")"

    if op in ("and", "or"):
        return (" ∧ " if op == "and" else " ∨ ").join(wrap(a, prec + 1) for a in f.args)
    if op in _UNICODE_BINARY:
        return wrap(f.args[0], prec + 1) + _UNICODE_BINARY[op] + wrap(f.args[1], prec)
    if op in fm.BOUNDED:
        a, b = f.payload
        return ("◇" if op == "F[]" else "□") + f"[{a},{b}] " + wrap(f.args[0], prec)
    prefix = _UNICODE_UNARY.get(op, op + " ")
    return prefix + wrap(f.args[0], prec)
