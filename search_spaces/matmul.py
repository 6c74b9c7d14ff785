"""The GEMM-shaped templates, with the structure of the hand-written GEMM
(compiler/ops/gemm.py) as knobs:

- `matmul(M, N, K)`: C[M, N] = A[M, K] @ B[K, N];
- `dense(M, N, K)`: Y[M, N] = X[M, K] @ W[N, K].T, the graph's nn.dense (a graph kernel
  adds its elementwise tail, see schedule_dense);
- `dense_bias_relu(M, N, K)`: Y = relu(X @ W.T + b), one kernel: dense's schedule with
  the bias and relu as its tail;
- `dense_pack(M, N, K, block)`: Y = X @ W.T with W packed in panels of `block` rows
  ((N / block, K, block), compiler.ops.dense_pack), as a model's dense runs once its
  weights were packed at build time (AlterOpLayout): the column tile is the panel, and
  nothing is packed at run time;
- `batch_matmul(batch, M, N, K)`: C[b] = A[b] @ B[b].

Knobs: a three-level tiling of the rows (`tile_x`: outer, middle, and the register rows
that are unrolled) and a two-level tiling of the columns (`tile_y`: the inner part is
the vector width of the accumulator tile), the register tile bounded by the target's
vector registers (compiler/ops/register_tile.py), the reduction split (`tile_k`, its
inner loop, up to MAX_K_TILE, optionally unrolled), whether and where the right operand
is packed into column panels (`pack_b`: 1 all at once before the product, 2 at the outer
parallel loop, so each iteration packs the panels it reads just before reading them, 0
not packed), whether column panels or row blocks are walked outermost, and how many
outer loops are fused and run in parallel. The accumulator is computed at the middle row
loop, so it holds one register tile; in dense_bias_relu the bias and relu are applied as
the tile is stored.

Each template names its numpy reference (accumulating in float64), written above it.
"""
from __future__ import annotations

import numpy as np

from compiler import ops, te
from compiler.graph.ir.op.nn import unpack_dense_weight

from .fallback import MIDDLE_TILE
from compiler.ops.register_tile import register_bounds
from .binding import Binding, dense_call, dense_workload, float32, matmul_call
from .registry import template

NO_PACK, PACK_AT_ROOT, PACK_AT_OUTER = 0, 1, 2  # values of the pack_b knob
MAX_K_TILE = 64  # the inner reduction loop, unrolled by unroll_k
GATHER_COLUMNS = 32
"""The widest fallback column tile of a right operand packed from its transpose (dense's
W[N, K]): a packed row gathers one float from each of that many rows of W, and more
rows than this evict each other from L1 (rows 4 KiB apart share a cache set): dense
64 x 1024 x 1024 on one Zen 5 core, 106 GFLOPS with 8 x 32 tiles, 63 with 4 x 64."""


def _register_tile(M: int, N: int, panel: int | None, gathered: bool):
    """`(most rows, fallback rows, fallback columns)` of the register tile (see
    _define_knobs)."""
    if panel is not None:
        most = ops.max_rows(panel)
        return most, ops.register_tile([r for r in ops.divisors(M) if r <= most], [panel])[0], \
            panel
    columns = [c for c in ops.divisors(N) if not gathered or c <= GATHER_COLUMNS]
    bounds = register_bounds(ops.divisors(M), columns)
    return bounds.rows, *bounds.fallback


