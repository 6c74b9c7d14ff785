"""`autosched tune`: tune one task, a tasks file or a whole ONNX model on Ray, logging
every batch; with the tasks file, the model's tasks (tuner.extract_tasks), the duration of
--time-budget, the Ray cluster it joins, the signals that stop it and what it shows while
it runs."""
from __future__ import annotations

import json
import os
import re
import signal
import sys

import click

from ..measurer import Measurer
from ..ray_session import RayConnectionError, timing_resource
from ..registry import TUNERS
from ..options import TuningOptions
from ..task_scheduler import TaskScheduler
from .common import (SIGNAL_EXIT, BadInput, check_log, db_option, describe_error,
                     external_option, format_clock, format_errors, format_gflops,
                     format_ratio, format_seconds, make_console, make_task, open_log,
                     opt_level_option, print_table, shape_option, task_label)

DEFAULT_TRIALS_PER_TASK = 64


def _tasks_file(path: str, target: str) -> list:
    """The tasks of a tasks file: a JSON list of {"template": NAME, "args": [...]}
    objects, each optionally with "target" (default: --target)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as err:
        raise BadInput(f"--tasks {path}: cannot read it: {err.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BadInput(f"--tasks {path}: not JSON: {err}") from None
    shape = 'a JSON list of {"template": NAME, "args": [...]} objects'
    if not isinstance(data, list) or not data:
        raise BadInput(f"--tasks {path}: expected {shape}")
    tasks = []
    for n, entry in enumerate(data, start=1):
        where = f"--tasks {path}: task {n}: "
        if not isinstance(entry, dict) or not isinstance(entry.get("template"), str):
            raise BadInput(f"{where}expected an object with \"template\" and \"args\" "
                           f"({shape}), got {json.dumps(entry)}")
        unknown = set(entry) - {"template", "args", "target"}
        if unknown:
            raise BadInput(f"{where}unknown field(s) {', '.join(sorted(unknown))}; the "
                           f"fields are template, args, target")
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise BadInput(f"{where}\"args\" must be a list, got {json.dumps(args)}")
        task = make_task(entry["template"], args, entry.get("target", target), where)
        if task in tasks:
            raise BadInput(f"{where}{task_label(task.name, task.args)} is listed twice")
        tasks.append(task)
    return tasks


def _model_tasks(path: str, shapes: dict, opt_level: int, target: str,
                 alternatives: bool, external: list, blocks: bool) -> tuple[list, list]:
    """The tasks of ONNX model `path` and their weights (tuner.extract_tasks), under the
    graph passes of `opt_level`, as `autosched compile` will build it."""
    from compiler.errors import BuildError, FrontendError
    from compiler.frontend import from_onnx
    from compiler.transform.pass_infra import PassContext

    from ..extract import extract_tasks
    try:
        mod, params = from_onnx(path, shape=shapes)
        with PassContext(opt_level=opt_level):
            tasks, weights = extract_tasks(mod, params, target=target,
                                           alternatives=alternatives, external=external,
                                           blocks=blocks)
    except (FrontendError, BuildError) as err:
        raise BadInput(str(err)) from None
    if not tasks:
        raise BadInput(f"{path}: no kernel of the model is scheduled by a template (no "
                       f"conv2d, dense or matmul anchor): there is nothing to tune")
    return tasks, weights


def _print_model_tasks(path: str, tasks: list, weights: list, alternatives: bool,
                       blocks: bool) -> None:
    from rich.table import Table
    table = Table("task", "kernels (weight)", "MFLOP per call")
    for task, weight in zip(tasks, weights):
        table.add_row(task_label(task.name, task.args), str(weight), f"{task.flop / 1e6:.1f}")
    console = print_table(table, f"{path}: {len(tasks)} tasks for {sum(weights)} kernel calls")
    if alternatives:
        console.print("--alternatives: a packed convolution and its NCHW implementation are "
                      "two tasks, and the model's estimate counts both (an upper bound); "
                      "the build runs the faster one")
    if blocks:
        console.print("--blocks: every channel block of a packed convolution is a task, and "
                      "the model's estimate counts them all (an upper bound); the build "
                      "picks each layer's blocks for the whole model, transforms included")


def parse_duration(text: str) -> float:
    """Seconds of a time budget: "8h", "30m", "90s", "1h30m", "1.5h" or plain seconds; a
    ValueError that says what to write otherwise."""
    number = r"(\d+(?:\.\d*)?)"
    words = "".join(text.split()).lower()
    match = re.fullmatch(number, words) or \
        re.fullmatch(rf"(?:{number}h)?(?:{number}m)?(?:{number}s)?", words)
    if not words or match is None:
        raise ValueError(f"cannot read {text!r} as a duration; write e.g. 8h, 30m, "
                         f"90s, 1h30m or plain seconds")
    parts = [float(g or 0) for g in match.groups()]
    total = parts[0] if len(parts) == 1 else parts[0] * 3600 + parts[1] * 60 + parts[2]
    if total <= 0:
        raise ValueError(f"{text!r} is no time at all; give a positive duration")
    return total


def _duration_option(_ctx, _param, text: str | None) -> float | None:
    try:
        return None if text is None else parse_duration(text)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


@click.command()
@click.argument("spec", nargs=-1, metavar="[TEMPLATE ARGS...]")
@click.option("--tasks", "tasks_path", type=click.Path(dir_okay=False),
              help='A JSON file: a list of {"template": NAME, "args": [...]} objects '
                   '(optionally "target"), tuned in one run.')
@click.option("--trials", type=click.IntRange(min=1),
              help=f"Trials to measure, in total over the tasks [default: with "
                   f"--time-budget, as many as it allows; without, "
                   f"{DEFAULT_TRIALS_PER_TASK} per task]. With both, whichever ends first.")
@click.option("--tuner", type=click.Choice(list(TUNERS)), default="xgb", show_default=True)
@db_option
@click.option("--target", default="llvm", show_default=True,
              help='The target to tune for (e.g. "llvm -mcpu=skylake-avx512").')
@click.option("--time-budget", callback=_duration_option, metavar="DURATION",
              help="Tune until this, confirmation included: 8h, 30m, 90s, 1h30m, seconds "
                   "(the last batches shrink to fit it).")
@click.option("--early-stopping", type=click.IntRange(min=1), metavar="N",
              help="Stop tuning a task after N of its trials without improvement.")
@click.option("--parallel", type=click.IntRange(min=1), metavar="N",
              help="Builds at a time [default: the Ray cluster's CPUs].")
@click.option("--ray-address", metavar="ADDR",
              help='Join this Ray cluster ("host:port" or "auto") [default: a local Ray].')
@click.option("--seed", type=int, help="Makes the tuners' proposals reproducible.")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True,
              help="Configs measured (and logged) at a time.")
@shape_option
@opt_level_option
@click.option("--alternatives", is_flag=True,
              help="For a model: tune the NCHW implementation of every packed convolution "
                   "too; the build takes the faster logged one.")
@click.option("--blocks", is_flag=True,
              help="For a model: tune every packed convolution in each of its channel "
                   "blocks (the target's lanes and their multiples); the build picks every "
                   "layer's blocks for the whole model, layout transforms included.")
@external_option
@click.option("--flush-cache/--no-flush-cache", default=None,
              help="Time every call right after a flush of the caches, as a layer runs in "
                   "a model (its weights come from memory) [default: on for a model, off "
                   "for an operator].")
@click.option("--no-transfer", "no_transfer", is_flag=True,
              help="Start each task's XGB model from nothing, not from the log's records "
                   "of the other workloads of its template.")
@click.option("--allocation", type=click.Choice(["gradient", "round-robin"]),
              default="gradient", show_default=True,
              help="How the batches are given out among the tasks: where the objective "
                   "falls most per second (with a floor for tasks barely tried), or in turn.")
@click.option("--no-cache", "fresh", is_flag=True,
              help="Build every candidate anew, neither reading nor writing the compile "
                   "cache, which otherwise makes a candidate built before on this machine "
                   "a look-up.")
@click.option("--number", type=click.IntRange(min=1), default=1, show_default=True,
              help="Calls of a candidate per measurement, at least (TVM's time_evaluator "
                   "number; --min-repeat-ms raises it).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Measurements of a candidate; its cost is their mean.")
@click.option("--min-repeat-ms", type=click.IntRange(min=0), default=100, show_default=True,
              help="The shortest measurement: --number grows until one lasts this long "
                   "(not with --flush-cache, where a measurement is the median of calls "
                   "each after a flush).")
def tune(spec, tasks_path, trials, tuner, db_path, target, time_budget, early_stopping,
         parallel, ray_address, seed, batch_size, shapes, opt_level, alternatives, blocks,
         external, flush_cache, no_transfer, allocation, fresh, number, repeat,
         min_repeat_ms):
    """Tune TEMPLATE for ARGS, every task of --tasks, or every task of an ONNX model
    (MODEL.onnx: its distinct conv2d / dense / matmul workloads, each weighted by the
    kernels it schedules; the batches go where they lower the model's estimated latency
    most), logging every batch to the log.

    Resumes from what the log holds: no config is measured twice. Ctrl-C (SIGINT) or
    SIGTERM stops after the batch in flight, which is logged; the exit code is then
    130 / 143.

    With --external (a model's), the tasks are those of the build with those codegens,
    and a library among them (cblas) is measured once on every dense and matmul it can
    compute, so that the build gives it the workloads where it beats the tuned kernel.

    Examples: autosched tune matmul 256 256 256 --trials 64 --db tune.db;
    autosched tune resnet18.onnx --time-budget 1h --db tune.db
    """
    if bool(spec) == bool(tasks_path):
        raise BadInput("tune needs TEMPLATE ARGS..., MODEL.onnx or --tasks FILE (one of them)")
    model = spec[0] if len(spec) == 1 and spec[0].lower().endswith(".onnx") else None
    if model is None:
        given = click.get_current_context().get_parameter_source("opt_level")
        for option, used in (("--shape", shapes), ("--alternatives", alternatives),
                             ("--blocks", blocks), ("--external", external),
                             ("--opt-level", given == click.core.ParameterSource.COMMANDLINE)):
            if used:
                raise BadInput(f"{option} is for a model (tune MODEL.onnx {option} ...)")
    check_log(db_path)  # before the model's extraction, which takes a while
    weights = None
    if model is not None:
        tasks, weights = _model_tasks(model, shapes, opt_level, target, alternatives,
                                      external, blocks)
        _print_model_tasks(model, tasks, weights, alternatives, blocks)
    else:
        tasks = (_tasks_file(tasks_path, target) if tasks_path
                 else [make_task(spec[0], spec[1:], target)])
    if trials is None and time_budget is None:
        trials = DEFAULT_TRIALS_PER_TASK * len(tasks)
    flush_cache = model is not None if flush_cache is None else flush_cache
    measurer = start_measurer(ray_address, parallel, tasks, flush_cache,
                              compile_cache=not fresh, number=number, repeat=repeat,
                              min_repeat_ms=min_repeat_ms)
    try:
        with open_log(db_path, create=True) as db:
            options = TuningOptions(trials=trials, time_budget=time_budget, tuner=tuner,
                                    early_stopping=early_stopping, seed=seed,
                                    batch_size=batch_size, transfer=not no_transfer,
                                    allocation=allocation)
            scheduler = TaskScheduler(tasks, measurer, options, db, weights=weights)
            progress = _TuneProgress(scheduler, db_path, single=len(tasks) == 1)
            scheduler.on_batch = progress.on_batch
            with _StopOnSignal(scheduler, progress) as stopper, progress:
                try:
                    scheduler.run()
                except Exception as err:  # noqa: BLE001 - see below
                    if stopper.signum is None:
                        raise
                    # A signal sent to the whole process group (a service manager's
                    # SIGTERM) also reaches Ray's daemons, which may end the batch in
                    # flight: the batches before it are logged, and the exit code
                    # still says which signal stopped the run.
                    click.echo(f"autosched: the batch in flight was lost after "
                               f"{signal.Signals(stopper.signum).name}: "
                               f"{describe_error(err)}", err=True)
            _print_summary(scheduler, scheduler.states, db, db_path, model)
    finally:
        measurer.close()
    return SIGNAL_EXIT.get(stopper.signum, 0)


def start_measurer(address: str | None, parallel: int | None, tasks,
                   flush_cache: bool = False, compile_cache: bool = True, **timing):
    """A started Measurer (Measurer's flush_cache, compile_cache and `timing`: number,
    repeat, min_repeat_ms); BadInput when the cluster cannot be reached or has no node
    that can time the tasks' targets."""
    import ray
    measurer = Measurer(address=address, n_parallel=parallel, flush_cache=flush_cache,
                        compile_cache=compile_cache, **timing)
    try:
        measurer.start()
    except RayConnectionError as err:
        raise BadInput(str(err)) from None
    for target in {str(t.target): t.target for t in tasks}.values():
        resource = timing_resource(target)
        if ray.cluster_resources().get(resource, 0) < 1:
            raise BadInput(f"no node of the Ray cluster can time candidates for {target}: "
                           f"none advertises the resource {resource!r}")
    return measurer


class _StopOnSignal:
    """While tuning: the first SIGINT / SIGTERM asks the scheduler to stop after the batch
    in flight; a second SIGINT aborts that batch (KeyboardInterrupt)."""

    def __init__(self, scheduler, progress):
        self.scheduler, self.progress = scheduler, progress
        self.signum: int | None = None
        self._old: dict = {}

    def __enter__(self) -> _StopOnSignal:
        # Ray's worker processes run in process groups of their own and its daemons block
        # SIGINT, so a terminal's Ctrl-C reaches only this process: the batch goes on.
        self._old = {s: signal.signal(s, self._handle) for s in SIGNAL_EXIT}
        return self

    def __exit__(self, *exc_info):
        for s, handler in self._old.items():
            signal.signal(s, handler)

    def _handle(self, signum, _frame):
        if self.signum is not None:
            if signum == signal.SIGINT:  # Ctrl-C again: a person who will not wait
                raise KeyboardInterrupt
            return  # a repeated SIGTERM changes nothing: the batch is being finished
        self.signum = signum
        name = signal.Signals(signum).name
        self.scheduler.stop(name)
        self.progress.stopping(name)


class _TuneProgress:
    """What `tune` shows while it runs: on a terminal a live table of the tasks (trials,
    best GFLOPS and its ratio to the untuned fallback, errors by kind, ETA); otherwise
    one plain line per batch, so that a log file of an overnight run stays readable."""

    def __init__(self, scheduler, db_path: str, single: bool):
        self.scheduler, self.db_path, self.single = scheduler, db_path, single
        self.live = sys.stdout.isatty()
        self.stop_note: str | None = None
        self._live = None

    def __enter__(self) -> _TuneProgress:
        if self.live:
            from rich.live import Live
            self._live = Live(self, console=make_console(), refresh_per_second=2,
                              transient=True)
            self._live.start()
        else:
            s = self.scheduler
            limits = ([] if s.trials is None else [f"{s.trials} trials"]) + \
                ([] if s.time_budget is None else [format_clock(s.time_budget)])
            click.echo(f"tuning {len(s.tasks)} task(s) with {s.tuner_name} for "
                       f"{' or '.join(limits)}, batches of {s.batch_size}; log {self.db_path}")
        return self

    def __exit__(self, *exc_info):
        if self._live is not None:
            self._live.stop()

    def stopping(self, signame: str) -> None:
        """Say at once that a stop was asked for (from a signal handler: no buffered I/O)."""
        self.stop_note = f"{signame}: stopping after the batch in flight (again to abort it)"
        if not self.live:
            os.write(sys.stderr.fileno(), f"autosched: {self.stop_note}\n".encode())

    def on_batch(self, scheduler, state) -> None:
        if not self.live:
            click.echo(self._line(state))

    def _trials(self, state) -> str:
        return of_trials(state.done, self.scheduler.trials) if self.single \
            else str(state.done)

    def _line(self, state) -> str:
        s = self.scheduler
        head = f"[{format_clock(s.elapsed())}] {task_label(state.task.name, state.task.args)}"
        if state.confirmation is not None:
            return f"{head}: confirmed: {format_confirmation(state)}"
        if state.batches == 0:
            gflops = state.task.gflops(state.fallback_cost)
            return f"{head}: fallback config {format_gflops(gflops)} {state.task.unit}"
        ratio = f" ({state.speedup:.2f}x fallback)" if state.speedup is not None else ""
        return (f"{head}: trials {self._trials(state)}, run {of_trials(s.done, s.trials)}, "
                f"best {format_gflops(state.best_gflops)} {state.task.unit}{ratio}, errors "
                f"{format_errors(state.errors)}{model_estimate(s)}, ETA "
                f"{format_clock(s.eta())}")

    def __rich__(self):
        from rich.console import Group
        from rich.table import Table
        s = self.scheduler
        head = (f"autosched tune: {of_trials(s.done, s.trials)} trials, "
                f"{format_clock(s.elapsed())} "
                f"elapsed{model_estimate(s)}, ETA {format_clock(s.eta())}, log "
                f"{self.db_path}")
        table = Table("task", "trials", "best GFLOPS", "vs fallback", "errors", "state")
        for state in s.states:
            busy = "measuring" if s.in_flight is state else state.finished or "waiting"
            table.add_row(task_label(state.task.name, state.task.args), self._trials(state),
                          _rate(state), format_ratio(state.speedup),
                          format_errors(state.errors), busy)
        return Group(head, table, *([self.stop_note] if self.stop_note else []))


def _rate(state) -> str:
    """A task's best rate for a table whose column says GFLOPS: "812.3 GOPS" for an
    int8 task (its unit named), the plain number else."""
    rate = format_gflops(state.best_gflops)
    return f"{rate} GOPS" if state.task.unit == "GOPS" and state.best_gflops else rate


def of_trials(done: int, trials: int | None) -> str:
    """"12/64": trials done of the run's trials, or "12" when a run has no trial limit
    (a time budget alone)."""
    return str(done) if trials is None else f"{done}/{trials}"


def model_estimate(scheduler) -> str:
    """", model est. 12.3 ms (1.20x untuned)" for a model's run: the sum over its tasks
    of weight x best time, and how much faster that is than with the fallback configs
    (the time of the kernels the templates schedule; the rest of the model is not
    tuned). Empty for tasks that are no model."""
    estimates = estimated_latencies(scheduler)
    if estimates is None:
        return ""
    tuned, untuned = estimates
    return f", model est. {format_seconds(tuned)} ({untuned / tuned:.2f}x untuned)"


def estimated_latencies(scheduler) -> tuple[float, float] | None:
    """(tuned, untuned) estimated latency of a weighted run's kernels
    (TaskScheduler.estimated_latency), or None before both are known."""
    tuned, untuned = scheduler.estimated_latency(), scheduler.estimated_latency(untuned=True)
    return None if tuned is None or untuned is None else (tuned, untuned)


def format_confirmation(state) -> str:
    """What a task's confirmation found, in one line: the best, its time and its ratio to
    the fallback, and what the rounds cost against the task's tuning time."""
    c = state.confirmation
    best = "the fallback" if c.best.fallback else f"#{c.best.config.index}"
    # a share of a task tuned in no time (a library's one config) would say nothing
    share = f", {c.seconds / state.seconds:.1%} of its tuning time" \
        if state.seconds >= 1.0 else ""
    return (f"best {best}, {format_gflops(state.task.gflops(c.best.cost))} {state.task.unit} "
            f"({format_seconds(c.best.cost)}, {format_ratio(c.speedup)} fallback); top "
            f"{len(c.ranking) - 1} and the fallback re-timed in {c.rounds} rounds, "
            f"{c.seconds:.2f} s{share}")


def _print_summary(scheduler, states, db, db_path: str, model: str | None = None) -> None:
    from rich.table import Table
    logged = {(t.template, tuple(t.args), t.target): t.records for t in db.tasks()}
    table = Table("task", "tuner", "trials", "in log", "best GFLOPS", "vs fallback",
                  "confirmed", "errors", "ended")
    for st in states:
        key = (st.task.name, st.task.args, str(st.task.target))
        c = st.confirmation
        confirmed = "no" if c is None else \
            f"{c.rounds} rounds, {c.seconds:.1f} s" + \
            (f" ({c.seconds / st.seconds:.0%})" if st.seconds else "")
        table.add_row(task_label(st.task.name, st.task.args), st.tuner_name, str(st.done),
                      str(logged.get(key, 0)), _rate(st),
                      format_ratio(st.speedup), confirmed, format_errors(st.errors),
                      st.finished or scheduler.stop_reason or "")
    console = print_table(table)
    console.print(f"{scheduler.done} trials in {format_clock(scheduler.elapsed())} "
                  f"(ended: {scheduler.stop_reason}); log {db_path}; best GFLOPS and vs "
                  f"fallback are confirmed: re-timed side by side in alternating rounds")
    estimates = estimated_latencies(scheduler)
    if model is not None and estimates is not None:
        tuned, untuned = estimates
        console.print(f"{model}: its template-scheduled kernels take an estimated "
                      f"{format_seconds(tuned)}, {untuned / tuned:.2f}x faster than untuned "
                      f"({format_seconds(untuned)}; per task its weight x its fallback's "
                      f"time / its confirmed speedup, summed); build it with:")
        click.echo(f"    autosched compile {model} -o {model[:-5]}.so --db {db_path}")
