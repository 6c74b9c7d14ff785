"""Whether the tuner's cold timings are cold, and what their flush costs: a parallel
kernel that sums an array of N floats in vectors (it streams each byte once, faster
than memory delivers it), timed warm (the array
left in the caches by the call before) and right after the runner's flush of its
arguments (compiler.runtime.native.flush_lines: clflushopt, or clflush where the CPU has
none, over every line, on the kernel pool), with the seconds of the flush itself. Cold
must be slower than warm for an array the caches hold, and the flush's cost grows with
the array, not with the last-level cache. Medians of 21 calls, one process.

    .venv/bin/python benchmarks/cache_flush.py [--sizes-kb 256,1024,4096,16384]
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import compiler
from compiler import te
from compiler.runtime.native import flush_lines
from compiler.target import host_target, usable_cores

CALLS = 21


def _summer(n: int, lanes: int):
    """A kernel summing n floats, (64, n / 64 / lanes, lanes), over the middle axis: 64
    rows in parallel, each a vector of `lanes` partial sums."""
    a = te.placeholder((64, n // 64 // lanes, lanes), name="A")
    k = te.reduce_axis((0, n // 64 // lanes), name="k")
    b = te.compute((64, lanes), lambda i, v: te.sum(a[i, k, v], axis=k), name="B")
    s = te.create_schedule(b.op)
    s[b].parallel(b.op.axis[0])
    s[b].vectorize(b.op.axis[1])
    return compiler.build(s, [a, b])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-kb", default="256,1024,4096,16384")
    args = parser.parse_args()
    host = host_target()
    print(f"{platform.processor() or platform.machine()}, {host.mcpu}, "
          f"clflushopt: {'+clflushopt' in host.features}, {usable_cores()} cores")
    print(f"{'array':>9} {'warm us':>9} {'cold us':>9} {'cold/warm':>9} {'flush us':>9}")
    for kb in (int(x) for x in args.sizes_kb.split(",")):
        n, lanes = kb * 256, host.vector_bits // 32
        f = _summer(n, lanes)
        a = np.random.default_rng(0).random((64, n // 64 // lanes, lanes), np.float32)
        b = np.zeros((64, lanes), np.float32)
        one = f.time_evaluator(number=1, repeat=1, warmup=False)
        one(a, b)
        warm = statistics.median(one(a, b).results[0] for _ in range(CALLS))
        cold, flush = [], []
        for _ in range(CALLS):
            start = time.perf_counter()
            flush_lines(a.ctypes.data, a.nbytes, usable_cores())
            flush.append(time.perf_counter() - start)
            cold.append(one(a, b).results[0])
        np.testing.assert_allclose(b, a.sum(1, dtype=np.float64), rtol=1e-3)
        c = statistics.median(cold)
        print(f"{kb:>6} KB {warm * 1e6:>9.1f} {c * 1e6:>9.1f} {c / warm:>9.2f} "
              f"{statistics.median(flush) * 1e6:>9.0f}")


if __name__ == "__main__":
    main()
