"""The graph level's reductions (Relay's `relay.mean`, `relay.sum`, `relay.max`,
`relay.min`, `relay.argmax`, `relay.argmin`): each registered once with its type
relation, pattern, compute, numpy reference, layout rule and samples, and its
constructor."""
from __future__ import annotations

import numpy as np

from .... import ops, te
from ....ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType
from .registry import call, needs_nchw, register_op
from .relations import axis_of, reduce_rel, tensor_args


def _samples():
    found = []
    for shape in [(37,), (7, 13), (2, 7, 13), (1, 7, 13, 3)]:
        t = TensorType(shape, "float32")
        found += [([t], {"axis": None, "keepdims": False}),
                  ([t], {"axis": (len(shape) - 1,), "keepdims": True})]
    found.append(([TensorType((1, 7, 13, 3), "float32")], {"axis": (2, 3), "keepdims": True}))
    return found


def _reduction(name, compute, reference):
    register_op(name, reduce_rel(name), OpPattern.COMM_REDUCE,
                {"axis": None, "keepdims": False}, 1,
                compute=lambda ins, at, ty: compute(ins[0], at["axis"], at["keepdims"]),
                reference=lambda a, at: reference(a[0], axis=at["axis"],
                                                  keepdims=at["keepdims"]),
                layout=needs_nchw, samples=_samples)


_reduction("max", ops.max, np.max)
_reduction("min", ops.min, np.min)


def _arg_rel(name):
    """One axis reduced to the int64 index of its extreme element."""
    def rel(types, attrs):
        t, = tensor_args(name, types, 1)
        axis = axis_of(name, attrs["axis"], t.ndim)
        shape = [1 if i == axis else d for i, d in enumerate(t.shape)
                 if attrs["keepdims"] or i != axis]
        return TensorType(shape, "int64")
    return rel


def _arg_compute(name):
    """The extreme value along the axis, then the first (or last) index holding it, as
    a min (max) reduction over the indices (two reductions, no tuple reducer)."""
    def compute(ins, at, ty):
        x, = ins
        axis = at["axis"] % len(x.shape)
        extreme = (ops.max if name == "argmax" else ops.min)(x, axis, True)
        n = ops.get_const_tuple(x.shape)[axis]
        k = te.reduce_axis((0, n), name="k")
        last = at["select_last_index"]

        def index(*i):
            full = list(i) if at["keepdims"] else [*i[:axis], 0, *i[axis:]]
            at_k = tuple(k if d == axis else v for d, v in enumerate(full))
            at_0 = tuple(0 if d == axis else v for d, v in enumerate(full))
            hit = x[at_k] == extreme[at_0]
            kk = k.var.astype("int64")
            if last:
                return te.max(te.select(hit, kk, te.const(-1, "int64")), axis=k)
            return te.min(te.select(hit, kk, te.const(n, "int64")), axis=k)
        return te.compute(ty.shape, index, name=name)
    return compute


def _arg_reference(name):
    def reference(args, attrs):
        x, = args
        axis = attrs["axis"]
        f = np.argmax if name == "argmax" else np.argmin
        if attrs["select_last_index"]:
            flipped = np.flip(x, axis)
            out = x.shape[axis] - 1 - f(flipped, axis=axis)
        else:
            out = f(x, axis=axis)
        return np.expand_dims(out, axis) if attrs["keepdims"] else out
    return reference


def _arg_samples():
    ties = TensorType((7, 13), "int32")  # small integers: ties, first or last
    return [([TensorType((7, 13), "float32")], {"axis": 1}),
            ([TensorType((2, 37, 3), "float32")], {"axis": -2, "keepdims": False}),
            ([ties], {"axis": 0, "select_last_index": True}),
            ([ties], {"axis": 1, "select_last_index": False})]


for _name in ("argmax", "argmin"):
    register_op(_name, _arg_rel(_name), OpPattern.COMM_REDUCE,
                {"axis": 0, "keepdims": True, "select_last_index": False}, 1,
                compute=_arg_compute(_name), reference=_arg_reference(_name),
                layout=needs_nchw, samples=_arg_samples)


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


def max(x: Expr, axis=None, keepdims: bool = False) -> Call:  # noqa: A001 - Relay's name
    return call("max", [x], axis=_axes(axis), keepdims=bool(keepdims))


def min(x: Expr, axis=None, keepdims: bool = False) -> Call:  # noqa: A001 - Relay's name
    return call("min", [x], axis=_axes(axis), keepdims=bool(keepdims))


def argmax(x: Expr, axis: int = 0, keepdims: bool = True,
           select_last_index: bool = False) -> Call:
    return call("argmax", [x], axis=int(axis), keepdims=bool(keepdims),
                select_last_index=bool(select_last_index))


def argmin(x: Expr, axis: int = 0, keepdims: bool = True,
           select_last_index: bool = False) -> Call:
    return call("argmin", [x], axis=int(axis), keepdims=bool(keepdims),
                select_last_index=bool(select_last_index))
