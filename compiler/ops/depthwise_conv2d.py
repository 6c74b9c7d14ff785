"""Depthwise 2-D convolution, NCHW, pattern OUT_ELEMWISE_FUSABLE: each input channel is
convolved with its own `multiplier` filters (TOPI's kernel layout (C, multiplier, KH, KW)),
output channel c * multiplier + m. Parameters as in conv2d."""
from __future__ import annotations

from .. import te
from .conv2d import conv_input
from .pattern import OpPattern, register_pattern


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def depthwise_conv2d_nchw(data, kernel, stride=1, padding=0, dilation=1):
    """data (N, C, H, W), kernel (C, M, KH, KW): (N, C * M, OH, OW)."""
    src, win, (n, c, _, _), (_, mult, kh, kw) = conv_input(
        "depthwise_conv2d_nchw", data, kernel, stride, padding, dilation, (1, 2, 3), (0, 2, 3))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, c * mult, *win.out),
        lambda b, o, y, x: te.sum(src[b, o // mult, y * sh + ry * dh, x * sw + rx * dw]
                                  * kernel[o // mult, o % mult, ry, rx], axis=[ry, rx]),
        name="depthwise_conv2d_nchw")
