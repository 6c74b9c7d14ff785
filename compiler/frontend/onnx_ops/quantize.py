"""Converters of ONNX's linear quantization: QuantizeLinear and DequantizeLinear, per
tensor and per axis, to and from the integer types the build compiles (int8, uint8,
int16, uint16; DequantizeLinear also int32), and DynamicQuantizeLinear (uint8 by the
input's range), as elementwise arithmetic; MatMulInteger, QLinearMatMul, ConvInteger and
QLinearConv as an int32 matmul or convolution of the operands less their zero points
(requantized after, for the QLinear ones). A 2-D convolution of 8-bit data by constant
int8 weights whose zero point is 0 (what ONNX Runtime's quantizer writes) is a
qnn.conv2d (graph/ir/op/qnn.py: int8 kernels, vpdpbusd where the CPU has VNNI), its
int8 data shifted by 128 to uint8, and its zero point with it; the rest run on the
build's generic integer schedules.

    QuantizeLinear    y = saturate(round(x / y_scale) + y_zero_point)
    DequantizeLinear  y = (x - x_zero_point) * x_scale

Each is computed so that it rounds where ONNX's reference rounds, and only there:
- the quotient x / y_scale in the type numpy's promotion of the two gives (the
  `precision` attribute's where given); rounding halves to even (Round);
- the rounded quotient and the zero point are added in float32, exact below 2^24, far
  outside every integer range, so saturation is the same as the reference's int32 sum
  clipped; a NaN saturates to the type's least value, as ONNX Runtime's kernel does
  (the reference's cast of NaN to int32 is undefined);
- the difference x - x_zero_point is exact in float32 for 8- and 16-bit integers, and
  is taken in float64 for int32 (numpy's promotion), then multiplied by the scale in
  that type and rounded once to the scale's type (or `output_dtype`).

Blocked quantization (block_size > 0) is refused by name; float8, float4, int4 and int2
values are refused where the import reads their element type.
"""
from __future__ import annotations

import numpy as np

from ... import graph
from ...graph.ir.expr import Constant
from ...graph.ir.op import reduce, tensor
from ...graph.ir.op.qnn import DEPTHWISE_EXACT_TERMS, qnn_conv2d, qnn_dense
from ...graph.ir.op.transform import reshape
from .common import DTYPES, axis, dtype_name, pads
from .nn import matmul
from .vision import CONVERTERS as _VISION

RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
          "int16": (-32768, 32767)}
"""The integer types QuantizeLinear makes, and their ranges (saturation)."""

DEQUANTIZED = (*RANGES, "int32")
"""The integer types DequantizeLinear reads."""


def _per_axis(ctx, param, x, attrs, what: str):
    """`param` (a scale or zero point: a scalar, or a vector along `axis`) shaped to
    broadcast against `x`; blocked quantization refused by name."""
    block = attrs.get("block_size", 0)
    if block:
        raise ValueError(f"blocked quantization (block_size={block}) is not supported")
    ndim, shape = len(ctx.shape(x)), ctx.shape(param)
    along = attrs.get("axis", 1)  # read even where it does not apply (a scalar)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return reshape(param, ()) if shape else param
    along = axis(along, ndim)
    if len(shape) != 1 or shape[0] != ctx.shape(x)[along]:
        raise ValueError(f"{what} of shape {list(shape)} is neither a scalar nor a vector "
                         f"of the {ctx.shape(x)[along]} elements of axis {along} of the "
                         f"input of shape {list(ctx.shape(x))}")
    dims = [1] * ndim
    dims[along] = shape[0]
    return reshape(param, tuple(dims))


def _promoted(a: str, b: str) -> str:
    """The float type numpy's promotion gives a float type and a float or int32 type:
    float64 with an int32 (whose values float32 cannot all hold), float32 for float16
    with bfloat16."""
    rank = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
    if a not in rank or b not in rank:
        return "float64"
    if a == b:
        return a
    return max(a, b, key=rank.get) if rank[a] != rank[b] else "float32"


def _as(x, dtype: str, ctx):
    return x if ctx.dtype(x) == dtype else tensor.cast(x, dtype)


def _scalar(value, dtype: str):
    return Constant(np.array(value, dtype))


