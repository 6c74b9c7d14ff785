"""`autosched log`: query the records of a tuning log (tasks, best, top, history,
failures, stats), move them (export, import, merge), plot the tuning curves, and
confirm tasks whose tuning was cut before their best was confirmed."""
from __future__ import annotations

import json
import os

import click

from records import RecordsError, export_jsonl, import_jsonl, merge

from .common import (BadInput, db_option, format_clock, format_errors, format_gflops,
                     format_ratio, format_seconds, json_option, make_console, open_log,
                     print_json, print_table, readable_knobs, record_json, select_task,
                     task_label, task_of_summary, task_selection)
from .applied import build_applies
from .confirm import log_confirm

PLOT_GAP_S = 60.0  # pauses longer than this between records are cut from the time axis


@click.group()
def log():
    """Query and move the records of a tuning log."""


log.add_command(log_confirm)


@log.command("tasks")
@db_option
@json_option
def log_tasks(db_path: str, as_json: bool):
    """The tasks of the log with their record counts and best GFLOPS."""
    with open_log(db_path) as db:
        summaries = db.tasks()
    if as_json:
        return print_json([{"id": t.id, "template": t.template, "args": list(t.args),
                            "target": t.target, "records": t.records, "errors": t.errors,
                            "stale": t.stale, "best_gflops": t.best_gflops,
                            "best_cost": t.best_cost, "confirmed": t.confirmed}
                           for t in summaries])
    from rich.table import Table
    table = Table("id", "task", "target", "records", "errors", "stale", "best GFLOPS",
                  "best time", "confirmed", box=None)
    for t in summaries:
        table.add_row(str(t.id), task_label(t.template, t.args), t.target, str(t.records),
                      str(t.errors), str(t.stale), _best_rate(t),
                      format_seconds(t.best_cost),
                      "yes" if t.confirmed else "-" if t.best_cost is None else "no")
    make_console().print(table)


def _best_rate(summary) -> str:
    """A logged task's best rate for the tasks table, whose column says GFLOPS: with
    " GOPS" after it for an int8 template (tuner/flop.py)."""
    from ..task import Task
    rate = format_gflops(summary.best_gflops)
    if summary.best_gflops is None:
        return rate
    try:
        unit = Task(summary.template, summary.args, summary.target).unit
    except Exception:  # noqa: BLE001 - a template this build does not know: as logged
        unit = "GFLOPS"
    return f"{rate} GOPS" if unit == "GOPS" else rate


@log.command("best")
@task_selection
@db_option
@json_option
def log_best(spec, task_id, target, db_path, as_json):
    """The best config of a task, with readable knob values.

    Example: autosched log best matmul 256 256 256
    """
    with open_log(db_path) as db:
        task = select_task(db, spec, task_id, target)
        record = db.best(task)
        contest = build_applies(db, task)
    if as_json:
        return print_json(None if record is None else {**record_json(record), **contest})
    if record is None:
        return click.echo(f"{task_label(task.name, task.args)}: no valid record in {db_path}")
    from rich.table import Table
    table = Table("knob", "value", "stored as", box=None)
    for name, value in readable_knobs(record).items():
        table.add_row(name, value, json.dumps(record.knobs.get(name)))
    unit = task.unit  # GOPS for an int8 template (tuner/flop.py)
    logged = f"{format_gflops(record.gflops)} {unit}, {format_seconds(record.mean_cost)}"
    if record.confirmed:
        what = (f"{format_gflops(record.best_gflops)} {unit}, "
                f"{format_seconds(record.confirmed_cost)} confirmed "
                f"({format_ratio(_speedup(record))} fallback); logged {logged}")
    else:
        what = (f"{logged} logged, not confirmed (autosched log confirm re-times the top "
                f"configs)")
    name = "the untuned fallback" if record.config_index == _fallback_index(task) \
        else f"config #{record.config_index}"
    title = (f"{task_label(task.name, task.args)}: {what}; {name} "
             f"(tuner {record.tuner}, record {record.id})")
    if record.knobs:
        print_table(table, title)
    else:  # a library's template: one config, nothing to show
        click.echo(f"{title}; no knobs")
    if contest:
        click.echo(contest["said"])


