"""The packed convolution templates (TVM's conv2d_NCHWc and depthwise_conv2d_NCHWc):
compiler.ops' convolutions in the NCHW[x]c layout that AlterOpLayout gives a model's
convolutions at opt_level 3, with a schedule whose knobs are below.

- `conv2d_nchwc(N, C, H, W, K, R, S, stride, padding, ic_block, oc_block)`: data
  (N, C/ic, H, W, ic), kernel (K/oc, C/ic, R, S, ic, oc) -> out (N, K/oc, OH, OW, oc);
- `depthwise_conv2d_nchwc(N, C, H, W, R, S, stride, padding, block)`: data
  (N, C/b, H, W, b), kernel (C/b, 1, R, S, 1, b) -> out (N, C/b, OH, OW, b).

Knobs: the register tile's output columns (`tile_ow`, the inner part, at most 32,
unrolled) and rows (`tile_oh`, at most 4, unrolled too), whether the input-channel blocks
run outside or inside the kernel window (`ic_outer`, ordinary convolution only), whether
the window's columns are unrolled (`unroll_kw`), how many outer loops are fused into the
parallel one (`fuse_parallel`: 3 is batch, channel block and row tile; 2 leaves the row
tiles serial inside), and whether the padded input is a stage of its own, in parallel over
batch, channel block and row and vectorized, or inlined (`pad_stage`). The vector is
always one block of output channels. The fallback config is
compiler.ops.schedule_conv2d_nchwc's schedule, loop for loop (up to REGISTER_COLUMNS = 14
columns, one row, the channel blocks outside the window, rows in parallel, the padding a
stage of its own), so an untuned model runs its packed convolutions as fast as before.

One schedule serves the template and a graph kernel (search_spaces/strategies.py): `out`
is the convolution itself, or the last stage of an elementwise tail over it, which is
inlined while the convolution becomes the tile's accumulator.
"""
from __future__ import annotations

from compiler import ops, te
from compiler.ops.conv2d_nchwc import (REGISTER_COLUMNS, conv2d_nchwc as packed_conv,
                                       depthwise_conv2d_nchwc as packed_depthwise)

from .conv2d import conv2d_nchw_reference, output_size
from .depthwise_conv2d import depthwise_conv2d_nchw_reference
from .registry import template

MAX_REGISTER_COLUMNS = 32
MAX_REGISTER_ROWS = 4
"""Bounds of the register tile's columns and rows in the space (one accumulator vector
each; compiler.ops takes up to REGISTER_COLUMNS columns of one row): larger tiles would
only spill the accumulators out of the 32 AVX-512 registers."""


def _define_knobs(cfg, OH: int, OW: int, depthwise: bool) -> None:
    """The knobs of both templates (see the module docstring); their fallbacks are
    compiler.ops.schedule_conv2d_nchwc's choices."""
    cfg.define_split("tile_ow", OW, num_outputs=2,
                     filter=lambda e: e.size[-1] <= MAX_REGISTER_COLUMNS,
                     fallback=[-1, ops.largest_divisor(OW, REGISTER_COLUMNS)])
    cfg.define_split("tile_oh", OH, num_outputs=2,
                     filter=lambda e: e.size[-1] <= MAX_REGISTER_ROWS, fallback=[-1, 1])
    if not depthwise:
        cfg.define_knob("ic_outer", [1, 0])
    cfg.define_knob("unroll_kw", [0, 1])
    cfg.define_knob("fuse_parallel", [3, 2])
    cfg.define_knob("pad_stage", [1, 0])


def schedule_conv2d_nchwc(cfg, s, conv, out) -> None:
    """Schedule the packed convolution `conv` (ordinary or depthwise) by `cfg` in a kernel
    whose output is `out` (see the module docstring)."""
    if out is conv:
        acc = s.cache_write(out, "local")
    else:
        ops.inline_tail(s, out, conv)
        acc = conv
    for t in acc.op.input_tensors():
        if t.op.name == "pad" and cfg["pad_stage"].val:
            n, c, y = s[t].op.axis[:3]
            s[t].parallel(s[t].fuse(n, c, y))
            s[t].vectorize(s[t].op.axis[4])
        elif isinstance(t.op, te.ComputeOp):  # the padding inlined, or a weight packed here
            s[t].compute_inline()
    o = s[out]
    n, c, y, x, v = o.op.axis
    yo, yi = cfg["tile_oh"].apply(s, out, y)
    xo, xi = cfg["tile_ow"].apply(s, out, x)
    o.reorder(n, c, yo, xo, yi, xi, v)
    o.parallel(o.fuse(n, c, yo) if cfg["fuse_parallel"].val == 3 else o.fuse(n, c))
    o.vectorize(v)
    s[acc].compute_at(o, xo)
    an, ac, ay, ax, av = s[acc].op.axis
    reduction = list(s[acc].op.reduce_axis)  # rco, ry, rx, rci; depthwise: ry, rx
    rx = reduction[-2] if len(reduction) == 4 else reduction[-1]
    if len(reduction) == 4 and not cfg["ic_outer"].val:
        reduction = [reduction[1], reduction[2], reduction[0], reduction[3]]
    s[acc].reorder(*reduction, an, ac, ay, ax, av)
    s[acc].unroll(ay)
    s[acc].unroll(ax)
    s[acc].vectorize(av)
    if cfg["unroll_kw"].val:
        s[acc].unroll(rx)


