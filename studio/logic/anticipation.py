"""Anticipatory four-valued verdicts (paper 002, Definition 6), exact where decidable.

After a prefix of a session a rule is, for the rule's formula read over the whole session with no
restart:

* ``permanently_satisfied`` - the prefix satisfies it and so does every finite continuation;
* ``permanently_violated``  - the prefix violates it and so does every finite continuation;
* ``currently_satisfied``   - the prefix satisfies it (the session, ended now, would comply) but
  some continuation violates it;
* ``currently_violated``    - the prefix violates it but some continuation satisfies it.

The prefix is summarised by the monitor's state: the residual (progression is exact for finite
sessions: a continuation satisfies the rule iff it satisfies the residual, the empty
continuation included, see ``studio.logic.progression``), the past operators' memory and, for
data atoms, the context ``prev()`` will read (``studio.logic.smt``).  So the verdict is the
residual's ``empty_value`` plus one search for a continuation that flips it.

Propositional rules: the search is the review module's breadth-first search over progression
residuals (``studio.logic.review._search``), started from the monitor's state.  It is exact when
it exhausts the reachable states, which it does on the formulas met in practice.

Data atoms: the same search, with the letters of a step given by ``smt.Frames.steps`` (every
distinct way the step's data atoms can hold, decided with z3) and the data context as part of the
state.  Exact in the fragment ``smt`` describes (comparisons without arithmetic, one-step
lookback).  Outside it, or when a search stops at its budget, the verdict falls back to what
progression says - permanent only when the residual is ``true`` or ``false`` - and
``anticipated`` is False ("not anticipated", with the reason).

``RuleAnticipation.verdict(residual, memory, context)`` caches per state, so each residual (with
its memory and context) is decided once; after warm-up a step is a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .formula import FALSE, TRUE, Formula
from .review import (
    ReviewLimitError,
    _advance,
    _letters,
    _past_nodes,
    _PastMemory,
    _search,
    propositional_abstraction,
)

PERMANENTLY_SATISFIED = "permanently_satisfied"
PERMANENTLY_VIOLATED = "permanently_violated"
CURRENTLY_SATISFIED = "currently_satisfied"
CURRENTLY_VIOLATED = "currently_violated"
VALUES = (PERMANENTLY_SATISFIED, PERMANENTLY_VIOLATED, CURRENTLY_SATISFIED, CURRENTLY_VIOLATED)
PERMANENT = frozenset({PERMANENTLY_SATISFIED, PERMANENTLY_VIOLATED})

WORDS = {
    # Said for people who never saw the four-valued semantics (the values keep their names).
    PERMANENTLY_SATISFIED: "met for good",
    PERMANENTLY_VIOLATED: "broken for good",
    CURRENTLY_SATISFIED: "met so far",
    CURRENTLY_VIOLATED: "not met yet",
}

# A search explores at most this many states (a residual's whole future is usually a few dozen).
STATE_BUDGET = 20_000
MAX_LENGTH = 100_000  # the search stops by exhausting its states or at the budget, not here


@dataclass(frozen=True)
class Verdict:
    """One rule's four-valued verdict after a prefix.

    ``value``        one of ``VALUES``;
    ``anticipated``  False when the search could not decide (outside the data fragment, or at
                     its budget): ``value`` is then progression's (permanent only for a residual
                     ``true``/``false``);
    ``reason``       a short sentence.
    """

    value: str
    anticipated: bool
    reason: str

    @property
    def permanent(self) -> bool:
        return self.value in PERMANENT

    @property
    def satisfied(self) -> bool:
        return self.value in (PERMANENTLY_SATISFIED, CURRENTLY_SATISFIED)


class RuleAnticipation:
    """The anticipation of one rule: decides states of its monitor, cached.

    ``past_nodes``: the rule's past subformulas in the order of its monitor's memory;
    ``frames``: ``smt.Frames`` of its data atoms (None for a propositional rule, or a
    ``DataFragmentError`` text when the data atoms are outside the fragment).
    """

    def __init__(self, past_nodes: Sequence[Formula] = (), frames=None,
                 outside: str | None = None, state_budget: int = STATE_BUDGET,
                 cache_limit: int = 50_000):
        self.past_nodes = tuple(past_nodes)
        self.abstract_past = tuple(propositional_abstraction(n) for n in self.past_nodes)
        self.frames = frames
        self.outside = outside
        self.state_budget = state_budget
        self.cache_limit = cache_limit
        self._cache: dict[tuple, Verdict] = {}
        self.searches = 0
        self.lookups = 0

    @classmethod
    def for_formula(cls, formula: Formula, **kwargs) -> RuleAnticipation:
        """For a rule read from its negation normal form (past nodes in subformula order)."""
        from .smt import DataFragmentError, Frames

        subformulas = formula.subformulas()
        past = tuple(g for g in subformulas if g.is_past)
        comparisons = tuple(g for g in subformulas if g.op == "cmp")
        frames, outside = None, None
        if comparisons:
            try:
                frames = Frames(comparisons)
            except DataFragmentError as exc:
                outside = str(exc)
        return cls(past, frames, outside, **kwargs)

    @property
    def smt_calls(self) -> int:
        return self.frames.calls if self.frames is not None else 0

    def verdict(self, residual: Formula, memory: Sequence[bool] | None = None,
                context: tuple = (), pause=None) -> Verdict:
        """The verdict of the state: ``memory`` are the past nodes' values (aligned with
        ``past_nodes``; None when the residual reads no past node), ``context`` the data
        context (``smt.Frames.context_of``); ``pause``: called now and then during a search
        (``review._search``)."""
        key = self._key(residual, memory, context)
        found = self._cache.get(key)
        self.lookups += 1
        if found is None:
            found = self._decide(residual, key[1], context, pause)
            self.remember(residual, memory, context, found)
        return found

    @staticmethod
    def _key(residual: Formula, memory, context) -> tuple:
        return (residual, tuple(memory) if memory is not None and residual.has_past else None,
                context)

    def cached(self, residual: Formula, memory=None, context: tuple = ()) -> Verdict | None:
        """The verdict when this state was decided before, else None (no search)."""
        return self._cache.get(self._key(residual, memory, context))

    def remember(self, residual: Formula, memory, context: tuple, verdict: Verdict) -> None:
        """Keep a verdict decided elsewhere (another process, read back from a store)."""
        if len(self._cache) >= self.cache_limit:
            self._cache.clear()
        self._cache[self._key(residual, memory, context)] = verdict

    # -- deciding ----------------------------------------------------------------------------

    def _decide(self, residual: Formula, memory, context, pause=None) -> Verdict:
        current = residual.empty_value
        if residual is TRUE:
            return Verdict(PERMANENTLY_SATISFIED, True, "met: nothing more is required")
        if residual is FALSE:
            return Verdict(PERMANENTLY_VIOLATED, True, "can no longer be met")
        fallback = CURRENTLY_SATISFIED if current else CURRENTLY_VIOLATED
        if self.outside is not None:
            return Verdict(fallback, False, f"not anticipated: {self.outside}")
        self.searches += 1
        try:
            found = self.search(residual, memory, context, satisfying=not current,
                                pause=pause)
        except ReviewLimitError:
            return Verdict(fallback, False, "not anticipated: the rule reads too many atoms "
                                            "for the search")
        if found.trace is not None:
            if current:
                return Verdict(CURRENTLY_SATISFIED, True,
                               "met if the session ended now; a later step can still break "
                               "it")
            return Verdict(CURRENTLY_VIOLATED, True,
                           "not met if the session ended now; later steps can still meet it")
        if not found.exhaustive:
            return Verdict(fallback, False,
                           "not anticipated: the search for a way the session can go on stopped at its "
                           f"budget ({found.states} states)")
        if current:
            return Verdict(PERMANENTLY_SATISFIED, True,
                           "nothing the agent does later can break it: every way the session "
                           "can go on meets it")
        return Verdict(PERMANENTLY_VIOLATED, True,
                       "nothing the agent does later can meet it" + self._conflict(residual))

    def search(self, residual: Formula, memory, context, satisfying: bool, pause=None):
        """A shortest continuation of at least one step that makes ``residual`` true
        (``satisfying``) or false, as a ``review.SearchResult`` (the empty continuation's verdict
        is the residual's ``empty_value``)."""
        abstract = propositional_abstraction(residual)
        values = None
        if memory is not None:
            values = dict(zip(self.abstract_past, memory))
        expand = None
        if self.frames is not None:
            expand = self._expander(abstract)
        return _search((abstract,), goal=lambda v: v[0] == satisfying,
                       settled=lambda r: r[0] is TRUE or r[0] is FALSE,
                       max_length=MAX_LENGTH, allow_empty=False,
                       state_cap=self.state_budget,
                       what="satisfies it" if satisfying else "violates it",
                       start=((abstract,), values, context), expand=expand, pause=pause)

    def _expander(self, abstract: Formula):
        return data_expander(self.frames, [abstract])

    def _conflict(self, residual: Formula) -> str:
        """For a data rule: two data atoms the residual needs together that no step can make
        both true (", `a` and `b` cannot both hold"), when there is such a pair."""
        if self.frames is None:
            return ""
        needed = [g for g in residual.subformulas() if g.op == "cmp"]
        for i, a in enumerate(needed):
            for b in needed[i + 1:]:
                if _together(residual, a, b) and self.frames.jointly_impossible(a, b):
                    return f": `{a.text}` and `{b.text}` cannot both hold"
        return ""


def data_expander(frames, abstracts: Sequence[Formula]):
    """The steps of a search over data (``review._search``'s ``expand``): per data frame of
    ``frames`` (z3), every valuation of the atoms the state reads.  ``abstracts``: the searched
    formulas with data atoms abstracted (their past nodes make the memory).  A letter is the
    atom names and the data atoms' texts that hold."""
    past = _past_nodes(list(abstracts))
    memory = _PastMemory(past) if past else None
    names = frozenset(c.text for c in frames.comparisons)

    def expand(residuals, carry, context):
        reads = {a for r in residuals for a in r.atoms if isinstance(a, str)}
        if carry is not None:
            reads |= memory.names
        plain = tuple(sorted(reads - names))
        seen = set()
        for held, after in frames.steps(context):
            data = frozenset(c.text for c in held if c.text in reads)
            if (data, after) in seen:
                continue
            seen.add((data, after))
            for atoms in _letters(plain):
                letter = labels = atoms | data
                next_carry = carry
                if carry is not None:
                    next_carry, past_true = memory.advance(carry, labels)
                    labels = labels | past_true
                yield letter, tuple(_advance(r, labels) for r in residuals), next_carry, after

    return expand


def _together(f: Formula, a: Formula, b: Formula) -> bool:
    """Some ``&`` in ``f`` has both ``a`` and ``b`` among its members (not negated)."""
    return any(g.op == "and" and a in g.args and b in g.args for g in f.subformulas())


def for_monitor_rule(rule, domain: tuple[int, int] | None = None) -> RuleAnticipation:
    """The anticipation of a ``studio.monitor.automaton.CompiledRule`` (its memory order);
    ``domain``: see ``smt.Frames`` (tests only)."""
    from .smt import DataFragmentError, Frames

    frames, outside = None, None
    if rule.comparisons:
        try:
            frames = Frames(rule.comparisons, domain=domain)
        except DataFragmentError as exc:
            outside = str(exc)
    return RuleAnticipation(rule.past_nodes, frames, outside)


__all__ = [
    "CURRENTLY_SATISFIED",
    "CURRENTLY_VIOLATED",
    "PERMANENTLY_SATISFIED",
    "PERMANENTLY_VIOLATED",
    "VALUES",
    "WORDS",
    "RuleAnticipation",
    "Verdict",
    "data_expander",
    "for_monitor_rule",
]
