"""Review aids for rule authors: example traces, equivalence checks, warnings and plain English.

Everything here is pure Python over the formal core (no Django).

Traces
    A trace is a non-empty list of label sets, ``list[frozenset[str]]``: the atoms true at each
    step, as LTLf (and the finite-trace oracle, ``studio.logic.finite``) defines them.  The empty
    trace is left out unless ``allow_empty=True``; its verdict is then the monitor's verdict for a
    session without events (``nnf(f).empty_value``), which is not a classical logic (``p`` and
    ``!p`` are both false there), so it is only offered on request.

Data atoms
    Every data comparison (``output.args.amount > 10000``, ``x == prev(x)``) is treated as an
    independent proposition named by its text (``propositional_abstraction``).  This is an
    over-approximation: the search may report two formulas as different, or a formula as
    satisfiable, on a trace no real event sequence produces (``x > 5`` and ``x > 5 & x > 3`` differ
    on the letter {"x > 5"}, where x > 3 is false; ``prev(x) < x`` may hold at the first step).
    Answers "equivalent", "unsatisfiable" and "valid" are therefore exact for the abstraction and
    safe (never wrong) for the real data: a rule that is unsatisfiable in the abstraction is
    unsatisfiable on real events.  A quoted atom whose name is the text of a comparison in the same
    formula is identified with that comparison.  ``studio.logic.data_review`` runs the same search
    with data atoms read as data (exact in the fragment of ``studio.logic.smt``).

How the searches work, and when they are exact
    The search is breadth-first over states of the monitor: the tuple of residuals (progression,
    ``studio.logic.progression``, of the formulas' negation normal forms) and, while a residual
    still reads past operators, their memory (one boolean per past subformula, advanced by the
    since recurrence, as ``studio.monitor.automaton.PastTracker`` does).  The verdict of a state
    when the trace stops there is each residual's ``empty_value``.  Two visits of the same state
    have the same future, so the search never expands a state twice, and from each state it tries
    one letter per valuation of the atoms that state still reads (the other atoms cannot matter).

    * A trace returned is a shortest one (breadth-first), made of the smallest label sets first.
    * When the frontier empties, every reachable state has been seen: ``exhaustive`` is True and a
      ``None`` answer holds for traces of every length.  For formulas without data atoms this is
      LTLf truth.  Up to boolean equivalence a propositional formula has finitely many residuals
      (boolean combinations of a finite closure); the constructors identify residuals only up to
      flattening, deduplication and ordering of ``&``/``|``, which lets some residuals grow without
      end, so the search also applies contextual absorption (``_absorb``).  On random formulas of
      depth 5 every search then exhausts its states or finds a trace; finiteness is not proven.
    * Otherwise the search stops at ``max_length`` steps (``stopped == "length_bound"``) or after
      ``STATE_CAP`` states or ``TRANSITION_CAP`` letters tried (``"state_cap"``), and ``None``
      only means "none up to that length".
    * Past operators over future ones (which the monitor refuses) have no step-wise memory; the
      search then enumerates every trace up to a small length (at most ``ENUMERATION_CAP`` traces)
      and asks the finite-trace oracle (``method == "enumeration"``, never exhaustive).

Limits
    Letters are all valuations of the atoms: 2**k of them for k atoms.  Beyond ``MAX_ATOMS``
    (12, i.e. 4096 letters per state) the searches refuse with ``ReviewLimitError``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from . import formula as fm
from .finite import holds
from .formula import FALSE, TRUE, Formula, quote_atom, render_operand
from .past import initial_memory, past_step
from .progression import Progressor, nnf

MAX_ATOMS = 12
STATE_CAP = 200_000
TRANSITION_CAP = 500_000  # letters tried over all states: bounds the time (a few seconds)
ENUMERATION_CAP = 20_000  # traces the oracle fallback evaluates, at most

Trace = list[frozenset[str]]

# Shared by every search: residuals recur across searches over the same rule (warnings run
# several).  Bounded; it starts afresh past its limit.
_progress = Progressor(limit=STATE_CAP)


def _advance(f: Formula, labels: frozenset) -> Formula:
    """Progression of a residual through one step, memoised per conjunct and disjunct: residuals
    are boolean combinations of a few temporal formulas that recur from state to state, while
    the combinations themselves rarely do."""
    if f.op == "and":
        return fm.And(*[_advance(a, labels) for a in f.args])
    if f.op == "or":
        return fm.Or(*[_advance(a, labels) for a in f.args])
    return _progress(f, labels)


class ReviewLimitError(ValueError):
    """A search the review aids refuse to run (too many atoms)."""


def _as_formula(f: Formula | str) -> Formula:
    if isinstance(f, Formula):
        return f
    from .parser import parse

    return parse(f)


# ---------------------------------------------------------------------------------------------
# The propositional abstraction of data atoms

@lru_cache(maxsize=4096)
def propositional_abstraction(f: Formula) -> Formula:
    """``f`` with every data comparison replaced by an atom named by the comparison's text."""
    if f.op == "cmp":
        return fm.Atom(f.text)
    if not f.args:
        return f
    if not any(g.op == "cmp" for g in f.subformulas()):
        return f
    return fm.rebuild(f, tuple(propositional_abstraction(a) for a in f.args))


def _atom_names(formulas: Sequence[Formula]) -> list[str]:
    names = {g.name for f in formulas for g in f.subformulas() if g.op == "atom"}
    return sorted(names)


def _check_atom_count(names: Sequence[str]) -> None:
    if len(names) > MAX_ATOMS:
        raise ReviewLimitError(
            f"the formulas read {len(names)} atoms and data atoms; the review search enumerates "
            f"every combination of them at each step (2**{len(names)} letters) and is limited to "
            f"{MAX_ATOMS}.  Review a smaller part of the rule.")


# ---------------------------------------------------------------------------------------------
# Keeping residuals small: contextual absorption

@lru_cache(maxsize=50_000)
def _absorb(f: Formula) -> Formula:
    """An equivalent residual without repeats of a conjunct or disjunct deeper inside.

    Progression alone lets some residuals grow without end (``a | (b & (a | (b & ...))))`` for
    ``G !O !p W F WX r``), so the search would never exhaust their states.  In ``A | phi`` every
    occurrence of ``A`` as a member of an ``&``/``|`` inside ``phi`` (not under a temporal
    operator or a negation) may read false, and in ``A & phi`` true: on every rest of the trace,
    the empty one included (``empty_value`` of ``&``/``|`` is compositional).  Replacing a state by
    an equivalent formula changes no verdict, since progression is exact.
    """
    if f.op not in ("and", "or"):
        return f
    return _assume(f, {})


def _assume(f: Formula, known: dict) -> Formula:
    """``f`` with the members in ``known`` replaced by their assumed value (TRUE/FALSE)."""
    if f in known:
        return known[f]
    if f.op not in ("and", "or"):
        return f
    value = FALSE if f.op == "or" else TRUE  # what a sibling may be taken to be, inside
    members = [_assume(m, known) for m in f.args]
    combine = fm.Or if f.op == "or" else fm.And
    current = combine(*members)
    if current.op != f.op:
        return current
    members = list(current.args)
    compound = [i for i, m in enumerate(members) if m.op in ("and", "or")]
    if not compound:
        return current
    for i in compound:
        context = dict(known)
        for j, sibling in enumerate(members):
            if j != i:
                context[sibling] = value
        members[i] = _assume(members[i], context)
    return combine(*members)


# ---------------------------------------------------------------------------------------------
# Search results

