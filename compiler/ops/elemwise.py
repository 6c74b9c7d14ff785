"""Elementwise operators of one tensor: `out[i] = f(x[i])`, pattern ELEMWISE.

exp, sigmoid and tanh compute in float32 when `x` is an integer tensor (te's rule for
math intrinsics); relu and clip keep the dtype of `x`.
"""
from __future__ import annotations

from .. import te
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor


def _map(op: str, x, f):
    check_tensor(op, "x", x)
    return te.compute(x.shape, lambda *i: f(x[i]), name=op)


@register_pattern(OpPattern.ELEMWISE)
def relu(x):
    """max(x, 0)."""
    return _map("relu", x, lambda v: te.max(v, te.const(0, x.dtype)))


@register_pattern(OpPattern.ELEMWISE)
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return _map("sigmoid", x, te.sigmoid)


@register_pattern(OpPattern.ELEMWISE)
def tanh(x):
    """Hyperbolic tangent."""
    return _map("tanh", x, te.tanh)


@register_pattern(OpPattern.ELEMWISE)
def exp(x):
    """e ** x."""
    return _map("exp", x, te.exp)


@register_pattern(OpPattern.ELEMWISE)
def log(x):
    """Natural logarithm."""
    return _map("log", x, te.log)


@register_pattern(OpPattern.ELEMWISE)
def clip(x, a_min, a_max):
    """`x` limited to [a_min, a_max] (Python numbers, a_min <= a_max), as numpy.clip."""
    check_tensor("clip", "x", x)
    if not a_min <= a_max:
        raise OpError(f"clip: a_min={a_min} is greater than a_max={a_max}")
    lo, hi = te.const(a_min, x.dtype), te.const(a_max, x.dtype)
    return _map("clip", x, lambda v: te.min(te.max(v, lo), hi))
