"""Which integer values code generation may treat as never negative, so that an index's
floor division or remainder by a positive constant is one unsigned instruction (floor
and truncation agree there), not a signed one with the floor's fix-up, and a loop's
variable carries what its start says.

A value is never negative when it is a constant that is not, a size or a variable in
scope said to be (a loop variable from a start that is not, a let of such a value), or
a sum, product, minimum, maximum, quotient or remainder of such (a short walk: index
expressions are small).
"""
from __future__ import annotations

import contextlib

from ..ir import expr as E
from ..ir.expr import Broadcast, Ramp


class NonNegative:
    """The variables in scope known never to be negative, and the rule above: call it on
    an integer expression."""

    def __init__(self, variables=()):
        self.variables = set(variables)

    def __call__(self, e) -> bool:
        if not E.is_int(e.dtype):  # signed integers only
            return False
        match e:
            case E.IntImm(value=v):
                return v >= 0
            case E.Var():
                return e in self.variables
            case E.Add(a=x, b=y) | E.Mul(a=x, b=y) | E.Min(a=x, b=y) | E.FloorDiv(a=x, b=y) | \
                    E.FloorMod(a=x, b=y):
                return self(x) and self(y)
            case E.Max(a=x, b=y):
                return self(x) or self(y)
            case Ramp(base=base, stride=stride):
                return self(base) and self(stride)
            case Broadcast(value=v):
                return self(v)
        return False

    @contextlib.contextmanager
    def scope(self, var: E.Var, non_negative: bool):
        """While the scope of `var` is emitted: whether it is never negative."""
        before = var in self.variables
        if non_negative:
            self.variables.add(var)
        else:
            self.variables.discard(var)
        try:
            yield
        finally:
            if before:
                self.variables.add(var)
            else:
                self.variables.discard(var)


def positive_constant(e) -> bool:
    """Whether `e` is a constant above 0 (or a vector of it)."""
    if isinstance(e, Broadcast):
        e = e.value
    return isinstance(e, E.IntImm) and e.value > 0


__all__ = ["NonNegative", "positive_constant"]
