"""The graph level's data-dependent indexing (Relay's `gather`, `scatter_nd`, `topk`,
`cumsum`): each registered once with its type relation, pattern, compute, numpy
reference, layout rule and samples, and its constructor.

Their computes are searches written as reductions, so that they are ordinary te
computes the default schedule builds: topk ranks every element by counting the
elements before it (O(n^2) along the axis: fine for a classifier's 1000 scores), cumsum
sums the prefix of each position, scatter_nd finds the last update that lands on each
position. Indices out of range are clamped (no read outside a tensor); negative ones
count from the end, as ONNX's do.
"""
from __future__ import annotations

import numpy as np

from .... import ops, te
from ....ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType, TupleType
from .registry import GraphTypeError, call, needs_nchw, register_op
from .relations import axis_of, tensor_args


def _index(raw, n: int):
    """An int64 index as an in-range int32 one: negative counts from the end, then
    clamped to [0, n)."""
    j = raw.astype("int32")
    j = te.select(j < 0, j + n, j)
    return te.min(te.max(j, te.const(0, "int32")), te.const(n - 1, "int32"))


def _ints(*shape):
    return TensorType(shape, "int64")


def _f(*shape):
    return TensorType(shape, "float32")


# ------------------------------------------------------------------ gather (elements)

def _gather_rel(types, attrs):
    data, indices = tensor_args("gather", types, 2)
    axis_of("gather", attrs["axis"], data.ndim)
    if indices.ndim != data.ndim or not indices.dtype.startswith("int"):
        raise GraphTypeError(f"gather: indices {indices} must be integers of the data's "
                             f"rank {data.ndim}")
    return TensorType(indices.shape, data.dtype)


def _gather_compute(ins, at, ty):
    data, indices = ins
    axis = at["axis"] % len(data.shape)
    n = ops.get_const_tuple(data.shape)[axis]
    return te.compute(ty.shape, lambda *i: data[tuple(
        _index(indices[i], n) if d == axis else v for d, v in enumerate(i))], name="gather")


def _gather_ref(args, attrs):
    data, indices = args
    axis = attrs["axis"] % data.ndim
    indices = np.where(indices < 0, indices + data.shape[axis], indices)
    return np.take_along_axis(data, indices, axis)


register_op("gather", _gather_rel, OpPattern.INJECTIVE, {"axis": 0}, 2,
            compute=_gather_compute, reference=_gather_ref, layout=needs_nchw,
            samples=lambda: [([_f(7, 13), _ints(5, 13)], {"axis": 0}),
                             ([_f(2, 7, 13), _ints(2, 7, 3)], {"axis": -1})])


# ------------------------------------------------------------------ scatter_nd

def _scatter_nd_rel(types, attrs):
    data, indices, updates = tensor_args("scatter_nd", types, 3)
    k = indices.shape[-1] if indices.ndim else 0
    want = (*indices.shape[:-1], *data.shape[k:])
    if not indices.dtype.startswith("int") or k > data.ndim or updates.shape != want:
        raise GraphTypeError(f"scatter_nd: data {data.shape}, indices {indices} and updates "
                             f"{updates.shape} do not fit (updates must be {want})")
    if attrs["reduction"] not in ("none", *_REDUCTIONS):
        raise GraphTypeError(f"scatter_nd: reduction {attrs['reduction']!r} is none of "
                             f"none, {', '.join(_REDUCTIONS)}")
    return data


_PRODUCT = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
_REDUCTIONS = {"add": (te.sum, lambda a, b: a + b), "mul": (_PRODUCT, lambda a, b: a * b),
               "max": (te.max, te.max), "min": (te.min, te.min)}
"""ScatterND's reductions: the reducer of the updates that land on a position, and how
the data combines with their result (a reducer's identity where none lands)."""


