"""Causal Past Logic formulas (paper 001, definition 2): immutable and interned.

A formula node has an ``op`` and children ``args``:

  ``true`` ``false``          constants
  ``cmp``                     an atomic condition ``left op right`` (payload (left, op, right))
  ``not`` ``and`` ``or`` ``implies`` ``iff``
  ``Y``                       previous local event (false at the first event of the lifeline)
  ``S``                       since, along the current lifeline: ``args = (phi, psi)`` for phi S psi
  ``at``                      ``@B phi``: phi at the latest event of lifeline B visible here
                              (``payload`` = B)
  ``P``                       derived causal past, ``payload`` = B or None:
                              ``P[B] phi`` = ``@B (true S phi)``, ``P phi`` = the disjunction of
                              ``P[B] phi`` over all lifelines (unfolded by the monitor, which knows
                              the lifelines; the oracle reads the definition directly)

Terms of an atomic condition are ``("var", None, x)`` (x in the current event's store),
``("var", B, x)`` (``B.x``: x at the latest visible event of B) or ``("const", value)`` with a
JSON scalar value.  A bare term used as a formula abbreviates ``term == true``.

Structurally equal formulas are the same object (``is``), so formulas are cheap dictionary keys
and the monitor's subformula tables are keyed by identity.  ``O phi`` and ``H phi`` (once,
historically along the lifeline) are sugar, built as ``true S phi`` and ``!(true S !phi)``.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import weakref
from typing import Any

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
# Identifiers that the grammar reserves; a lifeline or variable spelled like one is quoted.
KEYWORDS = frozenset({"true", "false", "null", "Y", "S", "P", "O", "H"})
BARE_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_]|-(?!>))*")

# Binding strength for printing (higher binds tighter); mirrors cpl.lark.
PRECEDENCE = {"iff": 1, "implies": 2, "or": 3, "and": 4, "S": 5,
              "not": 6, "Y": 6, "at": 6, "P": 6, "true": 9, "false": 9, "cmp": 9}


class CplFormula:
    """One interned CPL formula node.  Build with the functions of this module (or parse_cpl)."""

    __slots__ = ("__weakref__", "args", "id", "op", "payload", "text", "size", "depth")

    op: str
    args: tuple[CplFormula, ...]
    payload: Any
    id: int
    text: str
    size: int
    depth: int

    def __setattr__(self, key, value):  # pragma: no cover - guards immutability
        raise AttributeError("formulas are immutable")

    def __reduce__(self):
        # By structure, back through the interning table.
        return (_make, (self.op, self.args, self.payload))

    def __repr__(self) -> str:
        return f"<CplFormula {self.text}>"

    def __str__(self) -> str:
        return self.text

    def subformulas(self) -> list[CplFormula]:
        """Every distinct subformula, children before parents."""
        seen: dict[int, CplFormula] = {}

        def visit(f: CplFormula) -> None:
            if f.id in seen:
                return
            for a in f.args:
                visit(a)
            seen[f.id] = f

        visit(self)
        return list(seen.values())

    def lifelines(self) -> frozenset[str]:
        """Lifelines the formula names (in ``@B``, ``P[B]`` and ``B.x``)."""
        names = set()
        for f in self.subformulas():
            if f.op in ("at", "P") and f.payload is not None:
                names.add(f.payload)
            elif f.op == "cmp":
                for term in (f.payload[0], f.payload[2]):
                    if term[0] == "var" and term[1] is not None:
                        names.add(term[1])
        return frozenset(names)


_table: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_ids = itertools.count()
_lock = threading.Lock()


def _key_of_term(term: tuple) -> tuple:
    # 1, 1.0 and True are equal in Python; keep them apart in interning keys.
    if term[0] == "const":
        return ("const", type(term[1]).__name__, term[1])
    return term


def _make(op: str, args: tuple = (), payload: Any = None) -> CplFormula:
    if op == "cmp":
        key_payload = (_key_of_term(payload[0]), payload[1], _key_of_term(payload[2]))
    else:
        key_payload = payload
    key = (op, tuple(a.id for a in args), key_payload)
    with _lock:
        found = _table.get(key)
        if found is not None:
            return found
        node = object.__new__(CplFormula)
        for name, value in (("op", op), ("args", args), ("payload", payload),
                            ("id", next(_ids)),
                            ("size", 1 + sum(a.size for a in args)),
                            ("depth", 1 + max((a.depth for a in args), default=0))):
            object.__setattr__(node, name, value)
        object.__setattr__(node, "text", _render(node))
        _table[key] = node
        return node


# --- constructors ---------------------------------------------------------------------------

def _check_term(term: tuple) -> tuple:
    if not isinstance(term, tuple) or len(term) not in (2, 3):
        raise ValueError(f"not a term: {term!r}")
    if term[0] == "const":
        value = term[1]
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"a constant must be a JSON scalar, got {type(value).__name__}")
        return ("const", value)
    if term[0] == "var" and len(term) == 3:
        _, lifeline, name = term
        if not isinstance(name, str) or not name:
            raise ValueError("a variable needs a non-empty name")
        if lifeline is None and (not BARE_NAME.fullmatch(name) or name in KEYWORDS):
            # The grammar spells unqualified variables bare; others are read as B.x.
            raise ValueError(f"variable {name!r} cannot be written unqualified")
        if lifeline is not None and (not isinstance(lifeline, str) or not lifeline):
            raise ValueError("a lifeline needs a non-empty name")
        return term
    raise ValueError(f"not a term: {term!r}")


def Var(name: str, lifeline: str | None = None) -> tuple:
    """The term ``name`` (current store) or ``lifeline.name`` (latest visible event of it)."""
    return _check_term(("var", lifeline, name))


def Const(value: Any) -> tuple:
    return _check_term(("const", value))


def Compare(left: tuple, op: str, right: tuple) -> CplFormula:
    if op not in COMPARISONS:
        raise ValueError(f"unknown comparison {op!r}")
    return _make("cmp", (), (_check_term(left), op, _check_term(right)))


def Truth(term: tuple) -> CplFormula:
    """A bare term as a formula: ``term == true``."""
    return Compare(term, "==", ("const", True))


def Not(f: CplFormula) -> CplFormula:
    return _make("not", (f,))


def _nary(op: str, parts) -> CplFormula:
    flat: list[CplFormula] = []
    for p in parts:
        flat.extend(p.args if p.op == op else (p,))
    if len(flat) < 2:
        raise ValueError(f"'{op}' needs at least two operands")
    return _make(op, tuple(flat))


def And(*parts: CplFormula) -> CplFormula:
    return _nary("and", parts)


def Or(*parts: CplFormula) -> CplFormula:
    return _nary("or", parts)


def Implies(a: CplFormula, b: CplFormula) -> CplFormula:
    return _make("implies", (a, b))


def Iff(a: CplFormula, b: CplFormula) -> CplFormula:
    return _make("iff", (a, b))


def Y(f: CplFormula) -> CplFormula:
    return _make("Y", (f,))


def S(phi: CplFormula, psi: CplFormula) -> CplFormula:
    """``phi S psi``: psi held at some event of this lifeline up to here, phi at every one since."""
    return _make("S", (phi, psi))


def At(lifeline: str, f: CplFormula) -> CplFormula:
    if not isinstance(lifeline, str) or not lifeline:
        raise ValueError("a lifeline needs a non-empty name")
    return _make("at", (f,), lifeline)


def Past(f: CplFormula, lifeline: str | None = None) -> CplFormula:
    """Causal past: ``P phi`` (any lifeline) or ``P[B] phi``."""
    if lifeline is not None and (not isinstance(lifeline, str) or not lifeline):
        raise ValueError("a lifeline needs a non-empty name")
    return _make("P", (f,), lifeline)


def Once(f: CplFormula) -> CplFormula:
    return S(TRUE, f)


def Historically(f: CplFormula) -> CplFormula:
    return Not(S(TRUE, Not(f)))


def unfold_past(f: CplFormula, lifelines) -> CplFormula:
    """``f`` with every ``P`` replaced by its definition over ``lifelines`` (section 4):
    ``P[B] phi = @B (true S phi)`` and ``P phi = P[B1] phi | ... | P[Bn] phi``."""
    lifelines = tuple(lifelines)
    memo: dict[int, CplFormula] = {}

    def go(g: CplFormula) -> CplFormula:
        done = memo.get(g.id)
        if done is not None:
            return done
        args = tuple(go(a) for a in g.args)
        if g.op == "P":
            targets = (g.payload,) if g.payload is not None else lifelines
            parts = [At(b, S(TRUE, args[0])) for b in targets]
            out = FALSE if not parts else parts[0] if len(parts) == 1 else Or(*parts)
        elif args == g.args:
            out = g
        elif g.op in ("and", "or"):
            out = _nary(g.op, args)
        else:
            out = _make(g.op, args, g.payload)
        memo[g.id] = out
        return out

    return go(f)


# --- printing -------------------------------------------------------------------------------

def quote_name(name: str) -> str:
    """A lifeline or variable name as the grammar reads it."""
    if BARE_NAME.fullmatch(name) and name not in KEYWORDS:
        return name
    return json.dumps(name, ensure_ascii=False)


def term_text(term: tuple) -> str:
    if term[0] == "const":
        value = term[1]
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return repr(value)
        return json.dumps(value, ensure_ascii=False)
    _, lifeline, name = term
    if lifeline is None:
        return name
    return quote_name(lifeline) + "." + quote_name(name)


def _render(f: CplFormula) -> str:
    op = f.op
    if op == "true":
        return "true"
    if op == "false":
        return "false"
    if op == "cmp":
        left, cmp, right = f.payload
        if cmp == "==" and right == ("const", True) and right[1] is True and left[0] == "var":
            return term_text(left)
        return f"{term_text(left)} {cmp} {term_text(right)}"
    prec = PRECEDENCE[op]

    def wrap(g: CplFormula, min_prec: int) -> str:
        return g.text if PRECEDENCE[g.op] >= min_prec else "(" + g.text + ")"

    if op in ("and", "or"):
        sep = " & " if op == "and" else " | "
        return sep.join(wrap(a, prec + 1) for a in f.args)
    if op in ("implies", "iff", "S"):
        sep = {"implies": " -> ", "iff": " <-> ", "S": " S "}[op]
        return wrap(f.args[0], prec + 1) + sep + wrap(f.args[1], prec)
    if op == "not":
        return "!" + wrap(f.args[0], prec)
    if op == "Y":
        return "Y " + wrap(f.args[0], prec)
    if op == "at":
        return "@" + quote_name(f.payload) + " " + wrap(f.args[0], prec)
    if op == "P":
        head = "P" if f.payload is None else f"P[{quote_name(f.payload)}]"
        return head + " " + wrap(f.args[0], prec)
    raise AssertionError(op)  # pragma: no cover


TRUE = _make("true")
FALSE = _make("false")