def _unpack_data(x):
    """(N, C/b, H, W, b) -> (N, C, H, W)."""
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def _pack_out(out, block):
    """(N, K, OH, OW) -> (N, K/block, OH, OW, block)."""
    n, k, h, w = out.shape
    return out.reshape(n, k // block, block, h, w).transpose(0, 1, 3, 4, 2).copy()


def conv2d_nchwc_reference(inputs, N, C, H, W, K, R, S, stride, padding, ic_block,
                           oc_block):
    """numpy `conv2d_nchwc`: the NCHW convolution of the unpacked data and kernel, packed."""
    data, kernel = inputs
    ob, ib, r, s_, bi, bo = kernel.shape
    oihw = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(ob * bo, ib * bi, r, s_)
    out = conv2d_nchw_reference([_unpack_data(data), oihw], N, C, H, W, K, R, S, stride,
                                padding)
    return _pack_out(out, oc_block)


@template("conv2d_nchwc", reference=conv2d_nchwc_reference)
def conv2d_nchwc(cfg, N: int, C: int, H: int, W: int, K: int, R: int, S: int,
                 stride: int = 1, padding: int = 0, ic_block: int = 16, oc_block: int = 16):
    """2-D convolution in NCHW[x]c; returns the schedule and [data, kernel, out]."""
    if C % ic_block or K % oc_block:
        raise ValueError(f"conv2d_nchwc: {C} input channels in blocks of {ic_block} and {K} "
                         f"output channels in blocks of {oc_block} do not divide")
    OH, OW = output_size("conv2d_nchwc", H, W, R, S, stride, padding)
    data = te.placeholder((N, C // ic_block, H, W, ic_block), name="data")
    kernel = te.placeholder((K // oc_block, C // ic_block, R, S, ic_block, oc_block),
                            name="kernel")
    _define_knobs(cfg, OH, OW, depthwise=False)
    out = packed_conv(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d_nchwc(cfg, s, out, out)
    return s, [data, kernel, out]


def depthwise_conv2d_nchwc_reference(inputs, N, C, H, W, R, S, stride, padding, block):
    """numpy `depthwise_conv2d_nchwc`: the NCHW depthwise convolution, packed."""
    data, kernel = inputs
    cb, _, r, s_, _, b = kernel.shape
    chw = kernel[:, 0, :, :, 0, :].transpose(0, 3, 1, 2).reshape(cb * b, 1, r, s_)
    out = depthwise_conv2d_nchw_reference([_unpack_data(data), chw], N, C, H, W, R, S,
                                          stride, padding)
    return _pack_out(out, block)


@template("depthwise_conv2d_nchwc", reference=depthwise_conv2d_nchwc_reference)
def depthwise_conv2d_nchwc(cfg, N: int, C: int, H: int, W: int, R: int, S: int,
                           stride: int = 1, padding: int = 0, block: int = 16):
    """Depthwise convolution (multiplier 1) in NCHW[x]c; returns the schedule and
    [data, kernel, out]."""
    if C % block:
        raise ValueError(f"depthwise_conv2d_nchwc: {C} channels do not split into blocks "
                         f"of {block}")
    OH, OW = output_size("depthwise_conv2d_nchwc", H, W, R, S, stride, padding)
    data = te.placeholder((N, C // block, H, W, block), name="data")
    kernel = te.placeholder((C // block, 1, R, S, 1, block), name="kernel")
    _define_knobs(cfg, OH, OW, depthwise=True)
    out = packed_depthwise(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d_nchwc(cfg, s, out, out)
    return s, [data, kernel, out]
