"""Simplify: index arithmetic and constant folding (compiler/arith), and loops of
extent 1 replaced by their body with the loop variable bound to the loop's start,
which removes the degenerate loops that splits and partitions leave behind."""
from __future__ import annotations

from ..arith.simplify import simplify_stmt
from ..ir.functor import substitute, transform
from ..ir.stmt import For
from ..te import expr as E


def _drop_unit_loop(s):
    if isinstance(s, For) and isinstance(s.extent, E.IntImm) and s.extent.value == 1:
        return substitute(s.body, {s.loop_var: s.min})
    return None


def simplify_func_body(stmt, bounds: dict | None = None):
    """Simplify `stmt` knowing the inclusive `bounds` of free variables (symbolic sizes)."""
    stmt = simplify_stmt(stmt, bounds)
    stmt = transform(stmt, _drop_unit_loop)
    return simplify_stmt(stmt, bounds)


__all__ = ["simplify_func_body"]
