"""The 3x3 convolution by Winograd's minimal filtering F(m x m, 3 x 3) in the packed
NCHW[x]c layout (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks";
TOPI's conv2d_winograd_without_weight_transform), and the schedule of its kernel.

The output is cut into m x m tiles; each tile comes from an (m + 2) x (m + 2) tile of
the padded input, d, and the 3 x 3 filter g as

    Y = A^T [ (G g G^T) (.) (B^T d B) ] A        ((.): elementwise, per channel pair)

so that the (m + 2)^2 elementwise products, summed over the input channels, are
(m + 2)^2 independent matrix products (the batched GEMM, "bgemm") that do
(m + 2)^2 / (9 m^2) of the direct convolution's multiplications: 4 / 9 for F(2x2, 3x3),
1 / 4 for F(4x4, 3x3). U = G g G^T is the weights' transform, computed once when the
model is built (winograd_weight_transform: the weights are constants), into the layout
U[alpha, alpha, K/y, C, y] (alpha = m + 2) whose innermost y output channels are the
vector the bgemm accumulates, as the direct packed kernel's (conv2d_nchwc.py).

Stages of the kernel, each computed whole or a block of output tile rows at a time:
the padded input ("pad", rows and columns to a whole number of tiles), inlined into the
loads of a tile (a border test per load instead of a parallel pass that writes and
rereads the input: 3-7% of ResNet's Winograd kernels on Zen 5); "data_pack_rows"
and "data_pack", V = B^T d B as two passes of one matrix each (one vector of a channel
block per value: 2 * alpha^2 * alpha FMAs per tile, not alpha^4, and the registers of one
pass's row only); "bgemm", M[e, u, p, k] = sum_c V[e, u, p, c] U[e, u, k, c], tiled in
registers like the direct kernel (rows of tiles by vectors of output channels, one
broadcast of V feeding every vector); and the output transform Y = A^T M A, the anchor
("conv2d_winograd", computed a whole output tile at a time where the registers hold
its m * m accumulators, else a row of m), into which the elementwise tail (bias, ReLU,
a residual add) is inlined.

Whole, each stage is its own parallel loop and the transformed data V and products M
(1.8 MB each on ResNet's 64-channel 56x56 layer) pass between the cores' caches and L3.
By blocks (`block_rows` rows of output tiles), one parallel loop runs the three stages
on one block at a time, so its V and M (130 KB for a row of 14 tiles) stay in the core's
L2; every block rereads the transformed weights, which is cheap only while they fit in
L2 too. Measured on Zen 5, by blocks of one row: the 64-channel 56x56 layer 180 us
against 196 whole (weights 590 KB), the 128-channel 28x28 one 7% slower (2.4 MB), the
256-channel 14x14 one 10% slower. A tuning knob, not the fallback: with the blocks' loop
around all three stages, LLVM keeps one of the transforms' constant vectors on the stack
(a reload per block, but the fallback must move no vector to the stack at all).

The constant matrices are `if_then_else` chains on the loop indices: once a loop is
unrolled the conditions are constants. A term whose entry is 0 is -0.0 rather than a
product by 0 (which no IEEE rule removes: NaN * 0 is NaN, and LLVM kept 200 such vector
products in F(4x4)'s kernel), and the simplifier drops `+ -0.0` and `* 1.0`, both exact,
which leaves the transforms' few additions (and a third less IR to lower and compile).
A transform's row loop (e, or the output tile's rows) is therefore unrolled, and placed
outside its parallel loop: alpha (or m) parallel loops of one row each. Unrolled
inside, LLVM shared the loads of one tile among its rows and kept more values live than
the registers hold (150-300 vector moves to the stack per kernel); one row per loop
spills none (haswell and skylake-avx512, F(2x2) and F(4x4) but haswell's F(4x4), see
winograd_tile_size), at about 5% of the kernel's time.

Measured on Zen 5 (AVX-512, 2 cores, blocks of 16), against the direct packed kernel's
fallback (about 500 GFLOPS), one layer, cold caches: F(4x4, 3x3) 2.3-2.4x faster on
ResNet's 64-channel 56x56 and 128-channel 28x28 layers, F(2x2, 3x3) 1.6x on the
256-channel 14x14 one and no faster on the 512-channel 7x7 one (its 9.4 MB of transformed
weights come from memory every call, and a 7x7 output has few tiles). winograd_tile_size
is that rule.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..lang.tensor import Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .pattern import OpPattern, register_pattern
from .register_tile import default_tile_rows, default_winograd_tile
from .shape import OpError, check_tensor, shape_str, static_shape
from .tail import inline_tail

TILE_SIZES = (2, 4)
"""The output tile sizes m of F(m x m, 3 x 3) this module has matrices for."""

MIN_WINOGRAD_OUTPUT = 14
"""The smallest output height and width an untuned 3x3 convolution runs by Winograd
(see the module docstring: at 7x7, no faster)."""

MIN_WINOGRAD_CHANNELS = 16
"""The fewest input and output channels a Winograd convolution has: with fewer, the
transforms cost more than the multiplications they save."""


def winograd_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B^T, G, A^T) of F(m x m, 3 x 3) in float64, with the interpolation points 0, 1,
    -1 (m = 2) and 0, 1, -1, 2, -2 (m = 4) and infinity (Lavin and Gray's)."""
    if m == 2:
        bt = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
        g = [[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]]
        at = [[1, 1, 1, 0], [0, 1, -1, -1]]
    elif m == 4:
        bt = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
              [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]
        g = [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
             [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]
        at = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
              [0, 1, -1, 8, -8, 1]]
    else:
        raise OpError(f"conv2d_winograd: tile_size must be one of {TILE_SIZES}, got {m!r}")
    return (np.array(bt, np.float64), np.array(g, np.float64), np.array(at, np.float64))