def _scatter_nd_compute(ins, at, ty):
    """Each position takes the last update whose index names it, else its data; with a
    reduction, its data combined with every update that names it."""
    data, indices, updates = ins
    shape = ops.get_const_tuple(data.shape)
    ishape = ops.get_const_tuple(indices.shape)
    k, lead = ishape[-1], ishape[:-1]
    count = int(np.prod(lead))
    r = te.reduce_axis((0, count), name="r")

    def unflat(flat):
        out = []
        for d in reversed(lead):
            out.append(te.floormod(flat, d))
            flat = te.floordiv(flat, d)
        return tuple(reversed(out))

    def hit(i):
        at_r = unflat(r.var)
        return te.all(*[_index(indices[(*at_r, m)], shape[m]) == i[m] for m in range(k)])

    if at["reduction"] != "none":
        reducer, combine = _REDUCTIONS[at["reduction"]]
        landed = te.compute(shape, lambda *i: reducer(updates[(*unflat(r.var), *i[k:])],
                                                      axis=r, where=hit(i)),
                            name="scatter_nd_landed")
        return te.compute(shape, lambda *i: combine(data[i], landed[i]), name="scatter_nd")
    last = te.compute(shape[:k], lambda *i: te.max(
        te.select(hit(i), r.var, te.const(-1, "int32")), axis=r), name="scatter_nd_which")

    def value(*i):
        w = last[i[:k]]
        safe = te.max(w, te.const(0, "int32"))
        return te.select(w >= 0, updates[(*unflat(safe), *i[k:])], data[i])
    return te.compute(shape, value, name="scatter_nd")


def _scatter_nd_ref(args, attrs):
    data, indices, updates = args
    out = data.copy()
    k = indices.shape[-1]
    combine = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply,
               "max": np.maximum, "min": np.minimum}[attrs["reduction"]]
    for at in np.ndindex(*indices.shape[:-1]):
        idx = tuple(int(v) % data.shape[m] for m, v in enumerate(indices[at][:k]))
        out[idx] = combine(out[idx], updates[at])
    return out


def _scatter_nd_samples():
    rows = TensorType((2, 1), "int64")
    return [([_f(7, 13), rows, _f(2, 13)], {"reduction": "none"}),
            ([_f(5, 7, 3), TensorType((2, 2, 2), "int64"), _f(2, 2, 3)], {"reduction": "none"}),
            ([_f(7, 13), TensorType((3, 1), "int64"), _f(3, 13)], {"reduction": "add"}),
            ([_f(7, 13), TensorType((3, 1), "int64"), _f(3, 13)], {"reduction": "max"})]


register_op("scatter_nd", _scatter_nd_rel, OpPattern.OPAQUE, {"reduction": "none"}, 3,
            compute=_scatter_nd_compute, reference=_scatter_nd_ref, layout=needs_nchw,
            samples=_scatter_nd_samples)


# ------------------------------------------------------------------ topk

def _topk_rel(types, attrs):
    data, = tensor_args("topk", types, 1)
    axis = axis_of("topk", attrs["axis"], data.ndim)
    if not 0 < attrs["k"] <= data.shape[axis]:
        raise GraphTypeError(f"topk: k={attrs['k']} is not in 1..{data.shape[axis]}")
    if attrs["ret_type"] not in ("both", "values", "indices"):
        raise GraphTypeError(f"topk: ret_type {attrs['ret_type']!r} is none of 'both', "
                             f"'values', 'indices'")
    shape = list(data.shape)
    shape[axis] = attrs["k"]
    values, indices = TensorType(shape, data.dtype), TensorType(shape, "int64")
    return {"both": TupleType([values, indices]), "values": values,
            "indices": indices}[attrs["ret_type"]]


def _topk_compute(ins, at, ty):
    """rank[i]: how many elements come before element i (larger, or equal at a lower
    index; smaller for is_ascend); output p is the element of rank p. With ret_type
    "both" the values and the indices are two outputs of one kernel, which ranks once."""
    x, = ins
    axis = at["axis"] % len(x.shape)
    n = ops.get_const_tuple(x.shape)[axis]
    j = te.reduce_axis((0, n), name="j")

    def at_axis(i, v):
        return tuple(v if d == axis else w for d, w in enumerate(i))

    def rank(*i):
        other, me = x[at_axis(i, j.var)], x[i]
        before = (other < me if at["is_ascend"] else other > me) | \
            ((other == me) & (j.var < i[axis]))
        return te.sum(te.select(before, te.const(1, "int32"), te.const(0, "int32")), axis=j)
    ranks = te.compute(x.shape, rank, name="topk_rank")
    shape = [*x.shape]
    shape[axis] = at["k"]

    def picked(values: bool):
        m = te.reduce_axis((0, n), name="m")

        def pick(*p):
            hit = ranks[at_axis(p, m.var)] == p[axis]
            got = x[at_axis(p, m.var)] if values else m.var.astype("int64")
            return te.sum(te.select(hit, got, te.const(0, got.dtype)), axis=m)
        return te.compute(shape, pick, name="topk_values" if values else "topk_indices")
    if at["ret_type"] == "both":
        return picked(True), picked(False)
    return picked(at["ret_type"] == "values")


