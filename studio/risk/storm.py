"""The same reachability questions asked of Storm (stormpy, the optional ``storm`` extra), for
the tests and the benchmark that hold ``studio.risk.reach`` to Storm's answers and speed."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp


def available() -> bool:
    try:
        import stormpy  # noqa: F401
    except ImportError:
        return False
    return True


def build_dtmc(matrix: sp.csr_matrix, unsafe: np.ndarray):
    """A stormpy sparse DTMC with the label ``unsafe``, built with Storm's sparse builder."""
    from stormpy.datastructures import BitVector, SparseMatrixBuilder
    from stormpy.models import SparseDtmc, SparseModelComponents, StateLabeling

    matrix = sp.csr_matrix(matrix)
    matrix.sort_indices()
    n = matrix.shape[0]
    rows = np.repeat(np.arange(n), np.diff(matrix.indptr))
    builder = SparseMatrixBuilder[float](rows=n, columns=n, entries=matrix.nnz)
    builder.add_next_values(rows.tolist(), matrix.indices.tolist(), matrix.data.tolist(), [])
    labeling = StateLabeling(n)
    labeling.add_label("unsafe")
    labeling.set_states("unsafe", BitVector(n, [int(i) for i in np.flatnonzero(unsafe)]))
    return SparseDtmc(SparseModelComponents(transition_matrix=builder.build(),
                                            state_labeling=labeling))


def storm_reachability(model, horizon: int | None) -> tuple[np.ndarray, float]:
    """Storm's ``P=? [F "unsafe"]`` (or ``F<=horizon``) for every state, and the seconds the
    model checking call took."""
    import stormpy

    bound = "" if horizon is None else f"<={horizon}"
    formula = stormpy.parse_properties(f'P=? [F{bound} "unsafe"]')[0]
    started = time.perf_counter()
    result = stormpy.model_checking(model, formula, only_initial_states=False)
    seconds = time.perf_counter() - started
    return np.asarray(result.get_value_vector(), dtype=np.float64), seconds