def _define_knobs(cfg, M: int, N: int, K: int, panel: int | None = None,
                  gathered: bool = False) -> None:
    """The knobs. The register tile (tile_x's rows by tile_y's columns) is bounded by
    the target's registers (compiler/ops/register_tile.py), and the fallback is the bounds' tile,
    the bounds made for tiles at most GATHER_COLUMNS wide when `gathered` (the right
    operand is packed from its transpose); with `panel` (dense_pack: the weights come
    packed in panels of that many columns) the column tile is the panel, the rows as
    many as fit beside it, and there is no pack_b knob."""
    max_rows, rows, columns = _register_tile(M, N, panel, gathered)
    cfg.define_split("tile_x", M, num_outputs=3, filter=lambda e: e.size[-1] <= max_rows,
                     fallback=[-1, ops.largest_divisor(M // rows, MIDDLE_TILE), rows])
    cfg.define_split("tile_y", N, num_outputs=2, fallback=[-1, columns],
                     filter=lambda e: e.size[-1] == panel if panel
                     else ops.fits(max_rows, e.size[-1]))
    cfg.define_split("tile_k", K, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_K_TILE)
    if panel is None:
        cfg.define_knob("pack_b", [PACK_AT_ROOT, PACK_AT_OUTER, NO_PACK])
    cfg.define_knob("panels_outer", [1, 0])
    cfg.define_knob("unroll_k", [0, 1])
    cfg.define_knob("fuse_parallel", [2, 1])


def _right_operand(cfg, K: int, N: int, load, batch: tuple = ()):
    """`(packed stage or None, read(k, j, *b))`: the right operand element (k, j), from
    `load(k, j, *b)` directly or from panels of `bn` columns packed so that the inner
    loop reads them contiguously. A last panel past column N-1 repeats that column;
    those lanes are never read back, so the packing needs no condition."""
    bn = cfg["tile_y"].size[-1]
    if not cfg["pack_b"].val:
        return None, load
    panels = (N + bn - 1) // bn
    packed = te.compute((*[d for d in batch], panels, K, bn),
                        lambda *i: load(i[-2], te.min(i[-3] * bn + i[-1], N - 1), *i[:-3]),
                        name="packedB")
    return packed, lambda k, j, *b: packed[(*b, j // bn, k, j % bn)]


def _schedule(cfg, s, out, acc, packed, batch_axes=()) -> None:
    """Tile `out`, compute the accumulator stage `acc` at the middle row loop, pack."""
    *_, x, y = s[out].op.axis
    xo, xm, xi = cfg["tile_x"].apply(s, out, x)
    yo, yi = cfg["tile_y"].apply(s, out, y)
    outer = [yo, xo] if cfg["panels_outer"].val else [xo, yo]
    s[out].reorder(*batch_axes, *outer, xm, xi, yi)
    fused = [*batch_axes, *outer][: len(batch_axes) + cfg["fuse_parallel"].val]
    par = s[out].fuse(*fused) if len(fused) > 1 else fused[0]
    s[out].parallel(par)
    s[out].unroll(xi)
    columns = cfg["tile_y"].size[-1]
    ops.vectorize_columns(s[out], yi, columns)
    s[acc].compute_at(s[out], xm)
    *acc_batch, mc, nc = s[acc].op.axis
    ko, ki = cfg["tile_k"].apply(s, acc, s[acc].op.reduce_axis[0])
    s[acc].reorder(ko, ki, *acc_batch, mc, nc)
    s[acc].unroll(mc)
    ops.vectorize_columns(s[acc], nc, columns)
    if cfg["unroll_k"].val:
        s[acc].unroll(ki)
    if packed is None:
        return
    *pb, x, _, z = s[packed].op.axis
    ops.vectorize_columns(s[packed], z, columns)
    if cfg["pack_b"].val == PACK_AT_OUTER:
        s[packed].compute_at(s[out], par)  # inside a parallel loop: runs serially there
    else:
        s[packed].parallel(s[packed].fuse(*pb, x) if pb else x)


def matmul_reference(inputs, M, N, K, dtype):
    """numpy `matmul`: A @ B."""
    A, B = inputs
    return (A.astype("float64") @ B).astype(dtype)


def _matmul_workload(call) -> tuple | None:
    """A matmul of 2-D operands of one float dtype (float32 or float64)."""
    a, b = (a.ty for a in call.args)
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype not in ("float32",
                                                                         "float64"):
        return None
    (M, K), N = a.shape, b.shape[1]
    return (M, N, K, a.dtype)


@template("matmul", reference=matmul_reference, probes=[(7, 13, 37), (32, 48, 16)],
          binding=Binding("matmul", _matmul_workload,
                          compute=lambda args, cfg, ins: matmul_compute(cfg, *ins),
                          schedule=lambda args, cfg, s, anchor, out: schedule_matmul(
                              cfg, s, anchor, out),
                          call=matmul_call))
def matmul(cfg, M: int, N: int, K: int, dtype: str = "float32"):
    """C = A @ B; returns the schedule and [A, B, C]."""
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    _define_knobs(cfg, M, N, K)
    C = matmul_compute(cfg, A, B)
    s = te.create_schedule(C.op)
    schedule_matmul(cfg, s, C, C)
    return s, [A, B, C]


def matmul_compute(cfg, A, B):
    """The product stage C[i, j] = sum over k of A[i, k] * B[k, j], reading B through
    _right_operand; tagged "matmul"."""
    (M, K), N = ops.get_const_tuple(A.shape), ops.get_const_tuple(B.shape)[1]
    _, read_b = _right_operand(cfg, K, N, lambda k, j: B[k, j])
    k = te.reduce_axis((0, K), name="k")
    return te.compute((M, N), lambda i, j: te.sum(A[i, k] * read_b(k, j), axis=k), name="C",
                      tag="matmul")


def schedule_matmul(cfg, s, product, out) -> None:
    """Schedule the product stage `product` (from matmul_compute or dense_compute) by
    `cfg`, in a kernel whose output is `out`: `product` itself, accumulated in a local
    cache, or the last stage of an elementwise tail over it, whose stages between are
    inlined, `product` then being the accumulator, so the tail is applied as each
    register tile is stored."""
    packed = next((t for t in product.op.input_tensors() if t.op.name == "packedB"), None)
    if out is product:
        acc = s.cache_write(out, "local")
    else:
        ops.inline_tail(s, out, product)
        acc = product
    _schedule(cfg, s, out, acc, packed)


def dense_compute(cfg, X, W):
    """The dense stage Y[i, j] = sum over k of X[i, k] * W[j, k], reading W through
    _right_operand (packed into column panels when `pack_b` says so); tagged "dense"."""
    (M, K), N = ops.get_const_tuple(X.shape), ops.get_const_tuple(W.shape)[0]
    _, read_w = _right_operand(cfg, K, N, lambda k, j: W[j, k])
    k = te.reduce_axis((0, K), name="k")
    return te.compute((M, N), lambda i, j: te.sum(X[i, k] * read_w(k, j), axis=k),
                      name="dense", tag="dense")


def schedule_dense(cfg, s, dense, out) -> None:
    """Schedule the dense stage `dense` (from dense_compute): as schedule_matmul."""
    schedule_matmul(cfg, s, dense, out)


def dense_reference(inputs, M, N, K):
    """numpy `dense`: X @ W.T."""
    X, W = inputs
    return (X.astype("float64") @ W.T).astype("float32")


def _schedule_dense(args, cfg, s, anchor, out) -> None:
    schedule_dense(cfg, s, anchor, out)


@template("dense", reference=dense_reference, probes=[(7, 13, 37)],
          binding=Binding("nn.dense", dense_workload,
                          compute=lambda args, cfg, ins: dense_compute(cfg, *ins),
                          schedule=_schedule_dense, call=dense_call))
def dense(cfg, M: int, N: int, K: int):
    """Y = X @ W.T; returns the schedule and [X, W, Y]."""
    X = te.placeholder((M, K), name="X")
    W = te.placeholder((N, K), name="W")
    _define_knobs(cfg, M, N, K, gathered=True)
    Y = dense_compute(cfg, X, W)
    s = te.create_schedule(Y.op)
    schedule_dense(cfg, s, Y, Y)
    return s, [X, W, Y]


def dense_pack_reference(inputs, M, N, K, block):
    """numpy `dense_pack`: X @ W.T, W unpacked from its panels."""
    X, packed = inputs
    return (X.astype("float64") @ unpack_dense_weight(packed).T).astype("float32")


def _dense_pack_workload(call) -> tuple | None:
    """A float32 nn.contrib_dense_pack (a dense whose weights AlterOpLayout packed)."""
    if not float32(call):
        return None
    (M, K), (panels, _, block) = (a.ty.shape for a in call.args)
    return (M, panels * block, K, block)


def _dense_pack_altered(call, form) -> tuple | None:
    """The workload of a float32 nn.dense in its packed form (the form's rows, padded or
    not, and panels)."""
    args = dense_workload(call)
    return None if args is None else (form.rows, args[1], args[2], form.block)


@template("dense_pack", reference=dense_pack_reference, probes=[(7, 16, 37, 8)],
          binding=Binding("nn.contrib_dense_pack", _dense_pack_workload,
                          compute=lambda args, cfg, ins: ops.dense_pack(*ins),
                          schedule=_schedule_dense,
                          call=lambda M, N, K, block: dense_call(M, N, K),
                          altered=_dense_pack_altered, forms_of="nn.dense"))
def dense_pack(cfg, M: int, N: int, K: int, block: int):
    """Y = X @ W.T, W packed (N / block, K, block); returns the schedule and [X, Wp, Y]."""
    if block < 1 or N % block:
        raise ValueError(f"dense_pack: block {block} does not divide N = {N}")
    X = te.placeholder((M, K), name="X")
    packed = te.placeholder((N // block, K, block), name="W_packed")
    _define_knobs(cfg, M, N, K, panel=block)
    Y = ops.dense_pack(X, packed)
    s = te.create_schedule(Y.op)
    schedule_dense(cfg, s, Y, Y)
    return s, [X, packed, Y]


def dense_bias_relu_reference(inputs, M, N, K):
    """numpy `dense_bias_relu`: relu(X @ W.T + b)."""
    X, W, bias = inputs
    return np.maximum(X.astype("float64") @ W.T + bias, 0).astype("float32")


@template("dense_bias_relu", reference=dense_bias_relu_reference, probes=[(7, 13, 37)])
def dense_bias_relu(cfg, M: int, N: int, K: int):
    """Y = relu(X @ W.T + b) in one kernel; returns the schedule and [X, W, b, Y]."""
    X = te.placeholder((M, K), name="X")
    W = te.placeholder((N, K), name="W")
    bias = te.placeholder((N,), name="b")
    _define_knobs(cfg, M, N, K, gathered=True)
    D = dense_compute(cfg, X, W)
    Y = te.compute((M, N), lambda i, j: te.max(D[i, j] + bias[j], 0.0), name="Y")
    s = te.create_schedule(Y.op)
    schedule_dense(cfg, s, D, Y)
    return s, [X, W, bias, Y]


def batch_matmul_reference(inputs, batch, M, N, K):
    """numpy `batch_matmul`: A[b] @ B[b] for every b."""
    A, B = inputs
    return (A.astype("float64") @ B).astype("float32")


def batch_matmul_compute(cfg, A, B):
    """The product stage C[b, i, j] = sum over k of A[b, i, k] * B[b, k, j], reading B
    through _right_operand; tagged "batch_matmul"."""
    (batch, M, K), N = ops.get_const_tuple(A.shape), ops.get_const_tuple(B.shape)[2]
    _, read_b = _right_operand(cfg, K, N, lambda k, j, b: B[b, k, j], batch=(batch,))
    k = te.reduce_axis((0, K), name="k")
    return te.compute((batch, M, N), lambda b, i, j: te.sum(A[b, i, k] * read_b(k, j, b),
                                                           axis=k), name="C",
                      tag="batch_matmul")


def schedule_batch_matmul(cfg, s, product, out) -> None:
    """Schedule the product stage `product` (from batch_matmul_compute) by `cfg`, in a
    kernel whose output is `out` (the product, or an elementwise tail over it: as
    schedule_matmul); the batch axis is the outermost parallel one."""
    packed = next((t for t in product.op.input_tensors() if t.op.name == "packedB"), None)
    if out is product:
        acc = s.cache_write(out, "local")
    else:
        ops.inline_tail(s, out, product)
        acc = product
    _schedule(cfg, s, out, acc, packed, batch_axes=(s[out].op.axis[0],))


def _batch_matmul_workload(call) -> tuple | None:
    """A matmul of 3-D float32 operands of one batch extent (attention's products, as the
    ONNX importer writes them)."""
    a, b = (a.ty for a in call.args)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or not float32(call):
        return None
    (batch, M, K), N = a.shape, b.shape[2]
    return (batch, M, N, K)


def _batch_matmul_altered(call, form) -> tuple | None:
    """The workload of the matmul in its padded form (the form's rows and columns)."""
    args = _batch_matmul_workload(call)
    return None if args is None else (args[0], form.rows, form.columns, args[3])


@template("batch_matmul", reference=batch_matmul_reference, probes=[(2, 7, 13, 37)],
          binding=Binding("matmul", _batch_matmul_workload,
                          compute=lambda args, cfg, ins: batch_matmul_compute(cfg, *ins),
                          schedule=lambda args, cfg, s, anchor, out: schedule_batch_matmul(
                              cfg, s, anchor, out),
                          call=lambda batch, M, N, K: matmul_call(M, N, K, batch=(batch,)),
                          altered=_batch_matmul_altered))
def batch_matmul(cfg, batch: int, M: int, N: int, K: int):
    """C[b] = A[b] @ B[b] (attention's products); returns the schedule and [A, B, C]."""
    A = te.placeholder((batch, M, K), name="A")
    B = te.placeholder((batch, K, N), name="B")
    _define_knobs(cfg, M, N, K)
    C = batch_matmul_compute(cfg, A, B)
    s = te.create_schedule(C.op)
    schedule_batch_matmul(cfg, s, C, C)
    return s, [A, B, C]