def _topk_ref(args, attrs):
    x, = args
    axis = attrs["axis"] % x.ndim
    order = np.argsort(x if attrs["is_ascend"] else -x, axis=axis, kind="stable")
    order = np.take(order, np.arange(attrs["k"]), axis=axis)
    values = np.take_along_axis(x, order, axis)
    return {"both": (values, order), "values": values, "indices": order}[attrs["ret_type"]]


register_op("topk", _topk_rel, OpPattern.OPAQUE,
            {"k": 1, "axis": -1, "ret_type": "both", "is_ascend": False}, 1,
            compute=_topk_compute, reference=_topk_ref, layout=needs_nchw,
            samples=lambda: [([_f(7, 37)], {"k": 5}),
                             ([_f(7, 37)], {"k": 5, "ret_type": "values"}),
                             ([_f(7, 13)], {"k": 3, "axis": 0, "ret_type": "indices"}),
                             ([TensorType((7, 13), "int32")], {"k": 13, "is_ascend": True,
                                                               "ret_type": "indices"})])


# ------------------------------------------------------------------ cumsum

def _cumsum_rel(types, attrs):
    data, = tensor_args("cumsum", types, 1)
    axis_of("cumsum", attrs["axis"], data.ndim)
    return data


def _cumsum_compute(ins, at, ty):
    x, = ins
    axis = at["axis"] % len(x.shape)
    n = ops.get_const_tuple(x.shape)[axis]
    j = te.reduce_axis((0, n), name="j")

    def value(*i):
        me = i[axis]
        take = (j.var > me if at["reverse"] else j.var < me) if at["exclusive"] else \
            (j.var >= me if at["reverse"] else j.var <= me)
        read = x[tuple(j.var if d == axis else v for d, v in enumerate(i))]
        return te.sum(te.select(take, read, te.const(0, x.dtype)), axis=j)
    return te.compute(ty.shape, value, name="cumsum")


def _cumsum_ref(args, attrs):
    x, = args
    axis = attrs["axis"] % x.ndim
    if attrs["reverse"]:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis)
    if attrs["exclusive"]:
        out = out - x
    return np.flip(out, axis) if attrs["reverse"] else out


register_op("cumsum", _cumsum_rel, OpPattern.OPAQUE,
            {"axis": 0, "exclusive": False, "reverse": False}, 1,
            compute=_cumsum_compute, reference=_cumsum_ref, layout=needs_nchw,
            samples=lambda: [([_f(7, 13)], {"axis": 1}),
                             ([_f(37)], {"exclusive": True}),
                             ([_f(2, 7, 13)], {"axis": 1, "reverse": True}),
                             ([TensorType((7, 13), "int64")],
                              {"axis": 0, "exclusive": True, "reverse": True})])


def gather(data: Expr, indices: Expr, axis: int = 0) -> Call:
    """data along `axis` at `indices` (ONNX's GatherElements; Relay's gather)."""
    return call("gather", [data, indices], axis=int(axis))


def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "none") -> Call:
    """`data` with `updates` written at `indices` (ONNX's ScatterND), or combined with
    what is there by `reduction` ("add", "mul", "max", "min")."""
    return call("scatter_nd", [data, indices, updates], reduction=reduction)


def topk(data: Expr, k: int, axis: int = -1, ret_type: str = "both",
         is_ascend: bool = False) -> Call:
    """The k largest (smallest: is_ascend) elements along `axis`, in order: ret_type
    "both" (Relay's default) gives the tuple (values, indices), int64 indices."""
    return call("topk", [data], k=int(k), axis=int(axis), ret_type=ret_type,
                is_ascend=bool(is_ascend))


def cumsum(data: Expr, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Call:
    return call("cumsum", [data], axis=int(axis), exclusive=bool(exclusive),
                reverse=bool(reverse))
