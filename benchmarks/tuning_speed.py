"""How soon a model's tuning gets near its end result: minutes to 95% of the final
estimated latency, with and without the gradient allocation and transfer learning.

For each setting, one real `autosched tune MODEL.onnx --time-budget T` run, on a copy of
the starting log `--from` (a log of other models' records: what transfer learns from;
the copy leaves out every record of this model's own workloads, so that nothing is
resumed and every run starts from its fallbacks). From each run's log it reads the
model's estimated latency after every batch: the sum over the model's tasks of the
task's weight (kernel calls) x its best cost so far on the task's scale. The scale is
each task's fallback timed in every batch (tuner/control.py), so an estimate does not
move with the host's speed, and estimates of one run, taken minutes apart, compare.
It prints per setting the untuned estimate, the final one, their ratio, the trials, the
minutes until the estimate first came within 95% of the final one (final / estimate >=
0.95), and the speedup over the untuned estimate after each minute (runs that end at
different estimates compare there); then the table again, in the order run.

The settings run one after the other, not interleaved: the host's speed changes the
trials a minute buys, not the scale. `--repeat 2` runs the list twice (A B A B).

    .venv/bin/python benchmarks/tuning_speed.py --from models.db [--model resnet18]
        [--minutes 8] [--settings default old] [--repeat 1] [--keep DIR]

Settings: default (gradient allocation, transfer), no-transfer (gradient, no transfer),
round-robin (round-robin allocation, transfer), old (round-robin, no transfer).
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from model_defs import export_onnx  # noqa: E402

from compiler.frontend import from_onnx  # noqa: E402
from tuner import extract_tasks  # noqa: E402

SETTINGS = {
    "default": [],
    "no-transfer": ["--no-transfer"],
    "round-robin": ["--allocation", "round-robin"],
    "old": ["--allocation", "round-robin", "--no-transfer"],
}
AUTOSCHED = [os.path.join(os.path.dirname(sys.executable), "autosched")]  # the venv's


def starting_log(source: str | None, keep_out: set[str], path: str) -> int:
    """A new log at `path` with the records of `source` whose workload is not in
    `keep_out` (exported and imported through the command line); the records kept."""
    if source is None:
        return 0
    lines = subprocess.run([*AUTOSCHED, "log", "export", "--db", source], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    kept = [line for line in lines
            if json.loads(line)["task"]["workload_key"] not in keep_out]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("\n".join(kept) + "\n")
    try:
        subprocess.run([*AUTOSCHED, "log", "import", f.name, "--db", path], check=True,
                       capture_output=True)
    finally:
        os.unlink(f.name)
    return len(kept)


def curve(db: str, weights: dict[str, int], since: float) -> list[tuple[float, float, int]]:
    """(seconds since `since`, estimated latency, trials) after every logged record of
    the model's tasks from `since` on, once every task has a cost."""
    rows = sqlite3.connect(db).execute(
        "SELECT t.workload_key, r.scaled_cost, r.timestamp, r.role FROM records r "
        "JOIN tasks t ON r.task_id = t.id WHERE r.error_no = 0 AND r.timestamp >= ? "
        "AND r.role != 'control' AND r.scaled_cost IS NOT NULL ORDER BY r.timestamp, r.id",
        (since,)).fetchall()
    best: dict[str, float] = {}
    out, trials = [], 0
    for key, cost, stamp, role in rows:
        if key not in weights:
            continue
        trials += role == "trial"
        best[key] = min(cost, best.get(key, cost))
        if len(best) == len(weights):
            out.append((stamp - since, sum(w * best[k] for k, w in weights.items()), trials))
    return out


def run(setting: str, onnx: str, weights: dict, source: str | None, minutes: float,
        where: str) -> dict:
    """One tuning run of `setting`; its figures."""
    db = os.path.join(where, f"{setting}-{time.time_ns()}.db")
    starting_log(source, set(weights), db)
    start = time.time()
    subprocess.run([*AUTOSCHED, "tune", onnx, "--time-budget", f"{minutes * 60:.0f}",
                    "--db", db, *SETTINGS[setting]], check=True, capture_output=True)
    points = curve(db, weights, start)
    if not points:
        raise RuntimeError(f"{setting}: no estimate: some task never measured well")
    untuned, final = points[0][1], points[-1][1]
    reached = next(t for t, v, _ in points if final / v >= 0.95)
    by_minute = [untuned / min((v for t, v, _ in points if t <= m * 60), default=untuned)
                 for m in range(1, int(minutes) + 1)]
    return {"setting": setting, "untuned": untuned, "final": final,
            "speedup": untuned / final, "trials": points[-1][2],
            "minutes_to_95": reached / 60, "minutes": points[-1][0] / 60,
            "by_minute": by_minute, "log": db}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet18")
    p.add_argument("--from", dest="source", metavar="LOG",
                   help="a log of other models' records, the transfer's source")
    p.add_argument("--minutes", type=float, default=8.0)
    p.add_argument("--settings", nargs="+", choices=list(SETTINGS),
                   default=["default", "old"])
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--keep", metavar="DIR", help="keep each run's log in DIR")
    opt = p.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        where = opt.keep or temporary
        os.makedirs(where, exist_ok=True)
        onnx = os.path.join(where, f"{opt.model}.onnx")
        export_onnx(opt.model, onnx)
        tasks, counts = extract_tasks(*from_onnx(onnx))
        weights = {t.workload_key: n for t, n in zip(tasks, counts)}
        if opt.source:
            kept = starting_log(opt.source, set(weights), os.path.join(where, "probe.db"))
            print(f"starting log: {kept} records of {opt.source} (none of {opt.model}'s "
                  f"{len(weights)} workloads)")
        results = []
        for setting in opt.settings * opt.repeat:
            r = run(setting, onnx, weights, opt.source, opt.minutes, where)
            results.append(r)
            print(f"{setting:12s} untuned {r['untuned'] * 1e3:7.3f} ms  final "
                  f"{r['final'] * 1e3:7.3f} ms  ({r['speedup']:.2f}x)  {r['trials']:5d} "
                  f"trials in {r['minutes']:.1f} min  95% of final at "
                  f"{r['minutes_to_95']:.1f} min; speedup after each minute "
                  f"{' '.join(f'{x:.2f}x' for x in r['by_minute'])}", flush=True)
    print(f"\n{opt.model}, {opt.minutes:g} minutes per run, estimates on each task's "
          f"fallback scale:")
    print(f"  {'setting':12s} {'untuned':>9s} {'final':>9s} {'speedup':>8s} {'trials':>7s} "
          f"{'to 95%':>7s}")
    for r in results:
        print(f"  {r['setting']:12s} {r['untuned'] * 1e3:7.3f}ms {r['final'] * 1e3:7.3f}ms "
              f"{r['speedup']:7.2f}x {r['trials']:7d} {r['minutes_to_95']:5.1f}min")


if __name__ == "__main__":
    main()
