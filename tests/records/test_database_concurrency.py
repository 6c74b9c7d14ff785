"""Several processes and a crash on one tuning log (records/database.py): real writer
processes (records_check.py run as a script) log made-up batches into one file."""
from __future__ import annotations

import signal
import sqlite3
import threading
from collections import Counter

import records
from records_check import HOST, batch_timestamp, matmul, measured, start_writer

BATCHES, SIZE = 50, 20


def batches_in(path) -> Counter:
    """(host, batch) -> how many records of that writer's batch the log at `path` holds."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT host, timestamp FROM records").fetchall()
    finally:
        conn.close()
    return Counter((host, int(timestamp // batch_timestamp(1, 0))) for host, timestamp in rows)


def integrity(path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_two_processes_tuning_into_one_new_file_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    writers = [start_writer(path, name, BATCHES, SIZE) for name in ("alpha", "beta")]
    for w in writers:  # both opened (and so created) the file at the same time
        assert w.stdout.readline() == "ready\n"
    for w in writers:
        w.stdin.write("go\n")
        w.stdin.flush()
    task = matmul()
    with records.Database(path) as reader:  # a reader sees whole batches only
        while any(w.poll() is None for w in writers):
            counts = Counter(r.host for r in reader.records(task))
            assert all(n % SIZE == 0 for n in counts.values()), counts
    for w in writers:
        out, _ = w.communicate()
        assert w.returncode == 0
        assert out.splitlines() == [f"committed {k}" for k in range(BATCHES)]
    assert batches_in(path) == Counter({(name, k): SIZE for name in ("alpha", "beta")
                                        for k in range(BATCHES)})
    assert integrity(path) == "ok"


def test_two_connections_creating_one_log_at_once_both_open_it(tmp_path):
    """While one connection switches a new file to WAL, SQLite answers another's switch
    "database is locked" without waiting (about 1 open in 50 here before the retry);
    opening goes on trying until its timeout."""
    failures = []

    def open_log(path, barrier):
        barrier.wait()
        try:
            records.Database(path).close()
        except records.RecordsError as err:
            failures.append(err)

    for k in range(100):
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=open_log, args=(tmp_path / f"{k}.db", barrier))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, f"{len(failures)} of 200 opens failed, first: {failures[0]}"


def test_a_writer_killed_mid_run_leaves_every_batch_it_committed(tmp_path):
    path = tmp_path / "killed.db"
    size = 200  # long transactions, so that the kill most likely lands inside one
    writer = start_writer(path, "victim", 10_000, size)
    assert writer.stdout.readline() == "ready\n"
    writer.stdin.write("go\n")
    writer.stdin.flush()
    for k in range(8):
        assert writer.stdout.readline() == f"committed {k}\n"
    writer.send_signal(signal.SIGKILL)
    out, _ = writer.communicate()
    assert writer.returncode == -signal.SIGKILL
    committed = 8 + len(out.splitlines())

    assert integrity(path) == "ok"
    found = batches_in(path)
    assert all(found[("victim", k)] == size for k in range(committed))
    assert set(found.values()) == {size}  # a batch is all there or not at all
    assert len(found) in (committed, committed + 1)  # the last one may have committed
    with records.Database(path) as db:  # and the log goes on
        db.add(matmul(), *measured(matmul(), [1e-3], host=HOST))
        assert db.count() == len(found) * size + 1
