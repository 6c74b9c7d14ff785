"""TuningOptions: how a tuning run goes, as one frozen value (AutoTVM's tuning options,
Ansor's TuningOptions): what `autosched tune`'s flags, `tune()`'s arguments and a
benchmark's settings become, checked once, and what a TaskScheduler runs by.

    TaskScheduler(tasks, measurer, TuningOptions(trials=256, seed=0), db=db)

The objects a run works with (the tasks, the measurer, the log, the tuners, the
callbacks, the clock) are the scheduler's own arguments, not options.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from .allocation import STRATEGIES


@dataclass(frozen=True)
class TuningOptions:
    """trials: trials in total (None: no limit; then give a time_budget).
    time_budget: seconds the run may take, confirmation included (None: no limit).
    tuner: a name in registry.TUNERS ("xgb" by default), one tuner of that kind per task
        (a TaskScheduler may be given its own Tuners instead).
    early_stopping: a task leaves the rotation after this many of its trials without a
        better cost (None: never).
    seed: makes the tuners given by name propose deterministically (None: not).
    batch_size: configs measured at a time (16; fewer at the end of a budget).
    reconfirm: confirm every task at the end, even one whose log's confirmation is
        current. With trials=0 a run only resumes, measures missing fallbacks and
        confirms: what `autosched log confirm` does.
    transfer: give a tuner that learns across workloads the log's results of the other
        workloads of its template (True).
    allocation: "gradient" (the default) or "round-robin": how the batches are given
        out (tuner/allocation.py).
    A bad value is a ValueError naming the option."""
    trials: int | None = None
    time_budget: float | None = None
    tuner: str = "xgb"
    early_stopping: int | None = None
    seed: int | None = None
    batch_size: int = 16
    reconfirm: bool = False
    transfer: bool = True
    allocation: str = "gradient"

    def __post_init__(self):
        for name, least in (("trials", 0), ("batch_size", 1), ("early_stopping", 1)):
            value = getattr(self, name)
            if value is None and name != "batch_size":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"TuningOptions: {name} must be an integer >= {least}, "
                                 f"got {value!r}")
        if self.time_budget is not None and not (
                isinstance(self.time_budget, numbers.Real) and self.time_budget > 0):
            raise ValueError(f"TuningOptions: time_budget must be a positive number of "
                             f"seconds, got {self.time_budget!r}")
        if self.trials is None and self.time_budget is None:
            raise ValueError("TuningOptions: give trials, a time_budget or both: with "
                             "neither the run would never end")
        if self.allocation not in STRATEGIES:
            raise ValueError(f"TuningOptions: allocation must be one of "
                             f"{', '.join(STRATEGIES)}, got {self.allocation!r}")
