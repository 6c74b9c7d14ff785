"""Allocation: which task of a TaskScheduler run the next batch goes to.

The run's objective, after Ansor's task scheduler: with `weights` (a model's tasks: how
many kernels of the model each one schedules, tuner/extract.py), the model's estimated
latency, the sum over tasks of weight x best cost; without, independent operators, each
made as fast as it can be relative to itself. Tuning time is what a run spends, and
tasks differ several times in the seconds a trial takes (builds, timings of slow
kernels), so the batches go where that objective falls most per second, not per trial.

The tasks are ranked for each batch, in this order:

1. The first round: every task that has had no batch yet, in the order given.
2. A round-robin turn: every ROUND_ROBIN_EVERY-th batch after that goes to the next
   task in turn first, so that no task starves: each gets at least one batch in
   ROUND_ROBIN_EVERY times the number of tasks.
3. The floor, with weights: a task that has had fewer than FLOOR_BATCHES batches and
   whose share of the run's tuning seconds is below FLOOR_SHARE of its share of the
   estimated latency (weight x best cost over the sum), the most starved first (its
   seconds' share over its latency share, lowest first). Independent operators have no
   common latency to take shares of; the round-robin turns guard them.
4. The others by the gradient: the expected fall of the objective per second, its
   share of the latency (without weights: equal shares) x the relative fall of its best
   cost per trial over its last two batches / its seconds per trial. Ties (no task
   improving lately) go to the task with the largest share of the latency per second
   spent on it so far, so that such time spreads in proportion to the shares.

Why a floor, and why these numbers: the gradient is measured, and a task's first
batches measure it badly. Its first batch is random configs (the XGB model needs 8
valid results before it guides), and the fall over "the last two batches" of a task
that has had two is one random batch against one guided batch: a task can look flat
after the two batches the first round and a round-robin turn give it, while the
gradient of the task that happened to improve last keeps the batches. Seen on
ResNet-18 (issue 30): the three 512-channel convolutions, a quarter of the tuned
latency, got 31 trials each while the first tasks got 300-430. The floor holds a task to
at least half (FLOOR_SHARE) the time a split in proportion to the latency would give it
until it has had FLOOR_BATCHES = 8 batches: 128 trials at the default batch of 16, more
than twice what the XGB tuner took to come within 1% of the best config of a packed
convolution (the spaces of benchmarks/tuners.py's two, measured whole and searched
offline over 10 seeds: 32 and 48 trials, median). From then on the gradient alone
decides, so a task that truly stopped improving is not held up. Half, not all: a task
that improves faster than its share still gets the rest of the time. So a task with a
quarter of the latency gets at least an eighth of the tuning time until it has had 8
batches.

`strategy="round-robin"` ranks the tasks in turn instead, every batch (TVM's
auto_scheduler TaskScheduler names the two "gradient" and "round-robin"): the baseline
the gradient is measured against (`autosched tune --allocation round-robin`).

When the time budget leaves too little for the first task's batch, the TaskScheduler
gives a smaller batch to it, or a batch to the next task in this ranking whose batch
fits (task_scheduler.py).
"""
from __future__ import annotations

import math

from .task_state import TaskState

ROUND_ROBIN_EVERY = 4  # every fourth batch goes to the next task in turn
FLOOR_SHARE = 0.5      # of a task's share of the latency, in tuning seconds ...
FLOOR_BATCHES = 8      # ... until it has had this many batches
STRATEGIES = ("gradient", "round-robin")


class Allocation:
    """The ranking of the tasks of `states` (TaskStates, the run's, in order) for the
    next batch; `weights`: one per state, or None (see the module docstring); the
    gradient looks at the last two batches of `batch_size`; `strategy`: one of
    STRATEGIES."""

    def __init__(self, states: list[TaskState], weights: list[float] | None,
                 batch_size: int, strategy: str = "gradient"):
        if strategy not in STRATEGIES:
            raise ValueError(f"allocation strategy must be one of {', '.join(STRATEGIES)}, "
                             f"got {strategy!r}")
        self.states, self.weights, self.strategy = states, weights, strategy
        self.window = 2 * batch_size
        self.picks = 0        # batches given out after the first round
        self.turn = 0         # the next task in turn for a round-robin batch
        self._turn_task: TaskState | None = None
        self._counted = False  # whether the ranking was one after the first round

    def ranked(self) -> list[TaskState]:
        """The tasks still in the rotation, the one the next batch should go to first."""
        active = [s for s in self.states if s.finished is None]
        if self.strategy == "round-robin":
            n = len(self.states)
            order = [self.states[(self.turn + i) % n] for i in range(n)]
            self._counted, self._turn_task = True, None
            return [s for s in order if s.finished is None]
        fresh = [s for s in active if s.batches == 0]
        self._counted, self._turn_task = not fresh, None
        share = self.latency_shares()
        spent = sum(s.seconds for s in self.states)
        pace = self._pace()

        def gradient(s: TaskState) -> tuple:
            per_trial = s.seconds / s.done if s.done and s.seconds > 0 else pace
            return (share[id(s)] * s.improvement_rate(self.window) / per_trial,
                    share[id(s)] / (s.seconds + per_trial), -s.done)
        rest = sorted((s for s in active if s.batches), key=gradient, reverse=True)
        if fresh:
            return fresh + rest
        if (self.picks + 1) % ROUND_ROBIN_EVERY == 0:
            n = len(self.states)
            turn = next(i for i in range(self.turn, self.turn + n)
                        if self.states[i % n].finished is None)
            self._turn_task = self.states[turn % n]
        starved = sorted((s for s in rest if self.weights and s.batches < FLOOR_BATCHES
                          and s.seconds < FLOOR_SHARE * share[id(s)] * spent),
                         key=lambda s: s.seconds / (share[id(s)] * spent or 1.0))
        first = [self._turn_task] if self._turn_task is not None else []
        ranked = {id(s): s for s in [*first, *starved, *rest]}  # each once, first place
        return list(ranked.values())

    def chose(self, state: TaskState) -> None:
        """Tell it that the next batch went to `state` (one of the last ranking)."""
        if self.strategy == "round-robin":
            self.turn = self.states.index(state) + 1
            return
        if not self._counted:
            return
        self.picks += 1
        if state is self._turn_task:
            self.turn = self.states.index(state) + 1

    def latency_shares(self) -> dict[int, float]:
        """id(state) -> its share of the estimated latency, weight x best cost (the
        fallback's before a valid config) over the sum; a task with neither counts as
        the mean of the others; equal shares without weights."""
        known = {}
        for state, weight in zip(self.states, self.weights or ()):
            cost = state.best_cost if math.isfinite(state.best_cost) else state.fallback_cost
            if cost is not None:
                known[id(state)] = weight * cost
        mean = sum(known.values()) / len(known) if known else 1.0
        parts = {id(s): known.get(id(s), mean) for s in self.states}
        total = sum(parts.values())
        return {key: part / total for key, part in parts.items()}

    def _pace(self) -> float:
        """Seconds per trial over every task (1 before any was timed): the price of a
        trial of a task that has none of its own yet."""
        done = sum(s.done for s in self.states)
        seconds = sum(s.seconds for s in self.states)
        return seconds / done if done and seconds > 0 else 1.0
