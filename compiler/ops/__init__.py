"""The operator inventory (TOPI's role): numpy-style operators over te tensors, each a
function from tensors and parameters to the output tensor, plus a default schedule.

    import compiler
    from compiler import ops, te
    x = te.placeholder((1, 3, 32, 32), name="x")
    w = te.placeholder((8, 3, 3, 3), name="w")
    y = ops.relu(ops.conv2d_nchw(x, w, stride=1, padding=1))
    s = ops.default_schedule(y)
    f = compiler.build(s, [x, w, y])

One module per family: elemwise, broadcast, reduction, softmax, matmul, pad, conv2d,
depthwise_conv2d, pooling, resize (image resizing), dilate (zero-stuffing). Each
operator declares its fusion pattern kind (pattern.py): `ops.pattern_of("conv2d_nchw")`,
`ops.conv2d_nchw.pattern`, or `ops.pattern_kind(y)` for a tensor an operator produced.
Bad shapes or parameters raise `ops.OpError` (a ValueError) naming the operator and the
shapes; shape.py holds the checks they share (and `ops.get_const_tuple(shape)`, a
constant shape as Python ints), schedule.py the default schedule, conv2d_schedule.py the
schedule of a conv2d kernel with its elementwise tail, tail.py what every such kernel's
schedule does with its tail (find_anchor, inline_tail), gemm.py a hand-tuned GEMM
schedule, register_tile.py the register rule that bounds every register tile by the
target's vector registers, and the tile a kernel without tuning uses
(`ops.register_tile`, `ops.fits`).
"""
from .broadcast import add, bias_add, divide, multiply, subtract
from .conv2d import conv2d_nchw, conv2d_nhwc, group_conv2d_nchw
from .conv2d_schedule import schedule_conv2d_nchw
from .dilate import dilate
from .depthwise_conv2d import depthwise_conv2d_nchw
from .elemwise import clip, exp, log, relu, sigmoid, tanh
from .matmul import batch_matmul, dense, dense_pack, matmul
from .pad import PAD_MODES, pad
from .pattern import OpPattern, pattern_kind, pattern_of, register_pattern
from .pooling import avg_pool2d, max_pool2d, pooled_extent
from .resize import resize2d
from .reduction import max, mean, min, sum  # noqa: A004 - numpy's names, as ops.sum
from .register_tile import (conv2d_nchw_tile, fits, max_rows, register_tile, vector_width,
                            vectorize_columns, vectors)
from .schedule import default_schedule
from .shape import OpError, divisors, get_const_tuple, largest_divisor
from .layer_norm import layer_norm
from .softmax import log_softmax, softmax
from .tail import find_anchor, inline_tail

__all__ = [
    "add", "subtract", "multiply", "divide", "bias_add",
    "relu", "sigmoid", "tanh", "exp", "clip",
    "sum", "max", "min", "mean", "softmax", "log_softmax", "log", "layer_norm",
    "matmul", "dense", "dense_pack", "batch_matmul",
    "pad", "conv2d_nchw", "conv2d_nhwc", "group_conv2d_nchw", "depthwise_conv2d_nchw",
    "max_pool2d", "avg_pool2d", "pooled_extent", "PAD_MODES", "resize2d", "dilate",
    "OpPattern", "pattern_kind", "pattern_of", "register_pattern", "default_schedule", "OpError",
    "schedule_conv2d_nchw", "conv2d_nchw_tile", "find_anchor", "inline_tail",
    "get_const_tuple", "largest_divisor", "divisors",
    "register_tile", "fits", "max_rows", "vectors", "vector_width",
    "vectorize_columns",
]
