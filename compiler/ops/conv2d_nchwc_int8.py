"""2-D convolution of unsigned 8-bit data by signed 8-bit weights, accumulated exactly
in int32, in the packed NCHW[x]c layout: the integer core of a quantized convolution
(QLinearConv, or a QDQ Conv; graph/ir/op/qnn.py) before its requantize epilogue, as
TOPI's conv2d_NCHWc_int8.

Data is uint8 (N, C/x, H, W, x), x a multiple of 4, as a float32 packed convolution's
is; the kernel is (O/y, C/x, KH, KW, x/4, y) int32 words, each holding four
consecutive input channels of one output channel (byte k, the lowest first, is channel
4j + k of the block: OIHW[x]i[y]o4i, packed once when the model is built); the output
is the int32 (N, O/y, OH, OW, y). Each term is te.dot_u8s8 of a data word (four
channels' bytes, assembled from four loads, which LLVM turns into one 32-bit load),
broadcast along the y output channels, and y kernel words: one vpdpbusd for a vector of
y channels where the CPU has VNNI (compiler/codegen/int8_dot.py), so a word does four
multiply-adds in a lane where a float32 kernel does one.

The data's padding is `zero_point`: a padded element then stands for the real value 0,
as ONNX's QLinearConv pads, and the zero point's term (zero point times the sum of the
window's weights) is the same at every output element, one constant per output channel
that the caller subtracts.

The schedule is the float32 packed convolution's (conv2d_nchwc.schedule_packed): the
same loops, a register tile of int32 accumulators sized by the target's registers, the
word axis innermost in the reduction.
"""
from __future__ import annotations

from .. import te
from ..lang.tensor import Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .conv2d_nchwc import default_choices, depthwise_conv2d_nchwc, schedule_packed
from .pad import pad_hw
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, shape_str, static_shape, window2d


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def conv2d_nchwc_int8(data, kernel, stride=1, padding=0, dilation=1, zero_point: int = 0):
    """Convolution of packed uint8 data (N, C/x, H, W, x) with packed int8 kernel words
    (O/y, C/x, KH, KW, x/4, y): the packed int32 output (N, O/y, OH, OW, y) of the raw
    sums, the data padded with `zero_point`."""
    op = "conv2d_nchwc_int8"
    check_tensor(op, "data", data, 5)
    check_tensor(op, "kernel", kernel, 6)
    if data.dtype != "uint8":
        raise OpError(f"{op}: data must be uint8, not {data.dtype}")
    if kernel.dtype != "int32":
        raise OpError(f"{op}: kernel must be int32 words of four int8 values, not "
                      f"{kernel.dtype}")
    n, cb, h, w, x = static_shape(op, "data", data)
    ob, kcb, kh, kw, xw, y = static_shape(op, "kernel", kernel)
    if (kcb, 4 * xw) != (cb, x):
        raise OpError(f"{op}: kernel of shape {shape_str(kernel.shape)} takes {kcb} blocks of "
                      f"{4 * xw} input channels but data of shape {shape_str(data.shape)} has "
                      f"{cb} blocks of {x}")
    if not 0 <= zero_point < 256:
        raise OpError(f"{op}: zero_point {zero_point} is not a uint8 value")
    args = (f"data of shape {shape_str(data.shape)}, kernel of shape {shape_str(kernel.shape)}, "
            f"stride={stride!r}, padding={padding!r}, dilation={dilation!r}")
    win = window2d(op, args, (h, w), (kh, kw), stride, padding, dilation)
    src = pad_hw(data, win.padding, (2, 3), pad_value=zero_point)
    (sh, sw), (dh, dw) = win.stride, win.dilation
    rco = te.reduce_axis((0, cb), name="rco")
    rci = te.reduce_axis((0, xw), name="rci")  # a word: four channels
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, ob, *win.out, y),
        lambda b, o, oy, ox, oc: te.sum(
            te.dot_u8s8(word(src, (b, rco, oy * sh + ry * dh, ox * sw + rx * dw), rci),
                        kernel[o, rco, ry, rx, rci, oc]), axis=[rco, ry, rx, rci]),
        name="conv2d_nchwc_int8")


DEPTHWISE_EXACT_TERMS = 2 ** 24 // (255 * 128)
"""The most window taps whose products of a uint8 value by an int8 weight (each of
magnitude at most 255 * 128) float32 sums exactly, every partial sum an integer below
2^24: 514, a 22x22 window."""


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def depthwise_conv2d_nchwc_int8(data, kernel, stride=1, padding=0, dilation=1,
                                zero_point: int = 0):
    """Depthwise convolution (multiplier 1) of packed uint8 data (N, C/x, H, W, x) by
    packed int8 weights (C/x, 1, KH, KW, 1, x): the raw sums (N, C/x, OH, OW, x) as
    float32 integers, the data padded with `zero_point` (its term, zero point times the
    window's weight sum, is the caller's, as for conv2d_nchwc_int8).

    A depthwise output sums its window alone (9 products for a 3x3), where the int8 dot
    product wants four channels summed in a lane: so both operands are widened to
    float32 in the product and summed by FMAs, the float32 depthwise convolution's
    kernel (depthwise_conv2d_nchwc, its one schedule). It is exact: every product and
    partial sum is an integer below 2^24 for windows of at most DEPTHWISE_EXACT_TERMS
    taps, in any order; the data is read as bytes, a quarter of float32's traffic."""
    op = "depthwise_conv2d_nchwc_int8"
    check_tensor(op, "data", data, 5)
    check_tensor(op, "kernel", kernel, 6)
    if (data.dtype, kernel.dtype) != ("uint8", "int8"):
        raise OpError(f"{op}: takes uint8 data and int8 weights, not {data.dtype} and "
                      f"{kernel.dtype}")
    taps = int(kernel.shape[2]) * int(kernel.shape[3])
    if taps > DEPTHWISE_EXACT_TERMS:
        raise OpError(f"{op}: a window of {taps} taps is more than float32 sums exactly "
                      f"({DEPTHWISE_EXACT_TERMS})")
    if not 0 <= zero_point < 256:
        raise OpError(f"{op}: zero_point {zero_point} is not a uint8 value")
    return depthwise_conv2d_nchwc(data, kernel, stride, padding, dilation, zero_point,
                                  "float32")


def word(t, head: tuple, j):
    """The int32 word of the four bytes t[head + (4j + k,)], k = 0..3, byte k the k-th
    lowest: summed in uint32 (which wraps, where int32's sum would overflow on a top
    byte of 128 or more) and read as int32."""
    parts = [te.cast(t[(*head, j * 4 + k)], "uint32") for k in range(4)]
    word = parts[0]
    for k in (1, 2, 3):
        word = word + parts[k] * te.const(256 ** k, "uint32")
    return te.cast(word, "int32")


def schedule_conv2d_nchwc_int8(out: Tensor, conv: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (== `conv`, or elementwise ops of it in
    the same packed layout: the requantize epilogue) from conv2d_nchwc_int8's `conv`, for
    `target` (default: the entered one, else the host): the packed convolution's
    schedule with its default choices."""
    s = create_schedule(out.op)
    in_blocks = int(conv.op.reduce_axis[0].dom.extent)
    schedule_packed(s, out, conv, default_choices(Target.resolve(target), out.shape, in_blocks))
    return s
