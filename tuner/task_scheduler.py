"""TaskScheduler: the tuning loop. It tunes one task or several over one Measurer (and
one tuning log), one batch at a time; `tune()` is this loop with one task.

    with Measurer() as m, Database("tune.db") as db:
        scheduler = TaskScheduler([Task("matmul", (256, 256, 256)),
                                   Task("batch_matmul", (8, 64, 64, 64))],
                                  trials=256, measurer=m, db=db, tuner="xgb")
        states = scheduler.run()

One batch: the task's tuner proposes configs never proposed before (`next_batch`), the
measurer measures them bracketed by the task's control (its best so far, the fallback
until there is one, timed first and last: tuner/control.py), their costs are chained to
the task's scale (the candidates that beat the control are timed once more beside it),
the tuner learns from them (`update`), the batch is logged as one transaction (the
control's timings as records of role "control"), then the callbacks run. Per task the
loop keeps the trials done, the best-so-far curve, the errors and why the task left the
rotation (TaskState). The control is not a trial: it is not counted, and the tuner is
not told.

With a log, every task resumes from what it holds (`resume`) and gets a `runs` row of its
own, closed when the run ends; and the untuned fallback config of every task is measured
once first (unless the log holds it), as the baseline that progress is shown against.
Without a log nothing is read or written and no baseline is measured.

When the run ends (any of the ends below but an exception), every task that measured
trials, or whose log holds records that were never confirmed, is confirmed
(tuner/confirm.py): its top configs and the fallback re-timed in alternating rounds, in
at most confirm.BUDGET_SHARE of its tuning time; the confirmed ranking is logged.

The order: after the fallbacks, every task gets one batch; after that each batch goes to
the task whose best cost fell the most, relative to itself, per trial over its last two
batches, except that every ROUND_ROBIN_EVERY-th batch goes to the next task in turn, so
that no task starves: each gets at least one batch in ROUND_ROBIN_EVERY times the number
of tasks. With `weights` (a model's tasks: how many kernels of the model each one
schedules, tuner/extract.py) the loop minimises the model's estimated latency, the sum
over tasks of weight x best cost (Ansor's objective): the batch goes to the task whose
expected fall of that sum per trial is the largest, weight x best cost x its relative
fall per trial over its last two batches; ties (no task improving lately) go to the
task with the largest part of the sum per trial it had so far, so that such trials
spread in proportion to the parts; the round-robin turns and early stopping stay.

A task leaves the rotation when early stopping says it stopped improving or its
space is exhausted; the run ends when the trials are spent, when the next batch would
likely end past the time budget, when no task is left, or when a stop is asked for:
`stop()` (from a signal handler: the command line does so on Ctrl-C) or a callback that
raises StopTuning. The batch in flight then finishes and is logged (the other callbacks of
that batch still run), and `run()` returns.
"""
from __future__ import annotations

import math
import numbers
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field

from records import MeasureErrorNo
from search_spaces import SpaceError

from .confirm import BUDGET_SHARE, Confirmation, candidates, confirm, plan
from .control import chain, place, recheck
from .measure import MeasureInput, MeasureResult
from .registry import make_tuners, tuner_name
from .task import Task
from .tuner_base import Tuner

ROUND_ROBIN_EVERY = 4  # every fourth batch goes to the next task in turn


class StopTuning(Exception):
    """Raised by a callback of the loop (`tune(callbacks=...)`, TaskScheduler's
    `callbacks`) to stop the run after the batch it was called for."""


