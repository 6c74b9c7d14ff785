"""2-D convolution in the packed NCHW[x]c layout (TOPI's conv2d_NCHWc and
depthwise_conv2d_NCHWc), and the schedule of a kernel whose anchor is one of them.

Data is (N, C/x, H, W, x): x channels innermost; the kernel is OIHW[x]i[y]o, that is
(O/y, C/x, KH, KW, x, y) (depthwise: OIHW1i[x]o, (C/x, 1, KH, KW, 1, x)), packed once
when the model is built (a layout_transform of the constant weights that FoldConstant
folds); the output is (N, O/y, OH, OW, y). The vector
runs along the y output channels of a block: each input value is broadcast once and
multiplied into y channels, so no output row has to fit the vector width, which is what
keeps the NCHW kernel (conv2d_schedule.py) at about half of the peak on ResNet's 7x7 and
14x14 layers.

The schedule: the output (the tail's last stage; the tail is elementwise in the same
layout and inlined) is tiled by a register tile of up to REGISTER_COLUMNS output columns
by the y channels of a block; the convolution is computed at each tile into a tile-sized
accumulator with its reduction (input-channel blocks, the window, the channels in a
block) outside the tile's loops, so the accumulator stays in vector registers; the
batch, channel-block and row loops are fused and run in parallel; the padded input is a
stage of its own, computed in parallel.
"""
from __future__ import annotations

from .. import te
from ..lang.tensor import ComputeOp, Tensor
from ..schedule.schedule import Schedule, create_schedule
from .pad import pad_hw
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, largest_divisor, shape_str, static_shape, window2d
from .tail import inline_tail

REGISTER_COLUMNS = 14
"""Output columns of the register tile: 14 accumulators of one vector each, and room
for the kernel vector and the broadcast input in the 32 AVX-512 registers."""


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def conv2d_nchwc(data, kernel, stride=1, padding=0, dilation=1):
    """Convolution of packed data (N, C/x, H, W, x) with a packed kernel
    (O/y, C/x, KH, KW, x, y): the packed output (N, O/y, OH, OW, y)."""
    op = "conv2d_nchwc"
    check_tensor(op, "data", data, 5)
    check_tensor(op, "kernel", kernel, 6)
    n, cb, h, w, x = static_shape(op, "data", data)
    ob, kcb, kh, kw, kx, y = static_shape(op, "kernel", kernel)
    if (kcb, kx) != (cb, x):
        raise OpError(f"{op}: kernel of shape {shape_str(kernel.shape)} takes {kcb} blocks of "
                      f"{kx} input channels but data of shape {shape_str(data.shape)} has "
                      f"{cb} blocks of {x}")
    args = (f"data of shape {shape_str(data.shape)}, kernel of shape {shape_str(kernel.shape)}, "
            f"stride={stride!r}, padding={padding!r}, dilation={dilation!r}")
    win = window2d(op, args, (h, w), (kh, kw), stride, padding, dilation)
    src = pad_hw(data, win.padding, (2, 3))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    rco = te.reduce_axis((0, cb), name="rco")
    rci = te.reduce_axis((0, x), name="rci")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, ob, *win.out, y),
        lambda b, o, oy, ox, oc: te.sum(
            src[b, rco, oy * sh + ry * dh, ox * sw + rx * dw, rci]
            * kernel[o, rco, ry, rx, rci, oc], axis=[rco, ry, rx, rci]),
        name="conv2d_nchwc")


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def depthwise_conv2d_nchwc(data, kernel, stride=1, padding=0, dilation=1):
    """Depthwise convolution (channel multiplier 1) of packed data (N, C/x, H, W, x) with
    a packed kernel (C/x, 1, KH, KW, 1, x): the packed output (N, C/x, OH, OW, x)."""
    op = "depthwise_conv2d_nchwc"
    check_tensor(op, "data", data, 5)
    check_tensor(op, "kernel", kernel, 6)
    n, cb, h, w, x = static_shape(op, "data", data)
    kcb, one, kh, kw, one_i, kx = static_shape(op, "kernel", kernel)
    if (kcb, kx, one, one_i) != (cb, x, 1, 1):
        raise OpError(f"{op}: kernel of shape {shape_str(kernel.shape)} does not fit data of "
                      f"shape {shape_str(data.shape)} (it takes ({cb}, 1, KH, KW, 1, {x}))")
    args = (f"data of shape {shape_str(data.shape)}, kernel of shape {shape_str(kernel.shape)}, "
            f"stride={stride!r}, padding={padding!r}, dilation={dilation!r}")
    win = window2d(op, args, (h, w), (kh, kw), stride, padding, dilation)
    src = pad_hw(data, win.padding, (2, 3))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, cb, *win.out, x),
        lambda b, c, oy, ox, oc: te.sum(
            src[b, c, oy * sh + ry * dh, ox * sw + rx * dw, oc]
            * kernel[c, 0, ry, rx, 0, oc], axis=[ry, rx]),
        name="depthwise_conv2d_nchwc")


def schedule_conv2d_nchwc(out: Tensor, conv: Tensor) -> Schedule:
    """The schedule of the kernel computing `out` (== `conv`, or elementwise ops of it in
    the same packed layout) from the packed convolution `conv`, an ordinary or a
    depthwise one (see the module docstring)."""
    s = create_schedule(out.op)
    o = s[out]
    if out is conv:
        conv = s.cache_write(out, "local")
    else:
        inline_tail(s, out, conv)
    for padded in conv.op.input_tensors():
        if padded.op.name == "pad":
            n, c, y = s[padded].op.axis[:3]
            s[padded].parallel(s[padded].fuse(n, c, y))
            s[padded].vectorize(s[padded].op.axis[4])
        elif isinstance(padded.op, ComputeOp):  # a weight packed in the kernel, not folded
            s[padded].compute_inline()
    width = int(out.shape[3])
    n, c, y, x, v = o.op.axis
    xo, xi = o.split(x, factor=largest_divisor(width, REGISTER_COLUMNS))
    o.reorder(n, c, y, xo, xi, v)
    o.parallel(o.fuse(n, c, y))
    o.vectorize(v)
    s[conv].compute_at(o, xo)
    cn, cc, cy, cx, cv = s[conv].op.axis
    s[conv].reorder(*s[conv].op.reduce_axis, cn, cc, cy, cx, cv)
    s[conv].unroll(cx)
    s[conv].vectorize(cv)
    return s