def _nonzero(ctx, zero) -> bool:
    """Whether a zero point is given and may be other than 0: adding or subtracting a
    known 0 is left out (exact: the sum is an integer-valued float that is saturated and
    cast, or the dequantized difference of integers, where -0.0 cannot arise)."""
    return zero is not None and not (ctx.known(zero) and not np.any(ctx.value(zero,
                                                                            "zero point")))


def _quantize(ctx, args, attrs, node):
    x, scale = args[0], args[1]
    zero = args[2] if len(args) > 2 else None
    attrs.get("saturate")  # float8 only (the spec): an integer result always saturates
    out = attrs.get("output_dtype", 0)
    out = DTYPES.get(out, dtype_name(out)) if out else None
    if zero is not None:
        if out is not None and out != ctx.dtype(zero):
            raise ValueError(f"output_dtype={out} differs from the zero point's type "
                             f"{ctx.dtype(zero)}")
        out = ctx.dtype(zero)
    out = out or "uint8"
    if out not in RANGES:
        raise ValueError(f"quantizing to {out} is not supported (supported: "
                         f"{', '.join(RANGES)})")
    precision = attrs.get("precision", 0)
    work = DTYPES.get(precision, dtype_name(precision)) if precision else \
        _promoted(ctx.dtype(x), ctx.dtype(scale))
    if work not in ("float16", "float32", "float64"):
        raise ValueError(f"computing x / y_scale in {work} is not supported")
    scale = _per_axis(ctx, scale, x, attrs, "y_scale")
    q = tensor.round(graph.divide(_as(x, work, ctx), _as(scale, work, ctx)))
    q = _as(q, "float32", ctx)  # an integer already: exact in float32 below 2^24
    if zero is not None:
        zero = _per_axis(ctx, zero, x, attrs, "y_zero_point")  # checked even when 0
        q = graph.add(q, _as(zero, "float32", ctx)) if _nonzero(ctx, zero) else q
    return _saturated(q, out)


def _saturated(q, out: str, dtype: str = "float32"):
    """The float `q` of `dtype` (integers already) clipped to the range of `out` and cast
    to it; a NaN becomes the least value."""
    low, high = (_scalar(v, dtype) for v in RANGES[out])
    q = tensor.where(tensor.greater_equal(q, low), q, low)  # NaN too: the least value
    return tensor.cast(graph.minimum(q, high), out)


def _dynamic_quantize(ctx, args, attrs, node):
    """DynamicQuantizeLinear: uint8 by the range of x and 0. Where x is all zeros the
    scale is 1, as ONNX Runtime computes it (ONNX's reference divides that 1 by 255
    too; the quantized values, all 0, are the same either way)."""
    x = args[0]
    if ctx.dtype(x) != "float32":
        raise ValueError(f"DynamicQuantizeLinear of {ctx.dtype(x)} is not supported "
                         "(it takes float32)")
    zero = _scalar(0.0, "float32")
    high = graph.maximum(reduce.max(x), zero)
    low = graph.minimum(reduce.min(x), zero)
    scale = tensor.where(tensor.equal(high, low), _scalar(1.0, "float32"),
                         graph.divide(graph.subtract(high, low), _scalar(255.0, "float32")))
    point = graph.subtract(zero, graph.divide(low, scale))
    point = tensor.round(graph.minimum(graph.maximum(point, zero), _scalar(255.0, "float32")))
    y = _saturated(graph.add(tensor.round(graph.divide(x, scale)), point), "uint8")
    return y, scale, tensor.cast(point, "uint8")


