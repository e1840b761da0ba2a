"""How many observed transitions a state needs for a PAC guarantee (paper 004, equation 2).

For an (epsilon, delta)-PAC-correct model every state p must satisfy

    n_p >= 2 / epsilon^2 * ln(2 / delta') * [1/4 - (|1/2 - n_pq / n_p| - 2/3 epsilon)^2]

with delta' = delta / m over the m states.  The paper's Example 3.0 plugs in the largest
transition share (0.2 there, about 1087 samples); the bracket is largest, so the bound most
demanding, for the share closest to 1/2, and with every share at most 1/2 that is the largest one.
We take the observed share closest to 1/2 - the paper's reading whenever the largest share is at
most 1/2, and never less demanding otherwise - and clamp the distance at 0 (a share within
2/3 epsilon of 1/2 asks for the full 1/4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

EPSILON = 0.05
DELTA = 0.01


def bound(counts: Sequence[float], states: int, epsilon: float = EPSILON,
          delta: float = DELTA) -> float:
    """The right-hand side of equation 2 for a state whose observed transitions to its
    successors are ``counts`` (a state never left asks for the most: a share of 1/2)."""
    if not 0 < epsilon < 1 or not 0 < delta < 1:
        raise ValueError("epsilon and delta must lie strictly between 0 and 1")
    if states < 1:
        raise ValueError("the model must have at least one state")
    total = float(sum(counts))
    observed = [c / total for c in counts if c > 0] if total > 0 else [0.5]
    distance = min(abs(0.5 - share) for share in observed)
    gap = max(distance - 2.0 / 3.0 * epsilon, 0.0)
    return 2.0 / epsilon ** 2 * math.log(2.0 / (delta / states)) * (0.25 - gap * gap)


def samples_needed(counts: Sequence[float], states: int, epsilon: float = EPSILON,
                   delta: float = DELTA) -> int:
    """The whole number of transitions out of the state that equation 2 asks for."""
    return math.ceil(bound(counts, states, epsilon, delta) - 1e-9)


def has_enough(counts: Sequence[float], states: int, epsilon: float = EPSILON,
               delta: float = DELTA) -> bool:
    return sum(counts) >= bound(counts, states, epsilon, delta)
