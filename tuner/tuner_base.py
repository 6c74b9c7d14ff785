"""Tuner: what every tuner shares (AutoTVM's tuner/tuner.py, without its loop).

A tuner proposes configs (`next_batch`) and is told what they measured (`update`);
subclasses decide only *which* configs to propose. The base keeps what was measured or is
in flight, so that no config is proposed twice, and the best so far. Resuming is
`warm_start(inputs, results)` with what a log holds.

The loop that asks, measures, tells, logs and decides when to stop is the TaskScheduler's
(task_scheduler.py); `tune()` runs it for one task. Tuners know nothing of SQLite or Ray.
"""
from __future__ import annotations

import math
import random

from .measure import MeasureInput, MeasureResult
from .task import Task


class Tuner:
    """Base of the tuners. `seed` makes the proposals deterministic.

    visited: indices of the configs measured or in flight (the loop adds a batch's
      before measuring it); measured: (input, result) of every config measured;
      best_config / best_cost: the best of those (None / inf before one measured well),
      by MeasureResult.cost: on the task's scale, so timings taken while the host ran
      faster or slower are compared fairly (tuner/control.py).
    """

    name: str | None = None  # the tuner's name in registry.TUNERS (set by each subclass)
    # whether `transfer` learns from other workloads' results: the loop reads them from
    # the log only for such a tuner
    transfers: bool = False

    def __init__(self, task: Task, seed: int | None = None):
        self.task = task
        self.space = task.config_space
        self.rng = random.Random(seed)
        self.seed = seed
        self.visited: set[int] = set()
        self.measured: list[tuple[MeasureInput, MeasureResult]] = []
        self.best_config = None
        self.best_cost = math.inf

    def next_batch(self, n: int) -> list:
        """Up to `n` configs never proposed before (fewer when the space runs out)."""
        raise NotImplementedError

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Learn from measured configs; the base records them and the best."""
        for inp, res in zip(inputs, results):
            self.visited.add(inp.config.index)
            self.measured.append((inp, res))
            if res.ok and res.cost < self.best_cost:
                self.best_cost, self.best_config = res.cost, inp.config

    def has_next(self) -> bool:
        """Whether the space still has configs never proposed."""
        return len(self.visited) < len(self.space)

    def transfer(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Learn from results of other workloads of the same template (a tuner with a
        cost model that carries over: `transfers`); the base has none, and ignores them."""

    def warm_start(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Resume: take configs measured before (from a log) as if measured now, so they
        are never proposed again and models start from them."""
        if inputs:
            self.update(inputs, results)
