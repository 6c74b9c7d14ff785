"""What the tuner asks to measure and what it gets back (AutoTVM's measure.py names).

A MeasureResult is data only: costs in seconds, an error code and message, and where and
when it was measured, so that the records layer can store it as it is.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from search_spaces import ConfigEntity

from .task import Task


class MeasureErrorNo(enum.IntEnum):
    """Why a candidate has no time; stored as its integer value."""
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template rejects the config
    COMPILE_ERROR = 2        # schedule, lowering or LLVM failed
    COMPILE_TIMEOUT = 3
    RUNTIME_ERROR = 4        # the kernel returned an error or could not be loaded
    RUN_TIMEOUT = 5
    WRONG_ANSWER = 6         # outputs differ from the numpy reference
    WORKER_CRASH = 7         # the process building or running it died (a segfault)
    UNKNOWN = 8


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
    machine and Ray node that timed it."""
    costs: tuple
    error_no: MeasureErrorNo
    error_msg: str = ""
    build_time: float = 0.0
    timestamp: float = 0.0
    host: str = ""
    run_time: float = 0.0
    verify_time: float = field(default=0.0)

    @property
    def ok(self) -> bool:
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        """Mean seconds per call; infinity for a failed candidate."""
        return sum(self.costs) / len(self.costs) if self.ok and self.costs else math.inf

    def __repr__(self):
        what = (f"{self.mean_cost * 1e3:.3f} ms" if self.ok
                else f"{self.error_no.name}: {self.error_msg[:80]}")
        return f"MeasureResult({what})"
