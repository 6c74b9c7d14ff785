"""TaskScheduler: the tuning loop. It tunes one task or several over one Measurer (and
one tuning log), one batch at a time; `tune()` is this loop with one task.

    with Measurer() as m, Database("tune.db") as db:
        scheduler = TaskScheduler([Task("matmul", (256, 256, 256)),
                                   Task("batch_matmul", (8, 64, 64, 64))],
                                  m, TuningOptions(trials=256, tuner="xgb"), db=db)
        states = scheduler.run()

One batch: the task's tuner proposes configs never proposed before (`next_batch`), the
measurer measures them bracketed by the task's control (its untuned fallback, timed
first and last: tuner/control.py), their costs are put on the task's scale (the
candidates that would become the best are timed once more beside the control),
the tuner learns from them (`update`), the batch is logged as one transaction (the
control's timings as records of role "control"), then the callbacks run. Per task the
loop keeps the trials done, the best-so-far curve, the errors and why the task left the
rotation (TaskState, tuner/task_state.py). The control is not a trial: it is not
counted, and the tuner is not told.

With a log, every task resumes from what it holds (tuner/from_log.py: `resume`) and
gets a `runs` row of its own, closed when the run ends; and the untuned fallback config
of every task is measured once first (unless the log holds it), as the baseline that
progress is shown against. A task whose tuner learns across workloads (XGBTuner) is
first given the log's results of the other workloads of its template for its target
(`transfer_records`), unless `transfer=False`. Without a log nothing is read or written
and no baseline is measured.

When the run ends (any of the ends below but an exception), every task that measured
trials, or whose log holds records that were never confirmed, is confirmed
(tuner/confirm.py): its top configs and the fallback re-timed in alternating rounds, in
at most confirm.BUDGET_SHARE of its tuning time; the confirmed ranking is logged.

Which task a batch goes to is tuner/allocation.py's ranking: after the fallbacks, every
task gets one batch; then a round-robin turn every fourth batch, with weights a floor
for the tasks barely tried, and otherwise the task where the objective falls most per second of
tuning. With `weights` (a model's tasks) the objective is the model's estimated latency,
the sum over tasks of weight x best cost (Ansor's); without, each task's cost relative
to itself.

The ends. A task leaves the rotation when early stopping says it stopped improving or
its space is exhausted. The run ends when the trials are spent (`trials`; None: no
limit), when no task is left, when a stop is asked for (`stop()`, from a signal
handler: the command line does so on Ctrl-C, or a callback that raises StopTuning: the
batch in flight then finishes and is logged, the other callbacks of that batch still
run), or, with a time budget, when not even the smallest batch (one trial) of the
fastest task fits in it. A time budget is spent to its end, confirmation included: the
time the confirmations will take (their share of the tuning time so far, as planned by
confirm.planned_seconds) is kept back, and a batch is priced from its task's seconds
per config timed (a batch of n trials times n + 2 configs, its control twice). When
the first-ranked task's batch would end past the budget, a smaller batch of it goes, or
the batch of the next task in the ranking that fits; the confirmations then get what
the budget has left, their plans shrunk to it if a batch overran. So a run ends within
about one batch after its budget, and no earlier than the batch of one trial of its
fastest task before it.
"""
from __future__ import annotations

import math
import numbers
import time

from .allocation import Allocation
from .confirm import BUDGET_SHARE, TOP_K, candidates, confirm, plan, planned_seconds
from .control import chain, place, recheck
from .from_log import resume, transfer_records
from .measure import MeasureInput
from .options import TuningOptions
from .registry import make_tuners, tuner_name
from .task_state import TaskState
from .tuner_base import Tuner


class StopTuning(Exception):
    """Raised by a callback of the loop (`tune(callbacks=...)`, TaskScheduler's
    `callbacks`) to stop the run after the batch it was called for."""


