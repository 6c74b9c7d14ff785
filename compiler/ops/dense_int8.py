"""Dense layer of unsigned 8-bit data by signed 8-bit weights, the raw int32 sums: the
integer core of a quantized matmul (MatMulInteger, QLinearMatMul, a dynamically
quantized BERT's projections; graph/ir/op/qnn.py's qnn.dense), as TOPI's
dense_vnni.

Data is uint8 (M, K), K a multiple of 4; the weights are (N/y, K/4, y) int32 words, each
holding four consecutive k of one output column (byte j, the lowest first, is k = 4i +
j), packed once when the model is built; the output is int32 (M, N). Each term is
te.dot_u8s8 of a data word (four bytes of a row, one 32-bit load), broadcast along y
output columns, and y weight words: one vpdpbusd where the CPU has VNNI.

The schedule is the packed convolution's, a row of the data standing for an output
column of a 1x1 convolution: a register tile of rows by blocks of y columns sized by
the target's registers (dense_tile), accumulated in registers
over the whole reduction, one broadcast data word feeding every block, the tiles in
parallel.
"""
from __future__ import annotations

from .. import te
from ..lang.tensor import Tensor
from ..schedule.schedule import Schedule, create_schedule
from ..target import Target
from .conv2d_nchwc_int8 import word
from .pattern import OpPattern, register_pattern
from .register_tile import default_register_tile, register_tiles
from .shape import OpError, check_tensor, shape_str, static_shape
from .tail import inline_tail


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def dense_int8(data, weight):
    """Raw int32 sums of uint8 `data` (M, K) by packed int8 weight words (N/y, K/4, y):
    (M, N)."""
    op = "dense_int8"
    check_tensor(op, "data", data, 2)
    check_tensor(op, "weight", weight, 3)
    if data.dtype != "uint8" or weight.dtype != "int32":
        raise OpError(f"{op}: takes uint8 data and int32 weight words, not {data.dtype} and "
                      f"{weight.dtype}")
    m, k = static_shape(op, "data", data)
    nb, kw, y = static_shape(op, "weight", weight)
    if 4 * kw != k:
        raise OpError(f"{op}: weight words of shape {shape_str(weight.shape)} take "
                      f"{4 * kw} inputs, but data of shape {shape_str(data.shape)} has {k}")
    rk = te.reduce_axis((0, kw), name="rk")
    return te.compute(
        (m, nb * y),
        lambda i, j: te.sum(te.dot_u8s8(word(data, (i,), rk), weight[j // y, rk, j % y]),
                            axis=rk),
        name="dense_int8")


def dense_tile(target: Target, rows: int, blocks: int, block: int):
    """The register tile of an int8 dense of `rows` data rows and `blocks` output blocks:
    of the packed convolution's tiles (a data row as an output column), the most
    accumulators among those whose rows divide the data's (an edge tile's guards cost
    more than a smaller tile), else default_register_tile's."""
    shape = (1, blocks, 1, rows, block)
    whole = [t for t in register_tiles(target, shape) if t.rows == 1 and rows % t.cols == 0]
    if not whole:
        return default_register_tile(target, shape)
    return max(whole, key=lambda t: (t.accumulators, t.blocks))


def schedule_dense_int8(out: Tensor, dense: Tensor, target=None) -> Schedule:
    """The schedule of the kernel computing `out` (== `dense`, or elementwise ops of it:
    the dequantize or requantize epilogue) from dense_int8's `dense`, for `target`
    (default: the entered one, else the host): see the module docstring."""
    s = create_schedule(out.op)
    if out is dense:
        acc = s.cache_write(out, "local")
    else:
        inline_tail(s, out, dense)
        acc = dense
    m, n = (int(d) for d in out.shape)
    y = int(dense.op.input_tensors()[1].shape[2])
    tile = dense_tile(Target.resolve(target), m, n // y, y)
    o = s[out]
    i, j = o.op.axis
    jo, ji = o.split(j, factor=y)
    jbo, jbi = o.split(jo, factor=tile.blocks)
    io, ii = o.split(i, factor=tile.cols)
    o.reorder(jbo, io, jbi, ii, ji)
    outer = o.fuse(jbo, io)
    o.parallel(outer)
    o.vectorize(ji)
    s[acc].compute_at(o, outer)
    ai, aj = s[acc].op.axis
    ajo, aji = s[acc].split(aj, factor=y)
    (rk,) = s[acc].op.reduce_axis
    s[acc].reorder(rk, ai, ajo, aji)  # one broadcast data word feeds every block
    s[acc].unroll(ai)
    s[acc].unroll(ajo)
    s[acc].vectorize(aji)
    return s
