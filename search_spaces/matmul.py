"""The `matmul` template: C[M, N] = A[M, K] @ B[K, N], with the structure of the
hand-written GEMM (compiler/ops/gemm.py) as knobs.

Knobs: a three-level tiling of the rows (`tile_x`: outer, middle, and the register rows
that are unrolled) and a two-level tiling of the columns (`tile_y`: the inner part is the
vector width of the accumulator tile), the reduction split (`tile_k`, its inner loop
optionally unrolled), whether B is packed into column panels, whether column panels or
row blocks are walked outermost, and how many outer loops are fused and run in parallel.
The local accumulator is computed at the middle row loop, so it holds one register tile.
"""
from __future__ import annotations

from compiler import te

from .registry import template

MAX_REGISTER_ROWS = 16  # unrolled rows of the accumulator tile
MAX_VECTOR = 64         # columns of the accumulator tile (4 zmm of float32)


@template("matmul")
def matmul(cfg, M: int, N: int, K: int, dtype: str = "float32"):
    """C = A @ B; returns the schedule and [A, B, C]."""
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    cfg.define_split("tile_x", M, num_outputs=3, filter=lambda e: e.size[-1] <= MAX_REGISTER_ROWS)
    cfg.define_split("tile_y", N, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_VECTOR)
    cfg.define_split("tile_k", K, num_outputs=2, filter=lambda e: e.size[-1] <= 16)
    cfg.define_knob("pack_b", [1, 0])
    cfg.define_knob("panels_outer", [1, 0])
    cfg.define_knob("unroll_k", [0, 1])
    cfg.define_knob("fuse_parallel", [2, 1])

    bn = cfg["tile_y"].size[-1]
    k = te.reduce_axis((0, K), name="k")
    if cfg["pack_b"].val:
        panels = (N + bn - 1) // bn
        # The last panel may run past column N-1; it repeats that column instead, and
        # C never reads those lanes, so the packing needs no condition.
        packed = te.compute((panels, K, bn), lambda x, y, z: B[y, te.min(x * bn + z, N - 1)],
                            name="packedB")
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * packed[j // bn, k, j % bn], axis=k),
                       name="C")
    else:
        packed = None
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")

    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, xm, xi = cfg["tile_x"].apply(s, C, C.op.axis[0])
    yo, yi = cfg["tile_y"].apply(s, C, C.op.axis[1])
    outer = [yo, xo] if cfg["panels_outer"].val else [xo, yo]
    s[C].reorder(*outer, xm, xi, yi)
    par = s[C].fuse(*outer) if cfg["fuse_parallel"].val == 2 else outer[0]
    s[C].parallel(par)
    s[C].unroll(xi)
    s[C].vectorize(yi)
    s[CC].compute_at(s[C], xm)

    mc, nc = s[CC].op.axis
    ko, ki = cfg["tile_k"].apply(s, CC, s[CC].op.reduce_axis[0])
    s[CC].reorder(ko, ki, mc, nc)
    s[CC].unroll(mc)
    s[CC].vectorize(nc)
    if cfg["unroll_k"].val:
        s[CC].unroll(ki)
    if packed is not None:
        x, _, z = s[packed].op.axis
        s[packed].vectorize(z)
        s[packed].parallel(x)
    return s, [A, B, C]
