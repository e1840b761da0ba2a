"""The learned predictor (paper 004): a DTMC over abstract states, its reachability risks solved
once and cached, and the answer a live decision asks for - the probability that a rule (or any
rule) is violated within k steps of the state a candidate next event leads to, and whether the
PAC bound backs that number.

An answer is backed when the states it depends on were observed often enough (equation 2): the
state itself and every state it can reach, within the horizon and before a violation, that is not
absorbing.  A state the sessions never showed has no learned future: its answer is not backed and
carries no probability unless the candidate itself violates a rule there (then it is 1).

With domain predicates (``studio.risk.predicates``) the state count is kept bounded when the model
is built (``Traces.merged``): a state seen fewer than ``min_visits`` times forgets its last
predicate's truth (it is merged into that coarser state, with whatever else lands there), again
until it is seen often enough or keeps no predicate; then, while there are more than
``max_states`` states, the rarest state that still keeps a predicate is merged the same way.  The
states the rules alone distinguish (atoms, monitor configurations) are never merged: merging
them would change what the rules say.  A live step whose state was merged is answered from the
coarser state it was merged into (``RiskModel.find``).
"""

from __future__ import annotations

import base64
import heapq
import json
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from studio.monitor import RuleSet, SessionMonitor

from . import pac
from .abstraction import AbstractState, Abstraction
from .predicates import action_of, future_violations
from .dtmc import LearnedChain, learn
from .reach import reachability, reachable_within

ANY_RULE = "*"
MODEL_FORMAT = 1   # what ``RiskModel.to_json`` writes; ``from_json`` reads this format only
MIN_VISITS = 5        # a state with predicates seen fewer times is merged into a coarser one
MAX_STATES = 100_000  # past this, the rarest states with predicates are merged too


@dataclass
class RiskAnswer:
    horizon: int | None
    risk: dict[str, float | None]     # per rule name, and ANY_RULE for any rule
    backed: bool                      # the PAC bound holds for every state the answer uses
    known: bool                       # the state was seen in the learned sessions
    state: int | None                 # its index in the model, when known
    reason: str = ""
    unbacked_states: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"horizon": self.horizon, "risk": self.risk, "backed": self.backed,
                "known": self.known, "state": self.state, "reason": self.reason}


