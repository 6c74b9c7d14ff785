"""Softmax, pattern OPAQUE (as in TVM: two reductions in sequence leave nothing to fuse).

Built from the other operators, numerically stable: exp(x - max(x)) / sum(exp(x - max(x))),
so no exp overflows whatever the scale of x. The stages are max, x - max (inlined by the
default schedule), exp (read twice, so computed once), sum, and the division.
"""
from __future__ import annotations

from .broadcast import divide, subtract
from .elemwise import exp, log
from .pattern import OpPattern, register_pattern
from .reduction import max, sum  # noqa: A004 - the operators, not the builtins
from .shape import check_tensor, normalize_axis


@register_pattern(OpPattern.OPAQUE)
def softmax(x, axis: int = -1):
    """exp(x) / sum(exp(x)) along `axis` (default: the last); float32 for integer x."""
    check_tensor("softmax", "x", x)
    axis = normalize_axis("softmax", x.ndim, axis, x.shape)
    e = exp(subtract(x, max(x, axis=axis, keepdims=True)))
    return divide(e, sum(e, axis=axis, keepdims=True))


@register_pattern(OpPattern.OPAQUE)
def log_softmax(x, axis: int = -1):
    """x - max(x) - log(sum(exp(x - max(x)))) along `axis`: the log of softmax without
    its division, so no log of an underflowed zero."""
    check_tensor("log_softmax", "x", x)
    axis = normalize_axis("log_softmax", x.ndim, axis, x.shape)
    shifted = subtract(x, max(x, axis=axis, keepdims=True))
    total = sum(exp(shifted), axis=axis, keepdims=True)
    return subtract(shifted, log(total))
