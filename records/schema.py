"""The tuning log's SQLite schema, its version, and upgrades from older versions.

Version history:
1. tasks, records, runs and their indexes.
2. records.verify_time (seconds spent checking the outputs) and records.uid, a hash of
   what identifies one measurement, unique, so that importing or merging the same
   records twice adds nothing.

An older file is upgraded in place, inside one transaction, after a backup copy of it
is written next to it (`NAME.schema-vN.bak`). A newer file is refused: this code would
not know what its columns mean.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3

SCHEMA_VERSION = 2

TASKS = """
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY,
    template TEXT NOT NULL,
    args TEXT NOT NULL,               -- JSON list
    target TEXT NOT NULL,             -- canonical target string
    workload_key TEXT NOT NULL,       -- JSON [template, args]
    cpu TEXT NOT NULL,                -- LLVM CPU name of the target
    vector_bits INTEGER NOT NULL,     -- widest SIMD register: the ISA compatibility class
    flop INTEGER,
    space_size INTEGER,
    template_version TEXT NOT NULL,   -- of the latest records added
    UNIQUE (workload_key, target)
)"""

RUNS = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    start REAL NOT NULL,
    end REAL,
    tuner TEXT,
    options TEXT,                     -- JSON
    trials INTEGER,
    best_gflops REAL,
    host TEXT
)"""

RECORDS_V1 = """
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    config TEXT NOT NULL,             -- JSON {knob: value}
    config_index INTEGER,
    template_version TEXT NOT NULL,
    costs TEXT NOT NULL,              -- JSON list of seconds
    mean_cost REAL,                   -- NULL for a failed measurement
    gflops REAL,
    error_no INTEGER NOT NULL,
    error_msg TEXT,
    build_time REAL,
    run_time REAL,
    timestamp REAL NOT NULL,
    host TEXT,
    tuner TEXT,
    run_id INTEGER REFERENCES runs(id)
)"""

INDEXES_V1 = [
    # best lookup: one task, current template version, no error, cheapest first
    "CREATE INDEX IF NOT EXISTS records_best ON records "
    "(task_id, template_version, error_no, mean_cost)",
    "CREATE INDEX IF NOT EXISTS records_task_time ON records (task_id, timestamp)",
    "CREATE INDEX IF NOT EXISTS records_run ON records (run_id)",
]

META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def record_uid(workload_key: str, target: str, config: str, timestamp: float, host: str,
               costs: str, error_no: int) -> str:
    """What identifies one measurement, hashed: the same record imported twice is one."""
    text = json.dumps([workload_key, target, config, repr(float(timestamp)), host, costs,
                       int(error_no)])
    return hashlib.sha1(text.encode()).hexdigest()


def _upgrade_1_to_2(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE records ADD COLUMN verify_time REAL")
    conn.execute("ALTER TABLE records ADD COLUMN uid TEXT")
    rows = conn.execute(
        "SELECT r.id, t.workload_key, t.target, r.config, r.timestamp, r.host, r.costs, "
        "r.error_no FROM records r JOIN tasks t ON t.id = r.task_id").fetchall()
    conn.executemany("UPDATE records SET uid = ? WHERE id = ?",
                     [(record_uid(*row[1:]), row[0]) for row in rows])
    # Version 1 kept a measurement logged twice (a log imported twice) twice; from
    # version 2 on it is one record. The first copy stays (the backup keeps them all);
    # otherwise the unique index below fails and the log could never be opened again.
    conn.execute("DELETE FROM records WHERE id NOT IN "
                 "(SELECT MIN(id) FROM records GROUP BY uid)")
    conn.execute("CREATE UNIQUE INDEX records_uid ON records (uid)")


UPGRADES = {1: _upgrade_1_to_2}  # from version N to N + 1


def create(conn: sqlite3.Connection) -> None:
    """Create every table and index of the current version in an empty database."""
    for sql in (META, TASKS, RUNS, RECORDS_V1, *INDEXES_V1):
        conn.execute(sql)
    _upgrade_1_to_2(conn)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                 (str(SCHEMA_VERSION),))


def create_v1(conn: sqlite3.Connection) -> None:
    """A database as version 1 wrote it (for tests of the upgrade)."""
    for sql in (META, TASKS, RUNS, RECORDS_V1, *INDEXES_V1):
        conn.execute(sql)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '1')")