class Traces:
    """Abstract traces of sessions, added one session at a time (so a caller can report
    progress, or take a lock per session); each state is kept once and traces as its numbers."""

    def __init__(self, abstraction: Abstraction):
        self.abstraction = abstraction
        self.states: list[AbstractState] = []
        self.index: dict[AbstractState, int] = {}
        self.numbered: list[list[int]] = []

    def add(self, events: Iterable[Mapping]) -> list[int]:
        """Abstract one session; returns its trace as state numbers."""
        numbers = []
        for state in self.abstraction.session(events):
            i = self.index.get(state)
            if i is None:
                i = self.index[state] = len(self.states)
                self.states.append(state)
            numbers.append(i)
        self.numbered.append(numbers)
        return numbers

    def subset(self, sessions: Iterable[int]) -> Traces:
        """The traces of the sessions numbered ``sessions`` (in the order added), alone."""
        out = Traces(self.abstraction)
        for k in sessions:
            numbers = []
            for i in self.numbered[k]:
                state = self.states[i]
                j = out.index.get(state)
                if j is None:
                    j = out.index[state] = len(out.states)
                    out.states.append(state)
                numbers.append(j)
            out.numbered.append(numbers)
        return out

    def visits(self) -> np.ndarray:
        counts = np.zeros(len(self.states), dtype=np.int64)
        for numbers in self.numbered:
            np.add.at(counts, numbers, 1)
        return counts

    def merged(self, min_visits: int = MIN_VISITS, max_states: int = MAX_STATES) -> Traces:
        """These traces with rare states merged into coarser ones (see the module's doc):
        while some state with predicates is seen fewer than ``min_visits`` times, or (past
        ``max_states`` states) is the rarest with predicates, it forgets its last predicate's
        truth.  Returns self when nothing is merged."""
        if not self.abstraction.predicates or not self.states:
            return self
        visits = dict(zip(self.states, self.visits().tolist()))
        parent: dict[AbstractState, AbstractState] = {}

        def absorb(state: AbstractState) -> AbstractState:
            coarse = state.coarser()
            visits[coarse] = visits.get(coarse, 0) + visits.pop(state)
            parent[state] = coarse
            return coarse

        # Finest first: a merge only adds to a state one predicate coarser, looked at next.
        for length in range(len(self.abstraction.predicates), 0, -1):
            for state in [s for s, v in visits.items()
                          if len(s.features) == length and v < min_visits]:
                absorb(state)
        if len(visits) > max_states:
            heap = [(v, -len(s.features), k, s) for k, (s, v) in enumerate(visits.items())
                    if s.features]
            heapq.heapify(heap)
            serial = len(heap)
            while len(visits) > max_states and heap:
                count, _, _, state = heapq.heappop(heap)
                if visits.get(state) != count:
                    continue   # merged already, or grown since
                coarse = absorb(state)
                if coarse.features:
                    serial += 1
                    heapq.heappush(heap, (visits[coarse], -len(coarse.features), serial, coarse))

        def resolve(state: AbstractState) -> AbstractState:
            while state in parent:
                state = parent[state]
            return state

        target = {s: resolve(s) for s in self.states}
        if all(target[s] == s for s in self.states):
            return self
        out = Traces(self.abstraction)
        for numbers in self.numbered:
            renumbered = []
            for i in numbers:
                state = target[self.states[i]]
                j = out.index.get(state)
                if j is None:
                    j = out.index[state] = len(out.states)
                    out.states.append(state)
                renumbered.append(j)
            out.numbered.append(renumbered)
        return out

    def model(self, alpha: float = 1.0, epsilon: float = pac.EPSILON,
              delta: float = pac.DELTA, phases: dict[str, float] | None = None,
              min_visits: int = MIN_VISITS, max_states: int = MAX_STATES) -> RiskModel:
        """The smoothed DTMC over the states the sessions showed (rare states with predicates
        merged: ``merged``).  ``phases``, when given, gets the seconds each step took added to
        it."""
        clock = time.perf_counter
        started = clock()
        if self.abstraction.predicates:
            merged = self.merged(min_visits, max_states)
            if merged is not self:
                return merged.model(alpha, epsilon, delta, phases, min_visits, max_states)
        states = self.states
        valid = self.abstraction.valid_transitions(states)
        found_valid = clock()
        absorbing = np.array([s.kind == "end" for s in states], dtype=bool)
        chain = learn(self.numbered, len(states), valid, alpha, absorbing)
        learned = clock()
        model = RiskModel(self.abstraction, list(states), chain, epsilon, delta)
        if phases is not None:
            for name, seconds in (("valid transitions", found_valid - started),
                                  ("smoothed DTMC", learned - found_valid),
                                  ("PAC bounds", clock() - learned)):
                phases[name] = phases.get(name, 0.0) + seconds
        return model