@dataclass
class TaskState:
    """One task of a scheduler run and how far it got. `done` counts this run's trials
    (the fallback measurement is not a trial); `resumed` the log's records before it.
    `curve` holds (trials done, best cost) after every measured batch, from (0, best at
    start).
    `finished` says why the task left the rotation (None while it is in it). `run_id`:
    the task's row in the log's runs (None without a log). Costs are on the task's
    scale (tuner/control.py); `factor` turns the last batch's seconds into it.
    `confirmation`: the task's confirmed ranking once the run confirmed it."""
    task: Task
    tuner: Tuner
    tuner_name: str
    run_id: int | None = None
    resumed: int = 0
    done: int = 0
    batches: int = 0
    seconds: float = 0.0
    fallback_cost: float | None = None
    errors: Counter = field(default_factory=Counter)
    curve: list = field(default_factory=list)
    last_improved: int = 0
    finished: str | None = None
    factor: float = 1.0
    confirmation: Confirmation | None = None

    @property
    def best_cost(self) -> float:
        """Seconds per call of the best config on the task's scale, this run or logged
        before (inf: none): what the loop steers by."""
        return self.tuner.best_cost

    @property
    def best_gflops(self) -> float | None:
        """GFLOPS of the best config: at its confirmed time once confirmed (None: none
        measured well)."""
        if self.confirmation is not None:
            return self.task.gflops(self.confirmation.best.cost)
        return self.task.gflops(self.best_cost)

    @property
    def history(self) -> list[tuple[int, float]]:
        """(trials done, best GFLOPS so far, 0 for none) after each of this run's batches."""
        return [(n, self.task.gflops(cost) or 0.0) for n, cost in self.curve[1:]]

    @property
    def speedup(self) -> float | None:
        """How many times faster the best is than the untuned fallback config (once
        confirmed: in the confirmation's rounds)."""
        if self.confirmation is not None and self.confirmation.speedup is not None:
            return self.confirmation.speedup
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
    db: a records.Database (every task resumes from it, every batch is logged to it, and
        the fallback baselines are measured), or None (default: nothing read or logged).
    tuner: a name in registry.TUNERS (default "xgb"; one tuner of that kind per task), or
        a list of Tuners, one made for each task.
    early_stopping: a task leaves the rotation after this many of its trials without a
        better cost (default None: never).
    seed: makes the tuners given by name propose deterministically (default None).
    batch_size: configs measured at a time (default 16).
    time_budget: seconds; no batch starts that would likely end past it (default None).
    on_batch: `on_batch(scheduler, state)` after each batch and fallback measurement.
    callbacks: functions `cb(tuner, inputs, results)` called after every batch of trials
        (not the fallbacks); one that raises StopTuning stops the run after that batch.
    reconfirm: confirm every task at the end, even one whose log's confirmation is
        current (default False). With trials=0 a run only resumes, measures missing
        fallbacks and confirms: what `autosched log confirm` does.
    weights: one positive number per task, how many times the model runs it (default
        None: the tasks are independent operators; see the module docstring).
    """

    def __init__(self, tasks, trials: int, measurer, db=None, tuner="xgb",
                 early_stopping: int | None = None, seed: int | None = None,
                 batch_size: int = 16, time_budget: float | None = None, on_batch=None,
                 callbacks=(), reconfirm: bool = False, weights=None):
        tasks = list(tasks)
        if not tasks:
            raise ValueError("TaskScheduler: no tasks to tune")
        if len(set(tasks)) != len(tasks):
            raise ValueError("TaskScheduler: a task is given twice")
        if weights is not None:
            weights = list(weights)
            if len(weights) != len(tasks) or not all(
                    isinstance(w, numbers.Real) and not isinstance(w, bool) and
                    math.isfinite(w) and w > 0 for w in weights):
                raise ValueError(f"TaskScheduler: weights must be {len(tasks)} positive "
                                 f"numbers, one per task, got {weights!r}")
        self.weights = None if weights is None else [float(w) for w in weights]
        for name, value, least in (("trials", trials, 0), ("batch_size", batch_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"TaskScheduler: {name} must be an integer >= {least}, "
                                 f"got {value!r}")
        self.tuners = make_tuners(tuner, tasks, seed)
        self.tasks, self.trials, self.measurer, self.db = tasks, trials, measurer, db
        # what the run is shown as: the tuners' names, each once
        self.tuner_name = ", ".join(dict.fromkeys(tuner_name(t) for t in self.tuners))
        self.early_stopping, self.seed = early_stopping, seed
        self.batch_size, self.time_budget, self.on_batch = batch_size, time_budget, on_batch
        self.callbacks, self.reconfirm = tuple(callbacks), reconfirm
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
        """Wall seconds since run() started."""
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
        self.started = time.monotonic()
        self.states = [self._start(tuner) for tuner in self.tuners]
        try:
            self._measure_fallbacks()
            while self.stop_reason is None:
                self.stop_reason = self._why_stop()
                if self.stop_reason is None:
                    self._batch(self._pick())
            for state in self.states:
                self._confirm(state)
        finally:
            self.in_flight = None
            if self.db is not None:
                for s in self.states:
                    self.db.end_run(s.run_id, s.done, s.best_gflops)
        return self.states

    def _start(self, tuner: Tuner) -> TaskState:
        """The state of `tuner`'s task: resumed from the log, with a run row, if any."""
        task, name = tuner.task, tuner_name(tuner)
        state = TaskState(task, tuner, name)
        if self.db is not None:
            state.resumed = resume(tuner, self.db)
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
        if self.weights is None:
            return max(active, key=lambda s: (s.improvement_rate(window), -s.done))
        weight = {id(s): w for s, w in zip(self.states, self.weights)}

        def share(s: TaskState) -> float:  # its part of the estimated latency
            cost = s.best_cost if math.isfinite(s.best_cost) else s.fallback_cost
            return weight[id(s)] * (cost if cost is not None else 0.0)
        # no task improving: trials in proportion to the shares, not all to the largest
        return max(active, key=lambda s: (share(s) * s.improvement_rate(window),
                                          share(s) / (s.done + 1), -s.done))

    def _batch(self, state: TaskState) -> None:
        """Measure, learn from and log one batch of `state`'s task; update its state."""
        tuner = state.tuner
        before, start = state.best_cost, time.monotonic()
        configs = tuner.next_batch(self._batch_trials())
        if configs:
            tuner.visited.update(c.index for c in configs)  # in flight: never proposed again
            control = tuner.best_config if tuner.best_config is not None \
                else tuner.space.fallback()
            inputs, at = place([MeasureInput(state.task, c) for c in configs],
                               MeasureInput(state.task, control))
            self.in_flight = state
            results = self.measurer.measure(inputs)
            scaled = state.best_cost if tuner.best_config is not None else None
            results, state.factor = chain(results, at, scaled, state.factor)
            results = recheck(inputs, results, self.measurer)
            self.in_flight = None
            roles = ["control", *["trial"] * len(configs), "control"]
            self._learn(state, inputs, results, roles)
            inputs, results = inputs[1:-1], results[1:-1]
            state.done += len(inputs)
            if state.best_cost < before:
                state.last_improved = state.done
            state.curve.append((state.done, state.best_cost))
            self._call_back(tuner, inputs, results)
        state.seconds += time.monotonic() - start
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

    def _confirm(self, state: TaskState) -> None:
        """Confirm `state`'s task (see the module docstring) when it measured trials in
        this run, or its log holds valid records no confirmation covers; log it."""
        task = state.task
        if not state.done and not self.reconfirm and (
                self.db is None or self.db.confirmation(task) is not None):
            return
        measured = sorted((res.cost, inp.config.index, inp.config)
                          for inp, res in state.tuner.measured if res.ok)
        if not measured:
            return
        configs = candidates(task, [config for _, _, config in measured])
        rounds, repeat_ms = plan(len(configs), BUDGET_SHARE * state.seconds
                                 if state.done else None)
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


