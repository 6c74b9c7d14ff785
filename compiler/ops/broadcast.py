"""Binary operators with numpy broadcasting, pattern BROADCAST.

Shapes align from the right and a size-1 dimension stretches, as in numpy; either
operand may be a Python number (it takes the tensor's dtype, te's rule). Operands of
different dtypes are promoted as te promotes them (int with float gives the float).
"""
from __future__ import annotations

from .. import te
from ..lang.tensor import Tensor
from .pattern import OpPattern, register_pattern
from .shape import (OpError, broadcast_index, broadcast_shape, check_tensor, dims_equal,
                    normalize_axis, shape_str)


def _binary(op: str, a, b, f):
    for what, v in (("lhs", a), ("rhs", b)):
        if not isinstance(v, (Tensor, int, float)):
            raise TypeError(f"{op}: {what} must be a tensor or a Python number, got {v!r}")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: needs at least one tensor, got {a!r} and {b!r}")

    def shape(v):
        return v.shape if isinstance(v, Tensor) else ()

    def read(v, index):
        return v[broadcast_index(v.shape, index)] if isinstance(v, Tensor) else v

    out_shape = broadcast_shape(op, shape(a), shape(b))
    return te.compute(out_shape, lambda *i: f(read(a, i), read(b, i)), name=op)


@register_pattern(OpPattern.BROADCAST)
def add(a, b):
    """a + b, broadcast."""
    return _binary("add", a, b, lambda x, y: x + y)


@register_pattern(OpPattern.BROADCAST)
def subtract(a, b):
    """a - b, broadcast."""
    return _binary("subtract", a, b, lambda x, y: x - y)


@register_pattern(OpPattern.BROADCAST)
def multiply(a, b):
    """a * b, broadcast."""
    return _binary("multiply", a, b, lambda x, y: x * y)


@register_pattern(OpPattern.BROADCAST)
def divide(a, b):
    """a / b, broadcast; true division, so integer operands are a TypeError (te's rule:
    say // or cast to float)."""
    return _binary("divide", a, b, lambda x, y: x / y)


@register_pattern(OpPattern.BROADCAST)
def bias_add(x, bias, axis: int = 1):
    """x + bias along `axis` (default 1, the channels of NCHW): `bias` is 1-D with
    x.shape[axis] elements."""
    check_tensor("bias_add", "x", x)
    check_tensor("bias_add", "bias", bias)
    axis = normalize_axis("bias_add", x.ndim, axis, x.shape)
    if bias.ndim != 1 or not dims_equal(bias.shape[0], x.shape[axis]):
        raise OpError(f"bias_add: bias of shape {shape_str(bias.shape)} does not fit axis "
                      f"{axis} of x of shape {shape_str(x.shape)} (it needs shape "
                      f"{shape_str((x.shape[axis],))})")
    return te.compute(x.shape, lambda *i: x[i] + bias[i[axis]], name="bias_add")
