"""The `conv2d_nchw` template: compiler.ops.conv2d_nchw (zero padding as a stage of its
own) with a schedule whose knobs are below.

Knobs: tiles of the output channels (`tile_f`, the inner part unrolled in the register
tile), of the output rows (`tile_y`) and of the output columns (`tile_x`, the inner part
is the vector width), the split of the input channels (`tile_c`), whether the kernel
window's loops run outside or inside the channel blocks, whether its columns and rows
are unrolled, whether the padded input is a separate stage or inlined into the convolution,
how many outer loops are fused and run in parallel, and where the local accumulator is
computed (`acc_at`, see schedule_output). The register tile, rows by channels by one
vector of columns, is bounded by the target's registers (register_tile_bounds).

The numpy reference sums, over the R*S kernel positions, one tensordot of the strided
window of the padded input with that kernel column: fast enough for ResNet layers.
"""
from __future__ import annotations

import numpy as np

from compiler import Target, ops, te
from compiler.ops.conv2d_schedule import MAX_CHANNELS

from .registry import template

ACC_AT_ROW, ACC_AT_TILE = 0, 1  # values of the acc_at knob (see schedule_output)
PARALLEL_BATCH, PARALLEL_CHANNELS, PARALLEL_ROWS = 1, 2, 3  # fuse_parallel: loops fused


def register_tile_bounds() -> tuple[int, int, int]:
    """`(channels, rows, columns)`: the most output channels, rows and columns of a
    convolution's register tile on the entered target (the template's). The columns are
    one vector, as compiler.ops.conv2d_nchw_tile's; the channels ops' MAX_CHANNELS, as far
    as they fit; the rows, which the tile holds when the accumulator is computed at the
    column tile (ACC_AT_TILE), as many as fit beside them: channels * rows by one vector
    obeys the register rule (compiler/ops/register_tile.py)."""
    lanes = Target.resolve().vector_lanes
    channels = min(MAX_CHANNELS, ops.max_rows(lanes))
    return channels, max(1, ops.max_rows(lanes) // channels), lanes


def output_size(op: str, H: int, W: int, R: int, S: int, stride: int, padding: int):
    """(OH, OW) of a convolution; a clear error when nothing is left."""
    OH = (H + 2 * padding - R) // stride + 1
    OW = (W + 2 * padding - S) // stride + 1
    if OH < 1 or OW < 1:
        raise ValueError(f"{op}: a {R}x{S} kernel with stride {stride} and padding "
                         f"{padding} leaves no output of a {H}x{W} input")
    return OH, OW


def kernel_windows(op: str, data, R: int, S: int, stride: int, padding: int):
    """For each kernel position (r, s): `(r, s, window)`, where `window` is the
    [N, C, OH, OW] slice of the zero-padded `data` (in float64) that the kernel element
    (r, s) multiplies, for numpy references of window operators."""
    OH, OW = output_size(op, data.shape[2], data.shape[3], R, S, stride, padding)
    pad = (padding, padding)
    padded = np.pad(data.astype("float64"), ((0, 0), (0, 0), pad, pad))
    for r in range(R):
        for s in range(S):
            yield r, s, padded[:, :, r:r + stride * OH:stride, s:s + stride * OW:stride]


def schedule_padding(cfg, s, conv) -> None:
    """The `pad_stage` knob: the padded input that compiler.ops made for the convolution
    `conv` (if the padding is not zero) is computed as a stage of its own, in parallel,
    or inlined."""
    padded = next((t for t in conv.op.input_tensors() if t.op.name == "pad"), None)
    if padded is None:
        return
    if cfg["pad_stage"].val:
        n, c, _, _ = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(n, c))
    else:
        s[padded].compute_inline()


def schedule_output(cfg, s, conv, out, channel_knob: str):
    """The output tiling both convolution templates share: channels (`channel_knob`),
    rows (`tile_y`) and columns (`tile_x`) split; the outer loops run in parallel
    (`fuse_parallel`: PARALLEL_BATCH, PARALLEL_CHANNELS or PARALLEL_ROWS, the batch
    fused with none, the channel tiles, or the channel and row tiles), the inner channels
    unrolled and the inner columns vectorized.

    `out` is the kernel's output: the convolution `conv` itself (the template), or the
    last stage of an elementwise tail over it (a graph kernel), whose stages between are
    inlined. The local accumulator (a cache of `conv` when `out is conv`, else `conv`
    itself, stored once through the tail) is computed where `acc_at` says: at the inner
    row loop (ACC_AT_ROW: it holds one output row of the tile, channels x columns), or at
    the column-tile loop (ACC_AT_TILE: it holds the whole tile, rows x channels x
    columns, and the caller unrolls its rows too, so the input rows that neighbouring
    output rows share are loaded once). Returns the accumulator."""
    if out is conv:
        acc = s.cache_write(out, "local")
    else:
        ops.inline_tail(s, out, conv)
        acc = conv
    n, c, y, x = s[out].op.axis
    co, ci = cfg[channel_knob].apply(s, out, c)
    yo, yi = cfg["tile_y"].apply(s, out, y)
    xo, xi = cfg["tile_x"].apply(s, out, x)
    s[out].reorder(n, co, yo, xo, yi, ci, xi)
    fused = [n, co, yo][:cfg["fuse_parallel"].val]
    par = s[out].fuse(*fused) if len(fused) > 1 else n
    s[out].parallel(par)
    s[out].unroll(ci)
    s[out].vectorize(xi)
    s[acc].compute_at(s[out], yi if cfg["acc_at"].val == ACC_AT_ROW else xo)
    return acc


