"""Helpers for the tuning-log tests: matmul tasks, made-up measured batches (no Ray, no
timing: the costs are given), and a writer process for the tests of several processes.

As a script it is that writer:

    python tests/records/records_check.py LOG WRITER BATCHES SIZE

It opens LOG, prints "ready", waits for one line on stdin (so that the test can start
several writers at the same moment), then logs BATCHES batches of SIZE records with
Database.add and prints "committed K" (flushed) after add returns for batch K. Record I
of batch K has host WRITER and timestamp batch_timestamp(K, I), so a test knows exactly
which records each reported batch holds.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys

import records
from tuner import MeasureErrorNo, MeasureInput, MeasureResult, Task

SHAPE = (64, 64, 64)
HOST = "testhost"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_timestamps = itertools.count(1_000_000)


def matmul(shape=SHAPE, target="llvm") -> Task:
    """The matmul task of `shape`."""
    return Task("matmul", shape, target=target)


def measured(task: Task, costs, seed: int = 0, error=MeasureErrorNo.NO_ERROR,
             host: str = HOST, timestamps=None) -> tuple[list, list]:
    """One measured batch of `task`: MeasureInputs for len(costs) distinct configs that
    task.config_space.sample(..., seed=seed) draws, and MeasureResults with those costs
    (seconds; None for a result without a time) and `error`. Timestamps are distinct
    across calls unless given."""
    configs = task.config_space.sample(len(costs), seed=seed)
    if timestamps is None:
        timestamps = [float(next(_timestamps)) for _ in costs]
    inputs = [MeasureInput(task, c) for c in configs]
    results = [MeasureResult(() if c is None else (c, c * 1.02, c * 0.98), error,
                             "" if error == MeasureErrorNo.NO_ERROR else error.name,
                             0.25, t, host) for c, t in zip(costs, timestamps)]
    return inputs, results


def batch_timestamp(batch: int, index: int) -> float:
    """The timestamp of record `index` of batch `batch` of a writer process."""
    return batch * 1000.0 + index


def start_writer(path, writer: str, batches: int, size: int) -> subprocess.Popen:
    """A writer process (see the module docstring) logging into `path`; it has opened
    the log once it printed "ready"."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), os.fspath(path),
                             writer, str(batches), str(size)], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _write(path: str, writer: str, batches: int, size: int) -> None:
    task = matmul()
    with records.Database(path) as db:
        print("ready", flush=True)
        sys.stdin.readline()
        for k in range(batches):
            inputs, results = measured(task, [1e-3 + 1e-6 * i for i in range(size)], seed=k,
                                       host=writer,
                                       timestamps=[batch_timestamp(k, i) for i in range(size)])
            db.add(task, inputs, results, tuner=writer)
            print(f"committed {k}", flush=True)


if __name__ == "__main__":
    _write(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
