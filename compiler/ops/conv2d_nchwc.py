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
layout and inlined) is tiled by a register tile (RegisterTile) of a few rows, columns
and channel blocks, sized to the target's vector registers (register_tile.py); the
convolution is computed at each tile into a tile-sized accumulator with its reduction
(input-channel blocks, the window, the channels in a block) outside the tile's loops,
so the accumulator stays in vector registers, and the tile's blocks innermost, so one
broadcast input value feeds the FMAs of every block (as ONNX Runtime's MLAS kernels do:
on AVX2, 16 registers hold e.g. 4 columns x 3 blocks of 8 channels); the batch,
channel-block and row tiles are fused and run in parallel; an ordinary convolution's
padded input is a stage of its own, computed in parallel, while a depthwise one reads
its input in place, the border tested (DEPTHWISE_PAD_STAGE). Those are the schedule's
default choices (PackedChoices): one schedule, schedule_packed, runs an untuned kernel
with them and a tuned one with the choices its template's config sets
(search_spaces/conv2d_nchwc.py, whose fallback config is the defaults).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..lang.tensor import ComputeOp, Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .pad import pad_hw
from .pattern import OpPattern, register_pattern
from .register_tile import default_register_tile
from .shape import OpError, check_tensor, shape_str, static_shape, window2d
from .tail import inline_tail

DEPTHWISE_PAD_STAGE = False
"""Whether an untuned depthwise convolution pads its input as a stage of its own (a
padded copy written, then read) or reads the input in place, its border tested. A
depthwise layer does 9 FMAs per value it reads: the copy's traffic is most of its time.
Tuned cold on MobileNetV2 (2 cores, Zen 5), 10 of its 11 depthwise layers dropped the
stage, 1.2-2.5x faster than the untuned config; untuned without it, the whole model ran
10% faster."""


@dataclass(frozen=True)
class PackedChoices:
    """The choices of a packed convolution's schedule (schedule_packed): what the
    template's knobs of the same names set (search_spaces/conv2d_nchwc.py) and what an
    untuned kernel takes (default_choices), so both run one schedule.

    register_tile: (rows, columns, channel blocks) of the output tile accumulated in
        registers (register_tile.register_tiles);
    ic_inner: input-channel blocks in the inner part of the reduction's split (an
        ordinary convolution's; None for a depthwise one, which has no channel sum);
    reduction_order: how the two parts and the window nest (0: the channel parts
        outside the window, 1: the window outermost, 2: the window between them);
    rows_outer: the row tiles outside the channel-block tiles (the input rows stay in
        cache across output channels) rather than inside (the weights stay);
    fuse_parallel: outer loops fused into the parallel one (3: batch and both tile
        loops; 2: batch and the outer one);
    unroll_kw: the window's columns unrolled;
    pad_stage: the padded input a stage of its own, in parallel and vectorized (else
        read in place, its border tested)."""
    register_tile: tuple[int, int, int]
    ic_inner: int | None = None
    reduction_order: int = 0
    rows_outer: bool = False
    fuse_parallel: int = 3
    unroll_kw: bool = False
    pad_stage: bool = True


