"""Database: the tuning log, one SQLite file (through sqlite-utils).

Writes are whole batches: `add(task, inputs, results)` is one `BEGIN IMMEDIATE`
transaction, committed before it returns, so a process killed at any moment loses at
most the batch it was writing and never leaves a half-written one. WAL mode and a busy
timeout let several processes tune into one file at once: readers never wait, writers
take turns.

The log holds data only: configs are JSON knob values, results are numbers and text;
opening or importing a log never unpickles or evaluates anything.

Tasks are duck-typed (the records layer does not import the tuner): anything with
`name`, `args`, `target` (a compiler.Target), `workload_key`, `flop`, `config_space`
and `template.version`, as tuner.Task has.
"""
from __future__ import annotations

import functools
import json
import math
import os
import socket
import sqlite3
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import sqlite_utils

from search_spaces import SpaceError, get_template

from . import schema
from .errors import RecordsError
from .record import Record, error_name

SQLITE_HEADER = b"SQLite format 3\x00"
RECORD_COLUMNS = ("task_id, config, config_index, template_version, costs, mean_cost, "
                  "gflops, error_no, error_msg, build_time, run_time, verify_time, "
                  "timestamp, host, tuner, run_id, uid")
_SELECT = ("SELECT r.*, t.template, t.args, t.target FROM records r "
           "JOIN tasks t ON t.id = r.task_id ")


@dataclass(frozen=True)
class TaskSummary:
    """A task of the log with its record counts and best valid result (current
    template version)."""
    id: int
    template: str
    args: tuple
    target: str
    records: int
    errors: int
    stale: int
    best_gflops: float | None
    best_cost: float | None


