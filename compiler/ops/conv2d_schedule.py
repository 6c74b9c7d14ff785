"""schedule_conv2d_nchw: the schedule of a kernel whose anchor is an NCHW conv2d and
whose tail is elementwise (bias, scale, relu, clip, a residual add): TOPI's
`schedule_conv2d_nchw` role, the default a graph build uses until a template's config
is applied.

The output (the tail's last stage) is tiled (`conv2d_nchw_tile`): columns by the largest
divisor of the width up to the target's vector width (vectorized), output channels by up
to 8 (unrolled) as far as the register rule lets them (register_tile.py); the batch and
channel blocks fused and run in parallel. The convolution is computed at each
column tile into a tile-sized accumulator, its reduction outside its tile loops, so a
vector of outputs accumulates in registers; the tail's stages are inlined into the
output; the padded input is a stage of its own, computed in parallel.
"""
from __future__ import annotations

from ..lang.tensor import Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .register_tile import max_rows
from .shape import get_const_tuple, largest_divisor
from .tail import inline_tail

MAX_CHANNELS = 8
"""The most output channels of a register tile: measured on ResNet-18's layers."""


def conv2d_nchw_tile(channels: int, width: int, target=None) -> tuple[int, int]:
    """`(output channels, columns)` of the register tile of an NCHW convolution with
    `channels` output channels and rows `width` wide, on `target` (compiler.Target.resolve:
    default the entered one, else the host): see the module docstring."""
    t = Target.resolve(target)
    columns = largest_divisor(width, t.vector_lanes)
    return largest_divisor(channels, min(MAX_CHANNELS, max_rows(columns, t))), columns


def schedule_conv2d_nchw(out: Tensor, conv: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (== `conv`, or elementwise ops of it)
    from the conv2d `conv` (see the module docstring), for `target` (default: the entered
    one, as a graph build's, else the host)."""
    s = create_schedule(out.op)
    if out is conv:
        conv = s.cache_write(out, "local")
    else:
        inline_tail(s, out, conv)
    for padded in conv.op.input_tensors():
        if padded.op.name == "pad":
            n, c = s[padded].op.axis[:2]
            s[padded].parallel(s[padded].fuse(n, c))
    _, k, _, w = get_const_tuple(out.shape)
    channels, columns = conv2d_nchw_tile(k, w, target)
    o = s[out]
    n, c, y, x = o.op.axis
    co, ci = o.split(c, factor=channels)
    xo, xi = o.split(x, factor=columns)
    o.reorder(n, co, y, xo, ci, xi)
    o.parallel(o.fuse(n, co))
    o.unroll(ci)
    o.vectorize(xi)
    s[conv].compute_at(o, xo)
    cn, ck, cy, cx = s[conv].op.axis
    rc, ry, rx = s[conv].op.reduce_axis
    s[conv].reorder(rc, ry, rx, cn, cy, ck, cx)
    s[conv].unroll(ck)
    s[conv].vectorize(cx)
    return s

