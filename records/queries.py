"""LogQueries: the read side of the tuning log (records/database.py's Database is one:
it opens the file and writes to it; these methods only read it, through its `conn`).

Which config is a task's best: the first of its latest confirmation (tuner/confirm.py: its
top configs and the fallback re-timed in alternating rounds), as long as no valid record
was logged after it; otherwise the cheapest on the task's scale (records.scaled_cost,
tuner/control.py), and the task counts as unconfirmed. `top`, `best`, `ranked`,
`best_for_target` and the task summaries answer it; `records`, `history` and `failures`
read a task's whole log; the "rows as stored" methods give every column as it is kept,
for moving records between logs (records.jsonl).

Tasks are duck-typed (the records layer does not import the tuner): anything with
`name`, `args`, `target` (a compiler.Target), `workload_key`, `flop`, `config_space`
and `template.version`, as tuner.Task has.
"""
from __future__ import annotations

import dataclasses
import math
import sqlite3
import warnings

from search_spaces import SpaceError, get_template

from . import confirmations
from .error_codes import error_name
from .errors import RecordsError, named_by_file
from .record import Record, TaskSummary, decode_args
from .workload import workload_key

_SELECT = ("SELECT r.*, t.template, t.args, t.target FROM records r "
           "JOIN tasks t ON t.id = r.task_id ")
OF_TASK = "t.workload_key = ? AND t.target = ?"  # one task (task_key), `t` a row of tasks
# The valid records of the tasks that {tasks} (a condition on `t`) selects, made with one
# template version, cheapest on the task's scale first (a batch's control is a second
# timing of a config ranked already): the ranking the tuner keeps, and what best, top,
# ApplyHistoryBest, the task summaries and a best-only export fall back on for a task
# without a current confirmation. The index records_rank answers it.
_BEST = (_SELECT + "WHERE {tasks} AND r.template_version = ? AND r.error_no = 0 AND "
         "r.scaled_cost IS NOT NULL AND r.role != 'control' ORDER BY r.scaled_cost, r.id")


class LogQueries:
    """The queries of an open tuning log (see the module docstring); the class that
    opens the file (Database) sets `path`, `conn` (a sqlite3 connection) and `db` (its
    sqlite_utils.Database)."""

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
            _SELECT + f"WHERE {OF_TASK} ORDER BY r.id", task_key(task))]

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
        return self._best_records(OF_TASK, task_key(task), task.template.version, k)

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
        looked for in tiers: tasks of the same target, else of the same CPU and vector
        width (another -mattr or core count), else of the
        same vector width (the ISA compatibility class); within a tier the cheapest of
        its tasks' bests (a confirmed time counts as the task's time). None when no tier
        has one."""
        name, args = workload
        version = get_template(name).version
        spelled, cpu = str(target), target.mcpu
        # each tier leaves out the tasks of the tiers before it, so that a record is
        # tried (and warned about) once
        tiers = (("t.target = ?", (spelled,)),
                 ("t.cpu = ? AND t.target != ? AND t.vector_bits = ?",
                  (cpu, spelled, target.vector_bits)),
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
            where += f" AND task_id = (SELECT t.id FROM tasks t WHERE {OF_TASK})"
            params = task_key(task)
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
        return self._rows(f"SELECT * FROM tasks t WHERE {OF_TASK}", task_key(task))

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
        return self._rows(_SELECT + f"WHERE {OF_TASK} ORDER BY r.id", task_key(task))


def task_key(task) -> tuple[str, str]:
    """The parameters of OF_TASK for `task`."""
    return task.workload_key, str(task.target)


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