def _dequantize(ctx, args, attrs, node):
    x, scale = args[0], args[1]
    zero = args[2] if len(args) > 2 else None
    source = ctx.dtype(x)
    if source not in DEQUANTIZED:
        raise ValueError(f"dequantizing {source} is not supported (supported: "
                         f"{', '.join(DEQUANTIZED)})")
    out = attrs.get("output_dtype", 0)
    out = DTYPES.get(out, dtype_name(out)) if out else ctx.dtype(scale)
    if zero is not None and ctx.dtype(zero) != source:
        raise ValueError(f"x_zero_point's type {ctx.dtype(zero)} differs from x's {source}")
    work = "float64" if source == "int32" and zero is not None else "float32"
    dx = _as(_as(x, "float32", ctx), work, ctx)
    if zero is not None:
        zero = _per_axis(ctx, zero, x, attrs, "x_zero_point")  # checked even when 0
        dx = graph.subtract(dx, _as(zero, work, ctx)) if _nonzero(ctx, zero) else dx
    wide = _promoted(work, ctx.dtype(scale))
    y = graph.multiply(_as(dx, wide, ctx),
                       _as(_per_axis(ctx, scale, x, attrs, "x_scale"), wide, ctx))
    return _as(y, out, ctx)


def _offset(ctx, q, zero, columns: bool, what: str):
    """The integers `q` less their zero point, in int32: a scalar zero point, or with
    `columns` (a matrix's right operand) a vector along the last axis; a per-row zero
    point is refused by name (ONNX's reference and its text disagree on how it
    broadcasts)."""
    q = _as(q, "int32", ctx)
    if zero is None:
        return q
    shape = ctx.shape(zero)
    size = int(np.prod(shape)) if shape else 1
    if size != 1 and not (columns and len(shape) == 1 and shape[0] == ctx.shape(q)[-1]):
        raise ValueError(f"{what} of shape {list(shape)} is not supported (a scalar"
                         + (f", or a vector of the {ctx.shape(q)[-1]} columns" if columns
                            else "") + ")")
    zero = reshape(zero, ()) if size == 1 and shape else zero
    return graph.subtract(q, _as(zero, "int32", ctx))


def _check_8_bit(ctx, **operands):
    """Each operand (name=(value, zero point or None)) int8 or uint8, its zero point of
    its type."""
    for name, (v, z) in operands.items():
        if ctx.dtype(v) not in ("int8", "uint8"):
            raise ValueError(f"{name} of {ctx.dtype(v)} is not supported (int8, uint8)")
        if z is not None and ctx.dtype(z) != ctx.dtype(v):
            raise ValueError(f"{name}_zero_point's type {ctx.dtype(z)} differs from "
                             f"{name}'s {ctx.dtype(v)}")


def _integer_operands(ctx, a, b, a_zero, b_zero):
    """a and b of an integer matmul less their zero points, in int32."""
    _check_8_bit(ctx, a=(a, a_zero), b=(b, b_zero))
    return (_offset(ctx, a, a_zero, False, "a_zero_point"),
            _offset(ctx, b, b_zero, True, "b_zero_point"))


def _shifted_to_uint8(x):
    """int8 `x` plus 128, as uint8: the unsigned operand the int8 dot product takes (the
    zero point moves by 128 with it)."""
    return tensor.cast(graph.add(tensor.cast(x, "int16"), _scalar(128, "int16")), "uint8")


def _int8_matmul(ctx, a, b, a_zero, b_zero):
    """(a - a_zero) @ b as a qnn.dense (graph/ir/op/qnn.py: int8 kernels) where it is
    one: constant 2-D int8 b of zero point 0 (or none), a scalar a_zero (known or
    computed at run time: dynamic quantization's); int8 a shifted by 128 to uint8 (its
    zero point with it). The zero point's term is a_zero times b's column sums. None
    otherwise."""
    _check_8_bit(ctx, a=(a, a_zero), b=(b, b_zero))
    if ctx.dtype(b) != "int8" or not ctx.known(b) or len(ctx.shape(b)) != 2 or \
            len(ctx.shape(a)) < 2 or b_zero is not None and \
            (not ctx.known(b_zero) or np.any(ctx.value(b_zero, "b_zero_point"))):
        return None
    if a_zero is not None and int(np.prod(ctx.shape(a_zero))) != 1:
        return None
    weight = np.asarray(ctx.value(b, "b"))
    lead, k = ctx.shape(a)[:-1], ctx.shape(a)[-1]
    x = reshape(a, (int(np.prod(lead)), k))
    zero = _as(a_zero, "int32", ctx) if a_zero is not None else None
    if ctx.dtype(a) == "int8":
        x = _shifted_to_uint8(x)
        zero = graph.add(zero, _scalar(128, "int32")) if zero is not None else \
            _scalar(128, "int32")
    out = qnn_dense(x, Constant(np.ascontiguousarray(weight.T)))
    if zero is not None:
        sums = Constant(weight.astype(np.int64).sum(axis=0).astype(np.int32))
        out = graph.subtract(out, graph.multiply(reshape(zero, ()), sums))
    return reshape(out, (*lead, weight.shape[1]))


