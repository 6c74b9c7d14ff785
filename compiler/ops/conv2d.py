"""2-D convolution in the NCHW and NHWC layouts, pattern OUT_ELEMWISE_FUSABLE.

Kernel layouts are TOPI's: OIHW (out channels, in channels, height, width) for NCHW
data, HWIO for NHWC data. `stride` and `dilation` are an int or a (height, width) pair;
`padding` an int, a (height, width) pair or (top, left, bottom, right). Padding is a
separate `pad` stage, so a schedule decides where it is computed (the default computes
it once: every padded element is read by many windows). Shapes must be constants.
"""
from __future__ import annotations

from .. import te
from .pad import pad_hw
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, shape_str, static_shape, window2d


def conv_input(op: str, data, kernel, stride, padding, dilation, data_axes, kernel_axes,
               channels: int | None = None):
    """Check a convolution's arguments and pad its data. `data_axes` are the (channel,
    height, width) axes of data, `kernel_axes` the (input channel, height, width) axes of
    kernel; `channels` the input channels the kernel takes (default: all of data's).
    Returns the padded data, the Window2D, and both shapes as ints."""
    check_tensor(op, "data", data, 4)
    check_tensor(op, "kernel", kernel, 4)
    dshape = static_shape(op, "data", data)
    kshape = static_shape(op, "kernel", kernel)
    (dc, dh, dw), (kc, kh, kw) = data_axes, kernel_axes
    if kshape[kc] != (dshape[dc] if channels is None else channels):
        raise OpError(f"{op}: kernel of shape {shape_str(kernel.shape)} takes {kshape[kc]} "
                      f"input channels but data of shape {shape_str(data.shape)} has "
                      f"{dshape[dc]}")
    args = (f"data of shape {shape_str(data.shape)}, kernel of shape {shape_str(kernel.shape)}, "
            f"stride={stride!r}, padding={padding!r}, dilation={dilation!r}")
    win = window2d(op, args, (dshape[dh], dshape[dw]), (kshape[kh], kshape[kw]), stride,
                   padding, dilation)
    return pad_hw(data, win.padding, (dh, dw)), win, dshape, kshape


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def conv2d_nchw(data, kernel, stride=1, padding=0, dilation=1):
    """Convolution of data (N, C, H, W) with kernel (F, C, KH, KW): (N, F, OH, OW)."""
    src, win, (n, c, _, _), (f, _, kh, kw) = conv_input(
        "conv2d_nchw", data, kernel, stride, padding, dilation, (1, 2, 3), (1, 2, 3))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, f, *win.out),
        lambda b, o, y, x: te.sum(src[b, rc, y * sh + ry * dh, x * sw + rx * dw]
                                  * kernel[o, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv2d_nchw")


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def group_conv2d_nchw(data, kernel, stride=1, padding=0, dilation=1, groups=1):
    """Grouped convolution (ResNeXt's) of data (N, C, H, W) with kernel (F, C/groups, KH,
    KW): output channel o reads the input channels of its group, o // (F/groups)."""
    op = "group_conv2d_nchw"
    check_tensor(op, "data", data, 4)
    check_tensor(op, "kernel", kernel, 4)
    c, f, per_group = static_shape(op, "data", data)[1], *static_shape(op, "kernel", kernel)[:2]
    if not isinstance(groups, int) or groups < 1 or c % groups or f % groups or \
            per_group * groups != c:
        raise OpError(f"{op}: groups={groups!r} does not split data of shape "
                      f"{shape_str(data.shape)} and kernel of shape {shape_str(kernel.shape)} "
                      f"(the kernel needs C/groups input channels)")
    src, win, (n, _, _, _), (_, _, kh, kw) = conv_input(
        op, data, kernel, stride, padding, dilation, (1, 2, 3), (1, 2, 3), channels=per_group)
    (sh, sw), (dh, dw) = win.stride, win.dilation
    out_per_group = f // groups
    rc = te.reduce_axis((0, per_group), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, f, *win.out),
        lambda b, o, y, x: te.sum(
            src[b, o // out_per_group * per_group + rc, y * sh + ry * dh, x * sw + rx * dw]
            * kernel[o, rc, ry, rx], axis=[rc, ry, rx]),
        name="group_conv2d_nchw")


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def conv2d_nhwc(data, kernel, stride=1, padding=0, dilation=1):
    """Convolution of data (N, H, W, C) with kernel (KH, KW, C, F): (N, OH, OW, F)."""
    src, win, (n, _, _, c), (kh, kw, _, f) = conv_input(
        "conv2d_nhwc", data, kernel, stride, padding, dilation, (3, 1, 2), (2, 0, 1))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rc = te.reduce_axis((0, c), name="rc")
    return te.compute(
        (n, *win.out, f),
        lambda b, y, x, o: te.sum(src[b, y * sh + ry * dh, x * sw + rx * dw, rc]
                                  * kernel[ry, rx, rc, o], axis=[ry, rx, rc]),
        name="conv2d_nhwc")
