"""The tuning log's SQLite schema, its version, and upgrades from older versions.

Version history:
1. tasks, records, runs and their indexes.
2. records.verify_time (seconds spent checking the outputs) and records.uid, a hash of
   what identifies one measurement, unique, so that importing or merging the same
   records twice adds nothing.
3. The honest best (tuner/control.py, tuner/confirm.py): records.role ("trial",
   "fallback": the untuned baseline, "control": the batch's control), records.ratio (the
   mean cost over the control's in the same batch) and records.scaled_cost (the cost
   chained to the task-wide scale, what configs are ranked by; a version-2 record keeps
   its mean cost there), and the tables confirmations (one re-timing of a task's top
   configs and fallback in alternating rounds) and confirmed (its ranking).

An older file is upgraded in place, inside one transaction, after a backup copy of it
is written next to it (`NAME.schema-vN.bak`). A newer file is refused: this code would
not know what its columns mean, and so is a file that is not a log.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3

from .errors import RecordsError

SCHEMA_VERSION = 3
SQLITE_HEADER = b"SQLite format 3\x00"

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

# The columns a row of each table is written with (all but its id): every INSERT of the
# log, and every import, names them from here.
TASK_COLUMNS = ("template", "args", "target", "workload_key", "cpu", "vector_bits", "flop",
                "space_size", "template_version")
RUN_COLUMNS = ("start", "end", "tuner", "options", "trials", "best_gflops", "host")
RECORD_COLUMNS = ("task_id", "config", "config_index", "template_version", "costs",
                  "mean_cost", "gflops", "error_no", "error_msg", "build_time", "run_time",
                  "verify_time", "timestamp", "host", "tuner", "run_id", "uid", "role",
                  "ratio", "scaled_cost")
ROLES = ("trial", "fallback", "control")


def costs_text(costs) -> str:
    """The `costs` column of a record: its seconds as a JSON list of floats. It is part of
    the record's uid, so a record added and the same record imported spell it alike."""
    return json.dumps([float(c) for c in costs])


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


CONFIRMATIONS = """
CREATE TABLE confirmations (
    id INTEGER PRIMARY KEY,
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    run_id INTEGER REFERENCES runs(id),
    template_version TEXT NOT NULL,   -- of the configs it re-timed
    through_record INTEGER NOT NULL,  -- the task's last record then: later ones may be better
    rounds INTEGER NOT NULL,
    seconds REAL,                     -- wall time the re-timing took
    timestamp REAL NOT NULL,
    host TEXT
)"""

CONFIRMED = """
CREATE TABLE confirmed (
    confirmation_id INTEGER NOT NULL REFERENCES confirmations(id),
    rank INTEGER NOT NULL,            -- 1: the confirmed best
    record_id INTEGER NOT NULL REFERENCES records(id),  -- a record of the config
    cost REAL NOT NULL,               -- median seconds per call over the rounds
    ratio REAL,                       -- median over rounds of cost / the fallback's
    costs TEXT NOT NULL,              -- JSON list: seconds per call in each round
    fallback INTEGER NOT NULL,        -- 1 for the untuned fallback config
    PRIMARY KEY (confirmation_id, rank)
)"""


def _upgrade_2_to_3(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE records ADD COLUMN role TEXT NOT NULL DEFAULT 'trial'")
    conn.execute("ALTER TABLE records ADD COLUMN ratio REAL")
    conn.execute("ALTER TABLE records ADD COLUMN scaled_cost REAL")
    # A version-2 record was never compared with a control: its own time is its scale.
    conn.execute("UPDATE records SET scaled_cost = mean_cost")
    conn.execute("DROP INDEX IF EXISTS records_best")
    # the ranking: one task, one template version, no error, cheapest on the scale first
    conn.execute("CREATE INDEX records_rank ON records "
                 "(task_id, template_version, error_no, scaled_cost)")
    conn.execute(CONFIRMATIONS)
    conn.execute(CONFIRMED)
    conn.execute("CREATE INDEX confirmations_task ON confirmations (task_id, id)")


UPGRADES = {1: _upgrade_1_to_2, 2: _upgrade_2_to_3}  # from version N to N + 1


def create(conn: sqlite3.Connection) -> None:
    """Create every table and index of the current version in an empty database."""
    for sql in (META, TASKS, RUNS, RECORDS_V1, *INDEXES_V1):
        conn.execute(sql)
    _upgrade_1_to_2(conn)
    _upgrade_2_to_3(conn)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                 (str(SCHEMA_VERSION),))


def create_v1(conn: sqlite3.Connection) -> None:
    """A database as version 1 wrote it (for tests of the upgrade)."""
    for sql in (META, TASKS, RUNS, RECORDS_V1, *INDEXES_V1):
        conn.execute(sql)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', '1')")


def create_v2(conn: sqlite3.Connection) -> None:
    """A database as version 2 wrote it (for tests of the upgrade)."""
    create_v1(conn)
    _upgrade_1_to_2(conn)
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")


def check_header(path: str) -> None:
    """A RecordsError unless `path` is missing, empty or starts like a SQLite database:
    checked before SQLite opens it, which would write to a file that is none."""
    if os.path.isdir(path):
        raise RecordsError(f"{path} is a directory, not a tuning log")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        raise RecordsError(f"{path} is not a SQLite database (an autosched tuning log is one); "
                           f"refusing to touch it")


def log_version(conn: sqlite3.Connection, path: str) -> int | None:
    """The schema version of the log `conn` has open (None for an empty database); a
    RecordsError naming `path` for a database that is not a log or was written by a
    newer autosched."""
    tables = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if "meta" not in tables or "records" not in tables:
        raise RecordsError(f"{path} is a SQLite database but not an autosched "
                           f"log (its tables are {', '.join(sorted(tables))})")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None or not str(row[0]).isdigit():
        raise RecordsError(f"{path}: the log has no valid schema version")
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise RecordsError(f"{path} was written by a newer autosched (log schema "
                           f"version {version}; this one knows up to "
                           f"{SCHEMA_VERSION}); upgrade autosched to read it")
    return version


def upgrade(conn: sqlite3.Connection, path: str, version: int) -> str:
    """Back the log at `path` up, then run every upgrade from `version` on `conn`; returns
    the backup's path. Called inside the write transaction, so no other process writes
    between the backup and the upgrade, and a failed upgrade leaves the file as it was."""
    backup = f"{path}.schema-v{version}.bak"
    n = 1
    while os.path.exists(backup):
        backup, n = f"{path}.schema-v{version}.{n}.bak", n + 1
    # Copied through a second connection: SQLite cannot back up through the one that
    # holds the write transaction, and that transaction keeps the committed state the
    # second one reads from changing.
    source, dest = sqlite3.connect(path), sqlite3.connect(backup)
    try:
        source.backup(dest)
    finally:
        dest.close()
        source.close()
    for v in range(version, SCHEMA_VERSION):
        UPGRADES[v](conn)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                 (str(SCHEMA_VERSION),))
    return backup
