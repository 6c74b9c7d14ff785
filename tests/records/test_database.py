"""Database (records/database.py): the tuning log in one SQLite file, on real files in
tmp_path. Batches are made up (records_check.measured): what is tested is what the log
keeps and gives back, never a timing."""
from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time

import pytest

import records
from records import RecordsError, schema
from records_check import matmul, measured
from tuner import MeasureErrorNo, MeasureResult


@pytest.fixture
def path(tmp_path):
    return tmp_path / "tune.db"


@pytest.fixture
def db(path):
    with records.Database(path) as opened:
        yield opened


@pytest.fixture(scope="module")
def task():
    return matmul()


@pytest.fixture(scope="module")
def other_task():
    return matmul((32, 32, 32))


def statements(db, call) -> list[str]:
    """The SQL statements (parameters filled in) that call() runs on db's connection."""
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        db.conn.set_trace_callback(None)
    return seen


def record_queries(db, call) -> list[str]:
    """The queries of `records` among the statements that call() runs."""
    return [s for s in statements(db, call) if s.startswith("SELECT") and " records r " in s]


# ---------------------------------------------------------------------------- the file

def test_a_new_log_has_its_schema_version_tables_wal_and_busy_timeout(tmp_path):
    with records.Database(tmp_path / "new.db", timeout=7.5) as db:
        tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master "
                                                "WHERE type = 'table'")}
        assert {"tasks", "records", "runs", "meta"} <= tables
        assert db.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                               ).fetchone()[0] == str(records.SCHEMA_VERSION)
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7500
        assert db.upgraded_from is None


