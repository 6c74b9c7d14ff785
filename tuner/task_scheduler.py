"""TaskScheduler: tune several tasks in one run over one Measurer and one tuning log,
one batch at a time, giving the trials to the tasks whose best is still improving
(the gradient idea of Ansor's task scheduler).

    with Measurer() as m, Database("tune.db") as db:
        scheduler = TaskScheduler([Task("matmul", (256, 256, 256)),
                                   Task("batch_matmul", (8, 64, 64, 64))],
                                  trials=256, measurer=m, db=db, tuner="xgb")
        states = scheduler.run()

Every task resumes from what the log holds (`tune.resume`) and gets a `runs` row of its
own; every measured batch is logged as one transaction before the next one starts, so
`stop()` (from a signal handler) loses nothing: the batch in flight finishes and is
logged, then `run()` returns.

The order: the untuned fallback config of every task is measured once (unless the log
holds it), as the baseline that progress is shown against; then every task gets one
batch; after that each batch goes to the task whose best cost fell the most, relative
to itself, per trial over its last two batches, except that every ROUND_ROBIN_EVERY-th
batch goes to the next task in turn, so that no task starves: each gets at least one
batch in ROUND_ROBIN_EVERY times the number of tasks. A task leaves
the rotation when early stopping says it stopped improving or its space is exhausted;
the run ends when the trials are spent, when the next batch would likely end past the
time budget, when no task is left, or on `stop()`.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

from .measure import MeasureInput
from .task import Task
from .tune import TUNERS, resume
from .tuner_base import Tuner

ROUND_ROBIN_EVERY = 4  # every fourth batch goes to the next task in turn


@dataclass
class TaskState:
    """One task of a scheduler run and how far it got. `done` counts this run's trials
    (the fallback measurement is not a trial); `resumed` the log's records before it.
    `curve` holds (trials done, best cost) after every batch, from (0, best at start).
    `finished` says why the task left the rotation (None while it is in it)."""
    task: Task
    tuner: Tuner
    tuner_name: str
    run_id: int
    resumed: int = 0
    done: int = 0
    batches: int = 0
    seconds: float = 0.0
    fallback_cost: float | None = None
    errors: Counter = field(default_factory=Counter)
    curve: list = field(default_factory=list)
    last_improved: int = 0
    finished: str | None = None

    @property
    def best_cost(self) -> float:
        """Seconds per call of the best config, this run or logged before (inf: none)."""
        return self.tuner.best_cost

    @property
    def best_gflops(self) -> float | None:
        return self.task.gflops(self.best_cost)

    @property
    def speedup(self) -> float | None:
        """How many times faster the best is than the untuned fallback config."""
        if self.fallback_cost is None or not math.isfinite(self.best_cost):
            return None
        return self.fallback_cost / self.best_cost

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


class TaskScheduler:
    """Tune `tasks` (distinct Tasks) for `trials` trials in total.

    measurer: a Measurer (or anything with its `measure`), started by the caller.
    db: a records.Database; every task resumes from it and every batch is logged to it.
    tuner: a name in tune.TUNERS (default "xgb"); one tuner of that kind per task.
    early_stopping: a task leaves the rotation after this many of its trials without a
        better cost (default None: never).
    seed: makes the tuners propose deterministically (default None).
    batch_size: configs measured at a time (default 16).
    time_budget: seconds; no batch starts that would likely end past it (default None).
    on_batch: `on_batch(scheduler, state)` after each batch and fallback measurement.
    """

    def __init__(self, tasks, trials: int, measurer, db, tuner: str = "xgb",
                 early_stopping: int | None = None, seed: int | None = None,
                 batch_size: int = 16, time_budget: float | None = None, on_batch=None):
        tasks = list(tasks)
        if not tasks:
            raise ValueError("TaskScheduler: no tasks to tune")
        if len(set(tasks)) != len(tasks):
            raise ValueError("TaskScheduler: a task is given twice")
        if tuner not in TUNERS:
            raise ValueError(f"TaskScheduler: unknown tuner {tuner!r}; choose one of "
                             f"{', '.join(map(repr, TUNERS))}")
        for name, value in (("trials", trials), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TaskScheduler: {name} must be a positive integer, "
                                 f"got {value!r}")
        self.tasks, self.trials, self.measurer, self.db = tasks, trials, measurer, db
        self.tuner_name, self.early_stopping, self.seed = tuner, early_stopping, seed
        self.batch_size, self.time_budget, self.on_batch = batch_size, time_budget, on_batch
        self.states: list[TaskState] = []
        self.stop_reason: str | None = None   # why run() ended
        self.started = time.monotonic()
        self.in_flight: TaskState | None = None
        self._stop_requested: str | None = None
        self._picks = 0   # batches given out after the first round
        self._turn = 0    # the next task in turn for a round-robin batch

    # ------------------------------------------------------------------ asking

    @property
    def done(self) -> int:
        """Trials measured so far in this run, over all tasks."""
        return sum(s.done for s in self.states)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def seconds_per_trial(self, state: TaskState | None = None) -> float | None:
        """The average wall seconds of a trial of `state`'s task (None: over all tasks);
        None before anything was measured."""
        measured = [s for s in self.states if s.done] if state is None or not state.done \
            else [state]
        trials = sum(s.done for s in measured)
        return sum(s.seconds for s in measured) / trials if trials else None

    def eta(self) -> float | None:
        """Seconds until the run ends at this pace: the trials left, or the time budget
        left when that comes first; None before the first batch."""
        if self.stop_reason is not None:
            return 0.0
        pace = self.seconds_per_trial()
        if pace is None:
            return None
        left = pace * (self.trials - self.done)
        if self.time_budget is not None:
            left = min(left, max(0.0, self.time_budget - self.elapsed()))
        return left

    def stop(self, reason: str = "stop requested") -> None:
        """Ask run() to end after the batch in flight (safe to call from a signal handler)."""
        self._stop_requested = self._stop_requested or reason

    # ------------------------------------------------------------------ running

    def run(self) -> list[TaskState]:
        """Tune until a stop condition (see the module docstring); returns the states."""
        self.started = time.monotonic()
        self.states = [self._start(task) for task in self.tasks]
        try:
            self._measure_fallbacks()
            while self.stop_reason is None:
                self.stop_reason = self._why_stop()
                if self.stop_reason is None:
                    self._batch(self._pick())
        finally:
            self.in_flight = None
            for s in self.states:
                self.db.end_run(s.run_id, s.done, s.best_gflops)
        return self.states

    def _start(self, task: Task) -> TaskState:
        tuner = TUNERS[self.tuner_name](task, seed=self.seed)
        resumed = resume(tuner, self.db)
        run_id = self.db.start_run(self.tuner_name, {
            "task": task.workload_key, "target": str(task.target), "trials": self.trials,
            "tasks": len(self.tasks), "early_stopping": self.early_stopping,
            "seed": self.seed, "batch_size": self.batch_size,
            "time_budget": self.time_budget})
        state = TaskState(task, tuner, self.tuner_name, run_id, resumed=resumed)
        state.fallback_cost = _fallback_cost(tuner)
        return state

    def _log(self, state: TaskState):
        return self.db.logger(tuner=state.tuner_name, run_id=state.run_id)

    def _measure_fallbacks(self) -> None:
        """Measure, in one batch, the fallback config of every task the log lacks it for."""
        missing = [s for s in self.states if s.fallback_cost is None
                   and s.tuner.space.fallback().index not in s.tuner.visited]
        if missing and self._stop_requested is None:
            inputs = [MeasureInput(s.task, s.tuner.space.fallback()) for s in missing]
            results = self.measurer.measure(inputs)
            for state, inp, res in zip(missing, inputs, results):
                state.tuner.update([inp], [res])
                self._log(state)([inp], [res])
                state.fallback_cost = res.mean_cost if res.ok else None
                if not res.ok:
                    state.errors[res.error_no.name] += 1
        for state in self.states:
            state.curve.append((0, state.best_cost))  # where this run's trials start from
            if missing and self.on_batch is not None:
                self.on_batch(self, state)

    def _why_stop(self) -> str | None:
        """Why no further batch starts now, or None."""
        if self._stop_requested is not None:
            return self._stop_requested
        if self.done >= self.trials:
            return "trials spent"
        if self._active() == []:
            return "every task finished" if len(self.states) > 1 else self.states[0].finished
        if self.time_budget is not None:
            state = self._pick(peek=True)
            pace = self.seconds_per_trial(state) or 0.0
            if self.elapsed() + pace * self._batch_trials() > self.time_budget:
                return "time budget"
        return None

    def _active(self) -> list[TaskState]:
        return [s for s in self.states if s.finished is None]

    def _batch_trials(self) -> int:
        return min(self.batch_size, self.trials - self.done)

    def _pick(self, peek: bool = False) -> TaskState:
        """The task the next batch goes to (see the module docstring)."""
        active = self._active()
        fresh = [s for s in active if s.batches == 0]
        if fresh:
            return fresh[0]
        picks = self._picks + 1
        if not peek:
            self._picks = picks
        if picks % ROUND_ROBIN_EVERY == 0:
            n = len(self.states)
            turn = next(i for i in range(self._turn, self._turn + n)
                        if self.states[i % n].finished is None)
            if not peek:
                self._turn = turn + 1
            return self.states[turn % n]
        window = 2 * self.batch_size
        return max(active, key=lambda s: (s.improvement_rate(window), -s.done))

    def _batch(self, state: TaskState) -> None:
        """Measure and log one batch of `state`'s task; update its state."""
        log = self._log(state)

        def observe(_tuner, inputs, results):
            log(inputs, results)
            state.errors.update(r.error_no.name for r in results if not r.ok)

        before, start = state.best_cost, time.monotonic()
        self.in_flight = state
        result = state.tuner.tune(self._batch_trials(), self.measurer, callbacks=[observe],
                                  batch_size=self.batch_size)
        self.in_flight = None
        state.seconds += time.monotonic() - start
        state.done += result.trials
        state.batches += 1
        if state.best_cost < before:
            state.last_improved = state.done
        state.curve.append((state.done, state.best_cost))
        if result.trials == 0 or not state.tuner.has_next():
            state.finished = "space exhausted"
        elif (self.early_stopping is not None
              and state.done - state.last_improved >= self.early_stopping):
            state.finished = "early stopping"
        if self.on_batch is not None:
            self.on_batch(self, state)


def _fallback_cost(tuner: Tuner) -> float | None:
    """The mean cost of the task's fallback config among what the tuner was given from the
    log, or None when it is not there (or failed)."""
    index = tuner.space.fallback().index
    for inp, res in tuner.measured:
        if inp.config.index == index and res.ok:
            return res.mean_cost
    return None
