"""The packed convolution templates (TVM's conv2d_NCHWc and depthwise_conv2d_NCHWc):
compiler.ops' convolutions in the NCHW[x]c layout that AlterOpLayout gives a model's
convolutions at opt_level 3, with a schedule whose knobs are below.

- `conv2d_nchwc(N, C, H, W, K, R, S, stride, padding, ic_block, oc_block)`: data
  (N, C/ic, H, W, ic), kernel (K/oc, C/ic, R, S, ic, oc) -> out (N, K/oc, OH, OW, oc);
- `depthwise_conv2d_nchwc(N, C, H, W, R, S, stride, padding, block)`: data
  (N, C/b, H, W, b), kernel (C/b, 1, R, S, 1, b) -> out (N, C/b, OH, OW, b).

Knobs:
- `register_tile` ("RxCxB"): the register tile, R output rows by C columns by B output
  channel blocks (each block one or more vectors), unrolled; every tile whose
  accumulators and operands fit the target's vector registers
  (compiler.ops.conv2d_nchwc.register_tiles), so one broadcast input value feeds B
  weight vectors' FMAs, as ONNX Runtime's MLAS kernels do;
- `tile_ic`: the input-channel blocks split in two (a reduction tile), and
  `reduction_order`: how the two parts and the kernel window nest inside the tile
  (0: channel tiles outside the window, 1: the window outermost, 2: the window between
  the two parts); a depthwise convolution has neither;
- `rows_outer`: whether the row tiles run outside the channel-block tiles (the input rows
  stay in cache across the output channels) or inside them (the weights stay);
- `fuse_parallel`: how many of the outer loops are fused into the parallel one (3: batch
  and both tile loops; 2: batch and the outer one);
- `unroll_kw`: whether the window's columns are unrolled;
- `pad_stage`: whether the padded input is a stage of its own, in parallel and
  vectorized, or inlined.
The fallback config is compiler.ops.schedule_conv2d_nchwc's schedule, loop for loop (its
default_register_tile for the target), so an untuned model runs its packed convolutions
as fast as before tuning.

One schedule serves the template and a graph kernel (search_spaces/strategies.py): `out`
is the convolution itself, or the last stage of an elementwise tail over it, which is
inlined while the convolution becomes the tile's accumulator.
"""
from __future__ import annotations

from compiler import Target, ops, te
from compiler.ops import conv2d_nchwc as packing
from compiler.ops.conv2d_nchwc import (conv2d_nchwc as packed_conv, default_register_tile,
                                       depthwise_conv2d_nchwc as packed_depthwise,
                                       register_tiles)

from .conv2d import conv2d_nchw_reference, output_size
from .depthwise_conv2d import depthwise_conv2d_nchw_reference
from .registry import template


def _tile_name(tile) -> str:
    return f"{tile.rows}x{tile.cols}x{tile.blocks}"


def _define_knobs(cfg, out_shape, in_blocks: int, window: tuple | None) -> None:
    """The knobs of both templates (see the module docstring; `window`: a depthwise
    convolution's); their fallbacks are compiler.ops.schedule_conv2d_nchwc's choices for
    the entered target."""
    target = Target.resolve()
    tiles = register_tiles(target, out_shape, window)
    cfg.define_knob("register_tile", [_tile_name(t) for t in tiles],
                    fallback=_tile_name(default_register_tile(target, out_shape, window)))
    if window is None:
        cfg.define_split("tile_ic", in_blocks, num_outputs=2, fallback=[-1, in_blocks])
        cfg.define_knob("reduction_order", [0, 1, 2])
    cfg.define_knob("rows_outer", [0, 1])
    cfg.define_knob("fuse_parallel", [3, 2])
    cfg.define_knob("unroll_kw", [0, 1])
    stage = window is None or packing.DEPTHWISE_PAD_STAGE
    cfg.define_knob("pad_stage", [1, 0], fallback=1 if stage else 0)


