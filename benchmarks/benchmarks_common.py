"""Helpers the benchmarks share."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import compiler
import search_spaces

NUMPY_SNIPPET = """
import sys, time, statistics, numpy as np
n, repeat = int(sys.argv[1]), int(sys.argv[2])
a = np.random.rand(n, n).astype("float32"); b = np.random.rand(n, n).astype("float32")
c = np.empty((n, n), "float32")
for _ in range(3): np.matmul(a, b, out=c)
ts = []
for _ in range(repeat):
    t = time.perf_counter(); np.matmul(a, b, out=c); ts.append(time.perf_counter() - t)
print(statistics.median(ts))
"""


def numpy_matmul_seconds(n: int, repeat: int, coretype: str | None) -> float:
    """Median seconds of numpy's matmul in a fresh process (OpenBLAS reads
    OPENBLAS_CORETYPE once, when it loads)."""
    env = dict(os.environ)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, "-c", NUMPY_SNIPPET, str(n), str(repeat)],
                         env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def build(name, args, cfg):
    """The template `name`'s kernel for `args` and config `cfg`, built."""
    s, tensors = search_spaces.instantiate(name, *args, config=cfg)
    return compiler.build(s, tensors)


def peer_seconds(run, times: int = 5) -> float:
    """Median seconds of `run()` (a library call), after one warm-up call."""
    run()
    ts = []
    for _ in range(times):
        t = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def side_by_side(name, args, configs: dict, arrays, peer, rounds: int = 9):
    """Time each of `configs` (label -> config) and the library call `peer` in `rounds`
    alternating rounds; returns (peer's median seconds, {label: (median seconds, median
    of the per-round ratios peer / ours)}). The best of a sample is timed again here, not
    taken from screening: the least of hundreds of noisy timings is biased low, and this
    host's speed drifts over seconds, so only ratios taken within a round are fair."""
    timers = {label: build(name, args, cfg).time_evaluator(number=1, repeat=1, min_repeat_ms=50)
              for label, cfg in configs.items()}
    ours = {label: [] for label in configs}
    ratios = {label: [] for label in configs}
    theirs = []
    for _ in range(rounds):
        # Each side's threads spin for a while after a call (OpenBLAS's, OpenMP's in
        # PyTorch, our pool's): let them sleep before the other side runs.
        time.sleep(0.3)
        theirs.append(peer_seconds(peer))
        time.sleep(0.3)
        for label, timer in timers.items():
            ours[label].append(timer(*arrays).median)
            ratios[label].append(theirs[-1] / ours[label][-1])
    return statistics.median(theirs), {label: (statistics.median(ours[label]),
                                               statistics.median(ratios[label]))
                                       for label in configs}
