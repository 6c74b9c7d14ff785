"""`autosched log confirm`: confirm the tasks of a tuning log whose tuning was cut
before their best was confirmed (or, named, any task again): their top configs and the
fallback re-timed in alternating rounds (tuner/confirm.py), the ranking logged.

It is a run of the TaskScheduler with no trials: every task resumes from the log, a
fallback the log lacks is measured (beside the task's best, as its control), and the
run ends by confirming."""
from __future__ import annotations

import click

from ..options import TuningOptions
from ..task_scheduler import TaskScheduler
from .common import (BadInput, db_option, format_gflops, format_ratio, format_seconds,
                     json_option, open_log, print_json, print_table, select_task,
                     task_label, task_of_summary, task_selection)
from .tune import start_measurer


@click.command("confirm")
@task_selection
@click.option("--all", "every", is_flag=True,
              help="Confirm every task of the log again, confirmed or not.")
@click.option("--ray-address", metavar="ADDR",
              help='Join this Ray cluster ("host:port" or "auto") [default: a local Ray].')
@click.option("--flush-cache", is_flag=True,
              help="Time every call right after a flush of the caches, as a layer runs in "
                   "a model (what `autosched tune MODEL.onnx` does).")
@db_option
@json_option
def log_confirm(spec, task_id, target, every, ray_address, flush_cache, db_path, as_json):
    """Re-time the top configs and the fallback of TEMPLATE ARGS (or --task ID) side by
    side and log the confirmed ranking; with no task named, every task whose best is
    not confirmed (--all: every task).

    Example: autosched log confirm matmul 512 512 512 --db tune.db
    """
    with open_log(db_path) as db:
        if spec or task_id is not None:
            tasks = [select_task(db, spec, task_id, target)]
        else:
            tasks = [task_of_summary(t) for t in db.tasks()
                     if t.best_cost is not None and (every or not t.confirmed)]
        if not tasks:
            if as_json:
                return print_json([])
            return click.echo(f"{db_path}: every task with a valid record is confirmed")
        measurer = start_measurer(ray_address, None, tasks, flush_cache)
        try:
            scheduler = TaskScheduler(tasks, measurer, TuningOptions(
                trials=0, tuner="random", reconfirm=True), db)
            states = scheduler.run()
        finally:
            measurer.close()
        rows = []
        for state in states:
            best = db.best(state.task)
            c = state.confirmation
            rows.append({"template": state.task.name, "args": list(state.task.args),
                         "target": str(state.task.target), "confirmed": c is not None,
                         "config_index": None if best is None else best.config_index,
                         "fallback": c is not None and c.best.fallback,
                         "confirmed_cost": None if c is None else c.best.cost,
                         "confirmed_gflops": None if c is None else state.best_gflops,
                         "speedup": None if c is None else c.speedup,
                         "logged_gflops": None if best is None else best.gflops,
                         "rounds": None if c is None else c.rounds,
                         "seconds": None if c is None else c.seconds})
    if as_json:
        return print_json(rows)
    if not any(r["confirmed"] for r in rows):
        raise BadInput("no task could be confirmed: none of its top configs built and ran")
    from rich.table import Table
    table = Table("task", "best", "confirmed GFLOPS", "time", "vs fallback",
                  "logged GFLOPS", "rounds", "seconds")
    for r in rows:
        table.add_row(task_label(r["template"], r["args"]),
                      "fallback" if r["fallback"] else f"#{r['config_index']}",
                      format_gflops(r["confirmed_gflops"]), format_seconds(r["confirmed_cost"]),
                      format_ratio(r["speedup"]), format_gflops(r["logged_gflops"]),
                      str(r["rounds"] or "-"),
                      "-" if r["seconds"] is None else f"{r['seconds']:.2f}")
    print_table(table, f"{db_path}: {sum(r['confirmed'] for r in rows)} task(s) confirmed")
