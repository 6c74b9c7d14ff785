"""Tuning throughput (issue 44): distinct configs measured per minute when `autosched
tune MODEL.onnx --time-budget T` starts from an empty log and an empty compile cache,
for one or more source trees of autosched (this checkout, and e.g. a `git worktree` of
an older commit), one after the other on this host with the same settings.

    .venv/bin/python benchmarks/tuning_throughput.py [--model resnet18] [--minutes 5]
        [--tree . --tree /tmp/old-worktree]

Each run is `tuner.cli.main(["tune", ...])` in a fresh process whose PYTHONPATH starts
with the tree (so it and its Ray workers import that tree's packages), with
AUTOSCHED_CACHE_DIR an empty folder of its own. From the run's log it prints the
records, the distinct (task, config) pairs measured, those measured without error, and
the distinct configs per minute of the budget; then the ratio of each tree's to the
first's. The model is compile_time.py's export (~/.cache/autosched/benchmark-models).
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(tree: str, model: str, minutes: float) -> dict:
    """One tuning run of `tree` on `model`; its counts."""
    tree = os.path.abspath(tree)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "tune.db")
        env = {**os.environ, "PYTHONPATH": tree, "AUTOSCHED_CACHE_DIR": os.path.join(tmp, "cache")}
        env.pop("AUTOSCHED_NO_CACHE", None)
        code = ("import sys; from tuner.cli import main; "
                f"sys.exit(main(['tune', {model!r}, '--time-budget', '{minutes}m', "
                f"'--db', {db!r}]))")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{tree}: tune failed:\n{done.stderr[-3000:]}")
        with sqlite3.connect(db) as conn:
            records, distinct, ok = conn.execute(
                "SELECT COUNT(*), COUNT(DISTINCT task_id || ':' || config_index), "
                "COUNT(DISTINCT CASE WHEN error_no = 0 THEN task_id || ':' || config_index END) "
                "FROM records").fetchone()
            # the mix of templates tuned: a Winograd candidate takes several times a
            # direct one's build, so a run that gave it more trials measures fewer
            by_template = dict(conn.execute(
                "SELECT t.template, COUNT(DISTINCT r.task_id || ':' || r.config_index) "
                "FROM records r JOIN tasks t ON t.id = r.task_id GROUP BY t.template"))
    return {"tree": tree, "wall_s": wall, "records": records, "distinct": distinct,
            "ok": ok, "per_minute": distinct / minutes, "by_template": by_template}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--dir", default=os.path.expanduser("~/.cache/autosched/benchmark-models"))
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--tree", action="append", help="a source tree (default: this checkout)")
    opt = p.parse_args()
    model = os.path.join(opt.dir, f"{opt.model}.onnx")
    if not os.path.exists(model):
        raise SystemExit(f"{model}: export it first (benchmarks/compile_time.py --models "
                         f"{opt.model})")
    trees = opt.tree or [os.path.dirname(HERE)]
    print(f"{opt.model}, {opt.minutes:g} min per run, empty log and compile cache")
    print(f"{'tree':40s} {'wall s':>7s} {'records':>8s} {'distinct':>9s} {'no error':>9s} "
          f"{'per min':>8s} {'ratio':>6s}", flush=True)
    first = None
    for tree in trees:
        row = run(tree, model, opt.minutes)
        first = first or row
        print(f"{tree[-40:]:40s} {row['wall_s']:7.0f} {row['records']:8d} "
              f"{row['distinct']:9d} {row['ok']:9d} {row['per_minute']:8.1f} "
              f"{row['per_minute'] / first['per_minute']:6.2f}", flush=True)
        print("    distinct configs by template: " + ", ".join(
            f"{k} {v}" for k, v in sorted(row["by_template"].items())), flush=True)


if __name__ == "__main__":
    main()
