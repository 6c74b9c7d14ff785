"""TaskState: one task of a TaskScheduler run and how far it got (plain data, with the
figures the allocation (tuner/allocation.py) and the time budget steer by)."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from .confirm import Confirmation
from .task import Task
from .tuner_base import Tuner


@dataclass
class TaskState:
    """One task of a scheduler run and how far it got. `done` counts this run's trials
    (the fallback measurement is not a trial); `resumed` the log's records before it.
    `timed`: the configs its batches timed, their controls included; `seconds`: the wall
    seconds of its batches (proposing, measuring, learning, logging).
    `curve` holds (trials done, best cost) after every measured batch, from (0, best at
    start).
    `finished` says why the task left the rotation (None while it is in it). `run_id`:
    the task's row in the log's runs (None without a log). Costs are on the task's
    scale (tuner/control.py); `factor` turns the last batch's seconds into it.
    `unconfirmed`: the log held valid records of it that no confirmation covers.
    `confirmation`: the task's confirmed ranking once the run confirmed it."""
    task: Task
    tuner: Tuner
    tuner_name: str
    run_id: int | None = None
    resumed: int = 0
    done: int = 0
    timed: int = 0
    batches: int = 0
    seconds: float = 0.0
    fallback_cost: float | None = None
    errors: Counter = field(default_factory=Counter)
    curve: list = field(default_factory=list)
    last_improved: int = 0
    finished: str | None = None
    factor: float = 1.0
    unconfirmed: bool = False
    confirmation: Confirmation | None = None

    @property
    def best_cost(self) -> float:
        """Seconds per call of the best config on the task's scale, this run or logged
        before (inf: none): what the loop steers by."""
        return self.tuner.best_cost

    @property
    def best_gflops(self) -> float | None:
        """GFLOPS of the best config: at its confirmed time once confirmed (None: none
        measured well)."""
        if self.confirmation is not None:
            return self.task.gflops(self.confirmation.best.cost)
        return self.task.gflops(self.best_cost)

    @property
    def history(self) -> list[tuple[int, float]]:
        """(trials done, best GFLOPS so far, 0 for none) after each of this run's batches."""
        return [(n, self.task.gflops(cost) or 0.0) for n, cost in self.curve[1:]]

    @property
    def speedup(self) -> float | None:
        """How many times faster the best is than the untuned fallback config (once
        confirmed: in the confirmation's rounds)."""
        if self.confirmation is not None and self.confirmation.speedup is not None:
            return self.confirmation.speedup
        if self.fallback_cost is None or not math.isfinite(self.best_cost):
            return None
        return self.fallback_cost / self.best_cost

    @property
    def seconds_per_input(self) -> float | None:
        """Wall seconds of its batches per config timed (None before its first batch):
        a batch of n trials times n + 2 configs, its control twice, so this prices a
        batch of any size."""
        return self.seconds / self.timed if self.timed else None

    def improvement_rate(self, window: int) -> float:
        """The relative fall of the best cost per trial over the last `window` trials (a
        first valid config after none counts as a fall of 1)."""
        now = self.best_cost
        then = next(cost for n, cost in reversed(self.curve) if n <= self.done - window) \
            if self.done > window else self.curve[0][1]
        if not math.isfinite(now) or then == now:
            return 0.0
        fall = 1.0 if not math.isfinite(then) else (then - now) / then
        return fall / max(1, min(window, self.done))
