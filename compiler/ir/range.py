"""Range: an integer interval [min, min + extent), as loops, axes and regions state it.

It is a node (functor.py walks and rewrites its bounds), but it sits apart from
expr.py because `Range.make` simplifies the extent, and the simplifier (compiler/arith)
is built on expr.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arith.simplify import simplify
from .expr import Expr, convert
from .node import Node


@dataclass(frozen=True, eq=False)
class Range(Node):
    """The integer interval [min, min + extent)."""
    min: Expr
    extent: Expr

    @staticmethod
    def make(lo, hi) -> Range:
        """The range [lo, hi), as reduce_axis((lo, hi)) states it."""
        lo = convert(lo)
        return Range(lo, simplify(convert(hi) - lo))

    def __str__(self):
        return f"range(min={self.min}, ext={self.extent})"

    __repr__ = __str__
