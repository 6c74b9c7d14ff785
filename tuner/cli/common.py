"""What the commands of `autosched` share: the --db / --json / task options, BadInput,
tables and number formats, tasks from the user's words, and opening and querying the
tuning log. The commands' modules import from here, never from the package."""
from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import typing

import click

from compiler.graph.backend.external import external_codegens
from records import Database, RecordsError
from search_spaces import (AnnotateEntity, OtherOptionEntity, ReorderEntity, SpaceError,
                           SplitEntity, get_template)

from ..task import Task

DB_ENV = "AUTOSCHED_DB"
DEFAULT_DB = "autosched.db"
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


class BadInput(click.ClickException):
    """Input the user can fix (a template, its arguments, a file, an address): exit 2."""
    exit_code = 2


def describe_error(err: Exception) -> str:
    """A run-time failure as one line: the message of our own errors, else the type too."""
    if isinstance(err, (RecordsError, SpaceError)):
        return str(err)
    return f"{type(err).__name__}: {err}"


# ---------------------------------------------------------------------- options

def db_option(f):
    """--db PATH (else $AUTOSCHED_DB, else ./autosched.db), passed as `db_path`."""
    return click.option("--db", "db_path", envvar=DB_ENV, default=DEFAULT_DB,
                        show_default=True, type=click.Path(dir_okay=False),
                        help=f"The tuning log (SQLite); also from ${DB_ENV}.")(f)


def json_option(f):
    """--json, passed as `as_json`: print JSON only, on stdout."""
    return click.option("--json", "as_json", is_flag=True,
                        help="Print JSON only, on stdout (for scripts).")(f)


def _shapes(_ctx, _param, texts) -> dict:
    """--shape NAME:1,3,224,224 (repeatable) as {name: (1, 3, 224, 224)}."""
    shapes = {}
    for text in texts:
        name, sep, dims = text.rpartition(":")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or any(d < 1 for d in shape):
            raise click.BadParameter(f"{text!r}: write NAME:D1,D2,... e.g. input:1,3,224,224")
        shapes[name] = shape
    return shapes


def shape_option(f):
    """--shape NAME:DIMS (repeatable), passed as `shapes`: static shapes of a model's
    inputs."""
    return click.option("--shape", "shapes", multiple=True, callback=_shapes,
                        metavar="NAME:DIMS", help="A static shape for an input of the "
                        "model, e.g. input:1,3,224,224 (repeatable).")(f)


def _externals(_ctx, _param, text) -> list[str]:
    """--external cblas,ccompiler as ["cblas", "ccompiler"], each a registered codegen."""
    if not text:
        return []
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in external_codegens():
            raise click.BadParameter(f"no external codegen {name!r}; the registered ones "
                                     f"are {', '.join(external_codegens())}")
    return names


def external_option(f):
    """--external NAMES, passed as `external`: the external codegens (BYOC) a model is
    partitioned for, in order of preference, the same for `tune MODEL` and `compile`."""
    return click.option("--external", callback=_externals, metavar="NAMES",
                        help="External codegens, in order of preference, e.g. "
                        "cblas,ccompiler: cblas (OpenBLAS) takes the dense and matmul "
                        "ops the log does not show a tuned kernel beating it on, "
                        "ccompiler (C) what it can compile.")(f)


def opt_level_option(f):
    """--opt-level N (default 3), passed as `opt_level`: the graph passes' opt level,
    the same for `tune MODEL` and `compile`, so that both see the same kernels."""
    return click.option("--opt-level", type=click.IntRange(0, 3), default=3,
                        show_default=True, help="The graph passes' opt level (0: no "
                        "fusion; 3: packed NCHW[x]c convolutions).")(f)


def task_selection(f):
    """TEMPLATE ARGS... or --task ID (see select_task), and --target."""
    f = click.argument("spec", nargs=-1, metavar="[TEMPLATE ARGS...]")(f)
    f = click.option("--task", "task_id", type=int,
                     help="The task's id, as `autosched log tasks` lists it.")(f)
    return click.option("--target", default=None,
                        help="The task's target, when the log holds the workload for "
                             "several (default: the one it holds).")(f)


