"""Expression nodes: the ground floor that tensor expressions, bound inference, the
loop IR and code generation all build on (as TVM's tir expressions).

Nodes are immutable and hashed by identity: two `Var("i")` are different variables,
exactly as in TVM. Python operators build nodes, so `A[i, k] * B[k, j] + 1` is an
expression tree. `a == b` builds an `EQ` node; its truth value is identity (`a is b`),
which keeps Vars usable as dictionary keys and list members. `int()` and `float()` give
the value of a constant, as in TVM.
"""
from __future__ import annotations

from dataclasses import field
from typing import Any

# The dtype facts are the nodes' too: their users reach them as E.bits, E.is_float, ...
# (the `x as x` form says that they are re-exported).
from .dtype import DTYPES as DTYPES
from .dtype import bits as bits
from .dtype import check_dtype, int_range, is_float, lanes, promote_dtype, with_lanes
from .dtype import element as element
from .dtype import is_int as is_int
from .dtype import is_uint as is_uint
from .dtype import numpy_dtype as numpy_dtype
from .dtype import round_float as round_float
from .dtype import wrap as wrap
from .node import Node, node

class Expr(Node):
    """Base of every expression. Subclasses are frozen dataclasses with a `dtype`."""

    __slots__ = ()
    dtype: str
    __hash__ = object.__hash__

    def __add__(self, other): return binary(Add, self, other)
    def __radd__(self, other): return binary(Add, other, self)
    def __sub__(self, other): return binary(Sub, self, other)
    def __rsub__(self, other): return binary(Sub, other, self)
    def __mul__(self, other): return binary(Mul, self, other)
    def __rmul__(self, other): return binary(Mul, other, self)
    def __truediv__(self, other): return div(self, other)
    def __rtruediv__(self, other): return div(other, self)
    def __floordiv__(self, other): return binary(FloorDiv, self, other)
    def __rfloordiv__(self, other): return binary(FloorDiv, other, self)
    def __mod__(self, other): return binary(FloorMod, self, other)
    def __rmod__(self, other): return binary(FloorMod, other, self)
    def __neg__(self): return binary(Sub, const(0, self.dtype), self)
    def __lt__(self, other): return binary(LT, self, other)
    def __le__(self, other): return binary(LE, self, other)
    def __gt__(self, other): return binary(LT, other, self)
    def __ge__(self, other): return binary(LE, other, self)
    def __eq__(self, other): return binary(EQ, self, other)
    def __ne__(self, other): return binary(NE, self, other)
    def __and__(self, other): return logical(And, self, other)
    def __rand__(self, other): return logical(And, other, self)
    def __or__(self, other): return logical(Or, self, other)
    def __ror__(self, other): return logical(Or, other, self)

    def __invert__(self):
        return Not(as_bool(self, "~"))

    def __bool__(self):
        raise ValueError(
            f"cannot use the symbolic expression {self} as a Python bool; "
            "use te.if_then_else / te.select, and & | ~ instead of and / or / not")

    def __int__(self):
        raise TypeError(f"int() needs an integer constant, got {self} "
                        f"({type(self).__name__}, dtype {self.dtype})")

    def __float__(self):
        raise TypeError(f"float() needs a constant, got {self} "
                        f"({type(self).__name__}, dtype {self.dtype})")

    def astype(self, dtype: str) -> Expr:
        """Convert to `dtype` (a Cast node; no node when the dtype already matches)."""
        check_dtype(dtype)
        return self if dtype == self.dtype else Cast(dtype, self)


@node
class IntImm(Expr):
    """An integer (or bool) constant; `int()` and `float()` give its value."""
    value: int
    dtype: str = "int32"

    def __int__(self):
        return self.value

    def __float__(self):
        return float(self.value)


@node
class FloatImm(Expr):
    """A floating-point constant; `float()` gives its value."""
    value: float
    dtype: str = "float32"

    def __float__(self):
        return self.value


@node
class Var(Expr):
    """A scalar variable: a loop index, an axis, or a symbolic size made by te.var."""
    name: str
    dtype: str = "int32"


@node
class Cast(Expr):
    dtype: str
    value: Expr


@node
class BinaryOp(Expr):
    a: Expr
    b: Expr
    dtype: str = field(default="")

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.a.dtype)


class Add(BinaryOp): pass
class Sub(BinaryOp): pass
class Mul(BinaryOp): pass
class Div(BinaryOp):
    """True division of floats."""
class FloorDiv(BinaryOp): pass
class FloorMod(BinaryOp): pass
class TruncDiv(BinaryOp): pass
class TruncMod(BinaryOp): pass
class Min(BinaryOp): pass
class Max(BinaryOp): pass


class CmpOp(BinaryOp):
    def __post_init__(self):
        object.__setattr__(self, "dtype", with_lanes("bool", lanes(self.a.dtype)))


class EQ(CmpOp):
    def __bool__(self):
        return self.a is self.b


class NE(CmpOp):
    def __bool__(self):
        return self.a is not self.b


class LT(CmpOp): pass
class LE(CmpOp): pass
class And(CmpOp): pass
class Or(CmpOp): pass


@node
class Not(Expr):
    a: Expr
    dtype: str = "bool"


@node
class Select(Expr):
    """`true_value if condition else false_value`. Lazy (te.if_then_else): only the
    chosen branch is evaluated, so a guarded out-of-bounds load (padding) is safe. Not
    lazy (te.select, TVM's tir.Select): both branches may be evaluated, so loads in
    them must be in bounds either way, and the vectorizer may read every lane of both."""
    condition: Expr
    true_value: Expr
    false_value: Expr
    dtype: str = field(default="")
    lazy: bool = True

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.true_value.dtype)


