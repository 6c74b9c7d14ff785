"""The schedule of a kernel whose anchor is an NCHW convolution, ordinary or depthwise
(TOPI's `schedule_conv2d_nchw` role), with an elementwise tail (bias, scale, relu, clip,
a residual add); one schedule, run with the choices of a DirectChoices: an untuned
kernel's (default_choices) or those a template's config sets (search_spaces/conv2d.py,
depthwise_conv2d.py, whose fallback configs are the defaults).

The output (the tail's last stage) is tiled: output channels (unrolled) by rows by
columns (vectorized), the register tile bounded by the target's registers
(register_tile.conv2d_nchw_tile and conv2d_nchw_bounds); the outer loops run in
parallel. The convolution is computed into a local accumulator, at the column tile (the
whole register tile, its rows unrolled too, so that the input rows neighbouring output
rows share are loaded once) or at the inner row (one row of the tile), its reduction
outside the tile's loops, so a vector of outputs accumulates in registers; the tail's
stages are inlined into the output; the padded input is a stage of its own, computed in
parallel, or inlined.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..lang.tensor import ComputeOp, Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .register_tile import conv2d_nchw_bounds, conv2d_nchw_tile
from .shape import get_const_tuple, largest_divisor
from .tail import inline_tail

ACC_AT_ROW, ACC_AT_TILE = 0, 1
"""Where the accumulator is computed (DirectChoices.acc_at): at the inner row loop, or
at the column-tile loop."""

PARALLEL_BATCH, PARALLEL_CHANNELS, PARALLEL_ROWS = 1, 2, 3
"""How many outer loops run in parallel (DirectChoices.fuse_parallel): the batch alone,
fused with the channel tiles, or with the channel and row tiles."""


@dataclass(frozen=True)
class DirectChoices:
    """The choices of an NCHW convolution's schedule (schedule_direct).

    channels, rows, columns: the inner parts of the output's channel, row and column
        splits (the register tile: channels and rows unrolled, columns vectorized);
    in_channels: the inner part of the input channels' split (an ordinary
        convolution's; None for a depthwise one, which sums over its window alone);
    window_outer: the window's loops outside the input-channel parts;
    unroll_kw, unroll_kh: the window's columns, rows unrolled;
    pad_stage: the padded input a stage of its own, in parallel (else inlined);
    fuse_parallel: PARALLEL_BATCH, PARALLEL_CHANNELS or PARALLEL_ROWS;
    acc_at: ACC_AT_ROW or ACC_AT_TILE."""
    channels: int
    rows: int
    columns: int
    in_channels: int | None = 1
    window_outer: bool = False
    unroll_kw: bool = False
    unroll_kh: bool = False
    pad_stage: bool = True
    fuse_parallel: int = PARALLEL_CHANNELS
    acc_at: int = ACC_AT_TILE


def default_choices(out_shape, depthwise: bool = False, target=None) -> DirectChoices:
    """The choices of an untuned NCHW convolution with output (N, K, OH, OW) on `target`
    (default: the entered one, else the host): the conv2d_nchw_tile of one row, the
    accumulator at the column tile, the input channels in one part outside the window,
    nothing of the window unrolled (as fast on ResNet-18's layers; the heuristic
    fallbacks were about 4% slower on the whole model). A depthwise convolution: as many
    rows as fit (dividing OH), its window's columns unrolled, the accumulator at the
    row."""
    _, k, oh, ow = get_const_tuple(out_shape)
    channels, columns = conv2d_nchw_tile(k, ow, target)
    if not depthwise:
        return DirectChoices(channels, 1, columns)
    _, max_rows, _ = conv2d_nchw_bounds(target)
    return DirectChoices(channels, largest_divisor(oh, max_rows), columns, None,
                         unroll_kw=True, acc_at=ACC_AT_ROW)


def schedule_direct(s: Schedule, out: Tensor, conv: Tensor, choices: DirectChoices) -> None:
    """Schedule the NCHW convolution `conv` (compiler.ops.conv2d_nchw or
    depthwise_conv2d_nchw) by `choices` in a kernel whose output is `out`: `conv` itself
    or the last stage of an elementwise tail over it, whose stages are inlined (module
    docstring)."""
    for t in conv.op.input_tensors():
        if t.op.name == "pad" and choices.pad_stage:
            n, c, _, _ = s[t].op.axis
            s[t].parallel(s[t].fuse(n, c))
        elif isinstance(t.op, ComputeOp):  # the padding inlined, or a weight reordered here
            s[t].compute_inline()
    if out is conv:
        acc = s.cache_write(out, "local")
    else:
        inline_tail(s, out, conv)
        acc = conv
    o = s[out]
    n, c, y, x = o.op.axis
    co, ci = o.split(c, factor=choices.channels)
    yo, yi = o.split(y, factor=choices.rows)
    xo, xi = o.split(x, factor=choices.columns)
    o.reorder(n, co, yo, xo, yi, ci, xi)
    fused = [n, co, yo][:choices.fuse_parallel]
    o.parallel(o.fuse(*fused) if len(fused) > 1 else n)
    o.unroll(ci)
    o.vectorize(xi)
    s[acc].compute_at(o, yi if choices.acc_at == ACC_AT_ROW else xo)
    an, ak, ay, ax = s[acc].op.axis
    if choices.in_channels is None:  # depthwise: the window alone
        ry, rx = s[acc].op.reduce_axis
        reduction = [ry, rx]
    else:
        rc, ry, rx = s[acc].op.reduce_axis
        rco, rci = s[acc].split(rc, factor=choices.in_channels)
        reduction = [ry, rx, rco, rci] if choices.window_outer else [rco, ry, rx, rci]
    s[acc].reorder(*reduction, an, ay, ak, ax)
    s[acc].unroll(ay)
    s[acc].unroll(ak)
    s[acc].vectorize(ax)
    if choices.unroll_kw:
        s[acc].unroll(rx)
    if choices.unroll_kh:
        s[acc].unroll(ry)


def schedule_conv2d_nchw(out: Tensor, conv: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (== `conv`, or elementwise ops of it)
    from the NCHW convolution `conv`, ordinary or depthwise (channel multiplier 1), for
    `target` (default: the entered one, as a graph build's, else the host):
    schedule_direct with its default_choices, the templates' fallback."""
    s = create_schedule(out.op)
    depthwise = len(conv.op.reduce_axis) == 2
    schedule_direct(s, out, conv, default_choices(out.shape, depthwise, Target.resolve(target)))
    return s
