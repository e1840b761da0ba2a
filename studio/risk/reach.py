"""Reachability probabilities in a DTMC: from every state, the probability of reaching a target
set, unbounded (``P=? [F target]``) or within k steps (``P=? [F<=k target]``).

Unbounded reachability follows what Storm does for DTMCs: a graph precomputation finds the states
that reach the target with probability 0 (they cannot reach it at all) and with probability 1
(they cannot reach a probability-0 state without passing the target first); only the remaining
states need numbers, from the linear system ``x = P_mm x + b`` with ``b`` the one-step
probability of landing in a probability-1 state.  Small systems are solved directly (sparse LU);
large ones by BiCGSTAB (LU on a random-looking chain fills in catastrophically), checked by the
residual and finished by value iteration if the Krylov solver falls short of the tolerance.

Bounded reachability is k sparse matrix-vector products over the states that can still reach the
target, starting from the target's indicator.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import breadth_first_order

# Systems up to this many unknowns are factorised exactly; beyond, LU fill-in costs more than
# an iterative solve.
DIRECT_SOLVE_LIMIT = 5_000
TOLERANCE = 1e-10
_VALUE_ITERATION_LIMIT = 1_000_000


def _backward_reachable(matrix: sp.csr_matrix, sources: np.ndarray) -> np.ndarray:
    """States with a path (positive-probability edges) into ``sources``: one breadth-first
    search over the reversed graph from a virtual node joined to every source."""
    n = matrix.shape[0]
    found = sources.copy()
    if not sources.any():
        return found
    # The reversed graph in CSR is the CSC layout of the original read as CSR.
    reversed_csc = matrix.tocsc()
    reversed_graph = sp.csr_matrix((reversed_csc.data, reversed_csc.indices,
                                    reversed_csc.indptr), shape=(n, n))
    source_ids = np.flatnonzero(sources)
    virtual_edges = sp.csr_matrix((np.ones(len(source_ids)),
                                   (np.zeros(len(source_ids), dtype=np.int64), source_ids)),
                                  shape=(1, n + 1))
    augmented = sp.vstack([sp.hstack([reversed_graph, sp.csr_matrix((n, 1))]), virtual_edges],
                          format="csr")
    augmented.eliminate_zeros()
    order = breadth_first_order(augmented, n, directed=True, return_predecessors=False)
    found[order[order < n]] = True
    return found


def _without_rows(matrix: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """The matrix with the given rows emptied (those states made absorbing for the search)."""
    keep = sp.diags((~rows).astype(np.float64))
    out = (keep @ matrix).tocsr()
    out.eliminate_zeros()
    return out


def qualitative(matrix: sp.csr_matrix, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(prob0, prob1)``: states reaching ``target`` with probability 0 and with probability 1."""
    cut = _without_rows(matrix, target)
    prob0 = ~_backward_reachable(cut, target)
    # A state misses the target with positive probability iff it can reach a probability-0
    # state along a path that avoids the target (target rows are cut, so paths stop there).
    prob1 = ~_backward_reachable(cut, prob0)
    return prob0, prob1


def unbounded(matrix: sp.csr_matrix, target: np.ndarray, tolerance: float = TOLERANCE
              ) -> np.ndarray:
    """Per state, the probability of eventually reaching ``target``."""
    matrix = sp.csr_matrix(matrix)
    target = np.asarray(target, dtype=bool)
    prob0, prob1 = qualitative(matrix, target)
    result = np.zeros(matrix.shape[0])
    result[prob1] = 1.0
    maybe = ~(prob0 | prob1)
    if not maybe.any():
        return result
    maybe_ids = np.flatnonzero(maybe)
    rows = matrix[maybe_ids]
    inner = rows[:, maybe_ids].tocsr()
    to_one = np.asarray(rows[:, np.flatnonzero(prob1)].sum(axis=1)).ravel()
    result[maybe_ids] = _solve(inner, to_one, tolerance)
    return result


def _solve(inner: sp.csr_matrix, constant: np.ndarray, tolerance: float) -> np.ndarray:
    """The solution of ``x = inner x + constant`` (a unique one: every state here can reach
    both a probability-0 and a probability-1 state, so ``I - inner`` is invertible)."""
    size = inner.shape[0]
    system = (sp.identity(size, format="csr") - inner).tocsr()
    if size <= DIRECT_SOLVE_LIMIT:
        x = spla.spsolve(system.tocsc(), constant)
    else:
        x, _ = spla.bicgstab(system, constant, rtol=tolerance * 1e-2, atol=0.0)
    x = np.clip(x, 0.0, 1.0)
    # Value iteration from the Krylov answer: a no-op when it was right, a repair when not.
    for _ in range(_VALUE_ITERATION_LIMIT):
        nxt = inner @ x + constant
        change = np.abs(nxt - x).max()
        x = nxt
        if change <= tolerance * 1e-2:
            break
    return np.clip(x, 0.0, 1.0)


def bounded(matrix: sp.csr_matrix, target: np.ndarray, steps: int) -> np.ndarray:
    """Per state, the probability of reaching ``target`` within ``steps`` transitions."""
    if steps < 0:
        raise ValueError("the horizon must be 0 or more steps")
    matrix = sp.csr_matrix(matrix)
    target = np.asarray(target, dtype=bool)
    result = target.astype(np.float64)
    if steps == 0 or not target.any():
        return result
    # Only states that can reach the target at all take part; targets stay at 1.
    live = _backward_reachable(_without_rows(matrix, target), target) & ~target
    live_ids = np.flatnonzero(live)
    if not len(live_ids):
        return result
    rows = matrix[live_ids]
    inner = rows[:, live_ids].tocsr()
    into_target = np.asarray(rows[:, np.flatnonzero(target)].sum(axis=1)).ravel()
    x = np.zeros(len(live_ids))
    for _ in range(steps):
        x = inner @ x + into_target
    result[live_ids] = np.clip(x, 0.0, 1.0)
    return result


def reachability(matrix: sp.csr_matrix, target: np.ndarray, horizon: int | None = None
                 ) -> np.ndarray:
    """``unbounded`` when ``horizon`` is None, else ``bounded`` within ``horizon`` steps."""
    if horizon is None:
        return unbounded(matrix, target)
    return bounded(matrix, target, horizon)


def reachable_within(matrix: sp.csr_matrix, sources: np.ndarray, cut: np.ndarray,
                     steps: int | None = None) -> np.ndarray:
    """States with a path into ``sources`` of at most ``steps`` transitions (any length when
    None) that passes no ``cut`` state before its end (cut states are where answers stop)."""
    sources = np.asarray(sources, dtype=bool)
    graph = _without_rows(sp.csr_matrix(matrix), np.asarray(cut, dtype=bool))
    if steps is None:
        return _backward_reachable(graph, sources)
    graph.data[:] = 1.0
    found = sources.copy()
    for _ in range(steps):
        grown = found | (graph @ found.astype(np.float64) > 0)
        if (grown == found).all():
            break
        found = grown
    return found
