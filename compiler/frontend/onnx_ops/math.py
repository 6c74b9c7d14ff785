"""Converters of ONNX's elementwise and broadcast ops: arithmetic, math functions,
activations, comparisons and logic, Where, Cast.

Activations that are a few elementwise ops (Softplus, Elu, Selu, Celu, HardSigmoid,
HardSwish, Mish, Gelu, PRelu) are built from them, as Relay's frontend builds them: FuseOps
puts them in one kernel with their neighbours, so a dedicated op would buy nothing. Each
is written in a form that cannot overflow (Softplus: max(x, 0) + log(1 + exp(-|x|))).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ... import graph
from ...graph.ir.expr import Constant
from ...graph.ir.op import nn, tensor
from ...ir.dtype import is_float
from .common import COMPILED, DTYPES, dtype_name, text


def _scalar(ctx, like, value: float):
    """A constant scalar in the dtype of `like`."""
    return Constant(np.array(value, ctx.dtype(like)))


def _clip(ctx, args, attrs, node):
    """Clip; its min and max (inputs from opset 11) may be fed at run time, and an integer
    clip leaves a side without a bound alone (no infinity in an integer type)."""
    x = args[0]
    if ctx.opset < 11:
        low, high = attrs.get("min"), attrs.get("max")
        return graph.clip(x, -np.inf if low is None else low, np.inf if high is None else high)
    bounds = [None if i >= len(args) else args[i] for i in (1, 2)]
    if is_float(ctx.dtype(x)) and all(b is None or ctx.known(b) for b in bounds):
        low, high = (float(ctx.value(b, "bound")) if b is not None else default
                     for b, default in zip(bounds, (-np.inf, np.inf)))
        return graph.clip(x, low, high)
    low, high = bounds  # max(x, min), then min(.., max): all max where min > max
    out = x if low is None else graph.maximum(x, low)
    return out if high is None else graph.minimum(out, high)


def _pow(ctx, args, attrs, node):
    """Pow; an integer base computes in float64 and is cast back to its type (ONNX's
    result has the base's type, the exponent may be a float)."""
    x, y = args
    if not is_float(ctx.dtype(x)):
        wide = tensor.power(tensor.cast(x, "float64"), tensor.cast(y, "float64"))
        return tensor.cast(wide, ctx.dtype(x))
    if ctx.known(y) and ctx.value(y, "exponent").size == 1:
        e = float(ctx.value(y, "exponent"))
        if e == 1.0:
            return x
        if e == 2.0:  # x * x: exact, and the layer norm of older exporters squares so
            return graph.multiply(x, x)
        if e == 0.5:
            return graph.sqrt(x)
    if ctx.dtype(y) != ctx.dtype(x):
        y = tensor.cast(y, ctx.dtype(x))
    return tensor.power(x, y)


def _softplus(ctx, x):
    """log(1 + e^x) as max(x, 0) + log(1 + e^-|x|): no overflow for large x."""
    one = _scalar(ctx, x, 1.0)
    return graph.add(nn.relu(x), tensor.log(graph.add(one, graph.exp(
        graph.negative(tensor.abs(x))))))


def _elu_part(ctx, x, alpha: float):
    """alpha * (e^min(x, 0) - 1): the negative side of Elu, Selu and Celu."""
    zero, one = _scalar(ctx, x, 0.0), _scalar(ctx, x, 1.0)
    return graph.multiply(_scalar(ctx, x, alpha),
                          graph.subtract(graph.exp(graph.minimum(x, zero)), one))


def _celu(ctx, args, attrs, node):
    x, alpha = args[0], float(attrs.get("alpha", 1.0))
    scaled = graph.divide(x, _scalar(ctx, x, alpha))
    return graph.add(nn.relu(x), _elu_part(ctx, scaled, alpha))


def _hard_sigmoid(ctx, x, alpha: float, beta: float):
    return graph.clip(graph.add(graph.multiply(x, _scalar(ctx, x, alpha)),
                                _scalar(ctx, x, beta)), 0.0, 1.0)


def _gelu(ctx, args, attrs, node):
    x = args[0]
    half, one = _scalar(ctx, x, 0.5), _scalar(ctx, x, 1.0)
    approximate = text(attrs.get("approximate", "none"))
    if approximate == "tanh":
        cube = graph.multiply(graph.multiply(x, x), x)
        inner = graph.multiply(_scalar(ctx, x, math.sqrt(2 / math.pi)), graph.add(
            x, graph.multiply(_scalar(ctx, x, 0.044715), cube)))
        return graph.multiply(graph.multiply(half, x), graph.add(one, graph.tanh(inner)))
    if approximate != "none":
        raise ValueError(f"approximate={approximate!r} is not supported (none, tanh)")
    scaled = graph.multiply(x, _scalar(ctx, x, 1 / math.sqrt(2)))
    return graph.multiply(graph.multiply(half, x), graph.add(one, tensor.erf(scaled)))


def _prelu(ctx, args, attrs, node):
    x, slope = args
    zero = _scalar(ctx, x, 0.0)
    return graph.add(nn.relu(x), graph.multiply(slope, graph.minimum(x, zero)))


def _cast_to(ctx, x, dtype: str, what: str):
    if dtype not in COMPILED and not ctx.known(x):  # constants fold to any numpy type
        raise ValueError(f"{what}={dtype} is not supported (supported: {', '.join(COMPILED)})")
    return x if ctx.dtype(x) == dtype else tensor.cast(x, dtype)


def _cast(ctx, args, attrs, node):
    to = attrs["to"]
    return _cast_to(ctx, args[0], DTYPES.get(to, dtype_name(to)), "to")


def _is_inf(ctx, args, attrs, node):
    x = args[0]
    found = [tensor.equal(x, _scalar(ctx, x, sign * np.inf)) for sign, attr in
             ((1, "detect_positive"), (-1, "detect_negative")) if attrs.get(attr, 1)]
    if not found:
        return Constant(np.zeros(ctx.shape(x), "bool"))
    return found[0] if len(found) == 1 else tensor.logical_or(*found)


def _mod(ctx, args, attrs, node):
    """Mod: fmod=1 the remainder with the dividend's sign (C's fmod), fmod=0 with the
    divisor's (Python's %: on floats, C's fmod plus the divisor where the signs differ,
    as numpy computes it)."""
    x, y = args
    if attrs.get("fmod", 0):
        return tensor.trunc_mod(x, y)
    if not is_float(ctx.dtype(x)):
        return tensor.floor_mod(x, y)
    rem, zero = tensor.trunc_mod(x, y), _scalar(ctx, x, 0.0)
    differ = tensor.logical_and(
        tensor.logical_not(tensor.equal(rem, zero)),
        tensor.logical_not(tensor.equal(tensor.less(rem, zero), tensor.less(y, zero))))
    return tensor.where(differ, graph.add(rem, y), rem)


def _nary(op):
    return lambda c, a, at, n: functools.reduce(op, [x for x in a if x is not None])


def _mean(ctx, args, attrs, node):
    total = functools.reduce(graph.add, args)
    return graph.divide(total, _scalar(ctx, args[0], float(len(args))))


def _where(ctx, args, attrs, node):
    cond, x, y = args
    return tensor.where(cond, x, y)


def _unary(f):
    return lambda c, a, at, n: f(a[0])


def _binary(f):
    return lambda c, a, at, n: f(a[0], a[1])


CONVERTERS = {
    "Add": _binary(graph.add),
    "Sub": _binary(graph.subtract),
    "Mul": _binary(graph.multiply),
    "Div": _binary(graph.divide),
    "Pow": _pow,
    "Max": _nary(graph.maximum),
    "Min": _nary(graph.minimum),
    "Sum": _nary(graph.add),
    "Mean": _mean,
    "Neg": _unary(graph.negative),
    "Abs": _unary(tensor.abs),
    "Sqrt": _unary(graph.sqrt),
    "Reciprocal": lambda c, a, at, n: graph.divide(_scalar(c, a[0], 1.0), a[0]),
    "Exp": _unary(graph.exp),
    "Log": _unary(tensor.log),
    "Erf": _unary(tensor.erf),
    "Sin": _unary(tensor.sin),
    "Cos": _unary(tensor.cos),
    "Floor": _unary(tensor.floor),
    "Ceil": _unary(tensor.ceil),
    "Round": _unary(tensor.round),
    "Identity": lambda c, a, at, n: a[0],
    "Relu": _unary(nn.relu),
    "Clip": _clip,
    "Sigmoid": _unary(graph.sigmoid),
    "Tanh": _unary(graph.tanh),
    "LeakyRelu": lambda c, a, at, n: nn.leaky_relu(a[0], at.get("alpha", 0.01)),
    "PRelu": _prelu,
    "Softplus": lambda c, a, at, n: _softplus(c, a[0]),
    "Elu": lambda c, a, at, n: graph.add(nn.relu(a[0]),
                                         _elu_part(c, a[0], at.get("alpha", 1.0))),
    "Selu": lambda c, a, at, n: graph.multiply(
        _scalar(c, a[0], at.get("gamma", 1.0507009873554805)),
        graph.add(nn.relu(a[0]), _elu_part(c, a[0], at.get("alpha", 1.6732632423543772)))),
    "Celu": _celu,
    "HardSigmoid": lambda c, a, at, n: _hard_sigmoid(c, a[0], at.get("alpha", 0.2),
                                                     at.get("beta", 0.5)),
    "HardSwish": lambda c, a, at, n: graph.multiply(a[0], _hard_sigmoid(c, a[0], 1 / 6, 0.5)),
    "Mish": lambda c, a, at, n: graph.multiply(a[0], graph.tanh(_softplus(c, a[0]))),
    "Gelu": _gelu,
    "Equal": _binary(tensor.equal),
    "Less": _binary(tensor.less),
    "Greater": _binary(tensor.greater),
    "LessOrEqual": _binary(tensor.less_equal),
    "GreaterOrEqual": _binary(tensor.greater_equal),
    "Not": _unary(tensor.logical_not),
    "And": _binary(tensor.logical_and),
    "Or": _binary(tensor.logical_or),
    "Where": _where,
    "Cast": _cast,
    "CastLike": lambda c, a, at, n: _cast_to(c, a[0], c.dtype(a[1]), "the target type"),
    "IsNaN": lambda c, a, at, n: tensor.logical_not(tensor.equal(a[0], a[0])),
    "IsInf": _is_inf,
    "Mod": _mod,
}
