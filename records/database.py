"""Database: the tuning log, one SQLite file (through sqlite-utils): opening it and
writing to it; what it answers (a task's best, its records, the rows as stored) is
LogQueries' (records/queries.py), which Database is.

Writes are whole batches: `add(task, inputs, results)` is one `BEGIN IMMEDIATE`
transaction, committed before it returns, so a process killed at any moment loses at
most the batch it was writing and never leaves a half-written one. WAL mode and a busy
timeout let several processes tune into one file at once: readers never wait, writers
take turns.

The log holds data only: configs are JSON knob values, results are numbers and text;
opening or importing a log never unpickles or evaluates anything.

Moving records between logs (records.jsonl) goes through public methods: every row of
a table as stored (LogQueries), `transaction()`, and the inserts of the last section.
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from contextlib import contextmanager

import sqlite_utils

from . import confirmations, schema
from .encode import BatchEncoder
from .errors import RecordsError, named_by_file
from .queries import OF_TASK, LogQueries, task_key


class Database(LogQueries):
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
            row = self.conn.execute(f"SELECT t.id FROM tasks t WHERE {OF_TASK}",
                                    task_key(task)).fetchone()
            return None if row is None else confirmations.insert(
                self.conn, row[0], ranking, rounds, seconds, run_id, host)

    def _task_id(self, columns: dict, update_version: bool) -> int:
        """The id of the task (workload_key, target) of `columns` (a row of
        schema.TASK_COLUMNS), inserted from them when the log lacks it; update_version:
        an existing task's template version becomes that of `columns`."""
        row = self.conn.execute(f"SELECT t.id, t.template_version FROM tasks t WHERE {OF_TASK}",
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


def _task_columns(task) -> dict:
    """The row of `tasks` (schema.TASK_COLUMNS) that describes `task`."""
    return {"template": task.name, "args": json.dumps(list(task.args)),
            "target": str(task.target), "workload_key": task.workload_key,
            "cpu": task.target.mcpu, "vector_bits": task.target.vector_bits,
            "flop": int(task.flop), "space_size": len(task.config_space),
            "template_version": task.template.version}

