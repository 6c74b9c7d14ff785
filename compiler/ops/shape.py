"""Shape rules and argument checks shared by the operators: numpy broadcasting, axis
lists, and the parameters of sliding windows (conv2d, pooling).

A wrong shape is the mistake an operator's caller makes most, and it surfaces far away
(a wrong answer, or an out-of-bounds read) unless it is caught here, so every check
raises OpError naming the operator and the shapes it was given.

Sizes may be symbolic (te.var) where an operator's rule does not need their values: two
symbolic sizes match when they are the same expression, and only a constant 1 broadcasts.
Where values are needed, `get_const_tuple` (exported as compiler.ops.get_const_tuple)
turns a constant shape into Python ints.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir.expr import Expr, IntImm
from ..lang.tensor import Tensor


class OpError(ValueError):
    """Tensors or parameters that do not fit an operator; the message names both."""


def static(d: Expr) -> int | None:
    """The value of a constant size, None for a symbolic one."""
    return d.value if isinstance(d, IntImm) else None


def shape_str(shape) -> str:
    """`(2, 3, n)`: a shape as a user writes it."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def dims_equal(a: Expr, b: Expr) -> bool:
    """Whether two sizes are known to be equal: equal constants, or one expression."""
    return a is b or (static(a) is not None and static(a) == static(b))


def check_tensor(op: str, what: str, x, ndim: int | None = None) -> None:
    """Raise, naming `op` and `what`, unless `x` is a Tensor (of rank `ndim`, if given)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {what} must be a tensor, got {x!r}")
    if ndim is not None and x.ndim != ndim:
        raise OpError(f"{op}: {what} must have {ndim} dimensions, got shape {shape_str(x.shape)}")


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of `n` that is at most `at_most` (>= 1): a tile of `n` loop
    iterations that leaves no remainder, e.g. the vector width a row is split by."""
    return max(d for d in range(1, min(n, at_most) + 1) if n % d == 0)


def divisors(n: int) -> list[int]:
    """The divisors of `n`, ascending: the tiles of an axis of `n` that leave no tail."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def get_const_tuple(shape) -> tuple[int, ...]:
    """`shape` (constant expressions or ints, as a tensor's `shape`) as a tuple of Python
    ints, as TVM's topi.utils.get_const_tuple: what numpy needs to make arrays of a tensor's
    size. A dimension that is not a constant (a te.var size) is a TypeError naming it."""
    dims = []
    for k, d in enumerate(shape):
        if isinstance(d, bool) or not isinstance(d, (int, IntImm)):
            raise TypeError(f"get_const_tuple: dimension {k} of the shape {shape_str(shape)} "
                            f"is {d}, not a constant")
        dims.append(int(d))
    return tuple(dims)


def static_shape(op: str, what: str, x: Tensor) -> tuple[int, ...]:
    """The shape of `x` as ints; windowed operators need the values to size their output."""
    try:
        return get_const_tuple(x.shape)
    except TypeError:
        raise OpError(f"{op}: {what} must have a constant shape, "
                      f"got {shape_str(x.shape)}") from None


def broadcast_shape(op: str, *shapes) -> tuple:
    """numpy's broadcast of `shapes`: aligned from the right, a size 1 stretches."""
    ndim = max(len(s) for s in shapes)
    out = []
    for k in range(ndim):
        dim = None
        for s in shapes:
            pos = len(s) - ndim + k
            if pos < 0 or static(s[pos]) == 1:
                continue
            if dim is None:
                dim = s[pos]
            elif not dims_equal(dim, s[pos]):
                raise OpError(f"{op}: shapes {' and '.join(shape_str(s) for s in shapes)} do "
                              f"not broadcast (dimension {k} of the result: {dim} vs {s[pos]})")
        out.append(IntImm(1) if dim is None else dim)
    return tuple(out)


def broadcast_index(shape: tuple, index: tuple) -> tuple:
    """Where an input of `shape` is read for the broadcast result's element `index`."""
    index = index[len(index) - len(shape):]
    return tuple(0 if static(d) == 1 else i for d, i in zip(shape, index))


def normalize_axis(op: str, ndim: int, axis: int, shape) -> int:
    """`axis` (negative counts from the end) as an index into a rank-`ndim` shape."""
    if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise OpError(f"{op}: axis {axis!r} is not an axis of shape {shape_str(shape)} "
                      f"(an int in [{-ndim}, {ndim}))")
    return axis % ndim


def normalize_axes(op: str, shape, axis) -> tuple[int, ...]:
    """`axis` (an int, a tuple of ints, or None for all) as sorted distinct indices."""
    if axis is None:
        return tuple(range(len(shape)))
    axes = [normalize_axis(op, len(shape), a, shape)
            for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if len(set(axes)) != len(axes):
        raise OpError(f"{op}: axis {axis!r} repeats a dimension of shape {shape_str(shape)}")
    return tuple(sorted(axes))


def pair(op: str, what: str, value, minimum: int) -> tuple[int, int]:
    """A (height, width) parameter given as an int or a pair of ints, each >= minimum."""
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(vals) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= minimum
                                 for v in vals):
        raise OpError(f"{op}: {what} must be an int or a pair of ints >= {minimum}, "
                      f"got {value!r}")
    return vals


def padding4(op: str, padding) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, a (height, width) pair, or four ints."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        if all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in padding):
            return tuple(padding)
        raise OpError(f"{op}: padding must be ints >= 0, got {padding!r}")
    ph, pw = pair(op, "padding", padding, 0)
    return ph, pw, ph, pw


@dataclass(frozen=True)
class Window2D:
    """A 2-D sliding window (conv2d, pooling): its parameters, as (height, width) pairs,
    and the output size they give."""
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    out: tuple[int, int]


def window2d(op: str, args: str, size, kernel, stride, padding, dilation=1) -> Window2D:
    """Check a window's parameters against an input of `size` (height, width) and size
    its output; `args` describes the operator's arguments for the messages."""
    kernel = pair(op, "kernel size", kernel, 1)
    stride = pair(op, "stride", stride, 1)
    dilation = pair(op, "dilation", dilation, 1)
    pads = padding4(op, padding)
    out = []
    for ax in range(2):
        span = dilation[ax] * (kernel[ax] - 1) + 1
        padded = size[ax] + pads[ax] + pads[ax + 2]
        if padded < span:
            raise OpError(f"{op}: the output would be empty: a window of {span} (kernel "
                          f"{kernel[ax]}, dilation {dilation[ax]}) does not fit an input axis "
                          f"of {size[ax]} padded to {padded}, with {args}")
        out.append((padded - span) // stride[ax] + 1)
    return Window2D(kernel, stride, dilation, pads, tuple(out))
