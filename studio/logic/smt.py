"""The data side of anticipation: what one step can do to a rule's data atoms, decided with z3.

A rule's data atoms compare values read from the event (``path``), from the previous event
(``prev(path)``) and constants, with ``== != < <= > >=`` and nothing else: no arithmetic.  Paper
002 (MONTHE, section 5, class II after Felli et al. 2023) shows anticipatory monitoring decidable
for such *monotonicity constraints* with one-step lookback.  The reason is what makes the search
here finite and exact: numbers are a dense order without end points, and a sequence of steps is
consistent as soon as every two consecutive steps are (dense orders amalgamate).  So all that a
step passes on to the next is the *type* of the values that ``prev()`` will read: each value's
kind and, for numbers and strings, where it lies relative to the rule's constants and to the
other such values.  A type is kept as a canonical valuation (``Context``), so states of the
search are hashable and recur.

Values as ``studio.logic.events.compare`` reads them (the semantics modelled exactly):
  every path at every step has a kind - missing, null, bool, number, string or other (a list or
  an object) - and a value; a comparison with a missing side is false, values of different kinds
  are unequal (``!=`` holds), order holds only between two numbers or two strings.

In z3 every path is a kind (an integer) and a real: numbers are themselves, a string is its
rank in lexicographic order (the rule's string constants at 1, 2, ...; other strings in
between or beyond), booleans are 0 and 1, values of kind other are told apart by their real,
missing and null are 0.  Strings are read as a dense order: exact unless two of the strings
involved are adjacent (``"a"`` and ``"a\\x00"``) or one is the empty string, which nothing
between or below can be; rules with such a string constant are outside the fragment.

``Frames(rule comparisons).steps(context)`` lists, for a context, every distinct way the next
step can go: which data atoms hold, and the context after it.  It is an all-solutions loop over
z3 (each model's frame is blocked and the solver asked again), cached per context and counted
(``Frames.calls``).  Paths where one extends another (``data.x`` and ``data.x.y``) are outside
the fragment (``DataFragmentError``): their values are not independent.
"""

from __future__ import annotations

import threading
from fractions import Fraction
from typing import Any

from .events import MISSING, read_path
from .formula import Formula

# Kinds, as integers in z3.
MISSING_K, NULL_K, BOOL_K, NUMBER_K, STRING_K, OTHER_K = range(6)
KIND_NAMES = ("missing", "null", "bool", "number", "string", "other")
ORDERED = (NUMBER_K, STRING_K)

# A context: per path ``prev()`` reads (sorted), ``(kind, canonical value)``.
Context = tuple


# z3's default context is not safe to use from two threads at once (live requests, review
# pages): every use of it here holds this lock.
Z3_LOCK = threading.RLock()


class DataFragmentError(ValueError):
    """Data atoms outside the decidable fragment the anticipation handles."""


def kind_of(value: Any) -> int:
    if value is MISSING:
        return MISSING_K
    if value is None:
        return NULL_K
    if value is True or value is False:
        return BOOL_K
    if isinstance(value, (int, float)):
        return NUMBER_K
    if isinstance(value, str):
        return STRING_K
    return OTHER_K


