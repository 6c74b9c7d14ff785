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
and channel blocks, sized to the target's vector registers (default_register_tile); the
convolution is computed at each tile into a tile-sized accumulator with its reduction
(input-channel blocks, the window, the channels in a block) outside the tile's loops,
so the accumulator stays in vector registers, and the tile's blocks innermost, so one
broadcast input value feeds the FMAs of every block (as ONNX Runtime's MLAS kernels do:
on AVX2, 16 registers hold e.g. 4 columns x 3 blocks of 8 channels); the batch,
channel-block and row tiles are fused and run in parallel; an ordinary convolution's
padded input is a stage of its own, computed in parallel, while a depthwise one reads
its input in place, the border tested (DEPTHWISE_PAD_STAGE).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..lang.tensor import ComputeOp, Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .pad import pad_hw
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, shape_str, static_shape, window2d
from .tail import inline_tail

MAX_TILE_ROWS = 4
"""Output rows a register tile may span (unrolled, like its columns)."""


@dataclass(frozen=True)
class RegisterTile:
    """A register tile of a packed convolution: `rows` x `cols` output positions of
    `blocks` channel blocks, each block `vectors` vector registers wide; it holds
    rows * cols * blocks * vectors accumulators. `weights`: the weight vectors of a
    block that stay in registers while the tile is computed (one for an ordinary
    convolution, whose weights change with every input channel; the whole window for a
    depthwise one, whose few weights the compiler keeps for the whole row). `operands`:
    the other registers a step needs (one broadcast input value; a depthwise step's
    input vector and, its padding read in place, the border's zero and mask)."""
    rows: int
    cols: int
    blocks: int
    vectors: int
    weights: int = 1
    operands: int = 1

    @property
    def accumulators(self) -> int:
        """Vector registers the tile's partial sums occupy."""
        return self.rows * self.cols * self.blocks * self.vectors

    @property
    def registers(self) -> int:
        """Registers the kernel needs: the accumulators, the weight vectors it holds for
        every block, and its other operands."""
        return self.accumulators + self.blocks * self.vectors * self.weights + self.operands


