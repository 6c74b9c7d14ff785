"""The Winograd convolution template (TOPI's conv2d_winograd_without_weight_transform, in
the packed layout): compiler.ops.conv2d_winograd's F(m x m, 3 x 3) kernel, the form
AlterOpLayout gives a 3x3, stride 1 convolution of constant weights where the chooser
prefers it to the direct packed kernel (conv2d_nchwc.py).

- `conv2d_winograd_nchwc(N, C, H, W, K, padding, ic_block, oc_block, tile_size)`: data
  (N, C/ic, H, W, ic), transformed weights (m + 2, m + 2, K/oc, C, oc), m = tile_size
  -> out (N, K/oc, OH, OW, oc). The tile size is part of the workload, not a knob: the
  weights are transformed for it when the model is built.

Knobs:
- `bgemm_tile` ("RxB"): the batched GEMM's register tile, R input tiles by B output
  channel blocks (compiler.ops.register_tile.winograd_tiles: those that fit the
  target's registers), one broadcast of the transformed data feeding B weight vectors;
- `tile_rows`: how many rows of an output tile the output transform computes at once
  (1: m accumulators; m: the whole tile's m * m, where the registers hold them);
- `rows_outer`: whether the transforms' row loops run outside their parallel loops (one
  parallel loop per row, the fallback: nothing spills) or inside, tile by tile (fewer
  parallel loops, but LLVM keeps a tile's loads live across its rows and spills);
- `block_rows`: 0, each stage computed whole, in parallel; or 1 or 2 rows of output tiles
  per block, the blocks in parallel, each transformed, multiplied and transformed back
  in one go, so that its transformed data and products stay in the core's cache (the
  weights' transform is reread by every block: faster where it fits in L2 too).
The fallback is compiler.ops.schedule_conv2d_winograd_nchwc's schedule.
"""
from __future__ import annotations

from compiler import Target, te
from compiler.graph.ir.op.conv2d import winograd_of
from compiler.ops.conv2d_winograd import (conv2d_winograd_nchwc as winograd_conv,
                                          schedule_winograd, winograd_conv2d_reference)
from compiler.ops.register_tile import default_tile_rows, default_winograd_tile, winograd_tiles

from .conv2d import conv2d_workload
from .conv2d_nchwc import pack_out, unpack_data
from .binding import Binding, conv_call, conv_window, float32
from .registry import template


def _define_knobs(cfg, m: int, out_blocks: int, block: int) -> None:
    """The knobs (module docstring), their fallbacks the untuned schedule's."""
    target = Target.resolve()
    tiles = winograd_tiles(target, out_blocks, block)
    rows, blocks = default_winograd_tile(target, out_blocks, block)
    cfg.define_knob("bgemm_tile", [f"{r}x{b}" for r, b in tiles], fallback=f"{rows}x{blocks}")
    cfg.define_knob("tile_rows", [1, m], fallback=default_tile_rows(target, m, block))
    cfg.define_knob("rows_outer", [1, 0])
    cfg.define_knob("block_rows", [0, 1, 2])


def schedule_conv2d_winograd(cfg, s, conv, out) -> None:
    """Schedule the Winograd convolution `conv` by `cfg` in a kernel whose output is `out`
    (`conv`, or its elementwise tail)."""
    rows, blocks = (int(v) for v in cfg["bgemm_tile"].val.split("x"))
    schedule_winograd(s, out, conv, rows, blocks, cfg["tile_rows"].val,
                      bool(cfg["rows_outer"].val), cfg["block_rows"].val)


def conv2d_winograd_nchwc_reference(inputs, N, C, H, W, K, padding, ic_block, oc_block,
                                    tile_size):
    """numpy `conv2d_winograd_nchwc`: Winograd's formula on the unpacked data, in
    float64, packed (for weights that are a transform, the convolution by them)."""
    data, weight = inputs
    out = winograd_conv2d_reference(unpack_data(data), weight, tile_size, (padding,) * 4)
    return pack_out(out, oc_block)


def _workload(call) -> tuple | None:
    """A float32 nn.conv2d whose kernel layout is a Winograd transform's (AlterOpLayout
    gave it), its padding the same on all sides."""
    window = conv_window(call.attrs)
    wino = winograd_of(call.attrs["kernel_layout"])
    if window is None or wino is None or not float32(call):
        return None
    (m, bo), (N, CB, H, W, bi) = wino, call.args[0].ty.shape
    return (N, CB * bi, H, W, call.args[1].ty.shape[2] * bo, window[1], bi, bo, m)


def _altered(call, form) -> tuple | None:
    """The workload of the NCHW call (3x3, stride 1: what a Winograd form is made of) in
    a Winograd form: its NCHW shapes and padding, the form's blocks and m."""
    args = conv2d_workload(call)
    if args is None or not form.winograd:
        return None
    N, C, H, W, K, _, _, _, padding = args
    return (N, C, H, W, K, padding, *form.blocks, form.winograd)


@template("conv2d_winograd_nchwc", reference=conv2d_winograd_nchwc_reference,
          probes=[(1, 8, 8, 8, 8, 1, 8, 8, 4)],
          binding=Binding(
              "nn.conv2d", _workload,
              compute=lambda args, cfg, ins: winograd_conv(ins[0], ins[1], args[8],
                                                           (args[5],) * 4),
              schedule=lambda args, cfg, s, anchor, out: schedule_conv2d_winograd(
                  cfg, s, anchor, out),
              call=lambda N, C, H, W, K, p, bi, bo, m: conv_call(N, C, H, W, K, 3, 3, 1, p),
              data_layout=lambda args: f"NCHW{args[6]}c", altered=_altered))
def conv2d_winograd_nchwc(cfg, N: int, C: int, H: int, W: int, K: int, padding: int = 1,
                          ic_block: int = 16, oc_block: int = 16, tile_size: int = 4):
    """3x3, stride 1 convolution by Winograd in NCHW[x]c; returns the schedule and
    [data, weight, out]."""
    if C % ic_block or K % oc_block:
        raise ValueError(f"conv2d_winograd_nchwc: {C} input channels in blocks of "
                         f"{ic_block} and {K} output channels in blocks of {oc_block} do "
                         f"not divide")
    alpha = tile_size + 2
    data = te.placeholder((N, C // ic_block, H, W, ic_block), name="data")
    weight = te.placeholder((alpha, alpha, K // oc_block, C, oc_block), name="weight")
    out = winograd_conv(data, weight, tile_size, (padding,) * 4)
    _define_knobs(cfg, tile_size, K // oc_block, oc_block)
    s = te.create_schedule(out.op)
    schedule_conv2d_winograd(cfg, s, out, out)
    return s, [data, weight, out]