@dataclass(frozen=True)
class SearchResult:
    """The outcome of a trace search.

    ``trace``       the trace found (a shortest one), or None.
    ``exhaustive``  True when the answer is final for traces of every length: a trace was found
                    by the exhaustive breadth-first search, or every reachable state was explored.
    ``stopped``     "found", "exhausted" (every state explored), "length_bound" (stopped at
                    ``searched_length`` steps) or "state_cap" (stopped at ``STATE_CAP`` states or
                    ``TRANSITION_CAP`` letters tried; traces up to ``searched_length`` steps were
                    all covered).
    ``method``      "progression" (the state search) or "enumeration" (the oracle over every trace
                    up to ``searched_length``, for past operators over future ones).
    ``states``      states (or traces, for enumeration) visited.
    ``message``     the above in a sentence.
    """

    trace: Trace | None
    exhaustive: bool
    stopped: str
    method: str
    states: int
    searched_length: int
    message: str

    @property
    def found(self) -> bool:
        return self.trace is not None


def _describe(trace, stopped, method, states, length, what: str) -> str:
    if trace == []:
        return f"the empty trace (a session without events) {what}"
    if trace is not None:
        steps = len(trace)
        return f"a trace of {steps} step{'s' if steps != 1 else ''} {what}"
    if stopped == "exhausted":
        explored = f"{states} reachable state{'s were' if states != 1 else ' was'} explored"
        return (f"no trace of any length {what}: all {explored}"
                " (data atoms read as independent propositions)")
    if stopped == "state_cap":
        return (f"no trace of up to {length} steps {what}; the search stopped at its budget "
                f"({states} states, at most {STATE_CAP} states or {TRANSITION_CAP} transitions), "
                "so longer traces were not checked")
    if method == "enumeration":
        return (f"no trace of up to {length} steps {what}; past operators over future ones allow "
                "only an enumeration of short traces, so longer traces were not checked")
    return f"no trace of up to {length} steps {what}; longer traces were not checked"


# ---------------------------------------------------------------------------------------------
# Past operators: their memory is part of the search state

class _PastMemory:
    """The past subformulas' memory after a step (Y, Z: the operand's last value; O, H, S: their
    own last value), advanced by the since recurrence exactly as the monitor's PastTracker."""

    def __init__(self, nodes: tuple[Formula, ...]):
        self.nodes = nodes  # children before parents
        self.names = frozenset(g.name for n in nodes for g in n.subformulas() if g.op == "atom")
        self.initial = initial_memory(nodes)
        self._memo: dict[tuple, tuple[tuple, frozenset]] = {}

    def advance(self, carry: tuple, letter: frozenset) -> tuple[tuple, frozenset]:
        """The next memory and the past nodes true at this step."""
        key = (carry, letter)
        found = self._memo.get(key)
        if found is not None:
            return found
        memory, now = past_step(self.nodes, carry, letter)
        result = (memory, frozenset(n for n, v in now.items() if v))
        if len(self._memo) < STATE_CAP:
            self._memo[key] = result
        return result


def _past_nodes(formulas: Sequence[Formula]) -> tuple[Formula, ...]:
    seen: dict[Formula, None] = {}
    for f in formulas:
        for g in f.subformulas():  # children first, so a node's past operands come before it
            if g.is_past:
                seen.setdefault(g)
    return tuple(seen)


@lru_cache(maxsize=1024)
def _letters(names: tuple[str, ...]) -> tuple[frozenset, ...]:
    """Every subset of ``names``, smallest first (so witnesses show as few labels as needed)."""
    return tuple(frozenset(combo) for size in range(len(names) + 1)
                 for combo in itertools.combinations(names, size))


@lru_cache(maxsize=1024)
def _letter_table(names: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[frozenset, ...]]:
    """The subsets of ``names`` as bit masks (bit i: ``names[i]``), smallest first, and the label
    set of every mask."""
    k = len(names)
    order = tuple(sum(1 << i for i in combo) for size in range(k + 1)
                  for combo in itertools.combinations(range(k), size))
    sets = tuple(frozenset(names[i] for i in range(k) if mask >> i & 1) for mask in range(1 << k))
    return order, sets


def _successors(residuals: tuple, carry, memory):
    """``(letter, next residuals, next memory)`` for one letter per valuation of the atoms the
    state reads (the others cannot change the successor), smallest letters first."""
    reads = {a for r in residuals for a in r.atoms if isinstance(a, str)}
    if carry is not None:
        # Past operators: the memory reads its own atoms; progress letter by letter.
        reads |= memory.names
        for letter in _letters(tuple(sorted(reads))):
            next_carry, past_true = memory.advance(carry, letter)
            labels = letter | past_true
            yield letter, tuple(_advance(r, labels) for r in residuals), next_carry
        return
    names = tuple(sorted(reads))
    order, sets = _letter_table(names)
    bit = {name: 1 << i for i, name in enumerate(names)}
    steppers = [_Stepper(r, bit, sets) for r in residuals]
    for mask in order:
        yield sets[mask], tuple(step(mask) for step in steppers), None


class _Stepper:
    """Progression of one residual under letters given as bit masks, for one state.

    The parts of a top-level ``&``/``|`` are grouped by the atoms they read; each group is
    progressed once per valuation of its atoms, and each combination of the groups' residuals is
    built once (``&`` and ``|`` flatten, so grouping yields the same interned residual).
    """

    __slots__ = ("combine", "combined", "groups", "sets")

    def __init__(self, residual: Formula, bit: dict, sets: tuple):
        parts = residual.args if residual.op in ("and", "or") else (residual,)
        self.combine = fm.Or if residual.op == "or" else fm.And
        by_mask: dict[int, list[Formula]] = {}
        for part in parts:
            mask = sum(bit[a] for a in part.atoms if isinstance(a, str))
            by_mask.setdefault(mask, []).append(part)
        # (mask, parts, residuals by valuation)
        self.groups = [(mask, tuple(group), {}) for mask, group in by_mask.items()]
        self.combined: dict[tuple, Formula] = {}
        self.sets = sets

    def __call__(self, mask: int) -> Formula:
        key = []
        for group_mask, parts, results in self.groups:
            own = mask & group_mask
            found = results.get(own)
            if found is None:
                labels = self.sets[own]
                found = results[own] = self.combine(*[_advance(p, labels) for p in parts])
            key.append(found)
        if len(key) == 1:
            return key[0]
        key = tuple(key)
        found = self.combined.get(key)
        if found is None:
            found = self.combined[key] = self.combine(*key)
        return found


# ---------------------------------------------------------------------------------------------
# The search engine

Goal = Callable[[tuple[bool, ...]], bool]
ROOT = ("root",)  # the key of the start state before any step


