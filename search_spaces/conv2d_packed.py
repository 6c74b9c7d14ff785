"""The `conv2d_nchw_packed` template: the convolution of `conv2d_nchw` (same arguments,
tensors and numpy reference), computed in a packed layout inside the kernel, after
TVM's x86 conv2d_NCHWc.

Inside, the input is repacked (and zero padded) as data[N, C/ic, H, W, ic] and the kernel
as kernel[K/oc, C/ic, R, S, ic, oc]; the convolution writes out[N, K/oc, OH, OW, oc], and
a last stage unpacks that to NCHW. The vector runs along `oc` output channels: every
input element is broadcast once and multiplied into `oc` channels at a time, so the
width of the output rows (56 in ResNet) no longer has to fit the vector width. The
register tile is `ow` output columns by `oc` channels, accumulated over the input
channels and the kernel window.

Knobs: the input-channel block (`tile_ic`), the output-channel block, which is the
vector width (`tile_oc`), the output columns of the register tile (`tile_ow`), whether
the input-channel blocks run outside or inside the kernel window (`ic_outer`), whether
the window's columns and rows are unrolled (`unroll_kw`, `unroll_kh`), how many outer
loops are fused and run in parallel (`fuse_parallel`), and where the packed result is
unpacked (`unpack_at`): in a last stage over the whole packed output (UNPACK_AT_ROOT),
or tile by tile, the convolution computed at the NCHW output's column-tile loop
(UNPACK_AT_TILE), so the register tile goes straight to NCHW and no packed output is
written and read back. The accumulator is computed at the column-tile loop either way.
The register tile, `tile_ow` columns by `tile_oc` channels, is bounded by the target's
registers and the fallback is the bounds' tile (compiler/ops/register_tile.py).
"""
from __future__ import annotations

from compiler import ops, te

from .conv2d import conv2d_nchw_reference, output_size
from compiler.ops.register_tile import register_bounds
from .registry import template

MIN_CHANNEL_BLOCK = 4  # output channels of a block, unless the block is all of them
UNPACK_AT_ROOT, UNPACK_AT_TILE = 0, 1  # values of the unpack_at knob


def _channel_blocks(K: int) -> list[int]:
    """The output-channel blocks (`tile_oc`) a space may take: the divisors of K of at
    least MIN_CHANNEL_BLOCK channels, or all of K, whose one row fits the registers;
    where none does (a prime K wider than the registers hold: 67 on AVX2), the widest
    divisor that does, so that the space is never empty."""
    fitting = [b for b in ops.divisors(K) if ops.fits(1, b)]
    return [b for b in fitting if b >= MIN_CHANNEL_BLOCK or b == K] or fitting[-1:]


def _define_knobs(cfg, C: int, K: int, OW: int) -> None:
    """The knobs (see the module docstring), their tiles bounded by the register rule."""
    blocks = _channel_blocks(K)
    bounds = register_bounds(ops.divisors(OW), blocks)
    columns, channels = bounds.fallback
    cfg.define_split("tile_ic", C, num_outputs=2, filter=lambda e: e.size[-1] <= 64)
    cfg.define_split("tile_oc", K, num_outputs=2, fallback=[-1, channels],
                     filter=lambda e: e.size[-1] in blocks and ops.fits(bounds.rows, e.size[-1]))
    cfg.define_split("tile_ow", OW, num_outputs=2, fallback=[-1, columns],
                     filter=lambda e: e.size[-1] <= bounds.rows)
    cfg.define_knob("ic_outer", [1, 0])
    cfg.define_knob("unroll_kw", [1, 0], fallback=0)  # as fast, and spills less on AVX2
    cfg.define_knob("unroll_kh", [0, 1])
    cfg.define_knob("fuse_parallel", [3, 2])
    cfg.define_knob("unpack_at", [UNPACK_AT_TILE, UNPACK_AT_ROOT])


@template("conv2d_nchw_packed", reference=conv2d_nchw_reference,
          probes=[(1, 5, 9, 11, 7, 3, 3, 1, 1)])
