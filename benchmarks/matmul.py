"""Matmul 1024^3 float32: our hand-written schedule (compiler/ops/gemm.py) against numpy.

Prints, from one run: GFLOPS of our kernel and of numpy's default OpenBLAS (same
process, same thread count, in alternating short rounds), the ratio to numpy with
OPENBLAS_CORETYPE=SKYLAKEX (its AVX-512 kernels; needs a fresh process, so it runs in a
subprocess), our kernel on 2 threads against 1 thread, and the median build time
(lower + passes + LLVM + JIT). Medians throughout: the machine is shared and noisy.

    .venv/bin/python benchmarks/matmul.py [--size 1024] [--repeat 15]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler  # noqa: E402
from compiler.ops.gemm import packed_matmul  # noqa: E402
from benchmarks_common import numpy_matmul_seconds  # noqa: E402

def build_checked(n: int, cores: int, a, b):
    """Our kernel for `cores` threads, checked against numpy before it is timed."""
    f = compiler.build(*packed_matmul(n, n, n), target=f"llvm -num-cores={cores}")
    c = np.empty((n, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    return f


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=15)
    opt = p.parse_args()
    n, repeat = opt.size, opt.repeat
    cores = len(os.sched_getaffinity(0))
    flop = 2.0 * n ** 3
    gf = lambda sec: flop / sec / 1e9  # noqa: E731

    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    c = np.empty((n, n), "float32")
    for _ in range(3):
        np.matmul(a, b, out=c)
    ours, base, single, vs_numpy, scaling = [], [], [], [], []
    timer = build_checked(n, cores, a, b).time_evaluator(number=1, repeat=1, min_repeat_ms=50)
    timer1 = build_checked(n, 1, a, b).time_evaluator(number=1, repeat=1, min_repeat_ms=50)
    for _ in range(repeat):
        # Short rounds of ours, ours on 1 thread, numpy: this host's speed drifts over
        # seconds, so ratios are taken within a round. OpenBLAS's threads keep spinning
        # for a while after a call and would steal a core from our pool: let them sleep.
        time.sleep(0.3)
        ours.append(timer(a, b, c).median)
        single.append(timer1(a, b, c).median)
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            np.matmul(a, b, out=c)
            runs.append(time.perf_counter() - t)
        base.append(statistics.median(runs))
        vs_numpy.append(base[-1] / ours[-1])
        scaling.append(single[-1] / ours[-1])
    ours_s, numpy_s, one_s = (statistics.median(x) for x in (ours, base, single))
    skx_s = numpy_matmul_seconds(n, repeat, "SKYLAKEX")

    builds = []
    for _ in range(5):
        t = time.perf_counter()
        s, args = packed_matmul(n, n, n)
        compiler.build(s, args)
        builds.append(time.perf_counter() - t)

    print(f"matmul {n}x{n}x{n} float32, {cores} threads, target {compiler.Target('llvm')}")
    print(f"  ours                         {gf(ours_s):7.1f} GFLOPS  ({ours_s * 1e3:.2f} ms)")
    print(f"  numpy (OpenBLAS default)     {gf(numpy_s):7.1f} GFLOPS  ratio ours/numpy = "
          f"{statistics.median(vs_numpy):.2f} (median of per-round ratios)")
    print(f"  numpy (OPENBLAS_CORETYPE=SKYLAKEX, subprocess) {gf(skx_s):7.1f} GFLOPS  "
          f"ratio ours/numpy-avx512 = {skx_s / ours_s:.2f}")
    print(f"  ours on 1 thread             {gf(one_s):7.1f} GFLOPS  scaling {cores} vs 1 "
          f"thread = {statistics.median(scaling):.2f}x (median of per-round ratios)")
    print(f"  build time (lower + passes + LLVM + JIT): median {statistics.median(builds):.3f} s "
          f"(min {min(builds):.3f}, max {max(builds):.3f})")


if __name__ == "__main__":
    main()
