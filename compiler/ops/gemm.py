"""A hand-written fast schedule of C = A @ B on CPUs, after TVM's "How to optimize GEMM
on CPU": B is packed into panels of `bn` columns so the inner loop reads it contiguously;
each `bm x bn` tile of C is accumulated in a local buffer that, fully unrolled over rows
and vectorized over columns, lives in vector registers for the whole k loop (by default
the target's register tile, register_tile.py: 4 x 64 floats, 16 zmm, with AVX-512; 4 x 16,
8 ymm, with AVX2); the tiles run in parallel, a column panel at a time.

The benchmarks and the code generation tests use it; the matmul template (issue 4)
exposes the same structure as knobs.
"""
from __future__ import annotations

from .. import te
from .register_tile import register_tile, vectorize_columns
from .shape import divisors


def packed_matmul(M: int, N: int, K: int, bm: int | None = None, bn: int | None = None,
                  kb: int = 4, dtype: str = "float32", target=None):
    """Schedule and arguments `[A, B, C]` of an M x K by K x N matmul; `bn` must divide N.
    bm, bn: the register tile's rows and columns (default None: register_tile's among the
    divisors of M and N, for `target`: default the entered one, else the host)."""
    rows, columns = register_tile(divisors(M), divisors(N), target)
    bm, bn = bm or rows, bn or columns
    if N % bn:
        raise ValueError(f"packed_matmul: the panel width bn={bn} must divide N={N}")
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    packed = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * packed[j // bn, k, j % bn], axis=k),
                   name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bm, bn)
    # Column panels outermost: consecutive tiles (and each thread's share of them)
    # reuse one packed panel of B from cache while rows of A stream past it.
    s[C].reorder(no, mo, mi, ni)
    tiles = s[C].fuse(no, mo)
    s[C].parallel(tiles)
    s[C].unroll(mi)
    vectorize_columns(s[C], ni, bn, target)
    s[CC].compute_at(s[C], tiles)
    mc, nc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=kb)
    s[CC].reorder(ko, ki, mc, nc)
    s[CC].unroll(mc)
    vectorize_columns(s[CC], nc, bn, target)
    x, _, z = s[packed].op.axis
    vectorize_columns(s[packed], z, bn, target)
    s[packed].parallel(x)
    return s, [A, B, C]
