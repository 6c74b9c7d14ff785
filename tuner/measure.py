"""What the tuner asks to measure and what it gets back (AutoTVM's measure.py names).

A MeasureResult is data only: costs in seconds, an error code (records.MeasureErrorNo,
whose home is the log that stores it) and message, and where and when it was measured,
so that the records layer can store it as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from records import MeasureErrorNo, mean_cost
from search_spaces import ConfigEntity

from .task import Task


@dataclass(frozen=True)
class MeasureInput:
    """One candidate: a task and a config of its space."""
    task: Task
    config: ConfigEntity


@dataclass(frozen=True)
class MeasureResult:
    """costs: seconds per call, one per repeat (empty on error). build_time: seconds to
    instantiate and compile; run_time: seconds on the runner (load, verify, timing), of
    which verify_time checked the outputs. timestamp: Unix time at the end. host: the
    machine and Ray node that timed it. ratio: mean_cost over the mean cost of the
    batch's control; scaled_cost: mean_cost on the task's scale (tuner/control.py); both
    None until the tuning loop sets them."""
    costs: tuple
    error_no: MeasureErrorNo
    error_msg: str = ""
    build_time: float = 0.0
    timestamp: float = 0.0
    host: str = ""
    run_time: float = 0.0
    verify_time: float = field(default=0.0)
    ratio: float | None = None
    scaled_cost: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the candidate was measured without an error."""
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        """Mean seconds per call (records.mean_cost); infinity for a failed candidate."""
        return mean_cost(self.costs, self.error_no)

    @property
    def cost(self) -> float:
        """What tuners rank and learn from: the cost on the task's scale when the loop
        set one, else the mean cost (infinity for a failed candidate)."""
        if not self.ok:
            return float("inf")
        return self.mean_cost if self.scaled_cost is None else self.scaled_cost

    def __repr__(self):
        what = (f"{self.mean_cost * 1e3:.3f} ms" if self.ok
                else f"{self.error_no.name}: {self.error_msg[:80]}")
        return f"MeasureResult({what})"
