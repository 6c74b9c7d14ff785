"""The compiler on its own, no tuning (`make demo-compiler`): lower a hand-scheduled
matmul and print its loop nest, then build the fast GEMM schedule (compiler/ops/gemm.py)
to native code, check it against numpy and time the two side by side.

    python examples/compiler_demo.py      # with the repository root on PYTHONPATH, or
                                          # the package installed (pip install -e .)

`make demo` shows the main job instead: a tuning run with `autosched`."""
from __future__ import annotations

import time

import numpy as np

import compiler
from compiler import te
from compiler.ops.gemm import packed_matmul


def scheduled_matmul(M: int, N: int, K: int, tile: int = 32, k_tile: int = 4):
    """C = A @ B, tiled, with the reduction split and the inner loops vectorized."""
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], tile, tile)
    ko, ki = s[C].split(k, factor=k_tile)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s, [A, B, C]


def main() -> None:
    s, args = scheduled_matmul(1024, 1024, 1024)
    start = time.perf_counter()
    func = compiler.lower(s, args)
    print(f"# matmul 1024x1024x1024, tiled 32x32, k split by 4 "
          f"(lowered in {1000 * (time.perf_counter() - start):.1f} ms)")
    print(func)

    n = 1024
    start = time.perf_counter()
    f = compiler.build(*packed_matmul(n, n, n))
    built = time.perf_counter() - start
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype="float32")
    b = rng.random((n, n), dtype="float32")
    c = np.zeros((n, n), dtype="float32")
    f(a, b, c)
    err = float(np.abs(c - a @ b).max())
    ours = f.time_evaluator(number=1, repeat=5, min_repeat_ms=50)(a, b, c).median
    theirs = []
    for _ in range(5):
        t = time.perf_counter()
        np.matmul(a, b, out=c)
        theirs.append(time.perf_counter() - t)
    theirs = float(np.median(theirs))
    gf = 2 * n ** 3 / 1e9
    print(f"# packed GEMM schedule, built for {compiler.Target('llvm')} in {built:.2f} s: "
          f"max |error| vs numpy = {err:.1e}")
    print(f"# ours {gf / ours:.0f} GFLOPS, numpy {gf / theirs:.0f} GFLOPS "
          f"(ratio ours/numpy {theirs / ours:.2f}; benchmarks/matmul.py measures properly)")
    if err > 1e-2:
        raise SystemExit("demo: result differs from numpy")


if __name__ == "__main__":
    main()