def winograd_tile_size(kernel: tuple[int, int], stride: tuple[int, int],
                       dilation: tuple[int, int], out_hw: tuple[int, int],
                       channels: tuple[int, int], target=None) -> int | None:
    """The tile size m a convolution of this window runs F(m x m, 3 x 3) with on `target`
    (default: the entered one, else the host), or None for one that runs directly: 3x3,
    stride 1, no dilation, at least MIN_WINOGRAD_CHANNELS input and output channels and
    an output of at least MIN_WINOGRAD_OUTPUT each way; m = 4 from 28x28 up on a target
    of 32 vector registers, else 2 (module docstring). With 16 registers (AVX2), F(4x4)'s
    data transform spills: its rows' common terms need more than 16 (2 vector moves to
    the stack per row, haswell), where F(2x2)'s and every AVX-512 transform need none."""
    if tuple(kernel) != (3, 3) or tuple(stride) != (1, 1) or tuple(dilation) != (1, 1):
        return None
    if min(channels) < MIN_WINOGRAD_CHANNELS or min(out_hw) < MIN_WINOGRAD_OUTPUT:
        return None
    wide = Target.resolve(target).vector_registers >= 32
    return 4 if min(out_hw) >= 28 and wide else 2


def winograd_weight_transform(weight: np.ndarray, m: int, block: int) -> np.ndarray:
    """U = G g G^T of OIHW 3x3 weights (K, C, 3, 3), as float32 in the layout
    (alpha, alpha, K/block, C, block) the kernel reads (module docstring)."""
    _, g, _ = winograd_matrices(m)
    k, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3) or k % block:
        raise OpError(f"winograd_weight_transform: weights of shape {weight.shape} are not "
                      f"3x3 OIHW with output channels in blocks of {block}")
    u = np.einsum("ar,kcrs,bs->abkc", g, weight.astype(np.float64), g)
    alpha = m + 2
    return np.ascontiguousarray(
        u.reshape(alpha, alpha, k // block, block, c).transpose(0, 1, 2, 4, 3)
    ).astype(np.float32)


def winograd_conv2d_reference(data: np.ndarray, u: np.ndarray, m: int,
                              padding: tuple[int, int, int, int]) -> np.ndarray:
    """numpy, float64: the convolution of NCHW `data` by transformed weights `u`
    (alpha, alpha, K/y, C, y) computed by the formula of the module docstring, tile by
    tile: NCHW (N, K, OH, OW). (For U = G g G^T, the convolution by g.)"""
    bt, _, at = winograd_matrices(m)
    alpha = m + 2
    n, c, h, w = data.shape
    kb, y = u.shape[2], u.shape[4]
    top, left, bottom, right = padding
    oh, ow = h + top + bottom - 2, w + left + right - 2
    th, tw = -(-oh // m), -(-ow // m)
    padded = np.zeros((n, c, th * m + 2, tw * m + 2))
    padded[:, :, top:top + h, left:left + w] = data
    uk = u.astype(np.float64).transpose(0, 1, 2, 4, 3).reshape(alpha, alpha, kb * y, c)
    out = np.zeros((n, kb * y, th * m, tw * m))
    for i in range(th):
        for j in range(tw):
            d = padded[:, :, i * m:i * m + alpha, j * m:j * m + alpha]
            v = np.einsum("ea,ncab,ub->nceu", bt, d, bt)
            mm = np.einsum("nceu,eukc->nkeu", v, uk)
            out[:, :, i * m:(i + 1) * m, j * m:(j + 1) * m] = \
                np.einsum("ie,nkeu,ju->nkij", at, mm, at)
    return out[:, :, :oh, :ow]


def _entry(matrix: np.ndarray, i, j):
    """matrix[i, j] for index expressions i and j: a chain of if_then_else over the
    nonzero entries, which folds to a constant once both indices are unrolled."""
    i, j = getattr(i, "var", i), getattr(j, "var", j)
    expr = te.const(0.0, "float32")
    for a in range(matrix.shape[0]):
        for b in range(matrix.shape[1]):
            if matrix[a, b] != 0:
                expr = te.if_then_else((i == a) & (j == b),
                                       te.const(float(matrix[a, b]), "float32"), expr)
    return expr


def _term(x, *entries):
    """x times the matrix entries, or -0.0 where one of them is 0: a term of a transform's
    sum that, once the entries fold to constants, adds nothing (x + -0.0 is x, exactly,
    which the simplifier folds, and the accumulator's self-assignment goes; x * 0.0
    would stay, NaN * 0 being NaN)."""
    nonzero = entries[0] != 0.0
    for entry in entries[1:]:
        nonzero = nonzero & (entry != 0.0)
    product = x
    for entry in entries:
        product = product * entry
    return te.if_then_else(nonzero, product, te.const(-0.0, "float32"))


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def conv2d_winograd_nchwc(data, weight, tile_size=4, padding=(1, 1, 1, 1)):
    """The 3x3, stride 1 convolution of packed data (N, C/x, H, W, x) by weights that
    winograd_weight_transform made, (alpha, alpha, K/y, C, y), alpha = tile_size + 2,
    with zero padding (top, left, bottom, right): the packed output (N, K/y, OH, OW, y),
    by F(tile_size x tile_size, 3 x 3) (module docstring)."""
    op = "conv2d_winograd"
    check_tensor(op, "data", data, 5)
    check_tensor(op, "weight", weight, 5)
    bt, _, at = winograd_matrices(tile_size)
    m, alpha = tile_size, tile_size + 2
    n, cb, h, w, x = static_shape(op, "data", data)
    a1, a2, kb, c, y = static_shape(op, "weight", weight)
    if (a1, a2, c) != (alpha, alpha, cb * x):
        raise OpError(f"{op}: weight of shape {shape_str(weight.shape)} is not the "
                      f"F({m}x{m}, 3x3) transform of 3x3 weights for data of shape "
                      f"{shape_str(data.shape)} (it takes ({alpha}, {alpha}, K/y, "
                      f"{cb * x}, y))")
    top, left, bottom, right = padding
    oh, ow = h + top + bottom - 2, w + left + right - 2
    if oh < 1 or ow < 1:
        raise OpError(f"{op}: data of shape {shape_str(data.shape)} with padding "
                      f"{padding!r} is smaller than the 3x3 window")
    th, tw = -(-oh // m), -(-ow // m)
    tiles = n * th * tw
    pad = te.compute(
        (n, cb, th * m + 2, tw * m + 2, x),
        lambda b, cc, i, j, v: te.if_then_else(
            (i >= top) & (i < h + top) & (j >= left) & (j < w + left),
            data[b, cc, i - top, j - left, v], 0.0), name="pad")
    ra = te.reduce_axis((0, alpha), name="ra")
    rows = te.compute(
        (alpha, alpha, tiles, c),
        lambda e, col, p, cc: te.sum(_term(
            pad[p // (th * tw), cc // x, (p // tw) % th * m + ra, p % tw * m + col, cc % x],
            _entry(bt, e, ra)), axis=ra), name="data_pack_rows")
    rb = te.reduce_axis((0, alpha), name="rb")
    packed = te.compute(
        (alpha, alpha, tiles, c),
        lambda e, u, p, cc: te.sum(_term(rows[e, rb, p, cc], _entry(bt, u, rb)), axis=rb),
        name="data_pack")
    rc = te.reduce_axis((0, c), name="rc")
    bgemm = te.compute(
        (alpha, alpha, tiles, kb, y),
        lambda e, u, p, k, v: te.sum(packed[e, u, p, rc] * weight[e, u, k, rc, v], axis=rc),
        name="bgemm")
    sa = te.reduce_axis((0, alpha), name="sa")
    sb = te.reduce_axis((0, alpha), name="sb")
    return te.compute(
        (n, kb, oh, ow, y),
        lambda b, k, i, j, v: te.sum(
            _term(bgemm[sa, sb, (b * th + i // m) * tw + j // m, k, v],
                  _entry(at, i % m, sa), _entry(at, j % m, sb)), axis=[sa, sb]),
        name="conv2d_winograd")


def schedule_winograd(s: Schedule, out: Tensor, conv: Tensor, rows: int, blocks: int,
                      tile_rows: int = 1, rows_outer: bool = True,
                      block_rows: int = 0) -> None:
    """Schedule the Winograd kernel whose anchor is `conv` and whose output is `out`
    (`conv`, or its inlined elementwise tail): the bgemm's register tile `rows` input
    tiles by `blocks` output-channel blocks, the output transform computed `tile_rows`
    rows of a tile at a time (1 or the tile size); `rows_outer`: the transforms' row
    loops outside their tile loops (no spills), else inside, per tile; `block_rows`: 0,
    each stage whole, in parallel (with `rows_outer`, one parallel loop per row), or the
    rows of output tiles per block, one parallel loop over the blocks that transforms,
    multiplies and transforms back a block at a time (module docstring)."""
    bgemm = conv.op.input_tensors()[0]
    packed, _ = bgemm.op.input_tensors()
    (rows_stage,) = packed.op.input_tensors()
    (pad,) = rows_stage.op.input_tensors()
    alpha = int(bgemm.shape[0])
    m = alpha - 2
    x = int(pad.shape[4])
    # the padding is read where a tile is loaded (module docstring: no parallel pass)
    s[pad].compute_inline()
    # Y = A^T M A, with the tail, tile by tile
    if out is conv:
        out_acc = s.cache_write(out, "local")
    else:
        inline_tail(s, out, conv)
        out_acc = conv
    o = s[out]
    n, k, i, j, v = o.op.axis
    if block_rows:
        ib, i = o.split(i, factor=m * block_rows)
    io, ii = o.split(i, factor=m)
    jo, ji = o.split(j, factor=m)
    iio, iii = o.split(ii, factor=tile_rows)
    inner = [iio, io, jo] if rows_outer else [io, jo, iio]
    if block_rows:
        o.reorder(n, ib, k, *inner, iii, ji, v)
    elif rows_outer:  # the row loop outside the parallel one
        o.reorder(iio, n, k, io, jo, iii, ji, v)
    else:
        o.reorder(n, k, *inner, iii, ji, v)
    at = o.fuse(n, ib) if block_rows else o.fuse(n, k, io)
    o.parallel(at)
    o.unroll(iio)
    o.unroll(ji)
    o.vectorize(v)
    s[out_acc].compute_at(o, inner[-1])
    an, ak, ai, aj, av = s[out_acc].op.axis
    s[out_acc].reorder(*s[out_acc].op.reduce_axis, an, ak, ai, aj, av)
    for axis in (*s[out_acc].op.reduce_axis, ai, aj):
        s[out_acc].unroll(axis)
    s[out_acc].vectorize(av)
    # M, a register tile of rows x blocks vectors of output channels
    acc = s.cache_write(bgemm, "local")
    e, u, p, k, v = s[bgemm].op.axis
    ko, ki = s[bgemm].split(k, factor=blocks)
    po, pi = s[bgemm].split(p, factor=rows)
    s[bgemm].reorder(e, u, ko, po, pi, ki, v)
    if block_rows:
        s[bgemm].compute_at(o, at)
    else:
        s[bgemm].parallel(s[bgemm].fuse(e, u, ko))
    s[bgemm].vectorize(v)
    s[acc].compute_at(s[bgemm], po)
    ae, au, ap, ak, av = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, ae, au, ap, ak, av)
    s[acc].unroll(ap)
    s[acc].unroll(ak)
    s[acc].vectorize(av)
    _schedule_data_pack(s, packed, x, rows_outer, (o, at) if block_rows else None)


def _schedule_data_pack(s: Schedule, packed: Tensor, x: int, rows_outer: bool, at) -> None:
    """V = B^T d B per row e, tile and channel block of `x` lanes (rows `e` outside the
    tiles with `rows_outer`), computed at `at` ((stage, loop): a block of the output) or,
    for None, whole in parallel; its first pass computed per tile and channel block."""
    (rows_stage,) = packed.op.input_tensors()
    e, u, p, c = s[packed].op.axis
    co, ci = s[packed].split(c, factor=x)
    s[packed].reorder(*([e, p, co] if rows_outer else [p, co, e]), u, ci)
    pc = s[packed].fuse(p, co)
    if at is not None:
        s[packed].compute_at(*at)
    else:
        s[packed].parallel(pc)
    s[packed].unroll(e)  # the matrices' entries are constants only in unrolled loops
    s[packed].unroll(u)
    s[packed].unroll(s[packed].op.reduce_axis[0])
    s[packed].vectorize(ci)
    s[rows_stage].compute_at(s[packed], pc)
    re, rcol, rp, rc = s[rows_stage].op.axis
    s[rows_stage].reorder(rp, re, rcol, *s[rows_stage].op.reduce_axis, rc)
    for axis in (rcol, *s[rows_stage].op.reduce_axis):
        s[rows_stage].unroll(axis)
    s[rows_stage].vectorize(rc)


def schedule_conv2d_winograd_nchwc(out: Tensor, conv: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (`conv`, or its elementwise tail) from
    the Winograd convolution `conv` for `target` (default: the entered one, else the
    host): its default_winograd_tile and default_tile_rows, each stage whole."""
    s = create_schedule(out.op)
    _, kb, _, _, y = (int(d) for d in conv.shape)
    m = int(conv.op.input_tensors()[0].shape[0]) - 2
    target = Target.resolve(target)
    rows, blocks = default_winograd_tile(target, kb, y)
    schedule_winograd(s, out, conv, rows, blocks, default_tile_rows(target, m, y))
    return s