def test_best_top_and_the_records_of_a_task_search_an_index(db, task, other_task):
    for t in (task, other_task):
        db.add(t, *measured(t, [1e-3 * (i + 1) for i in range(30)]))
    for call in (lambda: db.best(task), lambda: db.top(task, 5), lambda: db.records(task)):
        queries = record_queries(db, call)
        assert queries
        for sql in queries:
            plan = [row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert not any(step.startswith(("SCAN r", "SCAN records")) for step in plan), plan
            assert any(step.startswith("SEARCH r USING") and "INDEX" in step
                       for step in plan), plan


def test_a_log_that_is_reopened_keeps_everything(path, task):
    with records.Database(path) as db:
        db.add(task, *measured(task, [2e-3, 1e-3]))
        want = db.records(task)
    with records.Database(path) as db:
        assert db.records(task) == want
        assert db.upgraded_from is None


# ---------------------------------------------------------------------------- writing

def test_each_batch_is_one_transaction_committed_before_add_returns(db, path, task):
    inputs, results = measured(task, [1e-3] * 25)
    ran = statements(db, lambda: db.add(task, inputs, results))
    assert [s for s in ran if s.split()[0] in ("BEGIN", "COMMIT", "ROLLBACK")] == [
        "BEGIN IMMEDIATE", "COMMIT"]
    other = sqlite3.connect(path)  # another connection sees all of it at once
    assert other.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 25
    other.close()


def test_add_returns_how_many_records_were_new(db, task):
    inputs, results = measured(task, [1e-3, 2e-3, None], seed=4)
    assert db.add(task, inputs, results) == 3
    assert db.add(task, inputs, results) == 0  # the same measurements again: nothing new
    assert db.count() == 3


def test_a_batch_that_fails_half_way_leaves_nothing_and_the_log_usable(db, path, task):
    db.add(task, *measured(task, [1e-3] * 5, seed=1))
    pages = db.conn.execute("PRAGMA page_count").fetchone()[0]
    db.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the disk fills up mid-batch
    with pytest.raises(RecordsError, match=re.escape(str(path)) + ".*full"):
        db.add(task, *measured(task, [1e-3] * 2000, seed=2))
    assert db.count() == 5
    db.conn.execute("PRAGMA max_page_count = 1073741823")
    assert db.add(task, *measured(task, [1e-3] * 5, seed=3)) == 5
    assert db.count() == 10


def test_a_writer_waits_for_another_writer_up_to_the_busy_timeout(path, task):
    records.Database(path).close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of its batch
    with records.Database(path, timeout=0.2) as impatient:
        assert impatient.count() == 0  # opening and reading never wait for a writer
        with pytest.raises(RecordsError, match=re.escape(str(path)) + ".*locked"):
            impatient.add(task, *measured(task, [1e-3]))
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    with records.Database(path, timeout=30) as patient:
        start = time.monotonic()
        assert patient.add(task, *measured(task, [1e-3, 2e-3])) == 2
        assert time.monotonic() - start >= 0.2
        assert patient.count() == 2
    holder.close()


def test_a_run_is_logged_from_start_to_end(db, task):
    before = time.time()
    run = db.start_run("xgb", {"trials": 2, "seed": 3})
    db.add(task, *measured(task, [1e-3, 2e-3]), tuner="xgb", run_id=run)
    db.end_run(run, trials=2, best_gflops=0.5)
    row = db.conn.execute("SELECT start, end, tuner, options, trials, best_gflops FROM runs "
                          "WHERE id = ?", (run,)).fetchone()
    assert before <= row[0] <= row[1] <= time.time()
    assert row[2:] == ("xgb", json.dumps({"trials": 2, "seed": 3}), 2, 0.5)
    assert [r.run_id for r in db.records(task)] == [run, run]


# ---------------------------------------------------------------------------- reading

def test_best_is_the_cheapest_valid_record_of_the_current_template(db, task, other_task):
    inputs, results = measured(task, [3e-3, 1e-3, 2e-3], seed=5)
    db.add(task, inputs, results)
    db.add(task, *measured(task, [None, None], seed=6, error=MeasureErrorNo.COMPILE_ERROR))
    db.add(task, *measured(task, [None], seed=7))  # "no error" but no time either
    db.add(other_task, *measured(other_task, [1e-6]))
    best = db.best(task)
    assert best.config == inputs[1].config
    assert best.mean_cost == pytest.approx(1e-3)
    assert best.gflops == pytest.approx(task.flop / 1e-3 / 1e9)
    assert best.timestamp == results[1].timestamp
    assert best.ok and best.error_name == "NO_ERROR"


def test_top_gives_the_k_cheapest_valid_records_cheapest_first(db, task):
    db.add(task, *measured(task, [5e-3, 1e-3, 4e-3, 2e-3, 3e-3], seed=8))
    db.add(task, *measured(task, [None], seed=9, error=MeasureErrorNo.RUNTIME_ERROR))
    assert [r.mean_cost for r in db.top(task, 3)] == pytest.approx([1e-3, 2e-3, 3e-3])
    assert len(db.top(task, 100)) == 5


def test_records_are_what_a_tuner_needs_to_resume_in_one_query(db, task):
    first = measured(task, [2e-3, 1e-3], seed=10)
    failed = measured(task, [None], seed=11, error=MeasureErrorNo.WRONG_ANSWER)
    last = measured(task, [3e-3], seed=12)
    for batch in (first, failed, last):
        db.add(task, *batch)
    logged = []
    assert len(record_queries(db, lambda: logged.extend(db.records(task)))) == 1
    inputs = first[0] + failed[0] + last[0]
    results = first[1] + failed[1] + last[1]
    assert [r.config for r in logged] == [i.config for i in inputs]
    assert [r.costs for r in logged] == [tuple(res.costs) for res in results]
    assert [r.error_no for r in logged] == [int(res.error_no) for res in results]
    assert [r.timestamp for r in logged] == [res.timestamp for res in results]
    assert logged[2].error_msg == "WRONG_ANSWER" and logged[2].mean_cost == float("inf")


def test_a_task_never_logged_has_nothing_and_is_not_added(db, task, other_task):
    db.add(task, *measured(task, [1e-3]))
    assert db.records(other_task) == []
    assert db.best(other_task) is None
    assert db.top(other_task, 3) == []
    assert db.history(other_task) == []
    assert db.failures(other_task) == {}
    assert [t.args for t in db.tasks()] == [task.args]


def test_history_is_the_best_so_far_in_logging_order(db, task):
    inputs, results = measured(task, [3e-3, 5e-3, 1e-3], seed=13)
    db.add(task, inputs[:2], results[:2])
    db.add(task, *measured(task, [None], seed=14, error=MeasureErrorNo.COMPILE_TIMEOUT))
    db.add(task, inputs[2:], results[2:])
    gflops = [task.flop / c / 1e9 for c in (3e-3, 5e-3, 1e-3)]
    history = db.history(task)
    assert [n for n, _, _ in history] == [1, 2, 3, 4]
    assert [b for _, _, b in history] == pytest.approx(
        [gflops[0], gflops[0], gflops[0], gflops[2]])
    assert history[3][1] == results[2].timestamp


def test_failures_count_each_error_kind_per_task_or_in_the_whole_log(db, task, other_task):
    E = MeasureErrorNo
    db.add(task, *measured(task, [1e-3]))
    db.add(task, *measured(task, [None] * 2, seed=1, error=E.COMPILE_ERROR))
    db.add(task, *measured(task, [None], seed=2, error=E.RUN_TIMEOUT))
    db.add(other_task, *measured(other_task, [None] * 3, error=E.COMPILE_ERROR))
    assert db.failures(task) == {"COMPILE_ERROR": 2, "RUN_TIMEOUT": 1}
    assert db.failures(other_task) == {"COMPILE_ERROR": 3}
    assert db.failures() == {"COMPILE_ERROR": 5, "RUN_TIMEOUT": 1}


def test_tasks_sum_up_each_task(db, task, other_task):
    db.add(task, *measured(task, [2e-3, 1e-3, 3e-3], seed=15))
    db.add(task, *measured(task, [None], seed=16, error=MeasureErrorNo.COMPILE_ERROR))
    db.add(other_task, *measured(other_task, [4e-3]))
    cheapest = db.best(task).id
    db.conn.execute("UPDATE records SET template_version = 'old' WHERE id = ?", (cheapest,))
    mine, other = db.tasks()
    assert (mine.template, mine.args, mine.target) == ("matmul", task.args, str(task.target))
    assert (mine.records, mine.errors, mine.stale) == (4, 1, 1)
    assert mine.best_cost == pytest.approx(2e-3)
    assert mine.best_gflops == pytest.approx(task.flop / 2e-3 / 1e9)
    assert (other.args, other.records, other.errors, other.stale) == (other_task.args, 1, 0, 0)


def test_records_of_another_template_version_are_never_best(db, task):
    inputs, results = measured(task, [1e-3, 2e-3])
    db.add(task, inputs, results)
    db.conn.execute("UPDATE records SET template_version = 'old' WHERE mean_cost < 1.5e-3")
    assert db.best(task).config == inputs[1].config
    assert [r.stale for r in db.records(task)] == [True, False]


def test_a_record_whose_config_no_longer_fits_is_skipped_with_a_warning(db, task):
    inputs, results = measured(task, [1e-3, 2e-3, 3e-3])
    db.add(task, inputs, results)
    knobs = dict(inputs[0].config.to_json()["knobs"], tile_x=[-1, 3, 7])  # 3 * 7 > 64
    db.conn.execute("UPDATE records SET config = ? WHERE mean_cost < 1.5e-3",
                    (json.dumps(knobs),))
    with pytest.warns(UserWarning, match=r"no longer fits.*skipped"):
        assert db.best(task).config == inputs[1].config
    with pytest.warns(UserWarning, match=r"no longer fits"):
        assert [r.config for r in db.top(task, 5)] == [inputs[1].config, inputs[2].config]
    assert len(db.records(task)) == 3  # skipped at lookup, never deleted


def test_a_record_with_damaged_fields_is_a_records_error(db, path, task):
    db.add(task, *measured(task, [1e-3, 2e-3]))
    db.conn.execute("UPDATE records SET costs = '[0.001, ' WHERE mean_cost < 1.5e-3")
    with pytest.raises(RecordsError, match=re.escape(str(path)) + r": record \d+ cannot be read"):
        db.records(task)


# ---------------------------------------------------------------------------- upgrades

def v1_log(path, task, costs, copies: int = 1, version: int = 1) -> None:
    """A log as schema version 1 (or `version` 2) wrote it: `task` with one record per
    cost (each logged `copies` times, as importing the same file twice did then)."""
    conn = sqlite3.connect(path)
    (schema.create_v2 if version == 2 else schema.create_v1)(conn)
    conn.execute("INSERT INTO tasks (template, args, target, workload_key, cpu, vector_bits, "
                 "flop, space_size, template_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (task.name, json.dumps(list(task.args)), str(task.target), task.workload_key,
                  task.target.mcpu, task.target.vector_bits, task.flop,
                  len(task.config_space), task.template.version))
    configs = task.config_space.sample(len(costs), seed=19)
    for i, (config, cost) in enumerate(zip(configs, costs)):
        for _ in range(copies):
            conn.execute(
                "INSERT INTO records (task_id, config, config_index, template_version, costs, "
                "mean_cost, gflops, error_no, error_msg, build_time, run_time, timestamp, "
                "host, tuner) VALUES (1, ?, ?, ?, ?, ?, ?, 0, '', 0.1, 0.2, ?, 'old', 'ga')",
                (json.dumps(config.to_json()["knobs"]), config.index, task.template.version,
                 json.dumps([cost]), cost, task.flop / cost / 1e9, 1.6e9 + i))
    conn.commit()
    conn.close()


