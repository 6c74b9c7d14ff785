"""Tiramisu's commands (issue 20): the reference's two-stage blur tuned with them (the
`blur` template: bx at the root, at a tile of by, or after it in shared loops with its
storage folded to the live rows) against the best schedule TVM's primitives give
(`blur(H, W, tiramisu=False)`: root or compute_at only, same tiles, vectors, unroll and
parallel knobs) and against numpy.

Each space is tuned with xgb for --trials trials into the log --db (resumed, not redone,
when the log has them). The two tuned kernels and numpy (the blur as a user writes it:
`(a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3`, then the same along the rows) are then timed in
--rounds alternating rounds: our kernels natively (time_evaluator, at least 50 ms per
round), numpy by a Python loop; medians, and medians of the per-round ratios.

    .venv/bin/python benchmarks/blur.py [--trials 160] [--rounds 9] [--db blur.db]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import records  # noqa: E402
from benchmarks_common import build, peer_seconds  # noqa: E402
from search_spaces.blur import PLACEMENTS, blur_reference  # noqa: E402
from tuner import Measurer, Task, tune  # noqa: E402

SHAPES = [(1022, 1022), (2046, 4094)]  # by's rows and columns; the image has 2 more of each


def numpy_blur(a):
    x = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3
    return (x[:-2] + x[1:-1] + x[2:]) / 3


def per_placement(db: str, task) -> str:
    """The fastest logged trial of each placement (the log's scaled costs)."""
    with records.Database(db) as log:
        rows = [r for r in log.records(task) if r.role == "trial" and r.error_no == 0]
    fastest = {}
    for r in rows:
        p = r.knobs["placement"]
        fastest[p] = min(fastest.get(p, float("inf")), r.scaled_cost)
    return ", ".join(f"{p} {fastest[p] * 1e3:.3f} ms" for p in PLACEMENTS if p in fastest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=160)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--db", default="blur.db")
    opt = ap.parse_args()
    warnings.simplefilter("ignore")
    best = {}
    with Measurer(n_parallel=2) as measurer:
        for H, W in SHAPES:
            for tiramisu in (True, False):
                task = Task("blur", (H, W, tiramisu))
                with records.Database(opt.db) as log:
                    done = sum(r.role == "trial" for r in log.records(task))
                start = time.perf_counter()
                result = tune(task, max(opt.trials - done, 0), tuner="xgb", db=opt.db,
                              measurer=measurer, seed=0)
                best[H, W, tiramisu] = result.best_config
                print(f"tuned blur {H}x{W} {'with' if tiramisu else 'without'} Tiramisu's "
                      f"commands: {result.trials} trials ({done} in the log before) in "
                      f"{time.perf_counter() - start:.0f} s, best {result.best_config}")
                if tiramisu:
                    print("  best measured of each placement: " + per_placement(opt.db, task))
    print(f"\n{'shape':>10s} {'tiramisu':>10s} {'te only':>10s} {'numpy':>10s} "
          f"{'te/tiramisu':>11s} {'numpy/tiramisu':>14s}")
    for H, W in SHAPES:
        a = np.random.default_rng(0).standard_normal((H + 2, W + 2)).astype("float32")
        want = blur_reference([a], H, W)
        timers = {}
        for tiramisu in (True, False):
            f = build("blur", (H, W, tiramisu), best[H, W, tiramisu])
            out = np.full((H, W), np.nan, "float32")
            f(a, out)
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
            timers[tiramisu] = (f.time_evaluator(number=1, repeat=1, min_repeat_ms=50), out)
        times = {True: [], False: [], "numpy": []}
        for r in range(opt.rounds):
            order = [True, False, "numpy"] if r % 2 == 0 else ["numpy", False, True]
            for k in order:
                time.sleep(0.2)
                if k == "numpy":
                    times[k].append(peer_seconds(lambda a=a: numpy_blur(a), times=5))
                else:
                    timer, out = timers[k]
                    times[k].append(timer(a, out).median)
        ratio_te = statistics.median(f / t for f, t in zip(times[False], times[True]))
        ratio_np = statistics.median(n / t for n, t in zip(times["numpy"], times[True]))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"{H:>4d}x{W:<5d} {med[True]:8.3f}ms {med[False]:8.3f}ms {med['numpy']:8.3f}ms "
              f"{ratio_te:11.2f} {ratio_np:14.2f}")


if __name__ == "__main__":
    main()
