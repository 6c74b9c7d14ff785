"""`autosched tune` on a fake measurer and a fake clock (no Ray, no compiler): how long it
tunes (--time-budget alone runs to the budget, not to DEFAULT_TRIALS_PER_TASK trials a
task; --trials alone or neither as before) and that the XGB tuner starts from the log's
other workloads of its template unless --no-transfer."""
from __future__ import annotations

import functools
import importlib
import re

import pytest

from cli_check import invoke
from fake_measurer import FakeMeasurer
from tuner import Task
from tuner.task_scheduler import TaskScheduler
from tuner.xgb_tuner import XGBTuner

tune_cli = importlib.import_module("tuner.cli.tune")  # the module, not the command


@pytest.fixture
def fake(monkeypatch) -> FakeMeasurer:
    """The measurer `autosched tune` gets (each config 0.1 s of its fake clock), and the
    clock its TaskScheduler reads."""
    measurer = FakeMeasurer()
    monkeypatch.setattr(tune_cli, "start_measurer", lambda *args, **kwargs: measurer)
    monkeypatch.setattr(tune_cli, "TaskScheduler",
                        functools.partial(TaskScheduler, clock=measurer.clock))
    return measurer


def tune(*args, cwd) -> tuple[int, str]:
    """(trials, why it ended) of an `autosched tune ARGS` run's summary."""
    done = invoke("tune", *args, "--db", "tune.db", cwd=cwd)
    assert done.returncode == 0, done.stderr
    found = re.search(r"(\d+) trials in \S+ \(ended: ([^)]+)\)", done.stdout)
    assert found, done.stdout
    return int(found[1]), found[2]


def test_a_time_budget_alone_tunes_until_the_budget(fake, tmp_path):
    trials, ended = tune("matmul", 64, 64, 64, "--tuner", "random", "--time-budget", "60s",
                         cwd=tmp_path)
    assert ended == "time budget" and trials > 4 * tune_cli.DEFAULT_TRIALS_PER_TASK
    assert 60 - 1 <= fake.clock() <= 60 + 2  # from the fallback's batch to confirmation


def test_trials_alone_or_neither_end_as_before(fake, tmp_path):
    assert tune("matmul", 64, 64, 64, "--tuner", "random", "--trials", 24,
                cwd=tmp_path) == (24, "trials spent")
    assert tune("matmul", 32, 32, 32, "--tuner", "random",
                cwd=tmp_path) == (tune_cli.DEFAULT_TRIALS_PER_TASK, "trials spent")
    assert tune("matmul", 40, 40, 40, "--tuner", "random", "--trials", 24, "--time-budget",
                "1h", cwd=tmp_path) == (24, "trials spent")


def test_xgb_starts_from_the_other_workloads_of_the_log_unless_no_transfer(
        fake, tmp_path, monkeypatch):
    calls = []
    transfer = XGBTuner.transfer

    def spy(self, inputs, results):
        calls.append((self.task, {inp.task for inp in inputs}, len(inputs)))
        transfer(self, inputs, results)
    monkeypatch.setattr(XGBTuner, "transfer", spy)
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 16, cwd=tmp_path)
    tune("matmul", 32, 32, 32, "--trials", 16, cwd=tmp_path)
    first, second = Task("matmul", (16, 16, 16)), Task("matmul", (32, 32, 32))
    assert calls == [(second, {first}, 16 + 1)]  # its trials and fallback, no control
    calls.clear()
    tune("matmul", 40, 40, 40, "--trials", 16, "--no-transfer", cwd=tmp_path)
    tune("matmul", 32, 32, 32, "--trials", 16, "--no-transfer", cwd=tmp_path)
    assert calls == []
    tune("matmul", 32, 32, 32, "--trials", 16, cwd=tmp_path)
    assert calls == [(second, {first, Task("matmul", (40, 40, 40))}, 2 * (16 + 1))]


def recording(fake, seen: list, what: str):
    """A stand-in for start_measurer that appends to `seen` what it was given as `what`
    ("flush", "compile_cache", or "timing": its number, repeat and min_repeat_ms) and
    returns `fake`."""
    def start(address, parallel, tasks, flush, compile_cache=True, **timing):
        seen.append({"flush": flush, "compile_cache": compile_cache, "timing": timing}[what])
        return fake
    return start


def test_a_model_is_tuned_cold_and_an_operator_warm_unless_told(fake, tmp_path, monkeypatch):
    """`--flush-cache` reaches the Measurer: on by default for a model, whose layers read
    weights no other layer left in the cache; off for an operator."""
    flushes = []
    monkeypatch.setattr(tune_cli, "start_measurer", recording(fake, flushes, "flush"))
    monkeypatch.setattr(tune_cli, "_model_tasks",
                        lambda *args: ([Task("matmul", (16, 16, 16))], [1]))
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, cwd=tmp_path)
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, "--flush-cache",
         cwd=tmp_path)
    (tmp_path / "net.onnx").write_bytes(b"")  # its tasks come from the stub above
    tune("net.onnx", "--tuner", "random", "--trials", 4, cwd=tmp_path)
    tune("net.onnx", "--tuner", "random", "--trials", 4, "--no-flush-cache", cwd=tmp_path)
    assert flushes == [False, True, True, False]


def test_allocation_reaches_the_scheduler(fake, tmp_path, monkeypatch):
    """`--allocation round-robin` (the baseline the default gradient is measured
    against) reaches the TaskScheduler; a bad name is a usage error naming the choices."""
    seen = []

    def scheduler(*args, **kwargs):
        seen.append(args[2].allocation)
        return TaskScheduler(*args, clock=fake.clock, **kwargs)
    monkeypatch.setattr(tune_cli, "TaskScheduler", scheduler)
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, cwd=tmp_path)
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, "--allocation",
         "round-robin", cwd=tmp_path)
    assert seen == ["gradient", "round-robin"]
    bad = invoke("tune", "matmul", 16, 16, 16, "--allocation", "greedy", cwd=tmp_path)
    assert bad.returncode == 2 and "'gradient', 'round-robin'" in bad.stderr


def test_no_cache_reaches_the_measurer(fake, tmp_path, monkeypatch):
    """`--no-cache`: every candidate built anew (Measurer's compile_cache off)."""
    caches = []
    monkeypatch.setattr(tune_cli, "start_measurer", recording(fake, caches, "compile_cache"))
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, cwd=tmp_path)
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, "--no-cache", cwd=tmp_path)
    assert caches == [True, False]


def test_the_timing_options_reach_the_measurer(fake, tmp_path, monkeypatch):
    """`--number`, `--repeat` and `--min-repeat-ms`, and their defaults (MetaSchedule's
    one measurement of at least 100 ms)."""
    seen = []
    monkeypatch.setattr(tune_cli, "start_measurer", recording(fake, seen, "timing"))
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, cwd=tmp_path)
    tune("matmul", 16, 16, 16, "--tuner", "random", "--trials", 4, "--number", 3,
         "--repeat", 2, "--min-repeat-ms", 0, cwd=tmp_path)
    assert seen == [{"number": 1, "repeat": 1, "min_repeat_ms": 100},
                    {"number": 3, "repeat": 2, "min_repeat_ms": 0}]
