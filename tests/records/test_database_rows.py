"""Database's public API for moving records between logs (records/database.py): rows as
stored, `transaction()`, `add_task`, `add_run`, `insert_records`; what records.jsonl is
built on, tested here on real files without it."""
from __future__ import annotations

import sqlite3

import pytest

import records
from records import RecordsError, schema
from records_check import matmul, measured


@pytest.fixture
def db(tmp_path):
    with records.Database(tmp_path / "tune.db") as opened:
        yield opened


@pytest.fixture(scope="module")
def task():
    return matmul()


def test_rows_are_every_column_as_stored(db, task):
    run = db.start_run("random", {"trials": 3})
    db.add(task, *measured(task, [2e-3, 1e-3, None]), tuner="random", run_id=run)
    db.add(matmul((32, 32, 32)), *measured(matmul((32, 32, 32)), [5e-3]))
    task_row, = db.task_rows(task)
    assert task_row["workload_key"] == task.workload_key and task_row["flop"] == task.flop
    assert [t["id"] for t in db.task_rows()] == [task_row["id"], task_row["id"] + 1]
    assert [r["id"] for r in db.run_rows()] == [run]
    rows = db.record_rows(task)
    assert [r["mean_cost"] for r in rows[:2]] == pytest.approx([2e-3, 1e-3])
    assert rows[2]["mean_cost"] is None and rows[2]["run_id"] == run  # NULL: no time
    assert all(set(schema.RECORD_COLUMNS) <= set(r) for r in rows)
    assert len(db.record_rows()) == 4
    best, = db.record_rows(task, best_only=True)
    assert best["mean_cost"] == pytest.approx(1e-3) and best["costs"].startswith("[")
    assert len(db.record_rows(best_only=True)) == 2
    assert db.task_rows(matmul((48, 48, 48))) == db.record_rows(matmul((48, 48, 48))) == []


def test_rows_inserted_into_another_log_come_back_the_same(db, task, tmp_path):
    run = db.start_run("ga")
    db.add(task, *measured(task, [3e-3, 1e-3]), tuner="ga", run_id=run)
    with records.Database(tmp_path / "other.db") as other:
        with other.transaction():
            task_id = other.add_task(db.task_rows(task)[0])
            run_id = other.add_run(db.run_rows()[0])
            added = other.insert_records({**r, "task_id": task_id, "run_id": run_id}
                                         for r in db.record_rows(task))
        assert added == 2
        assert [r.mean_cost for r in other.records(task)] == \
            [r.mean_cost for r in db.records(task)]
        assert {r.run_id for r in other.records(task)} == {run_id}
        # the same task, run and records again: found, not added
        assert other.add_task(db.task_rows(task)[0]) == task_id
        assert other.add_run(db.run_rows()[0]) == run_id
        assert other.insert_records({**r, "task_id": task_id, "run_id": run_id}
                                    for r in db.record_rows(task)) == 0
        assert other.count() == 2


def test_a_transaction_commits_at_its_end_joins_an_open_one_and_rolls_back_on_error(
        db, task, tmp_path):
    db.add(task, *measured(task, [1e-3]))
    rows = db.record_rows(task)
    path = tmp_path / "copy.db"
    with records.Database(path) as other:
        task_id = other.add_task(db.task_rows(task)[0])
        with other.transaction():
            with other.transaction():  # joins: nothing is committed yet
                other.insert_records({**r, "task_id": task_id} for r in rows)
            outside = sqlite3.connect(path)
            assert outside.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 0
        assert outside.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 1
        outside.close()
        with pytest.raises(RuntimeError, match="half way"):
            with other.transaction():
                other.insert_records({**r, "task_id": task_id, "uid": "another"} for r in rows)
                raise RuntimeError("half way")
        assert other.count() == 1


def test_a_transaction_that_waits_too_long_is_a_records_error_naming_the_file(tmp_path):
    path = tmp_path / "busy.db"
    records.Database(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with records.Database(path, timeout=0.1) as impatient:
            with pytest.raises(RecordsError, match="busy.db.*locked"):
                with impatient.transaction():
                    pass
    finally:
        holder.close()
