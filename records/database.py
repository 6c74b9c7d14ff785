"""Database: the tuning log, one SQLite file (through sqlite-utils).

Writes are whole batches: `add(task, inputs, results)` is one `BEGIN IMMEDIATE`
transaction, committed before it returns, so a process killed at any moment loses at
most the batch it was writing and never leaves a half-written one. WAL mode and a busy
timeout let several processes tune into one file at once: readers never wait, writers
take turns.

The log holds data only: configs are JSON knob values, results are numbers and text;
opening or importing a log never unpickles or evaluates anything.

Which config is a task's best: the first of its latest confirmation (tuner/confirm.py: its
top configs and the fallback re-timed in alternating rounds), as long as no valid record
was logged after it; otherwise the cheapest on the task's scale (records.scaled_cost,
tuner/control.py), and the task counts as unconfirmed.

Tasks are duck-typed (the records layer does not import the tuner): anything with
`name`, `args`, `target` (a compiler.Target), `workload_key`, `flop`, `config_space`
and `template.version`, as tuner.Task has.

Moving records between logs (records.jsonl) goes through the public methods of the last
section: every row of a table as stored, `transaction()`, and the inserts.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import sqlite3
import time
import warnings
from contextlib import contextmanager

import sqlite_utils

from search_spaces import SpaceError, get_template

from . import confirmations, schema
from .encode import BatchEncoder
from .error_codes import error_name
from .errors import RecordsError, named_by_file
from .record import Record, TaskSummary, decode_args
from .workload import workload_key

_SELECT = ("SELECT r.*, t.template, t.args, t.target FROM records r "
           "JOIN tasks t ON t.id = r.task_id ")
_OF_TASK = "t.workload_key = ? AND t.target = ?"  # one task, `t` a row of tasks
# The valid records of the tasks that {tasks} (a condition on `t`) selects, made with one
# template version, cheapest on the task's scale first (a batch's control is a second
# timing of a config ranked already): the ranking the tuner keeps, and what best, top,
# ApplyHistoryBest, the task summaries and a best-only export fall back on for a task
# without a current confirmation. The index records_rank answers it.
_BEST = (_SELECT + "WHERE {tasks} AND r.template_version = ? AND r.error_no = 0 AND "
         "r.scaled_cost IS NOT NULL AND r.role != 'control' ORDER BY r.scaled_cost, r.id")


class Database:
    """`Database(path)`: open (or create) the tuning log at `path`.

    timeout: seconds a writer waits for another process's transaction to finish.
    """

    def __init__(self, path, timeout: float = 60.0):
        self.path = os.fspath(path)
        schema.check_header(self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as err:
            raise RecordsError(f"{self.path}: cannot open: {err}") from None
        self.conn = conn
        self.upgraded_from: tuple[int, str] | None = None  # (old version, its backup)
        self._encoder = BatchEncoder()
        try:
            self._open(timeout)
        except BaseException:
            conn.close()
            raise

    @named_by_file
    def _open(self, timeout: float) -> None:
        self.db = sqlite_utils.Database(self.conn)
        self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        # Refuse a foreign or newer file before anything writes to it (even the switch
        # to WAL rewrites its header).
        version = schema.log_version(self.conn, self.path)
        self._switch_to_wal(timeout)
        self.conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across crashes
        self.conn.execute("PRAGMA foreign_keys = ON")
        if version == schema.SCHEMA_VERSION:
            return  # nothing to write: opening never waits for another process's batch
        with self.transaction():
            # again: another process may have changed it
            version = schema.log_version(self.conn, self.path)
            if version is None:
                schema.create(self.conn)
            elif version < schema.SCHEMA_VERSION:
                self.upgraded_from = (version, schema.upgrade(self.conn, self.path, version))

    def _switch_to_wal(self, timeout: float) -> None:
        """PRAGMA journal_mode = WAL, tried again until `timeout`: while another process
        switches a new file to WAL, SQLite answers "database is locked" at once, without
        waiting on the busy timeout (two processes creating one log, 1 open in 30)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @contextmanager
    def transaction(self):
        """`with db.transaction():` one write transaction, committed at the end of the
        block and rolled back if it raises. It is taken at once (BEGIN IMMEDIATE), so that
        two writers queue on the busy timeout instead of failing when one upgrades its
        read lock. Inside another transaction of this Database it joins that one."""
        if self.conn.in_transaction:
            yield
            return
        self._control("BEGIN IMMEDIATE")
        try:
            yield
            self._control("COMMIT")
        except BaseException:
            # SQLite rolls some errors (a full disk, a corrupt page) back by itself; a
            # second ROLLBACK would then hide the first error behind its own.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    @named_by_file
    def _control(self, statement: str) -> None:
        self.conn.execute(statement)

    def close(self) -> None:
        """Close the file (every batch added is committed already)."""
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc_info):
        self.close()

    # ------------------------------------------------------------------ writing

    @named_by_file
    def add(self, task, inputs, results, tuner: str | None = None,
            run_id: int | None = None, roles=None) -> int:
        """Log one measured batch of `task` (MeasureInputs and their MeasureResults) as
        one transaction; returns the number of records added. roles: one of
        schema.ROLES per input (default: all "trial")."""
        if len(inputs) != len(results):
            raise ValueError(f"add: {len(inputs)} inputs but {len(results)} results")
        # encoded before taking the write lock, which is then held for the INSERTs only
        rows = self._encoder.rows(task, inputs, results, tuner, run_id, roles)
        columns = _task_columns(task)
        with self.transaction():
            task_id = self._task_id(columns, update_version=True)
            for row in rows:
                row["task_id"] = task_id
            return self.insert_records(rows)

    @named_by_file
    def start_run(self, tuner: str, options: dict | None = None) -> int:
        """Open a tuning session; returns its id for add(..., run_id=...)."""
        with self.transaction():
            return self._insert("runs", ("start", "tuner", "options", "host"), {
                "start": time.time(), "tuner": tuner, "options": json.dumps(options or {}),
                "host": socket.gethostname()})

    @named_by_file
    def end_run(self, run_id: int, trials: int, best_gflops: float | None) -> None:
        """Close a tuning session with its trial count and best GFLOPS."""
        with self.transaction():
            self.conn.execute("UPDATE runs SET end = ?, trials = ?, best_gflops = ? "
                              "WHERE id = ?", (time.time(), trials, best_gflops, run_id))

    @named_by_file
    def add_confirmation(self, task, ranking, rounds: int, seconds: float | None = None,
                         run_id: int | None = None, host: str | None = None) -> int | None:
        """Log a confirmation of `task` as one transaction: `ranking`, best first, holds
        entries with `config` (a ConfigEntity), `cost` (median seconds), `ratio` (median
        ratio to the fallback, or None), `costs` (seconds per round) and `fallback`
        (bool), as tuner.confirm makes them. Each entry points at the best record of its
        config (an entry whose config the log has no valid record of is left out).
        Returns the confirmation's id (None when no entry has a record)."""
        with self.transaction():
            row = self.conn.execute(f"SELECT t.id FROM tasks t WHERE {_OF_TASK}",
                                    _task_key(task)).fetchone()
            return None if row is None else confirmations.insert(
                self.conn, row[0], ranking, rounds, seconds, run_id, host)

    def _task_id(self, columns: dict, update_version: bool) -> int:
        """The id of the task (workload_key, target) of `columns` (a row of
        schema.TASK_COLUMNS), inserted from them when the log lacks it; update_version:
        an existing task's template version becomes that of `columns`."""
        row = self.conn.execute(f"SELECT t.id, t.template_version FROM tasks t WHERE {_OF_TASK}",
                                (columns["workload_key"], columns["target"])).fetchone()
        if row is None:
            return self._insert("tasks", schema.TASK_COLUMNS, columns)
        if update_version and row[1] != columns["template_version"]:
            self.conn.execute("UPDATE tasks SET template_version = ? WHERE id = ?",
                              (columns["template_version"], row[0]))
        return row[0]

    def _insert(self, table: str, columns: tuple, values: dict) -> int:
        """Insert the `columns` of `values` as a row of `table`; its id."""
        return self.conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
            f"({', '.join('?' * len(columns))})", tuple(values[c] for c in columns)).lastrowid

    # ------------------------------------------------------------------ reading

    def _rows(self, sql: str, params=()) -> list[dict]:
        """The rows of a query as dicts (straight through sqlite3: one statement)."""
        cursor = self.conn.execute(sql, params)
        try:
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, values)) for values in cursor]
        finally:
            cursor.close()

    def _record(self, row: dict) -> Record:
        """The Record of a row of _SELECT; a row whose JSON or numbers are damaged (a
        corrupt file, a hand edit) is a RecordsError naming it."""
        try:
            return Record.from_row(row)
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise RecordsError(f"{self.path}: record {row.get('id')} cannot be read "
                               f"({type(err).__name__}: {err}); the file is corrupt or "
                               f"was edited by hand") from None

    def _best_cursor(self, tasks: str, params: tuple, version: str) -> sqlite3.Cursor:
        return self.conn.execute(_BEST.format(tasks=tasks), (*params, version))

    def _best_records(self, tasks: str, params: tuple, version: str, k: int) -> list[Record]:
        """The `k` best valid records of `version` of the tasks that `tasks` selects (see
        _BEST) whose configs still fit their space (one that does not is skipped with a
        warning); rows are read only as far as the k-th."""
        cursor = self._best_cursor(tasks, params, version)
        try:
            names = [d[0] for d in cursor.description]
            found: list[Record] = []
            for values in cursor:
                record = self._record(dict(zip(names, values)))
                if _fits(record):
                    found.append(record)
                    if len(found) == k:
                        break
            return found
        finally:
            cursor.close()  # ends the statement, so no read snapshot stays open

    def _confirmed_rows(self, task_row: dict) -> list[dict]:
        """The rows of the task's current confirmation, best first (empty: none)."""
        cid = confirmations.current_id(self.conn, task_row["id"], _current_version(task_row))
        return [] if cid is None else self._rows(confirmations.CONFIRMED, (cid,))

    def _confirmed_record(self, row: dict) -> Record:
        return dataclasses.replace(self._record(row), confirmed_rank=row["confirmed_rank"],
                                   confirmed_cost=row["confirmed_cost"],
                                   confirmed_ratio=row["confirmed_ratio"])

    def _best_row(self, task_row: dict) -> dict | None:
        """The best row of the task of `task_row` made with the template's current
        version, as it is stored (no fit check), or None: the first of its current
        confirmation (with confirmed_rank, confirmed_cost and confirmed_ratio), else the
        cheapest on its scale."""
        confirmed = self._confirmed_rows(task_row)
        if confirmed:
            return confirmed[0]
        cursor = self._best_cursor("t.id = ?", (task_row["id"],), _current_version(task_row))
        try:
            values = cursor.fetchone()
            return None if values is None else dict(zip([d[0] for d in cursor.description],
                                                        values))
        finally:
            cursor.close()

    def _top_of(self, task_row: dict, version: str, k: int) -> list[Record]:
        """The k best records of the task of `task_row` whose configs fit their space: its
        current confirmation's ranking first, then the rest of its ranking by scale."""
        confirmed = []
        for row in self._confirmed_rows(task_row):
            record = self._confirmed_record(row)
            if _fits(record):
                confirmed.append(record)
        found = confirmed[:k]
        seen = {r.config_index for r in found}
        if len(found) < k:
            more = self._best_records("t.id = ?", (task_row["id"],), version,
                                      k - len(found) + len(seen))
            found += [r for r in more if r.config_index not in seen][:k - len(found)]
        return found

    @named_by_file
    def tasks(self) -> list[TaskSummary]:
        """Every task with its record count, failures, stale records (made with another
        template version than the registered one) and best valid result (confirmed or
        not; see the module docstring)."""
        out = []
        for row in self._rows(
                "SELECT t.*, COUNT(r.id) AS n, SUM(r.error_no != 0) AS errors FROM tasks t "
                "LEFT JOIN records r ON r.task_id = t.id GROUP BY t.id ORDER BY t.id"):
            stale = self.conn.execute(
                "SELECT COUNT(*) FROM records WHERE task_id = ? AND template_version != ?",
                (row["id"], _current_version(row))).fetchone()[0]
            best = self._best_row(row) or {"gflops": None, "mean_cost": None}
            cost, gflops = best.get("confirmed_cost"), best["gflops"]
            if cost is not None and gflops is not None:
                gflops = gflops * best["mean_cost"] / cost
            out.append(TaskSummary(
                row["id"], row["template"], decode_args(row["args"]), row["target"],
                row["n"], row["errors"] or 0, stale, gflops,
                best["mean_cost"] if cost is None else cost, cost is not None))
        return out

    @named_by_file
    def records(self, task) -> list[Record]:
        """Every record of `task`, in the order they were logged: what a tuner needs to
        resume (the configs already measured and their results), in one query."""
        return [self._record(row) for row in self._rows(
            _SELECT + f"WHERE {_OF_TASK} ORDER BY r.id", _task_key(task))]

    @named_by_file
    def top(self, task, k: int = 10) -> list[Record]:
        """The k best valid records of `task` made with the current template version, whose
        configs still fit its space (a record that does not is skipped with a warning):
        the ranking of its current confirmation first (records with confirmed_rank and
        confirmed_cost), then the cheapest on the task's scale."""
        rows = self.task_rows(task)
        return self._top_of(rows[0], task.template.version, k) if rows else []

    @named_by_file
    def ranked(self, task, k: int = 10) -> list[Record]:
        """The k valid records of `task` (current template version, fitting its space)
        cheapest on the task's scale, confirmed or not: the candidates a confirmation
        re-times."""
        return self._best_records(_OF_TASK, _task_key(task), task.template.version, k)

    def best(self, task) -> Record | None:
        """The best valid record of `task` (see top), or None."""
        found = self.top(task, 1)
        return found[0] if found else None

    @named_by_file
    def confirmation(self, task) -> dict | None:
        """The row of `task`'s current confirmation (id, run_id, rounds, seconds,
        timestamp, host, ...), or None when it has none (see the module docstring)."""
        rows = self.task_rows(task)
        cid = rows and confirmations.current_id(self.conn, rows[0]["id"],
                                                _current_version(rows[0]))
        return self._rows("SELECT * FROM confirmations WHERE id = ?", (cid,))[0] if cid \
            else None

    @named_by_file
    def best_for_target(self, workload: tuple, target) -> Record | None:
        """The best valid record (see top) of `workload` (template name, bound arguments)
        made with the registered template version, for `target` (a compiler.Target),
        looked for in tiers: tasks of the same target, else of the same CPU, else of the
        same vector width (the ISA compatibility class); within a tier the cheapest of
        its tasks' bests (a confirmed time counts as the task's time). None when no tier
        has one."""
        name, args = workload
        version = get_template(name).version
        spelled, cpu = str(target), target.mcpu
        # each tier leaves out the tasks of the tiers before it, so that a record is
        # tried (and warned about) once
        tiers = (("t.target = ?", (spelled,)),
                 ("t.cpu = ? AND t.target != ?", (cpu, spelled)),
                 ("t.vector_bits = ? AND t.cpu != ?", (target.vector_bits, cpu)))
        key = workload_key(name, args)
        for condition, params in tiers:
            bests = [found[0] for row in self._rows(
                f"SELECT t.* FROM tasks t WHERE t.workload_key = ? AND {condition} "
                f"ORDER BY t.id", (key, *params))
                if (found := self._top_of(row, version, 1))]
            if bests:
                return min(bests, key=lambda r: r.cost)
        return None

    @named_by_file
    def history(self, task) -> list[tuple[int, float, float | None]]:
        """The best-so-far curve of `task`: (trial number, timestamp, best GFLOPS so far)
        for every record but the batches' controls, in logging order (all template
        versions); GFLOPS on the task's scale (records.scaled_cost)."""
        best, out = None, []
        trials = (r for r in self.records(task) if r.role != "control")
        for n, r in enumerate(trials, start=1):
            if r.ok and r.gflops is not None and math.isfinite(r.scaled_cost):
                gflops = r.gflops * r.mean_cost / r.scaled_cost
                best = gflops if best is None else max(best, gflops)
            out.append((n, r.timestamp, best))
        return out

    @named_by_file
    def failures(self, task=None) -> dict[str, int]:
        """Failed records by error kind, of one task or of the whole log."""
        where, params = "WHERE error_no != 0", ()
        if task is not None:
            where += f" AND task_id = (SELECT t.id FROM tasks t WHERE {_OF_TASK})"
            params = _task_key(task)
        rows = self.conn.execute(f"SELECT error_no, COUNT(*) FROM records {where} "
                                 "GROUP BY error_no ORDER BY error_no", params).fetchall()
        return {error_name(code): n for code, n in rows}

    @named_by_file
    def count(self) -> int:
        """The number of records in the log."""
        return self.db["records"].count

    # ------------------------------------------------------------------ rows as stored

    @named_by_file
    def task_rows(self, task=None) -> list[dict]:
        """The rows of `tasks` (every column, as stored), of `task` or of every task, in
        the order they were added."""
        if task is None:
            return self._rows("SELECT * FROM tasks ORDER BY id")
        return self._rows(f"SELECT * FROM tasks t WHERE {_OF_TASK}", _task_key(task))

    @named_by_file
    def run_rows(self) -> list[dict]:
        """The rows of `runs` (every column, as stored), in the order they were started."""
        return self._rows("SELECT * FROM runs ORDER BY id")

    @named_by_file
    def record_rows(self, task=None, best_only: bool = False) -> list[dict]:
        """The rows of `records` (every column, as stored: JSON text, NULLs), of `task` or
        of every task, in logging order.

        best_only: only the best valid row of each task made with the template's current
          version (the registered one, or the task's latest when the template is not
          registered here), as ApplyHistoryBest would pick it, in task order.
        """
        if best_only:
            return [row for row in map(self._best_row, self.task_rows(task)) if row is not None]
        if task is None:
            return self._rows(_SELECT + "ORDER BY r.id")
        return self._rows(_SELECT + f"WHERE {_OF_TASK} ORDER BY r.id", _task_key(task))

    @named_by_file
    def add_task(self, columns: dict) -> int:
        """The id of the task (workload_key, target) of `columns` (a dict with the keys of
        schema.TASK_COLUMNS), inserted from them when the log lacks it; a task the log
        has is left as it is."""
        with self.transaction():
            return self._task_id(columns, update_version=False)

    @named_by_file
    def add_run(self, columns: dict) -> int:
        """The id of the run (start, tuner, host) of `columns` (a dict with the keys of
        schema.RUN_COLUMNS), inserted from them when the log lacks it: runs have no uid,
        and the start time of a session on one host is as good as one."""
        with self.transaction():
            row = self.conn.execute(
                "SELECT id FROM runs WHERE start = ? AND tuner IS ? AND host IS ?",
                (columns["start"], columns["tuner"], columns["host"])).fetchone()
            return row[0] if row is not None else self._insert("runs", schema.RUN_COLUMNS,
                                                               columns)

    @named_by_file
    def insert_records(self, rows) -> int:
        """Insert `records` rows (dicts with the keys of schema.RECORD_COLUMNS, task_id
        and run_id ids of this log) in one transaction (or the caller's), skipping those
        whose uid the log has; returns how many were added."""
        columns = schema.RECORD_COLUMNS
        with self.transaction():
            before = self.conn.total_changes
            self.conn.executemany(
                f"INSERT OR IGNORE INTO records ({', '.join(columns)}) VALUES "
                f"({', '.join('?' * len(columns))})",
                (tuple(row[c] for c in columns) for row in rows))
            return self.conn.total_changes - before


def _task_key(task) -> tuple[str, str]:
    """The parameters of _OF_TASK for `task`."""
    return task.workload_key, str(task.target)


def _task_columns(task) -> dict:
    """The row of `tasks` (schema.TASK_COLUMNS) that describes `task`."""
    return {"template": task.name, "args": json.dumps(list(task.args)),
            "target": str(task.target), "workload_key": task.workload_key,
            "cpu": task.target.mcpu, "vector_bits": task.target.vector_bits,
            "flop": int(task.flop), "space_size": len(task.config_space),
            "template_version": task.template.version}


def _current_version(task_row: dict) -> str:
    """The registered template's version, or the task's latest when it is not registered."""
    try:
        return get_template(task_row["template"]).version
    except SpaceError:
        return task_row["template_version"]


def _fits(record: Record) -> bool:
    try:
        _ = record.config  # decoding the knobs against the space is the check
        return True
    except SpaceError as err:
        warnings.warn(f"record {record.id} of {record.template}{record.args} no longer fits "
                      f"the template's space and is skipped: {err}", stacklevel=4)
        return False