def default_choices(target: Target, out_shape, in_blocks: int,
                    window: tuple | None = None) -> PackedChoices:
    """The choices of an untuned packed convolution with output (N, K/y, OH, OW, y) and
    `in_blocks` input-channel blocks on `target` (`window` (KH, KW): a depthwise one's):
    default_register_tile, the channel sum in one part, the input padded in a stage of
    its own (a depthwise one's: DEPTHWISE_PAD_STAGE)."""
    pad_stage = window is None or DEPTHWISE_PAD_STAGE
    tile = default_register_tile(target, out_shape, window, pad_stage)
    return PackedChoices((tile.rows, tile.cols, tile.blocks),
                         in_blocks if window is None else None, pad_stage=pad_stage)


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
def depthwise_conv2d_nchwc(data, kernel, stride=1, padding=0, dilation=1, pad_value=0.0,
                           dtype: str | None = None):
    """Depthwise convolution (channel multiplier 1) of packed data (N, C/x, H, W, x) with
    a packed kernel (C/x, 1, KH, KW, 1, x): the packed output (N, C/x, OH, OW, x), the
    data padded with `pad_value`, summed in `dtype` (default the data's), to which
    operands of another type are cast in the product (a quantized layer's uint8 values
    and int8 weights in float32: conv2d_nchwc_int8.depthwise_conv2d_nchwc_int8)."""
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
    src = pad_hw(data, win.padding, (2, 3), pad_value)
    (sh, sw), (dh, dw) = win.stride, win.dilation
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    dtype = dtype or data.dtype

    def widened(v):
        return v if v.dtype == dtype else te.cast(v, dtype)
    return te.compute(
        (n, cb, *win.out, x),
        lambda b, c, oy, ox, oc: te.sum(
            widened(src[b, c, oy * sh + ry * dh, ox * sw + rx * dw, oc])
            * widened(kernel[c, 0, ry, rx, 0, oc]), axis=[ry, rx]),
        name="depthwise_conv2d_nchwc")


def schedule_packed(s: Schedule, out: Tensor, conv: Tensor, choices: PackedChoices) -> None:
    """Schedule the packed convolution `conv` (ordinary or depthwise) by `choices` in a
    kernel whose output is `out` (`conv`, or the last stage of an elementwise tail over
    it in the same layout, which is inlined while the convolution becomes the tile's
    accumulator): see the module docstring."""
    if out is conv:
        acc = s.cache_write(out, "local")
    else:
        inline_tail(s, out, conv)
        acc = conv
    for t in acc.op.input_tensors():
        if t.op.name == "pad" and choices.pad_stage:
            n, c, y = s[t].op.axis[:3]
            s[t].parallel(s[t].fuse(n, c, y))
            s[t].vectorize(s[t].op.axis[4])
        elif isinstance(t.op, ComputeOp):  # the padding inlined, or a weight packed here
            s[t].compute_inline()
    rows, cols, blocks = choices.register_tile
    o = s[out]
    n, c, y, x, v = o.op.axis
    co, ci = o.split(c, factor=blocks)
    yo, yi = o.split(y, factor=rows)
    xo, xi = o.split(x, factor=cols)
    outer = [yo, co] if choices.rows_outer else [co, yo]
    o.reorder(n, *outer, xo, ci, yi, xi, v)
    o.parallel(o.fuse(n, *outer) if choices.fuse_parallel == 3 else o.fuse(n, outer[0]))
    o.vectorize(v)
    s[acc].compute_at(o, xo)
    an, ac, ay, ax, av = s[acc].op.axis
    if choices.ic_inner is None:  # depthwise: the window alone
        reduction, rx = list(s[acc].op.reduce_axis), s[acc].op.reduce_axis[1]
    else:
        rco, ry, rx, rci = s[acc].op.reduce_axis
        ico, ici = s[acc].split(rco, factor=choices.ic_inner)
        reduction = {0: [ico, ici, ry, rx, rci], 1: [ry, rx, ico, ici, rci],
                     2: [ico, ry, rx, ici, rci]}[choices.reduction_order]
    s[acc].reorder(*reduction, an, ay, ax, ac, av)  # one broadcast feeds every block
    for axis in (ac, ay, ax):
        s[acc].unroll(axis)
    s[acc].vectorize(av)
    if choices.unroll_kw:
        s[acc].unroll(rx)


def schedule_conv2d_nchwc(out: Tensor, conv: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (== `conv`, or elementwise ops of it in
    the same packed layout) from the packed convolution `conv`, an ordinary or a
    depthwise one, for `target` (default: the entered one, else the host): schedule_packed
    with its default_choices, the template's fallback."""
    s = create_schedule(out.op)
    window = None
    if len(conv.op.reduce_axis) == 2:  # depthwise: the window alone
        window = tuple(int(r.dom.extent) for r in conv.op.reduce_axis)
    in_blocks = int(conv.op.reduce_axis[0].dom.extent)
    schedule_packed(s, out, conv, default_choices(Target.resolve(target), out.shape,
                                                  in_blocks, window))
    return s
