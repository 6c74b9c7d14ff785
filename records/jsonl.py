"""JSON lines import / export of a tuning log, and merging two logs.

A JSONL file moves records between logs, machines and people: one line per record,
each line complete in itself (no other file is needed to re-create the record in
another log), readable by any JSON tool. Importing one never unpickles or evaluates
anything: a line is JSON data, checked field by field.

Line format (autosched record format 1)
---------------------------------------
Each line is one JSON object. Every field below is present; "or null" says when it may
be null. Numbers are finite (no NaN or Infinity); integers fit in 64 bits.

    {"autosched_record": 1,
     "task":   {"template": "matmul", "args": [64, 64, 64, "float32"],
                "target": "llvm -mcpu=rocketlake -num-cores=2",
                "workload_key": "[\\"matmul\\", [64, 64, 64, \\"float32\\"]]",
                "cpu": "rocketlake", "vector_bits": 512, "flop": 524288,
                "space_size": 14000},
     "config": {"knobs": {"tile_x": [-1, 4, 1], "pack_b": 0}, "config_index": 13835,
                "template_version": "19c48f7f6802"},
     "result": {"costs": [1.2e-05, 1.1e-05], "mean_cost": 1.15e-05, "gflops": 45.6,
                "error_no": 0, "error": "NO_ERROR", "error_msg": "",
                "build_time": 0.31, "run_time": 0.02, "verify_time": 0.001,
                "timestamp": 1718000000.5, "host": "node1", "role": "trial",
                "ratio": 0.93, "scaled_cost": 1.1e-05},
     "tuner": "xgb",
     "run": {"id": 3, "start": 1717999990.1, "end": 1718000100.0, "tuner": "xgb",
             "options": {"n_trial": 64}, "trials": 64, "best_gflops": 45.6,
             "host": "node1"}}

autosched_record  the format version, an integer; this autosched reads 1 (a line of a
                  newer format is refused, not guessed at).
task              the operator the record measured:
  template          the registered template's name (string).
  args              its arguments as bound (defaults filled in), a list.
  target            the canonical target string (string).
  workload_key      JSON text of [template, args]; must agree with them (string).
  cpu               the target's LLVM CPU name (string).
  vector_bits       the widest SIMD register of the target in bits (integer).
  flop              floating-point operations of one call (integer or null).
  space_size        the number of configs in the task's space (integer or null).
config            the measured config:
  knobs             knob name -> the knob's JSON value (object).
  config_index      its index in the space (integer or null).
  template_version  the version of the template the config was made for (the fingerprint
                    of the code it generates: search_spaces/fingerprint.py)
                    (string). A config of the registered version must fit its space;
                    one of another version is stale and is kept as it is.
result            what the measurement gave:
  costs             seconds per call, one per repeat; empty for a failure (list of
                    numbers).
  mean_cost         mean of costs, seconds (number, or null for a failure).
  gflops            flop / mean_cost / 1e9 (number or null).
  error_no          0 for success, else the MeasureErrorNo code (integer 0-8).
  error             the MeasureErrorNo name of error_no, e.g. "COMPILE_ERROR"; must
                    match error_no (string).
  error_msg         why it failed, "" for success (string or null).
  build_time        seconds to instantiate and compile (number or null).
  run_time          seconds on the runner: load, verify, time (number or null).
  verify_time       seconds of run_time spent checking outputs (number or null).
  timestamp         Unix time the measurement ended (number).
  host              the machine that timed it (string or null).
  role              optional: "trial" (a config the tuner proposed), "fallback" (the
                    untuned baseline) or "control" (the config timed in every batch to
                    compare the batch with); absent means "trial".
  ratio             optional: mean_cost over the control's in the same batch (number or
                    null).
  scaled_cost       optional: the cost on the task's scale, what configs are ranked by
                    (number or null; absent means mean_cost).
tuner             the tuner that proposed the config (string or null).
run               the tuning session the record belongs to (object or null):
  id                the run's id in the log it was exported from; lines of one run
                    share it (integer). Import gives the run a new id.
  start, end        Unix times the run began and ended (number; end may be null).
  tuner             the tuner of the run (string or null).
  options           the run's options (object or null).
  trials            trials measured (integer or null).
  best_gflops       the run's best GFLOPS (number or null).
  host              the machine that ran the tuner (string or null).

Import identifies a task by (workload_key, target), a run by (start, tuner, host) and a
record by its uid (schema.record_uid of workload_key, target, knobs, timestamp, host,
costs and error_no), so importing or merging the same records again adds nothing. A
task the log lacks is created from the line's task fields; one it has is left as it is.
A line whose template is not registered in the importing process is refused: its
arguments and config could not be checked.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from compiler import Target
from search_spaces import ConfigEntity, SpaceError, get_template

from . import schema
from .database import Database
from .error_codes import MeasureErrorNo, error_name
from .errors import RecordsError
from .workload import workload_key

FORMAT_VERSION = 1
SHOWN_ERRORS = 5  # a strict import's error lists at most this many bad lines

# What each field of a line must hold: (kind, nullable); kinds are the words of the
# error message.
STRING, INTEGER, NUMBER = "a string", "an integer", "a number"
LIST, OBJECT = "a list", "an object"
TASK_FIELDS = {"template": (STRING, False), "args": (LIST, False), "target": (STRING, False),
               "workload_key": (STRING, False), "cpu": (STRING, False),
               "vector_bits": (INTEGER, False), "flop": (INTEGER, True),
               "space_size": (INTEGER, True)}
CONFIG_FIELDS = {"knobs": (OBJECT, False), "config_index": (INTEGER, True),
                 "template_version": (STRING, False)}
RESULT_FIELDS = {"costs": (LIST, False), "mean_cost": (NUMBER, True),
                 "gflops": (NUMBER, True), "error_no": (INTEGER, False),
                 "error": (STRING, False), "error_msg": (STRING, True),
                 "build_time": (NUMBER, True), "run_time": (NUMBER, True),
                 "verify_time": (NUMBER, True), "timestamp": (NUMBER, False),
                 "host": (STRING, True)}
RUN_FIELDS = {"id": (INTEGER, False), "start": (NUMBER, False), "end": (NUMBER, True),
              "tuner": (STRING, True), "options": (OBJECT, True),
              "trials": (INTEGER, True), "best_gflops": (NUMBER, True),
              "host": (STRING, True)}
OPTIONAL_RESULT_FIELDS = {"role": (STRING, False), "ratio": (NUMBER, True),
                          "scaled_cost": (NUMBER, True)}
LINE_FIELDS = {"autosched_record": (INTEGER, False), "task": (OBJECT, False),
               "config": (OBJECT, False), "result": (OBJECT, False),
               "tuner": (STRING, True), "run": (OBJECT, True)}


@dataclass(frozen=True)
class ImportReport:
    """What import_jsonl did: records added, valid lines already in the log (or repeated
    in the file), and the bad lines as (line number, reason)."""
    imported: int
    duplicates: int
    errors: list = field(default_factory=list)


class _BadLine(Exception):
    """Why one line cannot be imported (becomes an ImportReport error)."""


# ---------------------------------------------------------------------- export

def export_jsonl(db: Database, out, best_only: bool = False, task=None) -> int:
    """Write the records of `db` to `out` (a path, or an open text file left open) as
    JSON lines in the format of this module's docstring; returns the number of lines.

    best_only: only the best valid record of each task (lowest mean cost among those
      made with the template's current version: the registered one, or the task's
      latest when the template is not registered here), as ApplyHistoryBest would pick.
      Default False: every record, failures and stale ones included, in logging order.
    task: only this task (anything with workload_key and target, as tuner.Task).
      Default None: every task.
    """
    tasks = {row["id"]: row for row in db.task_rows(task)}
    runs = {row["id"]: row for row in db.run_rows()}
    rows = db.record_rows(task, best_only=best_only)
    return _write_lines(out, (_line(r, tasks[r["task_id"]], runs.get(r["run_id"]))
                              for r in rows))


def _write_lines(out, lines) -> int:
    if not hasattr(out, "write"):
        with open(out, "w", encoding="utf-8") as f:
            return _write_lines(f, lines)
    n = 0
    for line in lines:
        out.write(json.dumps(line, allow_nan=False) + "\n")
        n += 1
    return n


def _line(rec: dict, task: dict, run: dict | None) -> dict:
    """One record row, its task row and its run row (or None) as one line's object."""
    return {
        "autosched_record": FORMAT_VERSION,
        "task": {"template": task["template"], "args": json.loads(task["args"]),
                 "target": task["target"], "workload_key": task["workload_key"],
                 "cpu": task["cpu"], "vector_bits": task["vector_bits"],
                 "flop": task["flop"], "space_size": task["space_size"]},
        "config": {"knobs": json.loads(rec["config"]), "config_index": rec["config_index"],
                   "template_version": rec["template_version"]},
        "result": {"costs": json.loads(rec["costs"]), "mean_cost": rec["mean_cost"],
                   "gflops": rec["gflops"], "error_no": rec["error_no"],
                   "error": error_name(rec["error_no"]), "error_msg": rec["error_msg"],
                   "build_time": rec["build_time"], "run_time": rec["run_time"],
                   "verify_time": rec["verify_time"], "timestamp": rec["timestamp"],
                   "host": rec["host"], "role": rec["role"], "ratio": rec["ratio"],
                   "scaled_cost": rec["scaled_cost"]},
        "tuner": rec["tuner"],
        "run": None if run is None else {
            "id": run["id"], "start": run["start"], "end": run["end"], "tuner": run["tuner"],
            "options": None if run["options"] is None else json.loads(run["options"]),
            "trials": run["trials"], "best_gflops": run["best_gflops"], "host": run["host"]},
    }


