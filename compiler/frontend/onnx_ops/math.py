"""Converters of ONNX's elementwise and broadcast ops: arithmetic, activations."""
from __future__ import annotations

import functools

import numpy as np

from ... import graph


def _clip(ctx, args, attrs, node):
    if ctx.opset < 11:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    else:
        low = ctx.optional(args, 1, "min", -np.inf)
        high = ctx.optional(args, 2, "max", np.inf)
    return graph.clip(args[0], float(low), float(high))


CONVERTERS = {
    "Relu": lambda c, a, at, n: graph.nn.relu(a[0]),
    "Clip": _clip,
    "Add": lambda c, a, at, n: graph.add(a[0], a[1]),
    "Sub": lambda c, a, at, n: graph.subtract(a[0], a[1]),
    "Mul": lambda c, a, at, n: graph.multiply(a[0], a[1]),
    "Div": lambda c, a, at, n: graph.divide(a[0], a[1]),
    "Max": lambda c, a, at, n: functools.reduce(graph.maximum, a),
    "Min": lambda c, a, at, n: functools.reduce(graph.minimum, a),
    "Sigmoid": lambda c, a, at, n: graph.sigmoid(a[0]),
    "Tanh": lambda c, a, at, n: graph.tanh(a[0]),
    "Exp": lambda c, a, at, n: graph.exp(a[0]),
    "Identity": lambda c, a, at, n: a[0],
}
