"""ProfileResult: what a time_evaluator returns (a kernel's, or a whole model's)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class ProfileResult:
    """Seconds per call, one entry per repeat (as TVM's time_evaluator reports)."""
    results: tuple

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)
