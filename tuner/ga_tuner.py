"""GATuner: a genetic algorithm over knob positions (AutoTVM's tuner/ga_tuner.py).

A config's genes are its knob positions (`ConfigSpace.point2knob`). The first
generation is `pop_size` random configs. Once a generation is measured, its fitness is
its GFLOPS (a failed config scores 0); the `elite_num` fittest configs seen so far stay
on as parents, and the next generation is bred from this one and the elites: two
parents drawn with probability proportional to fitness, one-point crossover of their
genes, then each gene mutated to a random position with probability `mutation_prob`.
A child that was measured before (or is already in the new generation) has random
genes mutated until it is new; when that keeps failing (a space nearly used up) a random
unmeasured config takes its place. So no config is ever proposed twice.
"""
from __future__ import annotations

from .measure import MeasureInput, MeasureResult
from .random_tuner import random_unvisited
from .task import Task
from .tuner_base import Tuner

MUTATION_TRIES = 50  # mutations of a child before a random new config replaces it


class GATuner(Tuner):
    """`GATuner(task, seed=None, pop_size=100, elite_num=3, mutation_prob=0.1)`.

    pop_size: configs per generation (at most the size of the space).
    elite_num: the fittest configs kept as parents of every later generation.
    mutation_prob: the chance of each gene of a child to be set to a random position.
    """

    name = "ga"

    def __init__(self, task: Task, seed: int | None = None, pop_size: int = 100,
                 elite_num: int = 3, mutation_prob: float = 0.1):
        super().__init__(task, seed)
        if not isinstance(pop_size, int) or pop_size < 1:
            raise ValueError(f"GATuner: pop_size must be a positive integer, got {pop_size!r}")
        if not isinstance(elite_num, int) or elite_num < 0:
            raise ValueError(f"GATuner: elite_num must be an integer >= 0, got {elite_num!r}")
        if not 0 <= mutation_prob <= 1:
            raise ValueError(f"GATuner: mutation_prob must be in [0, 1], got {mutation_prob!r}")
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.dims = [len(knob) for knob in self.space.space_map.values()]
        self.pending: list[int] = []  # the generation's configs not yet proposed
        self.scored: list[tuple[float, tuple]] = []  # (fitness, genes) measured this generation
        self.elites: list[tuple[float, tuple]] = []

    def next_batch(self, n: int) -> list:
        """Up to `n` configs of the current generation, breeding the next one when it
        is used up."""
        out = []
        while len(out) < n and len(self.visited) + len(out) < len(self.space):
            if not self.pending:
                self.pending = self._breed({c.index for c in out})
            index = self.pending.pop(0)
            if index not in self.visited:  # else warm-started after breeding
                out.append(self.space.get(index))
        return out

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Score each measured config by its GFLOPS (0 for a failure)."""
        super().update(inputs, results)
        for inp, res in zip(inputs, results):
            fitness = self.task.gflops(res.cost) or 0.0
            self.scored.append((fitness, inp.config.knob_indices))

    def _breed(self, proposed: set[int]) -> list[int]:
        """The indices of a new generation, none visited or in `proposed` (this batch so
        far): random at first, else children of what was measured since the last
        breeding and of the elites."""
        taken = self.visited | proposed
        if not self.scored and not self.elites:
            return random_unvisited(self.rng, len(self.space), taken, self.pop_size)
        parents = self.scored + self.elites
        self.elites = sorted(parents, key=lambda p: p[0], reverse=True)[:self.elite_num]
        self.scored = []
        # AutoTVM's weights: fitness relative to the best, never zero, so a generation
        # that only failed is drawn from uniformly
        best = max(p[0] for p in parents)
        weights = [(p[0] + 1e-8) / (best + 1e-8) for p in parents]
        children = []
        while len(children) < self.pop_size and len(taken) < len(self.space):
            child = self._new(self._mutate(self._crossover(parents, weights)), taken)
            taken.add(child)
            children.append(child)
        return children

    def _crossover(self, parents: list, weights: list[float]) -> list[int]:
        """The genes of two parents drawn by fitness, cut at one random point."""
        order = range(len(parents))
        first = self.rng.choices(order, weights)[0]
        rest = [i for i in order if i != first] or [first]
        second = self.rng.choices(rest, [weights[i] for i in rest])[0]
        point = self.rng.randrange(len(self.dims))
        return list(parents[first][1][:point] + parents[second][1][point:])

    def _mutate(self, genes: list[int]) -> list[int]:
        """Each gene set to a random position with probability mutation_prob."""
        return [self.rng.randrange(dim) if self.rng.random() < self.mutation_prob else g
                for g, dim in zip(genes, self.dims)]

    def _new(self, genes: list[int], taken: set) -> int:
        """The index of `genes`, or of a mutation of them, or of a random config, that is
        not in `taken`."""
        for _ in range(MUTATION_TRIES):
            index = self.space.knob2point(genes)
            if index not in taken:
                return index
            j = self.rng.randrange(len(self.dims))
            genes[j] = self.rng.randrange(self.dims[j])
        return random_unvisited(self.rng, len(self.space), taken, 1)[0]