def _slot(value, anchors: list) -> tuple:
    """Where ``value`` lies among sorted ``anchors``: ``(i, 0)`` equal to anchor i, ``(i, 1)``
    strictly between anchor i and i+1 (i = -1: below every anchor)."""
    lo, hi = 0, len(anchors)
    while lo < hi:
        mid = (lo + hi) // 2
        if anchors[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(anchors) and anchors[lo] == value:
        return (lo, 0)
    return (lo - 1, 1)


def canonical_order(values: list, anchors: list, anchor_reps: list[Fraction]) -> list[Fraction]:
    """Canonical reals for ``values`` of one ordered kind: the same order among themselves and
    relative to ``anchors`` (sorted, in the values' own space) as the originals, with anchors
    mapped to ``anchor_reps`` (increasing).  Two valuations with the same type get the same
    reals."""
    slots = [_slot(v, anchors) for v in values]
    groups: dict[tuple, list] = {}
    for v, s in zip(values, slots):
        if s[1] == 1:
            groups.setdefault(s, [])
            if v not in groups[s]:
                groups[s].append(v)
    ranks = {}
    for s, members in groups.items():
        members.sort()
        t = len(members)
        i = s[0]
        for r, v in enumerate(members, 1):
            if not anchor_reps:
                rep = Fraction(r)
            elif i < 0:
                rep = anchor_reps[0] - (t + 1 - r)
            elif i >= len(anchor_reps) - 1:
                rep = anchor_reps[-1] + r
            else:
                low, high = anchor_reps[i], anchor_reps[i + 1]
                rep = low + (high - low) * Fraction(r, t + 1)
            ranks[(s, v)] = rep
    out = []
    for v, s in zip(values, slots):
        out.append(anchor_reps[s[0]] if s[1] == 0 else ranks[(s, v)])
    return out


def _fraction(value) -> Fraction:
    return Fraction(value) if not isinstance(value, Fraction) else value


class Frames:
    """The data atoms of one rule and the steps they allow; see the module documentation."""

    def __init__(self, comparisons: tuple[Formula, ...], cache_limit: int = 20_000,
                 domain: tuple[int, int] | None = None):
        """``domain=(lo, hi)``: for tests against brute force, every path always holds a whole
        number from lo to hi (contexts are then the values themselves)."""
        self.comparisons = tuple(comparisons)
        self.domain = domain
        paths, prev_paths = set(), set()
        numbers, strings = set(), set()
        for c in self.comparisons:
            p = c.payload
            for side in (p.left, p.right):
                if side[0] == "path":
                    paths.add(side[1])
                elif side[0] == "prev":
                    paths.add(side[1])
                    prev_paths.add(side[1])
                else:
                    kind = kind_of(side[1])
                    if kind == NUMBER_K:
                        numbers.add(side[1])
                    elif kind == STRING_K:
                        strings.add(side[1])
        self.paths = tuple(sorted(paths))
        self.prev_paths = tuple(sorted(prev_paths))
        for a in self.paths:
            for b in self.paths:
                if a != b and b.startswith(a + "."):
                    raise DataFragmentError(
                        f"`{a}` and `{b}` are read as separate values but one lies inside the "
                        "other")
        self.numbers = sorted({_fraction(n) for n in numbers})
        self._number_values = sorted(numbers)  # as written: quicker to compare than Fractions
        self.strings = sorted(strings)
        if "" in self.strings or any(b == a + "\x00" for a in self.strings for b in self.strings):
            raise DataFragmentError("the empty string, or two strings with nothing between "
                                    "them, as constants: string order is read as dense")
        self.string_reps = [Fraction(i + 1) for i in range(len(self.strings))]
        self.calls = 0          # z3 check() calls
        self.cache_hits = 0
        self.cache_limit = cache_limit
        self._cache: dict[Context, tuple] = {}
        self._raw: dict[tuple, Context] = {}
        self._z3 = None

    # -- contexts ----------------------------------------------------------------------------

    @property
    def initial(self) -> Context:
        """Before the first event: ``prev()`` reads nothing."""
        return tuple((MISSING_K, Fraction(0)) for _ in self.prev_paths)

    def context_of(self, previous: Any) -> Context:
        """The context after an event, from the values it had at the paths ``prev()`` reads
        (``previous``: the event, or the monitor's snapshot of it; None before any event)."""
        if not self.prev_paths:
            return ()
        if previous is None:
            return self.initial
        if self.domain is not None:
            return tuple((NUMBER_K, Fraction(read_path(previous, p))) for p in self.prev_paths)
        if len(self.prev_paths) == 1:
            # One value: its type is its kind and its slot among the constants (the common
            # case, and on every step of a rule that reads prev(): kept quick).
            value = read_path(previous, self.prev_paths[0])
            kind = type(value)
            if kind is int or kind is float:
                key = (NUMBER_K, _slot(value, self._number_values))
            elif kind is str:
                key = (STRING_K, _slot(value, self.strings))
            elif kind is bool:
                key = (BOOL_K, value)
            else:
                key = kind_of(value)
            found = self._raw.get(key)
            if found is None:
                found = self._raw[key] = self._canonical([(kind_of(value), value)], python=True)
            return found
        raw = tuple(read_path(previous, p) for p in self.prev_paths)
        key = tuple((type(v), v) if isinstance(v, (int, float, str, bool)) or v is None
                    else (type(v), id(v)) for v in raw)
        found = self._raw.get(key)
        if found is None:
            found = self._canonical([(kind_of(v), v) for v in raw], python=True)
            if len(self._raw) >= self.cache_limit:
                self._raw.clear()
            self._raw[key] = found
        return found

    def _canonical(self, kinded: list[tuple[int, Any]], python: bool) -> Context:
        """Canonical reals per path: python values (``python``) or z3 reals (Fractions)."""
        if self.domain is not None:
            return tuple((k, _fraction(v)) for k, v in kinded)
        out: list = [None] * len(kinded)
        for kind in (NUMBER_K, STRING_K):
            idx = [i for i, (k, _) in enumerate(kinded) if k == kind]
            if not idx:
                continue
            values = [kinded[i][1] for i in idx]
            if kind == NUMBER_K:
                values = [_fraction(v) for v in values]
                anchors, reps = self.numbers, self.numbers
            elif python:
                anchors, reps = self.strings, self.string_reps
            else:
                anchors, reps = self.string_reps, self.string_reps
            for i, rep in zip(idx, canonical_order(values, anchors, reps)):
                out[i] = (kind, rep)
        others: list = []
        for i, (k, v) in enumerate(kinded):
            if k == BOOL_K:
                out[i] = (k, Fraction(int(bool(v))) if python else _fraction(v))
            elif k in (MISSING_K, NULL_K):
                out[i] = (k, Fraction(0))
            elif k == OTHER_K:
                for j, seen in enumerate(others):
                    if seen == v:
                        out[i] = (k, Fraction(j))
                        break
                else:
                    out[i] = (k, Fraction(len(others)))
                    others.append(v)
        return tuple(out)

    # -- z3 ----------------------------------------------------------------------------------

    def _setup(self):
        import z3

        kinds = {p: z3.Int(f"k|{p}") for p in self.paths}
        vals = {p: z3.Real(f"v|{p}") for p in self.paths}
        domain = []
        for p in self.paths:
            k, v = kinds[p], vals[p]
            if self.domain is not None:
                whole = z3.Int(f"i|{p}")
                domain += [k == NUMBER_K, v == z3.ToReal(whole), whole >= self.domain[0],
                           whole <= self.domain[1]]
                continue
            domain += [k >= 0, k <= OTHER_K,
                       z3.Implies(z3.Or(k == MISSING_K, k == NULL_K), v == 0),
                       z3.Implies(k == BOOL_K, z3.Or(v == 0, v == 1))]
        prev_k = {p: z3.Int(f"pk|{p}") for p in self.prev_paths}
        prev_v = {p: z3.Real(f"pv|{p}") for p in self.prev_paths}
        self._z3 = (z3, kinds, vals, domain, prev_k, prev_v)

    def _const(self, value) -> tuple:
        import z3

        kind = kind_of(value)
        if kind == NUMBER_K:
            rep = _fraction(value)
        elif kind == STRING_K:
            rep = self.string_reps[self.strings.index(value)]
        elif kind == BOOL_K:
            rep = Fraction(int(value))
        else:
            rep = Fraction(0)
        return z3.IntVal(kind), _real(z3, rep)

    def _operand(self, side: tuple):
        _, kinds, vals, _, prev_k, prev_v = self._z3
        if side[0] == "path":
            return kinds[side[1]], vals[side[1]]
        if side[0] == "prev":
            return prev_k[side[1]], prev_v[side[1]]
        return self._const(side[1])

    def atom(self, c: Formula):
        """The z3 truth of data atom ``c`` (current values, previous values as ``pk|``/``pv|``)."""
        if self._z3 is None:
            self._setup()
        z3 = self._z3[0]
        p = c.payload
        (kl, vl), (kr, vr) = self._operand(p.left), self._operand(p.right)
        defined = z3.And(kl != MISSING_K, kr != MISSING_K)
        same = z3.And(kl == kr, vl == vr)
        if p.op == "==":
            return z3.And(defined, same)
        if p.op == "!=":
            return z3.And(defined, z3.Not(same))
        order = {"<": vl < vr, "<=": vl <= vr, ">": vl > vr, ">=": vl >= vr}[p.op]
        return z3.And(defined, kl == kr, z3.Or(kl == NUMBER_K, kl == STRING_K), order)

    def _bind(self, context: Context) -> list:
        z3, _, _, _, prev_k, prev_v = self._z3
        return [c for p, (k, v) in zip(self.prev_paths, context)
                for c in (prev_k[p] == k, prev_v[p] == _real(z3, v))]

    def steps(self, context: Context) -> tuple[tuple[frozenset, Context], ...]:
        """Every distinct next step from ``context``: (the data atoms that hold, the context
        after it).  Cached per context."""
        found = self._cache.get(context)
        if found is not None:
            self.cache_hits += 1
            return found
        with Z3_LOCK:
            return self._steps(context)

    def _steps(self, context: Context) -> tuple:
        if self._z3 is None:
            self._setup()
        z3, kinds, vals, domain, _, _ = self._z3
        solver = z3.Solver()
        solver.add(*domain)
        solver.add(*self._bind(context))
        atoms = [(c, self.atom(c)) for c in self.comparisons]
        # What the next context depends on: the kinds of the prev() paths' values and, for the
        # ordered kinds, their order against the constants and each other.
        shape = []
        for i, p in enumerate(self.prev_paths):
            k, v = kinds[p], vals[p]
            if self.domain is not None:
                shape += [v == n for n in range(self.domain[0], self.domain[1] + 1)]
                continue
            for kind in range(6):
                shape.append(k == kind)
            for rep in self.numbers:
                shape += [z3.And(k == NUMBER_K, v < _real(z3, rep)),
                          z3.And(k == NUMBER_K, v == _real(z3, rep))]
            for rep in self.string_reps:
                shape += [z3.And(k == STRING_K, v < _real(z3, rep)),
                          z3.And(k == STRING_K, v == _real(z3, rep))]
            for q in self.prev_paths[i + 1:]:
                shape += [z3.And(k == kinds[q], v < vals[q]), z3.And(k == kinds[q], v == vals[q])]
        out = []
        while True:
            self.calls += 1
            if solver.check() != z3.sat:
                break
            model = solver.model()
            truth = [z3.is_true(model.eval(expr, model_completion=True)) for _, expr in atoms]
            held = frozenset(c for (c, _), t in zip(atoms, truth) if t)
            after = self._canonical(
                [(model.eval(kinds[p], model_completion=True).as_long(),
                  _to_fraction(model.eval(vals[p], model_completion=True)))
                 for p in self.prev_paths], python=False)
            out.append((held, after))
            literals = [expr if t else z3.Not(expr) for (_, expr), t in zip(atoms, truth)]
            literals += [s if z3.is_true(model.eval(s, model_completion=True)) else z3.Not(s)
                         for s in shape]
            solver.add(z3.Not(z3.And(*literals)) if literals else z3.BoolVal(False))
        result = tuple(out)
        if len(self._cache) >= self.cache_limit:
            self._cache.clear()
        self._cache[context] = result
        return result

    def jointly_impossible(self, a: Formula, b: Formula) -> bool:
        """No step, after any previous event, makes both data atoms hold."""
        with Z3_LOCK:
            return self._jointly_impossible(a, b)

    def _jointly_impossible(self, a: Formula, b: Formula) -> bool:
        if self._z3 is None:
            self._setup()
        z3, _, _, domain, prev_k, prev_v = self._z3
        solver = z3.Solver()
        solver.add(*domain)
        for p in self.prev_paths:
            k, v = prev_k[p], prev_v[p]
            solver.add(k >= 0, k <= OTHER_K, z3.Implies(z3.Or(k == MISSING_K, k == NULL_K), v == 0),
                       z3.Implies(k == BOOL_K, z3.Or(v == 0, v == 1)))
        solver.add(self.atom(a), self.atom(b))
        self.calls += 1
        return solver.check() == z3.unsat


def _real(z3, value: Fraction):
    value = _fraction(value)
    return z3.RealVal(f"{value.numerator}/{value.denominator}")


def _to_fraction(ref) -> Fraction:
    return Fraction(ref.numerator_as_long(), ref.denominator_as_long())