class RiskModel:
    """A DTMC learned from sessions, with cached risks per (rule, horizon)."""

    def __init__(self, abstraction: Abstraction, states: list[AbstractState],
                 chain: LearnedChain, epsilon: float = pac.EPSILON, delta: float = pac.DELTA):
        self.abstraction = abstraction
        self.states = states
        self.index = {s: i for i, s in enumerate(states)}
        self.chain = chain
        self.epsilon, self.delta = epsilon, delta
        violated = np.array([s.violated for s in states], dtype=bool).reshape(
            len(states), len(abstraction.rules))
        self.unsafe = {name: violated[:, i] for i, name in enumerate(abstraction.rules)}
        self.unsafe[ANY_RULE] = violated.any(axis=1)
        self.enough = chain.has_enough_samples(epsilon, delta)
        self._risk: dict[tuple[str, int | None, bool], np.ndarray] = {}
        self._unbacked: dict[tuple[str, int | None, bool], np.ndarray] = {}
        self._guarded: tuple[sp.csr_matrix, dict[str, np.ndarray]] | None = None

    @classmethod
    def learn(cls, abstraction: Abstraction, sessions: Iterable[Iterable[Mapping]],
              alpha: float = 1.0, epsilon: float = pac.EPSILON, delta: float = pac.DELTA,
              min_visits: int = MIN_VISITS, max_states: int = MAX_STATES) -> RiskModel:
        """Abstract every session, learn the smoothed DTMC over the states they show."""
        traces = Traces(abstraction)
        for events in sessions:
            traces.add(events)
        return traces.model(alpha, epsilon, delta, min_visits=min_visits,
                            max_states=max_states)

    def find(self, state: AbstractState) -> tuple[int | None, int]:
        """The index of ``state`` in the model, or of the coarser state it was merged into;
        with how many of its predicates' truths were forgotten on the way."""
        dropped = 0
        while state is not None:
            i = self.index.get(state)
            if i is not None:
                return i, dropped
            state = state.coarser()
            dropped += 1
        return None, dropped

    # -- cached solutions ---------------------------------------------------------------------

    def guarded_chain(self) -> tuple[sp.csr_matrix, dict[str, np.ndarray]]:
        """The chain as an agent behind a guard lives it: a step that violates a rule is
        refused (the exact check) and the agent draws again, so the transitions into violating
        step states are dropped and each row renormalised over what is left.  A state all of
        whose steps violate is doomed (the guard can only stop there): it becomes absorbing and
        counts as unsafe for every rule one of those steps violates.  Returns the matrix and,
        per rule (and ``ANY_RULE``), the unsafe states under it.  Kept once worked out."""
        if self._guarded is None:
            matrix = self.chain.matrix.tocsr()
            is_step = np.array([s.kind == "step" for s in self.states], dtype=bool)
            blocked = self.unsafe[ANY_RULE] & is_step
            kept = (matrix @ sp.diags((~blocked).astype(np.float64))).tocsr()
            kept.eliminate_zeros()
            mass = np.asarray(kept.sum(axis=1)).ravel()
            doomed = mass <= 1e-12
            scale = np.divide(1.0, mass, out=np.zeros_like(mass), where=~doomed)
            guarded = (sp.diags(scale) @ kept + sp.diags(doomed.astype(np.float64))).tocsr()
            guarded.eliminate_zeros()
            unsafe = {}
            for name, states in self.unsafe.items():
                into = np.asarray((matrix @ sp.diags((states & blocked).astype(np.float64)))
                                  .sum(axis=1)).ravel() > 0
                unsafe[name] = states | (doomed & into)
            self._guarded = (guarded, unsafe)
        return self._guarded

    def _reading(self, guarded: bool) -> tuple[sp.csr_matrix, dict[str, np.ndarray]]:
        return self.guarded_chain() if guarded else (self.chain.matrix, self.unsafe)

    def risks(self, rule: str = ANY_RULE, horizon: int | None = None,
              guarded: bool = False) -> np.ndarray:
        """Per state, the probability of a violation of ``rule`` within ``horizon`` steps
        (ever, when None), of the agent as learned or (``guarded``) behind a guard that refuses
        every violating step; solved on first use and kept."""
        key = (rule, horizon, guarded)
        found = self._risk.get(key)
        if found is None:
            if rule not in self.unsafe:
                raise ValueError(f"rule: {rule!r} is not in the model's rule set")
            matrix, unsafe = self._reading(guarded)
            found = self._risk[key] = reachability(matrix, unsafe[rule], horizon)
        return found

    def unbacked(self, rule: str = ANY_RULE, horizon: int | None = None,
                 guarded: bool = False) -> np.ndarray:
        """Per state: whether the answer from it uses a state without enough samples."""
        key = (rule, horizon, guarded)
        found = self._unbacked.get(key)
        if found is None:
            matrix, unsafe = self._reading(guarded)
            short = ~self.enough & ~unsafe[rule]
            found = self._unbacked[key] = reachable_within(matrix, short, unsafe[rule],
                                                           horizon)
        return found

    def prepare(self, horizon: int | None, guarded: bool = False) -> None:
        """Solve every rule's risk at ``horizon`` now, so that decisions are lookups."""
        for rule in self.unsafe:
            self.risks(rule, horizon, guarded)
            self.unbacked(rule, horizon, guarded)

    # -- answers ------------------------------------------------------------------------------

    def answer(self, state: AbstractState, horizon: int | None,
               guarded: bool = False) -> RiskAnswer:
        """The risk from ``state`` (the state a candidate leads to); ``guarded``: of the agent
        behind a guard that refuses every violating step (``guarded_chain``)."""
        names = list(self.unsafe)
        now = dict(zip(self.abstraction.rules, state.violated))
        now[ANY_RULE] = any(state.violated)
        i, dropped = self.find(state)
        if i is None:
            risk = {name: (1.0 if now[name] else None) for name in names}
            return RiskAnswer(horizon, risk, False, False, None,
                              "the sessions the model learned from never reached this state")
        risk = {name: float(self.risks(name, horizon, guarded)[i]) for name in names}
        backed = not self.unbacked(ANY_RULE, horizon, guarded)[i]
        reason = ("every state this answer depends on has the samples the PAC bound asks for"
                  if backed else
                  "some states this answer depends on have fewer samples than the PAC bound "
                  "asks for")
        if dropped:
            kept = self.abstraction.predicates[:len(state.features) - dropped]
            reason += ("; answered from a coarser state that tells apart only "
                       + (", ".join(p.name for p in kept) if kept else "no predicate")
                       + " (the sessions showed this one too rarely)")
        return RiskAnswer(horizon, risk, backed, True, i, reason)

    def predict(self, monitor: SessionMonitor, candidate: Mapping, horizon: int | None,
                guarded: bool = False, recent: Iterable[Mapping | None] = ()) -> RiskAnswer:
        """The risk if ``candidate`` (an event) is the session's next step.  ``monitor`` is the
        session's monitor up to now; it is read, not advanced (stepping needs only its monitors'
        configurations, not the atoms of its last step).  ``recent``: the session's last events,
        the latest last (``abstraction.history`` of them are read by predicates on the last
        actions)."""
        current = self.abstraction.current(monitor)
        labels = monitor.labels_for(candidate)
        features = ()
        if self.abstraction.predicates:
            actions = [action_of(e) if e is not None else None for e in recent]
            features = self.abstraction.features(candidate, actions)
        return self.answer(self.abstraction.step(current, labels, features), horizon, guarded)

    def to_json(self, compact: bool = False) -> dict:
        """The model as data: the abstraction (rules, picked atoms, exclusions), the states with
        their atoms, samples and PAC verdict, the transitions with their probabilities, and what
        the chain was learned from (observed counts, valid transitions, absorbing states), so
        that ``from_json`` gives back the same model.  Sparse matrices are listed row by row in
        their stored order (``[row, column, value]``): rebuilt in that order, every risk is
        computed with the same floating-point operations.

        ``compact``: for storing large models - the states as zlib-compressed JSON and each
        matrix as its CSR arrays (little-endian, column numbers as differences, compressed), all
        in base64; a model of 10^4 states and 3 million transitions takes a tenth of the room
        and loads without building a Python list per transition."""
        samples = self.chain.samples().tolist()
        needed = self.chain.samples_needed(self.epsilon, self.delta).tolist()
        enough = self.enough.tolist()
        if compact:
            # Only ever dumped: JSON writes tuples as lists, so the states' own tuples do.
            states = [{"kind": s.kind, "labels": s.labels, "monitors": s.monitors,
                       "violated": s.violated, "samples": int(samples[i]),
                       "samples_needed": needed[i], "enough": enough[i],
                       **({"features": s.features} if s.features else {})}
                      for i, s in enumerate(self.states)]
        else:
            states = [{**s.to_json(), "samples": int(samples[i]),
                       "samples_needed": needed[i], "enough": enough[i]}
                      for i, s in enumerate(self.states)]
        data = {
            "format": MODEL_FORMAT,
            "rules": list(self.abstraction.rules),
            "atoms": sorted(self.abstraction.picked),
            "exclusions": [sorted(group) for group in self.abstraction.exclusions],
            "predicates": [p.to_json() for p in self.abstraction.predicates],
            "end_of_session": self.abstraction.end_of_session,
            "epsilon": self.epsilon, "delta": self.delta, "alpha": self.chain.alpha,
            "invalid_observed": int(self.chain.invalid_observed),
            "absorbing": [int(i) for i in np.flatnonzero(self.chain.absorbing)],
        }
        if compact:
            data.update({
                "states": {"zlib": _pack(json.dumps(states, separators=(",", ":")).encode())},
                "transitions": _packed(self.chain.matrix),
                "counts": _packed(self.chain.counts),
                "valid": _packed(self.chain.valid, values=False)})
        else:
            data.update({
                "states": states,
                "transitions": _entries(self.chain.matrix),
                "counts": [[i, j, int(c)] for i, j, c in _entries(self.chain.counts)],
                "valid": [[i, j] for i, j, _ in _entries(self.chain.valid)]})
        return data

    @classmethod
    def from_json(cls, data: Mapping, ruleset: RuleSet) -> RiskModel:
        """The model ``to_json`` gave (either form), for ``ruleset`` (the compiled rules it was
        learned for: the same rule names in the same order).  Raises ValueError for data that
        does not fit."""
        if data.get("format") != MODEL_FORMAT:
            raise ValueError(f"format: a stored risk model of format {data.get('format')!r}, "
                             f"this version reads format {MODEL_FORMAT}")
        names = [rule.name for rule in ruleset.rules]
        if list(data["rules"]) != names:
            raise ValueError(f"rules: the model was learned for {', '.join(data['rules'])}, "
                             f"not {', '.join(names)}")
        from .predicates import predicates_from_json

        abstraction = Abstraction(ruleset, data["atoms"], data["exclusions"],
                                  bool(data["end_of_session"]),
                                  predicates_from_json(data.get("predicates", [])))
        stored = data["states"]
        if isinstance(stored, Mapping):
            stored = json.loads(_unpack(stored["zlib"]))
        states = [AbstractState.from_json(s) for s in stored]
        n = len(states)
        absorbing = np.zeros(n, dtype=bool)
        absorbing[np.asarray(data["absorbing"], dtype=np.int64)] = True
        if isinstance(data["transitions"], Mapping):
            matrix, counts, valid = (_unpacked(data[name], n) for name in
                                     ("transitions", "counts", "valid"))
        else:
            matrix, counts = _matrix(data["transitions"], n), _matrix(data["counts"], n)
            valid = _matrix([[i, j, 1.0] for i, j in data["valid"]], n)
        chain = LearnedChain(matrix=matrix, counts=counts, valid=valid, absorbing=absorbing,
                             alpha=float(data["alpha"]),
                             invalid_observed=int(data["invalid_observed"]))
        return cls(abstraction, states, chain, float(data["epsilon"]), float(data["delta"]))


