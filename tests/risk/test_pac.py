"""The PAC bound of paper 004, equation 2."""

import math

import pytest

from studio.risk import pac


def test_example_3_gives_about_1087_samples():
    # m = 10, epsilon = 0.05, delta = 0.01, n_p = 400 with a largest share of 0.2.
    counts = [80, 80, 80, 80, 80]
    assert pac.bound(counts, 10, 0.05, 0.01) == pytest.approx(1087.77, abs=0.01)
    assert pac.samples_needed(counts, 10, 0.05, 0.01) == 1088
    assert not pac.has_enough(counts, 10, 0.05, 0.01)          # 400 < 1087: sample more
    assert pac.has_enough([c * 3 for c in counts], 10, 0.05, 0.01)  # 1200 with the same shares


def test_the_share_closest_to_one_half_decides():
    # Shares 0.9 and 0.1 are as far from 1/2; 0.4 is closer and asks for more.
    far = pac.bound([90, 10], 10)
    near = pac.bound([60, 40], 10)
    assert near > far
    # Within 2/3 epsilon of 1/2 the bracket is its largest, 1/4.
    full = 2 / 0.05 ** 2 * math.log(2 / (0.01 / 10)) / 4
    assert pac.bound([51, 49], 10) == pytest.approx(full)
    assert pac.bound([], 10) == pytest.approx(full)   # a state never left asks the most


def test_more_states_ask_for_more_samples():
    assert pac.bound([80] * 5, 100) > pac.bound([80] * 5, 10)


@pytest.mark.parametrize("epsilon,delta", [(0, 0.01), (0.05, 1), (-1, 0.5)])
def test_parameters_outside_the_unit_interval_are_refused(epsilon, delta):
    with pytest.raises(ValueError, match="epsilon and delta"):
        pac.bound([1], 10, epsilon, delta)
