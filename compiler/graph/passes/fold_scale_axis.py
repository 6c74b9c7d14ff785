"""FoldScaleAxis: a per-output-channel scale after a convolution folds into its weights.

    multiply(conv2d(x, W), s)               -> conv2d(x, W * s[o])
    multiply(bias_add(conv2d(x, W), b), s)  -> bias_add(conv2d(x, W * s[o]), b * s)

where W is a constant, s a constant that is a scalar or varies along the output
channels only ((C, 1, 1), (1, C, 1, 1), ...), and the convolution (and its bias_add)
has no other user. A batch norm after a convolution becomes, after SimplifyInference and
FoldConstant, exactly such a multiply (and an add): the multiply disappears from the
kernel, and the weights are scaled once, at build time. (TVM's backward folding, for
this common case; its forward folding into a following convolution is not done.)
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function
from ..ir.functor import ExprMutator, operands, post_order
from ..ir.op import Op


def _uses(body: Expr) -> dict[int, int]:
    """How many readers each node of `body` has (by id)."""
    counts: dict[int, int] = {}
    for e in post_order(body):
        for o in operands(e):
            counts[id(o)] = counts.get(id(o), 0) + 1
    return counts


def _is(expr, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def _channel_scale(const: Constant, channels: int, rank: int) -> np.ndarray | None:
    """The per-channel values of a scale that varies along axis 1 only, or None."""
    data = const.data
    if data.ndim == 0:
        return np.full(channels, data.item(), data.dtype)
    if data.ndim > rank or data.ndim < rank - 1:
        return None
    shape = (1,) * (rank - data.ndim) + data.shape
    if all(d == 1 for i, d in enumerate(shape) if i != 1) and shape[1] in (1, channels):
        return np.broadcast_to(data.reshape(-1), (channels,)).copy()
    return None


class _Fold(ExprMutator):
    """`uses` counts the readers of the original nodes; `visit` carries each count over to
    the node that replaces it, because a convolution whose input was rewritten (a fold
    upstream) is a new node, and is still read only once."""

    def __init__(self, uses: dict):
        super().__init__()
        self.uses = uses

    def visit(self, expr: Expr) -> Expr:
        out = super().visit(expr)
        self.uses.setdefault(id(out), self.uses.get(id(expr), 0))
        return out

    def rewrite_call(self, call: Call):
        if not _is(call, "multiply"):
            return call
        for inner, scale in (call.args, call.args[::-1]):
            folded = self._fold(inner, scale)
            if folded is not None:
                return folded
        return call

    def _fold(self, inner: Expr, scale: Expr):
        if not isinstance(scale, Constant) or self.uses.get(id(inner), 0) != 1:
            return None
        bias = None
        if _is(inner, "nn.bias_add") and isinstance(inner.args[1], Constant) and \
                inner.attrs["axis"] == 1:
            bias, conv = inner.args[1], inner.args[0]
            if self.uses.get(id(conv), 0) != 1:
                return None
        else:
            conv = inner
        if not _is(conv, "nn.conv2d") or not isinstance(conv.args[1], Constant) or \
                conv.ty is None or conv.attrs["data_layout"] != "NCHW":
            return None
        channels = conv.ty.shape[1]
        s = _channel_scale(scale, channels, len(conv.ty.shape))
        if s is None:
            return None
        weight = conv.args[1].data
        new_conv = Call(conv.op, (conv.args[0], Constant(
            (weight * s.reshape(-1, 1, 1, 1)).astype(weight.dtype))), conv.attrs, conv.ty)
        if bias is None:
            return new_conv
        return Call(inner.op, (new_conv, Constant((bias.data * s).astype(bias.data.dtype))),
                    inner.attrs, inner.ty)


def fold_scale_axis(func: Function) -> Function:
    """`func` (typed) with the scales of the module docstring folded."""
    return _Fold(_uses(func.body)).function(func)
