"""Reductions: commutative reducers (sum, max, min, custom) and the Reduce node."""
from __future__ import annotations

from dataclasses import dataclass, field

from .expr import Expr, Max, Min, Var, convert, const, is_float, node
from .tensor import REDUCE, REDUCE_VARS, IterVar


@dataclass(frozen=True, eq=False)
class CommReducer:
    """A commutative, associative combiner `result(lhs, rhs)` with an identity element."""
    name: str
    lhs: Var
    rhs: Var
    result: Expr
    identity: Expr

    def combine(self, a: Expr, b: Expr) -> Expr:
        from ..ir.functor import substitute
        return substitute(self.result, {self.lhs: a, self.rhs: b})


@node
class Reduce(Expr):
    """`combiner` folded over `source` for every point of `axis` where `condition` holds."""
    combiner: CommReducer
    source: Expr
    axis: tuple
    condition: Expr | None = None
    dtype: str = field(default="")

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.source.dtype)


def comm_reducer(fcombine, fidentity, name: str = "reduce"):
    """Make a reducer from `fcombine(x, y)` and `fidentity(dtype)`, as te.comm_reducer.

    The reducer is called as `reducer(expr, axis=k, where=None)`; `axis` is one
    reduce_axis or a list of them.
    """

    def reducer(expr, axis=None, where=None):
        if not isinstance(axis, (IterVar, list, tuple)):
            raise TypeError(f"te.{name} needs axis=<reduce_axis or list of them>, got {axis!r}")
        axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
        for iv in axes:
            if not isinstance(iv, IterVar) or iv.iter_type != REDUCE:
                raise TypeError(f"te.{name}: axis {iv!r} is not a reduce_axis")
        expr = convert(expr)
        lhs, rhs = Var("x", expr.dtype), Var("y", expr.dtype)
        combiner = CommReducer(name, lhs, rhs, convert(fcombine(lhs, rhs), expr.dtype),
                               convert(fidentity(expr.dtype), expr.dtype))
        cond = None if where is None else convert(where)
        return Reduce(combiner, expr, axes, cond)

    reducer.__name__ = name
    reducer.__doc__ = f"Reduce with {name} over axis (a reduce_axis or a list of them)."
    return reducer


def _lowest(dtype: str) -> Expr:
    if is_float(dtype):
        return const(float("-inf"), dtype)
    return const(-(2 ** (int(dtype[3:]) - 1)), dtype)


def _highest(dtype: str) -> Expr:
    if is_float(dtype):
        return const(float("inf"), dtype)
    return const(2 ** (int(dtype[3:]) - 1) - 1, dtype)


reduce_sum = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), name="sum")
reduce_max = comm_reducer(lambda x, y: Max(x, y), _lowest, name="max")
reduce_min = comm_reducer(lambda x, y: Min(x, y), _highest, name="min")


def check_reduce_usage(body: Expr, stage: str) -> None:
    """Reject a reduction that is not the whole body, and a reduce_axis used outside one."""
    from ..ir.functor import collect
    top = body if isinstance(body, Reduce) else None
    inner = [e for e in collect(body, lambda e: isinstance(e, Reduce)) if e is not top]
    if inner:
        raise ValueError(f"compute {stage}: a reduction must be the whole body of the "
                         f"compute, not part of an expression ({inner[0]})")
    bound = {iv.var for iv in top.axis} if top is not None else set()
    parts = [body] if top is None else [top.source] + [c for c in [top.condition] if c is not None]
    for part in parts:
        for v in collect(part, lambda e: isinstance(e, Var) and e in REDUCE_VARS):
            if v not in bound:
                raise ValueError(f"compute {stage}: reduce_axis {v.name} is used outside a "
                                 f"reduction over it; wrap the expression in te.sum(..., "
                                 f"axis={v.name}) or another reducer")

