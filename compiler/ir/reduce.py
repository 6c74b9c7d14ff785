"""The Reduce node and its CommReducer (TVM's tir.Reduce and tir.CommReducer).

They sit apart from expr.py because a reducer combines two values by substituting them
into its `result`, which needs the walkers of functor.py, and functor.py needs expr.py.
The reducers users call (te.sum, te.max, te.comm_reducer) are made in compiler/lang.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .expr import Expr, Var
from .functor import substitute
from .node import node


@dataclass(frozen=True, eq=False)
class CommReducer:
    """A commutative, associative combiner `result(lhs, rhs)` with an identity element."""
    name: str
    lhs: Var
    rhs: Var
    result: Expr
    identity: Expr

    def combine(self, a: Expr, b: Expr) -> Expr:
        """`result` with `a` for lhs and `b` for rhs: one step of the reduction."""
        return substitute(self.result, {self.lhs: a, self.rhs: b})


@node
class Reduce(Expr):
    """`combiner` folded over `source` for every point of `axis` where `condition` holds;
    `axis` holds the reduce axes (te IterVars, read through their `var` and `dom`)."""
    combiner: CommReducer
    source: Expr
    axis: tuple
    condition: Expr | None = None
    dtype: str = field(default="")

    def __post_init__(self):
        if not self.dtype:
            object.__setattr__(self, "dtype", self.source.dtype)
