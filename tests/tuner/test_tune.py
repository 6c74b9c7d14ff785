"""tune() (tuner/tune.py): tuners by name, resuming from and logging to a real SQLite
log with a fake measurer, one short run with the real Measurer on a local Ray, and the
same kinds of records as `autosched tune` logs."""
from __future__ import annotations

import importlib
import json
import math
import sqlite3

import pytest

import records
from cli_check import invoke
from fake_measurer import FakeMeasurer, bowl_cost, trials_of
from tuner import Measurer, Task
from tuner.random_tuner import RandomTuner
from tuner.tune import tune

# the module, not the function tune() that a package may export under the same name
tune_module = importlib.import_module("tuner.tune")


@pytest.fixture(scope="module")
def task():
    return Task("matmul", (4, 4, 4))  # 864 configs


@pytest.mark.parametrize("name", ["random", "grid", "ga", "xgb"])
def test_a_tuner_given_by_name_tunes(task, name):
    measurer = FakeMeasurer()
    result = tune(task, 20, tuner=name, measurer=measurer, seed=0, batch_size=8)
    assert result.trials == 20 and measurer.batches == [8 + 2, 8 + 2, 4 + 2]  # + controls
    assert result.best_config.index in measurer.measured and math.isfinite(result.best_cost)
    assert result.confirmation is not None and result.best_cost == bowl_cost(result.best_config)


def test_an_unknown_tuner_name_is_a_value_error_naming_the_choices(task):
    with pytest.raises(ValueError, match="'gridsearch'.*'random', 'grid', 'ga', 'xgb'"):
        tune(task, 4, tuner="gridsearch", measurer=FakeMeasurer())


def test_a_tuner_instance_is_used_as_it_is(task):
    tuner = RandomTuner(task, seed=5)
    measurer = FakeMeasurer()
    tune(task, 8, tuner=tuner, measurer=measurer)
    assert set(tuner.visited) <= set(measurer.measured)
    assert len(measurer.measured) == 8 + 2 and len(tuner.measured) == 8  # + the control
    with pytest.raises(ValueError, match="made for Task"):
        tune(Task("matmul", (8, 8, 8)), 8, tuner=tuner, measurer=measurer)


def test_without_a_measurer_tune_makes_one_and_closes_it(task, monkeypatch):
    made = []

    class Made(FakeMeasurer):
        closed = False

        def __init__(self):
            super().__init__()
            made.append(self)

        def close(self):
            self.closed = True

    monkeypatch.setattr(tune_module, "Measurer", Made)
    tune(task, 4, tuner="grid")
    fallback = task.config_space.fallback().index  # the control, first and last
    assert len(made) == 1 and made[0].measured == [fallback, 0, 1, 2, 3, fallback]
    assert made[0].closed


def test_a_second_run_on_a_log_resumes_without_measuring_a_config_again(task, tmp_path):
    path = tmp_path / "tune.db"
    first_measurer = FakeMeasurer()
    first = tune(task, 32, tuner="random", db=path, measurer=first_measurer, seed=0)
    # everything new is slow: the best of the second run can only come from the log
    seen = set(first_measurer.measured)
    second_measurer = FakeMeasurer(
        cost=lambda config: bowl_cost(config) if config.index in seen else 1.0)
    second = tune(task, 32, tuner="grid", db=str(path), measurer=second_measurer)
    assert len(second_measurer.measured) == 32 + 2 * 2  # and the control of each batch
    assert not seen & set(trials_of(second_measurer))
    controls = {b[0] for b in second_measurer.batch_indices} | \
        {b[-1] for b in second_measurer.batch_indices}
    assert controls == {task.config_space.fallback().index}  # the control: the fallback
    assert second.best_config == first.best_config and second.best_cost == first.best_cost
    with records.Database(path) as db:
        logged = db.records(task)
        runs = list(db.db.query("SELECT * FROM runs ORDER BY id"))
    assert [r.config_index for r in logged] == first_measurer.measured + second_measurer.measured
    # the first run measured the fallback baseline first (no trial); the second found it
    assert logged[0].config_index == task.config_space.fallback().index
    assert len(first_measurer.measured) == 1 + 32 + 2 * 2
    assert [(r["tuner"], r["trials"]) for r in runs] == [("random", 32), ("grid", 32)]
    assert all(r["end"] is not None for r in runs)
    assert runs[0]["best_gflops"] == pytest.approx(first.best_gflops)
    assert {r.run_id for r in logged[:37]} == {runs[0]["id"]}
    assert {r.run_id for r in logged[37:]} == {runs[1]["id"]}


