"""The graph level's reductions (Relay's `relay.mean`, `relay.sum`): each registered once
with its type relation, pattern, compute, numpy reference, layout rule and samples, and
its constructor."""
from __future__ import annotations

import numpy as np

from ... import ops
from ...ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType
from .registry import call, needs_nchw, register_op
from .relations import reduce_rel


def _samples():
    found = []
    for shape in [(37,), (7, 13), (2, 7, 13), (1, 7, 13, 3)]:
        t = TensorType(shape, "float32")
        found += [([t], {"axis": None, "keepdims": False}),
                  ([t], {"axis": (len(shape) - 1,), "keepdims": True})]
    found.append(([TensorType((1, 7, 13, 3), "float32")], {"axis": (2, 3), "keepdims": True}))
    return found


register_op("mean", reduce_rel("mean"), OpPattern.COMM_REDUCE,
            {"axis": None, "keepdims": False}, 1,
            compute=lambda ins, at, ty: ops.mean(ins[0], at["axis"], at["keepdims"]),
            reference=lambda a, at: np.mean(a[0], axis=at["axis"], keepdims=at["keepdims"]),
            layout=needs_nchw, samples=_samples)
register_op("sum", reduce_rel("sum"), OpPattern.COMM_REDUCE,
            {"axis": None, "keepdims": False}, 1,
            compute=lambda ins, at, ty: ops.sum(ins[0], at["axis"], at["keepdims"]),
            reference=lambda a, at: np.sum(a[0], axis=at["axis"], keepdims=at["keepdims"]),
            layout=needs_nchw, samples=_samples)


def _axes(axis):
    return None if axis is None else (int(axis),) if isinstance(axis, int) else tuple(axis)


def mean(x: Expr, axis=None, keepdims: bool = False) -> Call:
    return call("mean", [x], axis=_axes(axis), keepdims=bool(keepdims))


def sum(x: Expr, axis=None, keepdims: bool = False) -> Call:  # noqa: A001 - Relay's name
    return call("sum", [x], axis=_axes(axis), keepdims=bool(keepdims))
