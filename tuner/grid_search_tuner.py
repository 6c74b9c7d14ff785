"""GridSearchTuner: every config in index order (AutoTVM's tuner/index_based_tuner.py
GridSearchTuner), skipping those measured before (a resumed log) or in flight."""
from __future__ import annotations

from .task import Task
from .tuner_base import Tuner


class GridSearchTuner(Tuner):
    """`GridSearchTuner(task, seed=None)`: configs 0, 1, 2, ... of the space; the seed
    changes nothing (the order is fixed) and is taken so that every tuner is made alike."""

    name = "grid"

    def __init__(self, task: Task, seed: int | None = None):
        super().__init__(task, seed)
        self.counter = 0  # the next index to look at; everything below it was proposed

    def next_batch(self, n: int) -> list:
        """The next `n` configs in index order that are neither measured nor in flight."""
        out = []
        size = len(self.space)
        while len(out) < n and self.counter < size:
            if self.counter not in self.visited:
                out.append(self.space.get(self.counter))
            self.counter += 1
        return out