def _guarded(method):
    """SQLite's own errors (a corrupt page, a file that is not a database) become a
    RecordsError naming the file."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as err:
            raise RecordsError(f"{self.path}: {_explain(err)}") from None
    return wrapper


def _explain(err: sqlite3.DatabaseError) -> str:
    text = str(err)
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return f"the file is corrupt or truncated ({text}); restore it from a backup or export"
    return text


class Database:
    """`Database(path)`: open (or create) the tuning log at `path`.

    timeout: seconds a writer waits for another process's transaction to finish.
    """

    def __init__(self, path, timeout: float = 60.0):
        self.path = os.fspath(path)
        _check_header(self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as err:
            raise RecordsError(f"{self.path}: cannot open: {err}") from None
        self.conn = conn
        self.db = sqlite_utils.Database(conn)
        self._open(timeout)

    @_guarded
    def _open(self, timeout: float) -> None:
        self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across crashes
        self.conn.execute("PRAGMA foreign_keys = ON")
        with self._write():
            tables = set(self.db.table_names())
            if not tables:
                schema.create(self.conn)
                return
            if "meta" not in tables or "records" not in tables:
                raise RecordsError(f"{self.path} is a SQLite database but not an autosched "
                                   f"log (its tables are {', '.join(sorted(tables))})")
            version = self._schema_version()
        if version > schema.SCHEMA_VERSION:
            raise RecordsError(f"{self.path} was written by a newer autosched (log schema "
                               f"version {version}; this one knows up to "
                               f"{schema.SCHEMA_VERSION}); upgrade autosched to read it")
        if version < schema.SCHEMA_VERSION:
            self._upgrade(version)

    def _schema_version(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise RecordsError(f"{self.path}: the log has no valid schema version")
        return int(row[0])

    def _upgrade(self, version: int) -> None:
        """Back the file up, then run every upgrade from `version` in one transaction."""
        backup = f"{self.path}.schema-v{version}.bak"
        n = 1
        while os.path.exists(backup):
            backup, n = f"{self.path}.schema-v{version}.{n}.bak", n + 1
        dest = sqlite3.connect(backup)
        with dest:
            self.conn.backup(dest)
        dest.close()
        with self._write():
            current = self._schema_version()  # another process may have upgraded it
            for v in range(current, schema.SCHEMA_VERSION):
                schema.UPGRADES[v](self.conn)
            self.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                              (str(schema.SCHEMA_VERSION),))
        self.upgraded_from = (version, backup)

    @contextmanager
    def _write(self):
        """One write transaction, taken at once (BEGIN IMMEDIATE) so that two writers
        queue on the busy timeout instead of failing when one upgrades its read lock."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc_info):
        self.close()

    # ------------------------------------------------------------------ writing

    def _task_id(self, task, create: bool = True) -> int | None:
        """The id of `task`'s row (created, or its template version brought up to date)."""
        key, target = task.workload_key, str(task.target)
        row = self.conn.execute("SELECT id, template_version FROM tasks WHERE "
                                "workload_key = ? AND target = ?", (key, target)).fetchone()
        version = task.template.version
        if row is not None:
            if create and row[1] != version:
                self.conn.execute("UPDATE tasks SET template_version = ? WHERE id = ?",
                                  (version, row[0]))
            return row[0]
        if not create:
            return None
        cur = self.conn.execute(
            "INSERT INTO tasks (template, args, target, workload_key, cpu, vector_bits, flop, "
            "space_size, template_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (task.name, json.dumps(list(task.args)), target, key, task.target.mcpu,
             task.target.vector_bits, int(task.flop), len(task.config_space), version))
        return cur.lastrowid

    @_guarded
    def add(self, task, inputs, results, tuner: str | None = None,
            run_id: int | None = None) -> int:
        """Log one measured batch of `task` (MeasureInputs and their MeasureResults) as
        one transaction; returns the number of records added."""
        if len(inputs) != len(results):
            raise ValueError(f"add: {len(inputs)} inputs but {len(results)} results")
        with self._write():
            task_id = self._task_id(task)
            rows = [_record_row(task, task_id, inp.config, res, tuner, run_id)
                    for inp, res in zip(inputs, results)]
            before = self.conn.total_changes
            self.conn.executemany(
                f"INSERT OR IGNORE INTO records ({RECORD_COLUMNS}) VALUES "
                f"({', '.join('?' * len(RECORD_COLUMNS.split(', ')))})", rows)
            return self.conn.total_changes - before

    def logger(self, tuner: str | None = None, run_id: int | None = None):
        """A tuner callback `log(inputs, results)` that adds each measured batch as one
        transaction, grouped by task."""
        def log(inputs, results):
            groups: dict = {}
            for inp, res in zip(inputs, results):
                groups.setdefault(inp.task, ([], []))
                groups[inp.task][0].append(inp)
                groups[inp.task][1].append(res)
            for task, (ins, ress) in groups.items():
                self.add(task, ins, ress, tuner=tuner, run_id=run_id)
        return log

    @_guarded
    def start_run(self, tuner: str, options: dict | None = None) -> int:
        """Open a tuning session; returns its id for add(..., run_id=...)."""
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO runs (start, tuner, options, host) VALUES (?, ?, ?, ?)",
                (time.time(), tuner, json.dumps(options or {}), socket.gethostname()))
            return cur.lastrowid

    @_guarded
    def end_run(self, run_id: int, trials: int, best_gflops: float | None) -> None:
        """Close a tuning session with its trial count and best GFLOPS."""
        with self._write():
            self.conn.execute("UPDATE runs SET end = ?, trials = ?, best_gflops = ? "
                              "WHERE id = ?", (time.time(), trials, best_gflops, run_id))

    # ------------------------------------------------------------------ reading

    def _rows(self, sql: str, params=()) -> list[dict]:
        return list(self.db.query(sql, params))

    @_guarded
    def tasks(self) -> list[TaskSummary]:
        """Every task with its record count, failures, stale records (made with another
        template version than the registered one) and best valid result."""
        out = []
        for row in self._rows(
                "SELECT t.*, COUNT(r.id) AS n, SUM(r.error_no != 0) AS errors FROM tasks t "
                "LEFT JOIN records r ON r.task_id = t.id GROUP BY t.id ORDER BY t.id"):
            version = _current_version(row)
            stale = self.conn.execute("SELECT COUNT(*) FROM records WHERE task_id = ? AND "
                                      "template_version != ?", (row["id"], version)).fetchone()[0]
            best = self._best_rows(row["id"], version, 1)
            out.append(TaskSummary(
                row["id"], row["template"], tuple(json.loads(row["args"])), row["target"],
                row["n"], row["errors"] or 0, stale,
                best[0]["gflops"] if best else None, best[0]["mean_cost"] if best else None))
        return out

    @_guarded
    def records(self, task) -> list[Record]:
        """Every record of `task`, in the order they were logged: what a tuner needs to
        resume (the configs already measured and their results), in one query."""
        task_id = self._task_id(task, create=False)
        if task_id is None:
            return []
        return [Record.from_row(r) for r in self._rows(
            _SELECT + "WHERE r.task_id = ? ORDER BY r.id", (task_id,))]

    def _best_rows(self, task_id: int, version: str, limit: int) -> list[dict]:
        return self._rows(_SELECT + "WHERE r.task_id = ? AND r.template_version = ? AND "
                          "r.error_no = 0 ORDER BY r.mean_cost LIMIT ?",
                          (task_id, version, limit))

    @_guarded
    def top(self, task, k: int = 10) -> list[Record]:
        """The k best valid records of `task` made with the current template version, whose
        configs still fit its space (a record that does not is skipped with a warning)."""
        task_id = self._task_id(task, create=False)
        if task_id is None:
            return []
        out: list[Record] = []
        version = task.template.version
        limit = k
        while True:
            rows = self._best_rows(task_id, version, limit)
            out = [r for r in (Record.from_row(row) for row in rows) if _fits(r)][:k]
            if len(out) >= k or len(rows) < limit:
                return out
            limit *= 2

    def best(self, task) -> Record | None:
        """The best valid record of `task` (see top), or None."""
        found = self.top(task, 1)
        return found[0] if found else None

    @_guarded
    def history(self, task) -> list[tuple[int, float, float | None]]:
        """The best-so-far curve of `task`: (trial number, timestamp, best GFLOPS so far)
        for every record in logging order (all template versions)."""
        best, out = None, []
        for n, r in enumerate(self.records(task), start=1):
            if r.ok and r.gflops is not None:
                best = r.gflops if best is None else max(best, r.gflops)
            out.append((n, r.timestamp, best))
        return out

    @_guarded
    def failures(self, task=None) -> dict[str, int]:
        """Failed records by error kind, of one task or of the whole log."""
        where, params = "WHERE error_no != 0", ()
        if task is not None:
            task_id = self._task_id(task, create=False)
            if task_id is None:
                return {}
            where, params = where + " AND task_id = ?", (task_id,)
        rows = self.conn.execute(f"SELECT error_no, COUNT(*) FROM records {where} "
                                 "GROUP BY error_no ORDER BY error_no", params).fetchall()
        return {error_name(code): n for code, n in rows}

    @_guarded
    def count(self) -> int:
        return self.db["records"].count


