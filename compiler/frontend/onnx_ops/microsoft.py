"""Converters of the com.microsoft operators ONNX Runtime's quantizer writes in the
QOperator format (its contrib ops' documentation gives their meaning): each is its
inputs dequantized, the float operator, and the result quantized again,

    QLinearAdd(A, As, Az, B, Bs, Bz, Cs, Cz) = QuantizeLinear(DQ(A) + DQ(B), Cs, Cz)

(QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearConcat
the same way), and QGemm the float Gemm of its dequantized operands with the int32
bias C at scale As * Bs, quantized where y_scale is given. The float operators fuse
with the int8 convolutions' epilogues around them (ONNX Runtime runs them on integer
kernels that round in float32 as well; the results agree within a step). Optional
zero points absent are 0 of the first operand's type. A zero point absent at the output
takes A's type, as ONNX Runtime's kernels do.

MatMulIntegerToFloat is MatMulInteger's int32 product (a qnn.dense where one applies:
constant int8 B of zero point 0) times a_scale * b_scale (b's per column too), in
float32, plus the float bias; DynamicQuantizeMatMul is the same after A is quantized as
DynamicQuantizeLinear does (uint8 by its range and 0), as ONNX Runtime computes both.
"""
from __future__ import annotations

import numpy as np

from ... import graph
from ...graph.ir.expr import Constant
from ...graph.ir.op.transform import reshape
from .common import Attributes
from . import quantize


def _default(name: str):
    from . import CONVERTERS
    return CONVERTERS[name]


def _zero(ctx, zero, like):
    return zero if zero is not None else Constant(np.zeros((), ctx.dtype(like)))


def _dq(ctx, x, scale, zero, node, axis=None):
    attrs = Attributes({} if axis is None else {"axis": axis})
    convert = quantize.CONVERTERS["DequantizeLinear"]
    return convert(ctx, [x, scale, _zero(ctx, zero, x)], attrs, node)


def _q(ctx, y, scale, zero, like, node):
    convert = quantize.CONVERTERS["QuantizeLinear"]
    return convert(ctx, [y, scale, _zero(ctx, zero, like)], Attributes({}), node)


def _arg(args, i):
    return args[i] if len(args) > i else None


def _binary(op: str):
    def convert(ctx, args, attrs, node):
        a, a_s, a_z, b, b_s, b_z, c_s = (_arg(args, i) for i in range(7))
        y = _default(op)(ctx, [_dq(ctx, a, a_s, a_z, node), _dq(ctx, b, b_s, b_z, node)],
                         Attributes({}), node)
        return _q(ctx, y, c_s, _arg(args, 7), a, node)
    return convert


def _unary(op: str, **read):
    def convert(ctx, args, attrs, node):
        x, x_s, x_z, y_s = (_arg(args, i) for i in range(4))
        given = Attributes({k: attrs.get(k, v) for k, v in read.items()})
        y = _default(op)(ctx, [_dq(ctx, x, x_s, x_z, node)], given, node)
        return _q(ctx, y, y_s, _arg(args, 4), x, node)
    return convert


def _global_average_pool(ctx, args, attrs, node):
    if attrs.get("channels_last", 0):
        raise ValueError("channels_last=1 (NHWC) is not supported")
    return _unary("GlobalAveragePool")(ctx, args, Attributes({}), node)


def _concat(ctx, args, attrs, node):
    """QLinearConcat(Y_scale, Y_zero_point, X1, X1_scale, X1_zero_point, X2, ...)."""
    y_s, y_z, rest = args[0], args[1], args[2:]
    if not rest or len(rest) % 3:
        raise ValueError(f"takes triplets of (X, X_scale, X_zero_point) after Y's scale and "
                         f"zero point, got {len(rest)} inputs")
    parts = [_dq(ctx, rest[i], rest[i + 1], rest[i + 2], node) for i in range(0, len(rest), 3)]
    y = _default("Concat")(ctx, parts, Attributes({"axis": attrs["axis"]}), node)
    return _q(ctx, y, y_s, y_z, rest[0], node)