def _matmul_integer(ctx, args, attrs, node):
    """MatMulInteger: (a - a_zero_point) @ (b - b_zero_point), accumulated exactly in
    int32 (8-bit operands: exact for inner extents below 33,000); a qnn.dense where one
    applies (_int8_matmul)."""
    a, b = args[0], args[1]
    a_zero = args[2] if len(args) > 2 else None
    b_zero = args[3] if len(args) > 3 else None
    fast = _int8_matmul(ctx, a, b, a_zero, b_zero)
    if fast is not None:
        return fast
    return matmul(ctx, *_integer_operands(ctx, a, b, a_zero, b_zero))


def _qlinear_matmul(ctx, args, attrs, node):
    """QLinearMatMul: the int32 product of the operands less their zero points, times
    a_scale * b_scale / y_scale (in the scales' type, as ONNX's reference rounds it), in
    float64, plus y_zero_point, rounded and saturated to y's type. b's scale and zero
    point may be per column. The int32 product is a qnn.dense (the int8 kernels) where
    one applies (_int8_matmul: constant int8 b of zero point 0), the same integers."""
    a, a_scale, a_zero, b, b_scale, b_zero, y_scale = args[:7]
    y_zero = args[7] if len(args) > 7 else None
    out = ctx.dtype(y_zero) if y_zero is not None else ctx.dtype(a)
    if out not in ("int8", "uint8"):
        raise ValueError(f"y of {out} is not supported (int8, uint8)")
    for name, v in (("a_scale", a_scale), ("y_scale", y_scale), ("y_zero_point", y_zero)):
        if v is not None and int(np.prod(ctx.shape(v))) != 1:
            raise ValueError(f"{name} of shape {list(ctx.shape(v))} is not supported "
                             "(a scalar)")
    product = _int8_matmul(ctx, a, b, a_zero, b_zero)
    if product is None:
        product = matmul(ctx, *_integer_operands(ctx, a, b, a_zero, b_zero))
    columns = ctx.shape(product)[-1]
    b_shape = ctx.shape(b_scale)
    if int(np.prod(b_shape)) != 1 and tuple(b_shape) != (columns,):
        raise ValueError(f"b_scale of shape {list(b_shape)} is not supported (a scalar, "
                         f"or a vector of the {columns} columns)")
    scales = [s if not ctx.shape(s) else reshape(s, ()) if int(np.prod(ctx.shape(s))) == 1
              else s for s in (a_scale, b_scale, y_scale)]
    kind = ctx.dtype(a_scale)
    if any(ctx.dtype(s) != kind for s in scales) or kind not in ("float32", "float16"):
        raise ValueError("the scales must be all float32 or all float16")
    factor = graph.divide(graph.multiply(scales[0], scales[1]), scales[2])
    d = graph.multiply(_as(product, "float64", ctx), _as(factor, "float64", ctx))
    if _nonzero(ctx, y_zero):
        zero = reshape(y_zero, ()) if ctx.shape(y_zero) else y_zero
        d = graph.add(d, _as(zero, "float64", ctx))
    return _saturated(tensor.round(d), out, "float64")


def _conv_operands(ctx, x, w, x_zero, w_zero):
    """x and w of an integer convolution less their zero points, in int32: x's a scalar,
    w's a scalar or one per output channel."""
    _check_8_bit(ctx, x=(x, x_zero), w=(w, w_zero))
    x32 = _offset(ctx, x, x_zero, False, "x_zero_point")
    w32 = _as(w, "int32", ctx)
    if w_zero is not None:
        w32 = graph.subtract(w32, _as(_per_channel(ctx, w_zero, w, "w_zero_point", False),
                                      "int32", ctx))
    return x32, w32