# ---------------------------------------------------------------------- import

def import_jsonl(db: Database, source, strict: bool = False) -> ImportReport:
    """Add the records of the JSON lines in `source` (a path, or an open file) to `db`,
    all valid lines in one transaction; returns an ImportReport.

    A bad line (not JSON, a missing or ill-typed field, an unknown error code or
    template, arguments the template rejects, a config of the registered template
    version that does not fit its space) is skipped and reported with its line number.
    strict: raise RecordsError and import nothing when any line is bad. Default False.
    Blank lines are skipped. Records already in `db` are counted as duplicates.
    """
    name = getattr(source, "name", "<stream>") if hasattr(source, "read") else os.fspath(source)
    rows, errors = [], []
    for line_no, text in _read_lines(source, name):
        try:
            rows.append(_parse(text))
        except _BadLine as err:
            errors.append((line_no, str(err)))
    if strict and errors:
        shown = "; ".join(f"line {n}: {why}" for n, why in errors[:SHOWN_ERRORS])
        more = f" (and {len(errors) - SHOWN_ERRORS} more)" if len(errors) > SHOWN_ERRORS else ""
        raise RecordsError(f"{name}: {len(errors)} bad line(s), nothing imported: "
                           f"{shown}{more}")
    with db.transaction():
        for task, run, record in rows:
            record["task_id"] = db.add_task(task)
            if run is not None:
                record["run_id"] = db.add_run(run)
        imported = db.insert_records(record for _, _, record in rows)
    return ImportReport(imported, len(rows) - imported, errors)


