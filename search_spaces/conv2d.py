"""The `conv2d_nchw` template: compiler.ops.conv2d_nchw (zero padding as a stage of its
own) with a schedule whose knobs are below.

Knobs: tiles of the output channels (`tile_f`, the inner part unrolled in the register
tile), of the output rows (`tile_y`) and of the output columns (`tile_x`, the inner part
is the vector width), the split of the input channels (`tile_c`), whether the kernel
window's loops run outside or inside the channel blocks, whether its columns and rows
are unrolled, whether the padded input is a separate stage or inlined into the convolution,
how many outer loops are fused and run in parallel, and where the local accumulator is
computed (`acc_at`). They set the choices (compiler.ops.conv2d_schedule.DirectChoices) of
compiler.ops' one schedule of an NCHW convolution, schedule_direct; the fallback config
is its default_choices, the schedule an untuned kernel runs. The register tile, rows by
channels by one vector of columns, is bounded by the target's registers
(compiler.ops.conv2d_nchw_bounds).

The numpy reference sums, over the R*S kernel positions, one tensordot of the strided
window of the padded input with that kernel column: fast enough for ResNet layers.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.ops.conv2d import conv2d_nchw as direct_conv
from compiler.ops.conv2d_schedule import (ACC_AT_ROW, ACC_AT_TILE, PARALLEL_BATCH,
                                          PARALLEL_CHANNELS, PARALLEL_ROWS, DirectChoices,
                                          default_choices, schedule_direct)
from compiler.ops.register_tile import conv2d_nchw_bounds

from .binding import Binding, conv_call, conv_window, float32
from .registry import template


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


def define_direct_knobs(cfg, out_shape, depthwise: bool, in_channels: int = 0) -> None:
    """The knobs of both NCHW convolution templates (`in_channels`: an ordinary one's, which
    it splits), bounded by compiler.ops.conv2d_nchw_bounds, their fallbacks
    compiler.ops' default_choices for the entered target."""
    _, K, OH, OW = out_shape
    default = default_choices(out_shape, depthwise)
    max_channels, max_rows, max_columns = conv2d_nchw_bounds()
    cfg.define_split("tile_c" if depthwise else "tile_f", K, num_outputs=2,
                     filter=lambda e: e.size[-1] <= max_channels,
                     fallback=[-1, default.channels])
    cfg.define_split("tile_y", OH, num_outputs=2, filter=lambda e: e.size[-1] <= max_rows,
                     fallback=[-1, default.rows])
    cfg.define_split("tile_x", OW, num_outputs=2, filter=lambda e: e.size[-1] <= max_columns,
                     fallback=[-1, default.columns])
    if not depthwise:
        cfg.define_split("tile_c", in_channels, num_outputs=2,
                         fallback=[-1, default.in_channels])
        cfg.define_knob("window_outer", [0, 1], fallback=int(default.window_outer))
    cfg.define_knob("unroll_kw", [1, 0], fallback=int(default.unroll_kw))
    cfg.define_knob("unroll_kh", [0, 1], fallback=int(default.unroll_kh))
    cfg.define_knob("pad_stage", [1, 0], fallback=int(default.pad_stage))
    cfg.define_knob("fuse_parallel", [PARALLEL_CHANNELS, PARALLEL_BATCH, PARALLEL_ROWS],
                    fallback=default.fuse_parallel)
    cfg.define_knob("acc_at", [ACC_AT_ROW, ACC_AT_TILE], fallback=default.acc_at)


def direct_choices(cfg, depthwise: bool) -> DirectChoices:
    """The schedule's choices that `cfg` of either NCHW convolution template sets."""
    return DirectChoices(
        cfg["tile_c" if depthwise else "tile_f"].size[-1], cfg["tile_y"].size[-1],
        cfg["tile_x"].size[-1], None if depthwise else cfg["tile_c"].size[-1],
        False if depthwise else bool(cfg["window_outer"].val), bool(cfg["unroll_kw"].val),
        bool(cfg["unroll_kh"].val), bool(cfg["pad_stage"].val), cfg["fuse_parallel"].val,
        cfg["acc_at"].val)


def schedule_conv2d(cfg, s, conv, out) -> None:
    """Schedule the compiler.ops.conv2d_nchw or depthwise_conv2d_nchw `conv` by `cfg`, in
    a kernel whose output is `out` (`conv` itself, the template's, or the last stage of
    an elementwise tail over it, a graph kernel's): compiler.ops' schedule_direct with
    the config's choices."""
    schedule_direct(s, out, conv, direct_choices(cfg, len(conv.op.reduce_axis) == 2))


def conv2d_nchw_reference(inputs, N, C, H, W, K, R, S, stride, padding):
    """numpy `conv2d_nchw`: out[n, k, y, x] = sum over c, r, s of
    padded[n, c, y * stride + r, x * stride + s] * kernel[k, c, r, s]."""
    data, kernel = inputs
    out = sum(np.tensordot(window, kernel[:, :, r, s], axes=([1], [1]))  # [N, OH, OW, K]
              for r, s, window in kernel_windows("conv2d_nchw", data, R, S, stride, padding))
    return out.transpose(0, 3, 1, 2).astype("float32")


def conv2d_workload(call) -> tuple | None:
    """An NCHW float32 nn.conv2d of groups 1 whose window the arguments can say."""
    window = conv_window(call.attrs)
    if window is None or not float32(call) or call.attrs["data_layout"] != "NCHW" or \
            call.attrs["groups"] != 1:
        return None
    (N, C, H, W), (K, _, R, S) = call.args[0].ty.shape, call.args[1].ty.shape
    return (N, C, H, W, K, R, S, *window)


@template("conv2d_nchw", reference=conv2d_nchw_reference,
          probes=[(1, 5, 9, 11, 7, 3, 3, 1, 1), (1, 3, 13, 13, 8, 1, 1, 2, 0)],
          binding=Binding("nn.conv2d", conv2d_workload,
                          compute=lambda args, cfg, ins: direct_conv(ins[0], ins[1], *args[7:]),
                          schedule=lambda args, cfg, s, anchor, out: schedule_conv2d(
                              cfg, s, anchor, out),
                          call=conv_call, packable=True))
def conv2d_nchw(cfg, N: int, C: int, H: int, W: int, K: int, R: int, S: int,
                stride: int = 1, padding: int = 0):
    """2-D convolution with zero padding; returns the schedule and [data, kernel, out]."""
    OH, OW = output_size("conv2d_nchw", H, W, R, S, stride, padding)
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((K, C, R, S), name="kernel")
    define_direct_knobs(cfg, (N, K, OH, OW), False, C)
    out = direct_conv(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d(cfg, s, out, out)
    return s, [data, kernel, out]