@node
class Call(Expr):
    """A pure math intrinsic (exp, log, sqrt, ...) applied elementwise."""
    name: str
    args: tuple
    dtype: str


@node
class Let(Expr):
    var: Var
    value: Expr
    body: Expr
    dtype: str = field(default="")

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.body.dtype)


@node
class ProducerLoad(Expr):
    """A read of a tensor element, before buffers exist. `producer` is whatever tensor
    the expression reads (a te.Tensor); the IR needs only its `name` and `dtype`."""
    producer: Any
    indices: tuple
    dtype: str = field(default="")

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.producer.dtype)


@node
class Load(Expr):
    """A read of `buffer` (a stmt.Buffer) at one flat `index`, after storage flattening."""
    buffer: Any
    index: Expr
    dtype: str = field(default="")

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.buffer.dtype)


@node
class Ramp(Expr):
    """The vector `[base, base + stride, ..., base + (lanes-1)*stride]`: a vectorized
    loop variable, and the index of a contiguous vector load or store."""
    base: Expr
    stride: Expr
    lanes: int
    dtype: str = field(default="")

    def __post_init__(self):
        object.__setattr__(self, "dtype", with_lanes(self.base.dtype, self.lanes))


@node
class Broadcast(Expr):
    """A scalar repeated in every lane, where it meets a vector."""
    value: Expr
    lanes: int
    dtype: str = field(default="")

    def __post_init__(self):
        object.__setattr__(self, "dtype", with_lanes(self.value.dtype, self.lanes))


# ---------------------------------------------------------------- construction helpers

def const(value, dtype: str | None = None) -> Expr:
    """A constant node; the dtype defaults to int32 for ints (int64, then uint64, for
    those beyond its range) and float32 for floats."""
    if isinstance(value, Expr):
        return value.astype(dtype) if dtype else value
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "float32" if not isinstance(value, int) \
            else next((t for t in ("int32", "int64") if int_range(t)[0] <= value
                       <= int_range(t)[1]), "uint64")
    check_dtype(dtype)
    if is_float(dtype):  # a 16-bit float holds the value it rounds to, as the kernel does
        return FloatImm(round_float(value, dtype) if bits(dtype) == 16 else float(value), dtype)
    if not isinstance(value, (int, bool)) and float(value) != int(value):
        raise TypeError(f"constant {value!r} is not an integer but dtype is {dtype}")
    lo, hi = int_range(dtype)
    if dtype != "bool" and not lo <= int(value) <= hi:
        raise ValueError(f"constant {value} does not fit in {dtype}; "
                         "use a wider dtype (astype('int64')) for the other operand")
    return IntImm(int(value), dtype)


def convert(value: Any, like: str | None = None) -> Expr:
    """Turn a Python number, an IterVar or an Expr into an Expr.

    A Python number takes the dtype of the expression it meets (`like`), as in TVM:
    `x * 2` keeps x's dtype, `x * 0.5` with an int x becomes float32.
    """
    if isinstance(value, Expr):
        return value
    var = getattr(value, "var", None)
    if isinstance(var, Var):  # an IterVar
        return var
    if isinstance(value, bool):
        return IntImm(int(value), "bool")
    if isinstance(value, int):
        return const(value, like if like and like != "bool" else "int32")
    if isinstance(value, float):
        return const(value, like if like and is_float(like) else "float32")
    raise TypeError(f"cannot use {value!r} of type {type(value).__name__} in an expression")


def promote(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """`a` and `b` cast to one dtype, promote_dtype's (dtype.py)."""
    if a.dtype == b.dtype:
        return a, b
    target = promote_dtype(a.dtype, b.dtype)
    return a.astype(target), b.astype(target)


def binary(cls, a, b) -> Expr:
    """Build `cls(a, b)` after converting Python numbers and promoting dtypes."""
    if not isinstance(a, Expr):
        a = convert(a, getattr(convert(b), "dtype", None))
    b = convert(b, a.dtype)
    a, b = promote(a, b)
    if cls in (FloorMod, TruncDiv) and is_float(a.dtype):  # (TruncMod of floats: C's fmod)
        raise TypeError(f"{cls.__name__} needs integer operands, got {a.dtype}")
    if cls is FloorDiv and is_float(a.dtype):
        return Call("floor", (Div(a, b),), a.dtype)
    return cls(a, b)


def div(a, b) -> Expr:
    """`a / b`: true division for floats; integers must say which rounding they mean."""
    a = convert(a, getattr(b, "dtype", None))
    b = convert(b, a.dtype)
    a, b = promote(a, b)
    if not is_float(a.dtype):
        raise TypeError(
            f"'/' on integers ({a} / {b}) is ambiguous: use // (floordiv) or te.truncdiv, "
            "or astype('float32') first")
    return Div(a, b)


def as_bool(x: Expr, op: str) -> Expr:
    """`x`, when it is boolean; else a TypeError naming it and the operator `op`."""
    if x.dtype != "bool":
        raise TypeError(f"operator {op} needs boolean operands, got {x} of dtype {x.dtype}")
    return x


def logical(cls, a, b) -> Expr:
    """`cls(a, b)` for And / Or, after checking that both operands are boolean."""
    a, b = convert(a), convert(b)
    name = "&" if cls is And else "|"
    return cls(as_bool(a, name), as_bool(b, name))
