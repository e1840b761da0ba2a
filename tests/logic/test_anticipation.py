"""Anticipatory verdicts against independent exact oracles.

The oracle is an automaton built another way: the *type* of a position of a trace is the truth
value of every subformula there, straight from the LTLf definitions (as in the finite-trace
evaluator), and it depends only on the letter there, the letter before (for ``prev()``) and the
type of the next position.  The set of types a non-empty suffix can have after a given letter is
a least fixed point over finitely many types, so it is computed exactly.  A prefix then has
every continuation's verdict at hand: run each possible type of the continuation's first
position (or the end of the trace) back through the prefix.  Nothing of progression, the review
search or z3 is used.

Propositional formulas are drawn without past operators (types only look forward); data formulas
read ``data.x`` over the whole numbers 0 to 3, where the oracle enumerates every value and z3 is
asked with the same domain (``smt.Frames(domain=...)``).
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.logic import formula as fm
from studio.logic.anticipation import (
    CURRENTLY_SATISFIED,
    CURRENTLY_VIOLATED,
    PERMANENTLY_SATISFIED,
    PERMANENTLY_VIOLATED,
    RuleAnticipation,
)
from studio.logic.events import compare
from studio.logic.finite import holds
from studio.logic.formula import Formula
from studio.logic.parser import parse
from studio.logic.progression import nnf, progress
from studio.logic.smt import Frames
from studio.monitor.anticipation import Anticipator, SessionAnticipation
from studio.monitor.session import RuleSet, SessionMonitor

from .strategies import formulas

END = None


def desugar(f: Formula) -> Formula:
    """Bounded operators as chains of next: F[a,b] g = X^a (g | X(g | ...)), G with WX."""
    if not f.args:
        return f
    args = tuple(desugar(a) for a in f.args)
    if f.op in ("F[]", "G[]"):
        low, high = f.payload
        g = args[0]
        if f.op == "F[]":
            body = g
            for _ in range(high - low):
                body = fm.Or(g, fm.X(body))
            for _ in range(low):
                body = fm.X(body)
        else:
            body = g
            for _ in range(high - low):
                body = fm.And(g, fm.WX(body))
            for _ in range(low):
                body = fm.WX(body)
        return body
    return fm.rebuild(f, args)


class TypeOracle:
    """Exact four-valued verdicts by backward types (see the module documentation).

    A letter is ``(atoms, x)`` (``x`` None for propositional formulas).  What a position needs
    from the one before is ``before``: None at the first position, else the previous letter and
    the previous values of the subformulas without future operators (past operators are read
    forward, from them).  The types a suffix can have after ``before`` are a least fixed point
    over the finitely many ``before`` values reachable from the start."""

    def __init__(self, f: Formula, letters: list):
        self.f = desugar(f)
        self.subs = self.f.subformulas()
        self.index = {g: i for i, g in enumerate(self.subs)}
        self.present = [i for i, g in enumerate(self.subs) if not g.has_future]
        self.letters = letters
        befores, todo = {None}, [None]
        while todo:
            b = todo.pop()
            for letter in letters:
                nb = self.next_before(letter, b)
                if nb not in befores:
                    befores.add(nb)
                    todo.append(nb)
        self.after: dict = {b: set() for b in befores}
        changed = True
        while changed:
            changed = False
            for b in befores:
                found = self.after[b]
                for letter in letters:
                    for nxt in [END, *self.after[self.next_before(letter, b)]]:
                        t = self.column(letter, b, nxt)
                        if t not in found:
                            found.add(t)
                            changed = True

    def next_before(self, letter, before):
        t = self.column(letter, before, END)  # present subformulas do not read the next type
        return (letter, tuple(t[i] for i in self.present))

    def column(self, letter, before, nxt) -> tuple:
        atoms, x = letter
        event = {"data": {"x": x}} if x is not None else {}
        prev_event = None
        past = None
        if before is not None:
            (_, px), values = before
            prev_event = {"data": {"x": px}} if px is not None else {}
            past = dict(zip(self.present, values))
        v: list = []
        idx = self.index
        for g in self.subs:
            op = g.op
            k = [v[idx[a]] for a in g.args]
            n = (lambda a: nxt[idx[a]]) if nxt is not END else None
            was = (lambda a: past[idx[a]]) if past is not None else None
            if op == "true":
                r = True
            elif op == "false":
                r = False
            elif op == "atom":
                r = g.name in atoms
            elif op == "cmp":
                r = compare(g.payload, event, prev_event)
            elif op == "not":
                r = not k[0]
            elif op == "and":
                r = all(k)
            elif op == "or":
                r = any(k)
            elif op == "implies":
                r = (not k[0]) or k[1]
            elif op == "iff":
                r = k[0] == k[1]
            elif op == "X":
                r = n(g.args[0]) if n else False
            elif op == "WX":
                r = n(g.args[0]) if n else True
            elif op == "F":
                r = k[0] or (n(g) if n else False)
            elif op == "G":
                r = k[0] and (n(g) if n else True)
            elif op == "U":
                r = k[1] or (k[0] and (n(g) if n else False))
            elif op == "W":
                r = k[1] or (k[0] and (n(g) if n else True))
            elif op == "R":
                r = k[1] and (k[0] or (n(g) if n else True))
            elif op == "Y":
                r = was(g.args[0]) if was else False
            elif op == "Z":
                r = was(g.args[0]) if was else True
            elif op == "O":
                r = k[0] or (was(g) if was else False)
            elif op == "H":
                r = k[0] and (was(g) if was else True)
            elif op == "S":
                r = k[1] or (k[0] and (was(g) if was else False))
            else:
                raise AssertionError(op)
            v.append(r)
        return tuple(v)

    def verdict(self, prefix: list) -> str:
        top = self.index[self.f]
        befores = [None]
        for letter in prefix:
            befores.append(self.next_before(letter, befores[-1]))

        def value(cont) -> bool:
            t = cont
            for i in range(len(prefix) - 1, -1, -1):
                t = self.column(prefix[i], befores[i], t)
            return t[top]

        now = value(END)
        others = {value(t) for t in self.after[befores[-1]]}
        if now:
            return PERMANENTLY_SATISFIED if others <= {True} else CURRENTLY_SATISFIED
        return PERMANENTLY_VIOLATED if others <= {False} else CURRENTLY_VIOLATED


def _atoms_of(f: Formula) -> list[str]:
    return sorted({g.name for g in f.subformulas() if g.op == "atom"})


def _subsets(names):
    out = [frozenset()]
    for n in names:
        out += [s | {n} for s in out]
    return out


def anticipated(f: Formula, prefix: list, frames: Frames | None) -> str:
    """The module under test, driven as the monitor drives it: progression of the rule's
    normal form through the prefix, then the verdict of the residual."""
    residual = nnf(f)
    comparisons = [g for g in f.subformulas() if g.op == "cmp"]
    previous = None
    for atoms, x in prefix:
        event = {"data": {"x": x}} if x is not None else {}
        labels = set(atoms) | {c for c in comparisons if compare(c.payload, event, previous)}
        residual = progress(residual, frozenset(labels))
        previous = event
    ra = RuleAnticipation((), frames)
    context = frames.context_of(previous) if frames is not None else ()
    verdict = ra.verdict(residual, None, context)
    assert verdict.anticipated, verdict.reason
    return verdict.value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(3, past=False, data=False), st.data())
def test_propositional_matches_the_type_automaton(f, data):
    names = _atoms_of(f)
    letters = [(s, None) for s in _subsets(names)]
    oracle = TypeOracle(f, letters)
    prefix = data.draw(st.lists(st.sampled_from(letters), min_size=1, max_size=5))
    assert anticipated(f, prefix, None) == oracle.verdict(prefix), f.text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(3, past=False, data=True, bounded=False), st.data())
def test_data_matches_brute_force_over_small_integers(f, data):
    comparisons = tuple(g for g in f.subformulas() if g.op == "cmp")
    names = _atoms_of(f)
    xs = list(range(0, 4)) if comparisons else [None]
    letters = [(s, x) for s in _subsets(names) for x in xs]
    oracle = TypeOracle(f, letters)
    frames = Frames(comparisons, domain=(0, 3)) if comparisons else None
    prefix = data.draw(st.lists(st.sampled_from(letters), min_size=1, max_size=4))
    assert anticipated(f, prefix, frames) == oracle.verdict(prefix), f.text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(3, monitorable=True, bounded=False), st.data())
def test_session_anticipation_matches_the_oracle_with_past_and_data(f, data):
    """Through the monitor (TRAC's state with its past memory, the data context from the
    events), step by step; ``complete_step`` is the first step whose verdict was permanent."""
    comparisons = tuple(g for g in f.subformulas() if g.op == "cmp")
    names = _atoms_of(f)
    xs = list(range(0, 3)) if comparisons else [None]
    letters = [(s, x) for s in _subsets(names) for x in xs]
    oracle = TypeOracle(f, letters)
    prefix = data.draw(st.lists(st.sampled_from(letters), min_size=1, max_size=4))
    ruleset = RuleSet([("rule", f, "first")])
    monitor = SessionMonitor(ruleset)
    anticipation = SessionAnticipation(monitor, Anticipator(ruleset, domain=(0, 2)))
    first_permanent = None
    for i, (atoms, x) in enumerate(prefix):
        event = {"labels": sorted(atoms), "data": {"x": x} if x is not None else {}}
        monitor.feed(event)
        anticipation.observe(event)
        expected = oracle.verdict(prefix[:i + 1])
        if first_permanent is None and expected.startswith("permanently"):
            first_permanent = i
        assert anticipation.verdicts[0].value == expected, (f.text, prefix[:i + 1])
    result = anticipation.results()[0]
    assert result["complete_step"] == first_permanent


CHAINS = [
    "F(data.x > 2 & X(prev(data.x) < data.x))",
    "G(prev(data.x) < data.x) & F[2,3] (data.x == 1)",
    "F(data.x == 0) & G(data.x == prev(data.x) | data.x > prev(data.x)) & F(data.x < 1 & X true)",
    "(data.x != 1) U (data.x == prev(data.x) & X(data.x < prev(data.x)))",
    "G(data.x > prev(data.x) -> X(data.x > prev(data.x))) & F(data.x == 2) & F(data.x == 0)",
]


def test_chains_through_prev_match_the_oracle():
    """Constraints that carry over several steps: the context after each step matters."""
    for text in CHAINS:
        f = parse(text)
        comparisons = tuple(g for g in f.subformulas() if g.op == "cmp")
        letters = [(frozenset(), x) for x in range(4)]
        oracle = TypeOracle(f, letters)
        frames = Frames(comparisons, domain=(0, 3))
        for prefix in [[(frozenset(), a)] for a in range(4)] + [
                [(frozenset(), a), (frozenset(), b)] for a in range(4) for b in range(4)]:
            assert anticipated(f, prefix, frames) == oracle.verdict(prefix), (text, prefix)


def test_progression_is_late_where_anticipation_is_not():
    # `F p & G !p` simplifies to nothing: progression keeps it pending for ever.
    f = parse("F p & G !p")
    assert anticipated(f, [(frozenset(), None)], None) == PERMANENTLY_VIOLATED
    # `G(p | X F !p) | ...`-style: valid residual that progression never reduces to true.
    g = parse("G F p | F G !p")
    assert anticipated(g, [(frozenset({"p"}), None)], None) == TypeOracle(
        g, [(s, None) for s in _subsets(["p"])]).verdict([(frozenset({"p"}), None)])


def test_the_issue_examples_are_permanently_violated_with_a_reason():
    for text, pair in [
            ("G(data.balance >= 0) & F(data.balance < 0 & data.balance > 10)",
             ("data.balance < 0", "data.balance > 10")),
            ("G(data.x > prev(data.x)) & F(data.x < prev(data.x) & data.x > prev(data.x))",
             ("data.x < prev(data.x)", "data.x > prev(data.x)"))]:
        f = nnf(parse(text))
        ra = RuleAnticipation.for_formula(f)
        v = ra.verdict(f, None, ra.frames.initial)
        assert v.value == PERMANENTLY_VIOLATED and v.anticipated
        assert all(f"`{p}`" in v.reason for p in pair), v.reason
        assert ra.smt_calls > 0


def test_data_semantics_kinds_and_prev():
    # Once the balance went below zero and must never fall again, it can still rise.
    f = nnf(parse("G(data.x >= prev(data.x)) -> F(data.x > 5)"))
    ra = RuleAnticipation.for_formula(f)
    assert ra.verdict(f, None, ra.frames.initial).value == CURRENTLY_VIOLATED
    # A string is never greater than a number: `data.s > 3` needs a number there.
    g = nnf(parse('G(data.s == "a") & F(data.s > 3)'))
    ra = RuleAnticipation.for_formula(g)
    assert ra.verdict(g, None, ra.frames.initial).value == PERMANENTLY_VIOLATED
    # `!=` holds between values of different kinds, but not when a side is missing.
    h = nnf(parse('G(data.s != "a") & F(data.s == "b")'))
    ra = RuleAnticipation.for_formula(h)
    assert ra.verdict(h, None, ra.frames.initial).value == CURRENTLY_VIOLATED
    k = nnf(parse('G(data.s != "a" & data.s != 3) & F(data.s == null)'))
    ra = RuleAnticipation.for_formula(k)
    assert ra.verdict(k, None, ra.frames.initial).value == CURRENTLY_VIOLATED


def test_outside_the_fragment_is_not_anticipated():
    f = nnf(parse("G(data.x > 1) & F(data.x.y < 0 & data.x.y > 0)"))
    ra = RuleAnticipation.for_formula(f)
    v = ra.verdict(f, None, ())
    assert not v.anticipated and v.value == CURRENTLY_VIOLATED
    assert v.reason.startswith("not anticipated")


def test_decided_once_per_state():
    f = nnf(parse("G(data.amount > 1000 -> F approved)"))
    ra = RuleAnticipation.for_formula(f)
    ra.verdict(f, None, ())
    calls, searches = ra.smt_calls, ra.searches
    for _ in range(100):
        ra.verdict(f, None, ())
    assert (ra.smt_calls, ra.searches) == (calls, searches)


VALUES = [None, 0, 1, 1.5, 2, 2.5, 3, "a"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas(3, monitorable=True, bounded=False), st.data())
def test_permanent_verdicts_with_real_values_survive_brute_force(f, data):
    """Values as events carry them (missing, numbers between the constants, a string): a
    verdict said to be permanent holds on every continuation of up to two steps."""
    names = _atoms_of(f)
    atom_sets = _subsets(names)
    letter = st.tuples(st.sampled_from(atom_sets), st.sampled_from(VALUES))
    prefix = data.draw(st.lists(letter, min_size=1, max_size=3))

    def event(atoms, x):
        return {"labels": sorted(atoms), "data": {} if x is None else {"x": x}}

    ruleset = RuleSet([("rule", f, "first")])
    monitor = SessionMonitor(ruleset)
    anticipation = SessionAnticipation(monitor)
    for atoms, x in prefix:
        e = event(atoms, x)
        monitor.feed(e)
        anticipation.observe(e)
    verdict = anticipation.verdicts[0]
    assert verdict.anticipated
    steps = [(frozenset(a), event(a, x)) for a, x in prefix]
    now = holds(f, steps)
    assert verdict.satisfied == now
    if verdict.permanent:
        conts = [(frozenset(a), event(a, x)) for a in atom_sets for x in VALUES]
        for n in (1, 2):
            for combo in itertools.product(conts, repeat=n):
                assert holds(f, steps + list(combo)) == now, (f.text, prefix, combo)
