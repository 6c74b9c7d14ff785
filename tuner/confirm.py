"""Confirmation: when a task's tuning ends, its top configs and its untuned fallback are
timed again, against each other, in alternating rounds; the result is the task's
confirmed ranking, what ApplyHistoryBest, `autosched log best` and the summaries use.

Why: the ranking of the tuning loop (tuner/control.py) is drift-free but still rests on
one timing per config; the best of hundreds of noisy timings is biased low. Re-timed
side by side (as benchmarks/benchmarks_common.side_by_side does), the top configs meet
the same host speed: in each round every config is timed once, the order reversed
every other round; a config's confirmed ratio is the median over the rounds of its time
over the fallback's time in the same round, its confirmed time the median of its times.

The rounds are timed as the measurer times its trials: warm, or cold (Measurer's
flush_cache, a model's default in `autosched tune`): every call after a flush of the
caches. In a model each layer reads weights that no other layer left in the cache;
timed warm, again and again on the same arrays, a config that re-reads its weights
(cheap from the L2) looks as fast as one that streams them once: measured on
ResNet-18's 512-channel layers, the configs that warm timings tied with the untuned one
ran 10-40% slower cold, and slower in the model (as TVM's enable_cpu_cache_flush,
advised for tuning whole networks on x86).

A config ranks above the fallback only when it was faster than the fallback in every
round (a sign test: a config no faster than the fallback does so by chance with odds of
1 in 2^rounds, 1 in 128 with 7 rounds); among themselves, and among those below the
fallback, configs rank by confirmed ratio. So the confirmed best is never slower than
the fallback: if no config beats it clearly, the fallback is the confirmed best. A
config a few percent faster than the fallback that the noise hides in one round is
given up: a user is better served by the untuned config than by one that may be slower.

The cost: at most BUDGET_SHARE of the task's tuning time when the loop confirms (the
rounds and the length of each timing are planned from it; the built candidates are
kept by the Measurer, so nothing is compiled again); `autosched log confirm`, which has
no tuning time to go by, takes DEFAULT_ROUNDS rounds of DEFAULT_REPEAT_MS timings. A run
with a time budget keeps that time back while it tunes (`planned_seconds`), so that its
confirmations end at the budget, and shrinks the plans to what is left if a batch
overran (tuner/task_scheduler.py).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from .measure import MeasureInput
from .task import Task

TOP_K = 5               # configs re-timed besides the fallback
BUDGET_SHARE = 0.05     # of the task's tuning time
# (rounds, the least milliseconds per timing worth that many rounds), most rounds first:
# alternating is what cancels the drift, so rounds come before long timings
PLANS = ((7, 10), (5, 5), (3, 2))
DEFAULT_ROUNDS, DEFAULT_REPEAT_MS = 7, 50
MAX_REPEAT_MS = 100
OVERHEAD_MS = 2.0       # per timing: the warm-up call's share, the loop around it
COLD_LEAST_MS = 15      # a cold timing's least length, as planned: COLD_CALLS flushes and calls


@dataclass(frozen=True)
class Confirmed:
    """One config of a confirmation: its median seconds per call over the rounds, the
    median of its per-round ratio to the fallback (None when the fallback could not be
    timed), its seconds in each round, and whether it is the fallback."""
    config: object
    cost: float
    ratio: float | None
    costs: tuple
    fallback: bool


@dataclass(frozen=True)
class Confirmation:
    """The confirmed ranking of a task, best first, from `rounds` rounds that took
    `seconds` of wall time."""
    task: Task
    ranking: list
    rounds: int
    seconds: float

    @property
    def best(self) -> Confirmed:
        return self.ranking[0]

    @property
    def speedup(self) -> float | None:
        """How many times faster the confirmed best is than the fallback (None: the
        fallback was not timed)."""
        return None if self.best.ratio is None else 1.0 / self.best.ratio


def candidates(task: Task, ranked, k: int = TOP_K) -> list:
    """The configs to confirm: the first `k` distinct configs of `ranked` (configs, best
    first), the fallback left out, then the fallback."""
    fallback = task.config_space.fallback()
    out, seen = [], {fallback.index}
    for config in ranked:
        if config.index not in seen and len(out) < k:
            out.append(config)
            seen.add(config.index)
    return [*out, fallback]


def plan(n: int, budget_s: float | None) -> tuple[int, int]:
    """(rounds, milliseconds per timing) that re-time `n` configs in about `budget_s`
    seconds (None: DEFAULT_ROUNDS of DEFAULT_REPEAT_MS)."""
    if budget_s is None:
        return DEFAULT_ROUNDS, DEFAULT_REPEAT_MS
    for rounds, least in PLANS:
        ms = budget_s * 1e3 / (rounds * n) - OVERHEAD_MS
        if ms >= least:
            return rounds, int(min(ms, MAX_REPEAT_MS))
    return PLANS[-1][0], PLANS[-1][1]  # less than that is not worth timing


def planned_seconds(n: int, budget_s: float | None) -> float:
    """The wall seconds that re-timing `n` configs takes under `plan(n, budget_s)`, by the
    plan's own reckoning (more than a budget too small for the least plan; a cold
    timing lasts at least COLD_LEAST_MS): what a run with a time budget keeps back for
    its confirmations."""
    rounds, ms = plan(n, budget_s)
    return rounds * n * (max(ms, COLD_LEAST_MS) + OVERHEAD_MS) / 1e3


def confirm(task: Task, configs: list, measurer, rounds: int,
            repeat_ms: int) -> Confirmation | None:
    """Time `configs` of `task` (the fallback among them) in `rounds` alternating rounds
    of `repeat_ms` milliseconds per timing on `measurer` (its `time_rounds`); the
    Confirmation, or None when no config could be timed in every round."""
    start = time.monotonic()
    times = measurer.time_rounds([MeasureInput(task, c) for c in configs], rounds, repeat_ms)
    seconds = time.monotonic() - start
    fallback = task.config_space.fallback().index
    timed = [(c, t) for c, t in zip(configs, times)
             if len(t) == rounds and all(math.isfinite(x) and x > 0 for x in t)]
    if not timed:
        return None
    reference = next((t for c, t in timed if c.index == fallback), None)
    ranking, place = [], {}
    for config, t in timed:
        entry = Confirmed(config, statistics.median(t), None if reference is None else
                          statistics.median(x / r for x, r in zip(t, reference)), tuple(t),
                          config.index == fallback)
        ranking.append(entry)
        # 0: faster than the fallback in every round; 1: the fallback; 2: the others
        place[id(entry)] = 1 if entry.fallback else 0 if reference is None or all(
            x < r for x, r in zip(t, reference)) else 2
    ranking.sort(key=lambda e: (place[id(e)], e.cost if reference is None else e.ratio))
    return Confirmation(task, ranking, rounds, seconds)
