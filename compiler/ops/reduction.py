"""Reductions over axes (numpy's sum / max / min / mean), pattern COMM_REDUCE.

`axis` is an int, a tuple of ints (negative ones count from the end) or None for all
axes; `keepdims` keeps each reduced axis as a size-1 dimension. Reducing every axis
without keepdims gives a 0-d tensor, as numpy does. Sums accumulate in the dtype of `x`
(numpy widens small integers; we do not), and the mean of an integer tensor is float32.

A reduction over the last axis (a row: softmax's, a layer norm's) of at least two of
the target's vectors is two stages: `partial` reduces the row's whole vectors in
lane-strided slices (lane l takes elements l, l + L, l + 2L, ...), which the default
schedule computes as one vector accumulator per row, contiguous loads, no dependence
between lanes; then the L partial results are reduced, with the row's last n mod L
elements when the extent is no multiple of L (only when the last axis is the only one
reduced: ViT's 197-long softmax rows). One stage
would be a chain of dependent scalar adds along the row (float adds are not
reassociated for us): 96 -> 15 us for a layer norm of 128 x 768 rows on Zen 5.
"""
from __future__ import annotations

from .. import te
from ..arith.simplify import simplify
from ..ir import expr as E
from ..ir.expr import is_float
from ..target import Target
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, normalize_axes, shape_str, static


def _lanes(x) -> int:
    """The vector lanes of x's dtype on the entered target (1 for a dtype of none)."""
    bits = E.bits(x.dtype)
    return Target.resolve().vector_bits // bits if bits >= 8 else 1


def _reduce(op: str, x, axis, keepdims: bool, reducer, prepare=lambda v, count: v):
    """`reducer` over `axis` of `prepare(x[...], number of reduced elements)`."""
    check_tensor(op, "x", x)
    axes = normalize_axes(op, x.shape, axis)
    if not axes:
        raise OpError(f"{op}: axis={axis!r} reduces no dimension of shape {shape_str(x.shape)}")
    count = te.const(1)
    for a in axes:
        count = simplify(count * x.shape[a])
    out_shape = [1 if a in axes else d for a, d in enumerate(x.shape) if keepdims or a not in axes]
    last, lanes = x.ndim - 1, _lanes(x)
    n = static(x.shape[last]) if x.ndim else None
    if last in axes and n is not None and lanes > 1 and n >= 2 * lanes and \
            (n % lanes == 0 or axes == (last,)):
        return _reduce_rows(op, x, axes, keepdims, reducer, prepare, count, out_shape, lanes)
    rvs = {a: te.reduce_axis((0, x.shape[a]), name=f"{op}.r{a}") for a in axes}

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


def _reduce_rows(op, x, axes, keepdims, reducer, prepare, count, out_shape, lanes):
    """The two stages of a reduction over the last axis (the module docstring)."""
    last = x.ndim - 1
    rvs = {a: te.reduce_axis((0, x.shape[a]), name=f"{op}.r{a}") for a in axes if a != last}
    ko = te.reduce_axis((0, static(x.shape[last]) // lanes), name=f"{op}.ko")
    kept = [a for a in range(x.ndim) if a not in axes]

    def slices(*index):
        *outer, lane = index
        at = dict(zip(kept, outer))
        full = tuple(rvs[a] if a in rvs else at[a] for a in range(last)) + \
            (ko * lanes + lane,)
        return reducer(prepare(x[full], count), axis=[*rvs.values(), ko])
    partial = te.compute((*[x.shape[a] for a in kept], lanes), slices, name=f"{op}.partial")
    tail = static(x.shape[last]) % lanes
    lane = te.reduce_axis((0, lanes + tail), name=f"{op}.lane")

    def rows(*index):
        outer = [v for a, v in zip([a for a in range(x.ndim) if keepdims or a not in axes],
                                   index) if a not in axes]
        if not tail:
            return reducer(partial[(*outer, lane)], axis=lane)
        # lanes + tail terms: the partial results, then the row's last `tail` elements
        # (only the last axis is reduced here); the indices clamped so that bound
        # inference keeps both reads inside their tensors.
        whole, k = static(x.shape[last]) - tail, lane.var
        rest = prepare(x[(*outer, whole + E.Max(k - lanes, E.const(0)))], count)
        first = partial[(*outer, E.Min(k, E.const(lanes - 1)))]
        return reducer(te.if_then_else(k < lanes, first, rest), axis=lane)
    return te.compute(tuple(out_shape), rows, name=op)


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