def _search(formulas: Sequence[Formula], goal: Goal, settled: Callable[[tuple], bool],
            max_length: int, allow_empty: bool, state_cap: int, what: str, *,
            start: tuple | None = None, expand: Callable | None = None) -> SearchResult:
    """A shortest non-empty trace on which ``goal`` holds of the formulas' verdicts.

    ``settled(residuals)`` says that no continuation from those residuals can reach the goal, so
    the state need not be expanded.

    Anticipation (``studio.logic.anticipation``) searches from a monitor's state instead:
    ``start`` is ``(residuals, memory, context)`` - residuals in negation normal form with data
    atoms abstracted, the past nodes' memory as a dict (or None) and a hashable context that
    becomes part of every state - and ``expand(residuals, carry, context)``, when given, yields
    ``(letter, next residuals, next carry, next context)`` in place of the letters over the atoms
    (the data fragment's steps).
    """
    if max_length < 0:
        raise ValueError("max_length must be at least 0")
    abstract = ([propositional_abstraction(f) for f in formulas] if start is None
                else list(start[0]))
    names = _atom_names(abstract)
    _check_atom_count(names)
    past = _past_nodes(abstract)
    if any(a.has_future for node in past for a in node.args):
        return _enumerate(abstract, names, goal, max_length, allow_empty, what)

    memory = _PastMemory(past) if past else None

    def state_of(residuals: tuple, carry, context=None):
        if carry is not None and not any(r.has_past for r in residuals):
            carry = None  # nothing reads the memory any more: fewer states
        return (residuals, carry, context)

    def verdicts(residuals) -> tuple[bool, ...]:
        return tuple(r.empty_value for r in residuals)

    if start is None:
        start = state_of(tuple(_absorb(nnf(f)) for f in abstract),
                         memory.initial if memory else None)
    else:
        residuals, values, context = start
        carry = tuple(values[n] for n in past) if memory and values is not None else (
            memory.initial if memory else None)
        start = state_of(tuple(_absorb(r) for r in residuals), carry, context)
    # The start state before any step is ROOT: reaching the start state again after some steps
    # (``G p`` after ``p``) is a new trace whose verdict must be checked.
    parents: dict[tuple, tuple] = {}

    def result(found, stopped, length):
        trace = None
        if found is not None:
            trace = []
            key = found
            while key is not ROOT:
                key, letter = parents[key]
                trace.append(letter)
            trace.reverse()
        exhaustive = stopped in ("found", "exhausted")
        return SearchResult(trace, exhaustive, stopped, "progression", len(parents) + 1, length,
                            _describe(trace, stopped, "progression", len(parents) + 1, length,
                                      what))

    if allow_empty and goal(verdicts(start[0])):
        return result(ROOT, "found", 0)
    frontier = [(ROOT, start)]
    transitions = 0
    for depth in range(1, max_length + 1):
        following = []
        for key, (residuals, carry, context) in frontier:
            if key is not ROOT and settled(residuals):
                continue  # (the start state is expanded even so: its verdict was not checked)
            steps = (expand(residuals, carry, context) if expand is not None
                     else ((letter, r, c, None)
                           for letter, r, c in _successors(residuals, carry, memory)))
            for letter, next_residuals, next_carry, next_context in steps:
                nxt = state_of(tuple(_absorb(r) for r in next_residuals), next_carry,
                               next_context)
                transitions += 1
                if transitions >= TRANSITION_CAP:
                    return result(None, "state_cap", depth - 1)
                if nxt in parents:
                    continue
                parents[nxt] = (key, letter)
                if goal(verdicts(nxt[0])):
                    return result(nxt, "found", depth)
                if len(parents) >= state_cap:
                    return result(None, "state_cap", depth - 1)
                following.append((nxt, nxt))
        frontier = following
        if not frontier:
            return result(None, "exhausted", depth)
    if all(key is not ROOT and settled(state[0]) for key, state in frontier):
        return result(None, "exhausted", max_length)
    return result(None, "length_bound", max_length)


def _enumerate(formulas: Sequence[Formula], names: list[str], goal: Goal, max_length: int,
               allow_empty: bool, what: str) -> SearchResult:
    """Every trace up to the longest length that keeps the count under ENUMERATION_CAP, judged
    by the finite-trace oracle: for past operators over future ones, which have no step-wise
    memory for the state search."""
    letters = _letters(tuple(names))
    longest, total = 0, 0
    while longest < max_length and total + len(letters) ** (longest + 1) <= ENUMERATION_CAP:
        longest += 1
        total += len(letters) ** longest
    count = 0

    def done(trace, stopped, length):
        # Traces are tried shortest first, so a trace found is a shortest one.
        return SearchResult(trace, stopped == "found", stopped, "enumeration", count, length,
                            _describe(trace, stopped, "enumeration", count, length, what))

    if allow_empty and goal(tuple(nnf(f).empty_value for f in formulas)):
        return done([], "found", 0)
    for length in range(1, longest + 1):
        for combo in itertools.product(letters, repeat=length):
            count += 1
            steps = [(letter, None) for letter in combo]
            if goal(tuple(holds(f, steps) for f in formulas)):
                return done(list(combo), "found", length)
    return done(None, "length_bound", longest)


# ---------------------------------------------------------------------------------------------
# Public searches

def find_distinguishing_trace(a: Formula | str, b: Formula | str, max_length: int = 12, *,
                              allow_empty: bool = False,
                              state_cap: int = STATE_CAP) -> SearchResult:
    """A shortest trace on which ``a`` and ``b`` get different verdicts, with how far the search
    got (see the module documentation for exactness)."""
    a, b = _as_formula(a), _as_formula(b)
    return _search(
        (a, b), goal=lambda v: v[0] != v[1],
        # The same residual (with the same memory) has the same verdict on every continuation.
        settled=lambda r: r[0] is r[1] or (r[0] in (TRUE, FALSE) and r[1] in (TRUE, FALSE)),
        max_length=max_length, allow_empty=allow_empty, state_cap=state_cap,
        what="tells the two formulas apart")


def distinguishing_trace(a: Formula | str, b: Formula | str, max_length: int = 12, *,
                         allow_empty: bool = False) -> Trace | None:
    """A shortest trace (list of label sets) on which ``a`` and ``b`` get different LTLf verdicts,
    or None when they agree on every trace up to ``max_length`` steps.

    For formulas without past operators over future ones, None after the state space was
    exhausted means they agree on every trace of any length (for data atoms: as independent
    propositions); ``find_distinguishing_trace`` says which case applies.
    """
    return find_distinguishing_trace(a, b, max_length, allow_empty=allow_empty).trace


def equivalent(a: Formula | str, b: Formula | str, max_length: int = 12) -> bool:
    """No trace up to ``max_length`` steps tells ``a`` and ``b`` apart (for every length when the
    search was exhaustive: ``find_distinguishing_trace(a, b).exhaustive``)."""
    return distinguishing_trace(a, b, max_length) is None


def find_trace(f: Formula | str, satisfying: bool, max_length: int = 12, *,
               allow_empty: bool = False, state_cap: int = STATE_CAP) -> SearchResult:
    """A shortest trace that satisfies (``satisfying=True``) or violates ``f``, with how far the
    search got."""
    f = _as_formula(f)
    return _search(
        (f,), goal=lambda v: v[0] == satisfying,
        settled=lambda r: r[0] is TRUE or r[0] is FALSE,
        max_length=max_length, allow_empty=allow_empty, state_cap=state_cap,
        what="satisfies the formula" if satisfying else "violates the formula")


def shortest_trace(f: Formula | str, satisfying: bool, max_length: int = 12, *,
                   allow_empty: bool = False) -> Trace | None:
    """A shortest trace that satisfies / violates ``f``, or None when there is none up to
    ``max_length`` steps (none at all when ``find_trace(...).exhaustive``)."""
    return find_trace(f, satisfying, max_length, allow_empty=allow_empty).trace


# ---------------------------------------------------------------------------------------------
# Warnings

@dataclass(frozen=True)
class Warning:  # noqa: A001 - the name the review pages use
    """Something a rule author should know about a formula.

    ``kind`` is "unsatisfiable", "valid" or "vacuous"; ``exact`` is False when the search behind
    it stopped at its length bound (the warning then only speaks of traces up to that length);
    ``trigger`` is the text of the subformula a "vacuous" warning is about.
    """

    kind: str
    message: str
    exact: bool = True
    trigger: str | None = None


def _triggers(f: Formula) -> list[tuple[Formula, str]]:
    """The positions the vacuity check looks at, with what it means when one never holds.

    * the condition ``A`` of every implication ``A -> B`` (anywhere in the formula: under ``G``
      it is the trigger of a response, at the top it is a one-off condition);
    * the left side ``a`` of every ``a U b`` and ``a W b``: if it never holds, the until is idle
      and the formula only ever holds through ``b`` holding at once;
    * the release condition of every ``a W b`` (``b``) and ``a R b`` (``a``): if it never holds
      the obligation never ends, the formula is just ``G a`` (``G b``).
    """
    found: dict[Formula, str] = {}
    for g in f.subformulas():
        if g.op == "implies":
            found.setdefault(g.args[0], f"so `{g.text}` only ever holds because its condition "
                                        "is false")
        if g.op in ("U", "W"):
            found.setdefault(g.args[0], f"so in `{g.text}` the waiting part is idle: it can only "
                                        f"hold through `{g.args[1].text}` holding at once")
        if g.op == "W":
            found.setdefault(g.args[1], f"so `{g.text}` never ends and is just "
                                        f"`{fm.G(g.args[0]).text}`")
        if g.op == "R":
            found.setdefault(g.args[0], f"so `{g.text}` never ends and is just "
                                        f"`{fm.G(g.args[1]).text}`")
    return [(t, why) for t, why in found.items() if t not in (TRUE, FALSE)]


