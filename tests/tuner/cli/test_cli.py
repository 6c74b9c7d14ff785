"""The autosched command line (tuner/cli/): tuning on a real local Ray (a tasks file,
resuming, SIGINT / SIGTERM), every `log` query with --json parsed back, space, templates,
bench, plot, and every kind of bad input (exit 2, one line on stderr, the log untouched).
What a command does is run in this process on the session's Ray (cli_check.invoke); the
signals, the exit codes of bad input and one call of each command run the console script
in a subprocess, as a user runs it."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_check import AUTOSCHED, autosched, invoke

BATCH = 4
TASKS = [{"template": "matmul", "args": [16, 16, 16]},
         {"template": "dense_bias_relu", "args": [16, 16, 16]}]
# what `tuned` logs: 16 trials, the fallback of each task, a control in each batch
RECORDS = 16 + len(TASKS) + 2 * 16 // BATCH
# measurements of 5 ms, not 100: what these tests check is what is logged and printed
QUICK = ("--min-repeat-ms", 5)

pytestmark = pytest.mark.slow


def query(*args, cwd):
    """The parsed JSON that `autosched ARGS --json` prints."""
    result = invoke(*args, "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def records_in(db: Path) -> int:
    """Records in a log being written by another process (0 before it exists)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, local_ray):
    """A directory with tune.db: both TASKS tuned by one `autosched tune --tasks` run with
    the random tuner (16 trials, batches of 4), and that run's output."""
    where = tmp_path_factory.mktemp("cli")
    (where / "tasks.json").write_text(json.dumps(TASKS))
    result = invoke("tune", "--tasks", "tasks.json", "--trials", 16, "--batch-size", BATCH,
                    "--tuner", "random", "--seed", 0, "--db", "tune.db", *QUICK, cwd=where)
    assert result.returncode == 0, result.stderr
    return where, result


# ---------------------------------------------------------------------- tune

def test_tune_with_a_tasks_file_logs_every_batch_and_prints_a_line_for_each(tuned):
    where, result = tuned
    tasks = query("log", "tasks", "--db", "tune.db", cwd=where)
    assert [(t["template"], t["args"][:3]) for t in tasks] == \
        [(t["template"], t["args"]) for t in TASKS]
    # 16 trials shared out, plus the untuned fallback config of each task measured once,
    # plus the control of each batch; then each task confirmed
    assert sum(t["records"] for t in tasks) == RECORDS
    assert all(t["best_gflops"] > 0 and t["confirmed"] for t in tasks)
    lines = result.stdout.splitlines()
    assert sum("fallback config" in line for line in lines) == len(TASKS)
    assert sum(": confirmed: best" in line and "rounds" in line for line in lines) == len(TASKS)
    batch_lines = [line for line in lines if ", run " in line]
    assert len(batch_lines) == 16 // BATCH and "run 16/16" in batch_lines[-1]
    assert all("GFLOPS" in line and "ETA" in line for line in batch_lines)
    assert "16 trials in" in result.stdout and "trials spent" in result.stdout
    assert query("log", "stats", "--db", "tune.db", cwd=where)["runs"] == len(TASKS)


