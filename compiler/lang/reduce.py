"""Reducers: te.comm_reducer and the sum / max / min made with it.

The Reduce node they build lives in compiler/ir/reduce.py; this module is the
user-facing way to make one over reduce axes.
"""
from __future__ import annotations

from ..ir.expr import Expr, Max, Min, Var, const, convert, int_range, is_float
from ..ir.reduce import CommReducer, Reduce
from .tensor import REDUCE, IterVar


def comm_reducer(fcombine, fidentity, name: str = "reduce"):
    """Make a reducer from `fcombine(x, y)` and `fidentity(dtype)`, as te.comm_reducer.

    The reducer is called as `reducer(expr, axis=k, where=None)`; `axis` is one
    reduce_axis or a list of them.
    """

    def reducer(expr, axis=None, where=None):
        if not isinstance(axis, (IterVar, list, tuple)):
            raise TypeError(f"te.{name} needs axis=<reduce_axis or list of them>, got {axis!r}")
        axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
        for iv in axes:
            if not isinstance(iv, IterVar) or iv.iter_type != REDUCE:
                raise TypeError(f"te.{name}: axis {iv!r} is not a reduce_axis")
        expr = convert(expr)
        lhs, rhs = Var("x", expr.dtype), Var("y", expr.dtype)
        combiner = CommReducer(name, lhs, rhs, convert(fcombine(lhs, rhs), expr.dtype),
                               convert(fidentity(expr.dtype), expr.dtype))
        cond = None if where is None else convert(where)
        return Reduce(combiner, expr, axes, cond)

    reducer.__name__ = name
    reducer.__doc__ = f"Reduce with {name} over axis (a reduce_axis or a list of them)."
    return reducer


def min_value(dtype: str) -> Expr:
    """The least value of `dtype` (-inf for floats): the identity of a max reduction,
    and the padding of a max pooling."""
    if is_float(dtype):
        return const(float("-inf"), dtype)
    return const(int_range(dtype)[0], dtype)


def max_value(dtype: str) -> Expr:
    """The greatest value of `dtype` (inf for floats): the identity of a min reduction."""
    if is_float(dtype):
        return const(float("inf"), dtype)
    return const(int_range(dtype)[1], dtype)


reduce_sum = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), name="sum")
reduce_max = comm_reducer(lambda x, y: Max(x, y), min_value, name="max")
reduce_min = comm_reducer(lambda x, y: Min(x, y), max_value, name="min")
