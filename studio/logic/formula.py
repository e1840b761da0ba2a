"""Immutable, hash-consed LTL formulas with past operators and data atoms.

Every formula is built through the constructors below, which simplify on construction and intern
the result: two structurally equal formulas are the same object, so equality is identity and a
formula is a cheap dictionary key (the progression memo and the monitor's lazy automaton rely on
this).  The interning table holds weak references, so residuals nobody uses any more are freed.

Operators (``op`` values):
  constants  ``true`` ``false``
  leaves     ``atom`` (a proposition), ``cmp`` (a data comparison read from the event)
  boolean    ``not`` ``and`` ``or`` ``implies`` ``iff``
  future     ``X`` (strong next) ``WX`` (weak next) ``F`` ``G`` ``U`` ``W`` ``R``
             ``F[]`` ``G[]`` (bounded, with ``bounds = (a, b)``)
  past       ``Y`` ``Z`` ``O`` ``H`` ``S``
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import weakref
from collections.abc import Iterable
from typing import Any

FUTURE_UNARY = ("X", "WX", "F", "G")
FUTURE_BINARY = ("U", "W", "R")
BOUNDED = ("F[]", "G[]")
PAST_UNARY = ("Y", "Z", "O", "H")
PAST_BINARY = ("S",)
PAST_OPS = frozenset(PAST_UNARY + PAST_BINARY)
FUTURE_OPS = frozenset(FUTURE_UNARY + FUTURE_BINARY + BOUNDED)
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")

# Bare atom names: lower-case start; '-' allowed but never directly before '>' (so `p->q` lexes
# as an implication).  Anything else is written as a quoted string.
BARE_NAME = re.compile(r"[a-z_](?:[a-z0-9_:.]|-(?!>))*")
KEYWORDS = frozenset({"true", "false", "prev", "null"})

# Binding strength for printing (higher binds tighter).
PRECEDENCE = {
    "iff": 1, "implies": 2, "or": 3, "and": 4,
    "U": 5, "W": 5, "R": 5, "S": 5,
    "not": 6, "X": 6, "WX": 6, "F": 6, "G": 6, "F[]": 6, "G[]": 6,
    "Y": 6, "Z": 6, "O": 6, "H": 6,
    "true": 9, "false": 9, "atom": 9, "cmp": 9,
}


class Formula:
    """One interned formula node.  Never construct directly: use the functions of this module."""

    __slots__ = (
        "__weakref__",
        "args",
        "atoms",
        "depth",
        "empty_value",
        "has_future",
        "has_past",
        "id",
        "name",
        "op",
        "payload",
        "size",
        "text",
    )

    op: str
    args: tuple[Formula, ...]
    name: str | None          # the proposition of an ``atom``
    payload: Any              # ``(a, b)`` for bounded operators, a ``Comparison`` for ``cmp``
    id: int
    text: str                 # canonical ASCII rendering; also the canonical sort key
    atoms: frozenset          # leaves the formula reads: atom names and cmp/past nodes
    size: int
    depth: int
    has_past: bool
    has_future: bool
    empty_value: bool         # truth on the empty remaining trace (used at the end of a session)

    def __setattr__(self, key, value):  # pragma: no cover - guards immutability
        raise AttributeError("formulas are immutable")

    def __reduce__(self):
        # Pickle by structure so unpickling goes back through the interning table.
        return (_make, (self.op, self.args, self.name, self.payload))

    def __repr__(self) -> str:
        return f"<Formula {self.text}>"

    def __str__(self) -> str:
        return self.text

    # Formulas compare and hash by identity (the default), which is exact thanks to interning.

    @property
    def is_past(self) -> bool:
        return self.op in PAST_OPS

    @property
    def is_leaf(self) -> bool:
        """Leaves of progression: propositions, data comparisons and past subformulas."""
        return self.op in ("atom", "cmp") or self.op in PAST_OPS

    def subformulas(self) -> list[Formula]:
        """Every distinct subformula, children before parents."""
        seen: dict[int, Formula] = {}

        def visit(f: Formula) -> None:
            if f.id in seen:
                return
            for a in f.args:
                visit(a)
            seen[f.id] = f

        visit(self)
        return list(seen.values())


class Comparison:
    """A data atom ``left op right``; operands are ``("path", p)``, ``("prev", p)`` or
    ``("const", value)``.  Immutable; the interning of its ``cmp`` node keys on ``key``."""

    __slots__ = ("key", "left", "op", "right")

    def __init__(self, left: tuple, op: str, right: tuple):
        object.__setattr__(self, "left", left)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "right", right)
        object.__setattr__(self, "key", (left, op, _const_key(right)))

    def __setattr__(self, key, value):  # pragma: no cover
        raise AttributeError("comparisons are immutable")

    def __reduce__(self):
        return (Comparison, (self.left, self.op, self.right))

    @property
    def uses_prev(self) -> bool:
        return self.left[0] == "prev" or self.right[0] == "prev"


def _const_key(operand: tuple) -> tuple:
    # 1 and 1.0 and True compare equal in Python; keep them apart in interning keys.
    if operand[0] == "const":
        return ("const", type(operand[1]).__name__, operand[1])
    return operand


_table: weakref.WeakValueDictionary[tuple, Formula] = weakref.WeakValueDictionary()
_ids = itertools.count()
# Constants and frequently used helpers are kept alive for the life of the process.
_pinned: list[Formula] = []


_intern_lock = threading.Lock()


def _make(op: str, args: tuple = (), name: str | None = None, payload: Any = None) -> Formula:
    key = (op, tuple(a.id for a in args), name,
           payload.key if isinstance(payload, Comparison) else payload)
    found = _table.get(key)
    if found is not None:
        return found
    # Two threads building the same formula must get one object: equality is identity.
    with _intern_lock:
        found = _table.get(key)
        if found is not None:
            return found
        return _create(op, args, name, payload, key)


def _create(op: str, args: tuple, name: str | None, payload: Any, key: tuple) -> Formula:
    f = object.__new__(Formula)
    put = object.__setattr__
    put(f, "op", op)
    put(f, "args", args)
    put(f, "name", name)
    put(f, "payload", payload)
    put(f, "id", next(_ids))
    put(f, "text", _render(op, args, name, payload))
    if op == "atom":
        atoms: frozenset = frozenset((name,))
    elif op == "cmp" or op in PAST_OPS:
        atoms = frozenset((f,))
    else:
        atoms = frozenset().union(*(a.atoms for a in args)) if args else frozenset()
    put(f, "atoms", atoms)
    put(f, "size", 1 + sum(a.size for a in args))
    put(f, "depth", 1 + max((a.depth for a in args), default=0))
    put(f, "has_past", op in PAST_OPS or any(a.has_past for a in args))
    put(f, "has_future", op in FUTURE_OPS or any(a.has_future for a in args))
    put(f, "empty_value", _empty_value(op, args))
    _table[key] = f
    return f


def _empty_value(op: str, args: tuple) -> bool:
    """Truth on the empty remaining trace: what a residual means when the session ends.

    Strong obligations (an atom to read, X, F, U, bounded F) fail; weak ones (WX, G, W, R, bounded
    G) hold vacuously.  Literals never occur unguarded in a residual except under a strong next,
    so reading them as false is exact.  Negation only wraps leaves in the normal form the monitor
    uses, and the empty trace has no leaf to read, so it is false as well.
    """
    if op == "true":
        return True
    if op == "and":
        return all(a.empty_value for a in args)
    if op == "or":
        return any(a.empty_value for a in args)
    if op in ("WX", "G", "W", "R", "G[]"):
        return True
    if op == "implies":
        return (not args[0].empty_value) or args[1].empty_value
    if op == "iff":
        return args[0].empty_value == args[1].empty_value
    return False


# ---------------------------------------------------------------------------------------------
# Printing (the canonical text is computed once, at construction)

def quote_string(text: str) -> str:
    # JSON string syntax, which the parser reads back with json.loads.
    return json.dumps(text, ensure_ascii=False)


def quote_atom(name: str) -> str:
    if BARE_NAME.fullmatch(name) and name not in KEYWORDS:
        return name
    return quote_string(name)


def render_operand(operand: tuple) -> str:
    kind, value = operand
    if kind == "path":
        return value
    if kind == "prev":
        return f"prev({value})"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quote_string(value)
    return repr(value)


def _wrap(f: Formula, min_prec: int) -> str:
    return f.text if PRECEDENCE[f.op] >= min_prec else "(" + f.text + ")"


def _wrap_operand(f: Formula, min_prec: int) -> str:
    # !(amount > 5) rather than !amount > 5, which parses the same but reads wrongly.
    return "(" + f.text + ")" if f.op == "cmp" else _wrap(f, min_prec)


def _render(op: str, args: tuple, name: str | None, payload: Any) -> str:
    if op in ("true", "false"):
        return op
    if op == "atom":
        return quote_atom(name)
    if op == "cmp":
        c: Comparison = payload
        return f"{render_operand(c.left)} {c.op} {render_operand(c.right)}"
    prec = PRECEDENCE[op]
    if op == "not":
        return "!" + _wrap_operand(args[0], prec)
    if op in ("X", "WX", "F", "G", "Y", "Z", "O", "H"):
        return op + " " + _wrap_operand(args[0], prec)
    if op in BOUNDED:
        a, b = payload
        return f"{op[0]}[{a},{b}] " + _wrap_operand(args[0], prec)
    if op in ("and", "or"):
        sym = " & " if op == "and" else " | "
        return sym.join(_wrap(a, prec + 1) for a in args)
    sym = {"implies": " -> ", "iff": " <-> ", "U": " U ", "W": " W ", "R": " R ", "S": " S "}[op]
    # Binary operators are right-associative: the left operand must bind tighter.
    return _wrap(args[0], prec + 1) + sym + _wrap(args[1], prec)


# ---------------------------------------------------------------------------------------------
# Constructors (simplifying)

TRUE = _make("true")
FALSE = _make("false")
_pinned += [TRUE, FALSE]


def Atom(name: str) -> Formula:
    if not isinstance(name, str) or not name:
        raise ValueError("an atom needs a non-empty name")
    return _make("atom", name=name)


def Compare(left: tuple, op: str, right: tuple) -> Formula:
    if op not in COMPARISONS:
        raise ValueError(f"unknown comparison {op!r}")
    return _make("cmp", payload=Comparison(left, op, right))


def Not(f: Formula) -> Formula:
    if f is TRUE:
        return FALSE
    if f is FALSE:
        return TRUE
    if f.op == "not":
        return f.args[0]
    return _make("not", (f,))


def _nary(op: str, fs: Iterable[Formula]) -> Formula:
    unit, zero = (TRUE, FALSE) if op == "and" else (FALSE, TRUE)
    flat: dict[int, Formula] = {}
    stack = list(fs)
    stack.reverse()
    while stack:
        f = stack.pop()
        if f is zero:
            return zero
        if f is unit:
            continue
        if f.op == op:
            stack.extend(reversed(f.args))
            continue
        flat[f.id] = f
    if not flat:
        return unit
    # p & !p is false on every trace, the empty remainder of a session included.  (p | !p is
    # *not* true there: the residual of `X p | X !p` must fail when the session ends.)
    if op == "and":
        for f in flat.values():
            if f.op == "not" and f.args[0].id in flat:
                return FALSE
    if len(flat) == 1:
        return next(iter(flat.values()))
    ordered = tuple(sorted(flat.values(), key=_order_key))
    return _make(op, ordered)


def _order_key(f: Formula) -> tuple:
    # Deterministic across runs (ids are not): by size, then by text.
    return (f.size, f.text)


def And(*fs: Formula) -> Formula:
    return _nary("and", fs)


def Or(*fs: Formula) -> Formula:
    return _nary("or", fs)


def Implies(a: Formula, b: Formula) -> Formula:
    if a is TRUE:
        return b
    if a is FALSE or b is TRUE:
        return TRUE
    if b is FALSE:
        return Not(a)
    if a is b:
        return TRUE
    return _make("implies", (a, b))


def Iff(a: Formula, b: Formula) -> Formula:
    if a is b:
        return TRUE
    if a is TRUE:
        return b
    if b is TRUE:
        return a
    if a is FALSE:
        return Not(b)
    if b is FALSE:
        return Not(a)
    return _make("iff", (a, b))


def X(f: Formula) -> Formula:
    return _make("X", (f,))


def WX(f: Formula) -> Formula:
    return _make("WX", (f,))


def F(f: Formula) -> Formula:
    # F false is false on every trace; F true is *not* true (it is false on the empty trace).
    if f is FALSE:
        return FALSE
    if f.op == "F":
        return f
    return _make("F", (f,))


def G(f: Formula) -> Formula:
    # G true is true on every trace (also the empty one); G false means "the trace has ended".
    if f is TRUE:
        return TRUE
    if f.op == "G":
        return f
    return _make("G", (f,))


def U(a: Formula, b: Formula) -> Formula:
    if b is TRUE or b is FALSE or a is FALSE:
        return b
    if a is b:
        return a
    if a is TRUE:
        return F(b)
    return _make("U", (a, b))


def W(a: Formula, b: Formula) -> Formula:
    if b is TRUE or a is b:
        return b if b is TRUE else a
    if a is FALSE:
        return b
    if a is TRUE:
        return TRUE
    return _make("W", (a, b))


def R(a: Formula, b: Formula) -> Formula:
    # a R b: b holds up to and including the first a (or forever).
    if b is TRUE or b is FALSE or a is TRUE:
        return b
    if a is b:
        return a
    if a is FALSE:
        return G(b)
    return _make("R", (a, b))


def FBounded(a: int, b: int, f: Formula) -> Formula:
    """F[a,b] f: f holds at some step between a and b steps from now (and that step exists)."""
    _check_bounds(a, b)
    if f is FALSE:
        return FALSE
    if a == 0 and b == 0:
        return f
    return _make("F[]", (f,), payload=(a, b))


def GBounded(a: int, b: int, f: Formula) -> Formula:
    """G[a,b] f: f holds at every step between a and b steps from now that exists."""
    _check_bounds(a, b)
    if f is TRUE:
        return TRUE
    if a == 0 and b == 0:
        return f
    return _make("G[]", (f,), payload=(a, b))


MAX_BOUND = 10_000  # bounded operators are sugar over next: keep the residuals small


def _check_bounds(a: int, b: int) -> None:
    if not (isinstance(a, int) and isinstance(b, int)) or a < 0 or b < a:
        raise ValueError(f"bounds must satisfy 0 <= a <= b, got [{a},{b}]")
    if b > MAX_BOUND:
        raise ValueError(f"bound {b} is too large (at most {MAX_BOUND} steps)")


def Y(f: Formula) -> Formula:
    return _make("Y", (f,))


def Z(f: Formula) -> Formula:
    return _make("Z", (f,))


def O(f: Formula) -> Formula:
    if f is TRUE or f is FALSE:
        return f
    if f.op == "O":
        return f
    return _make("O", (f,))


def H(f: Formula) -> Formula:
    if f is TRUE or f is FALSE:
        return f
    if f.op == "H":
        return f
    return _make("H", (f,))


def S(a: Formula, b: Formula) -> Formula:
    if b is TRUE or b is FALSE:
        return b
    if a is TRUE:
        return O(b)
    if a is FALSE:
        return b
    return _make("S", (a, b))


UNARY = {"not": Not, "X": X, "WX": WX, "F": F, "G": G, "Y": Y, "Z": Z, "O": O, "H": H}
BINARY = {"and": And, "or": Or, "implies": Implies, "iff": Iff,
          "U": U, "W": W, "R": R, "S": S}
BOUNDED_CONSTRUCTORS = {"F[]": FBounded, "G[]": GBounded}

# "There is a current step" and "the trace has ended": the residual of a strong (weak) next whose
# operand would otherwise be read wrongly on the empty trace.
MORE = F(TRUE)
END = G(FALSE)
_pinned += [MORE, END]


def rebuild(f: Formula, args: tuple) -> Formula:
    """The node ``f`` with new children, through the simplifying constructors."""
    op = f.op
    if op in UNARY:
        return UNARY[op](args[0])
    if op in BINARY:
        return BINARY[op](*args)
    if op in BOUNDED_CONSTRUCTORS:
        return BOUNDED_CONSTRUCTORS[op](*f.payload, args[0])
    return f
