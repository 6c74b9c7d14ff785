"""SimplifyLayerNorm: the layer normalization older exporters write as nine ops
(ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, then Mul by gamma and Add of beta)
becomes one nn.layer_norm, which the build computes in one kernel (both reductions and
the scaling) instead of five.

Recognised on typed graphs, bottom-up:

    d = x - mean(x, A, keepdims)          A: the trailing axes, from some axis to the end
    d / sqrt(mean(d * d, A, keepdims) + eps)       -> layer_norm(x, 1, 0, A[0], eps)
    layer_norm(x, 1, b0 = 0) * gamma                -> layer_norm(x, gamma, 0)
    layer_norm(x, g, 0) + beta                      -> layer_norm(x, g, beta)

(d * d is also d ** 2 with a constant 2: the ONNX importer writes Pow(d, 2) so.) gamma
and beta are absorbed only when they vary along the normalized axes alone (their
shape, leading 1s dropped, is the normalized axes' shape or broadcasts to it) and the
layer norm they scale has no other reader.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function
from ..ir.functor import ExprMutator, post_order
from ..ir.op import Op
from ..ir.op.norm import layer_norm
from ..ir.op.transform import broadcast_to, reshape


def simplify_layer_norm(func: Function) -> Function:
    """`func` with each decomposed layer norm as one nn.layer_norm (the module
    docstring); types are dropped where it rewrote (rerun InferType)."""
    uses: dict[int, int] = {}
    for e in post_order(func.body):
        for a in getattr(e, "args", ()) or getattr(e, "fields", ()):
            uses[id(a)] = uses.get(id(a), 0) + 1
    return _Simplify(uses).function(func)


def _op(e, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _scalar(e) -> float | None:
    if isinstance(e, Constant) and e.data.size == 1 and e.data.dtype.kind == "f":
        return float(e.data.reshape(-1)[0])
    return None


def _trailing_axis(mean: Call) -> int | None:
    """The first axis of a keepdims mean over trailing axes (0 for all), else None."""
    if not mean.attrs["keepdims"]:
        return None
    ndim = len(mean.args[0].ty.shape)
    axes = sorted(a % ndim for a in (mean.attrs["axis"] or range(ndim)))
    return axes[0] if axes == list(range(axes[0], ndim)) else None


class _Simplify(ExprMutator):
    def __init__(self, uses: dict):
        super().__init__()
        self.uses = uses
        self.orig: dict[int, Expr] = {}  # id(rewritten) -> the node it replaced

    def visit(self, expr):
        out = super().visit(expr)
        self.orig.setdefault(id(out), expr)
        return out

    def _single_use(self, e) -> bool:
        return self.uses.get(id(self.orig.get(id(e), e)), 0) <= 1

    def rewrite_call(self, call: Call) -> Expr:
        if _op(call, "divide"):
            return self._normalized(call) or call
        if _op(call, "multiply") or _op(call, "add"):
            return self._absorb(call) or call
        return call

    def _normalized(self, call: Call):
        d, denominator = call.args
        if not (_op(d, "subtract") and _op(denominator, "sqrt")):
            return None
        x, mu = d.args
        if not (_op(mu, "mean") and mu.args[0] is x):
            return None
        inner = denominator.args[0]
        if not _op(inner, "add"):
            return None
        var, eps = inner.args
        if _scalar(eps) is None:
            var, eps = eps, var
        if _scalar(eps) is None or not _op(var, "mean"):
            return None
        sq = var.args[0]
        squares = _op(sq, "multiply") and sq.args[0] is d and sq.args[1] is d or \
            _op(sq, "power") and sq.args[0] is d and _scalar(sq.args[1]) == 2.0
        axis = _trailing_axis(mu)
        if not squares or axis is None or _trailing_axis(var) != axis or \
                var.attrs["axis"] != mu.attrs["axis"]:
            return None
        shape, dtype = tuple(x.ty.shape[axis:]), x.ty.dtype
        return layer_norm(x, Constant(np.ones(shape, dtype)), Constant(np.zeros(shape, dtype)),
                          axis, _scalar(eps))

    def _absorb(self, call: Call):
        a, b = call.args
        if not _op(a, "nn.layer_norm"):
            a, b = b, a
        if not _op(a, "nn.layer_norm") or not self._single_use(a) or b.ty is None:
            return None
        x, gamma, beta = a.args
        trailing = tuple(gamma.ty.shape) if gamma.ty else None
        shape = tuple(b.ty.shape)
        while shape and shape[0] == 1 and len(shape) > len(trailing):
            shape = shape[1:]
        if len(shape) > len(trailing) or any(s not in (1, t) for s, t in
                                             zip(shape[::-1], trailing[::-1])):
            return None
        v = broadcast_to(reshape(b, shape), trailing) if shape != trailing else \
            (b if tuple(b.ty.shape) == trailing else reshape(b, trailing))
        multiply = _op(call, "multiply")
        if multiply and _is(gamma, 1.0) and _is(beta, 0.0):
            return layer_norm(x, v, beta, a.attrs["axis"], a.attrs["epsilon"])
        if not multiply and _is(beta, 0.0):
            return layer_norm(x, gamma, v, a.attrs["axis"], a.attrs["epsilon"])
        return None


def _is(e, value: float) -> bool:
    return isinstance(e, Constant) and bool(np.all(e.data == value))