def _reduction(cfg, s, acc) -> tuple[list, object]:
    """The accumulator's reduction loops in the order the config says (outermost first),
    and the window's column loop among them."""
    if len(s[acc].op.reduce_axis) == 2:  # depthwise: the window
        return list(s[acc].op.reduce_axis), s[acc].op.reduce_axis[1]
    rco, ry, rx, rci = s[acc].op.reduce_axis
    outer, inner = cfg["tile_ic"].apply(s, acc, rco)
    return {0: [outer, inner, ry, rx, rci], 1: [ry, rx, outer, inner, rci],
            2: [outer, ry, rx, inner, rci]}[cfg["reduction_order"].val], rx


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
    rows, cols, blocks = (int(v) for v in cfg["register_tile"].val.split("x"))
    o = s[out]
    n, c, y, x, v = o.op.axis
    co, ci = o.split(c, factor=blocks)
    yo, yi = o.split(y, factor=rows)
    xo, xi = o.split(x, factor=cols)
    outer = [yo, co] if cfg["rows_outer"].val else [co, yo]
    o.reorder(n, *outer, xo, ci, yi, xi, v)
    o.parallel(o.fuse(n, *outer) if cfg["fuse_parallel"].val == 3 else o.fuse(n, outer[0]))
    o.vectorize(v)
    s[acc].compute_at(o, xo)
    an, ac, ay, ax, av = s[acc].op.axis
    reduction, rx = _reduction(cfg, s, acc)
    s[acc].reorder(*reduction, an, ay, ax, ac, av)  # one broadcast feeds every block
    for axis in (ac, ay, ax):
        s[acc].unroll(axis)
    s[acc].vectorize(av)
    if cfg["unroll_kw"].val:
        s[acc].unroll(rx)


def unpack_data(x):
    """(N, C/b, H, W, b) -> (N, C, H, W)."""
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def pack_out(out, block):
    """(N, K, OH, OW) -> (N, K/block, OH, OW, block)."""
    n, k, h, w = out.shape
    return out.reshape(n, k // block, block, h, w).transpose(0, 1, 3, 4, 2).copy()


def conv2d_nchwc_reference(inputs, N, C, H, W, K, R, S, stride, padding, ic_block,
                           oc_block):
    """numpy `conv2d_nchwc`: the NCHW convolution of the unpacked data and kernel, packed."""
    data, kernel = inputs
    ob, ib, r, s_, bi, bo = kernel.shape
    oihw = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(ob * bo, ib * bi, r, s_)
    out = conv2d_nchw_reference([unpack_data(data), oihw], N, C, H, W, K, R, S, stride,
                                padding)
    return pack_out(out, oc_block)


@template("conv2d_nchwc", reference=conv2d_nchwc_reference,
          probes=[(1, 16, 9, 11, 16, 3, 3, 1, 1, 8, 8), (1, 8, 13, 13, 16, 1, 1, 2, 0, 8, 16)])
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
    _define_knobs(cfg, (N, K // oc_block, OH, OW, oc_block), C // ic_block, window=None)
    out = packed_conv(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d_nchwc(cfg, s, out, out)
    return s, [data, kernel, out]


def depthwise_conv2d_nchwc_reference(inputs, N, C, H, W, R, S, stride, padding, block):
    """numpy `depthwise_conv2d_nchwc`: the NCHW depthwise convolution, packed."""
    data, kernel = inputs
    cb, _, r, s_, _, b = kernel.shape
    chw = kernel[:, 0, :, :, 0, :].transpose(0, 3, 1, 2).reshape(cb * b, 1, r, s_)
    out = depthwise_conv2d_nchw_reference([unpack_data(data), chw], N, C, H, W, R, S,
                                          stride, padding)
    return pack_out(out, block)


@template("depthwise_conv2d_nchwc", reference=depthwise_conv2d_nchwc_reference,
          probes=[(1, 16, 9, 11, 3, 3, 1, 1, 8), (1, 16, 13, 13, 3, 3, 2, 1, 16)])
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
    _define_knobs(cfg, (N, C // block, OH, OW, block), C // block, window=(R, S))
    out = packed_depthwise(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    schedule_conv2d_nchwc(cfg, s, out, out)
    return s, [data, kernel, out]
