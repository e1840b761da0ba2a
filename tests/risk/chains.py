"""Small random DTMCs for the risk tests (hypothesis), and independent reference answers."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st


@st.composite
def small_chains(draw, max_states: int = 7):
    """``(matrix, target)``: a row-stochastic sparse matrix with some zero entries (so some
    states cannot reach the target, some reach it surely) and a target mask."""
    n = draw(st.integers(1, max_states))
    rows = []
    for _ in range(n):
        weights = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 5]), min_size=n, max_size=n))
        if not any(weights):
            weights[draw(st.integers(0, n - 1))] = 1
        total = sum(weights)
        rows.append([w / total for w in weights])
    target = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return sp.csr_matrix(np.array(rows)), target


def dense_unbounded(matrix: sp.csr_matrix, target: np.ndarray) -> np.ndarray:
    """``P(F target)`` by a dense solve over the states that can reach the target (found by
    boolean matrix powers, not by the graph search under test)."""
    dense = matrix.toarray()
    n = len(dense)
    edges = (dense > 0) & ~target[:, None]  # targets absorb
    reach = target.copy()
    for _ in range(n):
        reach = reach | (edges.astype(int) @ reach.astype(int) > 0)
    result = target.astype(float)
    solve = np.flatnonzero(reach & ~target)
    if len(solve):
        inner = dense[np.ix_(solve, solve)]
        into_target = dense[np.ix_(solve, np.flatnonzero(target))].sum(axis=1)
        result[solve] = np.linalg.solve(np.eye(len(solve)) - inner, into_target)
    return result


def enumerate_bounded(matrix: sp.csr_matrix, target: np.ndarray, steps: int) -> np.ndarray:
    """``P(F<=steps target)`` by summing the probability of every path, from the definition."""
    dense = matrix.toarray()

    def walk(state: int, left: int) -> float:
        if target[state]:
            return 1.0
        if left == 0:
            return 0.0
        return sum(p * walk(j, left - 1) for j, p in enumerate(dense[state]) if p > 0)

    return np.array([walk(s, steps) for s in range(len(dense))])
