"""Layer normalization, pattern OPAQUE (two reductions in sequence, as softmax).

The trailing axes from `axis` on are normalized: (x - mean) / sqrt(var + epsilon) *
gamma + beta, where gamma and beta have the trailing axes' shape. The variance is the
mean of the squared deviations (two passes over the row, not E[x^2] - E[x]^2, which
cancels badly in float32 when the mean is large against the spread).
"""
from __future__ import annotations

from .. import te
from .pattern import OpPattern, register_pattern
from .reduction import mean
from .shape import OpError, check_tensor, get_const_tuple, normalize_axis


@register_pattern(OpPattern.OPAQUE)
def layer_norm(x, gamma, beta, axis: int = -1, epsilon: float = 1e-5):
    """x normalized over its axes from `axis` to the last, scaled by gamma, shifted by
    beta (both of the normalized axes' shape)."""
    check_tensor("layer_norm", "x", x)
    axis = normalize_axis("layer_norm", x.ndim, axis, x.shape)
    trailing = get_const_tuple(x.shape)[axis:]
    for what, t in (("gamma", gamma), ("beta", beta)):
        if get_const_tuple(t.shape) != trailing:
            raise OpError(f"layer_norm: {what} of shape {get_const_tuple(t.shape)} does not "
                          f"match the normalized axes {trailing}")
    axes = tuple(range(axis, x.ndim))
    mu = mean(x, axes, keepdims=True)

    def centered(i):
        return x[i] - mu[(*i[:axis], *[0] * (x.ndim - axis))]
    sq = te.compute(x.shape, lambda *i: centered(i) * centered(i), name="layer_norm_sq")
    var = mean(sq, axes, keepdims=True)
    eps = te.const(epsilon, x.dtype)

    def value(*i):
        row = (*i[:axis], *[0] * (x.ndim - axis))
        scale = 1.0 / te.sqrt(var[row] + eps)
        return centered(i) * scale * gamma[i[axis:]] + beta[i[axis:]]
    return te.compute(x.shape, value, name="layer_norm")
