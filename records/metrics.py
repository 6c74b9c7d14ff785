"""The two numbers a measurement is ranked and reported by: its mean cost (seconds per
call) and GFLOPS. Defined once, here, for the log and the tuner alike: the log stores
what these give, and the tuner ranks and reports candidates with the same definitions.
"""
from __future__ import annotations

import math

from .error_codes import MeasureErrorNo


def mean_cost(costs, error_no: int) -> float:
    """Mean seconds per call of a measurement with these `costs` (one per repeat);
    infinity for a failure, and for a "success" without finite timings, which no search
    or best-record lookup may ever pick."""
    if error_no != MeasureErrorNo.NO_ERROR or not costs:
        return math.inf
    mean = sum(costs) / len(costs)
    return mean if math.isfinite(mean) else math.inf


def gflops(flop: int, seconds: float | None) -> float | None:
    """GFLOPS of `flop` floating-point operations done in `seconds`; None when there is
    no such time (None, zero, or inf, the cost of a failed measurement)."""
    if seconds is None or not 0 < seconds < math.inf:
        return None
    return flop / seconds / 1e9