@log.command("top")
@task_selection
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many configs.")
@db_option
@json_option
def log_top(spec, task_id, target, k, db_path, as_json):
    """The k best configs of a task."""
    with open_log(db_path) as db:
        task = select_task(db, spec, task_id, target)
        found = db.top(task, k)
    if as_json:
        return print_json([record_json(r) for r in found])
    from rich.table import Table
    table = Table("rank", f"confirmed {task.unit}", "time", "vs fallback",
                  f"logged {task.unit}", "logged time", "config", "knobs", "tuner")
    fallback = _fallback_index(task)
    for rank, r in enumerate(found, start=1):
        knobs = ", ".join(f"{n}={v}" for n, v in readable_knobs(r).items())
        table.add_row(str(rank), format_gflops(r.best_gflops) if r.confirmed else "-",
                      format_seconds(r.confirmed_cost), format_ratio(_speedup(r)),
                      format_gflops(r.gflops), format_seconds(r.mean_cost),
                      "fallback" if r.config_index == fallback else f"#{r.config_index}",
                      knobs, r.tuner or "-")
    confirmed = sum(r.confirmed for r in found)
    print_table(table, f"{task_label(task.name, task.args)}: top {k}"
                       + (f"; the first {confirmed} as confirmed (re-timed side by side), "
                          f"the rest by logged time on the task's scale" if confirmed
                          else "; not confirmed: by logged time on the task's scale"))


def _speedup(record) -> float | None:
    """How many times faster than the fallback the record's config was confirmed."""
    return 1.0 / record.confirmed_ratio if record.confirmed_ratio else None


def _fallback_index(task) -> int:
    return task.config_space.fallback().index


@log.command("history")
@task_selection
@db_option
@json_option
def log_history(spec, task_id, target, db_path, as_json):
    """The best-so-far curve of a task: the table shows the trials that improved it."""
    with open_log(db_path) as db:
        task = select_task(db, spec, task_id, target)
        points = db.history(task)
    start = points[0][1] if points else 0.0
    if as_json:
        return print_json([{"trial": n, "timestamp": ts, "elapsed": ts - start,
                            "best_gflops": best} for n, ts, best in points])
    from rich.table import Table
    table = Table("trial", "elapsed", "best GFLOPS", box=None)
    previous = None
    for i, (n, ts, best) in enumerate(points):
        if best != previous or i == len(points) - 1:
            table.add_row(str(n), format_clock(ts - start), format_gflops(best))
        previous = best
    print_table(table, f"{task_label(task.name, task.args)}: {len(points)} trials; the "
                       f"trials that improved the best")


@log.command("failures")
@task_selection
@db_option
@json_option
def log_failures(spec, task_id, target, db_path, as_json):
    """Failed records by kind, of one task (with an example message) or of the log."""
    with open_log(db_path) as db:
        task = select_task(db, spec, task_id, target) if spec or task_id is not None else None
        counts = db.failures(task)
        examples = {}
        for r in db.records(task) if task is not None else ():
            if not r.ok:
                examples.setdefault(r.error_name, r.error_msg)
    if as_json:
        return print_json([{"error": name, "count": n, "example": examples.get(name)}
                           for name, n in counts.items()])
    from rich.table import Table
    what = task_label(task.name, task.args) if task is not None else db_path
    table = Table("error", "count", "example", box=None)
    for name, n in counts.items():
        table.add_row(name, str(n), (examples.get(name) or "")[:200])
    print_table(table, f"{what}: {sum(counts.values())} failed records")


@log.command("export")
@task_selection
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="The JSONL file to write [default: stdout].")
@click.option("--best-only", is_flag=True, help="Only the best record of each task.")
@db_option
def log_export(spec, task_id, target, output, best_only, db_path):
    """Write records as JSON lines (every task, or the one named)."""
    with open_log(db_path) as db:
        task = select_task(db, spec, task_id, target) if spec or task_id is not None else None
        out = output or click.get_text_stream("stdout")
        n = export_jsonl(db, out, best_only=best_only, task=task)
    click.echo(f"exported {n} record(s){' to ' + output if output else ''}", err=True)


@log.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.option("--strict", is_flag=True, help="Import nothing when any line is bad.")
@db_option
@json_option
def log_import(source, strict, db_path, as_json):
    """Add the records of a JSONL file to the log (created if missing); bad lines are
    reported by number."""
    with open_log(db_path, create=True) as db:
        try:
            report = import_jsonl(db, source, strict=strict)
        except RecordsError as err:
            raise BadInput(str(err)) from None
    if as_json:
        return print_json({"imported": report.imported, "duplicates": report.duplicates,
                           "errors": [{"line": n, "reason": why} for n, why in report.errors]})
    click.echo(f"imported {report.imported} record(s), {report.duplicates} already in "
               f"{db_path}, {len(report.errors)} bad line(s)")
    for n, why in report.errors:
        click.echo(f"{source}:{n}: {why}", err=True)