def schema_of(path) -> tuple[str, int, list[str]]:
    """(schema version, record count, columns of records) of the log at `path`."""
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        count = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        columns = [r[1] for r in conn.execute("PRAGMA table_info(records)")]
        return version[0], count, columns
    finally:
        conn.close()


def test_an_older_log_is_backed_up_then_upgraded_in_place(path, task):
    v1_log(path, task, [3e-3, 1e-3, 2e-3])
    with records.Database(path) as db:
        old_version, backup = db.upgraded_from
        logged = db.records(task)
        assert db.best(task).mean_cost == pytest.approx(1e-3)
        uids = [r[0] for r in db.conn.execute("SELECT uid FROM records")]
    assert old_version == 1 and backup == f"{path}.schema-v1.bak"
    version, count, columns = schema_of(backup)
    assert (version, count) == ("1", 3) and "uid" not in columns
    version, count, columns = schema_of(path)
    assert (version, count) == (str(records.SCHEMA_VERSION), 3)
    assert {"uid", "verify_time"} <= set(columns)
    assert [r.mean_cost for r in logged] == pytest.approx([3e-3, 1e-3, 2e-3])
    assert all(uids) and len(set(uids)) == 3
    with records.Database(path) as again:  # upgraded once: no second backup
        assert again.upgraded_from is None
    assert sorted(os.listdir(path.parent)) == ["tune.db", "tune.db.schema-v1.bak"]


