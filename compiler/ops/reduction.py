"""Reductions over axes (numpy's sum / max / min / mean), pattern COMM_REDUCE.

`axis` is an int, a tuple of ints (negative ones count from the end) or None for all
axes; `keepdims` keeps each reduced axis as a size-1 dimension. Reducing every axis
without keepdims gives a 0-d tensor, as numpy does. Sums accumulate in the dtype of `x`
(numpy widens small integers; we do not), and the mean of an integer tensor is float32.
"""
from __future__ import annotations

from .. import te
from ..arith.simplify import simplify
from ..ir.expr import is_float
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, normalize_axes, shape_str, static


def _reduce(op: str, x, axis, keepdims: bool, reducer, prepare=lambda v, count: v):
    """`reducer` over `axis` of `prepare(x[...], number of reduced elements)`."""
    check_tensor(op, "x", x)
    axes = normalize_axes(op, x.shape, axis)
    if not axes:
        raise OpError(f"{op}: axis={axis!r} reduces no dimension of shape {shape_str(x.shape)}")
    rvs = {a: te.reduce_axis((0, x.shape[a]), name=f"{op}.r{a}") for a in axes}
    count = te.const(1)
    for a in axes:
        count = simplify(count * x.shape[a])
    out_shape = [1 if a in rvs else d for a, d in enumerate(x.shape) if keepdims or a not in rvs]

    def fcompute(*index):
        it = iter(index)
        full = []
        for a in range(x.ndim):
            if a in rvs:
                full.append(rvs[a])
                if keepdims:
                    next(it)
            else:
                full.append(next(it))
        return reducer(prepare(x[tuple(full)], count), axis=list(rvs.values()))

    return te.compute(tuple(out_shape), fcompute, name=op)


@register_pattern(OpPattern.COMM_REDUCE)
def sum(x, axis=None, keepdims: bool = False):  # noqa: A001 - numpy's name
    """Sum of `x` over `axis`."""
    return _reduce("sum", x, axis, keepdims, te.sum)


@register_pattern(OpPattern.COMM_REDUCE)
def max(x, axis=None, keepdims: bool = False):  # noqa: A001 - numpy's name
    """Maximum of `x` over `axis`."""
    return _reduce("max", x, axis, keepdims, te.max)


@register_pattern(OpPattern.COMM_REDUCE)
def min(x, axis=None, keepdims: bool = False):  # noqa: A001 - numpy's name
    """Minimum of `x` over `axis`."""
    return _reduce("min", x, axis, keepdims, te.min)


def _scaled(v, count):
    # Each element is scaled before summing, so the mean stays one reduction stage
    # (a division after the sum cannot join it: a reduction is the whole body).
    v = v if is_float(v.dtype) else v.astype("float32")
    n = static(count)
    return v * (te.const(1.0 / n, v.dtype) if n is not None else 1.0 / count.astype(v.dtype))


@register_pattern(OpPattern.COMM_REDUCE)
def mean(x, axis=None, keepdims: bool = False):
    """Arithmetic mean of `x` over `axis` (float32 for integer `x`)."""
    return _reduce("mean", x, axis, keepdims, te.sum, _scaled)
