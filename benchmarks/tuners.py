"""Search efficiency of the tuners, measured for real (Ray builds, the runner times): does
XGB reach what random search finds in --trials trials in at most half of them?

For each task and tuner, over the seeds, one TaskScheduler run of --trials trials (a
log of its own, so the fallback config is measured first and nothing is transferred)
gives the best speedup over the untuned fallback after every batch. Speedups, not
GFLOPS: a run's costs are on its own scale, ratios to its fallback timed in every batch
(tuner/control.py), which takes out the host's drift between runs; GFLOPS of runs taken
minutes apart on a shared host do not compare.

Per task it prints the median speedup over the seeds after 32, 64, 128, 256 trials (and
each seed's last), and the answer: random's best is the median over seeds of its best
after --trials; xgb reaches it after the median over seeds of the trials it needed (a
seed that never did counts as more than --trials); "yes" when that is at most half of
--trials. Where no tuner beats the fallback (a flat space whose fallback is its best),
the target is 1.00x and the answer says only that XGB lost nothing.
With --tolerance (default 0.03) it also answers for a best within that fraction of the
target: two runs' timings of one config differ by a few percent, and on a flat space
(the convolution's: 11 of its 336 configs are within 5% of the best) the strict answer
is a coin toss between near-equal configs.

    .venv/bin/python benchmarks/tuners.py [--seeds 0 1 2] [--trials 256]
        [--tuners xgb random] [--tasks matmul conv2d_nchwc depthwise_conv2d_nchwc
        batch_matmul] [--batch-size 16] [--tolerance 0.03]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import records  # noqa: E402
from compiler import Target  # noqa: E402
from tuner import Measurer, Task, TaskScheduler, TuningOptions  # noqa: E402

CHECKPOINTS = (32, 64, 128, 256)
LANES = Target("llvm").vector_lanes  # the host's untuned channel block: 16 on AVX-512
TASKS = {
    "matmul": Task("matmul", (512, 512, 512)),
    # a ResNet-18 stage-1 layer, as AlterOpLayout packs it (blocks of the host's lanes)
    "conv2d_nchwc": Task("conv2d_nchwc", (1, 64, 56, 56, 64, 3, 3, 1, 1, LANES, LANES)),
    # a MobileNet depthwise layer, packed likewise
    "depthwise_conv2d_nchwc": Task("depthwise_conv2d_nchwc",
                                   (1, 128, 56, 56, 3, 3, 1, 1, LANES)),
    "batch_matmul": Task("batch_matmul", (8, 128, 128, 64)),
}


def speedups(task, tuner, seed, trials, batch_size, measurer) -> list[float]:
    """The best speedup over the fallback config after each trial of one run (a step
    function of the batches), never below 1: the fallback is measured before the first
    trial and is what the run gives a user until something beats it. The fallback's
    cost on the run's scale is taken from its confirmation, where the run's best was
    re-timed beside it in alternating rounds: the one timing that anchors the scale is
    as noisy as any other, and a best that the confirmation finds no faster than the
    fallback is no speedup."""
    with tempfile.TemporaryDirectory() as where, \
            records.Database(os.path.join(where, "tune.db")) as db:
        options = TuningOptions(trials=trials, seed=seed, batch_size=batch_size,
                                **({"tuner": tuner} if isinstance(tuner, str) else {}))
        scheduler = TaskScheduler([task], measurer, options, db,
                                  tuners=None if isinstance(tuner, str) else tuner)
        state, = scheduler.run()
    if state.fallback_cost is None:
        raise RuntimeError(f"{task}: the fallback config did not measure; no speedups")
    fallback = state.fallback_cost
    confirmed = {e.config.index: e.ratio for e in state.confirmation.ranking} \
        if state.confirmation is not None else {}
    if confirmed.get(state.tuner.best_config.index):  # the best beside the fallback
        fallback = state.best_cost / confirmed[state.tuner.best_config.index]
    out, last, before = [], 0, 1.0
    for done, cost in state.curve[1:]:  # a batch's best counts from its last trial
        best = max(1.0, fallback / cost) if math.isfinite(cost) else 1.0
        out += [before] * (done - last - 1) + [best]
        last, before = done, best
    return out


def trials_to(curve: list[float], target: float) -> float:
    """Trials until `curve` reaches `target` (inf: never)."""
    return next((n for n, x in enumerate(curve, start=1) if x >= target), math.inf)


def report(name, task, tuners, seeds, trials, batch_size, tolerance, measurer) -> str | None:
    """Print the table of one task; its yes / no line (None without xgb and random)."""
    start = time.perf_counter()
    curves = {(t, s): speedups(task, t, s, trials, batch_size, measurer)
              for t in tuners for s in seeds}
    print(f"\n{name} {task.args}: best speedup over the fallback config after N trials, "
          f"median over seeds {list(seeds)}; {time.perf_counter() - start:.0f} s")
    marks = [n for n in CHECKPOINTS if n < trials] + [trials]
    print(f"  {'tuner':8s}" + "".join(f"{n:>8d}" for n in marks))
    for t in tuners:
        cells = [statistics.median(curves[t, s][min(n, len(curves[t, s])) - 1]
                                   for s in seeds) for n in marks]
        finals = " ".join(f"{curves[t, s][-1]:.2f}x" for s in seeds)
        print(f"  {t:8s}" + "".join(f"{c:7.2f}x" for c in cells) + f"   per seed: {finals}")
    if "xgb" not in tuners or "random" not in tuners:
        return None
    target = statistics.median(curves["random", s][-1] for s in seeds)
    answers = []
    for within in dict.fromkeys((0.0, tolerance)):
        needed = [trials_to(curves["xgb", s], target * (1 - within)) for s in seeds]
        median = statistics.median(needed)
        shown = ", ".join(f"{n:.0f}" if math.isfinite(n) else f">{trials}" for n in needed)
        answers.append(f"{f'within {within:.0%}: ' if within else ''}"
                       f"{f'{median:.0f}' if math.isfinite(median) else f'>{trials}'} "
                       f"(per seed {shown}), {'yes' if median <= trials / 2 else 'no'}")
    line = (f"{name}: xgb's trials to random's {trials}-trial best ({target:.2f}x), "
            f"median over seeds, and whether at most half: {'; '.join(answers)}")
    print("  " + line)
    return line


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--trials", type=int, default=256)
    p.add_argument("--tuners", nargs="+", default=["xgb", "random"])
    p.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--tolerance", type=float, default=0.03)
    opt = p.parse_args()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    with Measurer() as m:
        lines = [report(name, TASKS[name], opt.tuners, opt.seeds, opt.trials,
                        opt.batch_size, opt.tolerance, m) for name in opt.tasks]
    print(f"\nin {time.perf_counter() - start:.0f} s:")
    for line in filter(None, lines):
        print("  " + line)


if __name__ == "__main__":
    main()