def conv2d_nchw_packed(cfg, N: int, C: int, H: int, W: int, K: int, R: int, S: int,
                       stride: int = 1, padding: int = 0):
    """2-D convolution with zero padding, packed inside; returns the schedule and
    [data, kernel, out] (NCHW, as conv2d_nchw)."""
    OH, OW = output_size("conv2d_nchw_packed", H, W, R, S, stride, padding)
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((K, C, R, S), name="kernel")
    _define_knobs(cfg, C, K, OW)
    ic, oc = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]

    HP, WP = H + 2 * padding, W + 2 * padding
    packed_data = te.compute(
        (N, C // ic, HP, WP, ic),
        lambda n, c, y, x, ci: te.if_then_else(
            (y >= padding) & (y < H + padding) & (x >= padding) & (x < W + padding),
            data[n, c * ic + ci, y - padding, x - padding], 0.0),
        name="packed_data")
    packed_kernel = te.compute(
        (K // oc, C // ic, R, S, ic, oc),
        lambda o, c, r, s, ci, oi: kernel[o * oc + oi, c * ic + ci, r, s],
        name="packed_kernel")
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, S), name="rx")
    conv = te.compute(
        (N, K // oc, OH, OW, oc),
        lambda n, o, y, x, oi: te.sum(
            packed_data[n, rc // ic, y * stride + ry, x * stride + rx, rc % ic]
            * packed_kernel[o, rc // ic, ry, rx, rc % ic, oi], axis=[rc, ry, rx]),
        name="conv")
    out = te.compute((N, K, OH, OW), lambda n, k, y, x: conv[n, k // oc, y, x, k % oc],
                     name="out")

    s = te.create_schedule(out.op)
    n, c, y, _, ci = s[packed_data].op.axis
    s[packed_data].parallel(s[packed_data].fuse(n, c, y))
    s[packed_data].vectorize(ci)
    o, c, *_, oi = s[packed_kernel].op.axis
    s[packed_kernel].parallel(s[packed_kernel].fuse(o, c))
    ops.vectorize_columns(s[packed_kernel], oi, oc)

    if cfg["unpack_at"].val == UNPACK_AT_TILE:
        acc = conv  # computed tile by tile, where out needs it: it is the accumulator
        n, k, y, x = s[out].op.axis
        ko, ki = s[out].split(k, factor=oc)
        xo, xi = cfg["tile_ow"].apply(s, out, x)
        s[out].reorder(n, ko, y, xo, ki, xi)
        s[out].parallel(s[out].fuse(*[n, ko, y][: cfg["fuse_parallel"].val]))
        s[out].vectorize(xi)
        s[conv].compute_at(s[out], xo)
    else:
        acc = s.cache_write(conv, "local")
        n, o, y, x, oi = s[conv].op.axis
        xo, xi = cfg["tile_ow"].apply(s, conv, x)
        s[conv].reorder(n, o, y, xo, xi, oi)
        s[conv].parallel(s[conv].fuse(*[n, o, y][: cfg["fuse_parallel"].val]))
        ops.vectorize_columns(s[conv], oi, oc)
        s[acc].compute_at(s[conv], xo)
        n, k, *_ = s[out].op.axis
        s[out].parallel(s[out].fuse(n, k))
        s[out].vectorize(s[out].op.axis[-1])
    *spatial, ax, aoi = s[acc].op.axis
    rc, ry, rx = s[acc].op.reduce_axis
    rco, rci = cfg["tile_ic"].apply(s, acc, rc)
    window = [rco, ry, rx] if cfg["ic_outer"].val else [ry, rx, rco]
    s[acc].reorder(*window, rci, *spatial, ax, aoi)
    s[acc].unroll(ax)
    ops.vectorize_columns(s[acc], aoi, oc)
    if cfg["unroll_kw"].val:
        s[acc].unroll(rx)
    if cfg["unroll_kh"].val:
        s[acc].unroll(ry)
    return s, [data, kernel, out]