def _qgemm(ctx, args, attrs, node):
    """QGemm: alpha * DQ(A)' @ DQ(B)' + C * (a_scale * b_scale), b's scale and zero point
    per output column too; quantized by y_scale and y_zero_point where given (else
    float32)."""
    a, a_s, a_z, b, b_s, b_z, c, y_s, y_z = (_arg(args, i) for i in range(9))
    trans_a, trans_b = attrs.get("transA", 0), attrs.get("transB", 0)
    alpha = attrs.get("alpha", 1.0)
    per_column = int(np.prod(ctx.shape(b_s))) != 1
    fa = _dq(ctx, a, a_s, a_z, node)
    fb = _dq(ctx, b, b_s, b_z, node, axis=(0 if trans_b else 1) if per_column else None)
    inputs = [fa, fb]
    if c is not None:
        if ctx.dtype(c) != "int32":
            raise ValueError(f"C of {ctx.dtype(c)} is not supported (int32)")
        scale = graph.multiply(a_s, b_s)
        inputs.append(graph.multiply(graph.op.tensor.cast(c, "float32"), scale))
    y = _default("Gemm")(ctx, inputs, Attributes({"transA": trans_a, "transB": trans_b,
                                                  "alpha": alpha}), node)
    return y if y_s is None else _q(ctx, y, y_s, y_z, a, node)


def _matmul_integer_to_float(ctx, args, attrs, node):
    """MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias)."""
    a, b, a_s, b_s, a_z, b_z, bias = (_arg(args, i) for i in range(7))
    if int(np.prod(ctx.shape(a_s))) != 1:
        raise ValueError(f"a_scale of shape {list(ctx.shape(a_s))} is not supported "
                         "(a scalar)")
    columns = ctx.shape(b)[-1]
    if int(np.prod(ctx.shape(b_s))) != 1 and tuple(ctx.shape(b_s)) != (columns,):
        raise ValueError(f"b_scale of shape {list(ctx.shape(b_s))} is not supported (a "
                         f"scalar, or a vector of the {columns} columns)")
    for name, v in (("a_scale", a_s), ("b_scale", b_s), ("bias", bias)):
        if v is not None and ctx.dtype(v) != "float32":
            raise ValueError(f"{name} of {ctx.dtype(v)} is not supported (float32)")
    product = quantize.CONVERTERS["MatMulInteger"](ctx, [a, b, a_z, b_z], Attributes({}),
                                                   node)
    scale = graph.multiply(reshape(a_s, ()) if ctx.shape(a_s) else a_s, b_s)
    y = graph.multiply(graph.op.tensor.cast(product, "float32"), scale)
    return y if bias is None else graph.add(y, bias)


def _dynamic_quantize_matmul(ctx, args, attrs, node):
    """DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): A quantized to uint8 as
    DynamicQuantizeLinear does, then MatMulIntegerToFloat."""
    a, b, b_s, b_z, bias = (_arg(args, i) for i in range(5))
    if ctx.dtype(a) != "float32":
        raise ValueError(f"A of {ctx.dtype(a)} is not supported (float32)")
    q, a_s, a_z = quantize.CONVERTERS["DynamicQuantizeLinear"](ctx, [a], Attributes({}), node)
    return _matmul_integer_to_float(ctx, [q, b, a_s, b_s, a_z, b_z, bias], attrs, node)


CONVERTERS = {
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu", alpha=0.01),
    "QLinearGlobalAveragePool": _global_average_pool,
    "QLinearConcat": _concat,
    "QGemm": _qgemm,
    "MatMulIntegerToFloat": _matmul_integer_to_float,
    "DynamicQuantizeMatMul": _dynamic_quantize_matmul,
}
"""com.microsoft op type -> converter."""