def _read_lines(source, name: str):
    """(line number, line) of each non-blank line, as bytes from a path (so that a line
    that is not UTF-8 is one bad line, not the end of the import) or as the open file
    gives it."""
    if not hasattr(source, "read"):
        try:
            with open(source, "rb") as f:
                yield from _read_lines(f, name)
        except FileNotFoundError:
            raise RecordsError(f"{name}: no such file") from None
        except (IsADirectoryError, PermissionError) as err:
            raise RecordsError(f"{name}: cannot read: {err.strerror}") from None
        return
    for line_no, line in enumerate(source, start=1):
        if line.strip():
            yield line_no, line


def _parse(text: str | bytes) -> tuple[dict, dict | None, dict]:
    """(task row, run row or None, record row) of one line, checked; _BadLine says why
    not."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise _BadLine("not UTF-8 text") from None
    try:
        line = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        raise _BadLine(f"not JSON: {err}") from None
    if not isinstance(line, dict) or "autosched_record" not in line:
        raise _BadLine("not an autosched record (a JSON object with 'autosched_record')")
    _check(line, LINE_FIELDS, "")
    if line["autosched_record"] != FORMAT_VERSION:
        raise _BadLine(f"record format {line['autosched_record']}; this autosched reads "
                       f"format {FORMAT_VERSION} (a newer autosched wrote it?)")
    task, config, result, run = line["task"], line["config"], line["result"], line["run"]
    _check(task, TASK_FIELDS, "task.")
    _check(config, CONFIG_FIELDS, "config.")
    _check(result, RESULT_FIELDS, "result.")
    optional = {name: kind for name, kind in OPTIONAL_RESULT_FIELDS.items() if name in result}
    _check(result, optional, "result.")
    role = result.get("role", "trial")
    if role not in schema.ROLES:
        raise _BadLine(f"result.role must be one of {', '.join(schema.ROLES)}, got {_show(role)}")
    if run is not None:
        _check(run, RUN_FIELDS, "run.")
    if not all(_is(c, NUMBER) for c in result["costs"]):
        raise _BadLine(f"result.costs must be a list of numbers, got {_show(result['costs'])}")
    error_no = result["error_no"]
    if error_no not in {int(code) for code in MeasureErrorNo}:
        raise _BadLine(f"result.error_no {error_no} is not a known error code (0 to "
                       f"{max(MeasureErrorNo):d})")
    if result["error"] != error_name(error_no):
        raise _BadLine(f"result.error {result['error']!r} does not match error_no "
                       f"{error_no} ({error_name(error_no)})")
    args = _check_workload(task, config)

    knobs = json.dumps(config["knobs"])
    costs = schema.costs_text(result["costs"])
    record = {"task_id": None, "config": knobs, "config_index": config["config_index"],
              "template_version": config["template_version"], "costs": costs,
              **{name: result[name] for name in (
                  "mean_cost", "gflops", "error_no", "error_msg", "build_time",
                  "run_time", "verify_time", "timestamp", "host")},
              "tuner": line["tuner"], "run_id": None, "role": role,
              "ratio": result.get("ratio"),
              "scaled_cost": result.get("scaled_cost", result["mean_cost"]),
              "uid": schema.record_uid(task["workload_key"], task["target"], knobs,
                                       result["timestamp"], result["host"], costs, error_no)}
    task_row = {**task, "args": json.dumps(list(args)),
                "template_version": get_template(task["template"]).version}
    run_row = None if run is None else {
        **run, "options": None if run["options"] is None else json.dumps(run["options"])}
    return task_row, run_row, record


def _check_workload(task: dict, config: dict) -> tuple:
    """The task's bound arguments, after checking that its template is registered, takes
    them, agrees with its workload_key, and (for the registered version) that the config
    fits the space for the task's target."""
    try:
        template = get_template(task["template"])
        args = template.bind(tuple(task["args"]))
    except SpaceError as err:
        raise _BadLine(str(err)) from None
    key = workload_key(task["template"], args)
    if task["workload_key"] != key:
        raise _BadLine(f"task.workload_key {task['workload_key']!r} does not match its "
                       f"template and args (expected {key!r})")
    if config["template_version"] != template.version:
        return args  # stale: kept as it is, never applied
    try:  # the space of the line's target: a space may differ with the vector unit
        target = Target(task["target"])
    except ValueError as err:
        raise _BadLine(f"task.target: {err}") from None
    try:
        space = template.space(args, target)
    except Exception as err:  # the template is user code run on the line's arguments
        raise _BadLine(f"template {task['template']!r} fails on args {list(args)}: "
                       f"{type(err).__name__}: {err}") from None
    data = {"template_version": config["template_version"], "knobs": config["knobs"]}
    if config["config_index"] is not None:
        data["index"] = config["config_index"]
    try:
        ConfigEntity.from_json(space, data)
    except SpaceError as err:
        raise _BadLine(f"config does not fit the space: {err}") from None
    return args


