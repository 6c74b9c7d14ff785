"""The confirmations of the tuning log: writing one, and finding a task's current one.

A confirmation (tuner/confirm.py) re-timed a task's top configs and its fallback side by
side; its ranking is the task's best for as long as it is current: made with the
template's current version, and no valid record other than a control logged after it
(a later record may be better, and was never re-timed against the others). These are
plain functions of a sqlite3 connection that Database calls inside its transactions.
"""
from __future__ import annotations

import socket
import sqlite3
import time

from . import schema

# The ranking of one confirmation, with the record of each config it re-timed.
CONFIRMED = ("SELECT r.*, t.template, t.args, t.target, f.rank AS confirmed_rank, "
             "f.cost AS confirmed_cost, f.ratio AS confirmed_ratio FROM confirmed f "
             "JOIN records r ON r.id = f.record_id JOIN tasks t ON t.id = r.task_id "
             "WHERE f.confirmation_id = ? ORDER BY f.rank")
CONFIRMATION_COLUMNS = ("task_id", "run_id", "template_version", "through_record", "rounds",
                        "seconds", "timestamp", "host")


def insert(conn: sqlite3.Connection, task_id: int, ranking, rounds: int,
           seconds: float | None, run_id: int | None, host: str | None) -> int | None:
    """Insert a confirmation of task `task_id` (see Database.add_confirmation) and its
    ranking; the caller holds the write transaction. Returns its id, None when no entry
    of `ranking` has a valid record of its config in the log."""
    found = []
    for entry in ranking:
        record = conn.execute(
            "SELECT id FROM records WHERE task_id = ? AND config_index = ? AND "
            "template_version = ? AND error_no = 0 ORDER BY role = 'control', "
            "scaled_cost, id LIMIT 1",
            (task_id, entry.config.index, entry.config.template_version)).fetchone()
        if record is not None:
            found.append((record[0], entry))
    if not found:
        return None
    through = conn.execute("SELECT MAX(id) FROM records WHERE task_id = ?",
                           (task_id,)).fetchone()[0]
    values = (task_id, run_id, found[0][1].config.template_version, through, rounds,
              seconds, time.time(), host or socket.gethostname())
    cid = conn.execute(f"INSERT INTO confirmations ({', '.join(CONFIRMATION_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(values))})", values).lastrowid
    conn.executemany(
        "INSERT INTO confirmed (confirmation_id, rank, record_id, cost, ratio, costs, "
        "fallback) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(cid, rank, record_id, entry.cost, entry.ratio, schema.costs_text(entry.costs),
          int(bool(entry.fallback))) for rank, (record_id, entry) in enumerate(found, start=1)])
    return cid


def current_id(conn: sqlite3.Connection, task_id: int, version: str) -> int | None:
    """The id of the current confirmation of task `task_id` for template `version`, or
    None (see the module docstring)."""
    row = conn.execute("SELECT id, through_record FROM confirmations WHERE task_id = ? AND "
                       "template_version = ? ORDER BY id DESC LIMIT 1",
                       (task_id, version)).fetchone()
    if row is None:
        return None
    newer = conn.execute(
        "SELECT 1 FROM records WHERE task_id = ? AND template_version = ? AND "
        "error_no = 0 AND role != 'control' AND id > ? LIMIT 1",
        (task_id, version, row[1])).fetchone()
    return None if newer else row[0]
