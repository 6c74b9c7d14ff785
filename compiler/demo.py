"""`make demo`: lower a scheduled matmul and print its loop nest, then check a small
instance of the same schedule against numpy with the IR interpreter.

Later issues turn this into a real tuning run (DESIGN.md)."""
from __future__ import annotations

import time

import numpy as np

import compiler
from compiler import te
from compiler.ir.interpreter import run


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
    s, args = scheduled_matmul(37, 29, 13, tile=8, k_tile=5)
    rng = np.random.default_rng(0)
    a = rng.random((37, 13), dtype="float32")
    b = rng.random((13, 29), dtype="float32")
    c = np.zeros((37, 29), dtype="float32")
    run(compiler.lower(s, args), a, b, c)
    err = float(np.abs(c - a @ b).max())
    print(f"# same schedule on 37x29x13 (splits that do not divide), run by the IR "
          f"interpreter: max |error| vs numpy = {err:.2e}")
    if err > 1e-4:
        raise SystemExit("demo: result differs from numpy")


if __name__ == "__main__":
    main()