def _pack(raw: bytes) -> str:
    # Level 1: a 10^5-state model's matrices compress 6x faster than at 6, 20% larger.
    return base64.b64encode(zlib.compress(raw, 1)).decode("ascii")


def _unpack(text: str) -> bytes:
    try:
        return zlib.decompress(base64.b64decode(text, validate=True))
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"a packed part of the model does not read ({exc})") from None


def _packed(matrix: sp.csr_matrix, values: bool = True) -> dict:
    """A CSR matrix's arrays, packed (column numbers as differences: they compress well)."""
    indices = np.asarray(matrix.indices, dtype="<i8")
    out = {"indptr": _pack(np.asarray(matrix.indptr, dtype="<i8").tobytes()),
           "indices": _pack(np.diff(indices, prepend=0).astype("<i8").tobytes())}
    if values:
        out["data"] = _pack(np.asarray(matrix.data, dtype="<f8").tobytes())
    return out


def _unpacked(packed: Mapping, n: int) -> sp.csr_matrix:
    indptr = np.frombuffer(_unpack(packed["indptr"]), dtype="<i8").astype(np.int64)
    indices = np.cumsum(np.frombuffer(_unpack(packed["indices"]), dtype="<i8"))
    if "data" in packed:
        data = np.frombuffer(_unpack(packed["data"]), dtype="<f8").astype(np.float64)
    else:
        data = np.ones(len(indices))
    if (len(indptr) != n + 1 or indptr[0] != 0 or indptr[-1] != len(indices)
            or len(data) != len(indices) or (np.diff(indptr) < 0).any()
            or (len(indices) and (indices.min() < 0 or indices.max() >= n))):
        raise ValueError("a packed matrix does not fit the model's states")
    index_type = np.int32 if n < 2**31 else np.int64
    return sp.csr_matrix((data, indices.astype(index_type), indptr.astype(index_type)),
                         shape=(n, n))


