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
The schedule is compiler.ops.conv2d_nchwc.schedule_packed, which the knobs' values set
the choices of (`choices_of`); the fallback config is its default_choices for the
target, the schedule an untuned kernel runs: one schedule, not two kept equal.

It serves the template and a graph kernel (search_spaces/strategies.py): `out` is the
convolution itself, or the last stage of an elementwise tail over it, which is inlined
while the convolution becomes the tile's accumulator.
"""
from __future__ import annotations

from compiler import Target, te
from compiler.ops.conv2d_nchwc import (PackedChoices, conv2d_nchwc as packed_conv,
                                       default_choices,
                                       depthwise_conv2d_nchwc as packed_depthwise,
                                       schedule_packed)
from compiler.graph.ir.op.conv2d import winograd_of
from compiler.ops.register_tile import register_tiles

from .conv2d import conv2d_nchw_reference, conv2d_workload, output_size
from .depthwise_conv2d import depthwise_conv2d_nchw_reference, depthwise_workload
from .binding import Binding, conv_call, conv_window, float32
from .registry import template


def _tile_name(tile) -> str:
    return "x".join(str(d) for d in tile)


def _define_knobs(cfg, out_shape, in_blocks: int, window: tuple | None) -> None:
    """The knobs of both templates (see the module docstring; `window`: a depthwise
    convolution's); their fallbacks are compiler.ops' default_choices for the entered
    target."""
    target = Target.resolve()
    default = default_choices(target, out_shape, in_blocks, window)
    tiles = register_tiles(target, out_shape, window)
    cfg.define_knob("register_tile", [_tile_name((t.rows, t.cols, t.blocks)) for t in tiles],
                    fallback=_tile_name(default.register_tile))
    if window is None:
        cfg.define_split("tile_ic", in_blocks, num_outputs=2,
                         fallback=[-1, default.ic_inner])
        cfg.define_knob("reduction_order", [0, 1, 2], fallback=default.reduction_order)
    cfg.define_knob("rows_outer", [0, 1], fallback=int(default.rows_outer))
    cfg.define_knob("fuse_parallel", [3, 2], fallback=default.fuse_parallel)
    cfg.define_knob("unroll_kw", [0, 1], fallback=int(default.unroll_kw))
    cfg.define_knob("pad_stage", [1, 0], fallback=int(default.pad_stage))


def choices_of(cfg, depthwise: bool) -> PackedChoices:
    """The schedule's choices that `cfg` sets (a depthwise convolution's have no channel
    sum to split)."""
    ic_inner = None if depthwise else cfg["tile_ic"].size[-1]
    return PackedChoices(
        tuple(int(v) for v in cfg["register_tile"].val.split("x")), ic_inner,
        0 if depthwise else cfg["reduction_order"].val,
        bool(cfg["rows_outer"].val), cfg["fuse_parallel"].val, bool(cfg["unroll_kw"].val),
        bool(cfg["pad_stage"].val))


def schedule_conv2d_nchwc(cfg, s, conv, out) -> None:
    """Schedule the packed convolution `conv` (ordinary or depthwise) by `cfg` in a kernel
    whose output is `out`: compiler.ops' schedule_packed with the config's choices."""
    schedule_packed(s, out, conv, choices_of(cfg, len(conv.op.reduce_axis) == 2))


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


def packed_call(call):
    """`(window, data shape, weight shape)` of a float32 nn.conv2d in NCHW[x]c with its
    weights packed at build time (not Winograd's) whose window the templates' arguments
    can say, else None."""
    window = conv_window(call.attrs)
    weight = call.args[1].ty
    if window is None or not float32(call) or call.attrs["data_layout"] == "NCHW" or \
            weight.ndim != 6 or winograd_of(call.attrs["kernel_layout"]) is not None:
        return None
    return window, call.args[0].ty.shape, weight.shape


def _workload(call) -> tuple | None:
    """A packed call of groups 1 (packed_call)."""
    found = packed_call(call)
    if found is None or call.attrs["groups"] != 1:
        return None
    window, (N, CB, H, W, bi), (OB, _, R, S, _, bo) = found
    return (N, CB * bi, H, W, OB * bo, R, S, *window, bi, bo)


def _altered(call, form) -> tuple | None:
    """The workload of the NCHW call of groups 1 in a direct packed form: its NCHW
    workload (conv2d_nchw's) and the form's blocks."""
    args = conv2d_workload(call)
    return None if args is None or form.winograd else (*args, *form.blocks)


def _schedule(args, cfg, s, anchor, out) -> None:
    schedule_conv2d_nchwc(cfg, s, anchor, out)


@template("conv2d_nchwc", reference=conv2d_nchwc_reference,
          probes=[(1, 16, 9, 11, 16, 3, 3, 1, 1, 8, 8), (1, 8, 13, 13, 16, 1, 1, 2, 0, 8, 16)],
          binding=Binding("nn.conv2d", _workload,
                          compute=lambda args, cfg, ins: packed_conv(ins[0], ins[1], *args[7:9]),
                          schedule=_schedule, call=lambda *args: conv_call(*args[:9]),
                          data_layout=lambda args: f"NCHW{args[9]}c", altered=_altered))
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


def _depthwise_workload(call) -> tuple | None:
    """A packed call of one filter per channel, in and out in the same blocks
    (packed_call)."""
    found = packed_call(call)
    if found is None:
        return None
    window, (N, CB, H, W, bi), (OB, _, R, S, _, bo) = found
    if not call.attrs["groups"] == CB * bi == OB * bo or bi != bo:
        return None
    return (N, CB * bi, H, W, R, S, *window, bi)


def _depthwise_altered(call, form) -> tuple | None:
    """The workload of the NCHW depthwise call in a packed form (one block in and out):
    its NCHW workload (depthwise_conv2d_nchw's) and the block."""
    args = depthwise_workload(call)
    block, out_block = form.blocks
    return None if args is None or form.winograd or block != out_block else (*args, block)


@template("depthwise_conv2d_nchwc", reference=depthwise_conv2d_nchwc_reference,
          probes=[(1, 16, 9, 11, 3, 3, 1, 1, 8), (1, 16, 13, 13, 3, 3, 2, 1, 16)],
          binding=Binding(
              "nn.conv2d", _depthwise_workload,
              compute=lambda args, cfg, ins: packed_depthwise(ins[0], ins[1], *args[6:8]),
              schedule=_schedule,
              call=lambda N, C, H, W, R, S, st, p, b: conv_call(N, C, H, W, C, R, S, st, p, C),
              data_layout=lambda args: f"NCHW{args[8]}c", altered=_depthwise_altered))
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
