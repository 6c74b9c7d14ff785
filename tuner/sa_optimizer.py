"""SimulatedAnnealingOptimizer: the configs a cost model scores highest, found by
simulated annealing over the knobs (AutoTVM's tuner/sa_model_optimizer.py).

`parallel_size` chains walk the space together. Each step moves every chain to a
neighbour of its config, one knob changed by one step of that knob (the knob space's
`neighbours`: the next smaller or larger split factor, two adjacent loops swapped, the
next value of a plain knob). A better score is always accepted, a worse one with
probability exp((new - old) / t), the temperature t falling linearly from temp[0] to
temp[1] over `n_iter` steps. The best `num` configs met on the way that are not in
`exclusive` are kept in a heap; the walk stops early when that heap has not changed for
`early_stop` steps.

Chains live as arrays of knob positions, so a step is a few numpy operations and one
batched prediction of all chains. With `persistent` the chains go on next time from
where they stopped (the model changes little between batches), instead of restarting
from random configs.
"""
from __future__ import annotations

import heapq

import numpy as np

from search_spaces import ConfigSpace


class SimulatedAnnealingOptimizer:
    """`SimulatedAnnealingOptimizer(space, n_iter=300, parallel_size=128, temp=(1, 0),
    persistent=True, early_stop=50)`.

    space: the ConfigSpace searched.
    n_iter: steps of every chain (at most).
    parallel_size: chains walking together (each step predicts this many configs).
    temp: (start, end) temperature, lowered linearly.
    persistent: start the next search from where the chains stopped.
    early_stop: stop after this many steps without a change to the best found.
    """

    def __init__(self, space: ConfigSpace, n_iter: int = 300, parallel_size: int = 128,
                 temp: tuple[float, float] = (1, 0), persistent: bool = True,
                 early_stop: int = 50):
        self.space = space
        self.n_iter = n_iter
        self.parallel_size = parallel_size
        self.temp = temp
        self.persistent = persistent
        self.early_stop = early_stop
        knobs = list(space.space_map.values())
        self.radix = np.array([len(k) for k in knobs], dtype=np.int64)
        self.stride = np.concatenate([[1], np.cumprod(self.radix)[:-1]]).astype(np.int64)
        # one table for all knobs: row offset[k] + p lists the neighbours of position p
        # of knob k, padded with -1; count says how many there are
        neighbours = [knob.neighbours(p) for knob in knobs for p in range(len(knob))]
        width = max(1, max(len(n) for n in neighbours))
        self.offset = np.concatenate([[0], np.cumsum(self.radix)[:-1]]).astype(np.int64)
        self.table = np.full((len(neighbours), width), -1, dtype=np.int64)
        for row, n in enumerate(neighbours):
            self.table[row, :len(n)] = n
        self.count = np.array([len(n) for n in neighbours], dtype=np.int64)
        # knobs a chain can move along (one value only: nothing to change)
        self.movable = np.flatnonzero(self.radix > 1)
        self.points: np.ndarray | None = None  # chain positions kept when persistent

    def find_maximums(self, model, num: int, exclusive: set[int],
                      rng: np.random.Generator) -> list[int]:
        """Up to `num` config indices not in `exclusive` with the highest scores of
        `model` (anything with `predict_indices(indices) -> scores`, higher is better),
        best first. `rng` draws the moves, so the same generator state gives the same
        answer."""
        size = len(self.space)
        if num <= 0 or size <= 1 or not len(self.movable):
            return []
        n = min(self.parallel_size, size)
        if self.points is None or len(self.points) != n:
            points = self.positions(rng.integers(0, size, n))
        else:
            points = self.points
        index = points @ self.stride
        scores = model.predict_indices(index)
        heap: list[tuple[float, int]] = []
        in_heap: set[int] = set()
        self._push(heap, in_heap, num, index, scores, exclusive)

        t0, t1 = self.temp
        rows = np.arange(n)
        unchanged = 0
        for step in range(self.n_iter):
            knob = self.movable[rng.integers(0, len(self.movable), n)]
            position = points[rows, knob]
            row = self.offset[knob] + position
            choice = (rng.random(n) * self.count[row]).astype(np.int64)
            moved = self.table[row, choice]
            new_index = index + (moved - position) * self.stride[knob]
            new_scores = model.predict_indices(new_index)

            t = t0 + (t1 - t0) * step / self.n_iter
            with np.errstate(over="ignore"):
                accept = rng.random(n) < np.exp(np.minimum(new_scores - scores, 0) / (t + 1e-5))
            points[accept, knob[accept]] = moved[accept]
            index = np.where(accept, new_index, index)
            scores = np.where(accept, new_scores, scores)

            if self._push(heap, in_heap, num, new_index, new_scores, exclusive):
                unchanged = 0
            else:
                unchanged += 1
                if unchanged >= self.early_stop:
                    break

        if self.persistent:
            self.points = points
        return [i for _, i in sorted(heap, reverse=True)]

    def positions(self, index: np.ndarray) -> np.ndarray:
        """The [len(index), knobs] knob positions of config indices (point2knob)."""
        return (index[:, None] // self.stride) % self.radix

    def values(self, index: np.ndarray) -> np.ndarray:
        """The [len(index), knobs] ids of the knob values of config indices: knob k at
        position p is offset[k] + p, so ids of different knobs never coincide."""
        return self.positions(index) + self.offset

    @staticmethod
    def _push(heap: list, in_heap: set, num: int, index: np.ndarray, scores: np.ndarray,
              exclusive: set[int]) -> bool:
        """Offer configs to the heap of the best `num`; whether it changed."""
        changed = False
        floor = heap[0][0] if len(heap) >= num else -np.inf
        for i in np.flatnonzero(scores > floor):
            config = int(index[i])
            if config in in_heap or config in exclusive:
                continue
            score = float(scores[i])
            if len(heap) < num:
                heapq.heappush(heap, (score, config))
            elif score > heap[0][0]:
                in_heap.discard(heapq.heapreplace(heap, (score, config))[1])
            else:
                continue
            in_heap.add(config)
            changed = True
        return changed
