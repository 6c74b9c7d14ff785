"""The graph level's elementwise and broadcast ops (Relay's `relay.add`, `relay.exp`,
...): each registered once with its type relation, pattern, compute, numpy reference
and layout rule (they follow a packed operand's layout), and its constructor."""
from __future__ import annotations

import numpy as np

from ... import ops, te
from ...ops.pattern import OpPattern
from ...ops.shape import broadcast_index, broadcast_shape
from ..expr import Call, Expr
from .layout_rules import follow
from .registry import call, register_op
from .relations import broadcast_rel, identity_rel


def _map(name, f):
    """The compute of an elementwise op that te writes as `f(value)`."""
    return lambda ins, at, ty: te.compute(ty.shape, lambda *i: f(ins[0][i]), name=name)


def _broadcast(name, f):
    """The compute of a broadcast op that te writes as `f(a, b)`."""
    def compute(a, b):
        return te.compute(broadcast_shape(name, a.shape, b.shape),
                          lambda *i: f(a[broadcast_index(a.shape, i)],
                                       b[broadcast_index(b.shape, i)]), name=name)
    return compute


def _binary(name, compute, reference):
    register_op(name, broadcast_rel(name), OpPattern.BROADCAST, num_inputs=2,
                compute=lambda ins, at, ty: compute(*ins),
                reference=lambda a, at: reference(a[0], a[1]), layout=follow)


def _unary(name, compute, reference, defaults=None):
    register_op(name, identity_rel(name), OpPattern.ELEMWISE, defaults, 1, compute=compute,
                reference=reference, layout=follow)


_binary("add", ops.add, np.add)
_binary("subtract", ops.subtract, np.subtract)
_binary("multiply", ops.multiply, np.multiply)
_binary("divide", ops.divide, np.divide)
_binary("maximum", _broadcast("maximum", te.max), np.maximum)
_binary("minimum", _broadcast("minimum", te.min), np.minimum)
_unary("sigmoid", lambda ins, at, ty: ops.sigmoid(ins[0]), lambda a, at: 1 / (1 + np.exp(-a[0])))
_unary("tanh", lambda ins, at, ty: ops.tanh(ins[0]), lambda a, at: np.tanh(a[0]))
_unary("exp", lambda ins, at, ty: ops.exp(ins[0]), lambda a, at: np.exp(a[0]))
_unary("sqrt", _map("sqrt", te.sqrt), lambda a, at: np.sqrt(a[0]))
_unary("negative", _map("negative", lambda v: -v), lambda a, at: -a[0])
_unary("clip", lambda ins, at, ty: ops.clip(ins[0], at["a_min"], at["a_max"]),
       lambda a, at: np.clip(a[0], at["a_min"], at["a_max"]), {"a_min": 0.0, "a_max": 0.0})


def add(a: Expr, b: Expr) -> Call:
    return call("add", [a, b])


def subtract(a: Expr, b: Expr) -> Call:
    return call("subtract", [a, b])


def multiply(a: Expr, b: Expr) -> Call:
    return call("multiply", [a, b])


def divide(a: Expr, b: Expr) -> Call:
    return call("divide", [a, b])


def maximum(a: Expr, b: Expr) -> Call:
    return call("maximum", [a, b])


def minimum(a: Expr, b: Expr) -> Call:
    return call("minimum", [a, b])


def sigmoid(x: Expr) -> Call:
    return call("sigmoid", [x])


def tanh(x: Expr) -> Call:
    return call("tanh", [x])


def exp(x: Expr) -> Call:
    return call("exp", [x])


def sqrt(x: Expr) -> Call:
    return call("sqrt", [x])


def negative(x: Expr) -> Call:
    return call("negative", [x])


def clip(x: Expr, a_min: float, a_max: float) -> Call:
    return call("clip", [x], a_min=float(a_min), a_max=float(a_max))
