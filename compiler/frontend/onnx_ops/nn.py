"""Converters of ONNX's network ops: batch normalization, Gemm, MatMul, Softmax."""
from __future__ import annotations

from ... import graph


def _gemm(ctx, args, attrs, node):
    a, b, c = (args + [None])[:3]
    if attrs.get("transA", 0):
        a = graph.transpose(a, (1, 0))
    if not attrs.get("transB", 0):
        b = graph.transpose(b, (1, 0))
    out = graph.nn.dense(a, b)
    if attrs.get("alpha", 1.0) != 1.0:
        out = graph.multiply(out, graph.const(float(attrs["alpha"])))
    if c is not None:
        if attrs.get("beta", 1.0) != 1.0:
            c = graph.multiply(c, graph.const(float(attrs["beta"])))
        out = graph.add(out, c)
    return out


def _softmax(ctx, args, attrs, node):
    axis = attrs.get("axis", -1 if ctx.opset >= 13 else 1)
    ndim = len(ctx.shape(args[0]))
    if ctx.opset < 13 and axis % ndim != ndim - 1:
        raise ValueError(f"opset {ctx.opset} Softmax over axis {axis} flattens the trailing "
                         f"axes; only the last axis is supported")
    return graph.nn.softmax(args[0], axis=axis)


CONVERTERS = {
    "BatchNormalization": lambda c, a, at, n: graph.nn.batch_norm(
        *a[:5], epsilon=at.get("epsilon", 1e-5)),
    "Gemm": _gemm,
    "MatMul": lambda c, a, at, n: graph.matmul(a[0], a[1]),
    "Softmax": _softmax,
    "Dropout": lambda c, a, at, n: a[0],  # inference: the identity
}
