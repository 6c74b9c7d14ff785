"""Measurement through Ray: noise, agreement with in-process timing, and throughput.

Prints, in one run:
- noise: one matmul 512^3 config timed 20 times through the runner; the coefficient of
  variation of the 20 mean costs (with repeat=1, the default, and repeat=10: this host's
  speed drifts over seconds, and a longer timing averages the drift out);
- agreement: the runner's median time for that config against a plain in-process
  `time_evaluator` of the same build (same number / repeat / min_repeat_ms);
- throughput: end-to-end candidates per minute for seeded random matmul 1024^3 configs
  with min_repeat_ms=100, measured in batches as a tuner would, split into the build
  phase, verification, timing and the rest (Ray calls, loading, warm-up, waiting).

    .venv/bin/python benchmarks/measure.py [--candidates 64] [--batch 16] [--repeat 1]
                                           [--early-cutoff 10]
                                  [--noise-repeat 1 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402
from tuner import MeasureErrorNo, MeasureInput, Measurer, Task  # noqa: E402
from tuner.verify import random_inputs, unwritten  # noqa: E402


def noise_and_agreement(m: Measurer, opt) -> None:
    """20 rounds, each timing the config once through the runner and once in this
    process with the same settings: the CV of each series, and the median per-round
    ratio (rounds are seconds apart; this host's speed drifts over seconds)."""
    task = Task("matmul", (512, 512, 512))
    config = task.config_space.fallback()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = compiler.build(*task.instantiate(config), target=task.target)
    ins, outs = task.tensors()
    arrays = [*random_inputs(ins), *(unwritten(t) for t in outs)]
    timer = f.time_evaluator(number=1, repeat=m.options["repeat"], min_repeat_ms=100)
    m.measure([MeasureInput(task, config)])  # the runner computes the reference once
    runner, local = [], []
    for _ in range(20):
        result = m.measure([MeasureInput(task, config)])[0]
        assert result.error_no == MeasureErrorNo.NO_ERROR, result
        runner.append(result.mean_cost)
        local.append(timer(*arrays).mean)
    cv = lambda xs: statistics.pstdev(xs) / statistics.fmean(xs)  # noqa: E731
    ratio = statistics.median(r / x for r, x in zip(runner, local))
    print(f"noise: matmul 512^3 fallback config timed 20 times through the runner "
          f"(repeat={m.options['repeat']}, min_repeat_ms=100): "
          f"median {statistics.median(runner) * 1e3:.3f} ms, "
          f"CV {cv(runner) * 100:.2f}%  (the same build in this process, interleaved: "
          f"CV {cv(local) * 100:.2f}%)")
    print(f"agreement: in-process time_evaluator median {statistics.median(local) * 1e3:.3f} ms; "
          f"runner / in-process = {ratio:.3f} (median of per-round ratios)")


def throughput(m: Measurer, opt) -> None:
    task = Task("matmul", (1024, 1024, 1024))
    configs = task.config_space.sample(opt.candidates, seed=0)
    m.measure([MeasureInput(task, configs[0])])  # the builders' and runner's first imports
    before = dict(m.stats)
    start = time.perf_counter()
    results = []
    for i in range(0, len(configs), opt.batch):
        results += m.measure([MeasureInput(task, c) for c in configs[i:i + opt.batch]])
    wall = time.perf_counter() - start
    build_s = m.stats["build_s"] - before["build_s"]
    verify_s = sum(r.verify_time for r in results)
    # time spent timing: the runner's seconds (load, warm-up, measurements) minus the check
    timing_s = sum(max(0.0, r.run_time - r.verify_time) for r in results)
    rest = wall - build_s - verify_s - timing_s
    errors: dict = {}
    for r in results:
        errors[r.error_no.name] = errors.get(r.error_no.name, 0) + 1
    best = min(results, key=lambda r: r.mean_cost)
    print(f"throughput: {len(results)} random matmul 1024^3 candidates in {wall:.1f} s = "
          f"{len(results) / wall * 60:.0f} per minute (batches of {opt.batch}, "
          f"{m.n_parallel} parallel builds, repeat={opt.repeat}, min_repeat_ms=100, "
          f"early_cutoff={m.early_cutoff})")
    if opt.repeat > 1:
        cut = sum(1 for r in results if len(r.costs) == 1)
        print(f"  {cut} candidates stopped after their first run (slower than early_cutoff x best)")
    print(f"  build phase {build_s:.1f} s ({build_s / wall:.0%}), verify {verify_s:.1f} s "
          f"({verify_s / wall:.0%}), timing incl. load and warm-up {timing_s:.1f} s "
          f"({timing_s / wall:.0%}), overhead {rest:.1f} s ({rest / wall:.0%})")
    print(f"  per candidate: build {statistics.median(r.build_time for r in results):.2f} s "
          f"(median, one worker), results {errors}, best {task.gflops(best.mean_cost):.1f} GFLOPS")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--candidates", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--noise-repeat", type=int, nargs="+", default=[1, 10],
                   help="repeat settings to measure the noise with (one run each)")
    p.add_argument("--early-cutoff", type=float, default=10.0,
                   help="Measurer early_cutoff; 0 times every candidate fully")
    opt = p.parse_args()
    for repeat in opt.noise_repeat:
        with Measurer(repeat=repeat, min_repeat_ms=100) as m:
            noise_and_agreement(m, opt)
    with Measurer(repeat=opt.repeat, min_repeat_ms=100,
                  early_cutoff=opt.early_cutoff or None) as m:
        throughput(m, opt)


if __name__ == "__main__":
    main()