# ---------------------------------------------------------------------- output

def make_console():
    """A rich console on stdout; 120 columns when it is not a terminal. Markup is off:
    what it prints (knob values, error messages) may hold brackets."""
    from rich.console import Console
    return Console(file=sys.stdout, width=None if sys.stdout.isatty() else 120,
                   highlight=False, markup=False)


def print_json(obj) -> None:
    """`obj` as indented JSON on stdout (no NaN or infinity)."""
    click.echo(json.dumps(obj, indent=2, allow_nan=False))


def print_table(table, heading: str | None = None):
    """Print `heading` (its own line: a table title would wrap to the table's width) and
    `table`; returns the console."""
    console = make_console()
    if heading:
        console.print(heading)
    console.print(table)
    return console


def task_label(template: str, args) -> str:
    """`matmul(256, 256, 256, float32)`: a task as tables show it."""
    return f"{template}({', '.join(str(a) for a in args)})"


def format_gflops(value) -> str:
    """GFLOPS with one decimal, or "-"."""
    return "-" if value is None else f"{value:.1f}"


def format_clock(seconds: float | None) -> str:
    """A duration as h:mm:ss, or "-"."""
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def format_seconds(value: float | None) -> str:
    """A time per call as µs, ms or s."""
    if value is None or not math.isfinite(value):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if value >= scale:
            return f"{value / scale:.3f} {unit}"
    return f"{value * 1e6:.2f} µs"


def format_errors(counts) -> str:
    """Error counts by kind, `COMPILE_ERROR 2, WRONG_ANSWER 1`, or "none"."""
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


def format_ratio(value) -> str:
    """A speed-up as `1.23x`, or "-"."""
    return "-" if value is None else f"{value:.2f}x"


# ---------------------------------------------------------------------- tasks from the user

def _ints(text: str) -> tuple[int, ...]:
    """A shape from the command line: `12,128,128`, `(12, 128, 128)` or `12x128x128`."""
    parts = [p for p in re.split(r"[\s,x()]+", text) if p]
    if not parts:
        raise ValueError(text)
    return tuple(int(p) for p in parts)


def _parse_args(template, texts) -> list:
    """The command line's words as the template's arguments: converted by the annotation
    of each parameter (int, float, str; tuple: a shape of ints, _ints; unannotated: int,
    else float, else text). Values that are not text (from a tasks file) are left as
    they are."""
    try:
        hints = typing.get_type_hints(template.fn)
    except (NameError, TypeError, AttributeError):
        hints = {}
    params = list(template.signature.parameters)
    out = []
    for i, text in enumerate(texts):
        if i >= len(params) or not isinstance(text, str):
            out.append(text)  # bind() names a wrong count, and checks the types
            continue
        kind = hints.get(params[i])
        kinds = (kind,) if kind in (int, float, str) else (_ints,) if kind is tuple \
            else (int, float, str)
        for convert in kinds:
            try:
                out.append(convert(text))
                break
            except ValueError:
                continue
        else:
            raise SpaceError(f"template {template.name!r}{template.signature}: argument "
                             f"{params[i]} must be {kind.__name__}, got {text!r}")
    return out


def make_task(template: str, args, target: str = "llvm", where: str = ""):
    """The Task for a template name and its arguments (words or JSON values); BadInput
    naming the nearest template, or the template's signature, when they do not fit.
    `where` prefixes the message (e.g. the tasks file and entry)."""
    try:
        return Task(template, _parse_args(get_template(template), args), target)
    except SpaceError as err:
        raise BadInput(f"{where}{err}") from None
    except ValueError as err:  # the target
        raise BadInput(f"{where}--target: {err}") from None


# ---------------------------------------------------------------------- the tuning log

def open_log(path: str, create: bool = False):
    """The Database at `path`; BadInput when it is missing (unless `create`), not a log,
    or cannot be created there. Nothing is created for a log that cannot be used."""
    if not os.path.exists(path):
        if not create:
            raise BadInput(f"no tuning log at {path} (tune first, or pass --db PATH or set "
                           f"{DB_ENV})")
        _check_directory(path)
    try:
        return Database(path)
    except RecordsError as err:
        raise BadInput(str(err)) from None