def _fallback_cost(tuner: Tuner) -> float | None:
    """The mean cost of the task's fallback config among what the tuner was given from the
    log, or None when it is not there (or failed)."""
    index = tuner.space.fallback().index
    for inp, res in tuner.measured:
        if inp.config.index == index and res.ok:
            return res.cost
    return None


def resume(tuner: Tuner, db) -> int:
    """Give `tuner` every record of its task in `db` (a records.Database) as measured;
    returns how many.

    A record made with another version of the template, or whose knobs no longer fit the
    space, is skipped with one warning for all of them: its config cannot be proposed
    again, so it cannot be measured twice either. A batch's control is a second timing
    of a config given already, and is not given again.
    """
    task = tuner.task
    inputs, results, stale, misfits = [], [], 0, []
    for r in db.records(task):
        if r.role == "control":
            continue
        try:
            config = r.config
        except SpaceError as err:
            if r.stale:
                stale += 1
            else:
                misfits.append(f"record {r.id}: {err}")
            continue
        inputs.append(MeasureInput(task, config))
        results.append(MeasureResult(r.costs, MeasureErrorNo(r.error_no), r.error_msg,
                                     r.build_time or 0.0, r.timestamp, r.host,
                                     r.run_time or 0.0, r.verify_time or 0.0, r.ratio,
                                     r.scaled_cost if r.ok else None))
    if stale or misfits:
        warnings.warn(f"{db.path}: skipped {stale + len(misfits)} records of {task} when "
                      f"resuming: {stale} made with another version of the template, "
                      f"{len(misfits)} whose knobs no longer fit its space"
                      f"{' (' + misfits[0] + ')' if misfits else ''}", stacklevel=4)
    tuner.warm_start(inputs, results)
    return len(inputs)