def test_an_older_log_with_a_record_logged_twice_upgrades_to_one_copy(path, task):
    v1_log(path, task, [3e-3, 1e-3], copies=2)
    with records.Database(path) as db:
        assert [r.mean_cost for r in db.records(task)] == pytest.approx([3e-3, 1e-3])
        _, backup = db.upgraded_from
    assert schema_of(backup)[:2] == ("1", 4)


def test_an_upgrade_that_fails_leaves_the_older_log_as_it_was(path, task, monkeypatch):
    v1_log(path, task, [3e-3, 1e-3])
    upgrade = schema.UPGRADES[1]

    def fails_half_way(conn):
        upgrade(conn)
        raise RuntimeError("power cut")

    monkeypatch.setitem(schema.UPGRADES, 1, fails_half_way)
    with pytest.raises(RuntimeError, match="power cut"):
        records.Database(path)
    version, count, columns = schema_of(path)
    assert (version, count) == ("1", 2) and "uid" not in columns


def test_a_second_upgrade_of_an_old_version_keeps_the_first_backup(path, task):
    v1_log(path, task, [1e-3])
    existing = f"{path}.schema-v1.bak"
    with open(existing, "w") as f:
        f.write("an older backup")
    with records.Database(path) as db:
        assert db.upgraded_from == (1, f"{path}.schema-v1.1.bak")
    with open(existing) as f:
        assert f.read() == "an older backup"


# ---------------------------------------------------------------------------- bad files

def real_log(path, task, other_task) -> bytes:
    """A closed log of a few hundred records; its bytes."""
    with records.Database(path) as db:
        for seed in range(4):
            for t in (task, other_task):
                db.add(t, *measured(t, [1e-3 * (1 + i % 7) for i in range(60)], seed=seed))
    return path.read_bytes()


def read_everything(path, tasks) -> None:
    """Open the log at `path` and ask it every question there is."""
    with records.Database(path) as db:
        db.tasks()
        db.count()
        db.failures()
        for t in tasks:
            for ask in (db.records, db.best, db.top, db.history, db.failures):
                ask(t)


