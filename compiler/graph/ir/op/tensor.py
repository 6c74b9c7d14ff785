"""The graph level's elementwise and broadcast ops (Relay's `relay.add`, `relay.exp`,
`relay.less`, `relay.where`, `relay.cast`, ...): each registered once with its type
relation, pattern, compute, numpy reference and layout rule (every one follows a
packed operand's layout, so that a quantized convolution's requantize epilogue of
casts, comparisons and where stays in its kernel's layout), and its constructor.
Integer operands divide with truncation (ONNX's and C's rule)."""
from __future__ import annotations

import numpy as np

from .... import ops, te
from ....ops.pattern import OpPattern
from ....ir.dtype import is_float, is_uint
from ....ops.shape import broadcast_index, broadcast_shape
from ..ty import TensorType
from ..expr import Call, Expr
from .layout_rules import follow
from .registry import GraphTypeError, call, register_op, tensor_samples
from .relations import broadcast_rel, identity_rel, tensor_args


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


def _binary(name, compute, reference, samples=None):
    register_op(name, broadcast_rel(name), OpPattern.BROADCAST, num_inputs=2,
                compute=lambda ins, at, ty: compute(*ins),
                reference=lambda a, at: reference(a[0], a[1]), layout=follow,
                samples=samples)


def _unary(name, compute, reference, defaults=None):
    register_op(name, identity_rel(name), OpPattern.ELEMWISE, defaults, 1, compute=compute,
                reference=reference, layout=follow)


def _no_trap(f, by_minus_one):
    """An integer division or remainder `f` that never traps: the CPU's divide faults on a
    divisor of 0 (and on INT_MIN / -1), which would end the user's process. A divisor of 0
    gives 0 (numpy's answer), -1 gives `by_minus_one(x)`, without dividing."""
    def safe(x, y):
        one, zero, by_zero = te.const(1, y.dtype), te.const(0, x.dtype), y == te.const(0, y.dtype)
        if is_uint(y.dtype):  # (no -1, and no INT_MIN)
            return te.select(by_zero, zero, f(x, te.select(by_zero, one, y)))
        by_minus = y == te.const(-1, y.dtype)
        divisor = te.select(by_zero, one, te.select(by_minus, one, y))
        return te.select(by_zero, zero, te.select(by_minus, by_minus_one(x), f(x, divisor)))
    return safe


_binary("add", ops.add, np.add)
_binary("subtract", ops.subtract, np.subtract)
_binary("multiply", ops.multiply, np.multiply)
_binary("divide", lambda a, b: _broadcast("divide", _no_trap(te.truncdiv, lambda x: -x)
                                          if not is_float(a.dtype) else
                                          lambda x, y: x / y)(a, b),
        lambda a, b: np.divide(a, b) if is_float(str(a.dtype)) else
        (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype))
_binary("trunc_mod", lambda a, b: _broadcast("trunc_mod", te.truncmod if is_float(a.dtype)
                                             else _no_trap(te.truncmod, lambda x: x * 0))(a, b),
        lambda a, b: np.fmod(a, b) if is_float(str(a.dtype)) else
        np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(a.dtype))
_binary("floor_mod", _broadcast("floor_mod", _no_trap(te.floormod, lambda x: x * 0)),
        lambda a, b: np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b))).astype(a.dtype),
        tensor_samples(2, "int32"))  # integers only (Mod's converter builds a float's)