def warnings(f: Formula | str, max_length: int = 12) -> list[Warning]:
    """Warnings for a rule: unsatisfiable (no trace satisfies it), valid (no trace violates it),
    vacuous (see ``_triggers`` for the positions checked).

    A trigger ``A`` is reported vacuous when no trace that satisfies the rule has ``A`` true at
    any step, i.e. ``rule & F A`` is unsatisfiable.  This is a sound under-approximation of "the
    rule is satisfied only vacuously": a trigger that holds somewhere but never where it is
    evaluated is not reported.  Unsatisfiable rules get no vacuity warnings (every trigger would
    qualify).  Simplification on construction already removes evident cases:
    ``G((a & !a) -> F b)`` is the formula ``true``, reported as valid.

    Raises ``ReviewLimitError`` beyond ``MAX_ATOMS`` atoms.
    """
    f = _as_formula(f)
    out: list[Warning] = []
    sat = find_trace(f, True, max_length)
    if sat.trace is None:
        bounded = "" if sat.exhaustive else f" of up to {sat.searched_length} steps"
        out.append(Warning("unsatisfiable",
                           f"No trace{bounded} satisfies this rule: it is violated on every "
                           "session" + ("" if sat.exhaustive else " of that length") + ".",
                           sat.exhaustive))
        return out
    violation = find_trace(f, False, max_length)
    if violation.trace is None:
        bounded = "" if violation.exhaustive else f" of up to {violation.searched_length} steps"
        out.append(Warning("valid",
                           f"No trace{bounded} violates this rule: it holds on every session"
                           + ("" if violation.exhaustive else " of that length")
                           + ", so it checks nothing.", violation.exhaustive))
    for trigger, consequence in _triggers(f):
        witness = find_trace(fm.And(f, fm.F(trigger)), True, max_length)
        if witness.trace is None:
            bounded = "" if witness.exhaustive else f" of up to {witness.searched_length} steps"
            out.append(Warning(
                "vacuous",
                f"`{trigger.text}` never holds on any trace{bounded} that satisfies this rule, "
                f"{consequence}.", witness.exhaustive, trigger.text))
    return out


# ---------------------------------------------------------------------------------------------
# Plain English
#
# One renderer for every reading the studio shows: rules, residuals, warnings, and the atoms of
# the violation sentences (``studio.monitor.explain``).  It speaks of the workspace's own events
# ("the agent calls issue_refund", "a step labelled contains_card_number", "amount
# (output.args.amount) is over 500") and never of formulas ("tool_call:X holds"): a negation is
# pushed inward until it sits on an event ("the agent does not call X"), or said as "not both",
# "neither ... nor", "no ... before", "never".  Every rewrite it makes is an LTLf equivalence, so
# the English says exactly what the formula does (strict "before" vs "at this step or an earlier
# one"; a next step that must exist vs one that may not).

# A phrase is a clause with its shape: a "literal" clause ("the agent calls X") may take a time
# frame as a suffix; a "closed" one can sit inside any construction as it is; an "open" one (a
# connective, or a frame followed by a colon, which extends to the end) is parenthesised
# wherever something follows it or it sits inside a connective.  So every rendering reads one way
# only.  A clause about "the step" (labels, roles) keeps a template, so that a frame can name the
# step instead ("the next step is labelled examine").
LITERAL, CLOSED, OPEN = "literal", "closed", "open"

_STEP = "\x00"  # the place of "the step" in a clause's template


@dataclass(frozen=True)
class _Phrase:
    text: str
    shape: str
    template: str | None = None   # the clause with _STEP for the step it is about
    negative: bool = False        # the template denies ("is not labelled")


@dataclass(frozen=True)
class _Noun:
    """What happened at a step, as a noun: alternatives of (article, words)."""

    alts: tuple[tuple[str, str], ...]

    def some(self) -> str:
        return " or ".join(f"{a} {w}" for a, w in self.alts)

    def none(self) -> str:
        words = [w for _, w in self.alts]
        if len(words) == 1:
            return f"no {words[0]}"
        if len(words) == 2:
            return f"neither {self.some().replace(' or ', ' nor ', 1)}"
        return "none of " + ", ".join(f"{a} {w}" for a, w in self.alts[:-1]) + \
            f" or {self.alts[-1][0]} {self.alts[-1][1]}"

    def first(self) -> str:
        return "the first " + " or ".join(w for _, w in self.alts)


@dataclass(frozen=True)
class _Words:
    """The words for one thing that may hold at a step.  ``subject``: the clauses are about the
    step itself (``_STEP`` marks where it is named)."""

    clause: str          # "the agent calls X"
    negative: str        # "the agent does not call X"
    past: str            # "the agent called X" (what happened at a step, in a report)
    must: str            # "the agent must call X"
    must_not: str        # "the agent must not call X"
    noun: tuple[str, str]  # ("a", "call to X")
    subject: bool = False
    open_negative: bool = False  # the negative clause is a connective ("... or is missing")


_ROLES = {"user": ("a", "user message"), "assistant": ("an", "assistant message"),
          "tool": ("a", "tool result"), "system": ("a", "system message")}


def _tool_words(tool: str, field: str = "") -> _Words:
    return _Words(f"the agent calls {tool}{field}", f"the agent does not call {tool}{field}",
                  f"the agent called {tool}", f"the agent must call {tool}{field}",
                  f"the agent must not call {tool}{field}", ("a", f"call to {tool}"))


def _atom_words(name: str) -> _Words:
    prefix, _, rest = name.partition(":")
    if rest and prefix == "tool_call":
        return _tool_words(rest)
    if rest and prefix == "stop_reason":
        return _Words(f"the agent stops ({rest})", f"the agent does not stop ({rest})",
                      f"the agent stopped ({rest})", f"the agent must stop ({rest})",
                      f"the agent must not stop ({rest})", ("a", f"stop ({rest})"))
    if rest and prefix == "role":
        article, words = _ROLES.get(rest, ("a", f"message from {quote_atom(rest)}"))
        return _Words(f"{_STEP} is {article} {words}", f"{_STEP} is not {article} {words}",
                      f"the step was {article} {words}", f"{_STEP} must be {article} {words}",
                      f"{_STEP} must not be {article} {words}", (article, words), subject=True)
    label = quote_atom(name)
    return _Words(f"{_STEP} is labelled {label}", f"{_STEP} is not labelled {label}",
                  f"the step was labelled {label}", f"{_STEP} must be labelled {label}",
                  f"{_STEP} must not be labelled {label}", ("a", f"step labelled {label}"),
                  subject=True)


def _field(path: str) -> str:
    """``output.args.amount`` reads "amount (output.args.amount)": the word, and where it is."""
    last = path.rsplit(".", 1)[-1]
    if last == path or not last or last.isdigit():
        return path
    return f"{last} ({path})"


def _operand(operand: tuple) -> str:
    kind, value = operand
    if kind == "path":
        return _field(value)
    if kind == "prev":
        return f"the previous step's {_field(value)}"
    return render_operand(operand)


_ORDER_WORDS = {">": "over", ">=": "at least", "<": "under", "<=": "at most"}


def _called_tool(f: Formula) -> str | None:
    """The tool a node says the agent calls: ``tool_call:X`` or ``output.tool == "X"``."""
    if f.op == "atom":
        prefix, _, rest = f.name.partition(":")
        return rest if prefix == "tool_call" and rest else None
    if f.op == "cmp":
        c = f.payload
        if (c.op == "==" and c.left == ("path", "output.tool") and c.right[0] == "const"
                and isinstance(c.right[1], str)):
            return c.right[1]
    return None


