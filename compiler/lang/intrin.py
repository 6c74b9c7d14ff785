"""Math intrinsics and the functional forms of operators (te.exp, te.if_then_else, ...)."""
from __future__ import annotations

from ..ir.expr import (And, Call, Cast, Expr, FloorDiv, FloorMod, Max, Min, Or, Select, TruncDiv,
                      TruncMod, as_bool, binary, check_dtype, convert, is_float, logical, promote)
from .reduce import reduce_max, reduce_min, reduce_sum
from .tensor import IterVar

FLOAT_INTRINSICS = ("exp", "log", "sqrt", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
                    "sin", "cos")


def _float_call(name: str, x) -> Expr:
    x = convert(x)
    if not is_float(x.dtype):
        x = Cast("float32", x)
    return Call(name, (x,), x.dtype)


def exp(x) -> Expr:
    """e ** x (floats; integers are converted to float32)."""
    return _float_call("exp", x)


def log(x) -> Expr:
    """Natural logarithm."""
    return _float_call("log", x)


def sqrt(x) -> Expr:
    """Square root."""
    return _float_call("sqrt", x)


def tanh(x) -> Expr:
    """Hyperbolic tangent."""
    return _float_call("tanh", x)


def sigmoid(x) -> Expr:
    """1 / (1 + exp(-x))."""
    return _float_call("sigmoid", x)


def erf(x) -> Expr:
    """The error function, 2 / sqrt(pi) * integral of e^-t^2 from 0 to x (GELU's)."""
    return _float_call("erf", x)


def floor(x) -> Expr:
    """Round toward -inf, keeping the float dtype."""
    return _float_call("floor", x)


def ceil(x) -> Expr:
    """Round toward +inf, keeping the float dtype."""
    return _float_call("ceil", x)


def round(x) -> Expr:  # noqa: A001 - TVM's name
    """Round to the nearest integer, halves to the even one (IEEE's roundTiesToEven, as
    numpy's round and ONNX's Round), keeping the float dtype."""
    return _float_call("round", x)


def sin(x) -> Expr:
    """Sine (radians; rotary position embeddings)."""
    return _float_call("sin", x)


def cos(x) -> Expr:
    """Cosine (radians)."""
    return _float_call("cos", x)


def abs(x) -> Expr:  # noqa: A001 - the TVM name
    """Absolute value, for ints and floats."""
    x = convert(x)
    return Call("abs", (x,), x.dtype)


def dot_u8s8(x, y) -> Expr:
    """The four unsigned bytes of the int32 word `x` times the four signed bytes of the
    int32 word `y`, byte k by byte k (little-endian: byte 0 is the lowest), summed in
    int32: exact, as every product and their sum fit. One lane of VNNI's vpdpbusd; an
    int8 kernel keeps four channels of its data and of its weights in one word, so that
    a vector of words along the output channels is one instruction (codegen picks the
    target's: compiler/codegen/int8_dot.py)."""
    x, y = convert(x), convert(y)
    for name, v in (("x", x), ("y", y)):
        if v.dtype != "int32":
            raise TypeError(f"dot_u8s8: {name} must be an int32 word of four bytes, "
                            f"not {v.dtype}")
    return Call("dot_u8s8", (x, y), "int32")


def power(x, y) -> Expr:
    """x ** y; integers compute in float64 (exact up to 2**53) and are cast back to their
    type."""
    x, y = promote(convert(x), convert(y, getattr(x, "dtype", None)))
    if not is_float(x.dtype):
        return Call("pow", (x.astype("float64"), y.astype("float64")), "float64") \
            .astype(x.dtype)
    return Call("pow", (x, y), x.dtype)


def if_then_else(cond, t, f) -> Expr:
    """`t` where `cond` holds, else `f`; only the chosen branch is evaluated."""
    cond = as_bool(convert(cond), "if_then_else")
    t = convert(t, getattr(f, "dtype", None))
    f = convert(f, t.dtype)
    t, f = promote(t, f)
    return Select(cond, t, f)


def select(cond, t, f) -> Expr:
    """`t` where `cond` holds, else `f`, both evaluated (TVM's tir.Select): for values
    that are safe to compute either way (a where of two in-bounds reads), and that a
    vectorized loop then computes lane by lane with one vector select."""
    out = if_then_else(cond, t, f)
    return Select(out.condition, out.true_value, out.false_value, out.dtype, lazy=False)


def _reduce_or_binary(reducer, binop):
    def fn(a, b=None, axis=None, where=None):
        if isinstance(b, (IterVar, list, tuple)) or (b is None and axis is not None):
            return reducer(a, axis=b if axis is None else axis, where=where)
        if b is None:
            raise TypeError(f"te.{reducer.__name__} needs a second expression or axis=")
        return binary(binop, a, b)
    fn.__name__ = reducer.__name__
    fn.__doc__ = (f"te.{reducer.__name__}(a, b): elementwise; te.{reducer.__name__}(expr, "
                  f"axis=k): a reduction over the reduce_axis k.")
    return fn


max = _reduce_or_binary(reduce_max, Max)  # noqa: A001
min = _reduce_or_binary(reduce_min, Min)  # noqa: A001
sum = reduce_sum  # noqa: A001


def floordiv(a, b) -> Expr:
    """Integer division rounding toward -inf."""
    return binary(FloorDiv, a, b)


def floormod(a, b) -> Expr:
    """Remainder of floordiv, with the sign of b."""
    return binary(FloorMod, a, b)


def truncdiv(a, b) -> Expr:
    """Integer division rounding toward zero (C semantics)."""
    return binary(TruncDiv, a, b)


def truncmod(a, b) -> Expr:
    """Remainder of truncdiv, with the sign of a (C's %)."""
    return binary(TruncMod, a, b)


def all(*conds) -> Expr:  # noqa: A001
    """Logical and of boolean expressions."""
    out = convert(conds[0])
    for c in conds[1:]:
        out = logical(And, out, c)
    return out


def any(*conds) -> Expr:  # noqa: A001
    """Logical or of boolean expressions."""
    out = convert(conds[0])
    for c in conds[1:]:
        out = logical(Or, out, c)
    return out


def cast(x, dtype: str) -> Expr:
    """x converted to dtype."""
    return convert(x).astype(check_dtype(dtype))
