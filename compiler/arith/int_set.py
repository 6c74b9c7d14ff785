"""Interval sets with symbolic bounds, and their evaluation over expressions.

Bound inference passes IntervalSets from a consumer's loops to the regions of the
tensors it reads (reference: "IntSets"). A bound of None is unbounded.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import expr as E
from ..ir.functor import collect, free_vars
from ..ir.range import Range
from .simplify import Bounds, simplify, skey


@dataclass(frozen=True, eq=False)
class IntervalSet:
    """The integers in [min, max] (inclusive; None means unbounded on that side)."""
    min: E.Expr | None
    max: E.Expr | None

    @staticmethod
    def point(e: E.Expr) -> IntervalSet:
        return IntervalSet(e, e)

    @staticmethod
    def from_range(r: Range, bounds: Bounds | None = None) -> IntervalSet:
        return IntervalSet(r.min, simplify(r.min + r.extent - 1, bounds))

    @staticmethod
    def everything() -> IntervalSet:
        return IntervalSet(None, None)

    def is_point(self) -> bool:
        return self.min is not None and self.max is not None and \
            (self.min is self.max or skey(self.min) == skey(self.max))

    def matches(self, r: Range, bounds: Bounds | None = None) -> bool:
        """Whether this set is exactly the range `r`."""
        full = IntervalSet.from_range(r, bounds)
        return self.min is not None and self.max is not None and \
            skey(simplify(self.min, bounds)) == skey(simplify(full.min, bounds)) and \
            skey(simplify(self.max, bounds)) == skey(simplify(full.max, bounds))

    def cover_range(self, dom: Range, bounds: Bounds | None = None) -> Range:
        """The Range this set spans; unbounded sides take the domain's."""
        lo = dom.min if self.min is None else self.min
        hi = simplify(dom.min + dom.extent - 1, bounds) if self.max is None else self.max
        return Range(simplify(lo, bounds), simplify(hi - lo + 1, bounds))

    def __repr__(self):
        return f"[{self.min}, {self.max}]"


def union(sets: list[IntervalSet], bounds: Bounds | None = None) -> IntervalSet:
    """The smallest interval containing all `sets`."""
    lo, hi = sets[0].min, sets[0].max
    for s in sets[1:]:
        lo = None if lo is None or s.min is None else simplify(E.Min(lo, s.min), bounds)
        hi = None if hi is None or s.max is None else simplify(E.Max(hi, s.max), bounds)
    return IntervalSet(lo, hi)


def intersect_range(s: IntervalSet, r: Range, bounds: Bounds | None = None) -> IntervalSet:
    """`s` clamped to the range `r`."""
    full = IntervalSet.from_range(r, bounds)
    lo = full.min if s.min is None else simplify(E.Max(s.min, full.min), bounds)
    hi = full.max if s.max is None else simplify(E.Min(s.max, full.max), bounds)
    return IntervalSet(lo, hi)


def _both(f, a, b):
    return None if a is None or b is None else f(a, b)


def eval_set(e: E.Expr, dom_map: dict, bounds: Bounds | None = None) -> IntervalSet:
    """The set of values `e` takes when each Var in `dom_map` ranges over its set."""
    out = _eval(e, dom_map)
    return IntervalSet(None if out.min is None else simplify(out.min, bounds),
                       None if out.max is None else simplify(out.max, bounds))


def _eval(e: E.Expr, dom: dict) -> IntervalSet:
    match e:
        case E.Var() if e in dom:
            return dom[e]
        case E.IntImm() | E.Var():
            return IntervalSet.point(e)
        case E.Add(a=a, b=b):
            x, y = _eval(a, dom), _eval(b, dom)
            return IntervalSet(_both(E.Add, x.min, y.min), _both(E.Add, x.max, y.max))
        case E.Sub(a=a, b=b):
            x, y = _eval(a, dom), _eval(b, dom)
            return IntervalSet(_both(E.Sub, x.min, y.max), _both(E.Sub, x.max, y.min))
        case E.Mul(a=a, b=b):
            x, y = _eval(a, dom), _eval(b, dom)
            if not y.is_point():
                x, y = y, x
            if not y.is_point():
                return IntervalSet.everything()
            k = y.min
            if isinstance(k, E.IntImm):
                lo, hi = (x.min, x.max) if k.value >= 0 else (x.max, x.min)
                return IntervalSet(_both(E.Mul, lo, k), _both(E.Mul, hi, k))
            if x.min is None or x.max is None:
                return IntervalSet.everything()
            p, q = E.Mul(x.min, k), E.Mul(x.max, k)
            return IntervalSet(E.Min(p, q), E.Max(p, q))
        case E.FloorDiv(a=a, b=E.IntImm(value=c)) | E.TruncDiv(a=a, b=E.IntImm(value=c)) \
                if c > 0:
            x = _eval(a, dom)
            return IntervalSet(_both(type(e), x.min, e.b), _both(type(e), x.max, e.b))
        case E.FloorMod(a=a, b=E.IntImm(value=c)) if c > 0:
            x = _eval(a, dom)
            if x.is_point():
                return IntervalSet.point(E.FloorMod(x.min, e.b))
            if x.min is not None and x.max is not None and skey(simplify(
                    E.FloorDiv(x.min, e.b))) == skey(simplify(E.FloorDiv(x.max, e.b))):
                return IntervalSet(E.FloorMod(x.min, e.b), E.FloorMod(x.max, e.b))
            return IntervalSet(E.IntImm(0, e.dtype), E.IntImm(c - 1, e.dtype))
        case E.Min(a=a, b=b) | E.Max(a=a, b=b):
            x, y = _eval(a, dom), _eval(b, dom)
            t = type(e)
            lo = x.min if y.min is None and t is E.Max else _both(t, x.min, y.min)
            hi = x.max if y.max is None and t is E.Min else _both(t, x.max, y.max)
            return IntervalSet(lo, hi)
        case E.Select(true_value=t, false_value=f):
            x, y = _eval(t, dom), _eval(f, dom)
            return IntervalSet(_both(E.Min, x.min, y.min), _both(E.Max, x.max, y.max))
        case E.Cast(value=v) if E.is_int(e.dtype) and E.is_int(v.dtype):
            return _eval(v, dom)
    if not (free_vars(e) & dom.keys()) and not collect(e, _reads_memory):
        return IntervalSet.point(e)
    return IntervalSet.everything()


def _reads_memory(e) -> bool:
    """A value read from a tensor (an index computed from data: a gather's): unknown
    until the kernel runs, so never a point of the set, even without loop variables."""
    return isinstance(e, (E.ProducerLoad, E.Load))