def _comparison_words(f: Formula) -> _Words:
    """Data atoms are false when a value is missing (or of another kind: ``events.compare``),
    so the negative of ``!=`` says "or is missing"; "is not over 500" already includes it."""
    tool = _called_tool(f)
    if tool is not None:
        return _tool_words(tool, " (output.tool)")
    c = f.payload
    left, right = _operand(c.left), _operand(c.right)
    const = c.right[0] == "const"
    if c.op in _ORDER_WORDS:
        rel = f"{_ORDER_WORDS[c.op]} {right}"
        return _Words(f"{left} is {rel}", f"{left} is not {rel}", f"{left} was {rel}",
                      f"{left} must be {rel}", f"{left} must not be {rel}",
                      ("a", f"step where {left} is {rel}"))
    if c.op == "==":
        if const:
            return _Words(f"{left} is {right}", f"{left} is not {right}", f"{left} was {right}",
                          f"{left} must be {right}", f"{left} must not be {right}",
                          ("a", f"step where {left} is {right}"))
        return _Words(f"{left} equals {right}", f"{left} does not equal {right}",
                      f"{left} equalled {right}", f"{left} must equal {right}",
                      f"{left} must not equal {right}", ("a", f"step where {left} equals {right}"))
    missing = "is missing" if const else "one of them is missing"
    return _Words(f"{left} differs from {right}", f"{left} equals {right} or {missing}",
                  f"{left} differed from {right}", f"{left} must differ from {right}",
                  f"{left} must equal {right} or {missing}",
                  ("a", f"step where {left} differs from {right}"), open_negative=True)


def _with_part(f: Formula) -> str | None:
    """A comparison that can follow "the agent calls X with": a field against a constant."""
    if f.op != "cmp" or _called_tool(f) is not None:
        return None
    c = f.payload
    if c.left[0] != "path" or c.right[0] != "const":
        return None
    if c.op in _ORDER_WORDS:
        return f"{_field(c.left[1])} {_ORDER_WORDS[c.op]} {render_operand(c.right)}"
    if c.op == "==":
        return f"{_field(c.left[1])} equal to {render_operand(c.right)}"
    return None  # "!=" is false on a missing value: "with x other than 1" would hide that


def _merged(parts: Sequence[Formula]) -> tuple[_Words, list[Formula]] | None:
    """One call with its arguments, from the conjuncts ``parts`` of one step: "the agent calls
    issue_refund with amount (output.args.amount) over 500", and the conjuncts left over."""
    tools = [p for p in parts if _called_tool(p) is not None]
    withs = [p for p in parts if _with_part(p) is not None]
    if len(tools) != 1 or not withs:
        return None
    tool = _called_tool(tools[0])
    field = " (output.tool)" if tools[0].op == "cmp" else ""
    said = [_with_part(p) for p in withs]
    args = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    call = f"{tool}{field} with {args}"
    words = _Words(f"the agent calls {call}", f"the agent does not call {call}",
                   f"the agent called {call}", f"the agent must call {call}",
                   f"the agent must not call {call}", ("a", f"call to {tool} with {args}"))
    rest = [p for p in parts if p is not tools[0] and p not in withs]
    return words, rest


def _words(f: Formula) -> _Words | None:
    """The words of an atom, a data atom, or a call with its arguments (nothing left over)."""
    if f.op == "atom":
        return _atom_words(f.name)
    if f.op == "cmp":
        return _comparison_words(f)
    if f.op == "and":
        merged = _merged(f.args)
        if merged is not None and not merged[1]:
            return merged[0]
    return None


def _order_of(f: Formula) -> int:
    """Calls first, then stops, roles, labels, data; denials last."""
    if f.op == "not":
        return 5
    if _called_tool(f) is not None:
        return 0
    if f.op == "atom":
        prefix = f.name.partition(":")[0]
        return {"stop_reason": 1, "role": 2}.get(prefix, 3)
    return 4


def _one_step(f: Formula, step: str) -> str | None:
    """A conjunction of events and denials at one step, joined by "and" (calls first): "the
    agent calls send_email and the step is labelled contains_card_number".  ``step`` names the
    step in the first clause about it ("a step"); later ones say "it".  None for anything else."""
    if f.op != "and" or not all(_simple(a) for a in f.args):
        return None
    merged = _merged(f.args)
    if merged is not None:
        head, rest = merged
        parts = [(0, head, False)]
    else:
        rest = list(f.args)
        parts = []
    for a in rest:
        negative = a.op == "not"
        parts.append((_order_of(a), _words(a.args[0] if negative else a), negative))
    parts.sort(key=lambda part: part[0])
    said = []
    if parts[0][1].subject is False and step == "a step":
        step = "the step"  # "the agent calls X and the step is labelled L": the same step
    for _, words, negative in parts:
        text = words.negative if negative else words.clause
        if words.subject:
            text = text.replace(_STEP, step)
            step = "it"
        said.append(text)
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def _is_state(f: Formula) -> bool:
    return not f.has_future and not f.has_past


def _noun(f: Formula) -> _Noun | None:
    """A step-only formula as a noun ("a call to X", "a step labelled L", "a step where ..."),
    None for a formula that reads other steps."""
    if not _is_state(f) or f.op in ("true", "false"):
        return None
    words = _words(f)
    if words is not None:
        return _Noun((words.noun,))
    if f.op == "or":
        alts = [_noun(a) for a in f.args]
        if all(n is not None and len(n.alts) == 1 and n.alts[0][1].startswith(
                ("call to", "stop", "step labelled", "user", "assistant", "tool", "system"))
               for n in alts):
            return _Noun(tuple(n.alts[0] for n in alts))
    return _Noun((("a", "step where " + (_one_step(f, "it") or _english(f, _IT).text)),))


def _about(p: _Phrase, step: str) -> str:
    """The phrase, with a clause about "the step" naming ``step`` instead."""
    return p.template.replace(_STEP, step) if p.template else p.text


def _inner(p: _Phrase) -> str:
    """The phrase inside a larger construction, parenthesised when it is open."""
    return "(" + p.text + ")" if p.shape == OPEN else p.text


@dataclass(frozen=True)
class _When:
    """A time frame: "at the next step" (``at``); the steps it names, as the subject of a clause
    about the step ("the next step"), with how many of them (``one``, ``some``, ``every``: a
    clause that denies takes the subject only for one or some); and a note on the end of the
    session ("(the session must not end before it)")."""

    at: str
    subject: str | None = None
    note: str = ""
    quantity: str = "one"


def _framed(p: _Phrase, when: _When, last: bool) -> tuple[str, bool]:
    """``p`` at the time ``when`` describes, and whether a colon opened it to the end."""
    note = f" {when.note}" if when.note else ""
    if p.template and when.subject and (not p.negative or when.quantity != "every"):
        return p.template.replace(_STEP, when.subject) + note, False
    if p.shape == LITERAL:
        return f"{p.text} {when.at}{note}", False
    # A colon's scope runs to the end of the sentence; when more follows, brackets end it.
    return f"{when.at}{note}: {p.text if last else '(' + p.text + ')'}", True


def _frame(p: _Phrase, when: _When) -> _Phrase:
    text, colon = _framed(p, when, True)
    # "the agent calls X at the next step" sits anywhere; "... at this step or a later one" does
    # not: inside "both ... and ..." its "or" would read as a connective.
    words = text.split()
    closed = not colon and "or" not in words and "and" not in words and "nor" not in words
    return _Phrase(text, CLOSED if closed else OPEN)


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


# The constants, where one survives inside a sentence (``p U WX true``; a negation that
# simplifies away): a sentence that is nothing else reads as ``explain`` reads true and false.
NOTHING_REQUIRED = "nothing is required"
IMPOSSIBLE = "something impossible happens"

MUST_GO_ON = "(the session must not end before it)"
IF_REACHED = "(if the session reaches it)"


@dataclass(frozen=True)
class _Origin:
    """The words for the step a whole formula is read from (no temporal operator above it)."""

    now: str          # that step
    next: str         # the one after it
    some: _When       # that step or a later one
    every: _When      # that step and every later one
    from_now: str     # "from ... on, " before "never:" and "whenever"
    frame_literals: bool = False  # say when a bare call or comparison is read
    subject: str = ""  # the step a clause about the step names ("the first step")

    @property
    def step(self) -> str:
        return self.subject or self.now


