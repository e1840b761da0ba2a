"""Reachability probabilities (studio.risk.reach) against independent computations."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.risk import reach
from studio.risk.chains import random_chain

from .chains import dense_unbounded, enumerate_bounded, small_chains


@settings(max_examples=300, deadline=None)
@given(small_chains())
def test_unbounded_matches_a_dense_solve(chain):
    matrix, target = chain
    np.testing.assert_allclose(reach.unbounded(matrix, target), dense_unbounded(matrix, target),
                               atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(small_chains(max_states=5), st.integers(0, 5))
def test_bounded_matches_path_enumeration(chain, steps):
    matrix, target = chain
    np.testing.assert_allclose(reach.bounded(matrix, target, steps),
                               enumerate_bounded(matrix, target, steps), atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(small_chains())
def test_qualitative_sets_are_exactly_the_zero_and_one_probabilities(chain):
    matrix, target = chain
    prob0, prob1 = reach.qualitative(matrix, target)
    exact = dense_unbounded(matrix, target)
    assert (prob0 == np.isclose(exact, 0, atol=1e-12)).all()
    assert (prob1 == np.isclose(exact, 1, atol=1e-12)).all()


def test_a_gamblers_ruin_has_its_closed_form():
    # States 0..10, 0 unsafe, 10 a safe end; from i: i-1 with 0.6, i+1 with 0.4.
    n, down = 11, 0.6
    rows, cols, vals = [0, n - 1], [0, n - 1], [1.0, 1.0]
    for i in range(1, n - 1):
        rows += [i, i]
        cols += [i - 1, i + 1]
        vals += [down, 1 - down]
    matrix = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    target = np.zeros(n, dtype=bool)
    target[0] = True
    ratio = down / (1 - down)
    ruin = [(ratio ** i - ratio ** (n - 1)) / (1 - ratio ** (n - 1)) for i in range(n)]
    np.testing.assert_allclose(reach.unbounded(matrix, target), ruin, atol=1e-12)


def test_the_iterative_solve_of_a_large_chain_is_the_fixed_point():
    matrix, unsafe = random_chain(20_000, seed=7)   # past DIRECT_SOLVE_LIMIT: BiCGSTAB
    assert matrix.shape[0] > reach.DIRECT_SOLVE_LIMIT
    result = reach.unbounded(matrix, unsafe)
    prob0, _ = reach.qualitative(matrix, unsafe)
    assert np.abs(matrix @ result - result)[~unsafe].max() < 1e-10
    assert (result[unsafe] == 1).all() and (result[prob0] == 0).all()
    assert ((result > 0.01) & (result < 0.99)).sum() > 10_000


def test_bounded_probabilities_rise_to_the_unbounded_ones():
    matrix, unsafe = random_chain(3_000, seed=3)
    limit = reach.unbounded(matrix, unsafe)
    previous = reach.bounded(matrix, unsafe, 0)
    for steps in (1, 5, 20, 100):
        now = reach.bounded(matrix, unsafe, steps)
        assert (now >= previous - 1e-15).all()
        previous = now
    assert np.abs(reach.bounded(matrix, unsafe, 3_000) - limit).max() < 1e-8


def test_a_negative_horizon_is_refused():
    with pytest.raises(ValueError, match="horizon"):
        reach.bounded(sp.identity(2, format="csr"), np.array([True, False]), -1)
