"""SinkReshape: reshapes that keep the last axis move below the elementwise ops, layer
norms and softmaxes after them, and reshapes that meet merge or vanish.

The ONNX importer computes a transformer's (batch, sequence, hidden) x weight products
as a dense on rows between two reshapes (frontend/onnx_ops/nn.py: matmul), so the bias,
the GELU and the residual add arrive after a reshape, which FuseOps cannot fuse into the
dense's kernel (a reshape is injective, the dense's tail must be elementwise). Moving
the reshape down puts them on the dense's own output, in its kernel; the reshape back to
3-D then meets the next dense's reshape to 2-D, and the two cancel. Relay leaves them
apart (its frontend writes the same reshapes); this pass is what fuses across them.

Bottom-up, each rule on a call whose operands are rewritten already:

    op(reshape(x, S), c, ...)   -> reshape(op(x, c'), S)   op elementwise or broadcast,
                                   every reshape from x's shape to S with the last axis
                                   kept, every other operand a scalar or a vector along
                                   the last axis (c' its (N,) form)
    layer_norm(reshape(x, S), g, b, axis=-1) -> reshape(layer_norm(x, g, b, -1), S)
    softmax(reshape(x, S), axis=-1)          -> reshape(softmax(x, -1), S)
    reshape(reshape(x, S1), S2)              -> reshape(x, S2)
    reshape(x, x's shape)                    -> x
"""
from __future__ import annotations

import math

from ...ops.pattern import OpPattern
from ..ir.expr import Call, Constant, Expr, Function
from ..ir.functor import ExprMutator
from ..ir.op import Op
from ..ir.op.transform import reshape
from ..ir.ty import TensorType

_LAST_AXIS = ("nn.layer_norm", "nn.softmax", "nn.log_softmax")


def sink_reshape(func: Function) -> Function:
    """`func` with its reshapes sunk and merged (the module docstring)."""
    return _Sink().function(func)


def _is(e, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _typed(call: Call) -> Call:
    return Call(call.op, call.args, call.attrs,
                call.op.type_rel([a.ty for a in call.args], call.attrs))


def _reshape(x: Expr, shape) -> Expr:
    """reshape(x, shape), typed; x itself when its shape is `shape`; one reshape of the
    source when x is a reshape."""
    if tuple(x.ty.shape) == tuple(shape):
        return x
    if _is(x, "reshape"):
        x = x.args[0]
        if tuple(x.ty.shape) == tuple(shape):
            return x
    return _typed(reshape(x, shape))


def _keeps_last_axis(e) -> bool:
    if not _is(e, "reshape"):
        return False
    src, dst = e.args[0].ty.shape, e.ty.shape
    return len(src) > 0 and len(dst) > 0 and src[-1] == dst[-1]


def _along_last(c, n: int) -> Expr | None:
    """`c` as an operand of the op on the reshape's source: a scalar as it is, a
    vector along the last axis ((N,), (1, ..., N)) as (N,); None for anything else."""
    shape = tuple(c.ty.shape)
    if math.prod(shape) == 1 and (isinstance(c, Constant) or len(shape) <= 1):
        return c
    if shape and shape[-1] == n and math.prod(shape) == n:
        return c if shape == (n,) else _typed(reshape(c, (n,)))
    return None


class _Sink(ExprMutator):
    def rewrite_call(self, call: Call) -> Expr:
        if not isinstance(call.op, Op) or call.ty is None or \
                not isinstance(call.ty, TensorType):
            return call
        if _is(call, "reshape"):
            return _reshape(call.args[0], call.ty.shape)
        if call.op.name in _LAST_AXIS:
            return self._last_axis(call) or call
        if call.op.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST) and \
                "shape" not in call.attrs:  # (broadcast_to's shape is its own, not x's)
            return self._elementwise(call) or call
        return call

    def _elementwise(self, call: Call):
        shapes = {(tuple(a.args[0].ty.shape), tuple(a.ty.shape))
                  for a in call.args if _keeps_last_axis(a)}
        if len(shapes) != 1:
            return None
        (src, dst), = shapes
        if tuple(call.ty.shape) != dst:
            return None
        n = src[-1]
        args = []
        for a in call.args:
            if _keeps_last_axis(a):
                args.append(a.args[0])
                continue
            c = _along_last(a, n)
            if c is None:
                return None
            args.append(c)
        inner = _typed(Call(call.op, tuple(args), call.attrs))
        if tuple(inner.ty.shape) != src:
            return None
        return _reshape(inner, dst)

    def _last_axis(self, call: Call):
        data = call.args[0]
        if not _keeps_last_axis(data) or call.attrs["axis"] % len(call.ty.shape) != \
                len(call.ty.shape) - 1:
            return None
        src = data.args[0]
        inner = _typed(Call(call.op, (src, *call.args[1:]), {**call.attrs, "axis": -1}))
        return _reshape(inner, call.ty.shape)
