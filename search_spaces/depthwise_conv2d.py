"""The `depthwise_conv2d_nchw` template: compiler.ops.depthwise_conv2d_nchw (channel
multiplier 1, zero padding as a stage of its own) with a schedule whose knobs are below.

Knobs: tiles of the channels (`tile_c`, the inner part unrolled in the register tile),
of the output rows (`tile_y`) and of the output columns (`tile_x`, the inner part is the
vector width), whether the kernel window's rows and columns are unrolled, whether the
padded input is a separate stage or inlined, how many outer loops run in parallel, and
where the local accumulator is computed (`acc_at`, as in conv2d.schedule_output). The
register tile is bounded as conv2d_nchw's (conv2d.register_tile_bounds), and the
fallback tile is compiler.ops.conv2d_nchw_tile's (channels by one vector of columns, the
accumulator at the row).
"""
from __future__ import annotations

from compiler import ops, te

from .conv2d import (ACC_AT_ROW, ACC_AT_TILE, PARALLEL_BATCH, PARALLEL_CHANNELS, PARALLEL_ROWS,
                     kernel_windows, output_size, register_tile_bounds, schedule_output,
                     schedule_padding)
from .registry import template


def schedule_depthwise_conv2d(cfg, s, conv, out) -> None:
    """Schedule the compiler.ops.depthwise_conv2d_nchw `conv` by `cfg`, in a kernel whose
    output is `out`: `conv` itself (the template) or the last stage of an elementwise
    tail over it (a graph kernel, see conv2d.schedule_output)."""
    schedule_padding(cfg, s, conv)
    OL = schedule_output(cfg, s, conv, out, "tile_c")
    on, oc, oy, ox = s[OL].op.axis
    ry, rx = s[OL].op.reduce_axis
    s[OL].reorder(ry, rx, on, oy, oc, ox)
    s[OL].unroll(oy)
    s[OL].unroll(oc)
    s[OL].vectorize(ox)
    if cfg["unroll_kw"].val:
        s[OL].unroll(rx)
    if cfg["unroll_kh"].val:
        s[OL].unroll(ry)


def depthwise_conv2d_nchw_reference(inputs, N, C, H, W, R, S, stride, padding):
    """numpy `depthwise_conv2d_nchw`: out[n, c, y, x] = sum over r, s of
    padded[n, c, y * stride + r, x * stride + s] * kernel[c, 0, r, s]."""
    data, kernel = inputs
    out = sum(window * kernel[:, 0, r, s][None, :, None, None]
              for r, s, window in kernel_windows("depthwise_conv2d_nchw", data, R, S, stride,
                                                 padding))
    return out.astype("float32")


@template("depthwise_conv2d_nchw", reference=depthwise_conv2d_nchw_reference,
          probes=[(1, 7, 9, 11, 3, 3, 1, 1), (1, 5, 13, 13, 3, 3, 2, 0)])
def depthwise_conv2d_nchw(cfg, N: int, C: int, H: int, W: int, R: int, S: int,
                          stride: int = 1, padding: int = 0):
    """Depthwise 2-D convolution, zero padding; returns the schedule and
    [data, kernel, out]."""
    OH, OW = output_size("depthwise_conv2d_nchw", H, W, R, S, stride, padding)
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((C, 1, R, S), name="kernel")
    channels, columns = ops.conv2d_nchw_tile(C, OW)
    max_channels, max_rows, max_columns = register_tile_bounds()
    cfg.define_split("tile_c", C, num_outputs=2, filter=lambda e: e.size[-1] <= max_channels,
                     fallback=[-1, channels])
    cfg.define_split("tile_y", OH, num_outputs=2, filter=lambda e: e.size[-1] <= max_rows,
                     fallback=[-1, ops.largest_divisor(OH, max_rows)])
    cfg.define_split("tile_x", OW, num_outputs=2, filter=lambda e: e.size[-1] <= max_columns,
                     fallback=[-1, columns])
    cfg.define_knob("unroll_kw", [1, 0])
    cfg.define_knob("unroll_kh", [0, 1])
    cfg.define_knob("pad_stage", [1, 0])
    cfg.define_knob("fuse_parallel", [PARALLEL_CHANNELS, PARALLEL_BATCH, PARALLEL_ROWS])
    cfg.define_knob("acc_at", [ACC_AT_ROW, ACC_AT_TILE])

    out = ops.depthwise_conv2d_nchw(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_depthwise_conv2d(cfg, s, out, out)
    return s, [data, kernel, out]
