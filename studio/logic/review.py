"""Review aids for rule authors: example traces, equivalence checks and warnings (the English
of formulas is ``studio.logic.wording``).

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
from dataclasses import dataclass
from functools import lru_cache

from . import formula as fm
from .finite import holds
from .formula import FALSE, TRUE, Formula
from .parser import parse
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


PAUSE_EVERY = 64


def _search(formulas: Sequence[Formula], goal: Goal, settled: Callable[[tuple], bool],
            max_length: int, allow_empty: bool, state_cap: int, what: str, *,
            start: tuple | None = None, expand: Callable | None = None,
            pause: Callable[[], None] | None = None) -> SearchResult:
    """A shortest non-empty trace on which ``goal`` holds of the formulas' verdicts.

    ``settled(residuals)`` says that no continuation from those residuals can reach the goal, so
    the state need not be expanded.

    Anticipation (``studio.logic.anticipation``) searches from a monitor's state instead:
    ``start`` is ``(residuals, memory, context)`` - residuals in negation normal form with data
    atoms abstracted, the past nodes' memory as a dict (or None) and a hashable context that
    becomes part of every state - and ``expand(residuals, carry, context)``, when given, yields
    ``(letter, next residuals, next carry, next context)`` in place of the letters over the atoms
    (the data fragment's steps).  ``pause``, when given, is called every ``PAUSE_EVERY``
    transitions (a search off the request path lets other threads have the lock it holds).
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
                if pause is not None and not transitions % PAUSE_EVERY:
                    pause()
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