def _per_channel(ctx, param, w, what: str, output: bool):
    """A scale or zero point of a convolution: a scalar, or one per output channel (w's
    first axis), shaped to broadcast against the weight, or with `output` against the
    convolution's output (N, M, spatial axes)."""
    shape, channels = ctx.shape(param), ctx.shape(w)[0]
    size = int(np.prod(shape)) if shape else 1
    if size == 1:
        return reshape(param, ()) if shape else param
    if tuple(shape) != (channels,):
        raise ValueError(f"{what} of shape {list(shape)} is not supported (a scalar, or a "
                         f"vector of the {channels} output channels)")
    ones = len(ctx.shape(w)) - (2 if output else 1)
    return reshape(param, (channels, *[1] * ones))


def _int8_conv(ctx, x, x_zero, w, w_zero, attrs):
    """The int32 convolution of x and w less their zero points as a qnn.conv2d, where it
    is one: 2-D, one group or one per channel (depthwise, a window of at most
    DEPTHWISE_EXACT_TERMS taps), constant int8 weights of zero point 0 (or none), a
    constant x zero point; int8 x shifted by 128 to uint8 (x - x_zero_point is
    unchanged), the channels of one group padded to a multiple of 4 (the int8 kernels'
    words) with terms of 0. None otherwise. Reads every attribute of Conv (kernel_shape
    checked by the caller's Conv converter, which runs first)."""
    _check_8_bit(ctx, x=(x, x_zero), w=(w, w_zero))
    known_zero = x_zero is None or ctx.known(x_zero)
    group = attrs.get("group", 1)
    depthwise = len(ctx.shape(x)) == 4 and group == ctx.shape(x)[1] == ctx.shape(w)[0] and \
        ctx.shape(w)[1] == 1 and int(np.prod(ctx.shape(w)[2:])) <= DEPTHWISE_EXACT_TERMS
    if len(ctx.shape(x)) != 4 or group != 1 and not depthwise or ctx.dtype(w) != "int8" or \
            not ctx.known(w) or not known_zero or w_zero is not None and \
            (not ctx.known(w_zero) or np.any(ctx.value(w_zero, "w_zero_point"))):
        return None
    zero = 0 if x_zero is None else ctx.value(x_zero, "x_zero_point").reshape(-1)
    if np.size(zero) != 1:
        return None
    zero = int(np.asarray(zero).reshape(-1)[0]) if np.size(zero) else 0
    if ctx.dtype(x) == "int8":
        x = _shifted_to_uint8(x)
        zero += 128
    strides, dilation = attrs.get("strides", (1, 1)), attrs.get("dilations", (1, 1))
    padding = pads(attrs, ctx.shape(x)[2:], ctx.shape(w)[2:], strides, dilation)
    weight = np.asarray(ctx.value(w, "w"))
    extra = 0 if depthwise else -weight.shape[1] % 4
    if extra:  # channels to a multiple of 4 (an image's 3): x's the zero point, w's 0
        x = graph.nn.pad(x, ((0, 0), (0, extra), (0, 0), (0, 0)), pad_value=zero)
        weight = np.pad(weight, ((0, 0), (0, extra), (0, 0), (0, 0)))
    return qnn_conv2d(x, Constant(weight), strides=strides, padding=padding,
                      dilation=dilation, input_zero_point=zero, groups=group)


FLOAT_EXACT_TERMS = 2 ** 24 // (255 * 255)
"""The most products of two 8-bit values less their zero points (each of magnitude at
most 255 * 255) whose every partial sum float32 holds exactly (below 2^24): 258."""


def _integer_conv(ctx, x, w, x_zero, w_zero, attrs, node):
    """ConvInteger's int32 result, and whether it is a qnn.conv2d: where one applies
    (_int8_conv), else the Conv converter on the operands less their zero points
    (every attribute of Conv): in float32, whose kernels run at the FMA peak where
    int32's multiply is slow, when each output sums at most FLOAT_EXACT_TERMS products
    (a depthwise 3x3's 9: every partial sum an integer float32 holds, in any order, so
    the result is exact), else in int32."""
    fast = _int8_conv(ctx, x, x_zero, w, w_zero, attrs)
    operands = list(_conv_operands(ctx, x, w, x_zero, w_zero))
    terms = int(np.prod(ctx.shape(w)[1:]))
    if fast is None:  # the import names it (QuantizedInFloatWarning)
        how = "float32" if terms <= FLOAT_EXACT_TERMS else "int32"
        ctx.in_float.append(f'{node.op_type} "{node.name or node.output[0]}" (group '
                            f'{attrs.get("group", 1)}, in {how})')
    if fast is None and terms <= FLOAT_EXACT_TERMS:
        floats = [tensor.cast(v, "float32") for v in operands]
        return tensor.cast(_VISION["Conv"](ctx, floats, attrs, node), "int32"), False
    generic = _VISION["Conv"](ctx, operands, attrs, node)
    return (generic, False) if fast is None else (fast, True)