class TaskScheduler:
    """Tune `tasks` (distinct Tasks) on `measurer` as `options` say (a TuningOptions:
    trials, time budget, tuner, early stopping, seed, batch size, reconfirm, transfer,
    allocation; tuner/options.py).

    measurer: a Measurer (or anything with its `measure`), started by the caller.
    db: a records.Database (every task resumes from it, every batch is logged to it, and
        the fallback baselines are measured), or None (default: nothing read or logged).
    tuners: a list of Tuners, one made for each task, instead of options.tuner's kind
        (default None).
    weights: one positive number per task, how many times the model runs it (default
        None: the tasks are independent operators; see tuner/allocation.py).
    on_batch: `on_batch(scheduler, state)` after each batch and fallback measurement.
    callbacks: functions `cb(tuner, inputs, results)` called after every batch of trials
        (not the fallbacks); one that raises StopTuning stops the run after that batch.
    clock: what seconds are read from (default time.monotonic; tests give a fake one).
    """

    def __init__(self, tasks, measurer, options: TuningOptions, db=None, tuners=None,
                 weights=None, on_batch=None, callbacks=(), clock=time.monotonic):
        tasks = list(tasks)
        if not tasks:
            raise ValueError("TaskScheduler: no tasks to tune")
        if len(set(tasks)) != len(tasks):
            raise ValueError("TaskScheduler: a task is given twice")
        if not isinstance(options, TuningOptions):
            raise TypeError(f"TaskScheduler: options must be a TuningOptions, got "
                            f"{options!r}")
        self.weights = _checked_weights(weights, len(tasks))
        self.options = options
        self.tuners = make_tuners(options.tuner if tuners is None else list(tuners), tasks,
                                  options.seed)
        self.tasks, self.trials, self.measurer, self.db = tasks, options.trials, measurer, db
        # what the run is shown as: the tuners' names, each once
        self.tuner_name = ", ".join(dict.fromkeys(tuner_name(t) for t in self.tuners))
        self.early_stopping, self.seed = options.early_stopping, options.seed
        self.batch_size, self.time_budget = options.batch_size, options.time_budget
        self.on_batch, self.callbacks, self.reconfirm = on_batch, tuple(callbacks), \
            options.reconfirm
        self.transfer, self.clock, self.allocation_strategy = options.transfer, clock, \
            options.allocation
        self.states: list[TaskState] = []
        self.stop_reason: str | None = None   # why run() ended
        self.started = clock()
        self.in_flight: TaskState | None = None
        self.allocation: Allocation | None = None
        self._stop_requested: str | None = None

    # ------------------------------------------------------------------ asking

    @property
    def done(self) -> int:
        """Trials measured so far in this run, over all tasks."""
        return sum(s.done for s in self.states)

    def elapsed(self) -> float:
        """Wall seconds since run() started."""
        return self.clock() - self.started

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
        left = [] if self.trials is None else [pace * (self.trials - self.done)]
        if self.time_budget is not None:
            left.append(max(0.0, self.time_budget - self.elapsed()))
        return min(left)

    def estimated_latency(self, untuned: bool = False) -> float | None:
        """The model's estimated seconds in its tasks' kernels: the sum over tasks of
        weight x best cost, or with `untuned` x fallback cost, each task in its fallback's
        seconds (the best as fallback / speedup: once confirmed, the speedup measured
        side by side). None without weights, or while a task's fallback has no time."""
        if self.weights is None or len(self.states) != len(self.weights):
            return None
        total = 0.0
        for weight, state in zip(self.weights, self.states):
            if state.fallback_cost is None:
                return None
            speedup = None if untuned else state.speedup
            total += weight * state.fallback_cost / max(1.0, speedup or 1.0)
        return total

    def stop(self, reason: str = "stop requested") -> None:
        """Ask run() to end after the batch in flight (safe to call from a signal handler)."""
        self._stop_requested = self._stop_requested or reason

    # ------------------------------------------------------------------ running

    def run(self) -> list[TaskState]:
        """Tune until a stop condition (see the module docstring); returns the states."""
        self.started = self.clock()
        read: dict = {}  # the log's other workloads, read once for all tasks
        self.states = [self._start(tuner, read) for tuner in self.tuners]
        self.allocation = Allocation(self.states, self.weights, self.batch_size,
                                     self.allocation_strategy)
        try:
            self._measure_fallbacks()
            while self.stop_reason is None:
                self.stop_reason = self._why_stop()
                if self.stop_reason is None:
                    picked = self._next()
                    if picked is None:
                        self.stop_reason = "time budget"
                    else:
                        self._batch(*picked)
            self._confirm_all()
        finally:
            self.in_flight = None
            if self.db is not None:
                for s in self.states:
                    self.db.end_run(s.run_id, s.done, s.best_gflops)
        return self.states

    def _start(self, tuner: Tuner, read: dict) -> TaskState:
        """The state of `tuner`'s task: resumed from the log, with a run row, if any (and
        transferred to from the log's other workloads: `read` memoizes them)."""
        task, name = tuner.task, tuner_name(tuner)
        state = TaskState(task, tuner, name)
        if self.db is not None:
            if self.transfer and tuner.transfers:
                inputs, results = transfer_records(task, self.db, read)
                if inputs:
                    tuner.transfer(inputs, results)
            state.resumed = resume(tuner, self.db)
            state.unconfirmed = self.db.confirmation(task) is None
            state.run_id = self.db.start_run(name, {
                "task": task.workload_key, "target": str(task.target), "trials": self.trials,
                "tasks": len(self.tasks), "early_stopping": self.early_stopping,
                "seed": self.seed, "batch_size": self.batch_size,
                "time_budget": self.time_budget})
        state.fallback_cost = _fallback_cost(tuner)
        return state

    def _measure_fallbacks(self) -> None:
        """With a log: measure, in one batch, the fallback config of every task the log
        lacks it for."""
        missing = [s for s in self.states if s.fallback_cost is None
                   and s.tuner.space.fallback().index not in s.tuner.visited]
        measure = self.db is not None and bool(missing) and self._stop_requested is None
        if measure:
            # a task resumed with a best has the fallback bracketed by it, the control
            # that puts the fallback on the task's scale; a new task's fallback anchors it
            batches = [place([MeasureInput(s.task, s.tuner.space.fallback())],
                             MeasureInput(s.task, s.tuner.best_config))
                       if s.tuner.best_config is not None else
                       ([MeasureInput(s.task, s.tuner.space.fallback())], (0,))
                       for s in missing]
            results = self.measurer.measure([inp for batch, _ in batches for inp in batch])
            for state, (inputs, at) in zip(missing, batches):
                got, results = results[:len(inputs)], results[len(inputs):]
                roles = ["control"] * len(inputs)
                roles[len(inputs) // 2] = "fallback"
                scaled = state.best_cost if len(inputs) > 1 else None
                got, state.factor = chain(got, at, scaled, state.factor)
                self._learn(state, inputs, got, roles)
                state.fallback_cost = got[len(inputs) // 2].cost \
                    if got[len(inputs) // 2].ok else None
        for state in self.states:
            state.curve.append((0, state.best_cost))  # where this run's trials start from
            if measure and self.on_batch is not None:
                self.on_batch(self, state)

    def _why_stop(self) -> str | None:
        """Why no further batch starts now, or None (the time budget: see _next)."""
        if self._stop_requested is not None:
            return self._stop_requested
        if self.trials is not None and self.done >= self.trials:
            return "trials spent"
        if not any(s.finished is None for s in self.states):
            return "every task finished" if len(self.states) > 1 else self.states[0].finished
        return None

    def _next(self) -> tuple[TaskState, int] | None:
        """The task the next batch goes to and its trials: the first of the allocation's
        ranking whose batch fits in the time budget, as many trials of it as fit; None
        when no task's batch fits."""
        for state in self.allocation.ranked():
            n = self._fitting(state)
            if n:
                self.allocation.chose(state)
                return state, n
        return None

    def _fitting(self, state: TaskState) -> int:
        """How many trials of `state`'s task the next batch may have: batch_size (or the
        trials left); with a time budget, no more than end, with the confirmations kept
        back, within it (0: not even one)."""
        n = self.batch_size if self.trials is None else \
            min(self.batch_size, self.trials - self.done)
        if self.time_budget is None:
            return n
        left = self.time_budget - self.elapsed() - self._confirm_reserve()
        timed = sum(s.timed for s in self.states)
        per_config = state.seconds_per_input or \
            (sum(s.seconds for s in self.states) / timed if timed else 0.0)
        if left <= 0 or per_config <= 0:
            return n if left > 0 else 0
        # its control is timed twice; its confirmation's share grows with it
        fit = math.floor(left / (per_config * (1 + BUDGET_SHARE))) - 2
        return max(0, min(n, fit))

    def _confirm_reserve(self) -> float:
        """Seconds the confirmations at the end will take as things stand (with a time
        budget; see _confirm_share and _confirm_all)."""
        reserve = 0.0
        for s in self.states:
            ok = {inp.config.index for inp, res in s.tuner.measured if res.ok}
            if ok and (s.done or self.reconfirm or s.unconfirmed):
                ok.discard(s.tuner.space.fallback().index)
                reserve += planned_seconds(min(TOP_K, len(ok)) + 1, self._confirm_share(s))
        return reserve

    def _confirm_share(self, state: TaskState) -> float | None:
        """The seconds a task's confirmation may take: BUDGET_SHARE of its tuning time; for
        a task with no trials in this run the default plan (None), or with a time budget,
        which has no room set aside for it, the least plan."""
        if not state.done and self.time_budget is None:
            return None
        return BUDGET_SHARE * state.seconds

    def _batch(self, state: TaskState, n: int) -> None:
        """Measure, learn from and log one batch of `n` configs of `state`'s task;
        update its state."""
        tuner = state.tuner
        before, start = state.best_cost, self.clock()
        configs = tuner.next_batch(n)
        if configs:
            tuner.visited.update(c.index for c in configs)  # in flight: never proposed again
            control, scaled = _control(state)
            inputs, at = place([MeasureInput(state.task, c) for c in configs],
                               MeasureInput(state.task, control))
            self.in_flight = state
            results = self.measurer.measure(inputs)
            results, state.factor = chain(results, at, scaled, state.factor)
            if scaled is None and control.index == tuner.space.fallback().index:
                # the fallback anchored the scale (a run without a log): its cost on it
                state.fallback_cost = _control_cost(results, at)
            results = recheck(inputs, results, self.measurer, before)
            self.in_flight = None
            roles = ["control", *["trial"] * len(configs), "control"]
            self._learn(state, inputs, results, roles)
            state.timed += len(inputs)
            inputs, results = inputs[1:-1], results[1:-1]
            state.done += len(inputs)
            if state.best_cost < before:
                state.last_improved = state.done
            state.curve.append((state.done, state.best_cost))
            self._call_back(tuner, inputs, results)
        state.seconds += self.clock() - start
        state.batches += 1
        if not configs or not tuner.has_next():
            state.finished = "space exhausted"
        elif (self.early_stopping is not None
              and state.done - state.last_improved >= self.early_stopping):
            state.finished = "early stopping"
        if self.on_batch is not None:
            self.on_batch(self, state)

    def _learn(self, state: TaskState, inputs: list, results: list, roles: list) -> None:
        """Give a measured batch of `state`'s task to its tuner (but its control), log it
        (one transaction, with a log) and count its errors."""
        kept = [(i, r) for i, r, role in zip(inputs, results, roles) if role != "control"]
        state.tuner.update([i for i, _ in kept], [r for _, r in kept])
        if self.db is not None:
            self.db.add(state.task, inputs, results, tuner=state.tuner_name,
                        run_id=state.run_id, roles=roles)
        state.errors.update(r.error_no.name for r in results if not r.ok)

    def _confirm_all(self) -> None:
        """Confirm every task that measured trials in this run, or whose log holds valid
        records no confirmation covers (all with `reconfirm`), each in its share (see
        _confirm_share); with a time budget the plans are shrunk, all alike, to what the
        budget has left when a batch overran."""
        jobs = []
        for state in self.states:
            task = state.task
            if not state.done and not self.reconfirm and (
                    self.db is None or self.db.confirmation(task) is not None):
                continue
            measured = sorted((res.cost, inp.config.index, inp.config)
                              for inp, res in state.tuner.measured if res.ok)
            if measured:
                configs = candidates(task, [config for _, _, config in measured])
                jobs.append((state, configs, self._confirm_share(state)))
        if self.time_budget is not None and jobs:
            wanted = [planned_seconds(len(configs), share) for _, configs, share in jobs]
            left = max(0.0, self.time_budget - self.elapsed())
            scale = min(1.0, left / sum(wanted))
            jobs = [(state, configs, seconds * scale)
                    for (state, configs, _), seconds in zip(jobs, wanted)]
        for state, configs, seconds in jobs:
            self._confirm(state, configs, seconds)

    def _confirm(self, state: TaskState, configs: list, seconds: float | None) -> None:
        """Confirm `configs` of `state`'s task (see tuner/confirm.py) in about `seconds`
        (None: the default plan); log it."""
        task = state.task
        rounds, repeat_ms = plan(len(configs), seconds)
        self.in_flight = state
        state.confirmation = confirm(task, configs, self.measurer, rounds, repeat_ms)
        self.in_flight = None
        if state.confirmation is not None and self.db is not None:
            self.db.add_confirmation(task, state.confirmation.ranking, rounds,
                                     state.confirmation.seconds, run_id=state.run_id)
        if self.on_batch is not None:
            self.on_batch(self, state)

    def _call_back(self, tuner: Tuner, inputs: list, results: list) -> None:
        """Call every callback on a batch of trials; one that raises StopTuning asks the
        run to stop after this batch, and the others still run."""
        for cb in self.callbacks:
            try:
                cb(tuner, inputs, results)
            except StopTuning:
                self.stop("stopped by a callback")


def _checked_weights(weights, n: int) -> list[float] | None:
    """`weights` as floats, one positive finite number per task (n), or None; a
    ValueError that says what was given otherwise."""
    if weights is None:
        return None
    weights = list(weights)
    if len(weights) != n or not all(
            isinstance(w, numbers.Real) and not isinstance(w, bool) and
            math.isfinite(w) and w > 0 for w in weights):
        raise ValueError(f"TaskScheduler: weights must be {n} positive "
                         f"numbers, one per task, got {weights!r}")
    return [float(w) for w in weights]


def _control(state: TaskState) -> tuple:
    """The config that brackets a batch of `state`'s task and its cost on the task's
    scale (None: its timing anchors the scale now). The untuned fallback once it has a
    cost on the scale, so that every result of the task is one ratio away from it and
    no link of noise is added when the best improves (tuner/control.py); the best so far
    when the fallback failed to measure; the fallback, anchoring, before anything."""
    tuner = state.tuner
    if state.fallback_cost is not None:
        return tuner.space.fallback(), state.fallback_cost
    if tuner.best_config is not None:
        return tuner.best_config, tuner.best_cost
    return tuner.space.fallback(), None


def _control_cost(results: list, at: tuple) -> float | None:
    """The control's cost on the scale when it anchored it: its faster timing."""
    times = [results[i].mean_cost for i in at if results[i].ok]
    return min(times) if times else None


def _fallback_cost(tuner: Tuner) -> float | None:
    """The mean cost of the task's fallback config among what the tuner was given from the
    log, or None when it is not there (or failed)."""
    index = tuner.space.fallback().index
    for inp, res in tuner.measured:
        if inp.config.index == index and res.ok:
            return res.cost
    return None
