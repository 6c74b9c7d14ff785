"""`c = a + b` on 16M float32: our kernel against numpy's `np.add(a, b, out=c)`.

Both run in this process, back to back and interleaved, on the same arrays; medians.

    .venv/bin/python benchmarks/add.py [--n 16777216] [--repeat 31]
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
from compiler import te  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=16 * 1024 * 1024)
    p.add_argument("--repeat", type=int, default=31)
    opt = p.parse_args()
    n = opt.n
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(inner)
    s[C].parallel(outer)
    f = compiler.build(s, [A, B, C])

    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    c = np.empty(n, "float32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    timer = f.time_evaluator(number=1, repeat=1)
    ours, base = [], []
    for _ in range(opt.repeat):
        ours.append(timer(a, b, c).median)
        t = time.perf_counter()
        np.add(a, b, out=c)
        base.append(time.perf_counter() - t)
    o, nb = statistics.median(ours), statistics.median(base)
    gbs = lambda sec: 3 * 4 * n / sec / 1e9  # noqa: E731
    print(f"a + b, {n} float32 ({n * 4 >> 20} MiB per array)")
    print(f"  ours   {o * 1e3:7.2f} ms  {gbs(o):6.1f} GB/s")
    print(f"  numpy  {nb * 1e3:7.2f} ms  {gbs(nb):6.1f} GB/s")
    print(f"  ratio ours/numpy time = {o / nb:.2f} (acceptance: at most 1.2)")


if __name__ == "__main__":
    main()
