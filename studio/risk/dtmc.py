"""Learning a DTMC from abstract traces with validity-aware Laplace smoothing (paper 004,
Algorithm 1 and section 3.3).

Observed transitions are counted only when valid; then alpha is added to every valid transition,
observed or not, and each row is normalised.  Invalid transitions keep probability 0.  A state
with no valid successor at all, and every state declared absorbing (the end of a session), loops
on itself, so every row sums to 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import pac


@dataclass
class LearnedChain:
    """The smoothed transition matrix and what it was learned from."""

    matrix: sp.csr_matrix          # row-stochastic probabilities
    counts: sp.csr_matrix          # valid observed transitions, before smoothing
    valid: sp.csr_matrix           # 1 where a transition is valid
    absorbing: np.ndarray          # states that loop on themselves whatever was observed
    alpha: float
    invalid_observed: int          # observed transitions dropped as invalid

    @property
    def states(self) -> int:
        return self.matrix.shape[0]

    def samples(self) -> np.ndarray:
        """Per state, the number of valid observed transitions out of it (n_p)."""
        return np.asarray(self.counts.sum(axis=1)).ravel()

    def samples_needed(self, epsilon: float = pac.EPSILON, delta: float = pac.DELTA
                       ) -> np.ndarray:
        """Per state, equation 2's bound (0 for absorbing states: their row is not learned)."""
        m = self.states
        counts = self.counts
        out = np.zeros(m)
        for state in range(m):
            if not self.absorbing[state]:
                row = counts.data[counts.indptr[state]:counts.indptr[state + 1]]
                out[state] = pac.bound(row, m, epsilon, delta)
        return out

    def has_enough_samples(self, epsilon: float = pac.EPSILON, delta: float = pac.DELTA
                           ) -> np.ndarray:
        return self.absorbing | (self.samples() >= self.samples_needed(epsilon, delta))


def learn(traces: Iterable[Sequence[int]], states: int, valid: sp.spmatrix,
          alpha: float = 1.0, absorbing: np.ndarray | None = None) -> LearnedChain:
    """Algorithm 1: ``traces`` are sequences of state indices, ``valid`` a states x states
    matrix, nonzero where a transition is valid; ``alpha`` > 0 is the smoothing constant."""
    if alpha < 0:
        raise ValueError("alpha, the smoothing constant, must be 0 or more")
    valid = sp.csr_matrix(valid, shape=(states, states), dtype=bool).astype(np.float64)
    valid.data[:] = 1.0
    absorbing = (np.zeros(states, dtype=bool) if absorbing is None
                 else np.asarray(absorbing, dtype=bool))
    sources, targets = [], []
    for trace in traces:
        trace = list(trace)
        sources.extend(trace[:-1])
        targets.extend(trace[1:])
    observed = sp.csr_matrix((np.ones(len(sources)), (sources, targets)),
                             shape=(states, states))
    observed.sum_duplicates()
    counts = observed.multiply(valid).tocsr()
    counts.eliminate_zeros()
    invalid_observed = int(observed.sum() - counts.sum())
    smoothed = (counts + alpha * valid).tocsr()
    # Absorbing states: their own row is replaced by a self-loop.
    keep = sp.diags((~absorbing).astype(np.float64))
    smoothed = (keep @ smoothed).tocsr()
    smoothed.eliminate_zeros()
    totals = np.asarray(smoothed.sum(axis=1)).ravel()
    stuck = totals == 0   # absorbing, or no valid successor and nothing observed
    scale = np.divide(1.0, totals, out=np.zeros(states), where=~stuck)
    matrix = (sp.diags(scale) @ smoothed + sp.diags(stuck.astype(np.float64))).tocsr()
    matrix.eliminate_zeros()
    counts = (keep @ counts).tocsr()
    counts.eliminate_zeros()
    return LearnedChain(matrix, counts, valid.tocsr(), absorbing | stuck, alpha,
                        invalid_observed)