_binary("maximum", _broadcast("maximum", te.max), np.maximum)
_binary("minimum", _broadcast("minimum", te.min), np.minimum)
_unary("sigmoid", lambda ins, at, ty: ops.sigmoid(ins[0]), lambda a, at: 1 / (1 + np.exp(-a[0])))
_unary("tanh", lambda ins, at, ty: ops.tanh(ins[0]), lambda a, at: np.tanh(a[0]))
_unary("exp", lambda ins, at, ty: ops.exp(ins[0]), lambda a, at: np.exp(a[0]))
_unary("sqrt", _map("sqrt", te.sqrt), lambda a, at: np.sqrt(a[0]))
_unary("erf", _map("erf", te.erf), lambda a, at: _erf(a[0]))
_unary("log", _map("log", te.log), lambda a, at: np.log(a[0]))
_unary("abs", _map("abs", te.abs), lambda a, at: np.abs(a[0]))
_unary("floor", _map("floor", te.floor), lambda a, at: np.floor(a[0]))
_unary("ceil", _map("ceil", te.ceil), lambda a, at: np.ceil(a[0]))
_unary("round", _map("round", te.round), lambda a, at: np.round(a[0]))
_unary("sin", _map("sin", te.sin), lambda a, at: np.sin(a[0]))
_unary("cos", _map("cos", te.cos), lambda a, at: np.cos(a[0]))
_binary("power", _broadcast("power", te.power), np.power)
_unary("negative", _map("negative", lambda v: -v), lambda a, at: -a[0])
_unary("clip", lambda ins, at, ty: ops.clip(ins[0], at["a_min"], at["a_max"]),
       lambda a, at: np.clip(a[0], at["a_min"], at["a_max"]), {"a_min": 0.0, "a_max": 0.0})


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in numpy (which has none): math.erf on each element."""
    import math
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


# ------------------------------------------------------- comparisons, logic, where, cast

def _compare_rel(name):
    """Two operands of one dtype, broadcast; the result is bool."""
    rel = broadcast_rel(name)
    return lambda types, attrs: TensorType(rel(types, attrs).shape, "bool")


def _compare(name, f, reference):
    register_op(name, _compare_rel(name), OpPattern.BROADCAST, num_inputs=2,
                compute=lambda ins, at, ty: _broadcast(name, f)(*ins),
                reference=lambda a, at: reference(a[0], a[1]), layout=follow)


def _logical_rel(name, n):
    def rel(types, attrs):
        ts = tensor_args(name, types, n)
        if any(t.dtype != "bool" for t in ts):
            raise GraphTypeError(f"{name}: takes bool tensors, got "
                                 f"{', '.join(str(t) for t in ts)}")
        return broadcast_rel(name)(ts, attrs) if n == 2 else ts[0]
    return rel


def _bool_samples(n):
    return lambda: [([TensorType(t.shape, "bool") for t in types], at)
                    for types, at in tensor_samples(n)()]


_compare("equal", lambda x, y: x == y, np.equal)
_compare("less", lambda x, y: x < y, np.less)
_compare("greater", lambda x, y: x > y, np.greater)
_compare("less_equal", lambda x, y: x <= y, np.less_equal)
_compare("greater_equal", lambda x, y: x >= y, np.greater_equal)
for _name, _f, _ref in (("logical_and", lambda x, y: x & y, np.logical_and),
                        ("logical_or", lambda x, y: x | y, np.logical_or)):
    register_op(_name, _logical_rel(_name, 2), OpPattern.BROADCAST, num_inputs=2,
                compute=(lambda n, f: lambda ins, at, ty: _broadcast(n, f)(*ins))(_name, _f),
                reference=(lambda r: lambda a, at: r(a[0], a[1]))(_ref), layout=follow,
                samples=_bool_samples(2))
register_op("logical_not", _logical_rel("logical_not", 1), OpPattern.ELEMWISE, num_inputs=1,
            compute=_map("logical_not", lambda v: ~v),
            reference=lambda a, at: np.logical_not(a[0]), layout=follow,
            samples=_bool_samples(1))


def _where_rel(types, attrs):
    cond, x, y = tensor_args("where", types, 3)
    if cond.dtype != "bool" or x.dtype != y.dtype:
        raise GraphTypeError(f"where: takes a bool condition and two values of one dtype, "
                             f"got {cond}, {x}, {y}")
    try:
        shape = np.broadcast_shapes(cond.shape, x.shape, y.shape)
    except ValueError:
        raise GraphTypeError(f"where: shapes {cond.shape}, {x.shape} and {y.shape} do not "
                             f"broadcast") from None
    return TensorType(shape, x.dtype)


def _where_compute(ins, at, ty):
    cond, x, y = ins
    return te.compute(ty.shape, lambda *i: te.select(
        cond[broadcast_index(cond.shape, i)], x[broadcast_index(x.shape, i)],
        y[broadcast_index(y.shape, i)]), name="where")


def _where_samples():
    return [([TensorType((7, 13), "bool"), TensorType((7, 13), "float32"),
              TensorType((13,), "float32")], {}),
            ([TensorType((2, 1, 37), "bool"), TensorType((2, 7, 1), "float32"),
              TensorType((1,), "float32")], {})]


register_op("where", _where_rel, OpPattern.BROADCAST, num_inputs=3, compute=_where_compute,
            reference=lambda a, at: np.where(a[0], a[1], a[2]), layout=follow,
            samples=_where_samples)


def _cast_rel(types, attrs):
    t, = tensor_args("cast", types, 1)
    return TensorType(t.shape, attrs["dtype"])


def _cast_samples():
    return [([TensorType((7, 13), "float32")], {"dtype": "int32"}),
            ([TensorType((37,), "int64")], {"dtype": "float32"}),
            ([TensorType((2, 7, 13), "float32")], {"dtype": "bool"}),
            ([TensorType((13,), "bool")], {"dtype": "float32"})]


register_op("cast", _cast_rel, OpPattern.ELEMWISE, {"dtype": "float32"}, 1,
            compute=lambda ins, at, ty: te.compute(ty.shape, lambda *i: ins[0][i].astype(
                at["dtype"]), name="cast"),
            reference=lambda a, at: a[0].astype(at["dtype"]), layout=follow,
            samples=_cast_samples)


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


def erf(x: Expr) -> Call:
    return call("erf", [x])


def log(x: Expr) -> Call:
    return call("log", [x])


def abs(x: Expr) -> Call:  # noqa: A001 - Relay's name
    return call("abs", [x])


def floor(x: Expr) -> Call:
    return call("floor", [x])


def ceil(x: Expr) -> Call:
    return call("ceil", [x])


def round(x: Expr) -> Call:  # noqa: A001 - Relay's name
    """Halves to the even integer (ONNX's Round, numpy's round)."""
    return call("round", [x])


def sin(x: Expr) -> Call:
    return call("sin", [x])


def cos(x: Expr) -> Call:
    return call("cos", [x])


def power(a: Expr, b: Expr) -> Call:
    return call("power", [a, b])


def trunc_mod(a: Expr, b: Expr) -> Call:
    return call("trunc_mod", [a, b])


def floor_mod(a: Expr, b: Expr) -> Call:
    return call("floor_mod", [a, b])


def equal(a: Expr, b: Expr) -> Call:
    return call("equal", [a, b])


def less(a: Expr, b: Expr) -> Call:
    return call("less", [a, b])


def greater(a: Expr, b: Expr) -> Call:
    return call("greater", [a, b])


def less_equal(a: Expr, b: Expr) -> Call:
    return call("less_equal", [a, b])


def greater_equal(a: Expr, b: Expr) -> Call:
    return call("greater_equal", [a, b])


def logical_and(a: Expr, b: Expr) -> Call:
    return call("logical_and", [a, b])


def logical_or(a: Expr, b: Expr) -> Call:
    return call("logical_or", [a, b])


def logical_not(x: Expr) -> Call:
    return call("logical_not", [x])


def where(cond: Expr, x: Expr, y: Expr) -> Call:
    return call("where", [cond, x, y])


def cast(x: Expr, dtype: str) -> Call:
    return call("cast", [x], dtype=str(dtype))