def _entries(matrix: sp.csr_matrix) -> list[list]:
    """``[row, column, value]`` of every stored entry, in the CSR's own order."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    return [[int(i), int(j), float(v)]
            for i, j, v in zip(rows, matrix.indices, matrix.data)]


def _matrix(entries: list, n: int) -> sp.csr_matrix:
    """The n x n CSR matrix ``_entries`` listed, with its entries in the same order."""
    if not entries:
        return sp.csr_matrix((n, n), dtype=np.float64)
    rows = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
    if (np.diff(rows) < 0).any() or rows[0] < 0 or rows[-1] >= n:
        raise ValueError("a matrix's entries must be listed row by row, within the states")
    indices = np.fromiter((e[1] for e in entries), dtype=np.int32, count=len(entries))
    if indices.min() < 0 or indices.max() >= n:
        raise ValueError("a matrix entry names a state the model does not have")
    data = np.fromiter((e[2] for e in entries), dtype=np.float64, count=len(entries))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


# ---------------------------------------------------------------------------------------------
# How good the alarms are


@dataclass
class AlarmQuality:
    """The alarms of a model (risk of any rule within ``horizon`` at or above ``threshold``)
    against what happened (a violation within ``horizon`` steps), over the steps of held-out
    sessions whose own state is not violated (the exact check sees those)."""

    horizon: int
    threshold: float
    steps: int = 0
    sessions: int = 0
    true_alarms: int = 0
    false_alarms: int = 0
    missed: int = 0
    unknown: int = 0           # steps in states the model never saw (no alarm)

    @property
    def precision(self) -> float | None:
        raised = self.true_alarms + self.false_alarms
        return self.true_alarms / raised if raised else None

    @property
    def recall(self) -> float | None:
        happened = self.true_alarms + self.missed
        return self.true_alarms / happened if happened else None

    def to_json(self) -> dict:
        return {"horizon": self.horizon, "threshold": self.threshold, "steps": self.steps,
                "sessions": self.sessions, "true_alarms": self.true_alarms,
                "false_alarms": self.false_alarms, "missed": self.missed,
                "unknown": self.unknown, "precision": self.precision, "recall": self.recall}


def alarm_quality(model: RiskModel, traces: Sequence[Sequence[AbstractState]], horizon: int,
                  threshold: float, guarded: bool = False) -> AlarmQuality:
    """``AlarmQuality`` of ``model`` on abstract traces (``Abstraction.session`` of sessions it
    did not learn from)."""
    out = AlarmQuality(horizon, threshold, sessions=len(traces))
    risks = model.risks(ANY_RULE, horizon, guarded)
    for trace in traces:
        violated = [any(s.violated) for s in trace]
        future = future_violations(violated, horizon)
        for k in range(1, len(trace)):
            if trace[k].kind != "step" or violated[k]:
                continue
            out.steps += 1
            i, _ = model.find(trace[k])
            alarm = i is not None and risks[i] >= threshold
            if i is None:
                out.unknown += 1
            if alarm and future[k]:
                out.true_alarms += 1
            elif alarm:
                out.false_alarms += 1
            elif future[k]:
                out.missed += 1
    return out


def held_out_quality(traces: Traces, horizon: int, threshold: float, guarded: bool = False,
                     min_visits: int = MIN_VISITS, max_states: int = MAX_STATES,
                     alpha: float = 1.0) -> AlarmQuality:
    """The alarms of a model learned (as ``traces.model`` learns) from every other session
    (the even ones), on the odd ones."""
    n = len(traces.numbered)
    if n < 2:
        return AlarmQuality(horizon, threshold)
    half = traces.subset(range(0, n, 2)).model(alpha, min_visits=min_visits,
                                              max_states=max_states)
    held = [[traces.states[i] for i in traces.numbered[k]] for k in range(1, n, 2)]
    return alarm_quality(half, held, horizon, threshold, guarded)
