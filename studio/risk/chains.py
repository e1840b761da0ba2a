"""Random DTMCs for tests and the benchmark: sparse chains with a few successors per state and
some absorbing states, half of them unsafe and half safe ends, so that reachability
probabilities are neither all 0 nor all 1."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def random_chain(states: int, successors: int = 3, absorbing_share: float = 0.02,
                 seed: int = 0) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(matrix, unsafe)``: a row-stochastic CSR matrix and a boolean mask of unsafe states."""
    rng = np.random.default_rng(seed)
    sources = np.repeat(np.arange(states), successors)
    targets = rng.integers(0, states, states * successors)
    weights = rng.random(states * successors) + 1e-3
    absorbing = rng.random(states) < absorbing_share
    unsafe = absorbing & (rng.random(states) < 0.5)
    moving = ~absorbing[sources]
    ids = np.arange(states)[absorbing]
    matrix = sp.csr_matrix(
        (np.concatenate([weights[moving], np.ones(len(ids))]),
         (np.concatenate([sources[moving], ids]), np.concatenate([targets[moving], ids]))),
        shape=(states, states))
    matrix.sum_duplicates()
    sums = np.asarray(matrix.sum(axis=1)).ravel()
    matrix = (sp.diags(1.0 / sums) @ matrix).tocsr()
    return matrix, unsafe
