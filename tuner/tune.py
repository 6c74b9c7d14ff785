"""tune(): tune one task in one call: the TaskScheduler's loop with one task.

    from tuner import Task, tune
    result = tune(Task("matmul", (512, 512, 512)), 200, tuner="xgb", db="tune.db")
    result.best_config, result.best_gflops

The best is the confirmed one: when the run ends, the top configs and the fallback are
re-timed in alternating rounds (tuner/confirm.py), and the fastest of them, never slower
than the fallback, is the result.

With `db`, every record of the task already in the log is given to the tuner first
(`warm_start`), so a second run never measures a config again and its best includes
the first run's; the untuned fallback config is measured once (unless the log holds it)
as the baseline; each measured batch is then logged as it comes, and the run gets a row
of its own in the log's `runs`: the same records `autosched tune` logs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from records import Database

from .measurer import Measurer
from .registry import make_tuners
from .task import Task
from .options import TuningOptions
from .task_scheduler import TaskScheduler


@dataclass
class TuneResult:
    """What a tuning run found: the confirmed best config and its confirmed seconds per
    call (tuner/confirm.py; without a confirmation, the best on the task's scale; inf
    when nothing measured well); trials: this run's measurements (the fallback baseline
    and the batches' controls are none); history: (trials done, best GFLOPS so far)
    after each batch; confirmation: the confirmed ranking (None: none)."""
    task: Task
    best_config: object = None
    best_cost: float = math.inf
    trials: int = 0
    history: list = field(default_factory=list)
    confirmation: object = None

    @property
    def best_gflops(self) -> float:
        """GFLOPS of the best config (0 when nothing measured well)."""
        return self.task.gflops(self.best_cost) or 0.0


def tune(task: Task, trials: int, tuner="xgb", db=None, measurer=None,
         early_stopping: int | None = None, seed: int | None = None, callbacks=(),
         batch_size: int = 16) -> TuneResult:
    """Tune `task` for up to `trials` new measurements; returns the best found (including
    what the log held before).

    tuner: a name in registry.TUNERS ("random", "grid", "ga", "xgb"; default "xgb") or a
        Tuner made for `task`.
    db: None (default: nothing read or logged), a log's path or a records.Database:
        resume from the task's records in it, measure the fallback baseline, and log
        every measured batch to it.
    measurer: what measures (default: a Measurer() made here and closed at the end).
    early_stopping: stop after this many trials without a better cost (default None:
        never).
    seed: makes a tuner given by name propose deterministically (default None).
    callbacks: functions `cb(tuner, inputs, results)` called after every batch; one that
        raises tuner.StopTuning ends the run after that batch.
    batch_size: configs measured at a time (default 16).
    """
    # made (and checked) before a log file is created or a measurer started
    made, = make_tuners(tuner if isinstance(tuner, str) else [tuner], [task], seed)
    own_db = db is not None and not isinstance(db, Database)
    if own_db:
        db = Database(db)
    own_measurer = measurer is None
    if own_measurer:
        measurer = Measurer()
    try:
        options = TuningOptions(trials=trials, early_stopping=early_stopping, seed=seed,
                                batch_size=batch_size)
        scheduler = TaskScheduler([task], measurer, options, db, tuners=[made],
                                  callbacks=callbacks)
        state, = scheduler.run()
    finally:
        if own_measurer:
            measurer.close()
        if own_db:
            db.close()
    confirmed = state.confirmation
    if confirmed is not None:
        return TuneResult(task, confirmed.best.config, confirmed.best.cost, state.done,
                          state.history, confirmed)
    return TuneResult(task, made.best_config, made.best_cost, state.done, state.history)
