"""Risk of future violations (paper 004, Pro2Guard), pure Python with numpy/scipy, no Django.

Abstract states from monitored sessions (``abstraction``), a DTMC learned from them with
validity-aware Laplace smoothing (``dtmc``), reachability probabilities solved once per model
(``reach``), PAC sample bounds (``pac``), and the predictor a live decision asks (``predictor``).
"""

import os
import sys

if "numpy" not in sys.modules:
    # The solver's vector operations are memory-bound; OpenBLAS's worker threads only add
    # synchronisation, which costs 3-5x under load (measured on the benchmark's 10^5 chain).
    # Set before numpy is first imported, since OpenBLAS reads it once; an explicit setting wins.
    for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")
