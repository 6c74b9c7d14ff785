"""The tuning log at scale: 1,000,000 records over 1,000 matmul tasks in one SQLite file.

Builds the log through `Database.add`, one batch of `--per-task` records per task (fake
results: timing is not the point), and prints
- batched insert speed through Database.add, records/s (over the whole build and over
  the last tenth, when the file is largest; target: at least 10,000/s);
- best-config lookup, Database.best(task), on a freshly opened Database: the median
  and 90th percentile over `--lookups` distinct random tasks (target: median at most 1 ms);
- the file size.

    .venv/bin/python benchmarks/records.py [--tasks 1000] [--per-task 1000] [--lookups 200]
                                           [--path DIR/log.db] [--keep]
"""
from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import records  # noqa: E402
import tuner  # noqa: E402
from tuner import MeasureErrorNo, MeasureInput, MeasureResult  # noqa: E402

SIZES = range(16, 16 * 11, 16)  # 10 sizes per dimension: 1,000 distinct (M, N, K)
ERRORS = [MeasureErrorNo.COMPILE_ERROR, MeasureErrorNo.RUN_TIMEOUT, MeasureErrorNo.WRONG_ANSWER]


def make_tasks(n: int) -> list[tuner.Task]:
    """`n` matmul tasks of distinct shapes, with their spaces and flop counts built
    (what a tuning process has before it logs anything)."""
    shapes = list(itertools.product(SIZES, SIZES, SIZES))
    if n > len(shapes):
        raise SystemExit(f"--tasks: at most {len(shapes)} distinct shapes")
    tasks = [tuner.Task("matmul", shape) for shape in shapes[:n]]
    for task in tasks:
        len(task.config_space), task.flop
    return tasks


def fake_batch(task: tuner.Task, size: int, rng: random.Random) -> tuple[list, list]:
    """`size` MeasureInputs of `task` (its space's configs, repeated when it has fewer)
    and made-up results, one in ten a failure."""
    configs = task.config_space.sample(size, seed=rng.random())
    inputs = [MeasureInput(task, c) for c in itertools.islice(itertools.cycle(configs), size)]
    now = time.time()
    results = []
    for i in range(size):
        if rng.random() < 0.1:
            results.append(MeasureResult((), rng.choice(ERRORS), "made up", 0.1, now + i, "bench"))
        else:
            cost = rng.uniform(1e-5, 1e-3)
            results.append(MeasureResult((cost, cost * 1.01, cost * 0.99), MeasureErrorNo.NO_ERROR,
                                         "", 0.1, now + i, "bench"))
    return inputs, results


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=1000)
    p.add_argument("--per-task", type=int, default=1000, help="records per task, one batch")
    p.add_argument("--lookups", type=int, default=200)
    p.add_argument("--path", help="the log to write (default: a new temporary directory)")
    p.add_argument("--keep", action="store_true", help="leave the log file in place")
    opt = p.parse_args()
    path = opt.path or os.path.join(tempfile.mkdtemp(prefix="autosched-records-"), "log.db")
    if os.path.exists(path):
        raise SystemExit(f"{path} exists; the benchmark writes a new log")
    rng = random.Random(0)

    t = time.perf_counter()
    tasks = make_tasks(opt.tasks)
    print(f"{len(tasks)} tasks (spaces and flop counts) in {time.perf_counter() - t:.1f} s")

    add_seconds = []
    with records.Database(path) as db:
        for task in tasks:
            inputs, results = fake_batch(task, opt.per_task, rng)
            t = time.perf_counter()
            db.add(task, inputs, results, tuner="bench")
            add_seconds.append(time.perf_counter() - t)
        total = db.count()
    last = add_seconds[-max(1, len(add_seconds) // 10):]
    print(f"insert through Database.add, batches of {opt.per_task}: "
          f"{total / sum(add_seconds):,.0f} records/s over all {total:,} records, "
          f"{len(last) * opt.per_task / sum(last):,.0f} records/s over the last tenth "
          f"(target: at least 10,000/s)")

    with records.Database(path) as db:  # fresh: nothing cached from the build
        times = []
        for task in rng.sample(tasks, min(opt.lookups, len(tasks))):
            t = time.perf_counter()
            best = db.best(task)
            times.append(time.perf_counter() - t)
            assert best is not None and best.ok
    print(f"Database.best(task) over {len(times)} random tasks: median "
          f"{statistics.median(times) * 1e3:.3f} ms, p90 "
          f"{statistics.quantiles(times, n=10)[-1] * 1e3:.3f} ms, first "
          f"{times[0] * 1e3:.3f} ms (target: median at most 1 ms)")

    size = sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
    print(f"file: {path}, {size / 2**20:.1f} MiB ({size / total:.0f} bytes per record)")
    if not opt.keep:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        if not opt.path:
            os.rmdir(os.path.dirname(path))


if __name__ == "__main__":
    main()
