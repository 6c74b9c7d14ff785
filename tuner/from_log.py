"""What a TaskScheduler run takes from the tuning log before it measures: a task's own
records (`resume`: its tuner continues from them) and the records of the other workloads
of its template (`transfer_records`: a tuner that learns across workloads starts its
model from them, Tuner.transfer)."""
from __future__ import annotations

import warnings

from records import MeasureErrorNo
from search_spaces import SpaceError

from .measure import MeasureInput, MeasureResult
from .task import Task
from .tuner_base import Tuner

# records of each other workload a transfer learns from, the latest: what a model can
# take from another workload is its general shape, which a few hundred results show,
# and reading and training on every record of a long log would cost a run minutes
TRANSFER_PER_WORKLOAD = 512


def resume(tuner: Tuner, db) -> int:
    """Give `tuner` every record of its task in `db` (a records.Database) as measured;
    returns how many.

    A record made with another version of the template, or whose knobs no longer fit the
    space, is skipped with one warning for all of them: its config cannot be proposed
    again, so it cannot be measured twice either. A batch's control is a second timing
    of a config given already, and is not given again.
    """
    task = tuner.task
    inputs, results, stale, misfits = _measured(task, db.records(task))
    if stale or misfits:
        warnings.warn(f"{db.path}: skipped {stale + len(misfits)} records of {task} when "
                      f"resuming: {stale} made with another version of the template, "
                      f"{len(misfits)} whose knobs no longer fit its space"
                      f"{' (' + misfits[0] + ')' if misfits else ''}", stacklevel=4)
    tuner.warm_start(inputs, results)
    return len(inputs)


def transfer_records(task: Task, db, memo: dict | None = None) -> tuple[list, list]:
    """(inputs, results) of the records in `db` of the other workloads of `task`'s
    template for `task`'s target, the latest TRANSFER_PER_WORKLOAD of each: what a tuner
    that learns across workloads (Tuner.transfer) is started from. Records made with
    another version of the template, or whose knobs no longer fit, and workloads whose
    arguments no longer fit the template are left out without a word: they are not
    this task's. memo: a dict kept across the calls of one run, so that each workload is
    read once for all the run's tasks."""
    memo = {} if memo is None else memo
    inputs, results = [], []
    for summary in db.tasks():
        if summary.template != task.name or summary.target != str(task.target):
            continue
        try:  # the same target: the log's text of it may leave out what `task`'s says
            other = Task(summary.template, summary.args, task.target)
        except SpaceError:
            continue
        if other == task:
            continue
        if other not in memo:
            trials = [r for r in db.records(other) if r.role != "control"]
            memo[other] = _measured(other, trials[-TRANSFER_PER_WORKLOAD:])[:2]
        inputs += memo[other][0]
        results += memo[other][1]
    return inputs, results


def _measured(task: Task, logged) -> tuple[list, list, int, list]:
    """(inputs, results, stale, misfits) of `logged` (records of `task`) but the batches'
    controls: the MeasureInputs and MeasureResults of those whose config fits the
    template's space as it is now, the count of those made with another template
    version, and a line for each other record that does not fit."""
    inputs, results, stale, misfits = [], [], 0, []
    for r in logged:
        if r.role == "control":
            continue
        try:  # a point of the task's own space, which the tuner proposes from
            config = r.config_for(task.target)
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
    return inputs, results, stale, misfits