_HERE = "this step"
# A rule is read from the first step of a session; a residual from the step after the one
# it was computed at ("what the rest of the session owes"); a part of a formula from the step
# the operator above it names ("this step").
_FIRST = _Origin("the first step", "the second step",
                 _When("at some step", "some step", quantity="some"),
                 _When("at every step", "every step", quantity="every"), "")
_REST = _Origin("the next step", "the step after the next one",
                _When("at the next step or a later one", "the next step or a later one",
                      quantity="some"),
                _When("at the next step and every later one", "the next step and every later one",
                      quantity="every"),
                "from the next step on, ", frame_literals=True)
_NESTED = _Origin(_HERE, "the next step",
                  _When("at this step or a later one", "this step or a later one",
                        quantity="some"),
                  _When("at this step and every later one", "this step and every later one",
                        quantity="every"),
                  "from this step on, ", subject="the step")
# Inside a noun: "a step where it is labelled p".
_IT = replace(_NESTED, subject="it")


def _literal(words: _Words, negative: bool, step: str) -> _Phrase:
    text = words.negative if negative else words.clause
    if words.subject:
        return _Phrase(text.replace(_STEP, step), CLOSED, text, negative)
    if negative:
        # Closed, not literal: "at every step: the agent does not call X", never the ambiguous
        # "the agent does not call X at every step".
        return _Phrase(text, OPEN if words.open_negative else CLOSED)
    return _Phrase(text, LITERAL)


def _english(f: Formula, start: _Origin | None) -> _Phrase:
    """``start``: ``f`` is read at the step ``start`` names (no temporal operator above it);
    None: at whichever step the context names ("this step")."""
    op = f.op
    origin = start or _NESTED
    if op == "true":
        return _Phrase(NOTHING_REQUIRED, CLOSED)
    if op == "false":
        return _Phrase(IMPOSSIBLE, CLOSED)
    if op == "not":
        return _negated(f.args[0], start)
    words = _words(f)
    if words is not None:
        phrase = _literal(words, False, origin.step)
        if start is not None and start.frame_literals and not words.subject:
            return _frame(phrase, _When(f"at {start.now}"))
        return phrase
    if op in ("and", "or") and all(a.op == "not" and _words(a.args[0]) is not None
                                   for a in f.args):
        # !p & !q: "neither p nor q"; !p | !q: "not both p and q"
        return _negated(fm.Or(*[a.args[0] for a in f.args]) if op == "and"
                        else fm.And(*[a.args[0] for a in f.args]), start)
    if op == "and":
        merged = _merged(f.args)
        if merged is not None:
            head, rest = merged
            parts = [_inner(_literal(head, False, origin.step))]
            parts += [_inner(_english(a, start)) for a in rest]
        else:
            parts = [_inner(_english(a, start)) for a in f.args]
        return _connect(parts, "and")
    if op == "or":
        return _connect([_inner(_english(a, start)) for a in f.args], "or")
    if op == "implies":
        condition, consequence = (_english(a, start) for a in f.args)
        return _Phrase(f"if {_inner(condition)}, then {consequence.text}", OPEN)
    if op == "iff":
        left, right = (_english(a, start) for a in f.args)
        return _Phrase(f"{_inner(left)} if and only if {_inner(right)}", OPEN)
    if op == "G":
        found = _always(f.args[0], origin)
        if found is not None:
            return found
    if op in ("W", "U"):
        found = _precedence(f, origin)
        if found is not None:
            return found
    if op in fm.FUTURE_OPS:
        return _future(f, origin)
    return _past(f, origin)


def _connect(parts: list[str], op: str) -> _Phrase:
    if len(parts) == 1:
        return _Phrase(parts[0], OPEN)
    if len(parts) == 2:
        word = "both {} and {}" if op == "and" else "either {} or {}"
        return _Phrase(word.format(*parts), OPEN)
    head = "all of these" if op == "and" else "at least one of these"
    return _Phrase(f"{head}: {'; '.join(parts[:-1])}; {op} {parts[-1]}", OPEN)


def _simple(f: Formula) -> bool:
    """An event or its denial: said as it is inside "not both" and "neither ... nor"."""
    return _words(f) is not None or (f.op == "not" and _words(f.args[0]) is not None)


def _negated(g: Formula, start: _Origin | None) -> _Phrase:
    """``!g`` with the negation pushed inward (LTLf equivalences; De Morgan)."""
    op = g.op
    origin = start or _NESTED
    words = _words(g)
    if words is not None:
        phrase = _literal(words, True, origin.step)
        if start is not None and start.frame_literals and not words.subject:
            return _frame(phrase, _When(f"at {start.now}"))
        return phrase
    if op in ("and", "or") and all(_simple(a) for a in g.args):
        parts = [_inner(_english(a, start)) for a in g.args]
        if len(parts) == 2:
            word = "not both {} and {}" if op == "and" else "neither {} nor {}"
            return _Phrase(word.format(*parts), OPEN)
        head = "not all of these" if op == "and" else "none of these"
        return _Phrase(f"{head}: {'; '.join(parts[:-1])}; {op} {parts[-1]}", OPEN)
    if op == "iff":
        left, right = (_english(x, start) for x in g.args)
        return _Phrase(f"either {_inner(left)} or {_inner(right)}, but not both", OPEN)
    return _english(push_negation(g), start)


def push_negation(g: Formula) -> Formula:
    """A formula equivalent to ``!g`` (on every finite trace, the empty rest of a session
    included) with the negation one level further in; for ``g`` not an atom, a data atom, a
    negation or an ``<->``.  Used by the English, which never says "it is not the case that"."""
    op = g.op
    a = g.args[0] if g.args else None
    b = g.args[1] if len(g.args) > 1 else None
    if op == "and":
        return fm.Or(*[fm.Not(x) for x in g.args])
    if op == "or":
        return fm.And(*[fm.Not(x) for x in g.args])
    if op == "implies":
        return fm.And(a, fm.Not(b))
    unary = {"X": fm.WX, "WX": fm.X, "F": fm.G, "G": fm.F, "Y": fm.Z, "Z": fm.Y,
             "O": fm.H, "H": fm.O}
    if op in unary:
        return unary[op](fm.Not(a))
    if op == "F[]":
        return fm.GBounded(*g.payload, fm.Not(a))
    if op == "G[]":
        return fm.FBounded(*g.payload, fm.Not(a))
    if op == "U":  # no b ever, or a fails at a step before the first b
        return fm.W(fm.Not(b), fm.And(fm.Not(a), fm.Not(b)))
    if op == "W":  # a fails at a step before the first b (which then need not come)
        return fm.U(fm.Not(b), fm.And(fm.Not(a), fm.Not(b)))
    if op == "R":  # b fails at a step with no a before it (nor at it)
        return fm.U(fm.Not(a), fm.Not(b))
    if op == "S":  # no b so far, or a failed at a step after the last b
        return fm.Or(fm.S(fm.Not(b), fm.And(fm.Not(a), fm.Not(b))), fm.H(fm.Not(b)))
    raise ValueError(f"no negation to push into `{g.text}`")


def _always(body: Formula, origin: _Origin) -> _Phrase | None:
    """The two shapes most rules have: "Never: ..." (``G !phi``) and "Whenever A, B"
    (``G (A -> B)``)."""
    lead = origin.from_now
    if body.op == "not" and body.args[0].op not in ("implies", "iff"):
        return _Phrase(f"{lead}never: {_never(body.args[0])}", OPEN)
    if body.op == "implies":
        condition, consequence = body.args
        said = _english(condition, None)
        cond = _one_step(condition, "a step") or (
            _about(said, "a step") if said.template else _inner(said))
        return _Phrase(f"{lead}whenever {cond}, {_must(consequence).text}", OPEN)
    return None