def test_records_of_another_template_version_are_skipped_with_a_warning(task, tmp_path):
    path = tmp_path / "tune.db"
    first_measurer = FakeMeasurer()
    with records.Database(path) as db:  # an open Database is used and left open
        tune(task, 8, tuner="grid", db=db, measurer=first_measurer)
        db.conn.execute("UPDATE records SET template_version = 'old' WHERE config_index < 3")
        again = FakeMeasurer()
        with pytest.warns(UserWarning, match="3 made with another version of the template"):
            tune(task, 8, tuner="grid", db=db, measurer=again)
        assert trials_of(again) == [0, 1, 2, 8, 9, 10, 11, 12]
        # the fallback baseline, measured by the first run only, and the controls
        assert db.count() == 1 + 16 + 2 * 2


@pytest.mark.slow
def test_tuning_with_the_real_measurer_on_a_local_ray(local_ray):
    task = Task("matmul", (32, 32, 32))
    with Measurer(n_parallel=2, repeat=1, min_repeat_ms=0) as measurer:
        result = tune(task, 8, tuner="random", measurer=measurer, seed=0)
    assert result.trials == 8
    assert math.isfinite(result.best_cost) and result.best_gflops > 0
    assert result.best_config.space.fingerprint == task.config_space.fingerprint


def logged_kinds(path) -> dict:
    """What a tuning run of one task left in the log at `path`, without the values that
    differ from run to run: the rows of each table, which columns each row fills, whether
    each record is the fallback baseline, the run's options by name."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        def filled(table):
            return [sorted(k for k in row.keys() if row[k] is not None)
                    for row in conn.execute(f"SELECT * FROM {table} ORDER BY id")]
        task, = conn.execute("SELECT * FROM tasks")
        fallback = Task(task["template"], json.loads(task["args"])).config_space.fallback()
        run, = conn.execute("SELECT * FROM runs")
        return {"tables": {t: filled(t) for t in ("tasks", "runs", "records",
                                                   "confirmations")},
                "fallback first": [r[0] == fallback.index for r in conn.execute(
                    "SELECT config_index FROM records ORDER BY id")],
                "roles": [r[0] for r in conn.execute("SELECT role FROM records ORDER BY id")],
                "confirmed": conn.execute("SELECT COUNT(*), SUM(fallback) FROM confirmed"
                                          ).fetchone()[:],
                "errors": [r[0] for r in conn.execute("SELECT error_no FROM records")],
                "run": (run["tuner"], run["trials"], sorted(json.loads(run["options"]))),
                "records of the run": conn.execute(
                    "SELECT COUNT(*) FROM records WHERE run_id = ?", (run["id"],)).fetchone()[0]}
    finally:
        conn.close()


@pytest.mark.slow
def test_tune_logs_the_same_kinds_of_records_as_the_command_line(local_ray, tmp_path):
    task = Task("matmul", (16, 16, 16))
    with Measurer(n_parallel=2, min_repeat_ms=5) as measurer:
        tune(task, 4, tuner="random", db=tmp_path / "api.db", measurer=measurer, seed=0,
             batch_size=4)
    cli = invoke("tune", "matmul", 16, 16, 16, "--trials", 4, "--batch-size", 4, "--tuner",
                 "random", "--seed", 0, "--min-repeat-ms", 5, "--db", tmp_path / "cli.db",
                 cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    api, command_line = logged_kinds(tmp_path / "api.db"), logged_kinds(tmp_path / "cli.db")
    assert api == command_line
    # and what both hold: the fallback baseline, then the trials bracketed by the
    # control (the best so far: the fallback), all in one run; then one confirmation of
    # the 4 trials and the fallback
    assert api["fallback first"] == [True, True, False, False, False, False, True]
    assert api["roles"] == ["fallback", "control", *["trial"] * 4, "control"]
    assert api["errors"] == [0] * 7 and api["records of the run"] == 7
    assert api["confirmed"] == (5, 1) and len(api["tables"]["confirmations"]) == 1
    assert api["run"][:2] == ("random", 4)
    assert {"uid", "verify_time", "run_time", "gflops", "run_id"} <= set(
        api["tables"]["records"][0])
