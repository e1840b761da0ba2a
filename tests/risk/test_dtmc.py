"""Validity-aware Laplace smoothing (paper 004, Algorithm 1)."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.risk.dtmc import learn


@st.composite
def learning_inputs(draw):
    n = draw(st.integers(2, 6))
    valid = np.array(draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n),
                                   min_size=n, max_size=n)))
    traces = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=1, max_size=8),
                           max_size=10))
    absorbing = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return n, valid, traces, absorbing


@settings(max_examples=300, deadline=None)
@given(learning_inputs(), st.sampled_from([0.0, 0.01, 1.0, 5.0]))
def test_rows_sum_to_one_and_invalid_transitions_stay_zero(inputs, alpha):
    n, valid, traces, absorbing = inputs
    chain = learn(traces, n, sp.csr_matrix(valid), alpha, absorbing)
    matrix = chain.matrix.toarray()
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-12)
    assert (matrix >= 0).all()
    for i in range(n):
        if chain.absorbing[i]:
            assert matrix[i, i] == 1.0
        else:
            assert (matrix[i][~valid[i]] == 0).all()   # smoothing never adds what is invalid
            if alpha > 0:
                assert (matrix[i][valid[i]] > 0).all()  # and gives every valid one some mass


@settings(max_examples=200, deadline=None)
@given(learning_inputs())
def test_observed_rows_are_the_observed_frequencies_in_the_limit(inputs):
    n, valid, traces, _ = inputs
    counts = np.zeros((n, n))
    for trace in traces:
        for a, b in zip(trace, trace[1:]):
            if valid[a, b]:
                counts[a, b] += 1
    chain = learn(traces, n, sp.csr_matrix(valid), 1e-9)
    matrix = chain.matrix.toarray()
    for i in range(n):
        if counts[i].sum():
            np.testing.assert_allclose(matrix[i], counts[i] / counts[i].sum(), atol=1e-6)
    np.testing.assert_array_equal(chain.counts.toarray(), counts)


def test_the_paper_example_of_smoothing():
    # Observed 0->1 three times; 0->2 is valid but unseen; 0->3 is invalid but observed once.
    valid = sp.csr_matrix(np.array([[0, 1, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]))
    chain = learn([[0, 1, 0, 1, 0, 1], [0, 3]], 4, valid, alpha=1.0)
    np.testing.assert_allclose(chain.matrix.toarray()[0], [0, 4 / 5, 1 / 5, 0])
    assert chain.invalid_observed == 1
    assert chain.samples()[0] == 3
