"""Simplify: index arithmetic and constant folding (compiler/arith) over every expression
of a statement, knowing the bounds of its loop and let variables, and loops of extent 1
replaced by their body with the loop variable bound to the loop's start, which removes
the degenerate loops that splits and partitions leave behind."""
from __future__ import annotations

from ..arith.simplify import Bounds, const_bound, loop_bounds, simplify
from ..ir import expr as E
from ..ir.functor import map_children, substitute, transform
from ..ir.stmt import For, LetStmt


def simplify_stmt(s, bounds: Bounds | None = None, memo: dict | None = None):
    """Simplify every expression of a statement; inside a loop the loop variable's range
    is known, so `floordiv(i, 16)` with i in [0, 16) becomes 0. `memo`: see simplify();
    one is made for the walk when none is given."""
    bounds = bounds if bounds is not None else {}
    memo = memo if memo is not None else {}
    if isinstance(s, E.Expr):
        return simplify(s, bounds, memo)
    if isinstance(s, For):
        lo, ext = simplify(s.min, bounds, memo), simplify(s.extent, bounds, memo)
        inner = {**bounds, s.loop_var: loop_bounds(lo, ext, bounds)}
        body = simplify_stmt(s.body, inner, memo)
        return For(s.loop_var, lo, ext, s.kind, body, s.pragmas)
    if isinstance(s, LetStmt) and E.is_int(s.var.dtype) and E.lanes(s.var.dtype) == 1:
        # the variable takes its value's bounds (an unrolled region's hoisted index:
        # transform/hoist_invariants.py)
        value = simplify(s.value, bounds, memo)
        body = simplify_stmt(s.body, {**bounds, s.var: const_bound(value, bounds)}, memo)
        return s if value is s.value and body is s.body else LetStmt(s.var, value, body)
    return map_children(s, lambda c: simplify_stmt(c, bounds, memo))


def _drop_unit_loop(s):
    if isinstance(s, For) and isinstance(s.extent, E.IntImm) and s.extent.value == 1:
        return substitute(s.body, {s.loop_var: s.min})
    return None


def simplify_func_body(stmt, bounds: dict | None = None):
    """Simplify `stmt` knowing the inclusive `bounds` of free variables (symbolic sizes)."""
    stmt = simplify_stmt(stmt, bounds)
    stmt = transform(stmt, _drop_unit_loop)
    return simplify_stmt(stmt, bounds)


__all__ = ["simplify_func_body", "simplify_stmt"]
