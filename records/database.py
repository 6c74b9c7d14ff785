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
from .record import Record, _tuple, error_name

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
    if "locked" in text:
        return (f"{text}: another process kept writing to it for longer than the timeout "
                f"this Database was opened with")
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
        self.upgraded_from: tuple[int, str] | None = None  # (old version, its backup)
        self._knob_texts: dict[str, dict] = {}  # see _config_text
        try:
            self._open(timeout)
        except BaseException:
            conn.close()
            raise

    @_guarded
    def _open(self, timeout: float) -> None:
        self.db = sqlite_utils.Database(self.conn)
        self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        # Refuse a foreign or newer file before anything writes to it (even the switch
        # to WAL rewrites its header).
        version = self._log_version()
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across crashes
        self.conn.execute("PRAGMA foreign_keys = ON")
        if version == schema.SCHEMA_VERSION:
            return  # nothing to write: opening never waits for another process's batch
        with self._write():
            version = self._log_version()  # again: another process may have changed it
            if version is None:
                schema.create(self.conn)
            elif version < schema.SCHEMA_VERSION:
                self._upgrade(version)

    def _log_version(self) -> int | None:
        """The log's schema version (None for an empty database); a RecordsError for a
        database that is not a log or was written by a newer autosched."""
        tables = {row[0] for row in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        if "meta" not in tables or "records" not in tables:
            raise RecordsError(f"{self.path} is a SQLite database but not an autosched "
                               f"log (its tables are {', '.join(sorted(tables))})")
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise RecordsError(f"{self.path}: the log has no valid schema version")
        version = int(row[0])
        if version > schema.SCHEMA_VERSION:
            raise RecordsError(f"{self.path} was written by a newer autosched (log schema "
                               f"version {version}; this one knows up to "
                               f"{schema.SCHEMA_VERSION}); upgrade autosched to read it")
        return version

    def _upgrade(self, version: int) -> None:
        """Back the file up, then run every upgrade from `version`; called inside the
        write transaction, so no other process writes between the backup and the
        upgrade, and a failed upgrade leaves the file as it was."""
        backup = f"{self.path}.schema-v{version}.bak"
        n = 1
        while os.path.exists(backup):
            backup, n = f"{self.path}.schema-v{version}.{n}.bak", n + 1
        # Copied through a second connection: SQLite cannot back up through the one
        # that holds the write transaction, and that transaction keeps the committed
        # state the second one reads from changing.
        source, dest = sqlite3.connect(self.path), sqlite3.connect(backup)
        try:
            source.backup(dest)
        finally:
            dest.close()
            source.close()
        for v in range(version, schema.SCHEMA_VERSION):
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
            self.conn.execute("COMMIT")
        except BaseException:
            # SQLite rolls some errors (a full disk, a corrupt page) back by itself; a
            # second ROLLBACK would then hide the first error behind its own.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

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
        rows = _record_rows(task, inputs, results, tuner, run_id,
                            self._knob_texts)  # before taking the write lock
        with self._write():
            task_id = self._task_id(task)
            for row in rows:
                row[0] = task_id
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

    def _decode(self, rows: list[dict]) -> list[Record]:
        """Records from rows of _SELECT; a row whose JSON or numbers are damaged (a
        corrupt file, a hand edit) is a RecordsError naming it."""
        out = []
        for row in rows:
            try:
                out.append(Record.from_row(row))
            except (ValueError, TypeError, KeyError, AttributeError) as err:
                raise RecordsError(f"{self.path}: record {row.get('id')} cannot be read "
                                   f"({type(err).__name__}: {err}); the file is corrupt or "
                                   f"was edited by hand") from None
        return out

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
                row["id"], row["template"], _tuple(json.loads(row["args"])), row["target"],
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
        return self._decode(self._rows(_SELECT + "WHERE r.task_id = ? ORDER BY r.id",
                                       (task_id,)))

    def _best_rows(self, task_id: int, version: str, limit: int) -> list[dict]:
        return self._rows(_SELECT + "WHERE r.task_id = ? AND r.template_version = ? AND "
                          "r.error_no = 0 AND r.mean_cost IS NOT NULL "
                          "ORDER BY r.mean_cost LIMIT ?", (task_id, version, limit))

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
            out = [r for r in self._decode(rows) if _fits(r)][:k]
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

    # ------------------------------------------------------------------ moving records

    def export_jsonl(self, out, best_only: bool = False, task=None) -> int:
        """See records.jsonl.export_jsonl: JSON lines, one self-describing record each."""
        from .jsonl import export_jsonl
        return export_jsonl(self, out, best_only=best_only, task=task)

    def import_jsonl(self, source, strict: bool = False):
        """See records.jsonl.import_jsonl: valid lines in one transaction, bad ones
        reported by line number (or, strict, nothing imported)."""
        from .jsonl import import_jsonl
        return import_jsonl(self, source, strict=strict)

    def merge(self, other) -> int:
        """See records.jsonl.merge: every task and record of the log file `other`."""
        from .jsonl import merge
        return merge(self, other)

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


def _config_text(config, knob_texts: dict) -> str:
    """`json.dumps(config.to_json()["knobs"])`, put together from the JSON text of each
    knob's value, which `knob_texts` keeps per space (by fingerprint): a space has far
    fewer knob values than configs, and encoding every config anew was most of the time
    that add() took."""
    space = config.space
    texts = knob_texts.setdefault(space.fingerprint, {})
    parts = []
    for (name, knob), i in zip(space.space_map.items(), config.knob_indices):
        text = texts.get((name, i))
        if text is None:
            text = texts[name, i] = f"{json.dumps(name)}: {json.dumps(knob[i].to_json())}"
        parts.append(text)
    return "{" + ", ".join(parts) + "}"


def _record_rows(task, inputs, results, tuner, run_id, knob_texts: dict) -> list[list]:
    """The `records` rows (RECORD_COLUMNS) of one measured batch; each row's task id,
    its first column, is left for the caller to fill in."""
    key, target, flop = task.workload_key, str(task.target), task.flop  # once per batch
    rows = []
    for inp, res in zip(inputs, results):
        config = inp.config
        config_text = _config_text(config, knob_texts)
        costs = json.dumps([float(c) for c in res.costs])
        error_no = int(res.error_no)
        # No mean (NULL) for a failure, and for a "success" without finite timings,
        # which best() must never pick.
        mean = sum(res.costs) / len(res.costs) if error_no == 0 and res.costs else None
        if mean is not None and not math.isfinite(mean):
            mean = None
        gflops = flop / mean / 1e9 if flop and mean is not None and mean > 0 else None
        uid = schema.record_uid(key, target, config_text, res.timestamp, res.host, costs,
                                error_no)
        rows.append([None, config_text, config.index, config.template_version, costs, mean,
                     gflops, error_no, res.error_msg, res.build_time,
                     getattr(res, "run_time", None), getattr(res, "verify_time", None),
                     res.timestamp, res.host, tuner, run_id, uid])
    return rows