def register_tiles(target: Target, out_shape, window: tuple | None = None) -> list[RegisterTile]:
    """Every register tile of a packed convolution with output (N, K/y, OH, OW, y) that
    fits `target`'s vector registers: up to MAX_TILE_ROWS rows, any number of columns
    (those that do not divide OH or OW leave a smaller tile at the edge), channel blocks
    dividing K/y. `window` (KH, KW) for a depthwise convolution: one block per tile (the
    blocks share no input), its window's weights held. When nothing fits (a depthwise
    window of wide blocks on few registers), the one-position tile."""
    _, out_blocks, oh, ow, block = (int(d) for d in out_shape)
    vectors = -(-block // target.vector_lanes)
    weights = 1 if window is None else window[0] * window[1]
    blocks = [1] if window else [b for b in range(1, out_blocks + 1) if out_blocks % b == 0]
    operands = 1 if window is None else 3
    tiles = [RegisterTile(r, c, b, vectors, weights, operands)
             for r in range(1, min(oh, MAX_TILE_ROWS) + 1)
             for c in range(1, ow + 1) for b in blocks]
    return [t for t in tiles if t.registers <= target.vector_registers] or tiles[:1]


WEIGHT_VECTORS = 2
"""Weight vectors an untuned ordinary convolution's tile multiplies each broadcast input
by (its blocks x vectors per block): one broadcast then feeds two FMAs, and the weights
come from two streams. Measured on a Zen 5 (AVX-512, ResNet-18's 3x3 layers, 2 cores):
tiles of two 16-channel blocks ran at 480-510 GFLOPS, of four blocks (fewer broadcasts
per FMA, four weight streams) at 300-470, of one block at about 370; AVX2 code (8-channel
blocks) on the same CPU: two blocks 12 accumulators 240-256 GFLOPS, four blocks 196-226.
Where the output's blocks allow one or three (24 or 144 channels in blocks of 8 or 16,
MobileNetV2's), three won: 1x7x3 / 1x8x3 ran at 250 / 480 GFLOPS where 1x28x1 ran at 210 /
440 (its 1x1 layers at 56x56, 2 cores)."""


DEPTHWISE_PAD_STAGE = False
"""Whether an untuned depthwise convolution pads its input as a stage of its own (a
padded copy written, then read) or reads the input in place, its border tested. A
depthwise layer does 9 FMAs per value it reads: the copy's traffic is most of its time.
Tuned cold on MobileNetV2 (2 cores, Zen 5), 10 of its 11 depthwise layers dropped the
stage, 1.2-2.5x faster than the untuned config; untuned without it, the whole model ran
10% faster."""


def default_register_tile(target: Target, out_shape, window: tuple | None = None
                          ) -> RegisterTile:
    """The tile an untuned kernel uses: rows that divide the output's (edge tiles on rows
    and columns both spill; a depthwise convolution's columns divide too), weight vectors
    nearest WEIGHT_VECTORS (a depthwise convolution has its one block), then the most
    accumulators that do useful work (a column tile that does not divide the width
    computes its last tile in part), the fewest wasted columns, the fewest rows. Of two
    weight-vector counts equally near WEIGHT_VECTORS, the larger (see there).

    A depthwise convolution, its padding read in place (DEPTHWISE_PAD_STAGE), takes one
    row of fewer accumulators than half the registers: with the border's tests the
    compiler spilled tiles of several rows (2x8 on AVX-512: 56 vector moves to the
    stack) and a row of 16 columns, and ran them 1.2-1.9x slower than one row of 14
    (MobileNetV2's layers, AVX-512, 2 cores)."""
    _, _, oh, ow, _ = (int(d) for d in out_shape)
    tiles = register_tiles(target, out_shape, window)
    if window is not None and not DEPTHWISE_PAD_STAGE:
        tiles = [t for t in tiles if t.rows == 1
                 and 2 * t.accumulators < target.vector_registers] or tiles[:1]
    whole = [t for t in tiles if oh % t.rows == 0 and (window is None or ow % t.cols == 0)]

    def cost(t: RegisterTile) -> tuple:
        used = ow / (-(-ow // t.cols) * t.cols)
        return (abs(t.blocks * t.vectors - WEIGHT_VECTORS), -t.blocks * t.vectors,
                -round(t.accumulators * used, 6), -used, t.rows)
    return min(whole or tiles, key=cost)


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
def depthwise_conv2d_nchwc(data, kernel, stride=1, padding=0, dilation=1):
    """Depthwise convolution (channel multiplier 1) of packed data (N, C/x, H, W, x) with
    a packed kernel (C/x, 1, KH, KW, 1, x): the packed output (N, C/x, OH, OW, x)."""
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
    src = pad_hw(data, win.padding, (2, 3))
    (sh, sw), (dh, dw) = win.stride, win.dilation
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute(
        (n, cb, *win.out, x),
        lambda b, c, oy, ox, oc: te.sum(
            src[b, c, oy * sh + ry * dh, ox * sw + rx * dw, oc]
            * kernel[c, 0, ry, rx, 0, oc], axis=[ry, rx]),
        name="depthwise_conv2d_nchwc")


def schedule_conv2d_nchwc(out: Tensor, conv: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (== `conv`, or elementwise ops of it in
    the same packed layout) from the packed convolution `conv`, an ordinary or a
    depthwise one, for `target` (default: the entered one, else the host): its
    default_register_tile (see the module docstring)."""
    s = create_schedule(out.op)
    o = s[out]
    if out is conv:
        conv = s.cache_write(out, "local")
    else:
        inline_tail(s, out, conv)
    window = None
    if len(conv.op.reduce_axis) == 2:  # depthwise: the window alone
        window = tuple(int(r.dom.extent) for r in conv.op.reduce_axis)
    for padded in conv.op.input_tensors():
        if padded.op.name == "pad" and (window is None or DEPTHWISE_PAD_STAGE):
            n, c, y = s[padded].op.axis[:3]
            s[padded].parallel(s[padded].fuse(n, c, y))
            s[padded].vectorize(s[padded].op.axis[4])
        elif isinstance(padded.op, ComputeOp):  # the padding inlined, or a weight packed
            s[padded].compute_inline()       # in the kernel, not folded
    tile = default_register_tile(Target.resolve(target), out.shape, window)
    n, c, y, x, v = o.op.axis
    co, ci = o.split(c, factor=tile.blocks)
    yo, yi = o.split(y, factor=tile.rows)
    xo, xi = o.split(x, factor=tile.cols)
    o.reorder(n, co, yo, xo, ci, yi, xi, v)
    o.parallel(o.fuse(n, co, yo))
    o.vectorize(v)
    s[conv].compute_at(o, xo)
    cn, cc, cy, cx, cv = s[conv].op.axis
    s[conv].reorder(*s[conv].op.reduce_axis, cn, cy, cx, cc, cv)
    for axis in (cc, cy, cx):
        s[conv].unroll(axis)
    s[conv].vectorize(cv)
    return s