def schedule_conv2d(cfg, s, conv, out) -> None:
    """Schedule the compiler.ops.conv2d_nchw `conv` by `cfg`, in a kernel whose output is
    `out`: `conv` itself (the template) or the last stage of an elementwise tail over it
    (a graph kernel, see schedule_output)."""
    schedule_padding(cfg, s, conv)
    OL = schedule_output(cfg, s, conv, out, "tile_f")
    on, of, oy, ox = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rci = cfg["tile_c"].apply(s, OL, rc)
    reduction = [ry, rx, rco, rci] if cfg["window_outer"].val else [rco, ry, rx, rci]
    s[OL].reorder(*reduction, on, oy, of, ox)
    s[OL].unroll(oy)
    s[OL].unroll(of)
    s[OL].vectorize(ox)
    if cfg["unroll_kw"].val:
        s[OL].unroll(rx)
    if cfg["unroll_kh"].val:
        s[OL].unroll(ry)


def conv2d_nchw_reference(inputs, N, C, H, W, K, R, S, stride, padding):
    """numpy `conv2d_nchw`: out[n, k, y, x] = sum over c, r, s of
    padded[n, c, y * stride + r, x * stride + s] * kernel[k, c, r, s]."""
    data, kernel = inputs
    out = sum(np.tensordot(window, kernel[:, :, r, s], axes=([1], [1]))  # [N, OH, OW, K]
              for r, s, window in kernel_windows("conv2d_nchw", data, R, S, stride, padding))
    return out.transpose(0, 3, 1, 2).astype("float32")


@template("conv2d_nchw", reference=conv2d_nchw_reference,
          probes=[(1, 5, 9, 11, 7, 3, 3, 1, 1), (1, 3, 13, 13, 8, 1, 1, 2, 0)])
def conv2d_nchw(cfg, N: int, C: int, H: int, W: int, K: int, R: int, S: int,
                stride: int = 1, padding: int = 0):
    """2-D convolution with zero padding; returns the schedule and [data, kernel, out]."""
    OH, OW = output_size("conv2d_nchw", H, W, R, S, stride, padding)
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((K, C, R, S), name="kernel")
    # The fallbacks are compiler.ops.schedule_conv2d_nchw's choices, which an untuned
    # model's convolutions get: up to 8 channels (as many as fit the registers) by the
    # widest vector of columns that divides the row, one row per tile, the input channels
    # outside the kernel window's loops, its columns not unrolled (as fast on ResNet-18's
    # layers; the heuristic fallbacks were about 4% slower on the whole model).
    channels, columns = ops.conv2d_nchw_tile(K, OW)
    max_channels, max_rows, max_columns = register_tile_bounds()
    cfg.define_split("tile_f", K, num_outputs=2, filter=lambda e: e.size[-1] <= max_channels,
                     fallback=[-1, channels])
    cfg.define_split("tile_y", OH, num_outputs=2, filter=lambda e: e.size[-1] <= max_rows,
                     fallback=[-1, 1])
    cfg.define_split("tile_x", OW, num_outputs=2, filter=lambda e: e.size[-1] <= max_columns,
                     fallback=[-1, columns])
    cfg.define_split("tile_c", C, num_outputs=2, fallback=[-1, 1])
    cfg.define_knob("window_outer", [0, 1])
    cfg.define_knob("unroll_kw", [1, 0], fallback=0)
    cfg.define_knob("unroll_kh", [0, 1])
    cfg.define_knob("pad_stage", [1, 0])
    cfg.define_knob("fuse_parallel", [PARALLEL_CHANNELS, PARALLEL_BATCH, PARALLEL_ROWS])
    cfg.define_knob("acc_at", [ACC_AT_ROW, ACC_AT_TILE], fallback=ACC_AT_TILE)

    out = ops.conv2d_nchw(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d(cfg, s, out, out)
    return s, [data, kernel, out]