def test_tune_measures_each_candidate_repeat_times(local_ray, tmp_path):
    result = invoke("tune", "matmul", 16, 16, 16, "--trials", BATCH, "--batch-size", BATCH,
                    "--tuner", "random", "--seed", 0, "--repeat", 3, "--number", 2,
                    "--min-repeat-ms", 0, "--db", "r.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "r.db") as conn:
        costs = [json.loads(c) for c, in conn.execute(
            "SELECT costs FROM records WHERE role = 'trial'")]
    assert len(costs) == BATCH and all(len(c) == 3 for c in costs)


def test_tune_resumes_from_the_log_and_never_measures_a_config_twice(tuned, tmp_path):
    shutil.copy(tuned[0] / "tune.db", tmp_path / "resumed.db")
    before = {t["template"]: t["records"]
              for t in query("log", "tasks", "--db", "resumed.db", cwd=tmp_path)}
    result = invoke("tune", "matmul", 16, 16, 16, "--trials", BATCH, "--batch-size", BATCH,
                    "--tuner", "random", "--seed", 0, *QUICK, cwd=tmp_path,
                    env={"AUTOSCHED_DB": "resumed.db"})  # the log from the environment
    assert result.returncode == 0, result.stderr
    after = {t["template"]: t["records"]
             for t in query("log", "tasks", "--db", "resumed.db", cwd=tmp_path)}
    # a batch and its control, twice; the fallback was logged
    assert after == {**before, "matmul": before["matmul"] + BATCH + 2}
    exported = invoke("log", "export", "matmul", 16, 16, 16, "--db", "resumed.db", cwd=tmp_path)
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    indices = [line["config"]["config_index"] for line in lines
               if line["result"]["role"] != "control"]
    assert len(lines) == after["matmul"] and len(indices) == len(set(indices))
    assert not (tmp_path / "autosched.db").exists()


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_tuning_after_the_batch_in_flight_which_is_logged(tmp_path, signum, code):
    db = tmp_path / "stopped.db"
    proc = subprocess.Popen(
        [str(AUTOSCHED), "tune", "matmul", "16", "16", "16", "--trials", "400", "--batch-size",
         str(BATCH), "--tuner", "random", "--db", str(db)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while records_in(db) < 1 + BATCH + 2:  # the fallback, a batch, its control
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        # a moment into the next batch (its candidates are timed for 0.1 s each at least),
        # not in the instant between two batches, where no batch is in flight
        time.sleep(0.25)
        seen = records_in(db)
        if signum == signal.SIGINT:  # a terminal's Ctrl-C: the whole process group
            os.killpg(proc.pid, signum)
        else:  # `kill PID`
            os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, (out, err)
    total = records_in(db)
    # the fallback config is no trial, nor is the control of each batch
    batches, rest = divmod(total - 1, BATCH + 2)
    trials = batches * BATCH
    assert rest == 0 and total >= seen + BATCH + 2  # the batch in flight finished
    assert f"{trials} trials in" in out and signal.Signals(signum).name in out
    assert "Traceback" not in err


# ---------------------------------------------------------------------- log queries

def test_log_best_names_the_task_by_its_arguments_or_its_id(tuned):
    where, _ = tuned
    tasks = query("log", "tasks", "--db", "tune.db", cwd=where)
    best = query("log", "best", "matmul", 16, 16, 16, "--db", "tune.db", cwd=where)
    assert best == query("log", "best", "--task", tasks[0]["id"], "--db", "tune.db", cwd=where)
    assert best["confirmed_gflops"] == pytest.approx(tasks[0]["best_gflops"])
    assert best["confirmed_rank"] == 1 and best["gflops"] > 0  # and the logged figure
    assert set(best["knobs"]) == set(best["knobs_readable"]) and "tile_x" in best["knobs"]
    table = invoke("log", "best", "matmul", 16, 16, 16, "--db", "tune.db", cwd=where).stdout
    assert "tile_x" in table and "GFLOPS" in table and "confirmed" in table
    assert "logged" in table
    ambiguous = invoke("log", "best", "--db", "tune.db", cwd=where)
    assert ambiguous.returncode == 2 and "--task ID" in ambiguous.stderr


def test_log_top_history_and_failures(tuned):
    where, _ = tuned
    top = query("log", "top", "dense_bias_relu", 16, 16, 16, "-k", 3, "--db", "tune.db",
                cwd=where)
    assert 1 <= len(top) <= 3
    assert [r["confirmed_rank"] for r in top] == [1, 2, 3][:len(top)]
    # above the fallback (ratio 1) only configs faster in every round; never slower
    ratios = [r["confirmed_ratio"] for r in top]
    assert ratios[0] <= 1.0 and (1.0 not in ratios or
                                 ratios[:ratios.index(1.0)] == sorted(ratios[:ratios.index(1.0)]))
    history = query("log", "history", "dense_bias_relu", 16, 16, 16, "--db", "tune.db",
                    cwd=where)
    assert [p["trial"] for p in history] == list(range(1, len(history) + 1))
    bests = [p["best_gflops"] for p in history if p["best_gflops"] is not None]
    assert bests == sorted(bests) and bests[-1] > 0
    failures = query("log", "failures", "--db", "tune.db", cwd=where)
    tasks = query("log", "tasks", "--db", "tune.db", cwd=where)
    assert sum(f["count"] for f in failures) == sum(t["errors"] for t in tasks)
    assert invoke("log", "history", "matmul", 16, 16, 16, "--db", "tune.db",
                  cwd=where).stdout.count("best GFLOPS") == 1


def test_log_confirm_confirms_what_is_not_and_a_named_task_again(tuned, tmp_path):
    shutil.copy(tuned[0] / "tune.db", tmp_path / "cut.db")
    nothing = invoke("log", "confirm", "--db", "cut.db", cwd=tmp_path)
    assert nothing.returncode == 0 and "is confirmed" in nothing.stdout
    with sqlite3.connect(tmp_path / "cut.db") as conn:  # as if both runs had been cut
        conn.execute("DELETE FROM confirmed")
        conn.execute("DELETE FROM confirmations")
    assert not any(t["confirmed"] for t in query("log", "tasks", "--db", "cut.db",
                                                 cwd=tmp_path))
    rows = query("log", "confirm", "--db", "cut.db", cwd=tmp_path)
    assert len(rows) == len(TASKS) and all(r["confirmed"] and r["rounds"] == 7 for r in rows)
    assert all(r["speedup"] >= 1.0 for r in rows)  # never slower than the fallback
    tasks = query("log", "tasks", "--db", "cut.db", cwd=tmp_path)
    assert all(t["confirmed"] for t in tasks)
    best = query("log", "best", "matmul", 16, 16, 16, "--db", "cut.db", cwd=tmp_path)
    assert best["confirmed_cost"] == pytest.approx(rows[0]["confirmed_cost"])
    again = invoke("log", "confirm", "matmul", 16, 16, 16, "--db", "cut.db", cwd=tmp_path)
    assert again.returncode == 0 and "1 task(s) confirmed" in again.stdout
    assert query("log", "stats", "--db", "cut.db", cwd=tmp_path)["records"] == RECORDS


def test_log_stats(tuned):
    where, _ = tuned
    stats = query("log", "stats", "--db", "tune.db", cwd=where)
    assert stats["tasks"] == len(TASKS) and stats["records"] == RECORDS
    assert stats["bytes"] > 0 and sum(stats["failures"].values()) == stats["errors"]


def test_log_export_import_and_merge_move_every_record_once(tuned, tmp_path):
    where, _ = tuned
    exported = invoke("log", "export", "--db", where / "tune.db", cwd=tmp_path)
    lines = exported.stdout.splitlines()
    assert len(lines) == RECORDS and all(json.loads(line) for line in lines)
    best = invoke("log", "export", "--best-only", "-o", "best.jsonl", "--db", where / "tune.db",
                  cwd=tmp_path)
    assert best.returncode == 0 and len((tmp_path / "best.jsonl").read_text().splitlines()) == 2
    (tmp_path / "all.jsonl").write_text("\n".join(lines[:5] + ["{not json"] + lines[5:]) + "\n")
    report = query("log", "import", "all.jsonl", "--db", "new.db", cwd=tmp_path)
    assert report["imported"] == len(lines) and report["duplicates"] == 0
    assert [e["line"] for e in report["errors"]] == [6]
    again = query("log", "import", "all.jsonl", "--db", "new.db", cwd=tmp_path)
    assert again["imported"] == 0 and again["duplicates"] == len(lines)
    merged = query("log", "merge", where / "tune.db", "--db", "merged.db", cwd=tmp_path)
    assert merged["merged"] == len(lines)
    assert query("log", "stats", "--db", "merged.db", cwd=tmp_path)["records"] == len(lines)


def test_log_plot_writes_a_png(tuned, tmp_path):
    where, _ = tuned
    out = query("log", "plot", "-o", tmp_path / "tuning.png", "--db", "tune.db", cwd=where)
    assert len(out["lines"]) == len(TASKS)  # one tuner: one line per task
    data = (tmp_path / "tuning.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000


def test_log_plot_without_matplotlib_says_how_to_install_it(tuned, tmp_path):
    where, _ = tuned
    hide = ("import sys; sys.modules['matplotlib'] = None; from tuner.cli import main; "
            "main(sys.argv[1:])")
    result = subprocess.run([sys.executable, "-c", hide, "log", "plot", "-o",
                             str(tmp_path / "x.png"), "--db", "tune.db"],
                            cwd=where, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "pip install 'autosched[plot]'" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and not (tmp_path / "x.png").exists()


# ---------------------------------------------------------------------- space, templates, bench

def test_space_lists_the_knobs_and_the_size(tmp_path):
    space = query("space", "matmul", 16, 16, 16, cwd=tmp_path)
    size = 1
    for knob in space["knobs"]:
        assert knob["choices"] == len(knob["values"]) and knob["fallback"] in knob["values"]
        size *= knob["choices"]
    assert space["size"] == size and space["args"] == [16, 16, 16, "float32"]
    table = invoke("space", "conv2d_nchw", 1, 8, 8, 8, 8, 3, 3, cwd=tmp_path).stdout
    assert "tile_f" in table and "split" in table and "configs" in table


def test_templates_lists_every_template_with_its_arguments(tmp_path):
    found = query("templates", cwd=tmp_path)
    assert {"matmul", "dense_bias_relu", "batch_matmul", "conv2d_nchw",
            "depthwise_conv2d_nchw"} <= set(found)
    assert "dtype" in found["matmul"]
    assert "[dtype:str='float32']" in autosched("templates", cwd=tmp_path).stdout


def test_bench_times_the_fallback_the_best_logged_config_and_the_references(tuned):
    where, _ = tuned
    out = query("bench", "matmul", 16, 16, 16, "--repeat", 2, "--db", "tune.db", cwd=where)
    names = [k["name"] for k in out["kernels"]]
    assert names[0] == "fallback config" and names[1].startswith("confirmed best")
    assert "numpy" in names and "numpy reference (float64)" not in names  # float32 numpy
    assert all(k["correct"] and k["seconds"] > 0 and k["gflops"] > 0 for k in out["kernels"])
    assert out["best_logged"]["config_index"] is not None
    conv = query("bench", "conv2d_nchw", 1, 4, 8, 8, 4, 3, 3, "--repeat", 2, "--db", "tune.db",
                 cwd=where)  # no float32 numpy equivalent: its float64 reference is timed
    conv_names = [k["name"] for k in conv["kernels"]]
    assert "numpy reference (float64)" in conv_names and "numpy" not in conv_names
    assert all(k["correct"] for k in conv["kernels"])
    table = autosched("bench", "batch_matmul", 2, 8, 8, 8, "--repeat", 2, "--db", "tune.db",
                      cwd=where)
    assert table.returncode == 0 and "fallback config" in table.stdout
    assert "no valid record of batch_matmul" in table.stdout


# ---------------------------------------------------------------------- bad input

@pytest.fixture
def not_sqlite(tmp_path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a tuning log\n")
    return path


DB = ["--db", "fresh.db"]
BAD_INPUTS = {
    "unknown template": (["tune", "matmull", 16, 16, 16, *DB], "did you mean 'matmul'"),
    "too few arguments": (["tune", "matmul", 16, 16, *DB], "M: 'int', N: 'int', K: 'int'"),
    "a word for an int": (["tune", "matmul", 16, "sixteen", 16, *DB], "argument N must be int"),
    "a time budget that does not parse": (["tune", "matmul", 16, 16, 16, "--time-budget", "8x",
                                           *DB], "8x"),
    "an unreachable ray address": (["tune", "matmul", 16, 16, 16, "--ray-address",
                                    "127.0.0.1:9", *DB], "cannot reach the Ray cluster"),
    "a bad tasks file": (["tune", "--tasks", "tasks.json", *DB], "task 2: unknown template"),
    "a negative --min-repeat-ms": (["tune", "matmul", 16, 16, 16, "--min-repeat-ms", -1,
                                    *DB], "--min-repeat-ms"),
    "--repeat 0": (["tune", "matmul", 16, 16, 16, "--repeat", 0, *DB], "--repeat"),
    "a query of a missing log": (["log", "tasks", *DB], "no tuning log at fresh.db"),
    "too many arguments to space": (["space", "matmul", 16, 16, 16, "float32", 5],
                                    "too many"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2_and_creates_no_log(tmp_path, case):
    args, says = BAD_INPUTS[case]
    (tmp_path / "tasks.json").write_text(json.dumps([TASKS[0], {"template": "convv2d",
                                                                "args": [1]}]))
    result = autosched(*args, cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""
    assert not (tmp_path / "fresh.db").exists() and not (tmp_path / "autosched.db").exists()


def test_a_query_naming_an_unknown_template_suggests_the_nearest(tuned):
    where, _ = tuned
    result = invoke("log", "best", "matmull", 16, 16, 16, "--db", "tune.db", cwd=where)
    assert result.returncode == 2 and "did you mean 'matmul'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["tune", "matmul", 16, 16, 16], ["log", "tasks"],
                                  ["log", "best", "matmul", 16, 16, 16]])
def test_a_db_that_is_not_sqlite_is_refused_and_left_as_it_was(not_sqlite, args):
    before = not_sqlite.read_bytes(), not_sqlite.stat().st_mtime_ns
    result = invoke(*args, "--db", not_sqlite, cwd=not_sqlite.parent)
    assert result.returncode == 2 and "not a SQLite database" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert (not_sqlite.read_bytes(), not_sqlite.stat().st_mtime_ns) == before
    assert sorted(p.name for p in not_sqlite.parent.iterdir()) == [not_sqlite.name]
