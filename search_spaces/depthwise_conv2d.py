"""The `depthwise_conv2d_nchw` template: compiler.ops.depthwise_conv2d_nchw (channel
multiplier 1, zero padding as a stage of its own) with a schedule whose knobs are below.

Knobs: tiles of the channels (`tile_c`, the inner part unrolled in the register tile),
of the output rows (`tile_y`) and of the output columns (`tile_x`, the inner part is the
vector width), whether the kernel window's rows and columns are unrolled, whether the
padded input is a separate stage or inlined, how many outer loops run in parallel, and
where the local accumulator is computed (`acc_at`): conv2d_nchw's knobs but the input
channels' split, setting the choices of the same schedule (compiler.ops.schedule_direct)
and bounded the same way; the fallback is compiler.ops' default_choices for a depthwise
convolution (channels by one vector of columns, as many rows as fit, the accumulator at
the row).
"""
from __future__ import annotations

from compiler import ops, te

from .conv2d import define_direct_knobs, kernel_windows, output_size, schedule_conv2d
from .binding import Binding, conv_call, conv_window, float32
from .registry import template


def depthwise_conv2d_nchw_reference(inputs, N, C, H, W, R, S, stride, padding):
    """numpy `depthwise_conv2d_nchw`: out[n, c, y, x] = sum over r, s of
    padded[n, c, y * stride + r, x * stride + s] * kernel[c, 0, r, s]."""
    data, kernel = inputs
    out = sum(window * kernel[:, 0, r, s][None, :, None, None]
              for r, s, window in kernel_windows("depthwise_conv2d_nchw", data, R, S, stride,
                                                 padding))
    return out.astype("float32")


def depthwise_workload(call) -> tuple | None:
    """An NCHW float32 nn.conv2d of one filter per channel (groups = channels = outputs),
    whose window the arguments can say; OIHW (C, 1, R, S) is the template's kernel."""
    window = conv_window(call.attrs)
    if window is None or not float32(call) or call.attrs["data_layout"] != "NCHW":
        return None
    (N, C, H, W), (K, per_group, R, S) = call.args[0].ty.shape, call.args[1].ty.shape
    if not call.attrs["groups"] == C == K or per_group != 1:
        return None
    return (N, C, H, W, R, S, *window)


@template("depthwise_conv2d_nchw", reference=depthwise_conv2d_nchw_reference,
          probes=[(1, 7, 9, 11, 3, 3, 1, 1), (1, 5, 13, 13, 3, 3, 2, 0)],
          binding=Binding(
              "nn.conv2d", depthwise_workload,
              compute=lambda args, cfg, ins: ops.depthwise_conv2d_nchw(ins[0], ins[1],
                                                                       *args[6:]),
              schedule=lambda args, cfg, s, anchor, out: schedule_conv2d(cfg, s, anchor, out),
              call=lambda N, C, H, W, R, S, st, p: conv_call(N, C, H, W, C, R, S, st, p, C),
              packable=True))
def depthwise_conv2d_nchw(cfg, N: int, C: int, H: int, W: int, R: int, S: int,
                          stride: int = 1, padding: int = 0):
    """Depthwise 2-D convolution, zero padding; returns the schedule and
    [data, kernel, out]."""
    OH, OW = output_size("depthwise_conv2d_nchw", H, W, R, S, stride, padding)
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((C, 1, R, S), name="kernel")
    define_direct_knobs(cfg, (N, C, OH, OW), True)
    out = ops.depthwise_conv2d_nchw(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d(cfg, s, out, out)
    return s, [data, kernel, out]