def check_log(path: str) -> None:
    """BadInput now, before anything else starts, for a --db that cannot be used; a
    missing log is not created here."""
    if os.path.exists(path):
        open_log(path).close()
    else:
        _check_directory(path)


def _check_directory(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise BadInput(f"--db {path}: the directory {parent} does not exist")


def task_of_summary(summary):
    """The Task of a row of `Database.tasks()`."""
    return make_task(summary.template, list(summary.args), summary.target,
                     f"task {summary.id} of the log: ")


def select_task(db, spec: tuple, task_id: int | None, target: str | None):
    """The task that TEMPLATE ARGS or --task ID name in `db`; with neither, the log's only
    task. TEMPLATE ARGS without --target match the workload on whichever target the log
    holds it for."""
    if spec and task_id is not None:
        raise BadInput("name the task as TEMPLATE ARGS or with --task ID, not both")
    summaries = db.tasks()
    if task_id is not None:
        found = [t for t in summaries if t.id == task_id]
        if not found:
            raise BadInput(f"{db.path} has no task {task_id} (autosched log tasks lists them)")
        return task_of_summary(found[0])
    if not spec:
        if len(summaries) == 1:
            return task_of_summary(summaries[0])
        raise BadInput(f"{db.path} holds {len(summaries)} tasks; name one as TEMPLATE ARGS "
                       f"or --task ID (autosched log tasks lists them)")
    task = make_task(spec[0], spec[1:], target or "llvm")
    same = [t for t in summaries if t.template == task.name and tuple(t.args) == task.args]
    exact = [t for t in same if t.target == str(task.target)]
    if exact or (target is None and len(same) == 1):
        return task_of_summary((exact or same)[0])
    if len(same) > 1 and target is None:
        raise BadInput(f"{db.path} holds {task_label(task.name, task.args)} for several "
                       f"targets (tasks {', '.join(str(t.id) for t in same)}); pass --task "
                       f"ID or --target")
    raise BadInput(f"{db.path} has no records of {task_label(task.name, task.args)} for "
                   f"{task.target} (autosched log tasks lists what it holds)")


# ---------------------------------------------------------------------- records

def readable_knobs(record) -> dict[str, str]:
    """Knob name -> its value as a person reads it: a split as its loop extents
    ("4x4x16", outermost first), an order, annotations, a plain value. A record whose
    knobs no longer fit the template's space shows its stored JSON."""
    try:
        config = record.config
    except SpaceError:
        return {name: json.dumps(value) for name, value in record.knobs.items()}
    out = {}
    for name, entity in config.entity_map.items():
        match entity:
            case SplitEntity(size=size):
                outer = -(-config.space.space_map[name].extent // math.prod(size[1:]))
                out[name] = "x".join(str(s) for s in (outer, *size[1:]))
            case ReorderEntity(perm=perm):
                out[name] = "order " + " ".join(str(p) for p in perm)
            case AnnotateEntity(anns=anns):
                out[name] = " ".join(anns)
            case OtherOptionEntity(val=val):
                out[name] = json.dumps(val)
    return out


def _finite(value):
    return value if value is not None and math.isfinite(value) else None


def record_json(record) -> dict:
    """A record as the --json output of the queries shows it."""
    return {"id": record.id, "template": record.template, "args": list(record.args),
            "target": record.target, "gflops": record.gflops,
            "mean_cost": _finite(record.mean_cost), "error": record.error_name,
            "config_index": record.config_index, "knobs": record.knobs,
            "knobs_readable": readable_knobs(record), "tuner": record.tuner,
            "run_id": record.run_id, "host": record.host, "timestamp": record.timestamp,
            "role": record.role, "ratio": record.ratio,
            "scaled_cost": _finite(record.scaled_cost),
            "confirmed_rank": record.confirmed_rank, "confirmed_cost": record.confirmed_cost,
            "confirmed_ratio": record.confirmed_ratio,
            "confirmed_gflops": record.best_gflops if record.confirmed else None}
