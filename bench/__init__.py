"""Benchmarks of the formal core (studio.logic, studio.monitor).  Run ``python -m bench.core``."""