def _check_header(path: str) -> None:
    """A file that exists and is not empty must start like a SQLite database."""
    if os.path.isdir(path):
        raise RecordsError(f"{path} is a directory, not a tuning log")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        raise RecordsError(f"{path} is not a SQLite database (an autosched tuning log is one); "
                           f"refusing to touch it")


def _current_version(task_row: dict) -> str:
    """The registered template's version, or the task's latest when it is not registered."""
    try:
        return get_template(task_row["template"]).version
    except SpaceError:
        return task_row["template_version"]


def _fits(record: Record) -> bool:
    try:
        record.config
        return True
    except SpaceError as err:
        warnings.warn(f"record {record.id} of {record.template}{record.args} no longer fits "
                      f"the template's space and is skipped: {err}", stacklevel=3)
        return False


def _record_row(task, task_id: int, config, res, tuner, run_id) -> tuple:
    knobs = config.to_json()["knobs"]
    config_text = json.dumps(knobs)
    costs = json.dumps([float(c) for c in res.costs])
    ok = int(res.error_no) == 0 and res.costs
    mean = sum(res.costs) / len(res.costs) if ok else None
    flop = task.flop
    gflops = flop / mean / 1e9 if ok and flop and mean and mean > 0 else None
    uid = schema.record_uid(task.workload_key, str(task.target), config_text, res.timestamp,
                            res.host, costs, int(res.error_no))
    return (task_id, config_text, config.index, config.template_version, costs,
            mean if mean is None or math.isfinite(mean) else None, gflops, int(res.error_no),
            res.error_msg, res.build_time, getattr(res, "run_time", None),
            getattr(res, "verify_time", None), res.timestamp, res.host, tuner, run_id, uid)

