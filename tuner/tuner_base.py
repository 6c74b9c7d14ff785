"""Tuner: the search loop that every tuner shares (AutoTVM's tuner/tuner.py).

A tuner proposes configs (`next_batch`), is told what they measured (`update`), and
`tune` runs that loop against a Measurer until the trials are spent or early stopping
says the best has not improved for a while. Subclasses decide only *which* configs to
propose; the base keeps what was measured or is in flight, so no config is proposed
twice, and the best so far.

A callback may raise `StopTuning` to end the search after the batch it was called for
(the command line does so on Ctrl-C): the other callbacks of that batch still run, so
the batch is logged, and `tune` returns the result as usual.

Tuners know nothing of SQLite: `tune(db=...)` in tune.py wires the records layer's
logging callback, and resuming is `warm_start(inputs, results)` with what a log holds.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .measure import MeasureInput, MeasureResult
from .task import Task


class StopTuning(Exception):
    """Raised by a callback of `Tuner.tune` to stop the search after the current batch."""


@dataclass
class TuneResult:
    """What a tuning run found. best_cost in seconds (inf when nothing measured well)."""
    task: Task
    best_config: object = None
    best_cost: float = math.inf
    trials: int = 0
    history: list = field(default_factory=list)  # (trial number, best GFLOPS so far)

    @property
    def best_gflops(self) -> float:
        return self.task.gflops(self.best_cost) or 0.0


class Tuner:
    """Base of the tuners. `seed` makes the proposals deterministic."""

    def __init__(self, task: Task, seed: int | None = None):
        self.task = task
        self.space = task.config_space
        self.rng = random.Random(seed)
        self.seed = seed
        self.visited: set[int] = set()     # config indices measured or in flight
        self.measured: list[tuple[MeasureInput, MeasureResult]] = []
        self.best_config = None
        self.best_cost = math.inf

    # ------------------------------------------------------------------ what subclasses do

    def next_batch(self, n: int) -> list:
        """Up to `n` configs never proposed before (fewer when the space runs out)."""
        raise NotImplementedError

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Learn from measured configs; the base records them and the best."""
        for inp, res in zip(inputs, results):
            self.visited.add(inp.config.index)
            self.measured.append((inp, res))
            if res.ok and res.mean_cost < self.best_cost:
                self.best_cost, self.best_config = res.mean_cost, inp.config

    def has_next(self) -> bool:
        """Whether the space still has configs never proposed."""
        return len(self.visited) < len(self.space)

    # ------------------------------------------------------------------ shared

    def warm_start(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Resume: take configs measured before (from a log) as if measured now, so they
        are never proposed again and models start from them."""
        if inputs:
            self.update(inputs, results)

    def tune(self, trials: int, measurer, early_stopping: int | None = None,
             callbacks=(), batch_size: int = 16) -> TuneResult:
        """Measure up to `trials` new configs, `batch_size` at a time, calling each of
        `callbacks(tuner, inputs, results)` after every batch; stop early after
        `early_stopping` trials without a better cost, or after a batch for which a
        callback raised StopTuning (the batch's other callbacks still run). Returns the
        best found (including what warm_start gave)."""
        result = TuneResult(self.task, self.best_config, self.best_cost)
        done, last_improved = 0, 0
        while done < trials and self.has_next():
            configs = self.next_batch(min(batch_size, trials - done))
            if not configs:
                break
            self.visited.update(c.index for c in configs)
            inputs = [MeasureInput(self.task, c) for c in configs]
            results = measurer.measure(inputs)
            before = self.best_cost
            self.update(inputs, results)
            stop = False
            for cb in callbacks:
                try:
                    cb(self, inputs, results)
                except StopTuning:
                    stop = True
            done += len(inputs)
            if self.best_cost < before:
                last_improved = done
            result.history.append((done, self.task.gflops(self.best_cost) or 0.0))
            if stop or (early_stopping is not None and done - last_improved >= early_stopping):
                break
        result.best_config, result.best_cost, result.trials = self.best_config, self.best_cost, done
        return result