def _never(f: Formula) -> str:
    """What may never happen at a step: "the agent calls X when no ... has happened"."""
    if f.op == "and":
        now = [a for a in f.args if _is_state(a)]
        before = [a for a in f.args if not a.has_future and a.has_past]
        if now and before and len(now) + len(before) == len(f.args):
            present = now[0] if len(now) == 1 else fm.And(*now)
            head = _english(present, None)
            head_text = _one_step(present, "a step") or (
                _about(head, "a step") if head.template else _inner(head))
            past = [_english(a, None) for a in before]
            then = " and ".join(_inner(p) for p in past) if len(past) > 1 else past[0].text
            return f"{head_text} when {then}"
    found = _one_step(f, "a step")
    if found is not None:
        return found
    said = _english(f, None)
    return _about(said, "a step") if said.template else said.text


_FUTURE_MODAL = ("F", "X", "WX", "F[]")
_PAST_MODAL = ("O", "Y")


def _must(f: Formula) -> _Phrase:
    """What a "whenever" requires, said as an obligation where its shape allows."""
    op = f.op
    words = _words(f)
    if words is not None:
        return _Phrase(words.must.replace(_STEP, "the step"), CLOSED)
    if op == "not" and _words(f.args[0]) is not None:
        return _Phrase(_words(f.args[0]).must_not.replace(_STEP, "the step"), CLOSED)
    operand = f.args[0] if f.args else None
    noun = _noun(operand) if operand is not None and op not in ("not", "and", "or") else None
    later = _later(f, _NESTED)
    if later is not None and later[0].quantity == "some" and _noun(later[1]) is not None:
        return _frame(_Phrase(f"{_noun(later[1]).some()} must happen", LITERAL), later[0])
    if op in _FUTURE_MODAL and noun is not None:
        when = _future_when(f, _NESTED)
        words = _words(operand)
        if words is not None and not words.subject:
            return _frame(_Phrase(words.must, LITERAL), when)
        if words is not None and when.subject and when.quantity != "every":
            note = f" {when.note}" if when.note else ""
            return _Phrase(words.must.replace(_STEP, when.subject) + note,
                           OPEN if " or " in when.subject else CLOSED)
        return _frame(_Phrase(f"{noun.some()} must happen", LITERAL), when)
    strictly = _strictly_before(f, _NESTED, modal=True)
    if strictly is not None:
        return strictly
    if op in ("Y", "Z") and noun is not None and _words(operand) is not None \
            and _words(operand).subject:
        when = _past_when(f, _NESTED)
        return _Phrase(f"{_words(operand).must.replace(_STEP, when.subject)} {when.note}", CLOSED)
    if op in _PAST_MODAL and noun is not None:
        return _frame(_Phrase(f"{noun.some()} must have happened", LITERAL),
                      _past_when(f, _NESTED))
    # "no call to X may happen at this step or any later one"
    negated = operand.args[0] if operand is not None and operand.op == "not" else None
    denied = _noun(negated) if negated is not None else None
    if denied is not None:
        if op == "G":
            return _Phrase(f"{denied.none()} may happen at this step or any later one", OPEN)
        if op == "H":
            return _Phrase(f"{denied.none()} may have happened at this step or any earlier one",
                           OPEN)
        if op == "G[]":
            low, high = f.payload
            when = (f"exactly {_steps(low)} after this step" if low == high
                    else f"{low} to {high} steps after this step")
            return _Phrase(f"{denied.none()} may happen {when}", OPEN)
    if op == "WX" and operand.op == "G" and operand.args[0].op == "not":
        denied = _noun(operand.args[0].args[0])
        if denied is not None:
            return _Phrase(f"{denied.none()} may happen at any later step", CLOSED)
    return _english(f, None)


def _precedence(f: Formula, origin: _Origin) -> _Phrase | None:
    """``!p W q`` "no p before the first q (and none at all if no q ever happens)"; ``!p U q``
    the same, and a q must happen."""
    banned, awaited = f.args
    if banned.op != "not":
        return None
    p, q = _noun(banned.args[0]), _noun(awaited)
    if p is None or q is None:
        return None
    lead = origin.from_now
    if f.op == "W":
        return _Phrase(f"{lead}{p.none()} before {q.first()} (and none at all if that never "
                       "happens)", OPEN)
    return _Phrase(f"{lead}{p.none()} before {q.first()}, and {q.some()} must happen "
                   f"{origin.some.at}", OPEN)


def _later(f: Formula, origin: _Origin) -> tuple[_When, Formula] | None:
    """``X F q``, ``WX F q``, ``X G q``, ``WX G q``: a strictly later step, or every one."""
    if f.op not in ("X", "WX") or f.args[0].op not in ("F", "G"):
        return None
    inner = f.args[0]
    after = "after this one" if origin.now == _HERE else f"after {origin.now}"
    if inner.op == "F":
        note = "" if f.op == "X" else f"(if the session goes on {after})"
        return _When(f"at a step {after}", f"a step {after}", note, "some"), inner.args[0]
    note = f"(the session must go on {after})" if f.op == "X" else ""
    return _When(f"at every step {after}", f"every step {after}", note, "every"), inner.args[0]


def _future_when(f: Formula, origin: _Origin) -> _When:
    op, now, nxt = f.op, origin.now, origin.next
    if op == "X":
        return _When(f"at {nxt}", nxt, MUST_GO_ON)
    if op == "WX":
        return _When(f"at {nxt}", nxt, IF_REACHED)
    if op == "F":
        return origin.some
    if op == "G":
        return origin.every
    low, high = f.payload
    if op == "F[]":
        if low == high:
            return _When(f"exactly {_steps(low)} after {now}", f"the step {_steps(low)} after "
                         f"{now}", MUST_GO_ON)
        return _When(f"within {low} to {high} steps after {now}",
                     f"one of the steps {low} to {high} steps after {now}",
                     "(at a step the session reaches)", "some")
    if low == high:
        return _When(f"exactly {_steps(low)} after {now}", f"the step {_steps(low)} after {now}",
                     IF_REACHED)
    return _When(f"at every step {low} to {high} steps after {now}",
                 f"every step {low} to {high} steps after {now}", "(those the session reaches)",
                 "every")


def _future(f: Formula, origin: _Origin) -> _Phrase:
    op = f.op
    now, nxt = origin.now, origin.next
    if op == "X" and f.args[0] is TRUE:
        return _Phrase(f"{nxt} exists (the session goes on to it)", CLOSED)
    if op == "WX" and f.args[0] is FALSE:
        return _Phrase(f"{nxt} does not exist (the session ends at {now})", CLOSED)
    if op == "F" and f.args[0] is TRUE:  # the residual's "the session goes on"
        return _Phrase(f"{now} exists (the session has not ended)", CLOSED)
    if op == "G" and f.args[0] is FALSE:  # the residual's "the session has ended"
        return _Phrase(f"{now} does not exist (the session has ended)", CLOSED)
    if op == "F[]" and f.args[0] is TRUE:
        low = f.payload[0]
        return _Phrase(f"the session reaches the step {_steps(low)} after {now}", CLOSED)
    if op == "G[]" and f.args[0] is FALSE:
        low = f.payload[0]
        return _Phrase(f"the session ends before the step {_steps(low)} after {now}", CLOSED)
    later = _later(f, origin)
    if later is not None:
        return _frame(_english(later[1], None), later[0])
    if op in fm.FUTURE_UNARY or op in fm.BOUNDED:
        return _frame(_english(f.args[0], None), _future_when(f, origin))
    left, right = (_english(a, None) for a in f.args)
    if op == "U":
        first, _ = _framed(right, origin.some, False)
        rest, _ = _framed(left, _When("at every step before that", "every step before that",
                                      quantity="every"), True)
        return _Phrase(f"{first}, and {rest}", OPEN)
    lead = origin.from_now[:-2] + ", " if origin.from_now else ""  # "from this step on, "
    if op == "W":
        noun = _noun(f.args[1])
        until = noun.first() if noun is not None else f"step at which {_inner(right)}"
        if noun is None:
            until = "the first " + until
        when = _When(f"{lead}at every step before {until} (at every step if there is none)")
        return _Phrase(_framed(left, when, True)[0], OPEN)
    # R: the right side holds up to and including the first step of the left (or forever)
    noun = _noun(f.args[0])
    until = noun.first() if noun is not None else f"the first step at which {_inner(left)}"
    when = _When(f"{lead}at every step up to and including {until} "
                 "(at every step if there is none)")
    return _Phrase(_framed(right, when, True)[0], OPEN)


