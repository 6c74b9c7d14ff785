"""Converters of ONNX's shape and indexing ops."""
from __future__ import annotations

import numpy as np

from ... import graph
from ...graph.expr import Constant


def _flatten(ctx, args, attrs, node):
    axis = attrs.get("axis", 1)
    if axis == 1:
        return graph.nn.batch_flatten(args[0])
    shape = ctx.shape(args[0])
    return graph.reshape(args[0], (int(np.prod(shape[:axis % len(shape)] if axis else ())),
                                   -1))


def _reshape(ctx, args, attrs, node):
    newshape = [int(d) for d in ctx.value(args[1], "shape")]
    if attrs.get("allowzero", 0) and 0 in newshape:
        raise ValueError("allowzero=1 with a 0 in the shape is not supported")
    return graph.reshape(args[0], newshape)


def _constant(ctx, args, attrs, node):
    from onnx import numpy_helper
    if "value" not in attrs:
        raise ValueError("only a Constant with a tensor `value` is supported")
    return Constant(numpy_helper.to_array(attrs["value"]))


CONVERTERS = {
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Concat": lambda c, a, at, n: graph.concatenate(a, axis=at["axis"]),
    "Transpose": lambda c, a, at, n: graph.transpose(a[0], at.get("perm")),
    "Constant": _constant,
}