def _conv_integer(ctx, args, attrs, node):
    """ConvInteger: the convolution (every attribute of Conv) of x and w less their zero
    points, accumulated exactly in int32; the padding is zero after the subtraction, as
    ONNX's reference pads."""
    x, w = args[0], args[1]
    x_zero = args[2] if len(args) > 2 else None
    w_zero = args[3] if len(args) > 3 else None
    return _integer_conv(ctx, x, w, x_zero, w_zero, attrs, node)[0]


def _qlinear_conv(ctx, args, attrs, node):
    """QLinearConv: ConvInteger's int32 result plus the int32 bias, times x_scale *
    w_scale / y_scale (w's per output channel too; in the scales' type, as ONNX's
    reference rounds it) in float64, plus y_zero_point, rounded and saturated. On
    qnn.conv2d (the int8 kernels) the requantization is ONNX Runtime's (MLAS's): the
    int32 sum as float32 times that factor in float32, rounded (halves to even), plus
    y_zero_point, saturated: float32 keeps the epilogue's vectors 16 wide where float64
    halves them, and the models' files are held to ONNX Runtime's outputs."""
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = args[:8]
    bias = args[8] if len(args) > 8 else None
    out = ctx.dtype(y_zero) if y_zero is not None else ctx.dtype(x)
    if out not in ("int8", "uint8"):
        raise ValueError(f"y of {out} is not supported (int8, uint8)")
    if bias is not None and ctx.dtype(bias) != "int32":
        raise ValueError(f"B of {ctx.dtype(bias)} is not supported (int32)")
    for name, v in (("x_scale", x_scale), ("y_scale", y_scale), ("y_zero_point", y_zero)):
        if v is not None and int(np.prod(ctx.shape(v))) != 1:
            raise ValueError(f"{name} of shape {list(ctx.shape(v))} is not supported "
                             "(a scalar)")
    acc, fast = _integer_conv(ctx, x, w, x_zero, w_zero, attrs, node)
    if bias is not None:
        acc = graph.nn.bias_add(acc, bias)
    scales = [reshape(s, ()) if ctx.shape(s) else s for s in (x_scale, y_scale)]
    kind = ctx.dtype(x_scale)
    if any(ctx.dtype(s) != kind for s in (x_scale, w_scale, y_scale)) or \
            kind not in ("float32", "float16"):
        raise ValueError("the scales must be all float32 or all float16")
    w_scale = _per_channel(ctx, w_scale, w, "w_scale", True)
    factor = graph.divide(graph.multiply(scales[0], w_scale), scales[1])
    zero = None if not _nonzero(ctx, y_zero) else reshape(y_zero, ()) if ctx.shape(y_zero) \
        else y_zero
    if fast:
        d = tensor.round(graph.multiply(_as(acc, "float32", ctx), _as(factor, "float32", ctx)))
        if zero is not None:
            d = graph.add(d, _as(zero, "float32", ctx))
        return _saturated(d, out)
    d = graph.multiply(_as(acc, "float64", ctx), _as(factor, "float64", ctx))
    if zero is not None:
        d = graph.add(d, _as(zero, "float64", ctx))
    return _saturated(tensor.round(d), out, "float64")


CONVERTERS = {
    "ConvInteger": _conv_integer,
    "QLinearConv": _qlinear_conv,
    "MatMulInteger": _matmul_integer,
    "QLinearMatMul": _qlinear_matmul,
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    "DynamicQuantizeLinear": _dynamic_quantize,
}