def _check(obj: dict, fields: dict, prefix: str) -> None:
    """Every field of `fields` present in `obj` with a value of its kind."""
    for name, (kind, nullable) in fields.items():
        if name not in obj:
            raise _BadLine(f"missing field {prefix}{name}")
        value = obj[name]
        if not (value is None and nullable) and not _is(value, kind):
            raise _BadLine(f"{prefix}{name} must be {kind}{' or null' if nullable else ''}, "
                           f"got {_show(value)}")


def _is(value, kind: str) -> bool:
    if isinstance(value, bool):  # JSON true is not the integer 1
        return False
    if kind == INTEGER:
        return isinstance(value, int) and -2 ** 63 <= value < 2 ** 63  # SQLite's range
    if kind == NUMBER:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, {STRING: str, LIST: list, OBJECT: dict}[kind])


def _show(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


# ---------------------------------------------------------------------- merge

def merge(db: Database, other) -> int:
    """Add every task, run and record of the log file `other` (a path; opened as a
    Database, so it is checked and upgraded first) to `db` in one transaction; returns
    the number of records added. Records already in `db` (by uid) are skipped, so
    merging a log twice, or into itself, adds nothing."""
    path = os.fspath(other)
    if not os.path.exists(path):
        raise RecordsError(f"{path}: no such tuning log")
    with Database(path) as log:  # its errors name its file
        tasks, runs, rows = log.task_rows(), log.run_rows(), log.record_rows()
    with db.transaction():
        task_ids = {t["id"]: db.add_task(t) for t in tasks}
        run_ids = {r["id"]: db.add_run(r) for r in runs}
        return db.insert_records({**r, "task_id": task_ids[r["task_id"]],
                                  "run_id": run_ids.get(r["run_id"])} for r in rows)
