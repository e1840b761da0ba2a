"""Our reachability probabilities against Storm's on random chains (stormpy, a test extra).

Skipped where stormpy cannot be imported, except on CI (CI=true), where a missing stormpy is a
failure: the comparison must run somewhere.
"""

import os

import numpy as np
import pytest

from studio.risk import storm
from studio.risk.chains import random_chain
from studio.risk.reach import reachability

if not storm.available():
    if os.environ.get("CI") == "true":
        raise RuntimeError("stormpy is not installed; CI installs it with the test extra")
    pytest.skip("stormpy is not installed", allow_module_level=True)


@pytest.mark.parametrize("states,seed", [(5, 1), (50, 2), (500, 3), (4_000, 4), (30_000, 5)])
@pytest.mark.parametrize("horizon", [None, 0, 1, 7, 40])
def test_reachability_agrees_with_storm(states, seed, horizon):
    matrix, unsafe = random_chain(states, absorbing_share=0.1 if states < 100 else 0.02,
                                  seed=seed)
    expected, _ = storm.storm_reachability(storm.build_dtmc(matrix, unsafe), horizon)
    np.testing.assert_allclose(reachability(matrix, unsafe, horizon), expected, atol=1e-6)


def test_chains_with_sure_and_impossible_states_agree_with_storm():
    # One successor and many absorbing states: plenty of probability-0 and -1 states.
    matrix, unsafe = random_chain(2_000, successors=1, absorbing_share=0.3, seed=9)
    ours = reachability(matrix, unsafe)
    expected, _ = storm.storm_reachability(storm.build_dtmc(matrix, unsafe), None)
    assert (ours == 0).any() and (ours == 1).any()
    np.testing.assert_allclose(ours, expected, atol=1e-6)
