"""Range: an integer interval [min, min + extent), as loops, axes and regions state it.

It is a node (functor.py walks and rewrites its bounds). `Range.make` folds a constant
extent only: the simplifier (compiler/arith) stands on this floor, and the floors above
(bound inference) simplify symbolic extents.
"""
from __future__ import annotations

from dataclasses import dataclass

from .expr import Expr, IntImm, const, convert
from .node import Node


@dataclass(frozen=True, eq=False)
class Range(Node):
    """The integer interval [min, min + extent)."""
    min: Expr
    extent: Expr

    @staticmethod
    def make(lo, hi) -> Range:
        """The range [lo, hi), as reduce_axis((lo, hi)) states it."""
        lo, hi = convert(lo), convert(hi)
        extent = hi - lo
        if isinstance(lo, IntImm) and isinstance(hi, IntImm):
            extent = const(hi.value - lo.value, extent.dtype)
        elif isinstance(lo, IntImm) and lo.value == 0:
            extent = hi
        return Range(lo, extent)

    def __str__(self):
        return f"range(min={self.min}, ext={self.extent})"

    __repr__ = __str__
