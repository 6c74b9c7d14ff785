"""Search efficiency of the tuners, measured for real (Ray builds, the runner times).

Prints, in one run:
- matmul 512^3: for each tuner, the best GFLOPS after 32, 64, 128 and 256 trials, the
  median over the seeds, in one table;
- the conv2d layer (1,64,56,56) x (64,64,3,3) pad 1: the same for xgb and random, one seed;
- for each task, how many trials each tuner needed to reach 95% of the best GFLOPS any
  tuner found (median over seeds), and xgb's share of random search's count.

    .venv/bin/python benchmarks/tuners.py [--seeds 0 1 2] [--trials 256] [--tuners ...]
        [--conv-seeds 0 1 2] [--skip-matmul] [--skip-conv]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tuner import Measurer, Task, tune  # noqa: E402

CHECKPOINTS = (32, 64, 128, 256)


def curve(task, tuner, seed, trials, measurer) -> list[float]:
    """Best GFLOPS after each trial (a step function of the batches)."""
    best: list[float] = []

    def record(t, inputs, results):
        gf = task.gflops(t.best_cost) or 0.0
        best.extend([gf] * len(inputs))
    tune(task, trials, tuner=tuner, measurer=measurer, seed=seed, callbacks=[record])
    return best


def trials_to(curve_: list[float], target: float) -> int | None:
    return next((n for n, gf in enumerate(curve_, start=1) if gf >= target), None)


def report(name: str, task: Task, tuners, seeds, trials, measurer) -> None:
    start = time.perf_counter()
    curves = {(t, s): curve(task, t, s, trials, measurer) for t in tuners for s in seeds}
    overall = max(max(c, default=0.0) for c in curves.values())
    target = 0.95 * overall
    print(f"\n{name}: best GFLOPS after N trials (median over seeds {list(seeds)}); "
          f"best found by any tuner {overall:.1f} GFLOPS; "
          f"{time.perf_counter() - start:.0f} s of tuning")
    marks = [n for n in CHECKPOINTS if n <= trials]
    print(f"  {'tuner':8s}" + "".join(f"{n:>9d}" for n in marks)
          + f"   trials to 95% ({target:.1f} GFLOPS)")
    needed = {}
    for t in tuners:
        cells = [statistics.median(curves[t, s][n - 1] if len(curves[t, s]) >= n else
                                   curves[t, s][-1] for s in seeds) for n in marks]
        reach = [trials_to(curves[t, s], target) for s in seeds]
        # a seed that never reached it counts as more than `trials`: the median is
        # still known when most seeds reached it
        ranked = sorted(r if r is not None else math.inf for r in reach)
        needed[t] = statistics.median(ranked)
        shown = f"{needed[t]:.0f}" if math.isfinite(needed[t]) else f"more than {trials}"
        per_seed = ", ".join(str(r) if r is not None else f">{trials}" for r in reach)
        print(f"  {t:8s}" + "".join(f"{c:9.1f}" for c in cells)
              + f"   {shown} (per seed: {per_seed})")
    if "xgb" in needed and "random" in needed and math.isfinite(needed["xgb"]):
        if math.isfinite(needed["random"]):
            print(f"  xgb needed {needed['xgb'] / needed['random']:.2f} of random search's "
                  f"trials (medians over seeds)")
        else:
            print(f"  xgb needed less than {needed['xgb'] / trials:.2f} of random search's "
                  f"trials (medians over seeds; random did not get there in {trials})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--trials", type=int, default=256)
    p.add_argument("--tuners", nargs="+", default=["xgb", "ga", "random", "grid"])
    p.add_argument("--conv-seeds", type=int, nargs="+", default=None,
                   help="seeds of the conv2d runs (default: the first of --seeds)")
    p.add_argument("--skip-matmul", action="store_true")
    p.add_argument("--skip-conv", action="store_true")
    opt = p.parse_args()
    warnings.simplefilter("ignore")
    with Measurer() as m:
        if not opt.skip_matmul:
            report("matmul 512^3", Task("matmul", (512, 512, 512)), opt.tuners, opt.seeds,
                   opt.trials, m)
        if not opt.skip_conv:
            report("conv2d (1,64,56,56) x (64,64,3,3) pad 1",
                   Task("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1)),
                   [t for t in ("xgb", "random") if t in opt.tuners],
                   opt.conv_seeds or opt.seeds[:1], opt.trials, m)


if __name__ == "__main__":
    main()
