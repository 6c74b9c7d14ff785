"""tune(): tune one task in one call, resuming from and logging to a tuning log.

    from tuner import Task
    from tuner.tune import tune
    result = tune(Task("matmul", (512, 512, 512)), 200, tuner="xgb", db="tune.db")
    result.best_config, result.best_gflops

With `db`, every record of the task already in the log is given to the tuner first
(`warm_start`), so a second run never measures a config again and its best includes
the first run's; each measured batch is then logged as it comes, and the run gets a row
of its own in the log's `runs`.
"""
from __future__ import annotations

import warnings

from records import Database
from search_spaces import SpaceError

from .ga_tuner import GATuner
from .grid_search_tuner import GridSearchTuner
from records import MeasureErrorNo

from .measure import MeasureInput, MeasureResult
from .measurer import Measurer
from .random_tuner import RandomTuner
from .task import Task
from .tuner_base import Tuner, TuneResult


def _xgb_tuner(task: Task, seed: int | None = None) -> Tuner:
    # imported on use: xgboost takes a while to import and the other tuners never need it
    from .xgb_tuner import XGBTuner
    return XGBTuner(task, seed=seed)


# tuner name -> make(task, seed=...) -> Tuner
TUNERS = {"random": RandomTuner, "grid": GridSearchTuner, "ga": GATuner, "xgb": _xgb_tuner}


def tune(task: Task, trials: int, tuner="xgb", db=None, measurer=None,
         early_stopping: int | None = None, seed: int | None = None, callbacks=(),
         batch_size: int = 16) -> TuneResult:
    """Tune `task` for up to `trials` new measurements; returns the best found (including
    what the log held before).

    tuner: a name in TUNERS ("random", "grid", "ga", "xgb"; default "xgb") or a Tuner.
    db: None (default: nothing read or logged), a log's path or a records.Database:
        resume from the task's records in it and log every measured batch to it.
    measurer: what measures (default: a Measurer() made here and closed at the end).
    early_stopping: stop after this many trials without a better cost (default None:
        never).
    seed: makes a tuner given by name propose deterministically (default None).
    callbacks: functions `cb(tuner, inputs, results)` called after every batch.
    batch_size: configs measured at a time (default 16).
    """
    tuner, name = _resolve(tuner, task, seed)
    own_db = db is not None and not isinstance(db, Database)
    if own_db:
        db = Database(db)
    own_measurer = measurer is None
    if own_measurer:
        measurer = Measurer()
    try:
        if db is None:
            return tuner.tune(trials, measurer, early_stopping, callbacks, batch_size)
        resume(tuner, db)
        run = db.start_run(name, {"task": task.workload_key, "target": str(task.target),
                                  "trials": trials, "early_stopping": early_stopping,
                                  "seed": seed, "batch_size": batch_size})
        log = db.logger(tuner=name, run_id=run)
        logged = (*callbacks, lambda _tuner, inputs, results: log(inputs, results))
        result = tuner.tune(trials, measurer, early_stopping, logged, batch_size)
        db.end_run(run, result.trials, result.best_gflops)
        return result
    finally:
        if own_measurer:
            measurer.close()
        if own_db:
            db.close()


def _resolve(tuner, task: Task, seed: int | None) -> tuple[Tuner, str]:
    """(the Tuner, its name for the log) for a name in TUNERS or a Tuner."""
    if isinstance(tuner, Tuner):
        if tuner.task != task:
            raise ValueError(f"tune: the tuner was made for {tuner.task}, not for {task}")
        names = [n for n, make in TUNERS.items() if make is type(tuner)]
        return tuner, names[0] if names else type(tuner).__name__
    if tuner not in TUNERS:
        raise ValueError(f"tune: unknown tuner {tuner!r}; choose one of "
                         f"{', '.join(map(repr, TUNERS))} or pass a Tuner")
    return TUNERS[tuner](task, seed=seed), tuner


def resume(tuner: Tuner, db: Database) -> int:
    """Give `tuner` every record of its task in `db` as measured; returns how many.

    A record made with another version of the template, or whose knobs no longer fit the
    space, is skipped with one warning for all of them: its config cannot be proposed
    again, so it cannot be measured twice either.
    """
    task = tuner.task
    inputs, results, stale, misfits = [], [], 0, []
    for r in db.records(task):
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
                                     r.run_time or 0.0, r.verify_time or 0.0))
    if stale or misfits:
        warnings.warn(f"{db.path}: skipped {stale + len(misfits)} records of {task} when "
                      f"resuming: {stale} made with another version of the template, "
                      f"{len(misfits)} whose knobs no longer fit its space"
                      f"{' (' + misfits[0] + ')' if misfits else ''}", stacklevel=3)
    tuner.warm_start(inputs, results)
    return len(inputs)
