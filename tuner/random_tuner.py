"""RandomTuner: configs drawn uniformly at random, never one twice (AutoTVM's
tuner/index_based_tuner.py RandomTuner).

`random_unvisited` is the draw itself, which the GA tuner also uses to fill a generation
when mutation cannot find a new config.
"""
from __future__ import annotations

import random

from .tuner_base import Tuner


def random_unvisited(rng: random.Random, size: int, excluded: set, n: int) -> list[int]:
    """Up to `n` distinct indices in range(size) outside `excluded`, drawn uniformly with
    `rng` (fewer when fewer are left).

    While at least half the space is left, indices are drawn and redrawn when excluded,
    so a space of 10^12 configs is never listed; past half, the indices left are listed
    (fewer than those excluded, so no more memory than `excluded` already takes) and
    sampled, so the draw never slows down as the space runs out.
    """
    left = size - len(excluded)
    n = min(n, left)
    if n <= 0:
        return []
    if 2 * len(excluded) > size:
        return rng.sample([i for i in range(size) if i not in excluded], n)
    picked: list[int] = []
    chosen: set[int] = set()
    while len(picked) < n:
        index = rng.randrange(size)
        if index not in excluded and index not in chosen:
            chosen.add(index)
            picked.append(index)
    return picked


class RandomTuner(Tuner):
    """`RandomTuner(task, seed=None)`: unmeasured configs uniformly at random; the same
    seed proposes the same configs."""

    name = "random"

    def next_batch(self, n: int) -> list:
        """Up to `n` random configs neither measured nor in flight."""
        return [self.space.get(i)
                for i in random_unvisited(self.rng, len(self.space), self.visited, n)]