def _past_when(f: Formula, origin: _Origin) -> _When:
    op, now = f.op, origin.now
    here = now == _HERE
    before = "the previous step" if here else f"the step before {now}"
    if op == "Y":
        return _When(f"at {before}", before, "(there must be one)")
    if op == "Z":
        return _When(f"at {before}", before, "(if there is one)")
    if op == "O":
        return _When(f"at {now} or an earlier one" if here else f"at {now} or an earlier step",
                     f"{now} or an earlier one" if here else f"{now} or an earlier step",
                     quantity="some")
    return _When(f"at {now} and every earlier one" if here else f"at {now} and every earlier step",
                 f"{now} and every earlier one" if here else f"{now} and every earlier step",
                 quantity="every")


def _strictly_before(f: Formula, origin: _Origin, modal: bool = False) -> _Phrase | None:
    """``Y O q``: "a q has happened before this step" (strictly: false at the first step);
    ``Z H !q``: "no q has happened before this step"."""
    inner = f.args[0] if f.op in ("Y", "Z") else None
    if inner is not None and f.op == "Z" and inner.op == "not" and inner.args[0].op == "O":
        inner = fm.H(fm.Not(inner.args[0].args[0]))  # !O q is H !q
    if inner is None or inner.op != ("O" if f.op == "Y" else "H"):
        return None
    if f.op == "Y":
        noun = _noun(inner.args[0])
        if noun is None:
            return None
        verb = "must have happened" if modal else "has happened"
        return _Phrase(f"{noun.some()} {verb} before {origin.now}", OPEN if len(noun.alts) > 1
                       else CLOSED)
    denied = _noun(inner.args[0].args[0]) if inner.args[0].op == "not" else None
    if denied is None:
        return None
    verb = "may have happened" if modal else "has happened"
    return _Phrase(f"{denied.none()} {verb} before {origin.now}", OPEN)


def _past(f: Formula, origin: _Origin) -> _Phrase:
    op, now = f.op, origin.now
    if op == "S":
        left, right = (_english(a, None) for a in f.args)
        first, _ = _framed(right, _past_when(fm.O(f.args[1]), origin) if f.args[1].op != "O"
                           else _past_when(f.args[1], origin), False)
        rest, _ = _framed(left, _When(f"at every step after that up to and including {now}",
                                      f"every step after that up to and including {now}",
                                      quantity="every"), True)
        return _Phrase(f"{first}, and {rest}", OPEN)
    operand = f.args[0]
    if op == "Y" and operand is TRUE:
        before = _past_when(f, origin).subject
        why = f" ({now} is not the first step)" if now == _HERE else ""
        return _Phrase(f"{before} exists{why}", CLOSED)
    if op == "Z" and operand is FALSE:
        before = _past_when(f, origin).subject
        why = f" ({now} is the first step)" if now == _HERE else ""
        return _Phrase(f"{before} does not exist{why}", CLOSED)
    strictly = _strictly_before(f, origin)
    if strictly is not None:
        return strictly
    when = _past_when(f, origin)
    noun = _noun(operand)
    if op == "O" and noun is not None and _words(operand) is None:
        return _frame(_Phrase(f"{noun.some()} has happened", LITERAL), when)
    if op == "H" and operand.op == "not":
        denied = _noun(operand.args[0])
        if denied is not None:
            scope = when.at.replace(" and every earlier", " or any earlier")
            return _Phrase(f"{denied.none()} has happened {scope}", OPEN)
    return _frame(_english(operand, None), when)


@lru_cache(maxsize=4096)
def _tidy(f: Formula) -> Formula:
    """``f`` without the constants the English cannot say, by equivalences that hold at every
    step of every finite trace: ``X false`` and ``Y false`` are false, ``WX true`` and ``Z true``
    are true, ``a W false`` is ``G a``, a negation that pushes to a constant is that constant.
    A node is kept as it is where the rewrite (with the constructors' simplifications of its
    parent) would change its value on the empty rest of a session (``p U WX true`` is false
    there, ``p U true`` is true), so residuals keep their meaning at the end of a session too."""
    if not f.args:
        return f
    args = tuple(_tidy(a) for a in f.args)
    if f.op in ("X", "Y") and args[0] is FALSE:
        tidy = FALSE
    elif f.op in ("WX", "Z") and args[0] is TRUE:
        tidy = TRUE
    elif f.op == "W" and args[1] is FALSE:
        tidy = fm.G(args[0])
    elif f.op == "not" and args[0].op not in ("atom", "cmp", "iff", "true", "false", "not") \
            and push_negation(args[0]) in (TRUE, FALSE):
        tidy = push_negation(args[0])  # !(a W !a): false
    else:
        tidy = f if args == f.args else fm.rebuild(f, args)
    if tidy is not f and nnf(tidy).empty_value != nnf(f).empty_value:
        return f
    return tidy


def explain(f: Formula | str) -> str:
    """The formula in plain English, one sentence, deterministic.

    Read at the first step of a session: ``G(tool_call:take -> X tool_call:examine)`` reads
    "Whenever the agent calls take, the agent must call examine at the next step (the session
    must not end before it)."  Open constructions are parenthesised wherever they sit inside
    another, so the sentence has one reading.
    """
    f = _tidy(_as_formula(f))
    if f is TRUE:
        return "Always satisfied (the formula is true)."
    if f is FALSE:
        return "Never satisfied (the formula is false)."
    text = _english(f, _FIRST).text
    if text in (NOTHING_REQUIRED, IMPOSSIBLE):
        return explain(TRUE if text == NOTHING_REQUIRED else FALSE)
    return _sentence(f, text)


def explain_rest(f: Formula | str, capitalise: bool = True) -> str:
    """A residual in plain English: what the rest of a session still owes, read from the step
    after the one it was computed at.  ``F[0,3] use_knife`` reads "One of the steps 0 to 3
    steps after the next step is labelled use_knife (at a step the session reaches)."; the
    constants read as for ``explain``.  ``capitalise=False`` for a sentence that goes on after
    a colon."""
    f = _tidy(_as_formula(f))
    if f is TRUE or f is FALSE:
        return explain(f)
    text = _english(f, _REST).text
    if text in (NOTHING_REQUIRED, IMPOSSIBLE):
        return explain(TRUE if text == NOTHING_REQUIRED else FALSE)
    return _sentence(f, text) if capitalise else text + "."


def clause(f: Formula | str) -> str:
    """A part of a formula in English, read at "this step", with no full stop:
    ``amount > 10000`` reads "amount is over 10000"."""
    return _english(_tidy(_as_formula(f)), None).text


def happened(f: Formula | str) -> str:
    """An atom or data atom that held at a step, as a report says it: "the agent called X",
    "the step was labelled L", "amount (data.amount) was over 500"."""
    f = _as_formula(f)
    words = _words(f) if f.op in ("atom", "cmp") else None
    return words.past if words is not None else clause(f)


def noun(f: Formula | str) -> str:
    """An atom or data atom as a noun, for "no ... happened": "a call to get_balance"."""
    found = _noun(_as_formula(f))
    return found.some() if found is not None else f"a step where {clause(f)}"


def _sentence(f: Formula, text: str) -> str:
    # Capitalise the sentence, unless it starts with a name (a data path).
    names = {g.payload.left[1] for g in f.subformulas()
             if g.op == "cmp" and g.payload.left[0] == "path"}
    if not any(text.startswith(name + " ") for name in names):
        text = text[0].upper() + text[1:]
    return text + "."