@log.command("merge")
@click.argument("other", type=click.Path(exists=True, dir_okay=False))
@db_option
@json_option
def log_merge(other, db_path, as_json):
    """Add every task and record of another tuning log file (created if missing)."""
    open_log(other).close()  # a file that is not a log is refused before ours is touched
    with open_log(db_path, create=True) as db:
        added = merge(db, other)
    if as_json:
        return print_json({"merged": added, "from": other})
    click.echo(f"merged {added} new record(s) from {other} into {db_path}")


@log.command("stats")
@db_option
@json_option
def log_stats(db_path, as_json):
    """Overall numbers: tasks, records, errors, runs, file size."""
    with open_log(db_path) as db:
        summaries = db.tasks()
        stats = {"path": db_path, "tasks": len(summaries), "records": db.count(),
                 "errors": sum(t.errors for t in summaries),
                 "stale": sum(t.stale for t in summaries), "runs": db.db["runs"].count,
                 "failures": db.failures(),
                 "bytes": sum(os.path.getsize(p) for p in (db_path, db_path + "-wal")
                              if os.path.exists(p))}
    if as_json:
        return print_json(stats)
    from rich.table import Table
    table = Table(show_header=False, box=None)
    for name in ("tasks", "records", "errors", "stale", "runs"):
        table.add_row(name, f"{stats[name]:,}")
    table.add_row("failures", format_errors(stats["failures"]))
    table.add_row("file size", f"{stats['bytes'] / 2 ** 20:.2f} MiB")
    print_table(table, db_path)


@log.command("plot")
@click.argument("spec", nargs=-1, metavar="[TEMPLATE ARGS...]")
@click.option("--task", "task_ids", type=int, multiple=True,
              help="A task id (repeat for several) [default: every task].")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="autosched-plot.png",
              show_default=True, help="The PNG to write.")
@db_option
@json_option
def log_plot(spec, task_ids, output, db_path, as_json):
    """A PNG of the best GFLOPS so far against trials and against tuning time, one line
    per task and tuner. Time leaves out pauses of over a minute between records (the
    gap between two runs)."""
    try:
        import matplotlib
    except ImportError:
        raise click.ClickException(
            "log plot needs matplotlib: pip install 'autosched[plot]'") from None
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    with open_log(db_path) as db:
        if spec:
            tasks = [select_task(db, spec, None, None)]
        elif task_ids:
            tasks = [select_task(db, (), i, None) for i in task_ids]
        else:
            tasks = [task_of_summary(t) for t in db.tasks()]
        lines = [line for task in tasks for line in _plot_lines(task, db.records(task))]
    if not lines:
        raise BadInput(f"{db_path}: no valid records to plot")
    fig, (by_trial, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for line in lines:
        by_trial.plot(line["trials"], line["gflops"], drawstyle="steps-post", label=line["label"])
        by_time.plot(line["seconds"], line["gflops"], drawstyle="steps-post", label=line["label"])
    for ax, xlabel in ((by_trial, "trials"), (by_time, "tuning time (s)")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("best GFLOPS so far")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    by_trial.set_title("best GFLOPS against trials")
    by_time.set_title("best GFLOPS against tuning time")
    by_time.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    plt.close(fig)
    if as_json:
        return print_json({"output": output, "lines": [
            {"label": line["label"], "trials": line["trials"][-1],
             "best_gflops": line["gflops"][-1]} for line in lines]})
    click.echo(f"wrote {output}: {len(lines)} line(s)")


def _plot_lines(task, records) -> list[dict]:
    """Per tuner of `task`'s records: the best GFLOPS so far at each trial (from the first
    valid one), with the trial number and the tuning time."""
    groups: dict = {}
    for r in records:
        groups.setdefault(r.tuner or "unknown", []).append(r)
    lines = []
    for tuner, rs in groups.items():
        line = {"label": f"{task_label(task.name, task.args)} {tuner}", "trials": [],
                "seconds": [], "gflops": []}
        best, seconds = None, 0.0
        for n, r in enumerate(rs, start=1):
            if n > 1:
                seconds += min(max(0.0, r.timestamp - rs[n - 2].timestamp), PLOT_GAP_S)
            if r.ok and r.gflops is not None:
                best = r.gflops if best is None else max(best, r.gflops)
            if best is not None:
                line["trials"].append(n)
                line["seconds"].append(seconds)
                line["gflops"].append(best)
        if line["trials"]:
            lines.append(line)
    return lines