def truncate_to_half(data: bytes) -> bytes:
    return data[:len(data) // 2]


def garbage_in_second_half(data: bytes) -> bytes:
    page = 4096
    pages = len(data) // page
    junk = bytes((i * 151 + 89) % 256 for i in range(page))
    out = bytearray(data)
    for n in range(pages // 2, pages, 2):
        out[n * page:(n + 1) * page] = junk
    return bytes(out)


def garbage_after_first_page(data: bytes) -> bytes:
    return data[:4096] + bytes(255 - b for b in data[4096:])


@pytest.mark.parametrize("damage", [truncate_to_half, garbage_in_second_half,
                                    garbage_after_first_page])
def test_a_damaged_log_is_a_records_error_that_names_it(path, task, other_task, damage):
    damaged = damage(real_log(path, task, other_task))
    path.write_bytes(damaged)
    with pytest.raises(RecordsError, match=re.escape(str(path)) + ".*corrupt"):
        read_everything(path, [task, other_task])
    assert path.read_bytes() == damaged


@pytest.mark.parametrize("content", [b"x", b"hello, not a database\n",
                                     b'{"input": ["matmul"], "result": [0.1]}\n' * 50,
                                     bytes(range(256)) * 40])
def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(path, content):
    path.write_bytes(content)
    with pytest.raises(RecordsError, match=re.escape(str(path)) + " is not a SQLite database"):
        records.Database(path)
    assert path.read_bytes() == content
    assert os.listdir(path.parent) == ["tune.db"]


def test_an_empty_file_becomes_a_new_log(path, task):
    path.write_bytes(b"")
    with records.Database(path) as db:
        db.add(task, *measured(task, [1e-3]))
        assert db.count() == 1


@pytest.mark.parametrize("tables", [
    ["CREATE TABLE songs (title TEXT)", "INSERT INTO songs VALUES ('la')"],
    ["CREATE TABLE meta (key TEXT, value TEXT)", "CREATE TABLE records (x)"],
    ["CREATE TABLE meta (key TEXT, value TEXT)", "CREATE TABLE records (x)",
     "INSERT INTO meta VALUES ('schema_version', 'two')"],
])
def test_a_sqlite_file_that_is_not_a_log_is_refused_and_left_alone(path, tables):
    conn = sqlite3.connect(path)
    for sql in tables:
        conn.execute(sql)
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(RecordsError, match=re.escape(str(path)) + ".*not an autosched log|"
                       "no valid schema version"):
        records.Database(path)
    assert path.read_bytes() == before


def test_a_log_of_a_newer_schema_is_refused_and_left_alone(path, task):
    with records.Database(path) as db:
        db.add(task, *measured(task, [1e-3, 2e-3]))
        db.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                        (str(records.SCHEMA_VERSION + 1),))
    before = path.read_bytes()
    with pytest.raises(RecordsError, match=re.escape(str(path)) + " was written by a newer"):
        records.Database(path)
    assert path.read_bytes() == before


def test_a_path_that_cannot_be_a_log_is_a_records_error(tmp_path):
    with pytest.raises(RecordsError, match="is a directory"):
        records.Database(tmp_path)
    with pytest.raises(RecordsError, match="cannot open"):
        records.Database(tmp_path / "missing" / "tune.db")


def test_add_wants_a_result_for_every_input(db, task):
    inputs, results = measured(task, [1e-3, 2e-3])
    with pytest.raises(ValueError, match="2 inputs but 1 results"):
        db.add(task, inputs, results[:1])
    assert db.count() == 0


def test_a_batch_with_a_result_sqlite_cannot_store_adds_nothing(db, path, task):
    inputs, results = measured(task, [1e-3, 2e-3])
    bad = MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR, object())  # an error_msg object
    with pytest.raises(RecordsError, match=re.escape(str(path))):
        db.add(task, inputs, [results[0], bad])
    assert db.count() == 0 and db.tasks() == []  # not even the task


def test_a_version_2_log_upgrades_and_its_records_stay_usable(path, task):
    v1_log(path, task, [3e-3, 1e-3, 2e-3], version=2)
    with records.Database(path) as db:
        assert db.upgraded_from == (2, f"{path}.schema-v2.bak")
        logged = db.records(task)
        best = db.best(task)
        summary, = db.tasks()
    # never compared with a control: each record is its own scale, and a trial
    assert [(r.role, r.ratio) for r in logged] == [("trial", None)] * 3
    assert [r.scaled_cost for r in logged] == [r.mean_cost for r in logged]
    assert best.mean_cost == pytest.approx(1e-3) and not best.confirmed
    assert best.cost == best.mean_cost and not summary.confirmed
    version, count, columns = schema_of(path)
    assert (version, count) == (str(records.SCHEMA_VERSION), 3)
    assert {"role", "ratio", "scaled_cost"} <= set(columns)
    assert schema_of(f"{path}.schema-v2.bak")[0] == "2"
