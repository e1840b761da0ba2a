"""From lark's exceptions to errors a person can act on: line, column, what was expected there.

Shared by the rule grammar (``studio.logic.parser``) and the CPL grammar
(``studio.causal.parser``): each passes its parse function, its terminals' readable names and how
to build its own error; nothing but that error escapes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

# (message, line, column, expected, text) -> the grammar's own exception
MakeError = Callable[[str, int, int, tuple[str, ...], str], Exception]


class SemanticError(Exception):
    """Raised by a grammar callback: a well-formed text that still means nothing (a bad escape, a
    formula nested too deeply); ``token`` places it."""

    def __init__(self, message: str, token):
        self.message = message
        self.token = token


def token_position(token) -> tuple[int, int]:
    return (getattr(token, "line", 1) or 1, getattr(token, "column", 1) or 1)


def join(items: tuple[str, ...]) -> str:
    if not items:
        return "something else"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def end_position(text: str) -> tuple[int, int]:
    lines = text.rstrip().split("\n")
    return len(lines), len(lines[-1]) + 1


def parse_with_positions(parse: Callable[[str], object], text: str,
                         terminal_names: Mapping[str, str], make_error: MakeError,
                         character_hint: Callable[[str], str] = lambda char: ""):
    """``parse(text)``, with every lark error (and callback error) turned into ``make_error``."""

    def expected_of(names) -> tuple[str, ...]:
        return tuple(sorted({terminal_names.get(n, n) for n in names if not n.startswith("__")}))

    try:
        return parse(text)
    except VisitError as exc:  # raised inside a callback
        inner = exc.orig_exc
        if isinstance(inner, SemanticError):
            line, column = token_position(inner.token)
            raise make_error(inner.message, line, column, (), text) from None
        if isinstance(inner, (ValueError, RecursionError)):
            raise make_error(str(inner) or "formula nests too deeply", 1, 1, (), text) from None
        raise
    except SemanticError as exc:
        line, column = token_position(exc.token)
        raise make_error(exc.message, line, column, (), text) from None
    except UnexpectedCharacters as exc:
        char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        expected = expected_of(exc.allowed or ())
        raise make_error(f"unexpected character {char!r}{character_hint(char)}; expected "
                         f"{join(expected)}", exc.line, exc.column, expected, text) from None
    except UnexpectedEOF as exc:
        expected = expected_of(exc.expected)
        line, column = end_position(text)
        raise make_error(f"the formula ends too early; expected {join(expected)}", line, column,
                         expected, text) from None
    except UnexpectedToken as exc:
        expected = expected_of(exc.expected)
        if exc.token.type == "$END":
            line, column = end_position(text)
            message = f"the formula ends too early; expected {join(expected)}"
        else:
            line, column = exc.line, exc.column
            message = f"unexpected {str(exc.token)[:40]}; expected {join(expected)}"
        raise make_error(message, line, column, expected, text) from None
    except UnexpectedInput as exc:  # pragma: no cover - other lark input errors
        raise make_error(str(exc), getattr(exc, "line", 1), getattr(exc, "column", 1), (),
                         text) from None
    except RecursionError:
        raise make_error("formula nests too deeply", 1, 1, (), text) from None
